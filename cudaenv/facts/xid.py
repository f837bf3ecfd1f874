"""What each NVIDIA Xid code means and the first step to take: the facts in ``data/xid.json``, asked as questions.

>>> xid_row(79)["name"]
'GPU has fallen off the bus'
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, Optional

TABLE = "xid"
CATALOG = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"  # where an unknown code is looked up


def xid_row(code: int, table: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """The table's row for Xid ``code``; None for a code the table does not hold."""
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return next((row for row in table["rows"] if row["code"] == code), None)
