"""Shipped files: the facts tables in ``data/`` and the shell templates in ``shell/``.

Both are mapped into the wheel as ``cudaenv/data`` and ``cudaenv/shell`` and read through
``importlib.resources``. An editable install (``pip install -e .``) has no such copies (hatchling maps
force-included folders only into a built wheel): there the package is a checkout, and the files are read from
the repository's top-level ``data/`` and ``shell/`` beside ``pyproject.toml``.
"""

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List

from cudaenv.errors import UserError

try:  # Python 3.9+
    from importlib.resources import files as _files
except ImportError:  # pragma: no cover
    from importlib_resources import files as _files  # type: ignore


class MissingResource(UserError):
    """A file of the package itself is missing: a broken install, said in one line (exit 2), never a traceback."""


def _checkout_file(folder: str, name: str):
    """FOLDER/NAME of the repository when this package is imported from a checkout (an editable install)."""
    top = Path(__file__).resolve().parent.parent
    item = top / folder / name
    return item if (top / "pyproject.toml").is_file() and item.is_file() else None


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
def load_table(name: str) -> Dict[str, Any]:
    """A facts table: ``data/NAME.json`` = {"description", "sources": {key: text}, "rows": [{..., "source": key}]}."""
    return json.loads(read_data_text(name + ".json"))


def table_rows(name: str) -> List[Dict[str, Any]]:
    return list(load_table(name)["rows"])
