"""Environment: WSL1, a Linux driver inside WSL2, a container started without the GPU, and inside a container its
NVIDIA capabilities and the image's CUDA against the host's driver (:mod:`cudaenv.diagnose.inside`)."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M, join
from cudaenv.diagnose import inside

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List

F = c.make("environment")
WSL_LIB = "/usr/lib/wsl/"


def check(s, tables=None) -> List:
    out = []
    out += wsl1(s)
    out += wsl_linux_driver(s)
    out += container_no_gpu(s)
    if not out:
        out += inside.check(s, tables)
    return out


def wsl1(s) -> List:
    if s.platform.wsl != 1:
        return []
    distro = s.env_map.get("WSL_DISTRO_NAME")
    fix = [M("wsl -l -v    # in PowerShell on Windows: the VERSION column says 1")]
    fix.append("wsl --set-version %s 2" % (c.quote(distro) if distro else "<distro name from wsl -l -v>"))
    fix.append(M("wsl --set-default-version 2    # for distributions installed later"))
    return [
        F(
            "wsl1-no-cuda",
            "error",
            M("WSL 1 cannot run CUDA"),
            M("This Linux runs under WSL 1 (%s). Only WSL 2 passes the GPU through (/dev/dxg and the Windows driver "
              "in /usr/lib/wsl/lib); under WSL 1 no CUDA program sees a GPU.", ", ".join(s.platform.wsl_signals) or M("kernel")),
            fix,
        )
    ]


def wsl_linux_driver(s) -> List:
    p = s.platform
    if p.wsl != 2:
        return []
    reasons, fix = [], []
    foreign = [lib for lib in p.libcuda if not c.norm(lib).startswith(WSL_LIB)]
    if foreign:
        reasons.append(M("libcuda outside /usr/lib/wsl/lib: %s", ", ".join(foreign)))
    d = s.driver
    smi = d.nvidia_smi if d is not None else None
    if smi and c.norm(smi).startswith("/usr/") and not c.norm(smi).startswith(WSL_LIB):
        reasons.append(M("nvidia-smi from a Linux driver package: %s", smi))
    if d is not None and d.kernel_module_version and d.source in ("proc", "sys"):
        reasons.append(M("a Linux kernel module reports driver %s", d.kernel_module_version))
    if not reasons:
        return []
    fix += c.driver_chore(s, "remove_linux_driver")
    for lib in foreign:
        fix.append(M("sudo mv %s %s.bak    # if no package owns it (dpkg -S %s)", c.quote(lib), c.quote(lib), c.quote(lib)))
    fix.append(M("sudo ldconfig && ldconfig -p | grep libcuda.so.1    # must show /usr/lib/wsl/lib only"))
    fix.append(M("# install toolkits from the WSL-Ubuntu repository as cuda-toolkit-X-Y, never the cuda or cuda-drivers packages"))
    return [
        F(
            "wsl-linux-driver-installed",
            "error",
            M("a Linux NVIDIA driver inside WSL 2 shadows the Windows driver"),
            M("Under WSL 2 the driver is the Windows host's, exposed as /usr/lib/wsl/lib/libcuda.so.1; a Linux driver "
              "installed inside the distribution replaces it and CUDA fails (%s).", join("; ", reasons)),
            fix,
        )
    ]


def container_no_gpu(s) -> List:
    p = s.platform
    if not p.container or p.dev_nvidia or p.dev_dxg or c.usable_gpu(s):
        return []
    wants = []
    nvd = p.nvidia_visible_devices
    if nvd not in (None, "", "void", "none"):
        wants.append(M("NVIDIA_VISIBLE_DEVICES=%s is set", nvd))
    if c.torch_cuda_build(s):
        wants.append(M("torch %s is a CUDA build", s.torch.version))
    kind = p.container
    if kind == "kubernetes":
        fix = [
            M("# in the pod spec (needs the NVIDIA device plugin or GPU operator):"),
            "resources:\n  limits:\n    nvidia.com/gpu: 1",
        ]
    elif kind == "podman":
        fix = [
            M("podman run --device nvidia.com/gpu=all ...    # CDI; on the host first:"),
            "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
        ]
    else:
        fix = [
            M("docker run --gpus all ...    # or: docker run --runtime=nvidia ..."),
            M("# on the host, once: install nvidia-container-toolkit, then"),
            "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
            "# docker compose: deploy.resources.reservations.devices: [{driver: nvidia, count: all, capabilities: [gpu]}]",
        ]
    detail = M("This is a %s container with no /dev/nvidia* device nodes: it was started without the GPU "
               "(no --gpus all, NVIDIA runtime or nvidia-container-toolkit).", kind)
    if nvd in ("void", "none"):
        detail += M(" NVIDIA_VISIBLE_DEVICES=%s hides the GPUs on purpose.", nvd)
    if wants:
        detail += M(" Yet %s.", join(", ", wants))
    return [F("container-no-gpu", "error" if wants else "warning", M("container started without the GPU"), detail, fix)]
