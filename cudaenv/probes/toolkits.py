"""CUDA toolkits: where they are, which version each is, how it was installed, and which one is active.

Discovery proposes candidate folders from many places, then keeps those that look like a toolkit
(``bin/nvcc``, ``version.json``, ``version.txt`` or ``include/cuda.h``), merging candidates that resolve
to the same folder (every place that found it stays in ``Toolkit.sources``):

* ``/usr/local/cuda-*`` and ``/opt/cuda``, ``/opt/cuda-*`` (``/Developer/NVIDIA/CUDA-*`` on macOS),
  ``C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v*`` on Windows;
* distro packages: ``/usr/bin/nvcc`` with ``/usr/lib/cuda`` (the toolkit is ``/usr``);
* the toolkits ``cudaenv install`` put in the data dir (``CUDAENV_DATA_DIR``; install method ``cudaenv``);
* ``CUDAENV_TOOLKITS`` (each entry a toolkit root or a folder of toolkit roots, like ``/sw/cuda``);
* the active conda env (``CONDA_PREFIX``) and pip ``nvidia`` wheels in the given site-packages;
* ``CUDA_HOME``, ``CUDA_PATH``, ``CUDA_PATH_V12_1``-style variables, ``CUDA_ROOT``;
* every ``nvcc`` on PATH (shell wrappers and links followed), ``/usr/local/cuda``, ``/etc/alternatives/cuda``.

The version comes from ``version.json``, ``version.txt``, the package metadata (pip/conda), ``cuda.h``,
and only then from running ``nvcc --version``, so the common case runs no program at all.
This module is on ``cudaenv use``'s hot path: stdlib only, nothing heavy.
"""

from __future__ import annotations

import os
import posixpath

from cudaenv._lazy import LazyModule, LazyPattern
from cudaenv._record import Record, replace
from cudaenv.parse.nvcc import EXCERPT as RELEASE_EXCERPT
from cudaenv.parse.nvcc import RELEASE_MARKER, parse_nvcc_version, parse_release_excerpt
from cudaenv.parse.toolkit_files import (  # noqa: F401  (parse_bundled_driver, parse_version_txt: re-exported)
    cuda_h_raw,
    parse_bundled_driver,
    parse_conda_meta_name,
    parse_cuda_h,
    parse_dist_info_name,
    parse_dist_metadata_version,
    parse_version_json,
    parse_version_txt,
    parse_wrapper_target,
    version_json_raw,
)
from cudaenv.snapshot import ActiveToolkit, CudaSymlink, Note, Toolkit
from cudaenv.probes.toolkit_store import is_cudaenv_install
from cudaenv.version import malformed, version_key

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Dict, List, Optional, Sequence, Tuple

PROBE = "toolkits"
CUDA_H_LIMIT = 64 * 1024  # CUDA_VERSION sits near the top of a 1 MB cuda.h (about 12 KB in, for 13.0)
NVCC_SCAN_LIMIT = 256 * 1024 * 1024  # bytes of an nvcc searched for its release string (13.0's is 30 MB)
WRAPPER_LIMIT = 4096  # a shell wrapper is small; an ELF nvcc is never read further than this
LINK_NAMES = ("/usr/local/cuda", "/etc/alternatives/cuda")
DISTRO_ALIASES = ("/usr/lib/cuda", "/usr/lib/nvidia-cuda-toolkit")

# (?i), not re.IGNORECASE: importing re (and enum, functools) at import time costs the `cudaenv use` path ~10 ms
_WIN_NAME = LazyPattern(r"(?i)^v(\d+(?:\.\d+)*)$")
_CUDA_PATH_V = LazyPattern(r"(?i)^CUDA_PATH_V\d+_\d+$")
_PIP_CU = LazyPattern(r"^cu(\d+)$")


class ToolkitState(Record):
    """What toolkit discovery found: the toolkits (newest first), the /usr/local/cuda link, the active one."""

    toolkits: Tuple[Toolkit, ...] = ()
    cuda_symlink: Optional[CudaSymlink] = None
    active_toolkit: Optional[ActiveToolkit] = None


