"""Which NVIDIA driver runs which CUDA: the facts in ``data/cuda_drivers.json``, asked as questions.

Two tables (sources in the JSON):

* ``minimum``: the lowest driver that runs a CUDA X.Y *runtime* (a torch wheel, a conda cudatoolkit)
  through minor-version compatibility. ``min_driver_for_cuda("12.8", "linux") == "525.60.13"``.
* ``bundled``: the driver each toolkit release ships. Code that nvcc of that toolkit built with PTX needs
  it to JIT that PTX (minor-version compatibility cannot JIT newer PTX).
  ``toolkit_driver("12.4", "linux") == "550.54.14"``.

``system`` is ``linux`` or ``windows`` (WSL2 reports the Windows driver: ask with ``windows``).
Every function takes an optional ``table`` (the loaded JSON) so that callers and tests can pass their own.
"""

from __future__ import annotations

from cudaenv.core.version import compare_versions, major_minor, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional, Tuple

TABLE = "cuda_drivers"


def _table(table: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if table is not None:
        return table
    from cudaenv.core.resources import load_table

    return load_table(TABLE)


def _column(system: str) -> str:
    return "windows" if (system or "").lower().startswith("win") else "linux"


def _rows(table: Optional[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    return [r for r in _table(table)["rows"] if r.get("table") == kind]


def _covers(row: Dict[str, Any], cuda: Tuple[int, int]) -> bool:
    lo = version_key(row["cuda_from"])[:2]
    hi = version_key(row["cuda_to"])
    if cuda < tuple(lo):
        return False
    if len(hi) == 1:  # up to and including every minor of that major
        return cuda[0] <= hi[0]
    return cuda <= tuple(hi[:2])


def min_driver_for_cuda(cuda: Optional[str], system: str = "linux", table: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """The lowest driver that runs a CUDA ``cuda`` runtime (minor-version compatibility); None when unknown.

    A CUDA newer than every row (``14.0`` when the table stops at 13.x) needs at least the newest known
    minimum, never "any driver": :func:`beyond_tables` tells the caller to add a note.
    """
    mm = version_key(major_minor(cuda))
    if not mm:
        return None
    rows = _rows(table, "minimum")
    for row in rows:
        if _covers(row, (mm[0], mm[1])):
            return row.get(_column(system))
    if beyond_tables(cuda, table):
        newest = max(rows, key=lambda r: version_key(r["cuda_from"]))
        return newest.get(_column(system))
    return None


def beyond_tables(cuda: Optional[str], table: Optional[Dict[str, Any]] = None) -> bool:
    """True when CUDA ``cuda`` is newer than every CUDA the minimum-driver table knows (its minimum is a floor)."""
    mm = version_key(major_minor(cuda))
    rows = _rows(table, "minimum")
    if not mm or not rows:
        return False
    return not any(_covers(r, (mm[0], mm[1])) for r in rows) and all(
        tuple(mm[:2]) > tuple(version_key(r["cuda_from"])[:2]) for r in rows)


def known_cuda_versions(table: Optional[Dict[str, Any]] = None) -> List[str]:
    """Every toolkit major.minor the bundled table knows, oldest first."""
    seen = {major_minor(r["toolkit"]) for r in _rows(table, "bundled")}
    return sorted((v for v in seen if v), key=version_key)


def max_cuda_for_driver(driver: Optional[str], system: str = "linux", table: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """The highest CUDA major.minor a runtime may have and still run on ``driver`` (minor-version compatibility).

    A family row (``12.x``) counts up to the newest 12 minor the tables know: 535.x -> ``"12.9"``.
    None when the driver is older than every row or not a version.
    """
    if not version_key(driver):
        return None
    col = _column(system)
    known = known_cuda_versions(table)
    best: Optional[str] = None
    for row in _rows(table, "minimum"):
        minimum = row.get(col)
        if not minimum or compare_versions(driver, minimum) < 0:
            continue
        hi = version_key(row["cuda_to"])
        if len(hi) == 1:
            in_major = [v for v in known if version_key(v)[0] == hi[0]]
            top = in_major[-1] if in_major else "%d.0" % hi[0]
        else:
            top = "%d.%d" % hi[:2]
        if best is None or compare_versions(top, best) > 0:
            best = top
    return best


def toolkit_driver(toolkit_version: Optional[str], system: str = "linux", table: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """The driver bundled with that toolkit release (what its nvcc-built PTX needs); None when unknown or not bundled.

    An exact release (``"12.4.1"``) gives its own row; otherwise the GA release of that major.minor
    (``"12.4"``, or nvcc's ``"12.4.131"``) gives the lowest driver of that minor.
    """
    col = _column(system)
    rows = _rows(table, "bundled")
    for row in rows:
        if compare_versions(row["toolkit"], toolkit_version) == 0 and len(version_key(toolkit_version)) >= 3:
            return row.get(col)
    mm = major_minor(toolkit_version)
    if mm is None:
        return None
    same = [r for r in rows if major_minor(r["toolkit"]) == mm]
    same.sort(key=lambda r: version_key(r["toolkit"]))
    return same[0].get(col) if same else None


def native_cuda_for_driver(driver: Optional[str], system: str = "linux", table: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """The newest toolkit major.minor whose bundled driver ``driver`` reaches (what nvidia-smi's "CUDA Version" says)."""
    if not version_key(driver):
        return None
    best: Optional[str] = None
    for mm in known_cuda_versions(table):
        needed = toolkit_driver(mm, system, table)
        if needed and compare_versions(driver, needed) >= 0:
            best = mm
    return best


def minor_compat_only(driver: Optional[str], cuda: Optional[str], system: str = "linux",
                      table: Optional[Dict[str, Any]] = None) -> bool:
    """True when ``driver`` runs a CUDA ``cuda`` runtime only through minor-version compatibility: at or above the
    CUDA major's minimum but below the driver that toolkit release bundles (PTX newer than the driver cannot be
    JIT-compiled). False when it runs natively, or when the driver, the minimum or the bundled driver is unknown
    (Windows 13.x bundles none). The one answer for the doctor's ``driver-minor-compat`` and recommend's choice."""
    if not version_key(driver) or not version_key(cuda):
        return False
    minimum = min_driver_for_cuda(cuda, system, table)
    bundled = toolkit_driver(cuda, system, table)
    if not bundled or (minimum and compare_versions(driver, minimum) < 0):
        return False
    return compare_versions(driver, bundled) < 0


def sources(table: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    return dict(_table(table)["sources"])


def cudnn_fits_cuda(cudnn_major: Optional[int], cuda: Optional[str], table: Optional[Dict[str, Any]] = None) -> Optional[bool]:
    """True when NVIDIA builds cuDNN ``cudnn_major`` for CUDA ``cuda``, False when not, None when the table does not know."""
    mm = version_key(major_minor(cuda))
    if cudnn_major is None or not mm:
        return None
    rows = [r for r in _rows(table, "cudnn") if r.get("cudnn_major") == cudnn_major]
    if not rows:
        return None
    return any(_covers(r, (mm[0], mm[1])) for r in rows)


def cudnn_majors_for_cuda(cuda: Optional[str], table: Optional[Dict[str, Any]] = None) -> List[int]:
    """The cuDNN majors NVIDIA builds for CUDA ``cuda``, newest first (empty when the table does not know)."""
    mm = version_key(major_minor(cuda))
    if not mm:
        return []
    return sorted({r["cudnn_major"] for r in _rows(table, "cudnn") if isinstance(r.get("cudnn_major"), int)
                   and _covers(r, (mm[0], mm[1]))}, reverse=True)
