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

import argparse
import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Dict, List, Mapping, Optional, Sequence

from cudaenv import __version__
from cudaenv.errors import UserError

# name -> (module, one-line help). Order is the order of `cudaenv --help`.
COMMANDS: Dict[str, Sequence[str]] = {
    "doctor": ("cudaenv.commands.doctor", "inspect this machine's CUDA setup, say what is wrong and how to fix it"),
    "list": ("cudaenv.commands.list_toolkits", "list the CUDA toolkits installed here"),
    "use": ("cudaenv.commands.use", "print shell code that switches this shell to a CUDA toolkit"),
    "link": ("cudaenv.commands.link", "print the commands that repoint /usr/local/cuda"),
    "init": ("cudaenv.commands.init", "print the shell hook for your rc file"),
    "torch": ("cudaenv.commands.torch", "recommend the right torch build for this machine"),
    "fix": ("cudaenv.commands.fix", "guided fix for a CPU-only or wrong-CUDA torch"),
    "verify": ("cudaenv.commands.verify", "run real GPU work in your Python to prove it works"),
    "explain": ("cudaenv.commands.explain", "explain a pasted CUDA/torch error message"),
    "uninstall": ("cudaenv.commands.uninstall", "plan the removal of a CUDA toolkit, leaving nothing behind"),
    "check-installer": ("cudaenv.commands.check_installer", "check a downloaded CUDA .run installer without running it"),
}


@dataclass
class Context:
    """What a command gets: the environment, the streams, and a way to build the Host."""

    env: Mapping[str, str]
    out: IO[str]
    err: IO[str]
    stdin: Optional[IO[str]] = None
    cwd: str = field(default_factory=os.getcwd)

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
        """Colours only on a terminal and never with NO_COLOR."""
        return self.is_tty and "NO_COLOR" not in self.env and self.env.get("TERM") != "dumb"


def add_host_options(parser: argparse.ArgumentParser, python: bool = True) -> None:
    """The options every probing command shares."""
    parser.add_argument("--root", metavar="DIR", help="inspect files under DIR as if it were / (env: CUDAENV_ROOT)")
    parser.add_argument("--timeout", metavar="SECONDS", type=_positive_float, help="timeout for each command run (default 5)")
    if python:
        parser.add_argument(
            "--python", metavar="PATH", help="the Python whose torch to inspect (default: active venv, conda env, python3 on PATH)"
        )


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line and a hint instead of the usage dump on errors."""

    def error(self, message: str) -> "None":  # type: ignore[override]
        raise UserError(message, hint="see `%s --help`" % self.prog)


def _first_command(argv: Sequence[str]) -> Optional[str]:
    for token in argv:
        if token == "--":
            return None
        if not token.startswith("-"):
            return token
    return None


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="cudaenv", description="A CUDA environment doctor and manager.")
    parser.add_argument("--version", action="version", version="cudaenv %s" % __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    chosen = _first_command(argv)
    for name, (module_name, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(sp)
            sp.set_defaults(_module=module)
    return parser


def main(
    argv: Optional[List[str]] = None,
    env: Optional[Mapping[str, str]] = None,
    out: Optional[IO[str]] = None,
    err: Optional[IO[str]] = None,
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ctx = Context(env=dict(os.environ if env is None else env), out=out or sys.stdout, err=err or sys.stderr, stdin=sys.stdin)
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        module = getattr(args, "_module", None)
        if module is None:
            parser.print_help(ctx.out)
            return 0 if not argv else 2
        return int(module.run(args, ctx) or 0)
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
        ctx.err.write("cudaenv: interrupted\n")
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
