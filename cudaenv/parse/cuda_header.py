"""The driver API as a toolkit's ``cuda.h`` declares it, read from the C preprocessor's output (``cc -E -P
cuda.h``): the entry points a ``libcuda.so`` stub must export, and the error code such a stub returns.

Sample (preprocessed, so ``cuCtxCreate`` already reads ``cuCtxCreate_v2`` and ``CUDAAPI`` is gone)::

    CUresult cuInit(unsigned int Flags);
    CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
    CUDA_ERROR_STUB_LIBRARY = 34,

Pure and linear in the text; never raises for any input.
"""

from __future__ import annotations

from cudaenv.core.lazy import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional, Tuple

_ENTRY = LazyPattern(r"\bCUresult[ \t\r\n]+(cu[A-Za-z0-9_]{1,100})[ \t\r\n]*\(")
_STUB_ERROR = LazyPattern(r"\bCUDA_ERROR_STUB_LIBRARY[ \t]*=[ \t]*(\d{1,6})\b")
MAX_ENTRIES = 5000  # cuda.h 13.0 declares about 450


def driver_entry_points(text: str) -> Tuple[str, ...]:
    """The ``cu*`` functions returning ``CUresult`` that ``text`` declares, sorted, each once."""
    seen = set()
    for m in _ENTRY.finditer(text if isinstance(text, str) else ""):
        seen.add(m.group(1))
        if len(seen) >= MAX_ENTRIES:
            break
    return tuple(sorted(seen))


def stub_error_code(text: str) -> Optional[int]:
    """``CUDA_ERROR_STUB_LIBRARY``'s value (34 since CUDA 11.1): what every entry point of a stub returns."""
    m = _STUB_ERROR.search(text if isinstance(text, str) else "")
    return int(m.group(1)) if m else None
