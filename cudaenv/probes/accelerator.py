"""Non-NVIDIA GPUs that steer the torch decision: ``rocm`` (AMD) or ``xpu`` (Intel), from simple signals.

Read through the Host: the installed torch's build (``+rocm``/``+xpu``, ``torch.version.hip``), ``/opt/rocm``
or ``/dev/kfd``, the platform probe's AMD PCI devices, ``xpu-smi`` on PATH. None when none is seen.
"""

from typing import Any, Optional


def probe_accelerator(host: Any, snapshot: Any) -> Optional[str]:
    torch = getattr(snapshot, "torch", None)
    version = getattr(torch, "version", None) or ""
    if getattr(torch, "hip", None) or "+rocm" in version:
        return "rocm"
    if "+xpu" in version:
        return "xpu"
    if host.is_dir("/opt/rocm") or host.exists("/dev/kfd"):
        return "rocm"
    if getattr(getattr(snapshot, "platform", None), "pci_amd_devices", ()):
        return "rocm"
    if host.which("xpu-smi"):
        return "xpu"
    return None
