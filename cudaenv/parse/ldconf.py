"""ld.so.conf(5) files: the library folders the loader searches and the files they include.

Sample (``/etc/ld.so.conf`` on Debian, and a toolkit's ``/etc/ld.so.conf.d/cuda-12-4.conf``)::

    include /etc/ld.so.conf.d/*.conf

    /usr/local/cuda-12.4/targets/x86_64-linux/lib

Pure: text in, values out, never an exception.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple


def ld_conf_lines(text: Optional[str]) -> List[Tuple[int, str]]:
    """(1-based line number, exact text without its line end) of each line that is neither blank nor a comment."""
    out: List[Tuple[int, str]] = []
    for number, raw in enumerate((text or "").split("\n"), 1):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            out.append((number, line))
    return out


def parse_ld_so_conf(text: Optional[str]) -> Tuple[List[str], List[str]]:
    """Library folders and ``include`` globs of an ld.so.conf file (relative includes are under /etc)."""
    dirs: List[str] = []
    includes: List[str] = []
    for _number, raw in ld_conf_lines(text):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include ") or line.startswith("include\t"):
            includes.extend(p if p.startswith("/") else "/etc/" + p for p in line.split()[1:])
        elif line.startswith("/"):
            dirs.append(line.rstrip("/") or "/")
    return dirs, includes
