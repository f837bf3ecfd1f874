"""`cudaenv list`: the toolkit table (80 columns) and its JSON. Pure: data in (the state and its view), text out."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # off `cudaenv list`'s import path (typing imports re)
    from typing import Any, Dict, List, Sequence

from cudaenv.core.i18n import t, tr
from cudaenv.render.text import WIDTH, fit, wrap
from cudaenv.render.width import pad, width_of
from cudaenv.core.text import printable

ACTIVE = "*"
LINK = "->"



def toolkits_to_json(state, notes: Sequence[Any] = ()) -> Dict[str, Any]:
    """The JSON of `cudaenv list --json`: schema_version, toolkits, cuda_symlink, active_toolkit, notes."""
    from cudaenv.model.reports import ToolkitList

    return ToolkitList(tuple(state.toolkits), state.cuda_symlink, state.active_toolkit, tuple(notes)).to_dict()


def render_toolkit_table(state, view, notes: Sequence[Any] = (), system: str = "linux", width: int = WIDTH,
                         places: Sequence[str] = ()) -> str:
    """The human table: marks, version, install method, path; a legend, the link's state and the notes below.
    ``view``: what the legend says, decided by cudaenv.toolkit.table.list_view(state); ``places``: where discovery
    looked (:func:`cudaenv.probes.toolkits.candidates.searched_places`), named when it found nothing."""
    lines: List[str] = []
    if not state.toolkits:
        lines.append(t("No CUDA toolkit found."))
        if places:
            lines += _wrap(t("Looked in %s.", t(", ").join(t(place) for place in places)), width)  # data/toolkit_places.txt
        sep = ";" if system == "windows" else ":"
        example = "D:\\cuda" if system == "windows" else "/sw/cuda"
        lines += _wrap(
            t("Toolkits elsewhere: set CUDAENV_TOOLKITS=%s (folders separated by '%s'; each a toolkit or a folder of toolkits).",
              example, sep),
            width,
        )
    else:
        rows = [("", t("VERSION"), t("INSTALLED BY"), t("PATH"))]
        for tk in state.toolkits:
            mark = (ACTIVE if tk.active else " ") + (LINK if tk.is_link_target else "  ")
            method = (t("unknown") if tk.install_method == "unknown" else tk.install_method) + ("" if tk.nvcc else t(", no nvcc"))
            rows.append((mark, printable(tk.version or "?"), printable(method), printable(tk.path)))
        w_ver = max(width_of(r[1]) for r in rows)
        w_method = max(width_of(r[2]) for r in rows)
        for mark, version, method, path in rows:
            head = "%-3s %s  %s  " % (mark, pad(version, w_ver), pad(method, w_method))
            lines.append((head + fit(path, max(20, width - width_of(head)))).rstrip())
        lines.append("")
        lines += _legend(state, view, width)
    for note in notes:
        lines += _wrap(t("note: %s", printable(tr(getattr(note, "message", note)))), width, indent="      ")
    return "\n".join(lines) + "\n"


def _legend(state, view, width: int) -> List[str]:
    out: List[str] = []
    active = state.active_toolkit
    if active is not None and active.path:
        if active.via == "PATH":
            shown = active.nvcc_on_path[0] if active.nvcc_on_path else active.nvcc
            what = t("the nvcc on PATH (%s)", printable(shown))
            if active.nvcc and shown != active.nvcc:
                what += t(" runs %s", printable(active.nvcc))
        else:
            what = t("%s points here (no nvcc on PATH)", active.via)
        out += _wrap("%-3s %s" % (ACTIVE, t("active: %s", what)), width, indent="    ")
        if active.path not in {tk.path for tk in state.toolkits}:
            out += _wrap("    " + t("(the active nvcc lives in %s, which holds no complete toolkit)", printable(active.path)), width,
                         indent="    ")
    else:
        out.append("    " + t("no toolkit is active: no nvcc on PATH and no CUDA_HOME"))
    link = state.cuda_symlink
    if link is not None:
        if link.dangling:
            out += _wrap("%-3s %s" % ("!", t("%s -> %s is dangling: its target does not exist", printable(link.path),
                                                printable(link.target))), width, indent="    ")
        else:
            via = t(" (through /etc/alternatives)") if link.alternatives else ""
            out += _wrap("%-3s %s" % (LINK, t("%s points here%s", printable(link.path), via)), width, indent="    ")
    if view.several_on_path:
        out.append("    " + t("several toolkits have nvcc on PATH: the first one wins"))
    out += _numbering_legend(view, width)
    return out


def _numbering_legend(view, width: int) -> List[str]:
    """Where one major.minor has a release number (13.0.2) and an nvcc number (13.0.88): which one `use X.Y` picks."""
    out: List[str] = []
    for pick in view.picks:
        others = ", ".join(pick.others)
        out += _wrap("    " + t("`cudaenv use %s` picks %s (release %s); %s is nvcc's own number, not a release: give it "
                              "exactly (`cudaenv use %s`) or the path", pick.major_minor, pick.toolkit.path,
                              pick.toolkit.version, others, pick.others[0]),
                     width, indent="      ")
    return out


def _wrap(text: str, width: int, indent: str = "  ") -> List[str]:
    """The first line as given, the others under ``indent``; a path longer than a line keeps both ends; every
    string from outside in it (paths, versions, notes) escaped."""
    return wrap(printable(text), "", indent, width, newlines=False, long_words="fit") if text.strip() else []
