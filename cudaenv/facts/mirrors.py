"""The public mirrors of PyTorch's wheel index (``data/torch_mirrors.json``): ``--mirror NAME`` and `torch mirror-check`.

* ``find("nju")`` -> its row (``url`` with ``{variant}``, ``layout`` simple | flat | upstream), or None;
* ``base_of(row)`` -> the index base the install lines and checks use (the URL before ``/{variant}``);
* ``names()`` -> the names, for a usage error.
"""

from typing import Any, Dict, List, Optional

TABLE = "torch_mirrors"
LAYOUTS = ("simple", "flat", "upstream")


def mirror_rows(table: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return list(table["rows"])


def names(table: Optional[Dict[str, Any]] = None) -> List[str]:
    return [r["name"] for r in mirror_rows(table)]


def find(name: str, table: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    wanted = (name or "").strip().lower()
    return next((r for r in mirror_rows(table) if r["name"] == wanted), None)


def base_of(row: Dict[str, Any]) -> str:
    return row["url"].split("/{variant}", 1)[0].rstrip("/")
