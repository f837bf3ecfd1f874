"""What each doctor finding is, for every part of cudaenv that handles one (``data/findings.json``).

One row per finding id: its doctor section, the severities its rule may give, the checklist row that shows it,
whether ``cudaenv fix`` repairs it (``fixable``) and looks for it again after the install (``after_fix``), whether a
paste can show it (``pasteable``), and who applies its fix (``fix_kind``: one of :data:`FIX_KINDS`). diagnose takes a finding's section from here, ``fix`` its fixable set, ``pasted``
the pasteable set, verify reads the section on the finding, and the doctor's view (:mod:`cudaenv.diagnose.view`) the checklist's rows.

>>> section_of("no-driver"), is_fixable("torch-cpu-only"), dict(checklist())["cuda link"]
('driver', True, ('cuda-link-dangling', 'cuda-link-not-active'))
"""

from __future__ import annotations

from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, Optional, Tuple

TABLE = "findings"
# who applies a finding's fix: the user in this shell, an administrator or the host, a reboot, the user's program
FIX_KINDS = ("command", "host", "reboot", "user-code")


@lru_cache(maxsize=1)
def _by_id() -> Dict[str, Dict[str, Any]]:
    from cudaenv.core.resources import load_table

    return {row["id"]: row for row in load_table(TABLE)["rows"]}


def finding_ids() -> Tuple[str, ...]:
    """Every doctor finding id, in the table's order (the doctor's sections in the expert's order)."""
    return tuple(_by_id())


def section_of(finding_id: str, default: Optional[str] = None) -> Optional[str]:
    """The doctor section of ``finding_id`` (``driver``), or ``default`` for an id the table does not have."""
    row = _by_id().get(finding_id)
    return row["section"] if row is not None else default


def is_fixable(finding_id: str) -> bool:
    """``cudaenv fix`` installs the torch build that repairs it."""
    return bool(_by_id().get(finding_id, {}).get("fixable"))


def fix_kind(finding_id: str) -> Optional[str]:
    """Who applies the fix of ``finding_id`` (one of :data:`FIX_KINDS`), or None for an id the table does not have."""
    row = _by_id().get(finding_id)
    return row.get("fix_kind") if row is not None else None


def ids_where(field: str) -> Tuple[str, ...]:
    """The ids whose ``field`` (``fixable``, ``after_fix``, ``pasteable``) is true, in the table's order."""
    return tuple(i for i, row in _by_id().items() if row.get(field) is True)


def checklist() -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """(row, the finding ids it shows) for each row of the doctor's checklist (``torch + driver``, ``cuda link``)."""
    rows: Dict[str, Tuple[str, ...]] = {}
    for finding_id, row in _by_id().items():
        if row.get("checklist"):
            rows[row["checklist"]] = rows.get(row["checklist"], ()) + (finding_id,)
    return tuple(rows.items())
