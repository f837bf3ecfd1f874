"""The frozen :class:`~cudaenv.recommend.records.Request` from a Snapshot and the what-if flags (pure)."""

from __future__ import annotations

from cudaenv.core.config import TORCH_INDEX
from cudaenv.model.visible import hides_every_gpu, planned_gpus
from cudaenv.recommend.records import Request
from cudaenv.core.version import version_key
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, List, Mapping, Optional, Sequence, Tuple


def _mm(version: Optional[str]) -> Optional[str]:
    t = version_key(version)
    return "%d.%d" % t[:2] if len(t) >= 2 else None


def _planned_gpus(snapshot: Any) -> Tuple[List[Tuple[str, Optional[str]]], bool]:
    """(label, capability) of the GPUs the build is for (:func:`~cudaenv.model.visible.planned_gpus`: the visible
    ones, every GPU when CUDA_VISIBLE_DEVICES hides them all); and whether it hides every GPU. No GPU listed by
    nvidia-smi: torch's own device list."""
    gpus = planned_gpus(snapshot)
    if not gpus:
        torch = getattr(snapshot, "torch", None)
        devices = list(getattr(torch, "devices", ()) or ()) if torch else []
        return [(d.name or "cuda:%d" % i, d.capability) for i, d in enumerate(devices)], False
    return [(g.name or "GPU %d" % g.index, g.compute_capability) for g in gpus], hides_every_gpu(snapshot)


def installed_companions(snapshot: Any) -> dict:
    """torchvision/torchaudio installed beside torch, as the torch probe's static pass found them."""
    torch = getattr(snapshot, "torch", None)
    pairs = (entry.partition("==") for entry in getattr(torch, "companions", ()) or ())
    return {name: version for name, _, version in pairs if version}


def env_installer(snapshot: Any) -> Optional[str]:
    """The installer the probed environment belongs to, where it says: a pixi env's is pixi; a conda env's is conda
    unless pip installed its torch; a uv venv's is uv unless another installer's torch is in it."""
    pyenv = getattr(snapshot, "python_env", None)
    torch = getattr(snapshot, "torch", None)
    by = getattr(torch, "installer", None) if getattr(torch, "installed", False) else None
    kind = getattr(pyenv, "kind", None)
    if kind == "pixi":
        return "pixi"
    if kind == "conda" and by in (None, "conda"):
        return "conda"
    if kind == "uv" and by in (None, "uv"):
        return "uv"
    return None


def request_from_snapshot(
    snapshot: Any = None,
    torch_version: Optional[str] = None,
    driver: Optional[str] = None,
    compute_capabilities: Optional[Sequence[str]] = None,
    system: Optional[str] = None,
    python_version: Optional[str] = None,
    index_base: Optional[str] = None,
    machine: Optional[str] = None,
    variant: Optional[str] = None,
    companions: Optional[Mapping[str, str]] = None,
    accelerator: Optional[str] = None,
    installer: Optional[str] = None,
    python: Optional[str] = None,
    jetson: Optional[str] = None,
    cuda_override: Optional[str] = None,
    index_layout: str = "simple",
    mirror: Optional[str] = None,
) -> Request:
    """The request for this snapshot; every argument given overrides what the snapshot says (a what-if)."""
    platform = getattr(snapshot, "platform", None)
    sys_name = (system or getattr(platform, "system", None) or "linux").lower()
    if sys_name.startswith("win"):
        sys_name = "windows"
    elif sys_name in ("mac", "macos", "osx"):
        sys_name = "darwin"
    mach = machine or getattr(platform, "machine", None) or "x86_64"
    snap_driver = getattr(snapshot, "driver", None)
    drv_version = driver or getattr(snap_driver, "version", None)
    wsl = getattr(platform, "wsl", None) == 2 or bool(getattr(snap_driver, "wsl_windows_side", False))
    driver_system = "windows" if (sys_name == "windows" or (wsl and system is None)) else "linux"
    notes: List[str] = []
    if compute_capabilities:
        gpus = [(M("compute capability %s", cc), cc) for cc in compute_capabilities]
        hidden = False
    else:
        gpus, hidden = _planned_gpus(snapshot)
    if hidden:
        notes.append(M("CUDA_VISIBLE_DEVICES hides every GPU: planning for the %d GPU%s of this machine "
                       "(unset CUDA_VISIBLE_DEVICES, or list them, to use them)", len(gpus), "" if len(gpus) == 1 else "s"))
    jetson = jetson or getattr(platform, "jetson", None) or None
    jetpack = None
    if jetson and not isinstance(jetson, str):
        jetpack = getattr(jetson, "jetpack", None)
        jetson = getattr(jetson, "l4t", None) or "unknown"
    if jetson and driver is None and drv_version and version_key(drv_version)[:1] and version_key(drv_version)[0] < 100:
        drv_version = None  # an L4T release where a driver version usually is: not a desktop driver
    nvidia = bool(gpus) or drv_version is not None or bool(jetson)
    torch = getattr(snapshot, "torch", None)
    py = _mm(python_version or getattr(torch, "python_version", None))
    if python_version and python_version.rstrip().endswith("t") and py:
        py += "t"
    installed = getattr(torch, "version", None) if getattr(torch, "installed", False) else None
    interpreter_version = _mm(getattr(torch, "python_version", None))
    managed = bool(getattr(torch, "externally_managed", False)) and not bool(getattr(torch, "in_virtualenv", False))
    pyenv = getattr(snapshot, "python_env", None)
    probed_cuda = getattr(snap_driver, "cuda_version", None) if driver is None else None
    return Request(
        system=sys_name, machine=mach, driver=drv_version, driver_system=driver_system, gpus=tuple(gpus), nvidia=nvidia,
        python_version=py, accelerator=accelerator, torch_version=torch_version, variant=variant, installed=installed,
        installer=installer or env_installer(snapshot) or getattr(torch, "installer", None) or "pip", python=python or getattr(torch, "python", None),
        companions=tuple(sorted((installed_companions(snapshot) if companions is None else companions).items())), index_base=(index_base or TORCH_INDEX).rstrip("/"),
        externally_managed=managed, jetson=jetson, python_asked=bool(python_version), notes=tuple(notes),
        interpreter_version=interpreter_version, jetpack=jetpack,
        env_kind=getattr(pyenv, "kind", None), env_prefix=getattr(pyenv, "prefix", None), env_manifest=getattr(pyenv, "manifest", None),
        env_cuda=getattr(pyenv, "manifest_cuda", None), env_channels=tuple(getattr(pyenv, "channels", ()) or ()),
        driver_cuda=probed_cuda, cuda_override=cuda_override, libc=getattr(torch, "libc", None), index_layout=index_layout,
        mirror=mirror,
        kernel=getattr(platform, "kernel", None) if system is None else None,
    )
