"""The one seam between cudaenv and the machine it inspects.

Every probe reads files, environment variables and command output through a :class:`Host`:

* ``root``: the directory that stands for ``/`` (``--root``/``CUDAENV_ROOT``; tests use fake trees).
  Every absolute path is read inside it, including paths taken from environment variables.
* ``env``: the environment mapping (never ``os.environ`` directly).
* ``system``: ``linux``, ``windows`` or ``darwin``.
* ``run``: a command runner with a timeout.  A missing program, a non-zero exit, a timeout and
  undecodable output all come back as a :class:`CommandResult`, never as an exception.

Host tools (``nvidia-smi``, the user's Python) are found on the *real* PATH with :meth:`Host.which`,
even under a root: the driver and GPUs belong to the host, the files inspected to the image.
:meth:`Host.which_in_root` resolves a program on PATH inside the root (for ``nvcc``).
"""

from __future__ import annotations

import os
import posixpath
import sys

from cudaenv import config as _config
from cudaenv._lazy import LazyModule
from cudaenv._record import Record

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

DEFAULT_TIMEOUT = _config.setting("CUDAENV_TIMEOUT").default  # 5 s: the one default lives in config's table
MAX_READ = 4 * 1024 * 1024
MAX_LINKS = 40
MAX_CAPTURE = 1024 * 1024  # bytes kept per output stream of a command; the rest is read and dropped
EXIT_GRACE = 0.25  # seconds to collect output after the direct child exited (a grandchild may hold the pipe)
EXCERPT = 200  # characters of a command's output that go into a note (as parse._lines.EXCERPT)

# Signals that mean "the program crashed" when a shell wrapper reports them as exit status 128+N.
_CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS", "SIGTRAP", "SIGKILL")


def current_system() -> str:
    """``linux``, ``windows`` or ``darwin`` for the running interpreter."""
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "darwin"
    return "linux"


