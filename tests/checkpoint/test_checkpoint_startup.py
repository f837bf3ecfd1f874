"""What keeps `checkpoint inspect`'s start-up within 2x `python -c pass` (issues 15 and 26; bench/RESULTS.md): its two
tables in the line format (read without json, which imports re) and compiled into the wheel (read without parsing),
the few string tests it did with re and shlex, each checked against the re or shlex reading it replaces, and the
modules it imports, counted."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cudaenv
from cudaenv.checkpoint.advice import _cuda_index
from cudaenv.core.linetable import compile_table, parse_lines_table
from cudaenv.core.resources import compiled_table, load_table
from cudaenv.core.text import shell_quote

SAMPLE = """\
# comment
description: two kinds of rows: with and without a storage
torch_version: 2.13.0
source map: storage.py:562-586 (the map)
source new: storage.py:539-558
columns: storage | dtype | itemsize:int | source | note
DoubleStorage    | float64 | 8 | map | -
-                | bits8   | 1 | new | pickled as bytes, with spaces

UntypedStorage | uint8 | -12 | map | a | b
"""


def test_the_line_format_reads_keys_sources_and_rows():
    with pytest.raises(ValueError, match="line 10: 6 values for 5 columns"):
        parse_lines_table(SAMPLE)
    table = parse_lines_table(SAMPLE.replace(" | a | b", " | -"), "t.txt")
    assert table == {
        "description": "two kinds of rows: with and without a storage",
        "torch_version": "2.13.0",
        "sources": {"map": "storage.py:562-586 (the map)", "new": "storage.py:539-558"},
        "rows": [
            {"storage": "DoubleStorage", "dtype": "float64", "itemsize": 8, "source": "map"},
            {"dtype": "bits8", "itemsize": 1, "source": "new", "note": "pickled as bytes, with spaces"},
            {"storage": "UntypedStorage", "dtype": "uint8", "itemsize": -12, "source": "map"},
        ],
    }
    assert list(table) == ["description", "torch_version", "sources", "rows"]  # a JSON table's order


@pytest.mark.parametrize("text, message", [
    ("columns: a | n:int\nx | 1.5\n", "line 2: n is not an integer"),
    ("columns: a | n:int\nx | \n", "line 2: n is not an integer"),
    ("description: x\n", "no `columns:` line"),
    ("description x\ncolumns: a\n", "line 1: not `KEY: text`"),
    ("columns: a | b\nonly-one\n", "line 2: 1 values for 2 columns"),
])
def test_a_malformed_table_names_its_line(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_lines_table(text, "t.txt")


@given(st.text(max_size=300))
def test_any_text_is_a_table_or_a_value_error(text):
    try:
        table = parse_lines_table(text)
    except ValueError:
        return
    assert set(table) >= {"sources", "rows"} and all(isinstance(r, dict) for r in table["rows"])


def test_the_checkpoint_tables_name_a_source_on_every_row():
    wo = load_table("checkpoint_weights_only")
    dt = load_table("checkpoint_dtypes")
    for table in (wo, dt):
        assert table["rows"] and table["description"]
        used = {r["source"] for r in table["rows"]}
        assert used == set(table["sources"]), table["description"][:40]
    kinds = {}
    for r in wo["rows"]:
        kinds.setdefault(r["kind"], []).append(r)
    assert set(kinds) == {"global", "opcode", "blocked_module", "conditional", "dangerous", "rename_global", "rename_module"}
    # torch's renames (torch/_utils.py IMPORT_MAPPING, NAME_MAPPING) are the stdlib's _compat_pickle ones, fewer
    import _compat_pickle

    renames = kinds["rename_global"] + kinds["rename_module"]
    assert all(("to" in r) == (r["kind"] in ("rename_global", "rename_module")) for r in wo["rows"])
    assert len(kinds["rename_global"]) == 17 and len(kinds["rename_module"]) == 11 and len({r["name"] for r in renames}) == 28
    for r in kinds["rename_global"]:
        assert _compat_pickle.NAME_MAPPING[tuple(r["name"].rsplit(".", 1))] == tuple(r["to"].rsplit(".", 1)), r
    for r in kinds["rename_module"]:
        assert _compat_pickle.IMPORT_MAPPING[r["name"]] == r["to"], r
    assert len(kinds["global"]) == 144 and "the allowlist has 144 entries" in wo["description"]
    codes = [r["code"] for r in kinds["opcode"]]
    assert len(set(codes)) == len(codes) == 34 and all(0 < c < 256 for c in codes)
    assert {r["name"] for r in kinds["opcode"]} >= {"GLOBAL", "REDUCE", "BINPERSID", "MARK", "STOP"}
    assert all(r.get("needs") for r in kinds["conditional"]) and not any("needs" in r for r in kinds["global"])
    assert "<extension registry>" in {r["name"] for r in kinds["dangerous"]}  # a value with a space
    assert {r["storage"]: r["dtype"] for r in dt["rows"] if "storage" in r}["FloatStorage"] == "float32"
    assert all(r["itemsize"] in (1, 2, 4, 8, 16) for r in dt["rows"])
    assert [r["dtype"] for r in dt["rows"] if "storage" not in r][:1] == ["bits16"]  # the newer ones


_CUDA = re.compile(r"^cuda(?::(\d{1,4}))?$")  # what advice tested with before (re, off the path now)


def _regex_index(device):
    m = _CUDA.match(device)
    return None if m is None else int(m.group(1) or 0)


@given(st.one_of(st.text(max_size=12), st.text(alphabet="cuda:0123456789\n \u0662\u096c", max_size=10),
                 st.builds(lambda s: "cuda:" + s, st.text(alphabet="0123456789\n\u0662x", max_size=6))))
def test_the_cuda_index_is_the_regexs(device):
    assert _cuda_index(device) == _regex_index(device)


@pytest.mark.parametrize("device, index", [("cuda", 0), ("cuda:0", 0), ("cuda:12", 12), ("cuda:0012", 12),
                                           ("cuda:2\n", 2), ("cuda:\u0662", 2), ("cuda:12345", None), ("cuda:", None),
                                           ("cuda:2\n\n", None), ("CUDA:1", None), ("cuda:1 ", None), ("mps", None)])
def test_cuda_index_examples(device, index):
    assert _cuda_index(device) == index == _regex_index(device)


@given(st.one_of(st.text(max_size=20), st.text(alphabet="a-_./@%+=:,'\" $é\n", max_size=12)))
def test_shell_quote_is_shlex_quote(word):
    assert shell_quote(word) == shlex.quote(word)


# ---------------------------------------------------------------- the compiled tables (issue 26)
def _compiled_pair(tmp_path, text):
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    raw = path.read_bytes()
    (tmp_path / "t.txt.marshal").write_bytes(compile_table(text, len(raw), "t.txt"))
    return str(path)


def test_a_compiled_table_is_the_parsed_one_and_is_read_only_where_it_fits(tmp_path):
    """The wheel's compiled copy of a line table (hatch_build.py) is read back as the dict the parser gives; a copy
    made by another Python (marshal's format is an interpreter's own), for a text of another size, or damaged, is not
    used (None: load_table parses the text)."""
    text = SAMPLE.replace(" | a | b", " | -")
    path = _compiled_pair(tmp_path, text)
    assert compiled_table(path) == parse_lines_table(text, "t.txt")
    compiled = tmp_path / "t.txt.marshal"
    good = compiled.read_bytes()
    head, _, body = good.partition(b"\n")
    other = b"cudaenv-table 1 %d.%d %d" % (sys.version_info[0], sys.version_info[1] + 1, len(text.encode()))
    for blob in (other + b"\n" + body, head + b"\n" + body[:-7], head + b"\n" + b"\xff" * 40, b"", body, head + b"\n" + body[:1]):
        compiled.write_bytes(blob)
        assert compiled_table(path) is None, blob[:40]
    compiled.write_bytes(good)
    (tmp_path / "t.txt").write_text(text + "x | 1 | map\n", encoding="utf-8")  # the text changed after the build
    assert compiled_table(path) is None
    assert compiled_table(str(tmp_path / "missing.txt")) is None and compiled_table(None) is None
    with pytest.raises(ValueError, match="line 10"):  # a malformed table fails the build, not a user's run
        compile_table(SAMPLE, len(SAMPLE), "t.txt")


def _installed_line_tables():
    data = Path(cudaenv.__file__).resolve().parent / "data"
    names = sorted(p.name for p in data.glob("*.txt")) if data.is_dir() else []
    if not names or not (data / (names[0] + ".marshal")).is_file():
        pytest.skip("not installed from a wheel (an editable install has no compiled tables)")
    return data, names


def test_the_installed_line_tables_are_read_compiled_and_are_the_texts(tmp_path):
    data, names = _installed_line_tables()
    for name in names:
        text = (data / name).read_text(encoding="utf-8")
        assert compiled_table(str(data / name)) == parse_lines_table(text, name), name
    probe = ("import sys\nfrom cudaenv.core.resources import load_table\n"
             "[load_table(n) for n in ('checkpoint_weights_only', 'checkpoint_dtypes')]\n"
             "print('cudaenv.core.linetable' in sys.modules)\n")
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=60)
    assert run.stdout.split() == ["False"], run.stderr  # read without the parser


# What `checkpoint inspect FILE` imports (issue 26: its start-up is at most 2x `python -c pass`, and about 80 us of a
# 10.5 ms `python -c pass` is one module's import). A module added to this path, or a stdlib one, fails here: merge
# it into a module already on the path or import it where it is needed, and measure (bench/run.py --only
# "checkpoint inspect"); change this list only with the figure in bench/RESULTS.md.
INSPECT_MODULES = frozenset("""
cudaenv cudaenv.cli cudaenv.cli.streams cudaenv.commands cudaenv.commands.checkpoint
cudaenv.core cudaenv.core.config cudaenv.core.errors cudaenv.core.i18n cudaenv.core.lazy cudaenv.core.options
cudaenv.core.resources cudaenv.core.text
cudaenv.checkpoint cudaenv.checkpoint.advice cudaenv.checkpoint.analyze cudaenv.checkpoint.careful
cudaenv.checkpoint.container cudaenv.checkpoint.graph cudaenv.checkpoint.names cudaenv.checkpoint.nodes
cudaenv.checkpoint.pickle_vm cudaenv.checkpoint.reading cudaenv.checkpoint.report cudaenv.checkpoint.service
cudaenv.checkpoint.tables cudaenv.checkpoint.zipdir
cudaenv.host cudaenv.host.files cudaenv.host.resolve cudaenv.host.state
cudaenv.model cudaenv.model.record cudaenv.probes cudaenv.probes.nvidia_smi_path
cudaenv.render cudaenv.render.checkpoint cudaenv.render.text cudaenv.render.width
""".split())
INSPECT_STDLIB = frozenset(("__future__", "_struct", "struct", "gc"))  # beyond what the interpreter has loaded


def test_checkpoint_inspect_imports_these_modules_and_no_more(tmp_path):
    """Counted work, not time: the modules `checkpoint inspect` of a small torch zip imports for its text report (the
    bench target), in a child interpreter; each new one would cost its import on every run."""
    _installed_line_tables()  # (an editable install parses its tables: cudaenv.core.linetable on the path too)
    from checkpoint_builders import cnn, torch_zip

    path = tmp_path / "small.pt"
    path.write_bytes(torch_zip(cnn(location="cuda:2", prefix="module.")))
    probe = ("import sys\nbefore = set(sys.modules)\nfrom cudaenv.cli import main\ncode = main(['checkpoint', 'inspect', %r])\n"
             "sys.stderr.write('LOADED ' + ' '.join(sorted(set(sys.modules) - before)) + '\\n')\nsys.exit(code)\n" % str(path))
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=60)
    assert run.returncode == 1, run.stderr  # saved on cuda:2, and no GPU visible here: exit 1, with the fix command
    assert "--strip-prefix module." in " ".join(run.stdout.split()), run.stdout
    loaded = set(run.stderr.rsplit("LOADED", 1)[1].split())
    mine = {m for m in loaded if m.split(".")[0] == "cudaenv"}
    assert sorted(mine - INSPECT_MODULES) == [], "new on inspect's path"
    assert sorted(INSPECT_MODULES - mine) == [], "no longer on the path: take it off INSPECT_MODULES"
    assert sorted(loaded - mine - INSPECT_STDLIB) == [], "stdlib modules new on the path"


def test_the_fast_loops_table_marks_exactly_its_opcodes():
    """pickle_vm.FAST is built with one store per fast opcode (testing all 256 bytes against the tuple cost 0.1 ms of
    inspect's start-up): still 1 for exactly those."""
    from cudaenv.checkpoint import pickle_vm

    assert pickle_vm.FAST == bytes(1 if op in pickle_vm._FAST_OPS else 0 for op in range(256))
    assert sum(pickle_vm.FAST) == len(set(pickle_vm._FAST_OPS)) == len(pickle_vm._FAST_OPS)
