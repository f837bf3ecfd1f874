"""Where CUDA toolkits may be: the candidate folders toolkit discovery proposes, each with the place that proposed
it (see :mod:`cudaenv.probes.toolkits` for the list of places). A candidate is only a folder and a reason; whether it
holds a toolkit is :mod:`cudaenv.probes.toolkits.folder`'s question, merging them :class:`cudaenv.probes.toolkits._Finder`'s.
On ``cudaenv use``'s hot path: stdlib only, nothing heavy.
"""

from __future__ import annotations

from cudaenv.core.lazy import LazyModule, LazyPattern
from cudaenv.parse.toolkit_files import parse_conda_meta_name, parse_dist_info_name, parse_dist_metadata_version
from cudaenv.probes.paths import basename, clean_env_path, dirname, is_absolute
from cudaenv.probes.toolkits.candidate import FolderListing, ToolkitCandidate
from cudaenv.probes.toolkits.folder import PROBE, has_toolkit_markers, nvcc_in, root_of_nvcc
from cudaenv.model.toolkits import Note
from cudaenv.core.version_strings import version_key

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Dict, List, Optional, Sequence, Tuple

LINK_NAMES = ("/usr/local/cuda", "/etc/alternatives/cuda")

# (?i), not re.IGNORECASE: importing re (and enum, functools) at import time costs the `cudaenv use` path ~10 ms
_WIN_NAME = LazyPattern(r"(?i)^v(\d+(?:\.\d+)*)$")
_CUDA_PATH_V = LazyPattern(r"(?i)^CUDA_PATH_V\d+_\d+$")
_PIP_CU = LazyPattern(r"^cu(\d+)$")


def candidate_folders(host, notes: list, site_packages: Sequence[str], nvccs: Sequence[Tuple[str, str]],
                      unchecked: bool = False) -> List[ToolkitCandidate]:
    """The candidate folders in discovery's order. ``unchecked``: a ``CUDAENV_TOOLKITS`` folder's subfolders are
    proposed without looking inside each, as one :class:`FolderListing` of their names in the place of their
    candidates (the caller makes the candidates it reads; the finder's ``consider`` looks inside them): `cudaenv use`
    on a tree of a thousand toolkits."""
    out: List[ToolkitCandidate] = []
    if host.system == "windows":
        base = clean_env_path(host.env.get("ProgramFiles") or host.env.get("PROGRAMFILES")) or "C:\\Program Files"
        root = ntpath.join(base, "NVIDIA GPU Computing Toolkit", "CUDA")
        for name in host.listdir(root):
            out.append(ToolkitCandidate(ntpath.join(root, name), "Program Files", "windows-installer", strict=bool(_WIN_NAME.match(name))))
    else:
        out += _named_dirs(host, "/usr/local", "cuda-", "/usr/local/cuda-*")
        out.append(ToolkitCandidate("/opt/cuda", "/opt/cuda"))
        out += _named_dirs(host, "/opt", "cuda-", "/opt/cuda")
        if host.system == "darwin":
            out += _named_dirs(host, "/Developer/NVIDIA", "CUDA-", "/Developer/NVIDIA/CUDA-*")
        if host.is_file("/usr/bin/nvcc") or host.is_dir("/usr/lib/cuda"):
            out.append(ToolkitCandidate("/usr", "distro", "distro", force=host.is_file("/usr/bin/nvcc")))
    out += _cudaenv_toolkits(host, notes, unchecked)
    out += _installed(host)
    out += _conda(host)
    out += _pip(host, site_packages)
    for name in ("CUDA_HOME", "CUDA_PATH"):
        out += _from_env(host, notes, name)
    for name in sorted(k for k in host.env if k[:11].upper() == "CUDA_PATH_V" and _CUDA_PATH_V.match(k)):
        out += _from_env(host, notes, name)
    out += _from_env(host, notes, "CUDA_ROOT")
    for _listed, real in nvccs:
        root = root_of_nvcc(host, real)
        if root:
            out.append(ToolkitCandidate(root, "PATH"))
    if host.system != "windows":
        for name in LINK_NAMES:
            out.append(ToolkitCandidate(name, name))
    return out


def searched_places(system: str) -> Tuple[str, ...]:
    """Where :func:`_candidates` looks on ``system``, in its order, as `cudaenv list` names the places when it found
    nothing (``data/toolkit_places.txt``: the line format, no json on this path)."""
    from cudaenv.core.resources import load_table

    key = system if system in ("windows", "darwin") else "linux"
    return tuple(row["place"] for row in load_table("toolkit_places")["rows"] if key in row["systems"].split(","))


def _is_toolkit_name(name: str) -> bool:
    """``cuda-12.1``, ``CUDA12.4``, ``cuda-v11.8``: cuda or CUDA, an optional ``-`` and ``v``, then dotted ASCII digits.
    (Plain string tests: this runs on every `cudaenv use`, and a regular expression would import re.)"""
    if name[:4] not in ("cuda", "CUDA"):
        return False
    rest = name[4:]
    rest = rest[1:] if rest[:1] == "-" else rest
    rest = rest[1:] if rest[:1] == "v" else rest
    return all(part.isascii() and part.isdigit() for part in rest.split("."))


