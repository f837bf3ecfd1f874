"""The command line: parses arguments, builds the Host, runs one command, prints, picks the exit code.

Subcommands live one per module in ``cudaenv.commands``; only the chosen one is imported, so
``cudaenv use`` starts without loading the doctor, requests or questionary. The hot paths (``FAST_COMMANDS``) are
read by :func:`cudaenv.core.options.parse_simple`; anything else, or anything unusual, by the argparse parser of
:mod:`cudaenv.cli.parser` (imported only then). :mod:`cudaenv.cli.streams` holds the stdout/stderr wrappers and the
SIGTERM/SIGHUP handling.

A command module provides::

    HELP = "one line for `cudaenv --help`"
    OPTIONS = (Option(...), ...)       # and POSITIONAL; or ACTIONS and ACTION_DEST (cudaenv.core.options.declare)
    def run(args: argparse.Namespace, ctx: Context) -> int: ...

Commands write through ``ctx.out`` / ``ctx.err`` (never ``print`` to sys.stdout directly), raise
:class:`cudaenv.core.errors.UserError` for the user's mistakes, and return the exit code.
"""

from __future__ import annotations

import os
import sys

from cudaenv import BUNDLED_COMMANDS
from cudaenv.cli.streams import (
    Interrupted,
    OutputError,
    Stderr,
    Stdout,
    discard_stdout,
    install_signal_handlers,
    restore_signal_handlers,
)
from cudaenv.commands import COMMANDS
from cudaenv.core.options import parse_simple

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    import argparse
    from typing import IO, List, Mapping, Optional, Sequence

NO_GC_COMMANDS = (("use",), ("list",), ("checkpoint", "inspect"))  # short, small runs: the cyclic collector off
FAST_COMMANDS = ("use", "list", "checkpoint", "doctor", "explain")  # checkpoint: its FAST_ACTIONS (inspect)


class Context:
    """What a command gets: the environment, the streams, and a way to build the Host. ``english``: the run writes
    in English (set with the language; a command may then write its words as they are, importing no catalog)."""

    english = True

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


def _user_error() -> type:
    """:class:`cudaenv.core.errors.UserError`, imported when main's first ``except`` asks: a `cudaenv use` that succeeds
    never loads the module."""
    from cudaenv.core.errors import UserError

    return UserError


def _error_text(exc, env) -> str:
    """``cudaenv: error: ...`` and its ``hint: ...``, wrapped to the terminal (COLUMNS, at most 80); a path or a
    command word is never cut (render.text.wrap, loaded only on this error path)."""
    from cudaenv.core.i18n import t, tr
    from cudaenv.render.text import terminal_width, wrap_labelled

    width = terminal_width(env)
    lines = wrap_labelled(tr(exc.message), "cudaenv: " + t("error: "), "  ", width)
    if exc.hint:
        lines += wrap_labelled(tr(exc.hint), t("hint: "), "  ", width)
    return "\n".join(lines) + "\n"


