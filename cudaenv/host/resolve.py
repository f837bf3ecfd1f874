"""A path's symbolic links followed the way :meth:`cudaenv.host.Host.resolve` reads them: by the kernel (the real
root on Linux) or one component at a time (every link read inside the root)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, List, Optional

# Under the real root on Linux, the kernel follows the links: open(O_PATH) and the name /proc gives the descriptor
# are :meth:`Host.resolve`'s answer in three system calls, where the walk reads every component of every path (the
# probes resolve each candidate folder, its bin/nvcc and every PATH entry: `cudaenv use` spent half its run there).
# The walk stays the reading for a root (links must stay inside it), for Windows, without /proc, and for a path the
# kernel reads differently (relative, "." or ".." in it, a trailing "/"); tests/host/test_host.py checks the two agree.
KERNEL_RESOLVE = sys.platform.startswith("linux") and hasattr(os, "O_PATH")
WALK = object()  # "the kernel cannot say: walk"


def path_text(p: str) -> str:
    """``str(pathlib.Path(p))`` of a local path, without importing pathlib where it would change nothing (a POSIX path
    with no doubled ``/`` after the first character and no ``.`` component: the doctor's report names its root)."""
    if os.sep == "/" and p and "//" not in p[1:] and "/./" not in p and not p.startswith("./") and not p.endswith("/.") \
            and (len(p) == 1 or p[-1] != "/"):
        return p
    from pathlib import Path

    return str(Path(p))


def this_hostname() -> str:
    """This machine's host name: ``os.uname().nodename``, what ``socket.gethostname`` answers on POSIX (socket stays
    off the doctor's start-up); socket's elsewhere; "" when it cannot say."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    try:
        return socket.gethostname()
    except OSError:
        return ""


def kernel_may_resolve(p: str) -> bool:
    """Whether the kernel reads ``p`` as the walk does: absolute, no ``.`` or ``..`` component, no trailing ``/``."""
    return (p[:1] == "/" and (len(p) == 1 or p[-1] != "/") and "/./" not in p and "/../" not in p
            and not p.endswith(("/.", "/..")))


def kernel_resolve(p: str):
    """The real path of ``p`` as the kernel follows it; None when it names nothing (a dangling link, a loop, a
    missing or unreachable component); ``WALK`` when the kernel cannot say (no /proc, out of descriptors)."""
    try:
        fd = os.open(p, os.O_PATH | os.O_CLOEXEC)
    except ValueError:  # a NUL in the path
        return None
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    except OSError as exc:
        import errno

        return None if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG) else WALK
    try:
        found = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return WALK
    finally:
        os.close(fd)
    return found if found[:1] == "/" and not found.endswith(" (deleted)") else WALK


def walk_links(p: str, readlink: Callable[[str], Optional[str]], lexists: Callable[[str], bool], max_links: int,
               is_dir: Callable[[str], bool]) -> Optional[str]:
    """``p`` with every link followed one component at a time through ``readlink`` (absolute targets start again
    at the top); None after ``max_links`` links (a loop) or when the result does not exist. As the kernel reads a
    path, a component that more components follow (``..`` included) must be a folder: ``missing/..`` and
    ``file/..`` lead nowhere."""
    sep = "/"
    if not p.startswith(sep):
        p = sep + p
    pending = [x for x in p.split(sep) if x]
    done: List[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = sep + sep.join(done + [part])
        target = readlink(candidate)
        if target is None:
            if pending and not is_dir(candidate):
                return None
            done.append(part)
            continue
        hops += 1
        if hops > max_links:
            return None
        if target.startswith(sep):
            done = []
        pending = [x for x in target.split(sep) if x] + pending
    result = sep + sep.join(done)
    if not lexists(result):
        return None
    return result
