"""Running programs: the one runner (its own session, a hard timeout, bounded capture, the process group killed;
every child registered in :mod:`cudaenv.host.children` while it runs), the :class:`Deadline` of a whole run, and
:class:`CommandResult`, what a run gave as a value (never an exception).
"""

from __future__ import annotations

import os
import posixpath

from cudaenv.core.text import seconds_text
from cudaenv.model.record import Record
from cudaenv.host.state import CHILDREN, DEFAULT_TIMEOUT
from cudaenv.host.children import _become_subreaper, _register, _spawning, _unregister, kill_process_group, reap_orphans

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Callable, List, Mapping, Optional, Sequence, Tuple

MAX_CAPTURE = 1024 * 1024  # bytes kept per output stream of a command; the rest is read and dropped
EXIT_GRACE = 0.25  # seconds to collect output after the direct child exited (a grandchild may hold the pipe)

# Signals that mean "the program crashed" when a shell wrapper reports them as exit status 128+N.
_CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS", "SIGTRAP", "SIGKILL")


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

    def excerpt(self, limit: Optional[int] = None) -> str:
        """The first non-empty line of the output, cut to ``limit`` characters (parse._lines.EXCERPT): what a note
        may quote. parse._lines is loaded here, when a note needs it (it imports typing: off the `use` path)."""
        from cudaenv.parse._lines import EXCERPT, excerpt

        return excerpt(self.output, EXCERPT if limit is None else limit)

    def describe(self) -> str:
        """One line for a note: ``nvidia-smi timed out after 5 s``, ``nvidia-smi crashed (SIGSEGV)``; a marked message
        (cudaenv.core.i18n, imported here: a note's words, off the `use` path), so a renderer says it in the reader's
        language."""
        from cudaenv.core.i18n import M

        if self.error == "missing":
            return M("%s was not found", self.name)
        if self.error == "timeout":
            return M("%s timed out after %s", self.name, seconds_text(self.timeout))
        if self.error == "interrupted":
            return M("%s was stopped: cudaenv was interrupted", self.name)
        if self.error == "oserror":
            from cudaenv.parse._lines import excerpt

            return M("%s could not be run: %s", self.name, excerpt(self.stderr) or M("OS error"))
        if self.error == "refused":
            return M("%s was not run: it belongs to the inspected root (--root), and cudaenv never runs its programs", self.name)
        if self.signal is not None:
            first = self.excerpt()
            if self.signal != "SIGKILL":
                return M("%s crashed (%s)%s", self.name, self.signal, (": " + first) if first else "")
            return M("%s was killed (%s)%s", self.name, self.signal, (": " + first) if first else "")
        if self.returncode != 0:
            first = self.excerpt()
            return M("%s exited with status %s%s", self.name, self.returncode, (": " + first) if first else "")
        return M("%s ran", self.name)


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


# ------------------------------------------------------------------ running commands
# A runner: (argv, timeout, env, cwd) -> CommandResult


class _Capture:
    """One output stream: keeps the first ``limit`` bytes, counts (and drops) the rest."""

    __slots__ = ("chunks", "size", "limit", "dropped", "tee")

    def __init__(self, limit: int, tee: Optional[Callable[[bytes], None]] = None):
        self.chunks: List[bytes] = []
        self.size = 0
        self.limit = limit
        self.dropped = 0
        self.tee = tee  # called with every chunk as it arrives (``run(..., on_output=)``: progress passed through)

    def add(self, data: bytes) -> None:
        if self.tee is not None:
            self.tee(data)
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
    on_output: Optional[Callable[[bytes], None]] = None,
    until: Optional[bytes] = None,
) -> CommandResult:
    """Run ``argv`` in its own session with a hard timeout and bounded capture.

    * stdout/stderr are read as they come; each keeps its first ``limit`` bytes (``truncated`` when more came).
    * When the direct child exits, what is in the pipes is collected for :data:`EXIT_GRACE` s; then the
      whole process group is killed (a ``(sleep 1000 &)`` grandchild cannot hold the answer hostage).
    * At the timeout the group is killed and the result says ``timeout``.
    * ``stdin_chunks``: an iterable of bytes written to the child's stdin without blocking (else /dev/null).
    * ``on_output``: called with each chunk of stdout and stderr as it is read (the capture stays bounded; the
      callback bounds what it shows).
    * ``until``: when stdout holds these bytes and both streams are closed, the answer is in: the result comes at once
      (``returncode`` None), the child is killed with its group and reaped later, never waited for (the doctor's torch
      child closes its output after its answer, then frees torch's address space: 20 ms no one needs to wait for).
      Without them at the close, the exit is awaited as usual (a crash keeps its signal).
    """
    return start_process(argv, timeout, env, cwd, limit, stdin_chunks, on_output, until).result()


class Started:
    """A child :func:`start_process` started (registered, in its own session, its timeout counted from its start):
    :meth:`result` reads its output to the end or the timeout, kills its group and gives the :class:`CommandResult`.
    Whoever starts one calls ``result()`` once (an interrupt kills it through the registry meanwhile)."""

    def __init__(self, argv, proc, start: float, timeout: float, limit: int, stdin_chunks, on_output, until=None):
        self.argv, self.proc, self.start, self.timeout = argv, proc, start, timeout
        self._limit, self._stdin, self._on_output, self._until = limit, stdin_chunks, on_output, until
        self._result: Optional[CommandResult] = None

    def result(self) -> CommandResult:
        if self._result is None:
            self._result = _finish(self)
        return self._result


