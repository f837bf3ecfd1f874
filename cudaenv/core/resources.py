"""Shipped files: the facts tables in ``data/`` and the shell templates in ``shell/``.

Both are mapped into the wheel as ``cudaenv/data`` and ``cudaenv/shell`` and read as plain files beside this
package (``importlib.resources`` costs about 30 ms to import, with pathlib, zipfile and tempfile: more than
``cudaenv list``'s whole budget; it is used only when the package is not a folder, a zip import). An editable install (``pip install -e .``) has no such copies (hatchling maps
force-included folders only into a built wheel): there the package is a checkout, and the files are read from
the repository's top-level ``data/`` and ``shell/`` beside ``pyproject.toml``.
"""

import os
import sys

from cudaenv.core.errors import UserError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List


class _Folder:
    """A folder on disk, with the three methods of ``importlib.resources``' Traversable this module uses."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path

    def joinpath(self, name: str) -> "_Folder":
        return _Folder(os.path.join(self.path, name))

    def is_file(self) -> bool:
        return os.path.isfile(self.path)

    def read_text(self, encoding: str = "utf-8") -> str:
        with open(self.path, encoding=encoding) as fh:
            return fh.read()


def _files(package: str):
    """The package's files: its folder when it is one (always, but for a zip import), else importlib.resources'."""
    folder = os.path.dirname(os.path.abspath(sys.modules[package].__file__ or ""))
    if os.path.isdir(folder):
        return _Folder(folder)
    try:  # Python 3.9+
        from importlib.resources import files
    except ImportError:  # pragma: no cover
        from importlib_resources import files  # type: ignore
    return files(package)


class MissingResource(UserError):
    """A file of the package itself is missing: a broken install, said in one line (exit 2), never a traceback."""


def _checkout_file(folder: str, name: str):
    """FOLDER/NAME of the repository when this package is imported from a checkout (an editable install)."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    item = _Folder(os.path.join(top, folder, name))
    return item if os.path.isfile(os.path.join(top, "pyproject.toml")) and item.is_file() else None


def _resource(folder: str, name: str):
    item = _files("cudaenv").joinpath(folder).joinpath(name)
    if not item.is_file():
        item = _checkout_file(folder, name)
    if item is None:
        raise MissingResource(
            "cudaenv is installed without its %s/%s file; reinstall it with `pip install --force-reinstall cudaenv`" % (folder, name)
        )
    return item


def read_data_text(name: str) -> str:
    return _resource("data", name).read_text(encoding="utf-8")


def read_shell_template(name: str) -> str:
    return _resource("shell", name).read_text(encoding="utf-8")


LINES_SUFFIX = ".txt"  # a facts table in the line format (parse_lines_table); any other table is NAME.json


_TABLES: "Dict[str, Dict[str, Any]]" = {}


def load_table(name: str) -> "Dict[str, Any]":
    """A facts table: {"description", "sources": {key: text}, "rows": [{..., "source": key}]}, from ``data/NAME.txt``
    (the line format, :func:`parse_lines_table`: read without json, whose import of re costs `checkpoint inspect`
    more than half its start-up budget) when there is one, else ``data/NAME.json``. Read once per process (a dict,
    not functools.lru_cache: functools and collections are not on inspect's path either)."""
    table = _TABLES.get(name)
    if table is None:
        table = _TABLES[name] = _read_table(name)
    return table


load_table.cache_clear = _TABLES.clear  # type: ignore[attr-defined]  # as lru_cache's, for the tests


def _read_table(name: str) -> "Dict[str, Any]":
    lines = _files("cudaenv").joinpath("data").joinpath(name + LINES_SUFFIX)
    if not lines.is_file():
        lines = _checkout_file("data", name + LINES_SUFFIX)
    if lines is not None:
        return parse_lines_table(lines.read_text(encoding="utf-8"), name + LINES_SUFFIX)
    import json

    return json.loads(read_data_text(name + ".json"))


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


def table_rows(name: str) -> "List[Dict[str, Any]]":
    return list(load_table(name)["rows"])
