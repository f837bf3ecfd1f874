"""GPU health, in the driver section: the kernel log's Xids by code (what each means, the first step) and the NVIDIA
GPUs the PCI bus holds but the driver's tools did not open (read from ``Snapshot.health``, which the probe fills
only when a GPU looked sick, and ``explain`` from a pasted kernel log); and each GPU's condition as ``nvidia-smi -q``
reports it (``Snapshot.gpu_conditions``): uncorrectable ECC errors, a retired page or remapped row waiting for a reset,
a row remap that failed, and clocks the hardware slows down.

Sources: NVIDIA's "GPU Memory Error Management" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt: a pending remap
activates at the next GPU reset; a remapping failure is an RMA criterion), "Dynamic Page Retirement"
(docs.nvidia.com/deploy/dynamic-page-retirement: pending pages are retired at the next driver load), nvml.h's clock
event reasons (HW Slowdown: temperature or the power brake; HW Power Brake Slowdown: the external power brake, from
the system's power supply)."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M, join
from cudaenv.facts.xid import CATALOG, xid_row

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional

F = c.make("driver")
SHOWN = 8  # Xid codes described one by one; the rest are named


def check(s, tables=None) -> List:
    h = getattr(s, "health", None)
    found = [] if h is None else xids(s, h, c.table(tables, "xid")) + unreachable_gpu(s, h)
    return (found + conditions(s, tuple(getattr(s, "gpu_conditions", ()) or ()))
            + pci_devices(s, tuple(getattr(s, "pci_devices", ()) or ())))


def xid_summary(h, table=None) -> List[str]:
    """One sentence per Xid code the log holds: how often, on which GPUs, what it means and the first step."""
    out = []
    for g in h.xids[:SHOWN]:
        row = xid_row(g.code, table)
        where = M(" on %s", ", ".join(g.pci[:4])) if g.pci else ""
        times = M("once") if g.count == 1 else M("%d times", g.count)
        if row is None:
            out.append(M("Xid %d, %s%s: not in cudaenv's table; look it up in NVIDIA's Xid catalog (%s).", g.code, times, where, CATALOG))
        else:
            out.append(M("Xid %d (%s), %s%s: %s. First: %s.", g.code, row["name"], times, where, M(row["meaning"]), M(row["first_step"])))
    if len(h.xids) > SHOWN:
        out.append(M("Also Xid %s.", ", ".join(str(g.code) for g in h.xids[SHOWN:])))
    return out


def xid_names(h, table=None) -> str:
    """The log's Xid codes in short: "Xid 79 (GPU has fallen off the bus) on 0000:41:00, Xid 13"."""
    out = []
    for g in h.xids[:SHOWN]:
        row = xid_row(g.code, table)
        out.append(M("Xid %d%s%s", g.code, " (%s)" % row["name"] if row else "", M(" on %s", ", ".join(g.pci[:4])) if g.pci else ""))
    return join(M(", "), out)


def _worst(h, table=None) -> Optional[str]:
    rows = [xid_row(g.code, table) for g in h.xids]
    if any(r is not None and r["severity"] == "error" for r in rows) or h.fallen_off_bus:
        return "error"
    return "warning" if h.xids else None


def dcgm_fix(h) -> List[str]:
    """DCGM's quick diagnostic, where DCGM is installed (run after the reset: it needs the GPU to answer)."""
    return [M("dcgmi diag -r 1    # DCGM's quick check of every GPU, once they answer again (-r 2: a longer one)")] if h.dcgmi else []


def xids(s, h, table=None) -> List:
    worst = _worst(h, table)
    if worst is None:
        return []
    severity = "error" if worst == "error" else "warning"
    where = M("The kernel log (%s)", h.log) if h.log and h.log != "paste" else M("The pasted kernel log")
    off = M(" It also says the GPU at %s has fallen off the bus.", ", ".join(h.fallen_off_bus)) if h.fallen_off_bus and not any(g.code == 79 for g in h.xids) else ""
    reset = [g.code for g in h.xids if (xid_row(g.code, table) or {}).get("reset")]
    fix = [] if not reset else [M("nvidia-smi -q -d PAGE_RETIREMENT,ECC,PERFORMANCE    # retired pages, ECC counts and throttle reasons of the GPUs that answer"),
                                M("%snvidia-smi -r -i N    # reset GPU N once nothing runs on it (or reboot)", c.sudo(s))]
    return [
        F(
            "gpu-xid",
            severity,
            (M("the kernel log holds GPU faults (Xid %s)", ", ".join(str(g.code) for g in h.xids[:SHOWN])) if h.xids else M("a GPU fell off the bus")),
            M("%s shows: %s%s", where, join(" ", xid_summary(h, table)), off),
            fix + dcgm_fix(h) + [M("%snvidia-bug-report.sh    # the log bundle NVIDIA support asks for", c.sudo(s))],
        )
    ]


