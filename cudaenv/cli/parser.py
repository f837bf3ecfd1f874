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
from cudaenv.core.i18n import ENGLISH, M, N_, language, t
from cudaenv.core.options import declare
from cudaenv.render.width import has_wide, width_of

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Optional, Sequence


# argparse's own words (Python's argparse says them through gettext's `_`): the ones a cudaenv user can meet, in the
# catalog, so that `--help` and a usage error read in the run's language (the expected-N-arguments plural is not:
# no cudaenv option takes a count of values).
ARGPARSE_WORDS = (
    N_("usage: "), N_("positional arguments"), N_("options"), N_("show this help message and exit"),
    N_("show program's version number and exit"), N_("argument %(argument_name)s: %(message)s"),
    N_("unrecognized arguments: %s"), N_("not allowed with argument %s"), N_("ignored explicit argument %r"),
    N_("the following arguments are required: %s"), N_("one of the arguments %s is required"),
    N_("expected one argument"), N_("expected at most one argument"), N_("expected at least one argument"),
    N_("ambiguous option: %(option)s could match %(matches)s"), N_("unexpected option string: %s"),
    N_("invalid %(type)s value: %(value)r"), N_("invalid choice: %(value)r (choose from %(choices)s)"),
)


class _ArgparseWords:
    """While argparse builds a parser, parses or formats help: its ``_`` says its words in the run's language (argparse
    looks them up through the stdlib's gettext, whose ``argparse`` domain cudaenv does not ship). English: nothing
    changes. Restored on the way out (argparse is the stdlib's; the next parser of this process may be another's)."""

    def __enter__(self):
        import argparse

        self.saved = None
        if language() != ENGLISH:
            self.saved = argparse._
            argparse._ = lambda text: t(text) if text else text
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            import argparse

            argparse._ = self.saved


def _help_formatter(argparse):
    class _Formatter(argparse.HelpFormatter):
        """argparse's help, wrapped by display width where a text holds Chinese (a character takes two columns);
        English goes through argparse's own wrapping, unchanged."""

        def _split_lines(self, text, width):
            if not has_wide(text):
                return super()._split_lines(text, width)
            from cudaenv.render.text import wrap

            return wrap(" ".join(text.split()), width=width, newlines=False, long_words="keep")

        def _fill_text(self, text, width, indent):
            if not has_wide(text):
                return super()._fill_text(text, width, indent)
            from cudaenv.render.text import wrap

            return "\n".join(wrap(" ".join(text.split()), indent, indent, width, newlines=False, long_words="keep"))

        def format_help(self):
            text = super().format_help()
            if language() == ENGLISH:
                return text
            import re  # (argparse's own import: nothing new on this path)

            # a section's heading in Chinese ends in a full-width colon ("选项："): argparse writes "%s:" after it
            return re.sub(r"(?m)^( *[^\s:]*[\u3400-\u4dbf\u4e00-\u9fff]):$", "\\1\uff1a", text)

        def _format_usage(self, usage, actions, groups, prefix):
            if prefix is None:
                prefix = argparse._("usage: ")
            extra = width_of(prefix) - len(prefix)  # argparse lays the usage out by len: room for a wide prefix
            self._width -= extra
            try:
                return super()._format_usage(usage, actions, groups, prefix)
            finally:
                self._width += extra

    return _Formatter


def _parser_class():
    import argparse

    formatter = _help_formatter(argparse)

    class _Parser(argparse.ArgumentParser):
        """argparse that exits 2 with one line and a hint instead of the usage dump on errors, and that speaks the
        run's language (its own words and the help's layout by display width)."""

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("formatter_class", formatter)
            with _ArgparseWords():
                super().__init__(*args, **kwargs)

        def parse_args(self, args=None, namespace=None):  # its "unrecognized arguments" is said here
            with _ArgparseWords():
                found, extra = super().parse_known_args(args, namespace)
                if extra:  # the hint names the chosen command's help, where the options it takes are listed
                    raise UserError(t("unrecognized arguments: %s") % " ".join(extra),
                                    hint=M("see `%s --help`", _command_prog(self.prog, found)))
                return found

        def parse_known_args(self, args=None, namespace=None):
            with _ArgparseWords():
                return super().parse_known_args(args, namespace)

        def format_usage(self):
            with _ArgparseWords():
                return super().format_usage()

        def format_help(self):
            with _ArgparseWords():
                return super().format_help()

        def error(self, message: str) -> "None":  # type: ignore[override]
            raise UserError(message, hint=M("see `%s --help`", self.prog))

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


LANG_HELP = N_("the language of what cudaenv writes for people: en or zh-CN (default: CUDAENV_LANG, else the locale; "
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


def _command_prog(prog: str, found) -> str:
    """``cudaenv torch guard`` for a run of that action: the words whose ``--help`` lists the options it takes."""
    words = [prog]
    command = getattr(found, "command", None)
    if command:
        words.append(command)
        dest = getattr(getattr(found, "_module", None), "ACTION_DEST", None)
        action = getattr(found, dest, None) if dest else None
        if isinstance(action, str):
            words.append(action)
    return " ".join(words)


def build_parser(argv: Sequence[str]):
    """The parser; only the chosen subcommand's module is imported and only its subparser is built. ``--lang`` is
    global: before the command or after it (``cudaenv doctor --format markdown --lang zh-CN``)."""
    import argparse
    import importlib

    parser_class = _parser_class()
    parser = parser_class(prog="cudaenv", description=t("A CUDA environment doctor and manager."))
    parser.add_argument("--version", action="version", version="cudaenv %s" % __version__,
                        help=t("show program's version number and exit"))
    parser.add_argument("--lang", metavar="LANG", default=argparse.SUPPRESS, help=t(LANG_HELP))  # absent unless given
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    chosen = _first_command(argv)
    # Building every subparser costs milliseconds (argparse looks up translations for each): build only
    # the one asked for, unless help or an unknown name needs the whole list.
    names = [chosen] if chosen in COMMANDS else list(COMMANDS)
    for name in names:
        module_name, help_text = COMMANDS[name]
        sp = sub.add_parser(name, help=t(help_text), description=t(help_text))
        if name == chosen:
            module = importlib.import_module(module_name)
            declare(sp, module)
            _add_lang(sp, argparse)
            sp.set_defaults(_module=module)
    return parser