class CommandResult(Record):
    """What running a command gave. ``error`` is ``missing``, ``timeout``, ``oserror`` or ``interrupted`` when it
    did not run to the end; ``truncated`` when a stream printed more than the capture limit (the rest was
    dropped); ``signal`` (``SIGSEGV``) when the program was killed by a signal, or a shell wrapper said so
    with exit status 128+N."""

    argv: Tuple[str, ...]
    returncode: Optional[int]
    stdout: str = ""
    stderr: str = ""
    error: Optional[str] = None
    seconds: float = 0.0
    timeout: float = DEFAULT_TIMEOUT
    undecodable: bool = False
    truncated: bool = False
    signal: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    @property
    def output(self) -> str:
        """stdout and stderr together (many NVIDIA tools print errors on stdout)."""
        if self.stdout and self.stderr:
            return self.stdout + "\n" + self.stderr
        return self.stdout or self.stderr

    @property
    def name(self) -> str:
        return posixpath.basename(self.argv[0].replace("\\", "/")) if self.argv else "?"

    @property
    def crashed(self) -> bool:
        """Killed by a signal other than cudaenv's own timeout kill."""
        return self.signal is not None and self.error is None

    def excerpt(self, limit: int = EXCERPT) -> str:
        """The first non-empty output line, cut to ``limit`` characters (what a note may quote)."""
        return excerpt(self.output, limit)

    def describe(self) -> str:
        """One line for a note: ``nvidia-smi timed out after 5 s``, ``nvidia-smi crashed (SIGSEGV)``."""
        if self.error == "missing":
            return "%s was not found" % self.name
        if self.error == "timeout":
            return "%s timed out after %s s" % (self.name, fmt_seconds(self.timeout))
        if self.error == "interrupted":
            return "%s was stopped: cudaenv was interrupted" % self.name
        if self.error == "oserror":
            return "%s could not be run: %s" % (self.name, excerpt(self.stderr) or "OS error")
        if self.error == "refused":
            return "%s was not run: it belongs to the inspected root (--root), and cudaenv never runs its programs" % self.name
        if self.signal is not None:
            how = "crashed" if self.signal != "SIGKILL" else "was killed"
            first = self.excerpt()
            return "%s %s (%s)%s" % (self.name, how, self.signal, (": " + first) if first else "")
        if self.returncode != 0:
            first = self.excerpt()
            return "%s exited with status %s%s" % (self.name, self.returncode, (": " + first) if first else "")
        return "%s ran" % self.name


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters (the one copy: :func:`cudaenv.parse._lines.excerpt`)."""
    from cudaenv.parse._lines import excerpt as first_line_excerpt  # typing: kept off the `use` path

    return first_line_excerpt(text, limit)


def fmt_seconds(value: float) -> str:
    """Seconds for people: ``2``, ``0.5``, ``12``; never ``2.01819`` (two significant digits below 10 s)."""
    if value >= 10 or value == int(value):
        return str(int(round(value)))
    return "%.2g" % value


_fmt_seconds = fmt_seconds  # the old private name


def signal_name(returncode: Optional[int]) -> Optional[str]:
    """``-11`` (killed by signal 11) or ``139`` (a shell's 128+11 for a crashed child) -> ``SIGSEGV``."""
    if returncode is None or returncode == 0:
        return None
    import signal

    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return "signal %d" % -returncode
    if 128 < returncode < 160:
        try:
            name = signal.Signals(returncode - 128).name
        except ValueError:
            return None
        return name if name in _CRASH_SIGNALS else None
    return None


def _decode(data: Optional[bytes]) -> Tuple[str, bool]:
    if not data:
        return "", False
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


# ------------------------------------------------------------------ deadlines
class Deadline:
    """The time a whole run may take (``verify --timeout 2``): every child takes its timeout from what is left."""

    def __init__(self, seconds: Optional[float]):
        import time

        self.seconds = seconds
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> Optional[float]:
        if self._end is None:
            return None
        import time

        return max(0.0, self._end - time.monotonic())

    def clip(self, timeout: float) -> float:
        """``timeout``, or less when the deadline comes first (never below 0.05 s, so a child still gets to start)."""
        left = self.remaining()
        return timeout if left is None else max(0.05, min(timeout, left))

    @property
    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0


# ------------------------------------------------------------------ live children
# Every child started by subprocess_runner is registered here until it is reaped, so that an interrupt
# (Ctrl-C, SIGTERM) or an error path can kill them all: they run in their own sessions and do not get the
# terminal's signals.
_LIVE: Dict[int, object] = {}
_STATE = {"closing": False, "subreaper": None, "lock": None, "spawning": 0}


def _lock():
    lock = _STATE["lock"]
    if lock is None:
        import threading

        lock = _STATE["lock"] = threading.RLock()
    return lock


def _spawning(delta: int) -> None:
    with _lock():
        _STATE["spawning"] += delta


def _register(proc) -> bool:
    """Record a started child; False when cudaenv is shutting down (the caller kills it at once)."""
    with _lock():
        _STATE["spawning"] -= 1
        if _STATE["closing"]:
            return False
        _LIVE[proc.pid] = proc
        return True


def _unregister(proc) -> None:
    with _lock():
        _LIVE.pop(proc.pid, None)


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

    if not _LIVE and not _STATE["subreaper"]:
        if stop_new:
            _STATE["closing"] = True  # no child ever ran (use, list): no lock, no threading import
        return []
    with _lock():
        if stop_new:
            _STATE["closing"] = True
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
    done = _STATE["subreaper"]
    if done is not None:
        return done
    ok = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            ok = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
        except Exception:  # noqa: BLE001 - no libc prctl: the limit stays as documented
            ok = False
    _STATE["subreaper"] = ok
    return ok


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
    if not _STATE["subreaper"]:
        return []
    import signal

    with _lock():
        if _STATE["spawning"] and not _STATE["closing"]:
            return []  # a child is being started and not registered yet: the next sweep gets the orphans
        owned = set(_LIVE)
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


# ------------------------------------------------------------------ running commands
# A runner: (argv, timeout, env, cwd) -> CommandResult


class _Capture:
    """One output stream: keeps the first ``limit`` bytes, counts (and drops) the rest."""

    __slots__ = ("chunks", "size", "limit", "dropped")

    def __init__(self, limit: int):
        self.chunks: List[bytes] = []
        self.size = 0
        self.limit = limit
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.limit - self.size
        if room > 0:
            kept = data[:room]
            self.chunks.append(kept)
            self.size += len(kept)
        self.dropped += max(0, len(data) - max(0, room))

    def value(self) -> bytes:
        return b"".join(self.chunks)


def subprocess_runner(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str],
    cwd: Optional[str] = None,
    limit: int = MAX_CAPTURE,
    stdin_chunks=None,
) -> CommandResult:
    """Run ``argv`` in its own session with a hard timeout and bounded capture.

    * stdout/stderr are read as they come; each keeps its first ``limit`` bytes (``truncated`` when more came).
    * When the direct child exits, what is in the pipes is collected for :data:`EXIT_GRACE` s; then the
      whole process group is killed (a ``(sleep 1000 &)`` grandchild cannot hold the answer hostage).
    * At the timeout the group is killed and the result says ``timeout``.
    * ``stdin_chunks``: an iterable of bytes written to the child's stdin without blocking (else /dev/null).
    """
    import errno
    import subprocess
    import time

    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    if _STATE["closing"]:
        return CommandResult(argv, None, error="interrupted", timeout=timeout)
    kwargs = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
        _become_subreaper()
    else:  # pragma: no cover - Windows only
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    _spawning(1)
    try:
        proc = subprocess.Popen(  # bounded: _collect() waits at most `timeout`, then the group is killed
            argv,
            stdin=subprocess.PIPE if stdin_chunks is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            **kwargs,
        )
    except FileNotFoundError:
        _spawning(-1)
        return CommandResult(argv, None, error="missing", timeout=timeout)
    except OSError as exc:
        _spawning(-1)
        err = "missing" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else "oserror"
        return CommandResult(argv, None, stderr=str(exc), error=err, timeout=timeout)
    except BaseException:
        _spawning(-1)
        raise
    if not _register(proc):
        kill_process_group(proc)
        proc.wait()
        return CommandResult(argv, None, error="interrupted", timeout=timeout)
    out, err_c = _Capture(limit), _Capture(limit)
    try:
        if os.name == "posix":
            timed_out = _collect_posix(proc, out, err_c, start + timeout, stdin_chunks)
        else:  # pragma: no cover - Windows only
            timed_out = _collect_threads(proc, out, err_c, start + timeout, stdin_chunks)
    finally:
        kill_process_group(proc)  # the direct child is a zombie or dead: its pid (the group id) is not reused yet
        try:
            proc.wait(timeout=1.0)
        except Exception:  # noqa: BLE001
            pass
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        _unregister(proc)
        reap_orphans()
    so, bad1 = _decode(out.value())
    se, bad2 = _decode(err_c.value())
    truncated = bool(out.dropped or err_c.dropped)
    seconds = time.monotonic() - start
    if _STATE["closing"] and proc.returncode is not None and proc.returncode < 0:
        return CommandResult(argv, None, so, se, "interrupted", seconds, timeout, bad1 or bad2, truncated)
    if timed_out:
        return CommandResult(argv, None, so, se, "timeout", seconds, timeout, bad1 or bad2, truncated)
    code = proc.returncode
    return CommandResult(argv, code, so, se, None, seconds, timeout, bad1 or bad2, truncated, signal_name(code))


