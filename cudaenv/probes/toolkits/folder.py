"""One toolkit folder, read through the Host: which version its files say (``version.json``, ``version.txt``, the
dist-info of a wheel-assembled toolkit, ``cuda.h``, the release string inside ``nvcc``), whether it holds a toolkit at
all, its library folder, the real nvcc behind a wrapper, and the runfile's uninstaller. Nothing is run here; the
parsers of those files are :mod:`cudaenv.parse.toolkit_files` and :mod:`cudaenv.parse.nvcc`.
On ``cudaenv use``'s hot path: stdlib only, nothing heavy.
"""

from __future__ import annotations

import posixpath

from cudaenv.parse.toolkit_files import (
    cuda_h_raw,
    parse_bundled_driver,
    parse_cuda_h,
    parse_dist_info_name,
    parse_dist_metadata_version,
    parse_version_json,
    parse_version_txt,
    parse_wrapper_target,
    version_json_raw,
)
from cudaenv.model.toolkits import Note
from cudaenv.probes.paths import basename, dirname, is_absolute

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Callable, Dict, List, Optional, Tuple

    from cudaenv.probes.toolkits.candidate import ToolkitCandidate

PROBE = "toolkits"
CUDA_H_LIMIT = 64 * 1024  # CUDA_VERSION sits near the top of a 1 MB cuda.h (about 12 KB in, for 13.0)
NVCC_SCAN_LIMIT = 256 * 1024 * 1024  # bytes of an nvcc searched for its release string (13.0's is 30 MB)
WRAPPER_LIMIT = 4096  # a shell wrapper is small; an ELF nvcc is never read further than this


def toolkit_version_from_files(host, path: str, notes: list, cand: Optional[ToolkitCandidate] = None,
                               dists: Optional[Callable[[str], Dict[str, str]]] = None) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(version, where it came from, bundled driver) from a toolkit's files, in order: version.json, version.txt,
    the package metadata discovery found (pip, conda), the nvcc wheel's dist-info kept in the folder, cuda.h.
    Nothing is run. A malformed version field gives a note and the next file is asked. ``dists``: the caller's
    :func:`wheel_dists` of a folder (one that keeps what it read), when it asks for them again."""
    roots = [path, "/usr/lib/cuda"] if path == "/usr" else [path]
    for root in roots:
        text = host.read_text(host.join(root, "version.json"), limit=256 * 1024)
        if text is not None:
            version = parse_version_json(text)
            if version:
                return version, "version.json", parse_bundled_driver(text)
            raw, where = version_json_raw(text), host.join(root, "version.json")
            from cudaenv.core.i18n import M
            from cudaenv.core.version import malformed  # (a malformed file: off `use`'s usual path)

            notes.append(Note(PROBE, malformed(where, raw) if raw else M("%s has no readable cuda.version", where)))
    for root in roots:
        version = parse_version_txt(host.read_text(host.join(root, "version.txt"), limit=4096) or "")
        if version:
            return version, "version.txt", None
    if cand is not None and cand.version:
        return cand.version, cand.version_source, None
    nvcc_dist = (wheel_dists(host, path) if dists is None else dists(path)).get("nvcc")
    if nvcc_dist:
        return nvcc_dist, "dist-info", None
    for header in _cuda_h_files(host, path):
        text = host.read_text(header, limit=CUDA_H_LIMIT) or ""
        version = parse_cuda_h(text)
        if version:
            return version, "cuda.h", None
        raw = cuda_h_raw(text)
        if raw:
            from cudaenv.core.version import malformed  # (a malformed header: off `use`'s usual path)

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
    # only a toolkit without version files gets here: its parser stays off the `cudaenv use` path's imports
    from cudaenv.parse.nvcc import RELEASE_EXCERPT
    from cudaenv.parse.nvcc import RELEASE_MARKER, parse_release_excerpt

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
    the globs are data/runfile_uninstallers.txt's rows, the line format: no json on `cudaenv list`'s path), or None."""
    from cudaenv.core.resources import table_rows

    for row in table_rows("runfile_uninstallers"):
        folder, pattern = posixpath.split(row["glob"])
        prefix, star, suffix = pattern.partition("*")
        for name in host.listdir(host.join(path, folder)):
            if (name.startswith(prefix) and name.endswith(suffix) and len(name) >= len(prefix) + len(suffix)) if star else name == pattern:
                return host.join(path, folder, name)
    return None


def has_toolkit_markers(host, path: str) -> bool:
    """True when ``path`` holds bin/nvcc, version.json, version.txt or include/cuda.h (or targets/*/include/cuda.h)."""
    if nvcc_in(host, path) is not None:
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


def nvcc_in(host, path: str) -> Optional[str]:
    names = ("nvcc.exe", "nvcc") if host.system == "windows" else ("nvcc",)
    for name in names:
        candidate = host.join(path, "bin", name)
        if host.is_file(candidate):
            return candidate
    return None


def lib_dir(host, path: str) -> Optional[str]:
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
        if not target or not is_absolute(host, target) or not host.exists(target):
            return resolved
        current = target
    return current


def root_of_nvcc(host, nvcc: str) -> Optional[str]:
    """``/usr/local/cuda-13.0/bin/nvcc`` -> ``/usr/local/cuda-13.0``."""
    bin_dir = dirname(host, nvcc)
    if basename(host, bin_dir).lower() != "bin":
        return None
    root = dirname(host, bin_dir)
    return root or None
