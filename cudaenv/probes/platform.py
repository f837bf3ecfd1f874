"""Platform probe: OS, distro, kernel, WSL 1/2, containers and their PID namespace, Jetson boards, GPU device
nodes, PCI devices, Secure Boot.

:func:`probe_platform` only reads files through the :class:`~cudaenv.host.Host`; the parsers of what it reads
are in :mod:`cudaenv.parse.proc`.
"""

from __future__ import annotations

from cudaenv.core.i18n import M
from cudaenv.parse.proc import (
    NVIDIA_VENDOR,
    parse_cgroup_container,
    parse_device_tree_compatible,
    parse_nv_tegra_release,
    parse_id_like,
    parse_os_release,
    parse_pci_class,
    parse_pid_namespace,
    parse_proc_driver_version,
    parse_secure_boot,
    parse_wsl,
    tegra_soc,
)
from cudaenv.probes.ldconf import ld_conf_dirs
from cudaenv.model.snapshot import Jetson, Note, Platform

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple

AMD_VENDOR = "0x1002"
# /proc/sys files refuse a 4 MiB read (ENOMEM, seen on a 6.18 kernel): read kernel files in small pieces.
SMALL = 65536


# ------------------------------------------------------------------------------ probe
def _this_machine() -> str:
    """This machine's architecture: ``platform.machine()``, which is ``os.uname().machine`` on POSIX (the platform
    module stays off the doctor's start-up)."""
    import os

    if hasattr(os, "uname"):
        return os.uname().machine
    import platform as _platform

    return _platform.machine()


def probe_platform(host, notes: list) -> Platform:
    """What the inspected system is. Linux files are read only on linux hosts."""
    system = host.system
    machine = host.machine or _this_machine() or None
    if system != "linux":
        return Platform(
            system=system,
            distro=_non_linux_distro(system),
            machine=machine,
            nvidia_visible_devices=host.env.get("NVIDIA_VISIBLE_DEVICES"),
        )

    os_release_text = host.read_text("/etc/os-release") or host.read_text("/usr/lib/os-release")
    osr = parse_os_release(os_release_text)
    if os_release_text is None:
        notes.append(Note("platform", M("no /etc/os-release or /usr/lib/os-release: the distribution is unknown")))

    kernel_text = host.read_text("/proc/sys/kernel/osrelease", limit=SMALL)
    kernel = kernel_text.strip()[:200] if kernel_text and kernel_text.strip() else None
    proc_version = host.read_text("/proc/version", limit=SMALL)

    dev_entries = host.listdir("/dev")
    dev_nvidia = tuple("/dev/" + n for n in dev_entries if n.startswith("nvidia"))
    dev_dxg = "dxg" in dev_entries or host.lexists("/dev/dxg")

    wsl, wsl_signals = parse_wsl(
        kernel_text,
        proc_version,
        interop=host.lexists("/proc/sys/fs/binfmt_misc/WSLInterop") or host.lexists("/proc/sys/fs/binfmt_misc/WSLInterop-late"),
        run_wsl=host.lexists("/run/WSL"),
        dev_dxg=dev_dxg,
        wsl_lib=host.is_dir("/usr/lib/wsl/lib"),
        distro_name=host.env.get("WSL_DISTRO_NAME"),
    )

    container, container_signals = _container(host)
    nvidia_pci, amd_pci = _pci_gpus(host)
    jetson = _jetson(host, machine)

    return Platform(
        system=system,
        distro=(osr.get("PRETTY_NAME") or _join(osr.get("NAME"), osr.get("VERSION")))[:200] or None,  # bounded: an image's text
        distro_id=osr.get("ID") or None,
        distro_version=osr.get("VERSION_ID") or None,
        distro_like=parse_id_like(osr.get("ID_LIKE")),
        kernel=kernel,
        machine=machine,
        wsl=wsl,
        wsl_signals=wsl_signals,
        container=container,
        container_signals=container_signals,
        nvidia_visible_devices=host.env.get("NVIDIA_VISIBLE_DEVICES"),
        dev_nvidia=dev_nvidia,
        dev_dxg=dev_dxg,
        pci_nvidia_devices=nvidia_pci,
        pci_amd_devices=amd_pci,
        secure_boot=_secure_boot(host),
        nouveau_loaded=host.lexists("/sys/module/nouveau"),
        libcuda=_libcuda(host),
        jetson=jetson,
        pid_namespace=_pid_namespace(host),
        root_user=host.runs_as_root(),
        sudo=None if host.rooted else host.which("sudo") is not None,
    )


def _pid_namespace(host) -> Optional[str]:
    """``initial`` or ``container`` from the ``/proc/self/ns/pid`` link; None where it cannot be read (an
    image under ``--root`` has no live /proc)."""
    initial = parse_pid_namespace(host.readlink("/proc/self/ns/pid"))
    return None if initial is None else "initial" if initial else "container"


