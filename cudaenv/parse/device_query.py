"""The CUDA samples' ``deviceQuery`` output -> the driver's CUDA, each device's name, capability and memory.

Sample (cuda-samples ``Samples/1_Utilities/deviceQuery``; older samples print the same lines)::

    Detected 1 CUDA Capable device(s)

    Device 0: "NVIDIA GeForce RTX 3090"
      CUDA Driver Version / Runtime Version          11.4 / 11.4
      CUDA Capability Major/Minor version number:    8.6
      Total amount of global memory:                 24268 MBytes (25447170048 bytes)
      Device PCI Domain ID / Bus ID / location ID:   0 / 1 / 0
    deviceQuery, CUDA Driver = CUDART, CUDA Driver Version = 11.4, CUDA Runtime Version = 11.4, NumDevs = 1
    Result = PASS

and when CUDA does not start::

    cudaGetDeviceCount returned 35
    -> CUDA driver version is insufficient for CUDA runtime version
    Result = FAIL

Pure, never raises, linear in its input.
"""

import re
from typing import Dict, List, NamedTuple, Optional, Tuple

from cudaenv.parse._lines import lines, Text
from cudaenv.model.snapshot import Gpu
from cudaenv.core.version import cc_text, parse_version


_DEVICE = re.compile(r'^Device (\d{1,3}): "([^"]{1,200})"')
_VERSIONS = re.compile(r"^CUDA Driver Version / Runtime Version\s{1,60}(\d{1,3}\.\d{1,3}) / (\d{1,3}\.\d{1,3})")
_CAP = re.compile(r"^CUDA Capability Major/Minor version number:\s{1,60}(\d{1,2}\.\d{1,2})$")
_MEM = re.compile(r"^Total amount of global memory:\s{1,60}(\d{1,9}) MBytes")
_PCI = re.compile(r"^Device PCI Domain ID / Bus ID / location ID:\s{1,60}(\d{1,5}) / (\d{1,3}) / (\d{1,3})$")
_SUMMARY = re.compile(r"CUDA Driver Version = (\d{1,3}\.\d{1,3}), CUDA Runtime Version = (\d{1,3}\.\d{1,3})")
_FAILED = re.compile(r"^cudaGetDeviceCount returned (\d{1,5})$")


class DeviceQuery(NamedTuple):
    driver_cuda: Optional[str]  # "CUDA Driver Version": the newest CUDA the driver runs ("11.4")
    runtime_cuda: Optional[str]  # the CUDA the sample was built with
    gpus: Tuple[Gpu, ...]
    error_code: Optional[int]  # cudaGetDeviceCount's error (35: driver too old, 100: no device), else None
    error: Optional[str]  # the "-> ..." line after it
    passed: Optional[bool]  # Result = PASS / FAIL


def parse_device_query(text: Text) -> Optional[DeviceQuery]:
    """The facts of a deviceQuery output, or None when the text is not one."""
    driver = runtime = error = None
    code: Optional[int] = None
    passed: Optional[bool] = None
    devices: List[Dict[str, object]] = []
    seen = False
    for line in lines(text):
        m = _DEVICE.match(line)
        if m:
            devices.append({"index": int(m.group(1)), "name": m.group(2).strip()})
            seen = True
            continue
        m = _FAILED.match(line)
        if m:
            code, seen = int(m.group(1)), True
            continue
        if code is not None and error is None and line.startswith("->"):
            error = line[2:].strip()[:200] or None
            continue
        if line in ("Result = PASS", "Result = FAIL"):
            passed = line.endswith("PASS")
            continue
        m = _VERSIONS.match(line) or _SUMMARY.search(line)
        if m:
            seen = True
            driver, runtime = driver or parse_version(m.group(1)), runtime or parse_version(m.group(2))
            continue
        if not devices:
            continue
        d = devices[-1]
        m = _CAP.match(line)
        if m:
            d.setdefault("cap", cc_text(m.group(1)))
            continue
        m = _MEM.match(line)
        if m:
            d.setdefault("mem", int(m.group(1)))
            continue
        m = _PCI.match(line)
        if m:
            d.setdefault("bus", "%08X:%02X:%02X.0" % (int(m.group(1)), int(m.group(2)), int(m.group(3))))
    if not seen:
        return None
    gpus = tuple(
        Gpu(index=d["index"], name=d["name"], compute_capability=d.get("cap"), memory_total_mib=d.get("mem"),  # type: ignore[arg-type]
            pci_bus_id=d.get("bus"))  # type: ignore[arg-type]
        for d in devices
    )
    return DeviceQuery(driver, runtime, gpus, code, error, passed)
