"""Inside a container (in the environment section): the NVIDIA runtime's capabilities variable, and the CUDA the image
ships (``CUDA_VERSION``, which NVIDIA's CUDA images set) against the host driver the runtime injected (its
``libcuda.so.X`` in the container, else the kernel module the container sees). Both fixes belong to the host or the
run command, and say so: nothing installed inside the container changes the driver.

Sources: NVIDIA Container Toolkit, "Specialized Configurations with Docker" (``NVIDIA_DRIVER_CAPABILITIES``: compute is
CUDA and OpenCL, utility is nvidia-smi and NVML; https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/
latest/docker-specialized.html); defilantech/LLMKube#1424 (a CUDA 13 image on a 12.4 driver: "driver too old (found
version 12040)")."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M
from cudaenv.core.version import compare_versions, major_minor
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor's start-up reads few of these

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional

F = c.make("environment")
_LIBCUDA = LazyPattern(r"libcuda\.so\.(\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)$")


def check(s, tables=None) -> List:
    if not s.platform.container:
        return []
    return capabilities(s) + image_cuda(s, tables)


def injected_driver(s) -> Optional[str]:
    """The driver version the runtime injected: its libcuda.so.X in the container, else the kernel module's."""
    for path in s.platform.libcuda:
        m = _LIBCUDA.search(path)
        if m is not None:
            return m.group(1)
    return c.driver_version(s)


def capabilities(s) -> List:
    raw = s.env_map.get("NVIDIA_DRIVER_CAPABILITIES")
    if raw is None:
        return []
    caps = {part.strip().lower() for part in raw.split(",") if part.strip()}
    if "all" in caps or "compute" in caps:
        return []
    return [
        F(
            "container-no-compute",
            "error",
            M("NVIDIA_DRIVER_CAPABILITIES leaves out compute"),
            M("NVIDIA_DRIVER_CAPABILITIES=%s: the NVIDIA runtime injects only those parts of the host driver, and "
            "without compute there is no libcuda in this container, so no CUDA program can start. It is set by the "
            "image or the run command, not by anything installed inside.", raw),
            [M("docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility ...    # or =all"),
             M("# Kubernetes: env NVIDIA_DRIVER_CAPABILITIES=compute,utility in the container spec")],
        )
    ]


def image_cuda(s, tables=None) -> List:
    image = major_minor(s.env_map.get("CUDA_VERSION"))
    driver = injected_driver(s)
    if not image or not driver:
        return []
    from cudaenv.diagnose.driver import upgrade_driver_fix
    from cudaenv.facts import drivers as drv

    need = drv.min_driver_for_cuda(image, "linux", c.table(tables))
    if need is None or compare_versions(driver, need) >= 0:
        return []
    runs = drv.native_cuda_for_driver(driver, "linux", c.table(tables))
    return [
        F(
            "container-image-needs-newer-driver",
            "error",
            M("this image's CUDA %s needs a newer driver than the host's", image),
            M("The image ships CUDA %s (CUDA_VERSION=%s), which needs driver %s or newer; the host's driver, injected "
            "into this container, is %s%s. CUDA programs of the image fail with 'CUDA driver version is insufficient' "
            "or 'driver too old'. The driver belongs to the host: upgrade it there, or run an image built for CUDA %s "
            "or older (data-center GPUs can also use the image's forward-compatibility package, /usr/local/cuda/compat).", image, s.env_map.get("CUDA_VERSION"), need, driver, (M(" (CUDA up to %s)", runs) if runs else ""), runs or M("an older")),
            upgrade_driver_fix(s, need, image),
        )
    ]
