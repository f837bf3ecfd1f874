"""The command line: parses arguments, builds the Host, runs one command, prints, picks the exit code.

Subcommands live one per module in ``cudaenv.commands``; only the chosen one is imported, so
``cudaenv use`` starts without loading the doctor, requests or questionary.

A command module provides::

    HELP = "one line for `cudaenv --help`"
    def add_arguments(parser: argparse.ArgumentParser) -> None: ...
    def run(args: argparse.Namespace, ctx: Context) -> int: ...

Commands write through ``ctx.out`` / ``ctx.err`` (never ``print`` to sys.stdout directly), raise
:class:`cudaenv.errors.UserError` for the user's mistakes, and return the exit code.
"""

from __future__ import annotations

import os
import sys

from cudaenv import __version__
from cudaenv.commands import COMMANDS
from cudaenv.errors import UserError
from cudaenv.options import add_host_options  # noqa: F401 - re-exported for callers not yet moved to cudaenv.options

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    import argparse
    from typing import IO, List, Mapping, Optional, Sequence

FAST_COMMANDS = ("use", "list", "checkpoint")  # checkpoint: its FAST_ACTIONS (inspect)


def parse_simple(argv: Sequence[str], options: Sequence, positional=None):
    """Parse ``argv`` for a hot-path command without argparse, from the command's one declaration.

    ``options``: the command's :class:`cudaenv.options.Option` tuple; ``positional``: its optional
    :class:`cudaenv.options.Positional` (or its dest, or None). Returns a namespace, or None for anything unusual
    (help, an unknown or abbreviated option, a value that looks like an option, a repeated positional, a bad
    --timeout), so that the caller falls back to argparse and its messages. tests/test_cli_fast.py checks that whatever this accepts,
    argparse reads the same way.
    """
    from types import SimpleNamespace

    from cudaenv.options import seconds

    table = {flag: opt for opt in options for flag in opt.flags}
    values = {opt.dest: (None if opt.takes_value else False) for opt in options}
    pos = positional if isinstance(positional, str) or positional is None else positional.dest
    if pos is not None:
        values[pos] = None
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("-") or token == "-":
            if pos is None or values[pos] is not None:
                return None
            values[pos] = token
        elif token == "--":
            return None  # argparse's reading of "--" depends on what came before (the parity test found three cases)
        else:
            name, eq, value = token.partition("=")
            opt = table.get(name)
            if opt is None or (eq and not opt.takes_value):
                return None
            if not opt.takes_value:
                values[opt.dest] = True
                continue
            if not eq:
                if i >= len(argv) or argv[i].startswith("-"):
                    return None  # argparse would read a value that looks like an option as a flag
                value = argv[i]
                i += 1
            elif value == "--":
                return None  # argparse drops a "--" even as --opt=-- (its value becomes [])
            if opt.kind == "seconds":
                try:
                    value = seconds(value)
                except ValueError:
                    return None
            elif opt.choices and value not in opt.choices:
                return None
            values[opt.dest] = value
    return SimpleNamespace(**values)


class Context:
    """What a command gets: the environment, the streams, and a way to build the Host."""

    def __init__(
        self,
        env: Mapping[str, str],
        out: IO[str],
        err: IO[str],
        stdin: Optional[IO[str]] = None,
        cwd: Optional[str] = None,
    ):
        self.env = env
        self.out = out
        self.err = err
        self.stdin = stdin
        self.cwd = cwd if cwd is not None else os.getcwd()

    def host(self, args: argparse.Namespace):
        from cudaenv.host import host_from_environment

        return host_from_environment(self.env, root=getattr(args, "root", None), timeout=getattr(args, "timeout", None))

    @property
    def is_tty(self) -> bool:
        try:
            return self.out.isatty()
        except (AttributeError, ValueError):
            return False

    @property
    def err_is_tty(self) -> bool:
        try:
            return self.err.isatty()
        except (AttributeError, ValueError):
            return False

    @property
    def color(self) -> bool:
        """Colours only on a terminal and never with NO_COLOR or TERM=dumb (render.text.color_enabled)."""
        from cudaenv.render.text import color_enabled

        return color_enabled(self.is_tty, self.env)


def _parser_class():
    import argparse

    class _Parser(argparse.ArgumentParser):
        """argparse that exits 2 with one line and a hint instead of the usage dump on errors."""

        def error(self, message: str) -> "None":  # type: ignore[override]
            raise UserError(message, hint="see `%s --help`" % self.prog)

        def _print_message(self, message, file=None):  # argparse swallows write errors; a full stdout is one
            if not message:
                return
            if file is not None and file is sys.stdout:
                try:
                    file.write(message)
                    file.flush()
                except OSError as exc:
                    raise OutputError(exc) from None
                return
            _Stderr(file or sys.stderr).write(message)

    return _Parser


def _first_command(argv: Sequence[str]) -> Optional[str]:
    for token in argv:
        if token == "--":
            return None
        if not token.startswith("-"):
            return token
    return None


