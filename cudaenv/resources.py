"""Shipped files: the facts tables in ``data/`` and the shell templates in ``shell/``.

Both are mapped into the wheel as ``cudaenv/data`` and ``cudaenv/shell`` and read as plain files beside this
package (``importlib.resources`` costs about 30 ms to import, with pathlib, zipfile and tempfile: more than
``cudaenv list``'s whole budget; it is used only when the package is not a folder, a zip import). An editable install (``pip install -e .``) has no such copies (hatchling maps
force-included folders only into a built wheel): there the package is a checkout, and the files are read from
the repository's top-level ``data/`` and ``shell/`` beside ``pyproject.toml``.
"""

import os
import sys
from functools import lru_cache

from cudaenv.errors import UserError

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
    top = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
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


@lru_cache(maxsize=None)
def load_table(name: str) -> "Dict[str, Any]":
    """A facts table: ``data/NAME.json`` = {"description", "sources": {key: text}, "rows": [{..., "source": key}]}."""
    import json

    return json.loads(read_data_text(name + ".json"))


def table_rows(name: str) -> "List[Dict[str, Any]]":
    return list(load_table(name)["rows"])
