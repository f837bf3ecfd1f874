"""Files of /proc, /sys, /etc that tell the platform and the driver -> values. Pure, bounded, never raises.

Sample inputs (each has a recorded real copy under ``tests/recorded/``)::

    /proc/driver/nvidia/version   NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.135  Fri Jan 10 2025
                                  NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ...
    /sys/module/nvidia/version    550.54.15
    /etc/os-release               PRETTY_NAME="Ubuntu 22.04.4 LTS"\\nID=ubuntu\\nVERSION_ID="22.04"
    /proc/sys/kernel/osrelease    5.15.153.1-microsoft-standard-WSL2      (WSL2)
                                  4.4.0-18985-Microsoft                   (WSL1)
    /proc/1/cgroup                0::/system.slice/docker-3f1c...scope    (docker, cgroup v2)
    /etc/nv_tegra_release         # R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, ...
    /proc/device-tree/compatible  nvidia,p3737-0000+p3701-0005\\0nvidia,p3701-0005\\0nvidia,tegra234\\0
    /proc/self/ns/pid (the link)  pid:[4026531836]
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from cudaenv.core.tuples import named_tuple
from cudaenv.parse._lines import as_text, is_uint, lines
from cudaenv.core.version import parse_driver_version

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Dict, List, Optional, Tuple
    from cudaenv.parse._lines import Text

NVIDIA_VENDOR = "0x10de"
# PCI class codes of GPUs: 0x0300xx VGA controller, 0x0302xx 3D controller (data-centre GPUs).
GPU_CLASSES = ("0x0300", "0x0302")
# The kernel's fixed inode number of the initial PID namespace (PROC_PID_INIT_INO = 0xEFFFFFFC in
# include/linux/proc_ns.h, since Linux 3.8): /proc/self/ns/pid reads "pid:[4026531836]" outside any container.
INITIAL_PID_NAMESPACE = 4026531836



def _driver_version(text: str) -> Optional[str]:
    """A kernel module's version (``550.54.15``; at least two parts): :func:`cudaenv.core.version.parse_driver_version`."""
    return text if "." in text and parse_driver_version(text) == text else None


@named_tuple
class KernelModule:
    version: str
    flavor: str  # open | proprietary


def parse_proc_driver_version(text: Text, limit: int = 50) -> Optional[KernelModule]:
    """The kernel module's version and flavour from ``/proc/driver/nvidia/version`` (None when absent or odd).
    ``limit``: the lines looked at (the file has two; a paste holds it anywhere).

    >>> parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.135  Fri Jan 10 2025")
    KernelModule(version='550.135', flavor='proprietary')
    """
    for line in lines(text, limit=limit):
        at = line.find("NVRM version:")
        if at < 0:
            continue
        rest = line[at:]
        km = rest.find("Kernel Module")
        if km < 0:
            continue
        flavor = "open" if rest[:km].endswith("Open ") else "proprietary"
        words = rest[km + len("Kernel Module"):].split()
        if words[:1] == ["for"]:
            words = words[2:]  # "for x86_64" / "for aarch64"
        if words and _driver_version(words[0]):
            return KernelModule(words[0], flavor)
    return None


def parse_sys_module_version(text: Text) -> Optional[str]:
    """``/sys/module/nvidia/version``: just ``550.54.15``."""
    value = as_text(text)[:64].strip()
    return _driver_version(value)


def parse_proc_status(text: Text) -> Dict[str, str]:
    """``Key:\\tvalue`` lines of ``/proc/PID/status``."""
    out: Dict[str, str] = {}
    for line in lines(text, limit=200):
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


@named_tuple
class PasswdEntry:
    name: str
    uid: str
    home: str  # "" when the line has no home field


def parse_passwd(text: Text) -> Tuple[PasswdEntry, ...]:
    """The accounts of ``/etc/passwd`` (``name:password:uid:gid:gecos:home:shell``), in the file's order: the one
    reader (the driver probe names a GPU process's owner by uid, uninstall finds ``SUDO_USER``'s home). A line
    without a numeric uid is not an account."""
    out: List[PasswdEntry] = []
    for line in lines(text):
        parts = line.split(":")
        if len(parts) >= 3 and is_uint(parts[2], 10):
            out.append(PasswdEntry(parts[0], parts[2], parts[5] if len(parts) >= 6 else ""))
    return tuple(out)


def parse_os_release(text: Text) -> Dict[str, str]:
    """KEY=value lines of an os-release file, with shell quoting removed. Never raises."""
    result: Dict[str, str] = {}
    for line in lines(text, limit=500):
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", key):
            continue
        value = value.strip()
        try:
            parts = shlex.split(value, posix=True)
            value = " ".join(parts) if parts else ""
        except ValueError:
            value = value.strip("\"'")
        result[key] = value
    return result


MAX_LIKE = 8  # ID_LIKE entries kept
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._-")


def parse_id_like(text: Text) -> Tuple[str, ...]:
    """os-release's ``ID_LIKE`` (``"ubuntu debian"``) as IDs, closest first: os-release(5) IDs (lower-case letters,
    digits, ``._-``), at most :data:`MAX_LIKE`; any other word in it is dropped. Never raises."""
    if not isinstance(text, str):
        return ()
    words = text[:1000].split()
    return tuple(w for w in words if len(w) <= 64 and _ID_CHARS.issuperset(w))[:MAX_LIKE]


