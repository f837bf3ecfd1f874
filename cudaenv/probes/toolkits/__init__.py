"""CUDA toolkits: where they are, which version each is, how it was installed, and which one is active.

Discovery proposes candidate folders from many places, then keeps those that look like a toolkit
(``bin/nvcc``, ``version.json``, ``version.txt`` or ``include/cuda.h``), merging candidates that resolve
to the same folder (every place that found it stays in ``Toolkit.sources``). The places, in discovery's order, with
the label each gives and the systems it is looked at on, are the rows of ``data/toolkit_places.txt`` (what
`cudaenv list` prints when it finds nothing; tests/probes/test_toolkit_places.py holds them to
:mod:`cudaenv.probes.toolkits.candidates`).

The version comes from ``version.json``, ``version.txt``, the package metadata (pip/conda), ``cuda.h``,
and only then from running ``nvcc --version``, so the common case runs no program at all.
This module is on ``cudaenv use``'s hot path: stdlib only, nothing heavy.

The probe is cut in three: :mod:`cudaenv.probes.toolkits.candidates` proposes the folders,
:mod:`cudaenv.probes.toolkits.folder` reads one folder's files, and this module merges the candidates into
:class:`Toolkit` records, tells which one is active and reads the /usr/local/cuda link. The names of the other two
are importable from here, as are the parsers of :mod:`cudaenv.parse.toolkit_files` it used to hold.
"""

from __future__ import annotations

import os
import posixpath

from cudaenv.core.lazy import LazyModule
from cudaenv.model.record import Record, replace
from cudaenv.probes.package_db import is_rpm_system
from cudaenv.probes.paths import clean_env_path, dirname, is_absolute
from cudaenv.probes.toolkits.candidate import ToolkitCandidate
from cudaenv.probes.toolkits.candidates import LINK_NAMES, candidate_folders, home_value
from cudaenv.probes.toolkits.folder import (
    PROBE,
    follow_nvcc,
    has_toolkit_markers,
    lib_dir,
    nvcc_in,
    nvcc_file_version,
    root_of_nvcc,
    runfile_uninstaller,
    toolkit_version_from_files,
    wheel_dists,
)
from cudaenv.probes.toolkits.store import is_cudaenv_install
from cudaenv.model.toolkits import ActiveToolkit, CudaSymlink, Note, Toolkit
from cudaenv.core.version_strings import version_key

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed



TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Dict, List, Optional, Sequence, Tuple

DISTRO_ALIASES = ("/usr/lib/cuda", "/usr/lib/nvidia-cuda-toolkit")


class ToolkitState(Record):
    """What toolkit discovery found: the toolkits (newest first), the /usr/local/cuda link, the active one."""

    toolkits: Tuple[Toolkit, ...] = ()
    cuda_symlink: Optional[CudaSymlink] = None
    active_toolkit: Optional[ActiveToolkit] = None


# ------------------------------------------------------------------------------------ discovery
class _Found:
    """A toolkit folder found, with every source that proposed it."""

    __slots__ = ("path", "key", "sources", "candidate")

    def __init__(self, path: str, key: str, sources: Optional[List[str]] = None, candidate: Optional[ToolkitCandidate] = None):
        self.path, self.key, self.candidate = path, key, candidate
        self.sources = [] if sources is None else sources


def probe_toolkits(host, notes: list, site_packages: Sequence[str] = (), install_methods: bool = True) -> ToolkitState:
    """Every CUDA toolkit on ``host``, the /usr/local/cuda link, and the active toolkit. Problems go into ``notes``.

    ``install_methods=False`` skips reading the dpkg database and the runfile table (a deb or runfile toolkit then says
    "unknown"): `cudaenv use`
    needs paths and versions only, and the database is the slowest thing to read here.
    """
    finder = _Finder(host, notes, install_methods)
    nvccs = finder.nvccs = finder.nvccs_on_path()
    for candidate in candidate_folders(host, notes, site_packages, nvccs):
        finder.consider(candidate)
    return finder.state([finder.build(found) for found in finder.found])


