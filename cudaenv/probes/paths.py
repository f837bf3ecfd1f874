"""Paths as the inspected system writes them (POSIX, or Windows under ``system == "windows"``): a path from an
environment variable cleaned, whether one is absolute, its folder and its name. Shared by toolkit discovery
(:mod:`cudaenv.probes.toolkits`) and :mod:`cudaenv.probes.site_packages`; on ``cudaenv use``'s hot path: stdlib only.
"""

from __future__ import annotations

import posixpath

from cudaenv.core.lazy import LazyModule

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def clean_env_path(value: Optional[str]) -> Optional[str]:
    """A path from an environment variable (CUDA_HOME, VIRTUAL_ENV) without quotes and trailing separators."""
    if not value:
        return None
    value = value.strip().strip('"').strip("'").strip()
    if len(value) > 1:
        value = value.rstrip("/\\") or value[:1]
        if len(value) == 2 and value[1] == ":":
            value += "\\"
    return value or None


def is_absolute(host, path: str) -> bool:
    """Absolute on the inspected system (a drive or UNC path on Windows)."""
    if host.system == "windows":
        return (len(path) >= 3 and path[0].isascii() and path[0].isalpha() and path[1] == ":" and path[2] in "\\/") \
            or path.startswith("\\\\")
    return path.startswith("/")


def dirname(host, path: str) -> str:
    return ntpath.dirname(path.rstrip("\\/")) if host.system == "windows" else posixpath.dirname(path.rstrip("/"))


def basename(host, path: str) -> str:
    return ntpath.basename(path.rstrip("\\/")) if host.system == "windows" else posixpath.basename(path.rstrip("/"))