# ------------------------------------------------------------------------------------ discovery
class _Candidate:
    """A folder some place proposes as a toolkit."""

    __slots__ = ("path", "source", "method", "version", "version_source", "strict", "force", "label")

    def __init__(
        self,
        path: str,  # as the inspected system names it
        source: str,
        method: Optional[str] = None,  # an install method the place itself tells (conda, pip, windows-installer)
        version: Optional[str] = None,  # from package metadata (pip dist-info, conda-meta)
        version_source: Optional[str] = None,
        strict: bool = False,  # note it when the folder holds no toolkit (named like one, or given by the user)
        force: bool = False,  # keep it even without toolkit markers (a pip runtime wheel)
        label: Optional[str] = None,  # how to name it in a note ("CUDA_HOME=/x")
    ):
        self.path, self.source, self.method, self.version = path, source, method, version
        self.version_source, self.strict, self.force, self.label = version_source, strict, force, label


class _Found:
    """A toolkit folder found, with every source that proposed it."""

    __slots__ = ("path", "key", "sources", "candidate")

    def __init__(self, path: str, key: str, sources: Optional[List[str]] = None, candidate: Optional[_Candidate] = None):
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
    for candidate in _candidates(host, notes, site_packages, nvccs):
        finder.consider(candidate)
    symlink = find_cuda_symlink(host)
    toolkits = [finder.build(found) for found in finder.found]
    active = finder.active(toolkits, nvccs)
    toolkits = [finder.flag(tk, active, symlink) for tk in toolkits]
    toolkits.sort(key=lambda tk: (tuple(-x for x in version_key(tk.version)), tk.version is None, tk.path))
    return ToolkitState(tuple(toolkits), symlink, active)


def _candidates(host, notes: list, site_packages: Sequence[str], nvccs: Sequence[Tuple[str, str]]) -> List[_Candidate]:
    out: List[_Candidate] = []
    if host.system == "windows":
        base = _clean_env_path(host.env.get("ProgramFiles") or host.env.get("PROGRAMFILES")) or "C:\\Program Files"
        root = ntpath.join(base, "NVIDIA GPU Computing Toolkit", "CUDA")
        for name in host.listdir(root):
            out.append(_Candidate(ntpath.join(root, name), "Program Files", "windows-installer", strict=bool(_WIN_NAME.match(name))))
    else:
        out += _named_dirs(host, "/usr/local", "cuda-", "/usr/local/cuda-*")
        out.append(_Candidate("/opt/cuda", "/opt/cuda"))
        out += _named_dirs(host, "/opt", "cuda-", "/opt/cuda")
        if host.system == "darwin":
            out += _named_dirs(host, "/Developer/NVIDIA", "CUDA-", "/Developer/NVIDIA/CUDA-*")
        if host.is_file("/usr/bin/nvcc") or host.is_dir("/usr/lib/cuda"):
            out.append(_Candidate("/usr", "distro", "distro", force=host.is_file("/usr/bin/nvcc")))
    out += _cudaenv_toolkits(host, notes)
    out += _installed(host)
    out += _conda(host)
    out += _pip(host, site_packages)
    for name in ("CUDA_HOME", "CUDA_PATH"):
        out += _from_env(host, notes, name)
    for name in sorted(k for k in host.env if k[:11].upper() == "CUDA_PATH_V" and _CUDA_PATH_V.match(k)):
        out += _from_env(host, notes, name)
    out += _from_env(host, notes, "CUDA_ROOT")
    for _listed, real in nvccs:
        root = _root_of_nvcc(host, real)
        if root:
            out.append(_Candidate(root, "PATH"))
    if host.system != "windows":
        for name in LINK_NAMES:
            out.append(_Candidate(name, name))
    return out


def _is_toolkit_name(name: str) -> bool:
    """``cuda-12.1``, ``CUDA12.4``, ``cuda-v11.8``: cuda or CUDA, an optional ``-`` and ``v``, then dotted ASCII digits.
    (Plain string tests: this runs on every `cudaenv use`, and a regular expression would import re.)"""
    if name[:4] not in ("cuda", "CUDA"):
        return False
    rest = name[4:]
    rest = rest[1:] if rest[:1] == "-" else rest
    rest = rest[1:] if rest[:1] == "v" else rest
    return all(part.isascii() and part.isdigit() for part in rest.split("."))


