"""`cudaenv check-installer` as text: the verdict, what the header declares, each check, the problems and what to do.

Every string that came from the file (its label, the makeself version, a web page's title inside a problem) and
the path the user gave pass through :func:`cudaenv.core.text.printable`. Lines fit ``width`` (80, or a narrower
``COLUMNS``): long ones wrap between words only, so a command or a path in the advice is never cut in two.
"""

from typing import List

from cudaenv.toolkit.installer_check import InstallerReport, mb
from cudaenv.core.i18n import N_, t, tr
from cudaenv.render.text import WIDTH, wrap, wrap_advice
from cudaenv.core.text import printable

HEADLINE = {"ok": N_("OK, an intact installer"), "bad": N_("BAD"), "unverified": N_("NOT VERIFIED: no checksum to compare with")}


def _item(label: str, text: str, width: int) -> List[str]:
    return wrap(printable(tr(text)), "  %s" % label, "      ", width, newlines=False, long_words="keep")


def render_report(report: InstallerReport, width: int = WIDTH) -> str:
    lines = wrap(printable(report.path) + ": " + t(HEADLINE.get(report.verdict, "BAD")), "", "  ", width, long_words="keep")
    what = []
    if report.toolkit_version:
        what.append("CUDA %s" % report.toolkit_version)
    if report.driver_version:
        what.append(t("driver %s", report.driver_version))
    if report.platform:
        what.append(report.platform)
    if what:
        lines += _item(t("for: "), ", ".join(what), width)
    if report.label is not None:
        lines += _item(t("label: "), "%s (makeself %s)" % (report.label, report.makeself_version or "?"), width)
    size = mb(report.size) if report.size < 100000 else t("%s (%d bytes)", mb(report.size), report.size)
    lines.append("  " + t("size: %s", size))
    if report.archives > 1:
        lines.append("  " + t("archives: %d", report.archives))
    for c in report.checks:
        lines += wrap(printable(tr(c.message)), "  [%s] %s: " % (c.status, c.name), "      ", width, newlines=False, long_words="keep")
    for p in report.problems:
        lines += _item(t("problem: "), p, width)
    for a in report.advice:  # advice names commands: they paste as they are
        lines += wrap_advice(printable(tr(a)), "  " + t("what to do: "), "      ", width)
    return "\n".join(lines) + "\n"
