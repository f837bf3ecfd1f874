"""``cudaenv diff A.json B.json``: what changed between two doctor reports (:class:`cudaenv.fleet.records.ReportDiff`),
grouped by the doctor's sections, as text (80 columns) and as Markdown.

Every value came from a report file, untrusted: text goes through :func:`cudaenv.core.text.printable`, Markdown
through the md_* helpers of :mod:`cudaenv.render.text`.
"""

from __future__ import annotations

from typing import List

from cudaenv.core.i18n import t, tn, tr
from cudaenv.core.text import printable
from cudaenv.render.report import TITLES
from cudaenv.render.text import WIDTH, md_code, md_inline, md_text, paint, wrap
from cudaenv.render.width import pad, width_of


def _side(file: str, host, at) -> str:
    extra = ", ".join(printable(x) for x in (host, at) if x)
    return printable(file) + (" (%s)" % extra if extra else "")


def _sections(diff):
    """(section, its changes) in the doctor's order (compare_reports sorted them)."""
    out: List[tuple] = []
    for c in diff.changes:
        if not out or out[-1][0] != c.section:
            out.append((c.section, []))
        out[-1][1].append(c)
    return out


def change_text(c) -> str:
    """``535.247.01 -> 580.95.05``, ``added: 12.4.131 (runfile)``, ``removed: 9.1.0``."""
    if c.before is None:
        return t("added: %s", printable(c.after))
    if c.after is None:
        return t("removed: %s", printable(c.before))
    return "%s -> %s" % (printable(c.before), printable(c.after))


def diff_headline(diff) -> str:
    if diff.same:
        return t("No difference: the same facts and the same findings.")
    parts = [tn("%d fact changed", "%d facts changed", len(diff.changes))]
    if diff.findings_new:
        parts.append(tn("%d new finding", "%d new findings", len(diff.findings_new)))
    if diff.findings_gone:
        parts.append(tn("%d finding gone", "%d findings gone", len(diff.findings_gone)))
    return t("%s.", t(", ").join(parts))


def render_text(diff, width: int = WIDTH, color: bool = False) -> str:
    out: List[str] = []
    before, after = t("before"), t("after")
    column = max(width_of(before), width_of(after)) + 2
    out += wrap(_side(diff.before_file, diff.before_host, diff.before_at), first=pad(before, column), width=width, long_words="fit")
    out += wrap(_side(diff.after_file, diff.after_host, diff.after_at), first=pad(after, column), width=width, long_words="fit")
    out += [""] + wrap(diff_headline(diff), width=width)
    for section, changes in _sections(diff):
        out += ["", paint(t(TITLES[section]) if section in TITLES else section, "bold", color)]
        for c in changes:
            out += wrap(change_text(c), first="  %-22s " % printable(c.fact)[:22], rest=" " * 25, width=width,
                        long_words="fit")
    if diff.findings_new or diff.findings_gone:
        out += ["", paint(t("Findings"), "bold", color)]
        for mark, items in (("new", diff.findings_new), ("gone", diff.findings_gone)):
            for f in items:
                out += wrap("%s: %s" % (printable(f.id), printable(f.title)),
                            first="  %-5s %-8s " % (mark, printable(f.severity)[:8]), width=width)
    for note in diff.notes:
        out += [""] + wrap(printable(tr(note)), first=t("note: "), width=width)
    return "\n".join(out) + "\n"


def render_markdown(diff) -> str:
    out = ["### cudaenv diff", "",
           "- before: %s%s" % (md_code(diff.before_file), " (%s)" % md_text(", ".join(
               x for x in (diff.before_host, diff.before_at) if x)) if diff.before_host or diff.before_at else ""),
           "- after: %s%s" % (md_code(diff.after_file), " (%s)" % md_text(", ".join(
               x for x in (diff.after_host, diff.after_at) if x)) if diff.after_host or diff.after_at else ""),
           "", md_inline(diff_headline(diff)), ""]
    for section, changes in _sections(diff):
        out += ["#### %s" % md_inline(TITLES.get(section, section)), "", "| fact | before | after |", "|---|---|---|"]
        out += ["| %s | %s | %s |" % (md_text(c.fact), md_code(c.before) if c.before is not None else "-",
                                      md_code(c.after) if c.after is not None else "-") for c in changes]
        out.append("")
    if diff.findings_new or diff.findings_gone:
        out += ["#### Findings", "", "| | id | severity | title |", "|---|---|---|---|"]
        for mark, items in (("new", diff.findings_new), ("gone", diff.findings_gone)):
            out += ["| %s | %s | %s | %s |" % (mark, md_code(f.id), md_text(f.severity), md_inline(f.title)) for f in items]
        out.append("")
    out += ["> note: %s" % md_text(note) for note in diff.notes]
    return "\n".join(out).rstrip("\n") + "\n"
