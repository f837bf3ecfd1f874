"""The JSON facts tables' compiled copies (issue 35): the wheel carries ``cudaenv/data/NAME.json.marshal`` beside each
``NAME.json`` (hatch_build.py compile_tables), which ``load_table`` reads without a JSON scan where it fits (this
Python's marshal, the text's size), as it reads the line tables' (issue 26)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cudaenv
from cudaenv.core.linetable import compile_table
from cudaenv.core.resources import compiled_table

# the JSON tables `doctor --json --quick` reads on a machine without a GPU, its interpreter without torch
DOCTOR_QUICK_TABLES = ("frameworks", "loader_search", "findings", "torch_variants", "torch_python", "torch_policy",
                       "torch_companions")


def _installed_json_tables():
    data = Path(cudaenv.__file__).resolve().parent / "data"
    names = sorted(p.name for p in data.glob("*.json")) if data.is_dir() else []
    assert names, "the installed package has no data/*.json"
    return data, names


def test_every_installed_json_table_is_read_compiled_and_is_its_text():
    """Each installed JSON table's compiled copy is what ``json.loads`` gives, keys in the same order (the suite runs
    the wheel: an editable install has no copies)."""
    data, names = _installed_json_tables()
    for name in names:
        text = (data / name).read_text(encoding="utf-8")
        assert (data / (name + ".marshal")).is_file(), name
        parsed = json.loads(text)
        if not (isinstance(parsed, dict) and isinstance(parsed.get("rows"), list)):
            assert compiled_table(str(data / name)) is None, name  # no table: load_table never asks for it
            continue
        compiled = compiled_table(str(data / name))
        assert compiled == parsed and json.dumps(compiled) == json.dumps(parsed), name


def test_the_doctors_tables_load_without_json(tmp_path):
    """Counted: loading the tables `doctor --quick` reads imports no json (nor re, which json.decoder imports)."""
    for name in DOCTOR_QUICK_TABLES:
        assert (Path(cudaenv.__file__).resolve().parent / "data" / (name + ".json")).is_file(), name
    probe = ("import sys\nfrom cudaenv.core.resources import load_table\n"
             "rows = sum(len(load_table(n)['rows']) for n in %r)\n"
             "print(rows, 'json' in sys.modules, 're' in sys.modules)\n" % (DOCTOR_QUICK_TABLES,))
    env = {"PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent), "PATH": ""}
    out = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60,
                         cwd=str(tmp_path))  # (not the checkout's folder, whose cudaenv -c would import first)
    assert out.returncode == 0, out.stderr
    rows, has_json, has_re = out.stdout.split()
    assert int(rows) > 0 and has_json == "False" and has_re == "False", out.stdout


def test_a_json_table_compiles_to_its_parse_and_is_used_only_for_its_text(tmp_path):
    """``compile_table`` of a ``.json`` name is ``json.loads``'s dict marshalled; a text of another size is read as
    JSON again (None); a malformed JSON table fails the build."""
    text = '{"description": "d", "sources": {"s": "a page"}, "rows": [{"a": 1.5, "b": [true, null], "source": "s"}]}\n'
    path = tmp_path / "t.json"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "t.json.marshal").write_bytes(compile_table(text, len(text.encode()), "t.json"))
    assert compiled_table(str(path)) == json.loads(text)
    path.write_text(text + " ", encoding="utf-8")  # the text changed after the build
    assert compiled_table(str(path)) is None
    with pytest.raises(ValueError):
        compile_table("{not json", 9, "t.json")
