"""The argparse parser of the whole CLI: every command but the hot paths' usual calls goes through it.

Never on the ``cudaenv use`` / ``list`` / ``checkpoint inspect`` path (argparse imports ``re``, ``gettext``, ``locale``
and ``shutil``): :mod:`cudaenv.cli` imports this module only when the fast parser (:func:`cudaenv.core.options.parse_simple`)
hands an argv over.
"""

from __future__ import annotations

import sys

from cudaenv import __version__
from cudaenv.cli.streams import OutputError, Stderr
from cudaenv.commands import COMMANDS
from cudaenv.core.errors import UserError
from cudaenv.core.options import declare

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Optional, Sequence


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
            Stderr(file or sys.stderr).write(message)

    return _Parser


def _first_command(argv: Sequence[str]) -> Optional[str]:
    value = False  # the token is the value of the global --lang
    for token in argv:
        if token == "--":
            return None
        if not token.startswith("-") and not value:
            return token
        value = token == "--lang"
    return None


LANG_HELP = ("the language of what cudaenv writes for people: en or zh-CN (default: CUDAENV_LANG, else the locale; "
             "JSON and Markdown stay English unless this asks)")


def _add_lang(parser, argparse) -> None:
    """``--lang`` on a command's parser and on each of its actions' (``cudaenv torch recommend --lang zh-CN``); absent,
    it leaves the value given before the command. Shown only in ``cudaenv --help`` (one global option, not a line in
    every command's help)."""
    parser.add_argument("--lang", metavar="LANG", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.add_argument("--lang", metavar="LANG", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def build_parser(argv: Sequence[str]):
    """The parser; only the chosen subcommand's module is imported and only its subparser is built. ``--lang`` is
    global: before the command or after it (``cudaenv doctor --format markdown --lang zh-CN``)."""
    import argparse
    import importlib

    parser_class = _parser_class()
    parser = parser_class(prog="cudaenv", description="A CUDA environment doctor and manager.")
    parser.add_argument("--version", action="version", version="cudaenv %s" % __version__)
    parser.add_argument("--lang", metavar="LANG", default=argparse.SUPPRESS, help=LANG_HELP)  # absent unless given
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
            declare(sp, module)
            _add_lang(sp, argparse)
            sp.set_defaults(_module=module)
    return parser
