"""nvcc's own words: ``nvcc --version``, ``nvcc --list-gpu-code``, and the release string inside the nvcc binary.

Sample (``nvcc --version``, CUDA 13.0 on this project's development machine)::

    nvcc: NVIDIA (R) Cuda compiler driver
    Copyright (c) 2005-2025 NVIDIA Corporation
    Built on Wed_Aug_20_01:58:59_PM_PDT_2025
    Cuda compilation tools, release 13.0, V13.0.88
    Build cuda_13.0.r13.0/compiler.36424714_0

The same ``Cuda compilation tools, release 13.0, V13.0.88`` line is stored as text inside the nvcc executable
(about 23 MB into the 30 MB binary of 13.0), so a toolkit's version can be read without running its nvcc
(:data:`RELEASE_MARKER`, :func:`parse_release_excerpt`): that is how an image under ``--root`` is read.
Pure and stdlib only (on the ``cudaenv use`` path); never raises.
"""

from __future__ import annotations

from cudaenv.core.lazy import LazyPattern
from cudaenv.core.version import parse_version

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Optional, Tuple

RELEASE_MARKER = b"Cuda compilation tools, release "
LINE_MARKER = RELEASE_MARKER.decode("ascii").split(",")[0]  # "Cuda compilation tools": the line find_nvcc_version reads
RELEASE_EXCERPT = 96  # bytes after the marker that hold "13.0, V13.0.88"

_FULL = LazyPattern(r"release\s+(\d{1,9}\.\d{1,9})\s*,\s*V(\d{1,9}(?:\.\d{1,9}){1,5})(?![\d.])")
_SHORT = LazyPattern(r"release\s+(\d{1,9}\.\d{1,9})(?![\d.])")
_SM = LazyPattern(r"\bsm_(\d{1,4})([a-z]?)\b")


def parse_nvcc_version(text: str) -> Optional[str]:
    """``Cuda compilation tools, release 13.0, V13.0.88`` -> ``13.0.88`` (``13.0`` when only the release is there).

    A release that is not a version (3000 digits) gives None.
    """
    if not isinstance(text, str) or "release" not in text:
        return None
    match = _FULL.search(text)
    if match:
        return parse_version(match.group(2))
    match = _SHORT.search(text)
    return parse_version(match.group(1)) if match else None


def find_nvcc_version(text: str) -> Optional[str]:
    """nvcc's version in a longer text (a paste, a log): read only from its ``Cuda compilation tools, release 12.4,
    V12.4.131`` line, so a "release 22.04" elsewhere in it is not taken for a toolkit; None without that line."""
    from cudaenv.parse._lines import lines  # typing: off the `cudaenv use` path

    for line in lines(text):
        at = line.find(LINE_MARKER)
        if at >= 0:
            found = parse_nvcc_version(line[at:])
            if found:
                return found
    return None


def parse_release_excerpt(data: bytes) -> Optional[str]:
    """The version in bytes that hold :data:`RELEASE_MARKER` (a piece of the nvcc binary): ``13.0.88``; None without it."""
    if not isinstance(data, (bytes, bytearray)):
        return None
    at = data.find(RELEASE_MARKER)
    if at < 0:
        return None
    piece = bytes(data[at : at + len(RELEASE_MARKER) + RELEASE_EXCERPT]).split(b"\0", 1)[0].split(b"\n", 1)[0]
    return parse_nvcc_version(piece.decode("ascii", "replace"))


def parse_gpu_code_list(text: str) -> Tuple[str, ...]:
    """``nvcc --list-gpu-code`` output (one ``sm_XY`` per line) -> ("sm_75", "sm_80", ...), sorted by number."""
    if not isinstance(text, str):
        return ()
    found = dict.fromkeys(m.group(0) for m in _SM.finditer(text))
    return tuple(sorted(found, key=lambda a: (int(_SM.match(a).group(1)), a)))