def _named_dirs(host, directory: str, prefix: str, source: str) -> List[_Candidate]:
    """``cuda-12.1`` style entries of ``directory``; oddly named ones (``cuda-12.1.bak``) only when they hold a toolkit."""
    out = []
    for name in host.listdir(directory):
        if name.startswith(prefix) or name.lower().startswith(prefix.lower()):
            out.append(_Candidate(host.join(directory, name), source, strict=_is_toolkit_name(name)))
    return out


def _cudaenv_toolkits(host, notes: list) -> List[_Candidate]:
    out = []
    from cudaenv import config

    for entry in (config.value(host.env, "CUDAENV_TOOLKITS") or "").split(host.pathsep):
        entry = _clean_env_path(entry)
        if not entry:
            continue
        if not _is_absolute(host, entry):
            notes.append(Note(PROBE, "CUDAENV_TOOLKITS entry %r is not an absolute path; ignored" % entry))
            continue
        if not host.exists(entry):
            notes.append(Note(PROBE, "CUDAENV_TOOLKITS entry %s does not exist" % entry))
            continue
        if has_toolkit_markers(host, entry):
            out.append(_Candidate(entry, "CUDAENV_TOOLKITS", strict=True, label="CUDAENV_TOOLKITS entry %s" % entry))
            continue
        children = [host.join(entry, name) for name in host.listdir(entry)]
        kept = [c for c in children if host.is_dir(c) and has_toolkit_markers(host, c)]
        if not kept:
            notes.append(Note(PROBE, "CUDAENV_TOOLKITS entry %s holds no toolkit (no bin/nvcc, version file or include/cuda.h)" % entry))
        out += [_Candidate(c, "CUDAENV_TOOLKITS") for c in kept]
    return out


def _installed(host) -> List[_Candidate]:
    """The toolkits `cudaenv install` put in the data dir (finished ones only: they hold the install marker)."""
    from cudaenv.probes.toolkit_store import METHOD, installed

    return [_Candidate(path, "cudaenv install", METHOD) for path in installed(host, host.system)]


def _conda(host) -> List[_Candidate]:
    prefix = _clean_env_path(host.env.get("CONDA_PREFIX"))
    if not prefix or not _is_absolute(host, prefix) or not host.is_dir(prefix):
        return []
    meta = host.join(prefix, "conda-meta")
    version, what = None, None
    packages = {}
    for name in host.listdir(meta):
        record = parse_conda_meta_name(name)
        if record:
            packages.setdefault(record[0], record[1])
    for package in ("cuda-nvcc", "cuda-cudart", "cudatoolkit", "cuda-toolkit", "cuda-version"):
        if package in packages:
            version, what = packages[package], package
            break
    root = prefix
    if host.system == "windows" and host.is_dir(host.join(prefix, "Library", "bin")):
        root = host.join(prefix, "Library")  # conda on Windows keeps the toolkit under Library\
    nvcc = _nvcc_in(host, root) is not None
    targets = host.is_dir(host.join(prefix, "targets"))
    if not (nvcc or targets or what):
        return []
    return [_Candidate(root, "conda", "conda", version, "conda-meta" if version else None, force=True)]