class _Done:
    """A run that ended before it started (missing, refused, interrupted): ``result()`` gives it."""

    def __init__(self, result: CommandResult):
        self._result = result

    def result(self) -> CommandResult:
        return self._result


def start_process(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str],
    cwd: Optional[str] = None,
    limit: int = MAX_CAPTURE,
    stdin_chunks=None,
    on_output: Optional[Callable[[bytes], None]] = None,
    until: Optional[bytes] = None,
):
    """Start ``argv`` as :func:`subprocess_runner` does and return at once: a :class:`Started` (or a finished run
    when it could not start); its ``result()`` is :func:`subprocess_runner`'s answer. The doctor starts the torch
    child this way in its main thread, then reads it in a thread while the rest runs."""
    import errno
    import subprocess
    import time

    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    if CHILDREN["closing"]:
        return _Done(CommandResult(argv, None, error="interrupted", timeout=timeout))
    kwargs = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
        _become_subreaper()
    else:  # pragma: no cover - Windows only
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    _spawning(1)
    try:
        proc = subprocess.Popen(  # bounded: _finish() waits at most `timeout`, then the group is killed
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
        return _Done(CommandResult(argv, None, error="missing", timeout=timeout))
    except OSError as exc:
        _spawning(-1)
        err = "missing" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else "oserror"
        return _Done(CommandResult(argv, None, stderr=str(exc), error=err, timeout=timeout))
    except BaseException:
        _spawning(-1)
        raise
    if not _register(proc):
        kill_process_group(proc)
        proc.wait()
        return _Done(CommandResult(argv, None, error="interrupted", timeout=timeout))
    return Started(argv, proc, start, timeout, limit, stdin_chunks, on_output, until)


class _Later:
    """:func:`start_on` where the command runs when its answer is asked for."""

    def __init__(self, host, argv: Tuple[str, ...], timeout: Optional[float], until: Optional[bytes] = None):
        self._host, self._argv, self._timeout, self._until = host, argv, timeout, until

    def result(self) -> CommandResult:
        return self._host.run(self._argv, self._timeout, until=self._until)


def start_on(host, argv: Sequence[str], timeout: Optional[float] = None, until: Optional[bytes] = None):
    """``host.run(argv, timeout)`` started now and read later: an object whose ``result()`` is its answer. The real
    runner spawns the child before returning (the doctor starts its torch child first, then does the rest beside it),
    as does a runner given to the Host that has a ``start`` of :func:`start_process`'s form (the tests' guard);
    another runs the whole command when ``result()`` is called, as does a program of an inspected ``--root``."""
    runner = host._runner
    start = start_process if runner is None else getattr(runner, "start", None)
    if start is None or (argv and host.inspected_only(argv[0])):
        return _Later(host, tuple(argv), timeout, until)
    seconds = host.timeout if timeout is None else timeout
    if host.deadline is not None:
        seconds = host.deadline.clip(seconds)
    return start(list(argv), seconds, host.env, **({"until": until} if until is not None else {}))


def _finish(started: Started) -> CommandResult:
    import time

    argv, proc, start, timeout, until = started.argv, started.proc, started.start, started.timeout, started._until
    out, err_c = _Capture(started._limit, started._on_output), _Capture(started._limit, started._on_output)
    try:
        if os.name == "posix":
            timed_out = _collect_posix(proc, out, err_c, start + timeout, started._stdin, until)
        else:  # pragma: no cover - Windows only
            timed_out = _collect_threads(proc, out, err_c, start + timeout, started._stdin)
    finally:
        # answered: the mark is in and the child had not exited when its streams closed. Decided before the kill, which
        # a poll after it may already see (a race: the answer would come with the kill's SIGKILL as its status).
        answered = until is not None and proc.poll() is None and until in out.value()
        kill_process_group(proc)  # the direct child is a zombie or dead: its pid (the group id) is not reused yet
        try:
            if not answered:
                proc.wait(timeout=1.0)
        except Exception:  # noqa: BLE001
            pass
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        _unregister(proc, exiting=answered)
        reap_orphans()
    so, bad1 = _decode(out.value())
    se, bad2 = _decode(err_c.value())
    truncated = bool(out.dropped or err_c.dropped)
    seconds = time.monotonic() - start
    if CHILDREN["closing"] and proc.returncode is not None and proc.returncode < 0:
        return CommandResult(argv, None, so, se, "interrupted", seconds, timeout, bad1 or bad2, truncated)
    if timed_out:
        return CommandResult(argv, None, so, se, "timeout", seconds, timeout, bad1 or bad2, truncated)
    if answered:  # its exit is not awaited, so it has no status: the killed child is reaped later
        return CommandResult(argv, None, so, se, None, seconds, timeout, bad1 or bad2, truncated, None)
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


def _collect_posix(proc, out: _Capture, err: _Capture, end: float, stdin_chunks, until: Optional[bytes] = None) -> bool:
    """Read both pipes until EOF (or the grace after the child's exit); True when ``end`` passed first. ``until``: at
    EOF with these bytes in stdout, done without waiting for the exit."""
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
            if not streams and until is not None and feed is None and until in out.value():
                return False  # answered and closed: its exit is not waited for (subprocess_runner)
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