def _jetson(host, machine: Optional[str]) -> Optional[Jetson]:
    """A Jetson board: ``/etc/nv_tegra_release``, a Tegra device tree, or the L4T kernel module (an aarch64
    ``Open Kernel Module`` whose version is an L4T release, 3x.y.z, not a driver series)."""
    if (machine or "").lower() not in ("aarch64", "arm64"):
        return None
    signals: List[str] = []
    l4t = parse_nv_tegra_release(host.read_text("/etc/nv_tegra_release", limit=4096))
    if l4t:
        signals.append("/etc/nv_tegra_release")
    soc = tegra_soc(parse_device_tree_compatible(host.read_bytes("/proc/device-tree/compatible", limit=4096)))
    if soc:
        signals.append("/proc/device-tree/compatible")
    module = parse_proc_driver_version(host.read_text("/proc/driver/nvidia/version", limit=SMALL))
    if module and module.version.split(".")[0].isdigit() and int(module.version.split(".")[0]) < 100:
        signals.append("l4t-driver")  # desktop and server drivers are 100 and above since 2006
        l4t = l4t or module.version
    if not signals:
        return None
    from cudaenv.parse.proc import jetpack_for_l4t
    from cudaenv.core.resources import load_table

    try:
        rows = load_table("jetson")["rows"]
    except Exception:  # noqa: BLE001 - a missing or broken table must not hide the board
        rows = []
    return Jetson(l4t=l4t, jetpack=jetpack_for_l4t(l4t, rows), soc=soc, signals=tuple(signals))


def _container(host) -> Tuple[Optional[str], Tuple[str, ...]]:
    signals: List[str] = []
    kinds: List[str] = []
    if host.env.get("KUBERNETES_SERVICE_HOST"):
        signals.append("KUBERNETES_SERVICE_HOST")
        kinds.append("kubernetes")
    if host.lexists("/run/.containerenv"):
        signals.append("/run/.containerenv")
        kinds.append("podman")
    if host.lexists("/.dockerenv"):
        signals.append("/.dockerenv")
        kinds.append("docker")
    from_cgroup = parse_cgroup_container(host.read_text("/proc/1/cgroup", limit=SMALL))
    if from_cgroup:
        signals.append("/proc/1/cgroup")
        kinds.append(from_cgroup)
    env_container = host.env.get("container")  # set by podman, systemd-nspawn, lxc, flatpak
    if env_container:
        signals.append("container=" + env_container)
        kinds.append({"oci": "podman", "systemd-nspawn": "nspawn"}.get(env_container, env_container))
    # Kubernetes wins (a pod also looks like its runtime), then the most specific runtime marker.
    for kind in ("kubernetes", "podman", "docker", "containerd", "lxc"):
        if kind in kinds:
            return kind, tuple(signals)
    return (kinds[0] if kinds else None), tuple(signals)


def _pci_gpus(host) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(NVIDIA display/3D controllers, AMD display controllers) on the PCI bus, by address, in one scan.

    AMD's data-centre GPUs (Instinct) report the "other display controller" class 0x0380, so for AMD any
    display class counts; the AMD list only steers `torch recommend` towards a ROCm index.
    """
    nvidia, amd = [], []
    base = "/sys/bus/pci/devices"
    for address in host.listdir(base):
        vendor = (host.read_text("%s/%s/vendor" % (base, address), limit=64) or "").strip().lower()
        if vendor not in (NVIDIA_VENDOR, AMD_VENDOR):
            continue
        pci_class = host.read_text("%s/%s/class" % (base, address), limit=64)
        if parse_pci_class(vendor, pci_class):
            nvidia.append(address)
        elif vendor == AMD_VENDOR and (pci_class or "").strip().lower().startswith("0x03"):
            amd.append(address)
    return tuple(nvidia), tuple(amd)


# Where the NVIDIA driver's libraries (libcuda, libnvidia-ml) live, WSL 2's first: there the Windows driver's
# libraries must win even where a Linux driver was (wrongly) installed too.
LIBRARY_DIRS = (
    "/usr/lib/wsl/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib64/nvidia",
    "/usr/lib",
    "/usr/lib/nvidia",
    "/usr/local/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
    # a container's driver mount (GKE, CDI specs), which reaches the loader only through LD_LIBRARY_PATH
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
)


def driver_library_dirs(host) -> List[str]:
    """LIBRARY_DIRS, then each absolute LD_LIBRARY_PATH folder (a driver in a prefix of its own), never a CUDA
    ``stubs`` folder: its libcuda.so and libnvidia-ml.so only link, they cannot run."""
    dirs = list(LIBRARY_DIRS)
    for folder in (host.env.get("LD_LIBRARY_PATH") or "").split(":"):
        folder = folder.strip().rstrip("/")
        if folder.startswith("/") and "stubs" not in folder.split("/") and folder not in dirs:
            dirs.append(folder)
    return dirs


def _libcuda(host) -> Tuple[str, ...]:
    """Every ``libcuda.so*`` in the driver's library folders and those ld.so.conf names (one name per real file)."""
    found: List[str] = []
    real_seen = set()
    for folder in driver_library_dirs(host) + ld_conf_dirs(host):
        for name in host.listdir(folder):
            if not name.startswith("libcuda.so"):
                continue
            path = folder.rstrip("/") + "/" + name
            real = host.resolve(path) or path
            if path in found or (real, name) in real_seen:
                continue
            real_seen.add((real, name))
            found.append(path)
    return tuple(found)


def _secure_boot(host) -> Optional[bool]:
    base = "/sys/firmware/efi/efivars"
    for name in host.listdir(base):
        if name.startswith("SecureBoot-"):
            return parse_secure_boot(host.read_bytes(base + "/" + name, limit=64))
    return None


def _non_linux_distro(system: str) -> Optional[str]:
    return {"windows": "Windows", "darwin": "macOS"}.get(system)


def _join(*parts: Optional[str]) -> str:
    return " ".join(p for p in parts if p)

