"""Command-line options declared once: each declaration builds the argparse option and the fast parser's entry.

A command lists its options as :class:`Option` values (and at most one optional :class:`Positional`)::

    OPTIONS = (Option("--json", help="print JSON"),) + host_options(python=False)

``add_options(parser, OPTIONS, POSITIONAL)`` declares them to argparse; :func:`parse_simple` reads the same tuple on
the hot path (``use``, ``list``, ``checkpoint inspect``) without importing argparse; tests/cli/test_cli_fast.py checks
with hypothesis that any argv the fast parser accepts gives argparse's namespace.

Infrastructure on the ``cudaenv use`` path: no imports at module level.
"""


class Option:
    """One option: its flags (``"-q", "--quiet"``), whether it takes a value, and how argparse shows it.

    ``kind="seconds"``: the value is a number of seconds > 0 (argparse's type and the fast parser agree);
    ``hidden``: not in ``--help`` (internal switches the shell hook passes); ``repeat``: given any number of times,
    the values in a list (``[]`` when not given; the fast parser leaves such a command line to argparse)."""

    __slots__ = ("flags", "dest", "takes_value", "metavar", "help", "hidden", "kind", "choices", "repeat")

    def __init__(self, *flags, dest=None, takes_value=False, metavar=None, help="", hidden=False, kind=None, choices=None,
                 repeat=False):
        self.flags = flags
        self.dest = dest or flags[-1].lstrip("-").replace("-", "_")
        self.takes_value = takes_value or metavar is not None or kind is not None or choices is not None or repeat
        self.metavar, self.help, self.hidden, self.kind, self.choices = metavar, help, hidden, kind, choices
        self.repeat = repeat


class Positional:
    """The one optional positional argument of a fast command."""

    __slots__ = ("dest", "help")

    def __init__(self, dest, help=""):
        self.dest, self.help = dest, help


def host_options(python=True):
    """The options every probing command shares (``--root``, ``--timeout``, and ``--python`` unless told not to)."""
    opts = (
        Option("--root", metavar="DIR", help="inspect files under DIR as if it were / (env: CUDAENV_ROOT)"),
        Option("--timeout", metavar="SECONDS", kind="seconds", help="timeout for each command run (default 5)"),
    )
    if python:
        opts += (Option("--python", metavar="PATH",
                        help="the Python whose torch to inspect (default: active venv, conda env, python3 on PATH)"),)
    return opts


def seconds(text):
    """``--timeout``'s reading: a number of seconds > 0 (ValueError otherwise), the same in both parsers."""
    value = float(text)
    if not value > 0:
        raise ValueError("must be more than 0 seconds")
    return value


def _argparse_seconds(text):
    import argparse

    try:
        return seconds(text)
    except ValueError:
        try:
            float(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a number of seconds" % text) from None
        raise argparse.ArgumentTypeError("must be more than 0 seconds") from None


def add_options(parser, options, positional=None):
    """Declare ``options`` (and ``positional``) to an argparse parser, in their order (the positional first)."""
    import argparse

    if positional is not None:
        parser.add_argument(positional.dest, nargs="?", help=positional.help)
    for opt in options:
        kw = {"dest": opt.dest, "help": argparse.SUPPRESS if opt.hidden else opt.help}
        if opt.takes_value:
            if opt.metavar:
                kw["metavar"] = opt.metavar
            if opt.kind == "seconds":
                kw["type"] = _argparse_seconds
            if opt.choices:
                kw["choices"] = opt.choices
            if opt.repeat:
                kw["action"], kw["default"] = "append", []
        else:
            kw["action"] = "store_true"
        parser.add_argument(*opt.flags, **kw)


def add_host_options(parser, python=True):
    add_options(parser, host_options(python))


class Namespace:
    """:func:`parse_simple`'s result: one attribute per option, like argparse's namespace (``vars()`` gives them).
    Not ``types.SimpleNamespace``: nothing else on the ``use`` path imports types (bin/cudaenv is no pip wrapper)."""

    def __init__(self, values):
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return "Namespace(%s)" % ", ".join("%s=%r" % kv for kv in sorted(vars(self).items()))


def parse_simple(argv, options, positional=None):
    """Parse ``argv`` for a hot-path command without argparse, from the command's one declaration.

    ``options``: the command's :class:`Option` tuple; ``positional``: its optional :class:`Positional` (or its
    dest, or None). Returns a namespace, or None for anything unusual (help, an unknown or abbreviated option, a
    value that looks like an option, a repeated positional, a bad --timeout), so that the caller falls back to
    argparse and its messages. tests/cli/test_cli_fast.py checks that whatever this accepts, argparse reads the
    same way.
    """
    table = {flag: opt for opt in options for flag in opt.flags}
    values = {opt.dest: ([] if opt.repeat else None if opt.takes_value else False) for opt in options}
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
            if opt is None or (eq and not opt.takes_value) or opt.repeat:
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
    return Namespace(values)
