"""Before an install: would the toolkit's programs run on this machine's driver? (the doctor's driver tables)"""

from __future__ import annotations

from typing import List

from cudaenv.version import compare_versions, major_minor


def driver_warnings(driver_version, release: str) -> List[str]:
    """Pure: the warning for a driver older than ``release``'s minimum (none without a driver: a container build)."""
    from cudaenv.facts.drivers import max_cuda_for_driver, min_driver_for_cuda

    if not driver_version:
        return []
    need = min_driver_for_cuda(major_minor(release))
    if need is None or compare_versions(driver_version, need) >= 0:
        return []
    best = max_cuda_for_driver(driver_version)
    instead = (" (CUDA %s runs on it: `cudaenv install %s --plan` or `--runfile FILE`)" % (best, best)) if best else ""
    return ["driver %s is older than %s, which programs built by CUDA %s need: they will compile here but not run; "
            "upgrade the driver, or install a CUDA this driver runs%s" % (driver_version, need, major_minor(release), instead)]


def machine_warnings(host, release: str) -> List[str]:
    from cudaenv.probes.nvidia import probe_nvidia

    notes: list = []
    try:
        state = probe_nvidia(host, notes)
    except Exception:  # noqa: BLE001 - the check is advice; it never stops an install
        return []
    driver = state.driver.version if state.driver is not None else None
    return driver_warnings(driver, release)
