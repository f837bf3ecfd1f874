"""Every facts table in data/ has the shape data/README.md describes: a description, its sources, and rows that each
name one of those sources (a `.json` table and a line-format `.txt` table read the same through load_table)."""

import pytest

from builders import REPO
from cudaenv.core.resources import LINES_SUFFIX, load_table

DATA = REPO / "data"
TABLES = sorted(p.name.rsplit(".", 1)[0] for p in DATA.iterdir() if p.name.endswith((".json", LINES_SUFFIX)))


def test_the_tables_are_found():
    assert len(TABLES) >= 15 and {"cuda_drivers", "checkpoint_dtypes"} <= set(TABLES)
    assert (DATA / ("checkpoint_dtypes" + LINES_SUFFIX)).is_file()


@pytest.mark.parametrize("name", TABLES)
def test_every_row_names_one_of_its_tables_sources(name):
    table = load_table(name)
    assert isinstance(table.get("description"), str) and table["description"].strip(), name
    sources, rows = table.get("sources"), table.get("rows")
    assert isinstance(sources, dict) and sources and all(isinstance(v, str) and v.strip() for v in sources.values()), name
    assert isinstance(rows, list) and rows, name
    for row in rows:
        assert row.get("source") in sources, (name, row)
        assert row.get("confirmed", True) in (True, False), (name, row)  # `"confirmed": false` marks an unconfirmed row