def _pip(host, site_packages: Sequence[str]) -> List[_Candidate]:
    out = []
    for sp in site_packages:
        nvidia = host.join(sp, "nvidia")
        if not host.is_dir(nvidia):
            continue
        dists: Dict[Tuple[str, Optional[str]], str] = {}
        for name in host.listdir(sp):
            dist = parse_dist_info_name(name)
            if dist:
                component, suffix, dist_version = dist
                meta = host.read_text(host.join(sp, name, "METADATA"), limit=8192)
                version = parse_dist_metadata_version(meta or "") or dist_version
                if version:
                    dists[(component, suffix)] = version

        def pick(component: str, major: Optional[str] = None) -> Optional[str]:
            for (comp, suffix), ver in sorted(dists.items(), key=lambda kv: str(kv[0])):
                if comp == component and (major is None or suffix == major or version_key(ver)[:1] == version_key(major)):
                    return ver
            return None

        entries = host.listdir(nvidia)
        for name in entries:
            match = _PIP_CU.match(name)
            if match:  # CUDA 13 wheels share one tree: nvidia/cu13/{bin,include,lib}
                major = match.group(1)
                ver = pick("nvcc", major) or pick("runtime", major)
                out.append(_Candidate(host.join(nvidia, name), "pip", "pip", ver, "dist-info" if ver else None, force=bool(ver)))
        if "cuda_nvcc" in entries:
            ver = pick("nvcc")
            out.append(_Candidate(host.join(nvidia, "cuda_nvcc"), "pip", "pip", ver, "dist-info" if ver else None, force=bool(ver)))
        elif "cuda_runtime" in entries:
            ver = pick("runtime")
            out.append(_Candidate(host.join(nvidia, "cuda_runtime"), "pip", "pip", ver, "dist-info" if ver else None, force=True))
    return out