def build_parser(argv: Sequence[str]):
    """The parser; only the chosen subcommand's module is imported and only its subparser is built."""
    import importlib

    parser_class = _parser_class()
    parser = parser_class(prog="cudaenv", description="A CUDA environment doctor and manager.")
    parser.add_argument("--version", action="version", version="cudaenv %s" % __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    chosen = _first_command(argv)
    # Building every subparser costs milliseconds (argparse looks up translations for each): build only
    # the one asked for, unless help or an unknown name needs the whole list.
    names = [chosen] if chosen in COMMANDS else list(COMMANDS)
    for name in names:
        module_name, help_text = COMMANDS[name]
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(sp)
            sp.set_defaults(_module=module)
    return parser


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


class _Stdout:
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

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _Stderr:
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
            _discard_fd(2)
        self._stream = None

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _discard_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so that the interpreter's last flush cannot fail after we reported."""
    _discard_fd(1)


def _discard_fd(target: int) -> None:
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(fd, target)
        finally:
            os.close(fd)
    except OSError:
        pass


def _install_signal_handlers(saved: List) -> None:
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


def _restore_signal_handlers(saved: List) -> None:
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


def _stop_children(final: bool) -> None:
    """Kill whatever children are still running (an interrupt, an error path) and reap re-parented orphans.

    ``final``: the process is about to exit (the console script): no thread may start a new child after this.
    """
    host = sys.modules.get("cudaenv.host")
    if host is not None:
        host.kill_all_children(stop_new=final)


def main(
    argv: Optional[List[str]] = None,
    env: Optional[Mapping[str, str]] = None,
    out: Optional[IO[str]] = None,
    err: Optional[IO[str]] = None,
) -> int:
    entry = argv is None  # the console script: this process ends when main returns
    argv = list(sys.argv[1:] if argv is None else argv)
    real_out = out is None
    out = out if out is not None else _Stdout(sys.stdout)
    err = err if err is not None else _Stderr(sys.stderr)
    ctx = Context(env=dict(os.environ if env is None else env), out=out, err=err, stdin=sys.stdin)
    saved: List = []
    try:
        code = _dispatch(argv, ctx, saved)
        if real_out:
            out.flush()
        return code
    except UserError as exc:
        ctx.err.write("cudaenv: error: %s\n" % exc.message)
        if exc.hint:
            ctx.err.write("hint: %s\n" % exc.hint)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("cudaenv.commands."):
            ctx.err.write("cudaenv: error: this command is not available in cudaenv %s\n" % __version__)
            return 2
        raise
    except KeyboardInterrupt:
        _stop_children(entry)
        ctx.err.write("cudaenv: interrupted\n")
        return 130
    except Interrupted as exc:
        _stop_children(entry)
        ctx.err.write("cudaenv: interrupted\n")
        return exc.code
    except SystemExit:
        # argparse printed --help or --version to sys.stdout itself: a full or closed stdout is still an error.
        if real_out:
            try:
                if sys.stdout is None:
                    raise OSError(9, "stdout is closed")
                sys.stdout.flush()
            except OSError as exc:
                if sys.stdout is not None:
                    _discard_stdout()
                ctx.err.write("cudaenv: error: cannot write the output: %s\n" % (exc.strerror or exc))
                return 1
        raise
    except (OutputError, BrokenPipeError) as exc:
        _stop_children(entry)
        cause = getattr(exc, "cause", exc)
        if real_out:
            _discard_stdout()
        if isinstance(cause, BrokenPipeError):
            return 0  # `cudaenv list | head -1`: the reader has what it wanted
        ctx.err.write("cudaenv: error: cannot write the output: %s\n" % (getattr(cause, "strerror", None) or cause))
        return 1
    finally:
        _stop_children(entry)
        _restore_signal_handlers(saved)
        if isinstance(err, _Stderr):
            err.flush()


def _parse_fast(module, argv: Sequence[str]):
    """The fast parser's namespace for a hot-path command, or None (argparse decides).

    A command with actions (``checkpoint inspect``) declares ``FAST_ACTIONS`` (action -> (options, positional)) and
    ``ACTION_DEST``; its positional is required, so a namespace without it goes to argparse and its message."""
    actions = getattr(module, "FAST_ACTIONS", None)
    if actions is None:
        return parse_simple(argv, module.OPTIONS, getattr(module, "POSITIONAL", None))
    if not argv or argv[0] not in actions:
        return None
    options, positional = actions[argv[0]]
    fast = parse_simple(argv[1:], options, positional)
    if fast is None or getattr(fast, positional.dest) is None:
        return None
    setattr(fast, module.ACTION_DEST, argv[0])
    return fast


def _dispatch(argv: List[str], ctx: Context, saved: List) -> int:
    if argv[:1] and argv[0] in FAST_COMMANDS:
        # Hot paths (the shell hook's `use`, `list`): no argparse, which imports re, gettext, locale, shutil.
        module = __import__(COMMANDS[argv[0]][0], fromlist=["run"])
        fast = _parse_fast(module, argv[1:])
        if fast is not None:
            if getattr(module, "FAST_ACTIONS", None) is not None:  # checkpoint inspect reads a file and runs nvidia-smi
                _install_signal_handlers(saved)
            return int(module.run(fast, ctx) or 0)
    _install_signal_handlers(saved)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    module = getattr(args, "_module", None)
    if module is None:  # `cudaenv` alone: a usage error, as in most CLIs (the help goes to stderr)
        parser.print_help(ctx.err)
        return 2
    return int(module.run(args, ctx) or 0)
