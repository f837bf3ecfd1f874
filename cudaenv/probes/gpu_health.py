"""A GPU health read scoped to diagnosis: the kernel log's Xids and the NVIDIA GPUs the PCI bus has but NVML or
``nvidia-smi`` did not open, read only when a GPU looks sick (a driver tool failed or timed out, or fewer GPUs answer
than the bus holds), so a healthy machine's doctor reads no log.

The kernel log comes from ``journalctl -k`` (this boot), else ``dmesg``, each with the host's timeout; a log this user
may not read (``dmesg_restrict``, no ``systemd-journal`` group) is a note, never an error. Like ``nvidia-smi``, the
programs are this machine's (its PATH): one inside an image's ``--root`` is never run (:meth:`Host.run` refuses it).
"""

from __future__ import annotations

from cudaenv.core.i18n import M
from cudaenv.model.snapshot import GpuHealth, Note, PciDevice, Platform, ToolStatus

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Sequence, Tuple

PROBE = "gpu-health"
JOURNAL = ("journalctl", "-k", "-b", "-q", "--no-pager", "-n", "20000")  # this boot's kernel messages, the newest
DMESG = ("dmesg",)
DENIED = ("permission denied", "operation not permitted", "not seeing messages from other users", "insufficient permissions",
          "no journal files were found")


def _bus_key(address: Optional[str]) -> Optional[Tuple[int, str]]:
    """(domain, "bus:device.function") of a PCI address in sysfs' ("0000:41:00.0") or nvidia-smi's
    ("00000000:41:00.0") spelling; None when it is neither."""
    parts = (address or "").strip().lower().split(":")
    if len(parts) != 3:
        return None
    try:
        domain = int(parts[0], 16)
    except ValueError:
        return None
    return domain, parts[1] + ":" + parts[2]


def unreachable_gpus(platform: Platform, gpus: Sequence, tools: Sequence[ToolStatus], driver_of=None) -> Tuple[str, ...]:
    """The NVIDIA GPUs on the PCI bus (bound to the nvidia driver, where ``driver_of`` tells) that the driver's tools
    did not list. Empty in a container (the runtime passes in only some of the host's GPUs) and when no tool listed
    any GPU (then the driver findings speak)."""
    if platform.container or not gpus or not platform.pci_nvidia_devices:
        return ()
    if not any(t.status == "ok" for t in tools):
        return ()
    listed = {_bus_key(g.pci_bus_id) for g in gpus}
    out = []
    for address in platform.pci_nvidia_devices:
        if _bus_key(address) in listed:
            continue
        if driver_of is not None and driver_of(address) not in (None, "nvidia"):
            continue  # bound to vfio-pci (a passthrough) or another driver: not the nvidia driver's to open
        out.append(address)
    return tuple(out)


def _driver_of(host):
    def driver_of(address: str) -> Optional[str]:
        link = host.readlink("/sys/bus/pci/devices/%s/driver" % address)
        return link.rstrip("/").rsplit("/", 1)[-1] if link else None

    return driver_of


def is_sick(tools: Sequence[ToolStatus], unreachable: Sequence[str]) -> bool:
    """Whether to read the kernel log: a driver tool failed or timed out, or a GPU on the bus did not answer."""
    return bool(unreachable) or any(t.failure is not None or t.status == "timeout" for t in tools)


def _read_log(host, notes: List[Note]) -> Tuple[Optional[str], str]:
    """(which log, its text): journalctl's, else dmesg's; (None, "") with a note when neither could be read."""
    denied, timed_out = [], False
    for argv, name in ((JOURNAL, "journalctl -k"), (DMESG, "dmesg")):
        program = host.which(argv[0])
        if program is None:
            continue
        result = host.run([program, *argv[1:]])
        text = result.stdout
        lowered = result.output.lower()
        if result.ok and "NVRM" in text:
            return name, text
        if any(word in lowered for word in DENIED):
            denied.append(name)
            continue
        if result.ok and text.strip():
            return name, text
        if result.error == "timeout":
            timed_out = True
            notes.append(Note(PROBE, M("%s gave no answer within %g s", name, result.timeout)))
    if denied:
        notes.append(Note(PROBE, M("the kernel log needs more rights than this user has (%s); run the doctor with sudo, or "
                                 "sudo dmesg -T | grep -i -E 'NVRM|Xid'", " and ".join(denied))))
    elif not timed_out:
        notes.append(Note(PROBE, M("no kernel log could be read (neither journalctl nor dmesg answered)")))
    return None, ""


def probe_gpu_health(host, notes: List[Note], platform: Platform, gpus: Sequence, tools: Sequence[ToolStatus]) -> Optional[GpuHealth]:
    """The health read, or None when every GPU answered."""
    unreachable = unreachable_gpus(platform, gpus, tools, _driver_of(host))
    if not is_sick(tools, unreachable):
        return None
    log, text = _read_log(host, notes)
    if not log:
        health = GpuHealth()
    else:  # (the kernel log's parser, imported only for a log to read: a sick GPU's)
        from cudaenv.parse.kernel_log import parse_xid_log

        health = parse_xid_log(text, log=log)
    return GpuHealth(log=health.log, xids=health.xids, fallen_off_bus=health.fallen_off_bus, unreachable=unreachable,
                     dcgmi=host.which("dcgmi"))


LINK_FILES = ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width")


def probe_pci_links(host, platform: Platform) -> Tuple[PciDevice, ...]:
    """Each NVIDIA GPU's PCIe link from sysfs (what it runs against what it can: the kernel's reading of LnkSta and
    LnkCap); the GPUs whose files are missing or say Unknown are left out."""
    from cudaenv.parse.lspci import parse_sysfs_link

    out = []
    for address in platform.pci_nvidia_devices[:64]:
        base = "/sys/bus/pci/devices/%s/" % address
        link = parse_sysfs_link(*(host.read_text(base + name, limit=64) for name in LINK_FILES))
        if link is not None:
            speed, width, cap_speed, cap_width = link
            out.append(PciDevice(address=address, link_speed=speed, link_width=width, link_cap_speed=cap_speed,
                                 link_cap_width=cap_width, source="sysfs"))
    return tuple(out)