def parse_wsl(
    osrelease_text: Text,
    proc_version_text: Text = None,
    interop: bool = False,
    run_wsl: bool = False,
    dev_dxg: bool = False,
    wsl_lib: bool = False,
    distro_name: Optional[str] = None,
) -> Tuple[Optional[int], Tuple[str, ...]]:
    """Decide WSL 1, WSL 2 or neither from several signals; returns ``(wsl, signals)``.

    The kernel release tells the generation: WSL2 kernels say ``microsoft-standard`` (lower case,
    ``5.15.153.1-microsoft-standard-WSL2``); WSL1 reports a fake ``4.4.0-18985-Microsoft``. ``/dev/dxg`` and
    ``/usr/lib/wsl/lib`` exist only on WSL2 (GPU paravirtualisation). ``WSL_DISTRO_NAME`` is one more signal,
    never enough alone to decide the generation (it is lost under sudo and in systemd units).
    """
    osrelease = as_text(osrelease_text)[:4096]
    proc_version = as_text(proc_version_text)[:4096]
    signals: List[str] = []
    kernel_text = " ".join(t for t in (osrelease, proc_version) if t)
    wsl2_kernel = "microsoft-standard" in kernel_text or "WSL2" in kernel_text
    wsl1_kernel = bool(re.search(r"-Microsoft\b", kernel_text)) and not wsl2_kernel
    if "microsoft" in osrelease.lower():
        signals.append("osrelease")
    if "microsoft" in proc_version.lower():
        signals.append("/proc/version")
    if interop:
        signals.append("WSLInterop")
    if run_wsl:
        signals.append("/run/WSL")
    if dev_dxg:
        signals.append("/dev/dxg")
    if wsl_lib:
        signals.append("/usr/lib/wsl/lib")
    if distro_name:
        signals.append("WSL_DISTRO_NAME")
    if not signals:
        return None, ()
    if wsl2_kernel or dev_dxg or wsl_lib:
        return 2, tuple(signals)
    if wsl1_kernel:
        return 1, tuple(signals)
    # Only interop / /run/WSL / the variable: WSL for sure, generation unknown from the kernel.
    strong = [s for s in signals if s != "WSL_DISTRO_NAME"]
    if not strong:
        return None, tuple(signals)  # the variable alone proves nothing (it can be copied into a container)
    return 2, tuple(signals)


def parse_cgroup_container(text: Text) -> Optional[str]:
    """The container runtime named in ``/proc/1/cgroup`` (docker, podman, kubernetes, containerd, lxc)."""
    body = as_text(text)[:65536]
    if "kubepods" in body:
        return "kubernetes"
    if "libpod" in body or "podman" in body:
        return "podman"
    if "docker" in body:
        return "docker"
    if "containerd" in body:
        return "containerd"
    if "/lxc/" in body or "lxc.payload" in body:
        return "lxc"
    return None


def parse_pci_class(vendor: Text, pci_class: Text) -> bool:
    """True for an NVIDIA display or 3D controller (vendor 0x10de, class 0x0300xx or 0x0302xx)."""
    v, c = as_text(vendor)[:64].strip().lower(), as_text(pci_class)[:64].strip().lower()
    return bool(v and c) and v == NVIDIA_VENDOR and c.startswith(GPU_CLASSES)


def parse_secure_boot(data: Optional[bytes]) -> Optional[bool]:
    """The SecureBoot efivar: 4 attribute bytes then one value byte (1 = enabled)."""
    if not isinstance(data, (bytes, bytearray)) or len(data) < 5:
        return None
    return data[-1] == 1


# ------------------------------------------------------------------------------------------- Jetson (L4T)
def parse_nv_tegra_release(text: Text) -> Optional[str]:
    """The L4T release from ``/etc/nv_tegra_release``: ``# R35 (release), REVISION: 4.1, ...`` -> ``"35.4.1"``."""
    for line in lines(text, limit=20):
        m = re.match(r"^#?\s{0,8}R(\d{1,3})\s{0,8}\([^)]{0,40}\),\s{0,8}REVISION:\s{0,8}(\d{1,3}(?:\.\d{1,3}){0,2})", line)
        if m:
            return "%s.%s" % (m.group(1), m.group(2))
    return None


def parse_device_tree_compatible(data: Text) -> Tuple[str, ...]:
    """The NUL-separated strings of ``/proc/device-tree/compatible`` (``nvidia,tegra234``, ...)."""
    return tuple(s.strip() for s in as_text(data)[:4096].split("\0") if s.strip())


def tegra_soc(compatible: Tuple[str, ...]) -> Optional[str]:
    """``tegra234`` from a device tree's compatible strings (also from a ``cat`` paste, which shows no NULs)."""
    for entry in compatible:
        m = re.search(r"nvidia,(tegra\d{2,3})(?![0-9])", entry)
        if m:
            return m.group(1)
    return None


# ------------------------------------------------------------------------------------------ PID namespace
def parse_pid_namespace(link: Optional[str]) -> Optional[bool]:
    """Whether the ``/proc/self/ns/pid`` link text (``pid:[4026531836]``) names the initial PID namespace:
    True there, False inside a container's own namespace, None when unreadable."""
    m = re.match(r"^pid:\[(\d{1,20})\]$", as_text(link)[:64].strip())
    if not m:
        return None
    return int(m.group(1)) == INITIAL_PID_NAMESPACE


def jetpack_for_l4t(l4t: Optional[str], rows) -> Optional[str]:
    """The JetPack release of an L4T release, from the rows of ``data/jetson.json`` (None when not listed)."""
    for row in rows or ():
        if isinstance(row, Mapping) and l4t and row.get("l4t") == l4t and isinstance(row.get("jetpack"), str):
            return row["jetpack"]
    return None
