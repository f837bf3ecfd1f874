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
    ``kind="int"`` / ``"float"``: a number (argparse's own message for a bad one); ``append``: repeatable, the values
    in a list; ``default``: the value when the option is absent (else None, False for a flag); ``exclusive``: a name
    shared by options that exclude each other (one argparse mutually exclusive group per name);
    ``const``: the value may be left out (``--jetson`` alone gives ``const``; argparse only);
    ``hidden``: not in ``--help`` (internal switches the shell hook passes)."""

    __slots__ = ("flags", "dest", "takes_value", "metavar", "help", "hidden", "kind", "choices", "append", "default",
                 "exclusive", "const")

    def __init__(self, *flags, dest=None, takes_value=False, metavar=None, help="", hidden=False, kind=None, choices=None,
                 append=False, default=None, exclusive=None, const=None):
        self.flags = flags
        self.dest = dest or flags[-1].lstrip("-").replace("-", "_")
        self.takes_value = takes_value or metavar is not None or kind is not None or choices is not None or append
        self.metavar, self.help, self.hidden, self.kind, self.choices = metavar, help, hidden, kind, choices
        self.append, self.default, self.exclusive, self.const = append, default, exclusive, const
        if const is not None:
            self.takes_value = True


class Positional:
    """A command's positional argument: optional by default (``nargs="?"``); ``nargs=None`` makes it required,
    ``"*"`` / ``"+"`` a list. The fast parser reads an optional one and a ``"*"`` list given in one run of words."""

    __slots__ = ("dest", "help", "nargs", "metavar")

    def __init__(self, dest, help="", nargs="?", metavar=None):
        self.dest, self.help, self.nargs, self.metavar = dest, help, nargs, metavar


class Action:
    """One action of a command with actions (``cudaenv torch recommend``): its name, its help and description, and
    its own options and positional."""

    __slots__ = ("name", "help", "description", "options", "positional")

    def __init__(self, name, help, description=None, options=(), positional=None):
        self.name, self.help, self.description = name, help, description
        self.options, self.positional = options, positional


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


def said(text):
    """A declaration's help in the run's language (the declarations are the catalog's messages: tools/po.py reads them;
    a help with a value, such as the index URL, is a marked message M(...)); an empty one stays empty (gettext would
    answer the catalog's header)."""
    from cudaenv.core.i18n import Msg, t, tr

    return tr(text) if isinstance(text, Msg) else t(text) if text else text


def add_options(parser, options, positional=None):
    """Declare ``options`` (and ``positional``: one :class:`Positional` or a tuple of them, in order) to an argparse
    parser, in their order (the positionals first)."""
    import argparse

    for pos in (positional if isinstance(positional, tuple) else (positional,) if positional is not None else ()):
        kw = {"help": said(pos.help)}
        if pos.nargs is not None:
            kw["nargs"] = pos.nargs
        if pos.metavar:
            kw["metavar"] = pos.metavar
        parser.add_argument(pos.dest, **kw)
    groups = {}
    for opt in options:
        kw = {"dest": opt.dest, "help": argparse.SUPPRESS if opt.hidden else said(opt.help)}
        if opt.takes_value:
            if opt.metavar:
                kw["metavar"] = opt.metavar
            if opt.kind == "seconds":
                kw["type"] = _argparse_seconds
            elif opt.kind in ("int", "float"):
                kw["type"] = int if opt.kind == "int" else float
            if opt.choices:
                kw["choices"] = opt.choices
            if opt.append:
                kw["action"] = "append"
            if opt.const is not None:
                kw["nargs"], kw["const"] = "?", opt.const
            if opt.default is not None:
                kw["default"] = list(opt.default) if opt.append else opt.default
        else:
            kw["action"] = "store_true"
        target = parser
        if opt.exclusive is not None:
            target = groups.get(opt.exclusive) or groups.setdefault(opt.exclusive, parser.add_mutually_exclusive_group())
        target.add_argument(*opt.flags, **kw)


def add_actions(parser, dest, actions):
    """Declare a command's :class:`Action` tuple as argparse subparsers (the chosen one in ``dest``)."""
    sub = parser.add_subparsers(dest=dest, metavar="ACTION", parser_class=type(parser))
    for action in actions:
        kw = {"help": said(action.help)}
        if action.description is not None:
            kw["description"] = said(action.description)
        add_options(sub.add_parser(action.name, **kw), action.options, action.positional)


def declare(parser, module):
    """Declare a command module's arguments: its ``ACTIONS`` (with ``ACTION_DEST``), else its ``OPTIONS`` and
    ``POSITIONAL``."""
    actions = getattr(module, "ACTIONS", None)
    if actions is not None:
        add_actions(parser, module.ACTION_DEST, actions)
    else:
        add_options(parser, module.OPTIONS, getattr(module, "POSITIONAL", None))


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
    values = {opt.dest: (opt.default if opt.default is not None else None if opt.takes_value else False) for opt in options}
    pos = positional if isinstance(positional, str) or positional is None else positional.dest
    many = getattr(positional, "nargs", "?") == "*"  # a list (cudaenv explain's words): argparse reads one run of them
    if pos is not None:
        values[pos] = [] if many else None
    i = 0
    run_ended = False  # many: the run of words is over (an option came after it)
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("-") or token == "-":
            if many and not run_ended:
                values[pos].append(token)
                continue
            if pos is None or values[pos] is not None:
                return None
            values[pos] = token
        elif token == "--":
            return None  # argparse's reading of "--" depends on what came before (the parity test found three cases)
        else:
            run_ended = many and bool(values[pos])
            name, eq, value = token.partition("=")
            opt = table.get(name)
            if opt is None or (eq and not opt.takes_value) or opt.append or opt.const is not None or opt.kind in ("int", "float"):
                return None  # unknown, or read only by argparse (a list, a number with argparse's own message)
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