def _from_env(host, notes: list, name: str) -> List[_Candidate]:
    value = _clean_env_path(host.env.get(name))
    if not value:
        return []
    label = "%s=%s" % (name, value)
    if not _is_absolute(host, value):
        notes.append(Note(PROBE, "%s is not an absolute path; ignored" % label))
        return []
    if not host.exists(value):
        notes.append(Note(PROBE, "%s does not exist" % label))
        return []
    fixed = _home_value(host, value)
    if fixed != value:
        notes.append(Note(PROBE, "%s names the bin folder; it should be the toolkit folder %s" % (label, fixed)))
        value = fixed
    method = "windows-installer" if host.system == "windows" and name.upper().startswith("CUDA_PATH") else None
    return [_Candidate(value, name, method, strict=True, label=label)]


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

    def consider(self, cand: _Candidate) -> None:
        host = self.host
        key = self.key(cand.path)
        if key is None:
            if cand.strict and host.lexists(cand.path):
                self.notes.append(Note(PROBE, "%s is a dangling or looping link" % (cand.label or cand.path)))
            return
        if key in self._by_key:
            found = self._by_key[key]
            if cand.source not in found.sources:
                found.sources.append(cand.source)
            return
        path = ntpath.normpath(cand.path) if host.system == "windows" else key
        if not host.is_dir(path):
            if cand.strict:
                self.notes.append(Note(PROBE, "%s is not a folder; skipped" % (cand.label or path)))
            return
        if not (cand.force or has_toolkit_markers(host, path)):
            if cand.strict:
                if not _readable(host, path):
                    self.notes.append(Note(PROBE, "%s cannot be read (permission denied); skipped" % (cand.label or path)))
                else:
                    self.notes.append(
                        Note(PROBE, "%s holds no toolkit (no bin/nvcc, version file or include/cuda.h)" % (cand.label or path))
                    )
            return
        found = _Found(path, key, [cand.source], cand)
        self._by_key[key] = found
        self.found.append(found)

    # -------------------------------------------------------------- one toolkit
    def build(self, found: _Found) -> Toolkit:
        host, path, cand = self.host, found.path, found.candidate
        version, version_source, bundled = self._version(path, cand)
        nvcc = "/usr/bin/nvcc" if path == "/usr" else _nvcc_in(host, path)
        if version is None and nvcc is not None:
            version = self._nvcc_file_version(nvcc)
            version_source = "nvcc-file" if version else None
            if version is None and host.rooted:
                # nothing inside --root runs on this machine: its nvcc is an image's program
                self.notes.append(Note(PROBE, "could not tell the version of %s: no version.json, version.txt, cuda.h or "
                                       "release string in its nvcc, and only running that nvcc could tell (nothing inside "
                                       "--root is run)" % path))
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
            lib_dir=_lib_dir(host, path),
            bundled_driver=bundled,
            sources=tuple(found.sources),
        )

    def _version(self, path: str, cand: Optional[_Candidate]) -> Tuple[Optional[str], Optional[str], Optional[str]]:
        return toolkit_version_from_files(self.host, path, self.notes, cand)

    def _nvcc_file_version(self, nvcc: str) -> Optional[str]:
        return nvcc_file_version(self.host, nvcc)

    def _run_nvcc(self, nvcc: str) -> Optional[str]:
        real = self.host.local(nvcc)
        result = self.host.run([str(real), "--version"])
        version = parse_nvcc_version(result.stdout) if result.ok else None
        if version is None:
            why = result.describe() if not result.ok else "nvcc --version printed no release"
            self.notes.append(Note(PROBE, "could not tell the version of %s: %s" % (nvcc, why)))
        return version

    def _install_method(self, path: str, cand: Optional[_Candidate]) -> str:
        host = self.host
        if cand is not None and cand.method in ("pip", "conda"):
            return cand.method
        if is_cudaenv_install(host, path):
            return "cudaenv"  # `cudaenv install` (the data dir or a --prefix), found by any source
        if self.install_methods and runfile_uninstaller(host, path):
            return "runfile"
        if wheel_dists(host, path):
            return "pip-wheels"  # a toolkit folder assembled from NVIDIA's wheels (their dist-info kept in it)
        if host.system == "windows":
            if (cand is not None and cand.method == "windows-installer") or "nvidia gpu computing toolkit" in path.lower():
                return "windows-installer"
            return "conda" if host.is_dir(host.join(_dirname(host, path), "conda-meta")) else "unknown"
        if self.install_methods and self.dpkg_owners(path):
            return "deb"
        if host.is_dir(host.join(path, "conda-meta")):
            return "conda"
        rpm = host.is_dir("/var/lib/rpm") and not host.is_dir("/var/lib/dpkg/info")
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
            root = _root_of_nvcc(self.host, real)
            tk = self._toolkit_at(toolkits, root) if root else None
            return ActiveToolkit(tk.path if tk else root, real, tk.version if tk else None, "PATH", listed)
        for name in ("CUDA_HOME", "CUDA_PATH"):
            value = _home_value(self.host, _clean_env_path(self.host.env.get(name)))
            tk = self._toolkit_at(toolkits, value) if value else None
            if tk is not None:
                return ActiveToolkit(tk.path, tk.nvcc, tk.version, name, listed)
        return None

    def _toolkit_at(self, toolkits: List[Toolkit], path: Optional[str]) -> Optional[Toolkit]:
        if not path or not _is_absolute(self.host, path):
            return None
        key = self.key(path)
        found = self._by_key.get(key) if key is not None else None
        if found is None:
            return None
        return next((tk for tk in toolkits if tk.path == found.path), None)

    def flag(self, tk: Toolkit, active: Optional[ActiveToolkit], symlink: Optional[CudaSymlink]) -> Toolkit:
        host = self.host
        me = self.key_of(tk)
        path_dirs = {self.key(entry) for entry in host.env_path() if _is_absolute(host, entry)}
        on_path = self.key(host.join(tk.path, "bin")) in path_dirs - {None}
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
        homes = (_home_value(host, _clean_env_path(host.env.get(name))) for name in ("CUDA_HOME", "CUDA_PATH"))
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
        return next(found.key for found in self.found if found.path == tk.path)