def unreachable_gpu(s, h) -> List:
    if not h.unreachable:
        return []
    n = len(h.unreachable)
    return [
        F(
            "gpu-unreachable",
            "error",
            M("%d NVIDIA GPU%s on the PCI bus %s not answer the driver", n, ("" if n == 1 else "s"), ("does" if n == 1 else "do")),
            M("The PCI bus holds an NVIDIA GPU at %s, bound to the nvidia driver, that NVML and nvidia-smi do not list: "
              "it fell off the bus, failed to initialise, or is held in reset.%s", ", ".join(h.unreachable),
              (" " + join(" ", xid_summary(h)) if h.xids else M(" The kernel log says why (NVRM lines)."))),
            [M("%sdmesg -T | grep -i -E 'NVRM|Xid|fallen off'    # what the driver logged for it", c.sudo(s)),
             M("lspci -nnk -s %s    # 'Kernel driver in use: nvidia', and its link state with -vv", h.unreachable[0])]
            + dcgm_fix(h),
        )
    ]


def _gpus(conds) -> str:
    return join(", ", (g.pci_bus_id or M("the GPU") for g in conds[:8])) + (M(" and %d more", len(conds) - 8) if len(conds) > 8 else "")


def _reset(s, conds) -> str:
    """The reset command for these GPUs (on the host, from inside a container: a container never resets a GPU)."""
    where = " -i %s" % conds[0].pci_bus_id if len(conds) == 1 and conds[0].pci_bus_id else ""
    if s.platform.container:
        return M("# on the host, once nothing runs on the GPU: sudo nvidia-smi -r%s (or reboot the node)", where)
    return M("%snvidia-smi -r%s    # reset the GPU once nothing runs on it (or reboot)", c.sudo(s), where)


def conditions(s, conds) -> List:
    out = []
    failed = [g for g in conds if g.remap_failed]
    if failed:
        out.append(F("gpu-row-remap-failed", "error", M("a GPU's memory could not be repaired: row remapping failed on %s", _gpus(failed)),
                     M("nvidia-smi -q says 'Remapping Failure Occurred: Yes' for %s: the GPU found a bad memory row it could "
                       "not remap, so errors there recur. NVIDIA's memory error management guide makes this a reason to "
                       "replace the GPU (RMA): take it out of service.", _gpus(failed)),
                     [M("nvidia-smi -q -d ROW_REMAPPER%s    # the remap counts and the bank histogram",
                        " -i %s" % failed[0].pci_bus_id if failed[0].pci_bus_id else ""),
                      M("# drain the node and run NVIDIA's field diagnostic, then open an RMA with the output of:"),
                      "%snvidia-bug-report.sh" % c.sudo(s)]))
    ecc = [g for g in conds if (g.ecc_volatile_uncorrected or 0) > 0 or (g.ecc_aggregate_uncorrected or 0) > 0]
    if ecc:
        now = [g for g in ecc if (g.ecc_volatile_uncorrected or 0) > 0]
        counts = join("; ", (M("%s: %s since the driver loaded, %s in its life",
                                g.pci_bus_id or M("the GPU"), "?" if g.ecc_volatile_uncorrected is None else g.ecc_volatile_uncorrected,
                                "?" if g.ecc_aggregate_uncorrected is None else g.ecc_aggregate_uncorrected) for g in ecc[:8]))
        out.append(F("gpu-ecc-uncorrectable", "error" if now else "warning",
                     M("uncorrectable ECC memory errors on %s", _gpus(ecc)),
                     M("nvidia-smi -q counts uncorrectable ECC errors (%s). %s", counts,
                       M("A program that touched the bad memory was stopped (Xid 48, 63, 94 in the kernel log); the "
                         "driver retires the page or remaps the row at the next GPU reset.") if now else
                       M("None since the driver loaded: the memory was repaired (a retired page or a remapped row); "
                         "watch whether the lifetime count grows.")),
                     [M("nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER    # the counts, retired pages and remapped rows")]
                     + ([_reset(s, now)] if now else [])))
    pending = [g for g in conds if (g.remap_pending or g.retirement_pending) and not g.remap_failed]
    if pending:
        what = join("; ", (M("%s: %s", g.pci_bus_id or M("the GPU"),
                               M("a row remap and a page retirement") if g.remap_pending and g.retirement_pending else
                               M("a row remap") if g.remap_pending else M("a page retirement")) for g in pending[:8]))
        out.append(F("gpu-memory-repair-pending", "warning", M("a GPU memory repair waits for a GPU reset on %s", _gpus(pending)),
                     M("nvidia-smi -q says a memory repair is pending (%s): it takes effect only when the GPU is reset or the "
                       "node reboots; until then the bad memory stays in use (NVIDIA's memory error management guide).", what),
                     [_reset(s, pending)]))
    slow = [g for g in conds if g.slowdowns]
    if slow:
        which = join("; ", (M("%s: %s", g.pci_bus_id or M("the GPU"), ", ".join(g.slowdowns)) for g in slow[:8]))
        brake = any("HW Power Brake Slowdown" in g.slowdowns for g in slow)
        hot = any(x in ("HW Thermal Slowdown", "SW Thermal Slowdown") for g in slow for x in g.slowdowns)
        out.append(F("gpu-clocks-slowdown", "warning", M("the hardware is slowing the GPU clocks down on %s", _gpus(slow)),
                     M("nvidia-smi -q lists these clock event reasons as active: %s. %s", which, join(" ", (x for x, on in (
                         (M("The power brake is asserted from outside the GPU (the system's power supply or power cabling)."), brake),
                         (M("The GPU is too hot (airflow, fans, the room, a blocked heatsink)."), hot),
                         (M("HW Slowdown alone: heat or the power brake, as nvml.h says."), not brake and not hot)) if on))),
                     [M("nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER    # the reasons, temperatures and power limits now"),
                      M("nvidia-smi -q -d PERFORMANCE -l 5    # watch the reasons under load, every 5 s (Ctrl-C stops)")]))
    return out


