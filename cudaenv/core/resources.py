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
    from typing import Any, Dict, List, Optional


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


LINES_SUFFIX = ".txt"  # a facts table in the line format (core.linetable); any other table is NAME.json


_TABLES: "Dict[str, Dict[str, Any]]" = {}


def load_table(name: str) -> "Dict[str, Any]":
    """A facts table: {"description", "sources": {key: text}, "rows": [{..., "source": key}]}, from ``data/NAME.txt``
    (the line format, :func:`cudaenv.core.linetable.parse_lines_table`, or the wheel's compiled copy of it,
    :func:`compiled_table`: read without json, whose import of re costs `checkpoint inspect`
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
        table = compiled_table(getattr(lines, "path", None))
        if table is not None:
            return table
        from cudaenv.core.linetable import parse_lines_table  # (only where the wheel's compiled table is not usable)

        return parse_lines_table(lines.read_text(encoding="utf-8"), name + LINES_SUFFIX)
    item = _resource("data", name + ".json")
    table = compiled_table(getattr(item, "path", None))  # the wheel's copy (hatch_build.py): no json scan at run time
    if table is not None:
        return table
    import json

    return json.loads(item.read_text(encoding="utf-8"))


COMPILED_SUFFIX = ".marshal"  # data/NAME.txt (.json) -> cudaenv/data/NAME.txt.marshal (.json.marshal) in the wheel (hatch_build.py)


def compiled_table(path: "Optional[str]") -> "Optional[Dict[str, Any]]":
    """The table the wheel's build compiled from the line table or JSON table at ``path`` (``PATH.marshal``: what
    :func:`cudaenv.core.linetable.parse_lines_table` or ``json.loads`` gave, marshalled; hatch_build.py writes it with
    :func:`cudaenv.core.linetable.compile_table`), or None where it cannot be used: no such file (an editable
    install, a zip import), another Python (marshal's format is an interpreter's own: the first line names the
    major.minor version that wrote it), or a text that is not the size it was compiled from. Read without parsing
    (marshal is built into the interpreter): `checkpoint inspect` reads its tables on every run, and parsing them cost
    a tenth of a `python -c pass` (issue 26)."""
    if path is None:
        return None
    try:
        with open(path + COMPILED_SUFFIX, "rb") as fh:
            blob = fh.read()
        size = os.stat(path).st_size
    except OSError:
        return None
    head, _, body = blob.partition(b"\n")
    if head != b"cudaenv-table 1 %d.%d %d" % (sys.version_info[0], sys.version_info[1], size):
        return None
    import marshal  # (built in, and already loaded by the import system)

    try:
        table = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return None
    return table if isinstance(table, dict) and isinstance(table.get("rows"), list) else None



def table_rows(name: str) -> "List[Dict[str, Any]]":
    return list(load_table(name)["rows"])
