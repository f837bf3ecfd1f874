"""Commands are declarations: each declares its options once, as `Option` values (cudaenv.core.options), never
with argparse calls of its own; the CLI builds argparse (and the fast parser of `use`/`list`) from them."""

import ast
import importlib
from pathlib import Path

import pytest

from cudaenv.commands import COMMANDS
from cudaenv.core.options import Action, Option, Positional

# command -> why it still builds its parser itself
BUILDS_ITS_PARSER: dict = {}  # (checkpoint declared its actions as Action values too: issue 32's review)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_declares_its_options(name):
    module = importlib.import_module(COMMANDS[name][0])
    if name in BUILDS_ITS_PARSER:
        pytest.skip(BUILDS_ITS_PARSER[name])
    assert not hasattr(module, "add_arguments"), name
    actions = getattr(module, "ACTIONS", None)
    if actions is not None:
        assert isinstance(module.ACTION_DEST, str) and actions
        assert all(isinstance(a, Action) for a in actions)
        declared = [(a.options, a.positional) for a in actions]
    else:
        declared = [(module.OPTIONS, getattr(module, "POSITIONAL", None))]
    for options, positional in declared:
        assert all(isinstance(o, Option) for o in options), name
        positionals = positional if isinstance(positional, tuple) else (positional,)
        assert positional is None or all(isinstance(p, Positional) for p in positionals), name


def _argparse_calls(path):
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("add_argument", "add_parser", "add_subparsers", "add_mutually_exclusive_group")]


def test_no_command_calls_argparse_itself():
    import cudaenv.commands

    folder = Path(cudaenv.commands.__file__).parent
    calls = {p.stem: _argparse_calls(p) for p in sorted(folder.glob("*.py"))}
    found = {stem: lines for stem, lines in calls.items() if lines and stem not in BUILDS_ITS_PARSER}
    assert found == {}


def test_the_argparse_parser_reads_the_declarations(cli):
    r = cli("uninstall", "12", "--repoint", "11.8", "--remove-link")
    assert r.code == 2 and "not allowed with argument" in r.err
    r = cli("verify", "--nproc", "two")
    assert r.code == 2 and "invalid int value" in r.err
    r = cli("torch", "recommend", "--format", "yaml")
    assert r.code == 2 and "invalid choice" in r.err