def _stop_children(final: bool) -> None:
    """Kill whatever children are still running (an interrupt, an error path) and reap re-parented orphans.

    ``final``: the process is about to exit (the `cudaenv` command): no thread may start a new child after this.
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
    entry = argv is None  # the `cudaenv` command: this process ends when main returns
    argv = list(sys.argv[1:] if argv is None else argv)
    real_out = out is None
    out = out if out is not None else Stdout(sys.stdout)
    err = err if err is not None else Stderr(sys.stderr)
    ctx = Context(env=dict(os.environ if env is None else env), out=out, err=err, stdin=sys.stdin)
    saved: List = []
    bundle = None
    if entry and argv[:1] and argv[0] in BUNDLED_COMMANDS:  # their modules found in one read (bin/cudaenv's first)
        from cudaenv.bundle import started

        bundle = started(argv)
    try:
        code = _dispatch(argv, ctx, saved, entry)
        if real_out:
            out.flush()
        return code
    except _user_error() as exc:  # evaluated only when an exception gets here: cudaenv.core.errors is loaded then
        ctx.err.write(_error_text(exc, ctx.env))
        return exc.exit_code
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
                    discard_stdout()
                ctx.err.write("cudaenv: error: cannot write the output: %s\n" % (exc.strerror or exc))
                return 1
        raise
    except (OutputError, BrokenPipeError) as exc:
        _stop_children(entry)
        cause = getattr(exc, "cause", exc)
        if real_out:
            discard_stdout()
        if isinstance(cause, BrokenPipeError):
            return 0  # `cudaenv list | head -1`: the reader has what it wanted
        ctx.err.write("cudaenv: error: cannot write the output: %s\n" % (getattr(cause, "strerror", None) or cause))
        return 1
    finally:
        _stop_children(entry)
        restore_signal_handlers(saved)
        if bundle is not None:
            bundle.close()
        i18n = sys.modules.get("cudaenv.core.i18n")
        if i18n is not None:  # the next main() in this process (the tests) chooses again
            i18n.set_language(i18n.ENGLISH)
        if isinstance(err, Stderr):
            err.flush()


def exit_now(code) -> None:
    """The end of the ``cudaenv`` command (bin/cudaenv; ``python -m cudaenv`` keeps the ordinary exit, for callers that
    run it with runpy and look on): ``main()``'s exit status, its output flushed and its ``atexit`` functions run, then
    ``os._exit``. The interpreter's teardown (every module and every facts table freed one by one: about a fifth of
    ``python -c pass`` after ``use``, about 10 % of ``doctor --quick``'s CPU; issue 35) does nothing for a process that
    ends here: main() has killed and reaped its children, and every file cudaenv writes is closed where it is
    written. The ordinary exit instead where it has work to do: a flush that fails (it reports it), or another thread
    that is not a daemon (the ordinary exit waits for it)."""
    status = 0 if code is None else code if isinstance(code, int) else 1
    threading = sys.modules.get("threading")
    if threading is not None and any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                     if t is not threading.main_thread()):
        raise SystemExit(code)
    import atexit  # (built in)

    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None:  # not CPython: only the ordinary exit knows how to run them
        raise SystemExit(code)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:  # noqa: BLE001 - the ordinary exit says what went wrong with the stream
        raise SystemExit(code)
    run_exitfuncs()  # what the ordinary exit runs first (a library's own flush), and then no teardown
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:  # noqa: BLE001
        raise SystemExit(code)
    os._exit(status)


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


def _choose_language(args, ctx: Context) -> None:
    """The language of what this command writes for people (``--lang``, ``CUDAENV_LANG``, the locale); output for
    programs or upstream (``--json``, ``--format markdown``/``prometheus``/...) stays English unless ``--lang`` asks;
    fleet's ``--format html`` is a page for people, in their language.
    Only the choice: the catalog is read when a renderer first translates (cudaenv.core.i18n)."""
    from cudaenv.core.config import value
    from cudaenv.core.i18n import ENGLISH, choose_language, set_language

    fmt = getattr(args, "format", None)
    machine = bool(getattr(args, "json", False)) or fmt not in (None, "text", "html")  # fleet's HTML is read by people
    lang = choose_language(ctx.env, getattr(args, "lang", None), machine_output=machine, setting=value(ctx.env, "CUDAENV_LANG"))
    set_language(lang)
    ctx.english = lang == ENGLISH


def _may_not_be_english(env: Mapping[str, str]) -> bool:
    """Whether the environment may ask for a language other than English (``CUDAENV_LANG`` set, or a locale variable
    naming Chinese): a cheap test on `use`'s path, which then chooses exactly (cudaenv.core.i18n)."""
    if any((env.get(n) or "").lstrip().startswith("zh") for n in ("LC_ALL", "LC_MESSAGES", "LANG")):
        return True
    from cudaenv.core.config import value  # on use's path already (CUDAENV_SHELL)

    try:
        return value(env, "CUDAENV_LANG") not in (None, "en")
    except _user_error():
        return False