# ------------------------------------------------------------------------------------- the finder
class _Finder:
    """Merges candidates by resolved path and turns each kept folder into a Toolkit."""

    def __init__(self, host, notes: list, install_methods: bool = True):
        self.host = host
        self.notes = notes
        self.install_methods = install_methods
        self.found: List[_Found] = []
        self._by_key: Dict[str, _Found] = {}
        self._dpkg: Optional[Dict[str, Tuple[str, ...]]] = None
        self.nvccs: List[Tuple[str, str]] = []
        self._keys: Dict[str, Optional[str]] = {}
        self._dists: Dict[str, Dict[str, str]] = {}  # folder -> its wheel_dists (the version and the method ask)
        self._path_keys: Optional[set] = None  # the keys of the PATH entries (flag asks for each toolkit)
        self._by_path: Dict[str, str] = {}  # found.path -> found.key (key_of, asked once for each toolkit)

    def key(self, path: str) -> Optional[str]:
        """The identity of a folder: its path with links followed (lower-cased on Windows); None when it is not there."""
        if path not in self._keys:
            self._keys[path] = self._key(path)
        return self._keys[path]

    def _key(self, path: str) -> Optional[str]:
        host = self.host
        if host.system == "windows":
            return ntpath.normpath(path).rstrip("\\").lower() if host.lexists(path) else None
        resolved = host.resolve(path)
        if resolved is None:
            return None
        if resolved in DISTRO_ALIASES and host.is_file("/usr/bin/nvcc"):
            return "/usr"  # Debian's nvidia-cuda-toolkit: one toolkit behind /usr/bin/nvcc (a wrapper) and /usr/lib/cuda
        return resolved

    def consider(self, cand: ToolkitCandidate) -> None:
        host = self.host
        key = self.key(cand.path)
        if key is None:
            if cand.strict and host.lexists(cand.path):
                from cudaenv.core.i18n import M
                self.notes.append(Note(PROBE, M("%s is a dangling or looping link", cand.label or cand.path)))
            return
        if key in self._by_key:
            found = self._by_key[key]
            if cand.source not in found.sources:
                found.sources.append(cand.source)
            return
        path = ntpath.normpath(cand.path) if host.system == "windows" else key
        if not host.is_dir(path):
            if cand.strict:
                from cudaenv.core.i18n import M
                self.notes.append(Note(PROBE, M("%s is not a folder; skipped", cand.label or path)))
            return
        if not (cand.force or has_toolkit_markers(host, path)):
            if cand.strict:
                if not _readable(host, path):
                    from cudaenv.core.i18n import M
                    self.notes.append(Note(PROBE, M("%s cannot be read (permission denied); skipped", cand.label or path)))
                else:
                    from cudaenv.core.i18n import M
                    self.notes.append(
                        Note(PROBE, M("%s holds no toolkit (no bin/nvcc, version file or include/cuda.h)", cand.label or path))
                    )
            return
        found = _Found(path, key, [cand.source], cand)
        self._by_key[key] = found
        self.found.append(found)

    # -------------------------------------------------------------- one toolkit
    def build(self, found: _Found) -> Toolkit:
        host, path, cand = self.host, found.path, found.candidate
        version, version_source, bundled = self._version(path, cand)
        nvcc = "/usr/bin/nvcc" if path == "/usr" else nvcc_in(host, path)
        if version is None and nvcc is not None:
            version = self._nvcc_file_version(nvcc)
            version_source = "nvcc-file" if version else None
            if version is None and host.rooted:
                # nothing inside --root runs on this machine: its nvcc is an image's program
                from cudaenv.core.i18n import M
                self.notes.append(Note(PROBE, M("could not tell the version of %s: no version.json, version.txt, cuda.h or "
                                       "release string in its nvcc, and only running that nvcc could tell (nothing inside "
                                       "--root is run)", path)))
            elif version is None:
                version = self._run_nvcc(nvcc)
                version_source = "nvcc" if version else None
        return Toolkit(
            version=version,
            path=path,
            source=found.sources[0],
            install_method=self._install_method(path, cand),
            version_source=version_source,
            nvcc=nvcc,
            lib_dir=lib_dir(host, path),
            bundled_driver=bundled,
            sources=tuple(found.sources),
        )

    def _version(self, path: str, cand: Optional[ToolkitCandidate]) -> Tuple[Optional[str], Optional[str], Optional[str]]:
        return toolkit_version_from_files(self.host, path, self.notes, cand, dists=self.wheel_dists)

    def wheel_dists(self, path: str) -> Dict[str, str]:
        if path not in self._dists:
            self._dists[path] = wheel_dists(self.host, path)
        return self._dists[path]

    def _nvcc_file_version(self, nvcc: str) -> Optional[str]:
        return nvcc_file_version(self.host, nvcc)

    def _run_nvcc(self, nvcc: str) -> Optional[str]:
        from cudaenv.parse.nvcc import parse_nvcc_version

        real = self.host.local(nvcc)
        result = self.host.run([str(real), "--version"])
        version = parse_nvcc_version(result.stdout) if result.ok else None
        if version is None:
            why = result.describe() if not result.ok else "nvcc --version printed no release"
            from cudaenv.core.i18n import M
            self.notes.append(Note(PROBE, M("could not tell the version of %s: %s", nvcc, why)))
        return version

    def _install_method(self, path: str, cand: Optional[ToolkitCandidate]) -> str:
        host = self.host
        if cand is not None and cand.method in ("pip", "conda"):
            return cand.method
        if is_cudaenv_install(host, path):
            return "cudaenv"  # `cudaenv install` (the data dir or a --prefix), found by any source
        if self.install_methods and runfile_uninstaller(host, path):
            return "runfile"
        if self.wheel_dists(path):
            return "pip-wheels"  # a toolkit folder assembled from NVIDIA's wheels (their dist-info kept in it)
        if host.system == "windows":
            if (cand is not None and cand.method == "windows-installer") or "nvidia gpu computing toolkit" in path.lower():
                return "windows-installer"
            return "conda" if host.is_dir(host.join(dirname(host, path), "conda-meta")) else "unknown"
        if self.install_methods and self.dpkg_owners(path):
            return "deb"
        if host.is_dir(host.join(path, "conda-meta")):
            return "conda"
        rpm = is_rpm_system(host)
        if path == "/usr":
            return "rpm" if rpm else "distro"
        if rpm and path.startswith("/usr/local/cuda-"):
            return "rpm"  # a weak signal: an rpm system and a toolkit without the runfile's uninstaller
        return "unknown"

    def dpkg_owners(self, path: str) -> Tuple[str, ...]:
        if self._dpkg is None:
            from cudaenv.probes.dpkg import probe_dpkg_lists  # dataclasses: off the `cudaenv use` path

            self._dpkg, _unreadable = probe_dpkg_lists(self.host, lambda name: "cuda" in name or "nvcc" in name)
        if path == "/usr":
            return tuple(package for package, paths in self._dpkg.items() if "/usr/bin/nvcc" in paths)
        prefix = path.rstrip("/") + "/"
        return tuple(package for package, paths in self._dpkg.items() if any(p.startswith(prefix) for p in paths))

    def state(self, toolkits: List[Toolkit]) -> ToolkitState:
        """The state of the toolkits built: the /usr/local/cuda link, the active one, each flagged, newest first."""
        symlink = find_cuda_symlink(self.host)
        active = self.active(toolkits, self.nvccs)
        toolkits = [self.flag(tk, active, symlink) for tk in toolkits]
        toolkits.sort(key=lambda tk: (tuple(-x for x in version_key(tk.version)), tk.version is None, tk.path))
        return ToolkitState(tuple(toolkits), symlink, active)

    # ---------------------------------------------------------- which is active
    def nvccs_on_path(self) -> List[Tuple[str, str]]:
        """Every nvcc on PATH in PATH order, each with the real nvcc it ends at (links and wrappers followed)."""
        out = []
        for listed in self.host.which_all_in_root("nvcc"):
            out.append((listed, follow_nvcc(self.host, listed)))
        return out

    def active(self, toolkits: List[Toolkit], nvccs: List[Tuple[str, str]]) -> Optional[ActiveToolkit]:
        listed = tuple(n for n, _ in nvccs)
        if nvccs:
            real = nvccs[0][1]
            root = root_of_nvcc(self.host, real)
            tk = self._toolkit_at(toolkits, root) if root else None
            return ActiveToolkit(tk.path if tk else root, real, tk.version if tk else None, "PATH", listed)
        for name in ("CUDA_HOME", "CUDA_PATH"):
            value = home_value(self.host, clean_env_path(self.host.env.get(name)))
            tk = self._toolkit_at(toolkits, value) if value else None
            if tk is not None:
                return ActiveToolkit(tk.path, tk.nvcc, tk.version, name, listed)
        return None

    def _toolkit_at(self, toolkits: List[Toolkit], path: Optional[str]) -> Optional[Toolkit]:
        if not path or not is_absolute(self.host, path):
            return None
        key = self.key(path)
        found = self._by_key.get(key) if key is not None else None
        if found is None:
            return None
        return next((tk for tk in toolkits if tk.path == found.path), None)

    def flag(self, tk: Toolkit, active: Optional[ActiveToolkit], symlink: Optional[CudaSymlink]) -> Toolkit:
        host = self.host
        me = self.key_of(tk)
        if self._path_keys is None:
            self._path_keys = {self.key(entry) for entry in host.env_path() if is_absolute(host, entry)} - {None}
        on_path = self.key(host.join(tk.path, "bin")) in self._path_keys
        if not on_path and tk.nvcc:  # reached through a wrapper or link elsewhere on PATH
            nvcc_key = self.key(tk.nvcc)
            on_path = nvcc_key is not None and any(self.key(real) == nvcc_key for _, real in self.nvccs)
        in_ld = False
        if host.system != "windows":
            prefix = "/usr/lib/cuda" if me == "/usr" else me
            for entry in (host.env.get("LD_LIBRARY_PATH") or "").split(":"):
                key = self.key(entry) if entry.startswith("/") else None
                if key and (key == prefix or key.startswith(prefix.rstrip("/") + "/")):
                    in_ld = True
                    break
        homes = (home_value(host, clean_env_path(host.env.get(name))) for name in ("CUDA_HOME", "CUDA_PATH"))
        cuda_home = any(self._toolkit_at([tk], value) is not None for value in homes)
        link = symlink is not None and symlink.resolved is not None and self.key(symlink.resolved) == me
        return replace(
            tk,
            active=active is not None and active.path == tk.path,
            on_path=on_path,
            in_ld_library_path=in_ld,
            is_cuda_home=cuda_home,
            is_link_target=link,
        )

    def key_of(self, tk: Toolkit) -> str:
        if len(self._by_path) != len(self.found):
            self._by_path = {found.path: found.key for found in reversed(self.found)}
        return self._by_path[tk.path]


def find_cuda_symlink(host) -> Optional[CudaSymlink]:
    """The /usr/local/cuda link (or /etc/alternatives/cuda when that is all there is); None when neither is a link."""
    if host.system == "windows":
        return None
    for name in LINK_NAMES:
        target = host.readlink(name)
        if target is None:
            continue
        resolved = host.resolve(name)
        return CudaSymlink(name, target, resolved, resolved is None, _through_alternatives(host, name))
    return None


def _through_alternatives(host, name: str) -> bool:
    current = name
    for _ in range(40):
        if current.startswith("/etc/alternatives/"):
            return True
        target = host.readlink(current)
        if target is None:
            return False
        current = posixpath.normpath(target if target.startswith("/") else posixpath.join(posixpath.dirname(current), target))
    return False


def dpkg_owners(host, path: str) -> Tuple[str, ...]:
    """Names of the dpkg packages whose file lists (/var/lib/dpkg/info/*.list) put files in ``path``."""
    return _Finder(host, []).dpkg_owners(path)


def _readable(host, path: str) -> bool:
    try:
        return os.access(host.local(path), os.R_OK | os.X_OK)
    except (OSError, ValueError):
        return False
