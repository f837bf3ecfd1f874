"""cuDNN's version, as its headers and its pip wheel name it.

Pure, stdlib only; never raises. Integers are decoded by :func:`cudaenv.core.version.cudnn_from_int` (both schemes).
"""

from __future__ import annotations

import re

from cudaenv.core.version import cudnn_from_int, parse_version
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor's start-up reads few of these

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Dict, Optional

_MACRO = LazyPattern(r"^[ \t]*#[ \t]*define[ \t]+CUDNN_(MAJOR|MINOR|PATCHLEVEL)[ \t]+(\d{1,9})\b", re.MULTILINE)
_NUMBER = LazyPattern(r"^[ \t]*#[ \t]*define[ \t]+CUDNN_VERSION[ \t]+\(?[ \t]*(\d+)[ \t]*\)?[ \t]*$", re.MULTILINE)
_DIST = LazyPattern(r"^nvidia_cudnn_cu\d{1,3}-([^-]+)\.dist-info$", re.IGNORECASE)


def parse_cudnn_header(text: str) -> Optional[str]:
    """The cuDNN version a header declares: ``9.1.0``.

    Sample (cudnn_version.h, cuDNN 9)::

        #define CUDNN_MAJOR 9
        #define CUDNN_MINOR 1
        #define CUDNN_PATCHLEVEL 0
        #define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

    A bare number is decoded with both encodings: ``CUDNN_VERSION 90100`` (v9: MAJOR*10000+MINOR*100+PATCH)
    and ``CUDNN_VERSION 8907`` (up to v8: MAJOR*1000+MINOR*100+PATCH).
    """
    if not isinstance(text, str):
        return None
    macros: Dict[str, str] = {}
    for name, value in _MACRO.findall(text):
        macros.setdefault(name, str(int(value)))
    if "MAJOR" in macros:
        parts = [macros["MAJOR"]]
        if "MINOR" in macros:
            parts.append(macros["MINOR"])
            if "PATCHLEVEL" in macros:
                parts.append(macros["PATCHLEVEL"])
        return parse_version(".".join(parts))
    match = _NUMBER.search(text)
    return cudnn_from_int(match.group(1)) if match else None


def parse_cudnn_dist_info_name(name: str) -> Optional[str]:
    """``nvidia_cudnn_cu12-9.1.0.70.dist-info`` -> ``9.1.0.70``; None for another name or a version that is not one."""
    match = _DIST.match(name) if isinstance(name, str) and len(name) < 256 else None
    return parse_version(match.group(1)) if match else None
