"""Which CUDA first builds for which GPU: ``data/cuda_arch.json`` (one row per compute capability), asked as questions.

* ``first_nvcc("12.1")`` -> ``("12.9", "Blackwell (GB10, DGX Spark)")``: the first CUDA whose nvcc compiles for that
  exact architecture (``sm_121``); an older nvcc stops with "Unsupported gpu architecture 'compute_121'".
* ``gpu_min_cuda("12.1")`` -> ``("12.8", "Blackwell (GB10, DGX Spark)")``: the first CUDA whose builds can carry
  kernels that run on the GPU. A cubin runs on later minors of its major (:func:`cudaenv.facts.torch.gpu_runs`, the
  one home of that rule), so the ``sm_120`` of a CUDA 12.8 build runs on a 12.1 GPU although 12.8's nvcc cannot
  target ``sm_121``; a 11.0 GPU (Thor under CUDA 13) has no older major-11 row, so it needs 13.0.

Both answers come from the same rows; the torch decision asks :func:`gpu_min_cuda`, explain's nvcc checks ask
:func:`first_nvcc`. Every function takes an optional ``table`` (the loaded JSON) so tests can pass their own.
"""

from __future__ import annotations

from cudaenv.core.version import cc_tuple, compare_versions, sm_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional, Tuple

TABLE = "cuda_arch"


def _rows(table: Optional[Dict[str, Any]]) -> List[Dict[str, Any]]:
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table(TABLE)
    return list(table["rows"])


def first_nvcc(capability: Any, table: Optional[Dict[str, Any]] = None) -> Optional[Tuple[str, str]]:
    """(first CUDA whose nvcc compiles for exactly ``capability``, its GPU family), or None when no row knows it."""
    cc = cc_tuple(capability)
    if cc is None:
        return None
    for row in _rows(table):
        if cc_tuple(row["cc"]) == cc:
            return row["cuda_from"], row["label"]
    return None


def gpu_min_cuda(capability: Any, table: Optional[Dict[str, Any]] = None) -> Optional[Tuple[str, str]]:
    """(the first CUDA whose builds have kernels that run on ``capability``, the GPU's family), or None when no row
    compiles for it: the oldest ``cuda_from`` among the rows whose cubin runs on the GPU."""
    from cudaenv.facts.torch import gpu_runs

    cc = cc_tuple(capability)
    if cc is None:
        return None
    best: Optional[Tuple[str, str]] = None
    own = first_nvcc(cc, table)
    for row in _rows(table):
        arch = sm_name(row["cc"])
        if arch and gpu_runs([arch], cc) is not None and (best is None or compare_versions(row["cuda_from"], best[0]) < 0):
            best = (row["cuda_from"], row["label"])
    if best is None:
        return None
    return best[0], own[1] if own else best[1]