def _language_before_parsing(argv: Sequence[str], ctx: Context) -> None:
    """The language of ``--help`` and of argparse's usage errors, chosen before argparse reads ``argv``: a ``--lang``
    anywhere before ``--`` (one cudaenv cannot read is left for the parsed choice to refuse), else ``CUDAENV_LANG``,
    else the locale. Help and usage errors are for people, whatever ``--json`` says."""
    from cudaenv.core.config import value
    from cudaenv.core.errors import UserError
    from cudaenv.core.i18n import ENGLISH, choose_language, language_code, set_language

    explicit = None
    for n, token in enumerate(argv):
        if token == "--":
            break
        if token == "--lang" and n + 1 < len(argv):
            explicit = argv[n + 1]
        elif token.startswith("--lang="):
            explicit = token[len("--lang="):]
    if explicit is not None and language_code(explicit) is None:
        explicit = None
    try:
        lang = choose_language(ctx.env, explicit, setting=value(ctx.env, "CUDAENV_LANG"))
    except UserError:  # a CUDAENV_LANG cudaenv cannot read: the parsed choice says so
        return
    set_language(lang)
    ctx.english = lang == ENGLISH


def _short_run(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is one of the short, small runs that go without the cyclic collector: NO_GC_COMMANDS, and
    `doctor --quick` (no `import torch`: about 160 modules imported and one small report; 1.5-2 ms of its CPU went to
    collections during those imports, issue 35). A ``--quick`` after ``--`` is no option."""
    if any(tuple(argv[:len(c)]) == c for c in NO_GC_COMMANDS):
        return True
    options = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    return argv[:1] == ["doctor"] and "--quick" in options


def _dispatch(argv: List[str], ctx: Context, saved: List, entry: bool = False) -> int:
    if _short_run(argv):
        import gc

        if gc.isenabled():  # short runs that allocate little: no cyclic collection during their imports (a tenth
            gc.disable()  # of `checkpoint inspect`'s start-up budget); on again for the next main() in this process
            try:
                return _dispatch_fast(argv, ctx, saved)
            finally:
                if not entry:  # (the `cudaenv` command ends now: switched on, the collector would first walk every
                    gc.enable()  # object the run made, about 2 % of `use`'s instructions, for a process that exits)
    return _dispatch_fast(argv, ctx, saved)


def _dispatch_fast(argv: List[str], ctx: Context, saved: List) -> int:
    if argv[:1] and argv[0] in FAST_COMMANDS:
        # Hot paths (the shell hook's `use`, `list`): no argparse, which imports re, gettext, locale, shutil.
        module = __import__(COMMANDS[argv[0]][0], fromlist=["run"])
        fast = _parse_fast(module, argv[1:])
        if fast is not None:
            if argv[0] != "use":
                _choose_language(fast, ctx)
            elif _may_not_be_english(ctx.env):  # `use` in English imports nothing to choose
                try:
                    _choose_language(fast, ctx)
                except _user_error():  # the shell hook's `use` never fails on a language setting: English
                    pass
            if getattr(module, "FAST_ACTIONS", None) is not None or getattr(module, "RUNS_CHILDREN", False):
                # checkpoint inspect runs nvidia-smi, the doctor its probes: their children go with it on a signal
                install_signal_handlers(saved)
            return int(module.run(fast, ctx) or 0)
    install_signal_handlers(saved)
    _language_before_parsing(argv, ctx)
    from cudaenv.cli.parser import build_parser

    parser = build_parser(argv)
    args = parser.parse_args(argv)
    module = getattr(args, "_module", None)
    _choose_language(args, ctx)
    if module is None:  # `cudaenv` alone: a usage error, as in most CLIs (the help goes to stderr)
        parser.print_help(ctx.err)
        return 2
    return int(module.run(args, ctx) or 0)