def _exited(pid: int) -> bool:
    """True when the child ``pid`` has exited, without reaping it (its pid stays reserved for killpg)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    except (AttributeError, OSError):  # pragma: no cover - no waitid
        return False
    return info is not None


def _collect_posix(proc, out: _Capture, err: _Capture, end: float, stdin_chunks) -> bool:
    """Read both pipes until EOF (or the grace after the child's exit); True when ``end`` passed first."""
    import selectors
    import time

    sel = selectors.DefaultSelector()
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    for fd in streams:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    feed = None
    pending = b""
    if stdin_chunks is not None and proc.stdin is not None:
        feed = iter(stdin_chunks)
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
            sel.register(pidfd, selectors.EVENT_READ)
        except OSError:
            pidfd = None
    exit_seen: Optional[float] = None
    try:
        while True:
            now = time.monotonic()
            if exit_seen is None and (pidfd is None or not streams) and _exited(proc.pid):
                exit_seen = now
            if exit_seen is not None and (not streams or now >= exit_seen + EXIT_GRACE):
                return False
            if now >= end:
                return True
            wait = end - now
            if exit_seen is not None:
                wait = min(wait, exit_seen + EXIT_GRACE - now)
            elif pidfd is None:
                wait = min(wait, 0.01 if not streams else 0.05)
            for key, _ in sel.select(max(0.0, wait)):
                fd = key.fd
                if fd == pidfd:
                    sel.unregister(pidfd)
                    exit_seen = time.monotonic()
                    continue
                if feed is not None and proc.stdin is not None and fd == proc.stdin.fileno():
                    try:
                        if not pending:
                            pending = next(feed, b"")
                        if pending:
                            pending = pending[os.write(fd, pending):]
                        else:
                            raise BrokenPipeError
                    except BlockingIOError:
                        continue
                    except OSError:
                        sel.unregister(fd)
                        proc.stdin.close()
                        feed = None
                    continue
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    streams[fd].add(data)
                else:
                    sel.unregister(fd)
                    del streams[fd]
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)


