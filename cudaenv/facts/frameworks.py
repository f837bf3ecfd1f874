"""The CUDA consumers besides torch (``data/frameworks.json``), asked as questions: which packages to read, how each
one's build says its CUDA, what is a CPU build, which packages conflict, where a package has no GPU by design.

Every function takes an optional ``table`` (the loaded JSON) so tests can pass their own.
"""

from typing import Any, Dict, List, Optional

TABLE = "frameworks"


def _rows(table: Optional[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return [row for row in table["rows"] if row.get("kind") == kind]


def packages(table: Optional[Dict[str, Any]] = None) -> Dict[str, Dict[str, Any]]:
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


LOADER_TABLE = "loader_search"


def _loader(table: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(LOADER_TABLE)
    return table


def cuda_libraries(table: Optional[Dict[str, Any]] = None) -> Dict[str, bool]:
    """CUDA library soname prefix (``libcudart.so.``) -> whether the number after it is the CUDA major."""
    return {row["prefix"]: bool(row.get("major_in_soname")) for row in _loader(table)["rows"] if row.get("kind") == "library"}


def default_dirs(elf_class: int = 64, table: Optional[Dict[str, Any]] = None) -> List[str]:
    """The loader's default folders, last in its search (64-bit: the lib64 ones first)."""
    row = next(r for r in _loader(table)["rows"] if r.get("step") == "default")
    return list(row.get("dirs64") or []) + list(row["dirs"]) if elf_class == 64 else list(row["dirs"])
