"""Which distribution family a machine is: the one rule the install tables' rows are picked by.

A row of ``data/driver_install.json`` (the doctor's driver advice, ``cudaenv fix``) or ``data/toolkit_install.json``
(``cudaenv install --plan``, the doctor's toolkit advice) names base distributions in ``when``. A machine is matched
by its :func:`lineage`: its os-release ``ID``, then each ``ID_LIKE`` entry in order (os-release(5): the distributions
it derives from, closest first), or, when ID_LIKE is not known (a report written before cudaenv read it, an
os-release without it), the ``like`` of its row in ``data/distro_like.json``::

    lineage("pop", ()) -> ("pop", "ubuntu", "debian")             # distro_like.json
    lineage("linuxmint", ("debian",)) -> ("linuxmint", "debian")    # LMDE: its own ID_LIKE wins
    pick(rows, lineage("rocky", ())) -> (the row naming "rhel", "rhel")
"""

from __future__ import annotations

from cudaenv.parse.proc import MAX_LIKE

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, Iterable, Optional, Sequence, Tuple

TABLE = "distro_like"


def _table(table: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if table is not None:
        return table
    from cudaenv.core.resources import load_table

    return load_table(TABLE)


def _row(distro_id: str, table: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    return next((r for r in _table(table)["rows"] if r["id"] == distro_id), None)


def lineage(distro_id: Optional[str], like: Sequence[str] = (), table: Optional[Dict[str, Any]] = None) -> Tuple[str, ...]:
    """The IDs a machine is matched by, closest first: ``ID``, then ``ID_LIKE`` (else the table's ``like``)."""
    own = (distro_id or "").strip().lower()
    if not own:
        return ()
    bases = [str(x).strip().lower() for x in like or () if str(x).strip()][:MAX_LIKE]
    if not bases:
        row = _row(own, table)
        bases = list(row["like"]) if row is not None else []
    out = [own]
    out += [b for b in bases if b not in out]
    return tuple(out)


def pick(rows: Iterable[Dict[str, Any]], ids: Sequence[str]) -> Optional[Tuple[Dict[str, Any], str]]:
    """The first row whose ``when`` list names the closest ID of ``ids`` that any row names, with that ID; None when
    no row names any (the caller's ``other`` row)."""
    listed = [r for r in rows if isinstance(r.get("when"), list)]
    for distro in ids:
        for r in listed:
            if distro in r["when"]:
                return r, distro
    return None


def same_release(distro_id: Optional[str], base: str, table: Optional[Dict[str, Any]] = None) -> bool:
    """True when ``distro_id``'s VERSION_ID is ``base``'s release (the distribution itself, or a row with
    ``"version_id": "base"``): only then does the base's repository of that version fit it."""
    own = (distro_id or "").strip().lower()
    if own == base:
        return True
    row = _row(own, table)
    return row is not None and row.get("version_id") == "base"