def _collect_threads(proc, out: _Capture, err: _Capture, end: float, stdin_chunks) -> bool:  # pragma: no cover - Windows
    import threading
    import time

    def pump(stream, capture):
        try:
            for block in iter(lambda: stream.read(65536), b""):
                capture.add(block)
        except (OSError, ValueError):
            pass

    def feed():
        try:
            for block in stdin_chunks:
                proc.stdin.write(block)
            proc.stdin.close()
        except (OSError, ValueError):
            pass

    threads = [threading.Thread(target=pump, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err), daemon=True)]
    if stdin_chunks is not None:
        threads.append(threading.Thread(target=feed, daemon=True))
    for t in threads:
        t.start()
    try:
        proc.wait(timeout=max(0.0, end - time.monotonic()))
    except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
        return True
    for t in threads[:2]:
        t.join(EXIT_GRACE)
    return False


# The runner a Host uses when it is given none. Only the test suite sets it (tests/conftest.py installs a runner
# that refuses any program outside the test's fake machine); cudaenv itself never does.
default_runner: Optional[Callable[..., CommandResult]] = None


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


# ------------------------------------------------------------------ reading files
class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder where a file was expected (never opened for reading)."""


_KINDS = ((0o010000, "a FIFO"), (0o020000, "a character device"), (0o060000, "a block device"),
          (0o140000, "a socket"), (0o040000, "a folder"))


def _kind(mode: int) -> str:
    fmt = mode & 0o170000
    for bits, name in _KINDS:
        if fmt == bits:
            return name
    return "not a regular file"


def open_regular(path: str):
    """Open ``path`` for binary reading only if it is a regular file; :class:`NotRegularFile` otherwise.

    The one way cudaenv opens a file it did not write: ``O_NONBLOCK`` so that a FIFO or a device never blocks
    the open, ``fstat`` on what was opened (no race with a swapped path), and a refusal (``OSError`` EINVAL whose
    ``strerror`` names what it is). Streaming readers (``check-installer``, ``explain --file``) use the returned
    file; everything else uses :func:`read_regular`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    st = os.stat(path)
    if (st.st_mode & 0o170000) != 0o100000:
        raise NotRegularFile(22, "it is %s, not a regular file; not read" % _kind(st.st_mode), path)  # EINVAL
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000:
            raise NotRegularFile(22, "it is %s, not a regular file; not read" % _kind(st.st_mode), path)
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int = MAX_READ) -> Optional[bytes]:
    """Up to ``limit`` bytes of the regular file ``path`` (a plain local path: no root); None when it cannot be
    read or is not a regular file. Read in small chunks: some /proc and /sys files refuse one large read."""
    data, _ = read_regular_why(path, limit)
    return data


