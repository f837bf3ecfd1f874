"""What keeps `checkpoint inspect`'s start-up within 2x `python -c pass` (issue 15; bench/RESULTS.md, 2026-12-03):
its two tables in the line format (read without json, which imports re), and the few string tests it did with re
and shlex, each checked against the re or shlex reading it replaces."""

import re
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudaenv.checkpoint.advice import _cuda_index
from cudaenv.core.resources import load_table, parse_lines_table
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
