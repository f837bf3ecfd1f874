"""`cudaenv check-installer` as text: the verdict, what the header declares, each check, the problems and what to do.

Every string that came from the file (its label, the makeself version, a web page's title inside a problem) and
the path the user gave pass through :func:`cudaenv.core.text.printable`. Lines fit ``width`` (80, or a narrower
``COLUMNS``): long ones wrap between words only, so a command or a path in the advice is never cut in two.
"""

from typing import List

from cudaenv.toolkit.installer_check import InstallerReport, mb
from cudaenv.render.text import WIDTH, wrap, wrap_advice
from cudaenv.core.text import printable

HEADLINE = {"ok": "OK, an intact installer", "bad": "BAD", "unverified": "NOT VERIFIED: no checksum to compare with"}


def _item(label: str, text: str, width: int) -> List[str]:
    return wrap(printable(text), "  %s: " % label, "      ", width, newlines=False, long_words="keep")


def render_report(report: InstallerReport, width: int = WIDTH) -> str:
    lines = wrap(printable(report.path) + ": " + HEADLINE.get(report.verdict, "BAD"), "", "  ", width, long_words="keep")
    what = []
    if report.toolkit_version:
        what.append("CUDA %s" % report.toolkit_version)
    if report.driver_version:
        what.append("driver %s" % report.driver_version)
    if report.platform:
        what.append(report.platform)
    if what:
        lines += _item("for", ", ".join(what), width)
    if report.label is not None:
        lines += _item("label", "%s (makeself %s)" % (report.label, report.makeself_version or "?"), width)
    lines.append("  size: %s" % (mb(report.size) if report.size < 100000 else "%s (%d bytes)" % (mb(report.size), report.size)))
    if report.archives > 1:
        lines.append("  archives: %d" % report.archives)
    for c in report.checks:
        lines += wrap(printable(c.message), "  [%s] %s: " % (c.status, c.name), "      ", width, newlines=False, long_words="keep")
    for p in report.problems:
        lines += _item("problem", p, width)
    for a in report.advice:  # advice names commands: they paste as they are
        lines += wrap_advice(printable(a), "  what to do: ", "      ", width)
    return "\n".join(lines) + "\n"
