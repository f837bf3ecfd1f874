"""``cudaenv uninstall --check``: what is still left of a toolkit after its removal. Pure over an Inspection."""

from typing import List, Tuple

from cudaenv.model.record import Record
from cudaenv.core.i18n import M
from cudaenv.toolkit.uninstall.facts import Inspection


class Residue(Record):
    kind: str  # folder | link | alternatives | ldconf | rc-line | wrapper | package | conda-package | pip-wheel
    path: str
    detail: str
    target: str  # the toolkit path it belongs to


class ResidueReport(Record):
    """``cudaenv uninstall --check --json``."""

    _json_envelope = True

    targets: Tuple[str, ...]
    clean: bool
    residue: Tuple[Residue, ...] = ()


def find_residue(inspection: Inspection) -> Tuple[Residue, ...]:
    out: List[Residue] = []
    link = inspection.cuda_symlink
    for t in inspection.targets:
        path = t.toolkit.path
        if t.present:
            what = (M("a link to elsewhere") if t.is_link else M("%d entries: %s", len(t.entries), ", ".join(t.entries[:8]) + (" ..." if len(t.entries) > 8 else "")))
            if t.toolkit.install_method not in ("conda", "pip"):
                out.append(Residue("folder", path, M("the folder is still there (%s)", what), path))
        if t.link_points_here and link is not None:
            state = M("dangling") if link.dangling else M("points at it")
            out.append(Residue("link", link.path, M("%s -> %s (%s)", link.path, link.target, state), path))
        for alt in t.alternatives:
            out.append(Residue("alternatives", alt.admin_file, M("update-alternatives group '%s' still lists %s", alt.name, alt.path), path))
        for name in t.packages:
            out.append(Residue("package", name, M("the %s package %s still owns files in %s", t.package_manager or M("system"), name, path), path))
        for name in t.related_packages:
            out.append(Residue("package", name, M("the package %s (named for this version) is still installed", name), path))
        for name in t.conda_packages:
            out.append(Residue("conda-package", t.conda_prefix or path, M("conda package %s is still in %s", name, t.conda_prefix), path))
        if t.pip is not None:
            for name in t.pip.dists:
                out.append(Residue("pip-wheel", t.pip.site_packages, M("%s is still installed in %s", name, t.pip.site_packages), path))
    for conf in inspection.ldconf:
        for n, text in conf.lines:
            out.append(Residue("ldconf", conf.file, "%s:%d: %s" % (conf.file, n, text), ",".join(conf.targets)))
    for w in inspection.wrappers:
        out.append(Residue("wrapper", w.path, M("%s -> %s", w.path, w.text) if w.kind == "link" else M("%s runs %s", w.path, w.text), w.target))
    for line in inspection.rc_lines:
        out.append(Residue("rc-line", line.file, "%s:%d: %s" % (line.file, line.lineno, line.text), ",".join(line.targets)))
    return tuple(out)
