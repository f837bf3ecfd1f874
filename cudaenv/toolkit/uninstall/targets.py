"""Which toolkits an uninstall is about (reads the Host): ``VERSION|PATH`` and ``--repoint`` to toolkit records.

Matching is :mod:`cudaenv.toolkit.select`'s one grammar (refuse ambiguity for the targets, the newest match for
``--repoint``); what is left here is what only a removal needs: a path that is no longer a toolkit (residue) or
was never found, a version with nothing installed, a system folder refused.
"""

import posixpath
from typing import List, Optional, Sequence, Tuple

from cudaenv.core.errors import UserError
from cudaenv.probes.site_packages import enclosing_site_packages
from cudaenv.probes.toolkits import nvcc_file_version, probe_toolkits, toolkit_version_from_files
from cudaenv.model.snapshot import CudaSymlink, Note, Toolkit
from cudaenv.core.text import printable
from cudaenv.toolkit.select import NEWEST, UNIQUE, SelectError, looks_like_path, match_toolkits, select_toolkits
from cudaenv.toolkit.uninstall.records import PROTECTED
from cudaenv.core.version import major_minor
from cudaenv.core.i18n import M


def load_toolkits(host, notes: List[Note], site_packages: Sequence[str] = ()) -> Tuple[Tuple[Toolkit, ...], Optional[CudaSymlink]]:
    """Every toolkit the toolkits probe finds, and the /usr/local/cuda link."""
    state = probe_toolkits(host, notes, site_packages=tuple(site_packages))
    return tuple(state.toolkits), state.cuda_symlink


def _version_of(host, path: str, notes: List[Note]) -> Optional[str]:
    """The version of a folder given by path that discovery did not list (its files only; nothing is run)."""
    version, _source, _bundled = toolkit_version_from_files(host, path, notes)
    nvcc = posixpath.join(path, "bin", "nvcc")
    if version is None and host.is_file(nvcc):
        version = nvcc_file_version(host, nvcc)
    return version


def select_targets(host, spec: Optional[str], toolkits: Sequence[Toolkit], everything: bool,
                   notes: Optional[List[Note]] = None) -> List[Toolkit]:
    """The toolkits ``VERSION|PATH`` names (``--all``: every match, or every toolkit without a spec).

    Matching is :mod:`cudaenv.toolkit.select`'s grammar with the refuse-ambiguity policy; what is left here is
    what only a removal needs: a path that is no longer a toolkit (residue) or was never found, and a version
    with nothing installed (its residue under /usr/local/cuda-X.Y).
    """
    notes = [] if notes is None else notes
    if spec is None:
        if not everything:
            raise UserError(M("say which toolkit to remove"), hint=M("cudaenv uninstall 12.4, cudaenv uninstall /usr/local/cuda-12.4, or --all"))
        if not toolkits:
            raise UserError(M("no CUDA toolkit was found here"), hint=M("`cudaenv list` shows what cudaenv finds"))
        return list(toolkits)
    system = host.system
    if looks_like_path(spec):
        path = spec if system == "windows" else posixpath.normpath(spec)
        if not (path.startswith("/") or (system == "windows" and len(path) > 2 and path[1:3] in (":\\", ":/"))):
            raise UserError(M("%s is not an absolute path", printable(spec)), hint=M("give the toolkit's folder, e.g. /usr/local/cuda-12.4"))
        found = match_toolkits(toolkits, path, system, resolve=host.resolve)
        if found:
            return found[:1]
        if path.rstrip("/") in PROTECTED or (system != "windows" and path.count("/") < 2):
            raise UserError(M("%s is a system folder, not a toolkit", printable(path)), hint=M("give the toolkit's own folder, e.g. /usr/local/cuda-12.4"))
        if not host.lexists(path):
            return [Toolkit(version=None, path=path, source="residue")]
        markers = ("bin/nvcc", "version.json", "version.txt", "include/cuda.h", "conda-meta", "bin/cuda-uninstaller")
        if host.is_dir(path) and not host.is_link(path) and enclosing_site_packages(path) is None and not any(
            host.lexists(posixpath.join(path, m)) for m in markers
        ):
            raise UserError(M("%s does not look like a CUDA toolkit (no bin/nvcc, version.json or include/cuda.h)", printable(path)),
                            hint=M("`cudaenv list` shows the toolkits cudaenv finds"))
        return [Toolkit(version=_version_of(host, path, notes) if host.is_dir(path) else None, path=path, source="argument")]
    try:
        return select_toolkits(toolkits, spec, UNIQUE, system, every=everything)
    except SelectError as exc:
        if exc.kind == "not-a-spec":
            raise UserError(M("%r is neither a CUDA version nor a path", spec), hint=M("for example `cudaenv uninstall 12.4`")) from None
        if exc.kind == "ambiguous":
            raise UserError(exc.message, hint=M("give the path, or --all to remove every one")) from None
    # the folder a runfile or deb install of that version has: always major.minor (``12`` -> /usr/local/cuda-12.0;
    # /usr/local/cuda-12 is only ever the deb packages' alternatives link, never a toolkit's folder)
    default = "/usr/local/cuda-%s" % major_minor(spec)
    if any(posixpath.normpath(t.path) == default for t in toolkits):
        # that folder holds another release of the same X.Y (the system's 13.0.88 beside a removed `cudaenv install
        # 13.0.3.0`, or a release that never was here): the residue of this one is where `cudaenv install` puts it
        from cudaenv.probes.toolkits.store import toolkits_dir

        return [Toolkit(version=spec, path=posixpath.join(toolkits_dir(host.env, system), spec), source="residue")]
    return [Toolkit(version=spec, path=default, source="residue")]


def repoint_target(value: str, toolkits: Sequence[Toolkit], targets: Sequence[Toolkit], system: str = "linux") -> str:
    """The folder ``--repoint VERSION|PATH`` names among the toolkits that stay (not conda/pip): the newest match."""
    removing = {t.path for t in targets}
    candidates = [t for t in toolkits if t.path not in removing and t.install_method not in ("conda", "pip")]
    try:
        return select_toolkits(candidates, value, NEWEST, system)[0].path
    except SelectError:
        listing = ", ".join("%s (%s)" % (t.version or "?", printable(t.path)) for t in candidates) or "none"
        raise UserError(M("--repoint %s: no other installed toolkit matches", printable(value)),
                        hint=M("installed and not being removed: %s", listing)) from None

