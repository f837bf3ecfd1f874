"""The children cudaenv started: every one registered while it runs, so that an interrupt (Ctrl-C, SIGTERM) or an
error path can kill them all (they run in their own sessions and do not get the terminal's signals), and the
descendants re-parented to cudaenv as a subreaper reaped. :mod:`cudaenv.host.process` starts them.
"""

from __future__ import annotations

import os
import sys

from cudaenv.host.state import CHILDREN
from cudaenv.host.files import read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Dict, List

# The flags (closing, subreaper, lock, spawning) are cudaenv.host.state.CHILDREN, so that an exit can close them without
# loading this module.
_LIVE: Dict[int, object] = {}
_EXITING: Dict[int, object] = {}  # children that answered and closed their output, killed: reaped without waiting


def _lock():
    lock = CHILDREN["lock"]
    if lock is None:
        import threading

        lock = CHILDREN["lock"] = threading.RLock()
    return lock


def _spawning(delta: int) -> None:
    with _lock():
        CHILDREN["spawning"] += delta


def _register(proc) -> bool:
    """Record a started child; False when cudaenv is shutting down (the caller kills it at once)."""
    with _lock():
        CHILDREN["spawning"] -= 1
        if CHILDREN["closing"]:
            return False
        _LIVE[proc.pid] = proc
        return True


def _unregister(proc, exiting: bool = False) -> None:
    """Forget a child that ended; ``exiting``: one that answered, was killed and may still be exiting (its address
    space being freed), kept in ``_EXITING`` until a sweep (reap_orphans) finds it reaped, never waited for."""
    with _lock():
        _LIVE.pop(proc.pid, None)
        if exiting:
            _EXITING[proc.pid] = proc


def live_children() -> List[int]:
    """Process ids of the children running now (started through :func:`subprocess_runner`)."""
    with _lock():
        return sorted(_LIVE)


def kill_all_children(wait: float = 1.0, stop_new: bool = True) -> List[int]:
    """Kill every running child's process group and every re-parented descendant; wait up to ``wait`` s for them.

    Called on Ctrl-C, SIGTERM, error paths and when a command ends. With ``stop_new`` (the process is about to
    exit) no new child starts afterwards: a probe thread still running gets ``interrupted`` instead.
    Returns the process ids that were signalled.
    """
    import time

    if not _LIVE and not CHILDREN["subreaper"]:
        if stop_new:
            CHILDREN["closing"] = True  # no child ever ran (use, list): no lock, no threading import
        return []
    with _lock():
        if stop_new:
            CHILDREN["closing"] = True
        procs = list(_LIVE.values())
    for proc in procs:
        kill_process_group(proc)
    killed = [p.pid for p in procs]
    killed += reap_orphans()
    end = time.monotonic() + wait
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, end - time.monotonic()))
        except Exception:  # noqa: BLE001 - a child that does not die in time is left to init
            pass
    return killed


def _become_subreaper() -> bool:
    """On Linux, make this process the reaper of its orphaned descendants (``PR_SET_CHILD_SUBREAPER``), once.

    A grandchild that escapes its process group with ``setsid`` is then re-parented to cudaenv instead of
    init, and :func:`reap_orphans` can find and kill it. Elsewhere it stays where it went (documented limit).
    """
    done = CHILDREN["subreaper"]
    if done is not None:
        return done
    ok = False
    if sys.platform.startswith("linux"):
        try:
            ok = _libc_function("prctl")(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
        except Exception:  # noqa: BLE001 - no libc prctl: the limit stays as documented
            ok = False
    CHILDREN["subreaper"] = ok
    return ok


def _libc_function(name: str):
    """The C library's function ``name`` returning an int, as ``ctypes.CDLL(None, use_errno=True).name`` gives it.

    Built from ctypes' own C module (``_ctypes``: the same ``dlopen`` of the running program and the same function
    pointer class that the ``ctypes`` package builds), because the ``ctypes`` package itself costs about 1.5 ms of a
    start (its module, ``struct`` and ``ctypes._endian``: a tenth of what `doctor --quick` may cost over the
    interpreter's start, issue 35). Where ``_ctypes`` lacks any of it (another Python), the ``ctypes`` package."""
    try:
        import _ctypes

        class Int(_ctypes._SimpleCData):  # what ctypes.c_int is
            _type_ = "i"

        class Function(_ctypes.CFuncPtr):  # what CDLL's function class is (cdecl, errno kept)
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = Int

        class Program:  # what CDLL(None) is to the function pointer: the handle of the running program
            _handle = _ctypes.dlopen(None, os.RTLD_NOW | os.RTLD_LOCAL)

        return Function((name, Program()))
    except (ImportError, AttributeError, TypeError):
        import ctypes

        return getattr(ctypes.CDLL(None, use_errno=True), name)


def _children_of_self() -> List[int]:
    pids: List[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        data = read_regular("/proc/self/task/%s/children" % task, 65536)
        if data:
            pids.extend(int(x) for x in data.split() if x.isdigit())
    return pids


def reap_orphans() -> List[int]:
    """Kill and reap this process's children that no running command owns (descendants re-parented to cudaenv
    because it is a subreaper). Returns their process ids. A no-op unless :func:`_become_subreaper` worked."""
    if not CHILDREN["subreaper"]:
        return []
    import signal

    with _lock():
        if CHILDREN["spawning"] and not CHILDREN["closing"]:
            return []  # a child is being started and not registered yet: the next sweep gets the orphans
        for pid, proc in list(_EXITING.items()):
            if proc.poll() is not None:  # reaped now, or still exiting: kept, not waited for
                del _EXITING[pid]
        owned = set(_LIVE) | set(_EXITING)
        orphans = [pid for pid in _children_of_self() if pid not in owned]
    for pid in orphans:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in orphans:
        _reap(pid)
    return orphans


def _reap(pid: int, wait: float = 0.5) -> None:
    import time

    end = time.monotonic() + wait
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        except OSError:
            return
        if done or time.monotonic() >= end:
            return
        time.sleep(0.005)


def kill_process_group(proc) -> None:
    """Kill ``proc`` and every process in its group (it was started with ``start_new_session``)."""
    import signal

    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows only
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass
