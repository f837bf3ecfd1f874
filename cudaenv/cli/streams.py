"""Where the process meets the operating system: stdout/stderr as commands see them, and SIGTERM/SIGHUP.

:class:`Stdout` turns a failing write (closed, full, a broken pipe) into one :class:`OutputError`; :class:`Stderr`
turns a failing stderr into silence. :func:`install_signal_handlers` turns SIGTERM/SIGHUP into :class:`Interrupted`,
which unwinds like KeyboardInterrupt. Used by :mod:`cudaenv.cli` (main) and :mod:`cudaenv.cli.parser` (argparse's
own writes); on the ``cudaenv use`` path, so stdlib ``os`` and ``sys`` only.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import List


class Interrupted(BaseException):
    """SIGTERM (or SIGHUP) arrived: unwinds like KeyboardInterrupt, so ``except Exception`` never swallows it."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class OutputError(Exception):
    """Writing to stdout failed (closed, full, a broken pipe); ``cause`` is the OSError."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class _Wrapped:
    """What both wrappers pass through to the stream they wrap (None once it is given up)."""

    _stream = None

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class Stdout(_Wrapped):
    """The real stdout for commands: write/flush failures become :class:`OutputError` (one message, no traceback).

    ``stream`` None is a closed file descriptor 1 (``cudaenv list >&-``): the first write fails.
    """

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:
            raise OutputError(OSError(9, "stdout is closed"))
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise OutputError(exc) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            raise OutputError(exc) from None


class Stderr(_Wrapped):
    """The real stderr: a closed or failing stderr is silence, never an error (``use`` must still exit 0)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is not None:
            try:
                return self._stream.write(text)
            except (OSError, ValueError):
                self._give_up()
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._give_up()

    def _give_up(self) -> None:
        """A full stderr: drop it, and point its descriptor at /dev/null so the interpreter's last flush succeeds."""
        if self._stream is sys.__stderr__:
            discard_fd(2)
        self._stream = None


def discard_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so that the interpreter's last flush cannot fail after we reported."""
    discard_fd(1)


def discard_fd(target: int) -> None:
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(fd, target)
        finally:
            os.close(fd)
    except OSError:
        pass


def install_signal_handlers(saved: List) -> None:
    """SIGTERM -> exit 143, SIGHUP -> 129, after every child is killed (see :func:`cudaenv.host.kill_all_children`).

    Only for commands that may run children (not the ``use``/``list`` fast path); a signal the caller set to
    be ignored (``nohup``) stays ignored.
    """
    try:  # the C module: `signal` imports enum, milliseconds of `checkpoint inspect`'s start-up budget
        import _signal as signal
    except ImportError:  # pragma: no cover - every CPython has it
        import signal  # type: ignore[no-redef]

    threading = sys.modules.get("threading")  # not imported: no thread was started through it
    if threading is not None and threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame):
        raise Interrupted(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is None:
            continue
        try:
            old = signal.getsignal(number)
            if old != signal.SIG_IGN:
                signal.signal(number, handler)
                saved.append((number, old))
        except (OSError, ValueError, TypeError):
            pass


def restore_signal_handlers(saved: List) -> None:
    if saved:
        try:
            import _signal as signal
        except ImportError:  # pragma: no cover
            import signal  # type: ignore[no-redef]

        for number, old in saved:
            try:
                signal.signal(number, old)
            except (OSError, ValueError, TypeError):
                pass