# --------------------------------------------------------------------------------------- helpers
def toolkit_version_from_files(host, path: str, notes: list, cand: Optional[_Candidate] = None) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(version, where it came from, bundled driver) from a toolkit's files, in order: version.json, version.txt,
    the package metadata discovery found (pip, conda), the nvcc wheel's dist-info kept in the folder, cuda.h.
    Nothing is run. A malformed version field gives a note and the next file is asked."""
    roots = [path, "/usr/lib/cuda"] if path == "/usr" else [path]
    for root in roots:
        text = host.read_text(host.join(root, "version.json"), limit=256 * 1024)
        if text is not None:
            version = parse_version_json(text)
            if version:
                return version, "version.json", parse_bundled_driver(text)
            raw, where = version_json_raw(text), host.join(root, "version.json")
            notes.append(Note(PROBE, malformed(where, raw) if raw else "%s has no readable cuda.version" % where))
    for root in roots:
        version = parse_version_txt(host.read_text(host.join(root, "version.txt"), limit=4096) or "")
        if version:
            return version, "version.txt", None
    if cand is not None and cand.version:
        return cand.version, cand.version_source, None
    nvcc_dist = wheel_dists(host, path).get("nvcc")
    if nvcc_dist:
        return nvcc_dist, "dist-info", None
    for header in _cuda_h_files(host, path):
        text = host.read_text(header, limit=CUDA_H_LIMIT) or ""
        version = parse_cuda_h(text)
        if version:
            return version, "cuda.h", None
        raw = cuda_h_raw(text)
        if raw:
            notes.append(Note(PROBE, malformed("%s CUDA_VERSION" % header, raw)))
    return None, None, None


def wheel_dists(host, path: str) -> Dict[str, str]:
    """{component: version} of the NVIDIA wheels whose dist-info a wheel-assembled toolkit keeps in
    ``PATH/dist-info/`` (``nvidia_cuda_nvcc-13.0.88.dist-info`` -> ``{"nvcc": "13.0.88"}``; METADATA's Version wins)."""
    folder = host.join(path, "dist-info")
    out: Dict[str, str] = {}
    for name in host.listdir(folder):
        dist = parse_dist_info_name(name)
        if dist is None:
            continue
        component, _suffix, version = dist
        meta = host.read_text(host.join(folder, name, "METADATA"), limit=8192)
        version = parse_dist_metadata_version(meta or "") or version
        if version:
            out.setdefault(component, version)
    return out


def nvcc_file_version(host, nvcc: str) -> Optional[str]:
    """The release string stored inside the nvcc executable (``Cuda compilation tools, release 13.0, V13.0.88``),
    read as bytes, streamed and bounded (about 23 MB into the 30 MB nvcc of 13.0): nvcc is never run for it."""
    real = follow_nvcc(host, nvcc)
    keep = len(RELEASE_MARKER) + RELEASE_EXCERPT
    tail = b""
    for chunk in host.iter_chunks(real, limit=NVCC_SCAN_LIMIT):
        data = tail + chunk
        at = data.find(RELEASE_MARKER)
        if at >= 0 and at + keep <= len(data):
            return parse_release_excerpt(data[at : at + keep])
        tail = data[at:] if at >= 0 else data[-keep:]
    return parse_release_excerpt(tail)


def runfile_uninstaller(host, path: str) -> Optional[str]:
    """The runfile installer's uninstaller in a toolkit folder (``bin/cuda-uninstaller``, ``bin/uninstall_cuda_*.pl``:
    the globs are data/uninstall.json's ``runfile-uninstaller`` rows), or None."""
    from cudaenv.resources import table_rows  # json: off the `cudaenv use` path

    for row in table_rows("uninstall"):
        if row.get("kind") != "runfile-uninstaller":
            continue
        folder, pattern = posixpath.split(row["glob"])
        prefix, star, suffix = pattern.partition("*")
        for name in host.listdir(host.join(path, folder)):
            if (name.startswith(prefix) and name.endswith(suffix) and len(name) >= len(prefix) + len(suffix)) if star else name == pattern:
                return host.join(path, folder, name)
    return None


def has_toolkit_markers(host, path: str) -> bool:
    """True when ``path`` holds bin/nvcc, version.json, version.txt or include/cuda.h (or targets/*/include/cuda.h)."""
    if _nvcc_in(host, path) is not None:
        return True
    for name in ("version.json", "version.txt"):
        if host.is_file(host.join(path, name)):
            return True
    return bool(_cuda_h_files(host, path))


def _cuda_h_files(host, path: str) -> List[str]:
    out = []
    direct = host.join(path, "include", "cuda.h")
    if host.is_file(direct):
        out.append(direct)
    targets = host.join(path, "targets")
    for arch in host.listdir(targets):
        header = host.join(targets, arch, "include", "cuda.h")
        if host.is_file(header):
            out.append(header)
    return out


def _nvcc_in(host, path: str) -> Optional[str]:
    names = ("nvcc.exe", "nvcc") if host.system == "windows" else ("nvcc",)
    for name in names:
        candidate = host.join(path, "bin", name)
        if host.is_file(candidate):
            return candidate
    return None


def _lib_dir(host, path: str) -> Optional[str]:
    if host.system == "windows":
        for rel in (("lib", "x64"), ("lib",)):
            if host.is_dir(host.join(path, *rel)):
                return host.join(*rel)
        return None
    if path == "/usr":
        return None
    for rel in ("lib64", "lib"):
        if host.is_dir(host.join(path, rel)):
            return rel
    targets = host.join(path, "targets")
    for arch in host.listdir(targets):
        if host.is_dir(host.join(targets, arch, "lib")):
            return "targets/%s/lib" % arch
    return None


def follow_nvcc(host, path: str) -> str:
    """The real nvcc behind ``path``: symbolic links followed inside the root, and small shell wrappers that exec another."""
    current = path
    seen = set()
    for _ in range(8):
        resolved = host.resolve(current) if host.system != "windows" else current
        if resolved is None or resolved in seen:
            return current
        seen.add(resolved)
        data = host.read_bytes(resolved, limit=WRAPPER_LIMIT)
        if not data or not data.startswith(b"#!"):
            return resolved
        target = parse_wrapper_target(data.decode("utf-8", errors="replace"), host.env)
        if not target or not _is_absolute(host, target) or not host.exists(target):
            return resolved
        current = target
    return current


def _root_of_nvcc(host, nvcc: str) -> Optional[str]:
    """``/usr/local/cuda-13.0/bin/nvcc`` -> ``/usr/local/cuda-13.0``."""
    bin_dir = _dirname(host, nvcc)
    if _basename(host, bin_dir).lower() != "bin":
        return None
    root = _dirname(host, bin_dir)
    return root or None


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


def env_site_packages(host) -> Tuple[str, ...]:
    """site-packages of the active venv (VIRTUAL_ENV) and conda env (CONDA_PREFIX), found without running Python."""
    out: List[str] = []
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = _clean_env_path(host.env.get(name))
        if not prefix or not _is_absolute(host, prefix):
            continue
        if host.system == "windows":
            candidates = [host.join(prefix, "Lib", "site-packages")]
        else:
            lib = host.join(prefix, "lib")
            candidates = [host.join(lib, n, "site-packages") for n in host.listdir(lib) if n.startswith("python")]
        out += [c for c in candidates if host.is_dir(c) and c not in out]
    return tuple(out)


def _home_value(host, value: Optional[str]) -> Optional[str]:
    """A CUDA_HOME-style value, with a trailing ``bin`` dropped when that is what makes it a toolkit."""
    if not value or _basename(host, value).lower() != "bin" or has_toolkit_markers(host, value):
        return value
    parent = _dirname(host, value)
    return parent if parent and has_toolkit_markers(host, parent) else value


def _clean_env_path(value: Optional[str]) -> Optional[str]:
    if not value:
        return None
    value = value.strip().strip('"').strip("'").strip()
    if len(value) > 1:
        value = value.rstrip("/\\") or value[:1]
        if len(value) == 2 and value[1] == ":":
            value += "\\"
    return value or None


def _is_absolute(host, path: str) -> bool:
    if host.system == "windows":
        return (len(path) >= 3 and path[0].isascii() and path[0].isalpha() and path[1] == ":" and path[2] in "\\/") \
            or path.startswith("\\\\")
    return path.startswith("/")


def _dirname(host, path: str) -> str:
    return ntpath.dirname(path.rstrip("\\/")) if host.system == "windows" else posixpath.dirname(path.rstrip("/"))


def _basename(host, path: str) -> str:
    return ntpath.basename(path.rstrip("\\/")) if host.system == "windows" else posixpath.basename(path.rstrip("/"))


def _readable(host, path: str) -> bool:
    try:
        return os.access(host.local(path), os.R_OK | os.X_OK)
    except (OSError, ValueError):
        return False