def read_regular_why(path: str, limit: int = MAX_READ) -> Tuple[Optional[bytes], Optional[str]]:
    """:func:`read_regular` and why it gave None: ``(None, None)`` for a missing file, ``(None, reason)`` else."""
    chunks: List[bytes] = []
    size = 0
    try:
        fh = open_regular(path)
    except FileNotFoundError:
        return None, None
    except NotRegularFile as exc:
        return None, "%s: %s" % (path, exc.strerror)
    except (OSError, ValueError) as exc:
        return None, "%s could not be read (%s)" % (path, getattr(exc, "strerror", None) or exc)
    try:
        with fh:
            while size < limit:
                chunk = fh.read(min(65536, limit - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except (OSError, ValueError) as exc:
        return None, "%s could not be read (%s)" % (path, getattr(exc, "strerror", None) or exc)
    return b"".join(chunks), None


_read_limited = read_regular  # the old private name


def scratch_dir(prefix: str, files: Optional[Mapping[str, str]] = None):
    """A private temporary folder (removed on exit, whatever happens) holding ``files`` (name -> text).

    The one place cudaenv makes temporary files for its children (``verify --toolkit``'s ``check.cu``,
    ``verify --distributed``'s rank script and results); use as ``with scratch_dir("cudaenv-x-", {...}) as tmp:``.
    """
    import tempfile

    holder = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        for name, text in (files or {}).items():
            with open(os.path.join(holder.name, name), "w", encoding="utf-8") as fh:  # our own new file
                fh.write(text)
    except BaseException:
        holder.cleanup()
        raise
    return holder


class Host:
    """The machine as cudaenv sees it. Cheap to build; holds no state besides its settings."""

    def __init__(
        self,
        root: "str | os.PathLike[str]" = "/",
        env: Optional[Mapping[str, str]] = None,
        system: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        runner: Optional[Callable[..., CommandResult]] = None,
        machine: Optional[str] = None,
        deadline: Optional[Deadline] = None,
        root_is_this_machine: bool = False,
    ):
        self._root_str = os.fspath(root) or "/"
        if len(self._root_str) > 1:
            self._root_str = self._root_str.rstrip("/\\") or "/"
        self.env: Dict[str, str] = dict(env if env is not None else {})
        self.system = system or current_system()
        self.timeout = float(timeout)
        self._runner = runner or default_runner or subprocess_runner
        self.machine = machine
        self.deadline = deadline  # when set, no command runs past it (``verify --timeout``)
        # False (always, from the CLI): the root is an image or a shared folder, whose programs are read, never run.
        # True only for a root that *is* this machine seen at a prefix: the test suite's fake machine, whose
        # programs (a WSL /usr/lib/wsl/lib/nvidia-smi, C:/Windows/System32/nvidia-smi.exe) are the test's stand-ins.
        self.root_is_this_machine = root_is_this_machine

    # ------------------------------------------------------------------ paths
    @property
    def rooted(self) -> bool:
        """True when files are read inside a root other than the real ``/``."""
        root = self._root_str
        return root not in ("/", "") and not (len(root) <= 3 and root[1:2] == ":")

    @property
    def root(self):
        """The root as a :class:`pathlib.Path` (pathlib is imported only when asked for)."""
        from pathlib import Path

        return Path(self._root_str)

    @property
    def pathsep(self) -> str:
        return ";" if self.system == "windows" else ":"

    def _parts(self, p: str) -> List[str]:
        """Split a path as the inspected system writes it into its components (drive first on Windows)."""
        if self.system == "windows":
            drive, rest = ntpath.splitdrive(p.replace("/", "\\"))
            parts = [x for x in rest.split("\\") if x]
            return ([drive.rstrip(":")] if drive else []) + parts
        return [x for x in p.split("/") if x]

    def path(self, p: "str | os.PathLike[str]"):
        """Where the inspected system's absolute path ``p`` lives on this machine (inside the root), as a Path."""
        from pathlib import Path

        return Path(self._rooted(os.fspath(p)))

    def local(self, p: "str | os.PathLike[str]") -> str:
        """:meth:`path` as a string."""
        return self._rooted(os.fspath(p))

    def _rooted(self, p: str) -> str:
        """:meth:`path` as a string (the probes' hot loops avoid building Path objects)."""
        if not self.rooted:
            return p
        root = self._root_str
        if p == root or p.startswith(root + os.sep):
            return p  # already inside the root
        parts = self._parts(p)
        return root + os.sep + os.sep.join(parts) if parts else root

    def unroot(self, real: "str | os.PathLike[str]") -> str:
        """The inspected system's name for a path on this machine (the inverse of :meth:`path`)."""
        real = os.fspath(real)
        if not self.rooted:
            return real
        root = self._root_str
        if real == root:
            parts: List[str] = []
        elif real.startswith(root + os.sep):
            parts = [x for x in real[len(root) + 1:].split(os.sep) if x]
        else:
            return real
        if self.system == "windows":
            if not parts:
                return "C:\\"
            return parts[0] + ":\\" + "\\".join(parts[1:])
        return "/" + "/".join(parts)

    def join(self, *parts: str) -> str:
        """Join path parts with the inspected system's separator."""
        return ntpath.join(*parts) if self.system == "windows" else posixpath.join(*parts)

    def real(self, p: str):
        """The file on this machine (a Path) that ``p`` names after following links inside the root (None if dangling)."""
        resolved = self.resolve(p)
        return None if resolved is None else self.path(resolved)

    def _real(self, p: str) -> Optional[str]:
        resolved = self.resolve(p)
        return None if resolved is None else self._rooted(resolved)

    def read_text(self, p: str, limit: int = MAX_READ) -> Optional[str]:
        """The file's text (UTF-8, undecodable bytes replaced), or None when it cannot be read."""
        real = self._real(p)
        if real is None:
            return None
        data = read_regular(real, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_bytes(self, p: str, limit: int = MAX_READ) -> Optional[bytes]:
        """Up to ``limit`` bytes of the regular file ``p``; None when missing, unreadable, or a FIFO/device/socket."""
        real = self._real(p)
        if real is None:
            return None
        return read_regular(real, limit)

    def hostname(self) -> Optional[str]:
        """The inspected system's host name: under a root, the first line of its ``/etc/hostname`` (read bounded,
        never a program of the root); else this machine's (``socket.gethostname``). None when there is none. The
        name came from outside: escape it before printing, sanitise it before using it as a file name."""
        if self.rooted:
            text = self.read_text("/etc/hostname", limit=4096)
            lines = (text or "").strip().splitlines()
            name = lines[0].strip() if lines else ""
        else:
            import socket

            try:
                name = socket.gethostname()
            except OSError:
                name = ""
        return name[:255] or None

    def exists(self, p: str) -> bool:
        """True when ``p`` exists (links followed inside the root)."""
        resolved = self.resolve(p)
        if resolved is None:
            return False
        try:
            return os.path.lexists(self._rooted(resolved))
        except (OSError, ValueError):
            return False

    def lexists(self, p: str) -> bool:
        try:
            return os.path.lexists(self._rooted(p))
        except (OSError, ValueError):
            return False

    def is_dir(self, p: str) -> bool:
        resolved = self.resolve(p)
        try:
            return resolved is not None and os.path.isdir(self._rooted(resolved))
        except (OSError, ValueError):
            return False

    def is_file(self, p: str) -> bool:
        resolved = self.resolve(p)
        try:
            return resolved is not None and os.path.isfile(self._rooted(resolved))
        except (OSError, ValueError):
            return False

    def is_link(self, p: str) -> bool:
        try:
            return os.path.islink(self._rooted(p))
        except (OSError, ValueError):
            return False

    def listdir(self, p: str) -> List[str]:
        """Sorted entry names of the directory ``p`` (links followed inside the root); [] when unreadable."""
        resolved = self.resolve(p)
        if resolved is None:
            return []
        try:
            return sorted(os.listdir(self._rooted(resolved)))
        except (OSError, ValueError):
            return []

    def readlink(self, p: str) -> Optional[str]:
        """The text of the link ``p`` (as written in the image), or None when ``p`` is no link."""
        try:
            return os.readlink(self._rooted(p))
        except (OSError, ValueError):
            return None

    def resolve(self, p: str) -> Optional[str]:
        """``p`` with every symbolic link followed *inside the root*; None for a loop or a dangling link.

        Absolute link targets are read inside the root, so a fake ``usr/local/cuda -> /usr/local/cuda-12.4``
        resolves to the fake toolkit, never to the real machine's.
        """
        if self.system == "windows":
            return p if self.lexists(p) else None
        if self.rooted:
            # A path already inside the root (a PATH or CUDA_HOME that `cudaenv use --root` wrote) is the image's
            # folder under another name: resolve it under the image's name, so one folder has one name.
            p = self.unroot(p)
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
            target = self.readlink(candidate)
            if target is None:
                done.append(part)
                continue
            hops += 1
            if hops > MAX_LINKS:
                return None
            if target.startswith(sep):
                done = []
            pending = [x for x in target.split(sep) if x] + pending
        result = sep + sep.join(done)
        if not self.lexists(result):
            return None
        return result

    def glob(self, directory: str, prefix: str = "") -> List[str]:
        """Paths of entries in ``directory`` whose names start with ``prefix`` (sorted)."""
        return [self.join(directory, name) for name in self.listdir(directory) if name.startswith(prefix)]

    def iter_chunks(self, p: str, limit: int = MAX_READ, size: int = 1024 * 1024) -> Iterator[bytes]:
        """The regular file ``p`` in pieces of ``size`` bytes, ``limit`` bytes in all: a big file (a 300 MB dpkg
        status, a 30 MB nvcc) is streamed, never held whole. Nothing when it cannot be read or is no regular file."""
        real = self._real(p)
        if real is None:
            return
        try:
            fh = open_regular(real)  # a FIFO or a device is refused, never waited on
        except (OSError, ValueError):
            return
        with fh:
            left = limit
            while left > 0:
                try:
                    chunk = fh.read(min(size, left))
                except (OSError, ValueError):
                    return
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk

    def iter_lines(self, p: str, limit: int = MAX_READ, max_line: int = 64 * 1024) -> Iterator[str]:
        """The lines of ``p`` (without line ends; bytes that are not UTF-8 kept as surrogates, like ``os.listdir``),
        streamed through :meth:`iter_chunks`; a line longer than ``max_line`` is cut there (the rest skipped)."""
        rest, skipping = b"", False
        for chunk in self.iter_chunks(p, limit):
            data, start = rest + chunk, 0
            while True:
                end = data.find(b"\n", start)
                if end < 0:
                    break
                if not skipping:
                    yield data[start : min(end, start + max_line)].decode("utf-8", "surrogateescape")
                skipping, start = False, end + 1
            rest = data[start:]
            if len(rest) > max_line:
                if not skipping:
                    yield rest[:max_line].decode("utf-8", "surrogateescape")
                rest, skipping = b"", True
        if rest and not skipping:
            yield rest.decode("utf-8", "surrogateescape")

    # --------------------------------------------------------------- programs
    def env_path(self) -> List[str]:
        value = self.env.get("PATH") or self.env.get("Path") or ""
        return [entry for entry in value.split(self.pathsep) if entry]

    def which(self, name: str) -> Optional[str]:
        """The program ``name`` on the real PATH of ``env`` (host tools: nvidia-smi, python)."""
        names = [name]
        if self.system == "windows" and not name.lower().endswith(".exe"):
            names = [name + ".exe", name]
        if os.sep in name or (self.system == "windows" and ("\\" in name)):
            return name if os.access(name, os.X_OK) and os.path.isfile(name) else None
        for entry in self.env_path():
            for candidate_name in names:
                candidate = os.path.join(entry, candidate_name)
                if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                    return candidate
        return None

    def which_all_in_root(self, name: str) -> List[str]:
        """Every ``name`` on PATH, looked up inside the root, in PATH order (the inspected system's paths)."""
        names = [name + ".exe", name] if self.system == "windows" else [name]
        found: List[str] = []
        for entry in self.env_path():
            # A PATH entry that already names a folder inside the root (a shell switched by `cudaenv use
            # --root`) is the image's folder under its own name, not a second toolkit.
            entry = self.unroot(entry)
            for candidate_name in names:
                candidate = self.join(entry, candidate_name)
                real = self._real(candidate)
                try:
                    if real is not None and os.path.isfile(real) and (self.system == "windows" or os.access(real, os.X_OK)):
                        if candidate not in found:
                            found.append(candidate)
                except OSError:
                    continue
        return found

    def which_in_root(self, name: str) -> Optional[str]:
        found = self.which_all_in_root(name)
        return found[0] if found else None

    def run(
        self,
        argv: Sequence[str],
        timeout: Optional[float] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
    ) -> CommandResult:
        """Run a host command with the host's environment (or ``env``) and a timeout (cut to the deadline, if any)."""
        seconds = self.timeout if timeout is None else timeout
        if self.deadline is not None:
            seconds = self.deadline.clip(seconds)
        if argv and self.inspected_only(argv[0]):
            return CommandResult(tuple(argv), None, error="refused", timeout=seconds)
        return self._runner(list(argv), seconds, self.env if env is None else env, cwd)

    def inspected_only(self, path: str) -> bool:
        """True when ``path`` (a program, a library) lies inside an image's ``--root``: read as a file, never run
        and never loaded."""
        return self.rooted and not self.root_is_this_machine and self._inside_root(path)

    def _inside_root(self, program: str) -> bool:
        """Whether ``program`` (as given, or after following links on this machine) lies inside ``--root``: a
        mounted image's or a shared folder's programs are inspected as files, never run."""
        root = self._root_str
        for name in (os.path.abspath(program), os.path.realpath(program)):
            if name == root or name.startswith(root + os.sep):
                return True
        return False

    def with_deadline(self, seconds: Optional[float]) -> "Host":
        """A copy of this host whose commands together take at most ``seconds`` from now (None: no deadline)."""
        return Host(self._root_str, self.env, self.system, self.timeout, self._runner, self.machine,
                    None if seconds is None else Deadline(seconds), self.root_is_this_machine)

    def with_env(self, **changes: Optional[str]) -> "Host":
        """A copy of this host with some environment variables set (or removed when None)."""
        env = dict(self.env)
        for key, value in changes.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return Host(self._root_str, env, self.system, self.timeout, self._runner, self.machine, self.deadline,
                    self.root_is_this_machine)


def host_from_environment(
    env: Mapping[str, str], root: Optional[str] = None, timeout: Optional[float] = None, system: Optional[str] = None
) -> Host:
    """The host the CLI inspects: ``--root`` or ``CUDAENV_ROOT``, ``--timeout`` or ``CUDAENV_TIMEOUT``."""
    from cudaenv import config
    from cudaenv.errors import UserError

    root = root or config.value(env, "CUDAENV_ROOT") or "/"
    if not os.path.isdir(root):
        raise UserError("--root %s is not a directory" % root, hint="give the folder where the image or chroot is mounted")
    timeout = config.seconds(env, "CUDAENV_TIMEOUT", explicit=timeout)
    config.check(env, ("CUDAENV_TORCH_TIMEOUT",))  # read by a probe: a wrong value fails here, not as a probe note
    return Host(root=os.path.abspath(root), env=env, system=system or config.value(env, "CUDAENV_SYSTEM"), timeout=timeout)
