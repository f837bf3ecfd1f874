"""The loader's configuration files, read through the Host: ``/etc/ld.so.conf``, what it includes, and every
``/etc/ld.so.conf.d/*.conf``. The one scanner: the libcuda search (probes/platform), ``cudaenv link`` and the
removal plan each filter what it returns. Parsing is :mod:`cudaenv.parse.ldconf`.
"""

from __future__ import annotations

import fnmatch
import posixpath

from cudaenv.parse.ldconf import parse_ld_so_conf

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple

LD_SO_CONF = "/etc/ld.so.conf"
LD_SO_CONF_D = "/etc/ld.so.conf.d"
FILE_LIMIT = 64 * 1024
MAX_FILES = 200


def read_ld_conf(host) -> List[Tuple[str, Optional[str]]]:
    """(path, text) of each loader configuration file, in the loader's order: ld.so.conf, then what it includes
    (nested includes followed, at most 200 files), then any ``ld.so.conf.d/*.conf`` not included. ``text`` is
    None for a file that exists but cannot be read (or is no regular file)."""
    out: List[Tuple[str, Optional[str]]] = []
    seen = set()

    def add(path: str) -> List[str]:
        seen.add(path)
        text = host.read_text(path, limit=FILE_LIMIT)
        out.append((path, text))
        return parse_ld_so_conf(text)[1]

    pending = add(LD_SO_CONF) if host.exists(LD_SO_CONF) else []
    pending.append(posixpath.join(LD_SO_CONF_D, "*.conf"))
    while pending and len(seen) < MAX_FILES:
        pattern = pending.pop(0)
        folder, name = posixpath.split(pattern)
        for entry in host.listdir(folder):
            path = posixpath.join(folder, entry)
            if path not in seen and fnmatch.fnmatch(entry, name) and len(seen) < MAX_FILES:
                pending.extend(add(path))
    return out


def ld_conf_dirs(host) -> List[str]:
    """Every library folder the loader's configuration names, in order."""
    dirs: List[str] = []
    for _path, text in read_ld_conf(host):
        dirs.extend(d for d in parse_ld_so_conf(text)[0] if d not in dirs)
    return dirs
