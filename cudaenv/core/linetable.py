"""The line format of the facts tables (``data/README.md``): its one parser, and the compiled form the wheel carries.

Nothing of cudaenv is imported here: hatch_build.py loads this file by its path where the wheel is built (the package
is not installed there) to compile each ``data/NAME.txt`` into ``cudaenv/data/NAME.txt.marshal``, which
:func:`cudaenv.core.resources.compiled_table` reads instead of parsing the text (issue 26: `checkpoint inspect` reads
its two tables on every run). Where that file is missing or was written by another Python, the text is parsed here.
"""

import marshal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List


def parse_lines_table(text: str, name: str = "table") -> "Dict[str, Any]":
    """A facts table in the line format (``data/README.md``), as the dict a JSON table gives::

        # a comment
        description: what the table says
        torch_version: 2.13.0
        source map: torch 2.13.0+cpu wheel, site-packages/torch/storage.py:562-586
        columns: storage | dtype | itemsize:int | source
        DoubleStorage | float64 | 8 | map
        - | bits8 | 1 | new

    ``KEY: text`` lines before ``columns:`` are the table's own keys (``source KEY: text`` its sources); each line
    after it is a row, its values split at ``|`` (spaces around one are not part of it) in the order of the columns
    (``:int`` ones read as integers), ``-`` for a column the row has no value in. A malformed line is a broken
    install: ValueError naming it.
    """
    table: Dict[str, Any] = {}
    sources: Dict[str, str] = {}
    rows: List[Dict[str, Any]] = []
    columns = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if columns is None:
            key, sep, value = line.partition(": ")
            if not sep or not key:
                raise ValueError("%s line %d: not `KEY: text`: %r" % (name, number, line))
            if key == "columns":
                columns = [(c.strip().partition(":")[0], c.strip().partition(":")[2] == "int") for c in value.split("|")]
                names = [c for c, _ in columns]
                ints = [i for i, (_, is_int) in enumerate(columns) if is_int]
            elif key.startswith("source "):
                sources[key[len("source "):]] = value
            else:
                table[key] = value
            continue
        values = [v.strip() for v in line.split("|")]
        if len(values) != len(columns):
            raise ValueError("%s line %d: %d values for %d columns: %r" % (name, number, len(values), len(columns), line))
        for i in ints:  # (the few integer columns, by place: a row is one dict comprehension, read on inspect's start)
            value = values[i]
            if value != "-":
                if not (value.isdigit() or value[:1] == "-" and value[1:].isdigit()):
                    raise ValueError("%s line %d: %s is not an integer: %r" % (name, number, columns[i][0], line))
                values[i] = int(value)
        rows.append({column: value for column, value in zip(names, values) if value != "-"})
    if columns is None:
        raise ValueError("%s: no `columns:` line" % name)
    table["sources"] = sources
    table["rows"] = rows
    return table


def compile_table(text: str, size: int, name: str = "table") -> bytes:
    """The compiled form of a line table, or of a JSON table where ``name`` ends in ``.json`` (``text``, ``size``
    bytes in its file): a first line that names the format,
    this Python's major.minor version (marshal's format is an interpreter's own) and the text's size, then
    :func:`parse_lines_table`'s dict, marshalled. :func:`cudaenv.core.resources.compiled_table` reads it back only when
    all three match; a malformed table raises here, at build time."""
    table = json_loads(text) if name.endswith(".json") else parse_lines_table(text, name)
    return b"cudaenv-table 1 %d.%d %d\n" % (sys.version_info[0], sys.version_info[1], size) + marshal.dumps(table)


def json_loads(text: str):
    """A JSON table (``data/NAME.json``, compiled by :func:`compile_table` when its name ends in ``.json``)."""
    import json

    return json.loads(text)