def _named_dirs(host, directory: str, prefix: str, source: str) -> List[ToolkitCandidate]:
    """``cuda-12.1`` style entries of ``directory``; oddly named ones (``cuda-12.1.bak``) only when they hold a toolkit."""
    out = []
    for name in host.listdir(directory):
        if name.startswith(prefix) or name.lower().startswith(prefix.lower()):
            out.append(ToolkitCandidate(host.join(directory, name), source, strict=_is_toolkit_name(name)))
    return out


def _cudaenv_toolkits(host, notes: list, unchecked: bool = False) -> List[ToolkitCandidate]:
    out = []
    from cudaenv.core import config

    for entry in (config.value(host.env, "CUDAENV_TOOLKITS") or "").split(host.pathsep):
        entry = clean_env_path(entry)
        if not entry:
            continue
        if not is_absolute(host, entry):
            from cudaenv.core.i18n import M
            notes.append(Note(PROBE, M("CUDAENV_TOOLKITS entry %r is not an absolute path; ignored", entry)))
            continue
        if not host.exists(entry):
            from cudaenv.core.i18n import M
            notes.append(Note(PROBE, M("CUDAENV_TOOLKITS entry %s does not exist", entry)))
            continue
        if has_toolkit_markers(host, entry):
            out.append(ToolkitCandidate(entry, "CUDAENV_TOOLKITS", strict=True, label="CUDAENV_TOOLKITS entry %s" % entry))
            continue
        if unchecked:  # host.join's reading, written out: it runs once for each folder of a tree
            real = host.resolve(entry)
            at, real_at = entry.rstrip("/") + "/", None if real is None else real.rstrip("/") + "/"
            out.append(FolderListing(at, real_at, host.list_folders(entry), "CUDAENV_TOOLKITS"))  # names only: the caller picks
            continue
        children = [host.join(entry, name) for name in host.listdir(entry)]
        kept = [c for c in children if host.is_dir(c) and has_toolkit_markers(host, c)]
        if not kept:
            from cudaenv.core.i18n import M
            notes.append(Note(PROBE, M("CUDAENV_TOOLKITS entry %s holds no toolkit (no bin/nvcc, version file or include/cuda.h)", entry)))
        out += [ToolkitCandidate(c, "CUDAENV_TOOLKITS") for c in kept]
    return out


def _installed(host) -> List[ToolkitCandidate]:
    """The toolkits `cudaenv install` put in the data dir (finished ones only: they hold the install marker)."""
    from cudaenv.probes.toolkits.store import METHOD, installed

    return [ToolkitCandidate(path, "cudaenv install", METHOD) for path in installed(host, host.system)]


def _conda(host) -> List[ToolkitCandidate]:
    prefix = clean_env_path(host.env.get("CONDA_PREFIX"))
    if not prefix or not is_absolute(host, prefix) or not host.is_dir(prefix):
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
    nvcc = nvcc_in(host, root) is not None
    targets = host.is_dir(host.join(prefix, "targets"))
    if not (nvcc or targets or what):
        return []
    return [ToolkitCandidate(root, "conda", "conda", version, "conda-meta" if version else None, force=True)]


def _pip(host, site_packages: Sequence[str]) -> List[ToolkitCandidate]:
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
                out.append(ToolkitCandidate(host.join(nvidia, name), "pip", "pip", ver, "dist-info" if ver else None, force=bool(ver)))
        if "cuda_nvcc" in entries:
            ver = pick("nvcc")
            out.append(ToolkitCandidate(host.join(nvidia, "cuda_nvcc"), "pip", "pip", ver, "dist-info" if ver else None, force=bool(ver)))
        elif "cuda_runtime" in entries:
            ver = pick("runtime")
            out.append(ToolkitCandidate(host.join(nvidia, "cuda_runtime"), "pip", "pip", ver, "dist-info" if ver else None, force=True))
    return out


def _from_env(host, notes: list, name: str) -> List[ToolkitCandidate]:
    value = clean_env_path(host.env.get(name))
    if not value:
        return []
    label = "%s=%s" % (name, value)
    if not is_absolute(host, value):
        from cudaenv.core.i18n import M
        notes.append(Note(PROBE, M("%s is not an absolute path; ignored", label)))
        return []
    if not host.exists(value):
        from cudaenv.core.i18n import M
        notes.append(Note(PROBE, M("%s does not exist", label)))
        return []
    fixed = home_value(host, value)
    if fixed != value:
        from cudaenv.core.i18n import M
        notes.append(Note(PROBE, M("%s names the bin folder; it should be the toolkit folder %s", label, fixed)))
        value = fixed
    method = "windows-installer" if host.system == "windows" and name.upper().startswith("CUDA_PATH") else None
    return [ToolkitCandidate(value, name, method, strict=True, label=label)]


def home_value(host, value: Optional[str]) -> Optional[str]:
    """A CUDA_HOME-style value, with a trailing ``bin`` dropped when that is what makes it a toolkit."""
    if not value or basename(host, value).lower() != "bin" or has_toolkit_markers(host, value):
        return value
    parent = dirname(host, value)
    return parent if parent and has_toolkit_markers(host, parent) else value
