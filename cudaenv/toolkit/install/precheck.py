"""Before an install: would the toolkit's programs run on this machine's driver and GPUs? (the doctor's driver tables;
pure: the machine is read by :func:`cudaenv.toolkit.install.service.machine_check`)"""

from __future__ import annotations

from typing import List, Optional, Tuple

from cudaenv.core.version import compare_versions, major_minor
from cudaenv.core.i18n import M


def driver_warnings(driver_version, release: str) -> List[str]:
    """Pure: the warning for a driver older than ``release``'s minimum (none without a driver: a container build)."""
    from cudaenv.facts.drivers import max_cuda_for_driver, min_driver_for_cuda

    if not driver_version:
        return []
    need = min_driver_for_cuda(major_minor(release))
    if need is None or compare_versions(driver_version, need) >= 0:
        return []
    best = max_cuda_for_driver(driver_version)
    instead = M(" (CUDA %s runs on it: `cudaenv install %s --plan` or `--runfile FILE`)", best, best) if best else ""
    return [M("driver %s is older than %s, which programs built by CUDA %s need: they will compile here but not run; "
              "upgrade the driver, or install a CUDA this driver runs%s", driver_version, need, major_minor(release), instead)]


def oldest_cc(release: str, table=None):
    """The oldest compute capability CUDA ``release``'s nvcc builds for (``data/toolkit_install.json``), or None."""
    from cudaenv.toolkit.install.repos import _table
    from cudaenv.core.version import version_key

    want = version_key(release)[:2]
    for row in _table(table)["rows"]:
        if row["when"] != "nvcc_arch":
            continue
        lo, hi = version_key(row["cuda_from"])[:2], version_key(row["cuda_to"])
        if want >= lo and (want[0] <= hi[0] if len(hi) == 1 else want <= hi[:2]):
            return row["oldest_cc"]
    return None


def gpu_warnings(gpus, release: str, table=None) -> List[str]:
    """Pure: a warning per GPU that CUDA ``release`` cannot build for (older than its oldest architecture)."""
    from cudaenv.core.version import cc_tuple, sm_name

    oldest = oldest_cc(release, table)
    if oldest is None:
        return []
    out = []
    for gpu in gpus:
        cc = cc_tuple(gpu.compute_capability)
        if cc and cc < cc_tuple(oldest):
            out.append(M("GPU %d (%s, %s): CUDA %s builds nothing for it (its oldest target is %s); CUDA 12.x still does: "
                         "`cudaenv install 12.9 --runfile FILE` or `--plan`",
                         gpu.index, gpu.name or "?", sm_name(gpu.compute_capability), major_minor(release), sm_name(oldest)))
    return out


def nvcc_compiles_for(release: Optional[str], cc: Tuple[int, int]) -> Optional[bool]:
    """Whether the nvcc of CUDA ``release`` compiles for compute capability ``cc``: it is at least the first CUDA
    that knows ``cc`` (``data/cuda_arch.json``) and ``cc`` is not older than its oldest target
    (``data/toolkit_install.json``'s nvcc_arch rows); None when the tables or the version do not say."""
    from cudaenv.core.version import cc_tuple
    from cudaenv.facts.cuda_arch import first_nvcc

    found = first_nvcc(cc)
    mm = major_minor(release) if release else None
    if found is None or mm is None:
        return None
    if compare_versions(mm, found[0]) < 0:
        return False
    oldest = cc_tuple(oldest_cc(mm) or "")
    return not (oldest is not None and cc < oldest)


def newest_cuda_for(cc: Tuple[int, int]) -> Optional[str]:
    """The newest CUDA major.minor the tables know whose nvcc still compiles for ``cc`` (12.9 for a Pascal sm_61:
    13.0 dropped it), or None when none does."""
    from cudaenv.facts.drivers import known_cuda_versions

    fits = [mm for mm in known_cuda_versions() if nvcc_compiles_for(mm, cc)]
    return fits[-1] if fits else None
