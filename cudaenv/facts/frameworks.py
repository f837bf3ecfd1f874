"""The CUDA consumers besides torch (``data/frameworks.json``), asked as questions: which packages to read, how each
one's build says its CUDA, what is a CPU build, which packages conflict, where a package has no GPU by design.

Every function takes an optional ``table`` (the loaded JSON) so tests can pass their own.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional

TABLE = "frameworks"


def _rows(table: Optional[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return [row for row in table["rows"] if row.get("kind") == kind]


def package_rows(table: Optional[Dict[str, Any]] = None) -> Dict[str, Dict[str, Any]]:
    """normalized package name -> its row (``label``, ``role``, ``cuda_major``, ``build_file``, ``cpu_only``, ...)."""
    return {row["package"]: row for row in _rows(table, "package")}


def conflicts(table: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """The ``conflict`` rows: ``packages`` that must not be installed together and the one to ``keep``."""
    return _rows(table, "conflict")


def platform_rules(table: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """The ``platform`` rows: a package with no GPU on ``system`` from ``from_version`` on, and the fix."""
    return _rows(table, "platform")


def sources(table: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return dict(table["sources"])

