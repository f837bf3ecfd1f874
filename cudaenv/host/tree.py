"""Walking a folder of the inspected system through the Host: names as the inspected system writes them.

The one folder walk of cudaenv's readers (an uninstall plan compares a toolkit folder with what its installer
recorded, and counts what it would remove). Links inside are never followed (a link to a folder is listed, not
entered), so a walk stays inside the folder and inside ``--root``; an unreadable folder is reported, not raised;
``limit`` bounds the entries a walk yields on a shared toolkit folder of any size.
"""

import os
import posixpath
from typing import Iterator, List, Optional, Tuple


def walk(host, path: str, limit: Optional[int] = None, unreadable: Optional[List[str]] = None
         ) -> Iterator[Tuple[str, List[str], List[str]]]:
    """``(folder, subfolders, files)`` under the inspected-system path ``path`` (itself a link is followed inside the
    root), top-down and sorted, each folder named as the inspected system names it. A link inside is listed with the
    files, whatever it points at (deciding would mean following it, and under ``--root`` an absolute link names this
    machine's files). Stops after ``limit`` entries (subfolders and files) in all; each folder that cannot be read
    is appended to ``unreadable``."""
    left = limit
    top = host.resolve(path) if host.is_dir(path) else None  # ``path`` itself may be a link (inside the root)
    pending = [(path.rstrip("/") or "/", host.local(top))] if top else []
    while pending:
        folder, real = pending.pop()
        dirs: List[str] = []
        files: List[str] = []
        try:
            with os.scandir(real) as it:
                for entry in it:
                    try:
                        (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
                    except OSError:
                        files.append(entry.name)
        except OSError:
            if unreadable is not None:
                unreadable.append(folder)
            continue
        dirs.sort()
        files.sort()
        if left is not None:
            dirs = dirs[:left]
            files = files[: left - len(dirs)]
            left -= len(dirs) + len(files)
        yield folder, dirs, files
        if left == 0:
            return
        pending.extend((posixpath.join(folder, d), os.path.join(real, d)) for d in reversed(dirs))


def count_files(host, path: str) -> int:
    """How many files (not folders) are under ``path`` (an inspected-system path), links not followed; 0 for a folder
    that is absent or unreadable."""
    return sum(len(files) for _folder, _dirs, files in walk(host, path))
