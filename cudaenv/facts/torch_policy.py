"""Rules of the torch decision that are not release rows (``data/torch_policy.json``), asked as questions.
(Which CUDA first builds kernels for a GPU is not here: :func:`cudaenv.facts.cuda_arch.gpu_min_cuda`.)

* ``gpu_min_driver("12.0", "linux")`` -> ``("570", "Blackwell")``: no older driver branch runs the GPU at all.
* ``not_rebuilt("torchaudio", "2.11.0", "2.13.0")``: the package is not rebuilt per torch release (never pin a local tag).
* ``local_tag("cpu", "linux-x86_64")``: wheels of that variant carry it as a local tag (``2.7.1+cpu``).
"""

from __future__ import annotations

from cudaenv.core.version import compare_pep440, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional, Tuple

TABLE = "torch_policy"


def _rows(rule: str, table: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return [r for r in table["rows"] if r.get("rule") == rule]


def _family(capability: Optional[str], rule: str, table: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    cc = version_key(capability)
    if not cc:
        return None
    for row in _rows(rule, table):
        if row["cc_major_from"] <= cc[0] <= row["cc_major_to"]:
            return row
    return None


def gpu_min_driver(capability: Optional[str], system: str = "linux", table: Optional[Dict[str, Any]] = None) -> Optional[Tuple[str, str]]:
    row = _family(capability, "gpu_needs_driver", table)
    if not row:
        return None
    return row["windows" if (system or "").startswith("win") else "linux"], row["label"]


def not_rebuilt(package: str, version: Optional[str], torch_version: Optional[str], table: Optional[Dict[str, Any]] = None) -> bool:
    """True when ``package==version`` was built once for an older torch and is reused by ``torch_version``: its
    local-tagged builds exist only for the variants of that older release, so it is never pinned with one."""
    if not version or not torch_version:
        return False
    return any(r["package"] == package and compare_pep440(version, r["from"]) >= 0 and compare_pep440(torch_version, r["from"]) > 0
               for r in _rows("not_rebuilt_per_torch", table))


def local_tag(kind: str, platform: str, table: Optional[Dict[str, Any]] = None) -> bool:
    for row in _rows("local_tag", table):
        if row["kind"] == kind and ("*" in row["platforms"] or platform in row["platforms"]):
            return True
    return False
