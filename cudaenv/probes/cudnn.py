"""cuDNN installations, read from their version headers.

cuDNN 8 and newer keep the version in ``cudnn_version.h`` (Debian's packages install it as
``cudnn_version_v9.h`` under ``/usr/include/<multiarch>/`` and point an alternatives link at it);
cuDNN 7 and older in ``cudnn.h``. Places, in this order: ``/usr/include`` and its multiarch folders,
each toolkit's include dir, ``CUDNN_PATH``, pip ``nvidia/cudnn`` in the given site-packages, Windows
``Program Files\\NVIDIA\\CUDNN\\v*``, the active conda env. torch's own ``ATen/cudnn`` headers are
wrappers, not cuDNN, and are never read (only the folders named above are looked in, never recursively).
"""

from __future__ import annotations

from cudaenv.core.i18n import M
from cudaenv.parse.cudnn import parse_cudnn_dist_info_name, parse_cudnn_header
from cudaenv.model.snapshot import Cudnn, Note, Toolkit
from cudaenv.core.version import version_key
from cudaenv.core.lazy import LazyModule, LazyPattern  # compiled when first used: the doctor's start-up reads few of these

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Sequence, Tuple

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed
PROBE = "cudnn"
HEADER_LIMIT = 32 * 1024  # the macros sit right after the licence comment
MULTIARCH = ("x86_64-linux-gnu", "aarch64-linux-gnu", "powerpc64le-linux-gnu", "sbsa-linux-gnu")

_VERSION_HEADER = LazyPattern(r"^cudnn_version(?:_v\d+)?\.h$")
_OLD_HEADER = LazyPattern(r"^cudnn(?:_v\d+)?\.h$")




def probe_cudnn(host, notes: list, toolkits: Sequence[Toolkit], site_packages: Sequence[str] = ()) -> Tuple[Cudnn, ...]:
    """Every cuDNN whose header is found on ``host`` (one entry per distinct header file)."""
    places: List[Tuple[str, str, Optional[str]]] = []  # (include dir, source, toolkit path)
    if host.system == "windows":
        base = host.env.get("ProgramFiles") or host.env.get("PROGRAMFILES") or "C:\\Program Files"
        root = ntpath.join(base.strip().strip('"'), "NVIDIA", "CUDNN")
        for version_dir in host.listdir(root):
            include = ntpath.join(root, version_dir, "include")
            places.append((include, "windows", None))
            places += [(ntpath.join(include, sub), "windows", None) for sub in host.listdir(include)]
    else:
        places.append(("/usr/include", "system", None))
        places += [("/usr/include/" + arch, "system", None) for arch in MULTIARCH]
    for tk in toolkits:
        include = host.join(tk.path, "include")
        places.append((include, "toolkit", tk.path))
        targets = host.join(tk.path, "targets")
        places += [(host.join(targets, arch, "include"), "toolkit", tk.path) for arch in host.listdir(targets)]
    cudnn_path = (host.env.get("CUDNN_PATH") or "").strip().strip('"')
    if cudnn_path:
        if host.is_dir(cudnn_path):
            places += [(host.join(cudnn_path, "include"), "CUDNN_PATH", None), (cudnn_path, "CUDNN_PATH", None)]
        else:
            notes.append(Note(PROBE, M("CUDNN_PATH=%s does not exist", cudnn_path)))
    for sp in site_packages:
        places.append((host.join(sp, "nvidia", "cudnn", "include"), "pip", None))
    conda = (host.env.get("CONDA_PREFIX") or "").strip()
    if conda:
        sub = ("Library", "include") if host.system == "windows" else ("include",)
        places.append((host.join(conda, *sub), "conda", None))

    found: List[Cudnn] = []
    seen = set()
    for include, source, toolkit in places:
        for header, version in _headers_in(host, include):
            key = _key(host, header)
            if key in seen:
                continue
            seen.add(key)
            found.append(Cudnn(version, header, source, _major(version), toolkit))
    for sp in site_packages:  # a pip wheel without its headers still names its version
        version = _dist_version(host, sp)
        if version and not any(c.source == "pip" and c.header and c.header.startswith(sp) for c in found):
            if host.is_dir(host.join(sp, "nvidia", "cudnn")):
                found.append(Cudnn(version, None, "pip", _major(version), None))
    return tuple(found)


def _headers_in(host, include: str) -> List[Tuple[str, str]]:
    """(header, version) for the cuDNN version headers in one folder; cudnn.h only when no cudnn_version*.h tells.

    One entry per version: cuDNN 9 ships ``cudnn_version.h`` and ``cudnn_version_v9.h`` side by side as two real
    files (the pip wheel does), which are one install; the plain name is the one reported.
    """
    # both patterns start with "cudnn": the other names of a big include folder are never matched
    names = sorted((n for n in host.listdir(include) or [] if n.startswith("cudnn")), key=lambda n: (len(n), n))
    for pattern in (_VERSION_HEADER, _OLD_HEADER):
        out: List[Tuple[str, str]] = []
        for name in names:
            if pattern.match(name):
                header = host.join(include, name)
                version = parse_cudnn_header(host.read_text(header, limit=HEADER_LIMIT) or "")
                if version and all(version != v for _, v in out):
                    out.append((header, version))
        if out:
            return out
    return []


def _key(host, header: str) -> str:
    if host.system == "windows":
        return ntpath.normpath(header).lower()
    return host.resolve(header) or header


def _major(version: Optional[str]) -> Optional[int]:
    try:
        return version_key(version)[0] if version_key(version) else None
    except ValueError:
        return None


def _dist_version(host, sp: str) -> Optional[str]:
    for name in host.listdir(sp):
        version = parse_cudnn_dist_info_name(name)
        if version:
            return version
    return None