def _pci(d) -> str:
    return (d.address or M("the GPU")) + (" (%s)" % d.name if d.name else "")


def _gts(v) -> str:
    return ("%g" % v) if v is not None else "?"


def pci_devices(s, devices) -> List:
    """A pasted lspci's NVIDIA GPUs: ``rev ff`` (config space all ones) and a link below what it can run."""
    out = []
    gone = [d for d in devices if d.revision == "ff"]
    if gone:
        first = gone[0].address or "ADDR"
        full = first if first.count(":") == 2 else "0000:" + first
        out.append(F("gpu-pci-unreadable", "warning", M("lspci reads all ones from the GPU at %s (rev ff)", ", ".join(d.address or "?" for d in gone[:8])),
                     M("lspci shows %s as rev ff: its PCI configuration space reads all ones, so nothing on the bus "
                       "answers there. On a laptop with hybrid graphics that is the discrete GPU switched off by power "
                       "management (bbswitch, runtime D3cold), normal until a program wakes it. On a server or desktop the "
                       "GPU stopped answering: it fell off the bus (the kernel log's Xid 79), from power, heat or seating, "
                       "and stays unusable until a reset or a reboot.", join(", ", (_pci(d) for d in gone[:8]))),
                     [M("cat /sys/bus/pci/devices/%s/power/runtime_status    # 'suspended': switched off by power management", full),
                      M("%sdmesg -T | grep -i -E 'NVRM|Xid|fallen off'    # 'fallen off the bus' or Xid 79: the GPU stopped answering",
                        c.sudo(s))]))
    # sysfs (the doctor, on a GPU that may be idle): fewer lanes only; a lower speed alone is the idle GPU saving power
    slow = [d for d in devices if d.revision != "ff" and (
        (d.link_width is not None and d.link_cap_width is not None and d.link_width < d.link_cap_width)
        or (d.source != "sysfs" and d.link_speed is not None and d.link_cap_speed is not None and d.link_speed < d.link_cap_speed))]
    if slow:
        narrow = [d for d in slow if d.link_width is not None and d.link_cap_width is not None and d.link_width < d.link_cap_width]
        links = join("; ", (M("%s: %s GT/s x%s of %s GT/s x%s", _pci(d), _gts(d.link_speed), d.link_width or "?", _gts(d.link_cap_speed),
                               d.link_cap_width or "?") for d in slow[:8]))
        where = slow[0].address
        out.append(F("gpu-pcie-link-downgraded", "warning" if narrow else "info",
                     M("a GPU's PCIe link runs below what it can (%s)", M("fewer lanes") if narrow else M("a lower speed")),
                     M("%s: %s. %s", M("The kernel's link state (sysfs current_link_* against max_link_*)")
                       if slow[0].source == "sysfs" else M("lspci's LnkSta against LnkCap"), links,
                       M("Fewer lanes than the GPU has is a slot, riser or seating problem (or a slot wired for fewer "
                         "lanes): host-to-GPU copies run at that fraction.") if narrow else
                       M("A lower speed alone is normal at idle (the GPU drops to 2.5 GT/s to save power) and should rise "
                         "under load; if it stays low while a job runs, the slot, a riser, the BIOS's PCIe setting, or "
                         "the slot's own generation (the root port's LnkCap) holds it down.")),
                     [M("nvidia-smi --query-gpu=index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,"
                        "pcie.link.width.max --format=csv    # while a job runs"),
                      "%slspci -vv%s | grep -E 'LnkCap|LnkSta'" % (c.sudo(s), " -s %s" % where if where else "")]))
    return out
