"""The JSON that ``cudaenv/_child/nvml_probe.py`` prints (its last line) -> :class:`NvmlResult`.

Success::

    {"ok": true, "driver_version": "550.54.15", "cuda_driver_version": 12040,
     "devices": [{"index": 0, "name": "NVIDIA A10G", "uuid": "GPU-...", "pci_bus_id": "00000000:00:1E.0",
                  "memory_total": 24146608128, "memory_used": 9145679872, "compute_capability": "8.6",
                  "mig_uuids": []}],
     "device_errors": [{"index": 1, "error_name": "NVML_ERROR_GPU_IS_LOST", "message": "GPU is lost"}]}

Failure: ``{"ok": false, "stage": "init", "error_code": 18, "error_name": "...", "message": "..."}``.
Anything else (a crash's text, deep nesting, huge numbers) is a failure result, never an exception.
"""

from __future__ import annotations

import json

from cudaenv.core.tuples import named_tuple
from cudaenv.parse._lines import as_text
from cudaenv.parse.nvidia_smi import capability
from cudaenv.model.snapshot import Gpu
from cudaenv.core.version import cuda_from_int

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple, Union

MAX_JSON = 4 * 1024 * 1024


@named_tuple
class NvmlResult:
    ok: bool
    driver_version: Optional[str] = None
    cuda_version: Optional[str] = None
    gpus: Tuple[Gpu, ...] = ()
    error_code: Optional[int] = None
    error_name: Optional[str] = None
    message: Optional[str] = None
    stage: Optional[str] = None
    device_errors: Tuple[str, ...] = ()  # "GPU 1: GPU is lost (NVML_ERROR_GPU_IS_LOST)"


def cuda_version_from_int(value: Optional[int]) -> Optional[str]:
    """NVML/CUDA's integer version: 12040 -> "12.4", 13000 -> "13.0" (an int only; decoded by cudaenv.core.version)."""
    if not isinstance(value, int):
        return None
    return cuda_from_int(value)


def _str(value, limit: int = 200) -> Optional[str]:
    return (value.strip()[:limit] or None) if isinstance(value, str) else None


def _int(value) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mib(value) -> Optional[int]:
    v = _int(value)
    return v // (1024 * 1024) if v is not None and v >= 0 else None


def parse_nvml_output(text: Union[str, bytes, None]) -> NvmlResult:
    """The child's JSON (its last non-blank line); anything else is a failure, never an exception."""
    body = as_text(text)[-MAX_JSON:].strip()
    last = body.splitlines()[-1] if body else ""
    try:
        data = json.loads(last)
    except (ValueError, RecursionError):
        return NvmlResult(False, message="the NVML probe printed no JSON", stage="output")
    if not isinstance(data, dict):
        return NvmlResult(False, message="the NVML probe printed no JSON object", stage="output")
    if not data.get("ok"):
        return NvmlResult(
            False,
            error_code=_int(data.get("error_code")),
            error_name=_str(data.get("error_name")),
            message=_str(data.get("message"), 1000),
            stage=_str(data.get("stage")),
        )
    gpus: List[Gpu] = []
    devices = data.get("devices")
    for dev in devices if isinstance(devices, list) else []:
        if not isinstance(dev, dict) or _int(dev.get("index")) is None:
            continue
        migs = dev.get("mig_uuids")
        gpus.append(
            Gpu(
                index=dev["index"],
                name=_str(dev.get("name")),
                uuid=_str(dev.get("uuid")),
                pci_bus_id=_str(dev.get("pci_bus_id")),
                memory_total_mib=_mib(dev.get("memory_total")),
                memory_used_mib=_mib(dev.get("memory_used")),
                compute_capability=capability(_str(dev.get("compute_capability"))),
                mig_uuids=tuple(u[:200] for u in migs if isinstance(u, str)) if isinstance(migs, list) else (),
            )
        )
    errors = data.get("device_errors")
    device_errors = tuple(
        "GPU %d: %s%s" % (e["index"], _str(e.get("message")) or "error", " (%s)" % _str(e["error_name"]) if _str(e.get("error_name")) else "")
        for e in (errors if isinstance(errors, list) else [])
        if isinstance(e, dict) and _int(e.get("index")) is not None
    )
    return NvmlResult(
        True,
        driver_version=_str(data.get("driver_version")),
        cuda_version=cuda_version_from_int(_int(data.get("cuda_driver_version"))),
        gpus=tuple(gpus),
        device_errors=device_errors,
    )
