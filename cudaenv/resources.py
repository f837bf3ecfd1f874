"""Shipped files: the facts tables in ``data/`` and the shell templates in ``shell/``.

Both are mapped into the wheel as ``cudaenv/data`` and ``cudaenv/shell`` and read through
``importlib.resources``; nothing reads the source tree at run time.
"""

import json
from functools import lru_cache
from typing import Any, Dict, List

try:  # Python 3.9+
    from importlib.resources import files as _files
except ImportError:  # pragma: no cover
    from importlib_resources import files as _files  # type: ignore


class MissingResource(RuntimeError):
    pass


def _resource(folder: str, name: str):
    item = _files("cudaenv").joinpath(folder).joinpath(name)
    if not item.is_file():
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
