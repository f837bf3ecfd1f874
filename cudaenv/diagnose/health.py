"""GPU health, in the driver section: the kernel log's Xids by code (what each means, the first step) and the NVIDIA
GPUs the PCI bus holds but the driver's tools did not open. Read from ``Snapshot.health``, which the probe fills
only when a GPU looked sick (and ``explain`` fills from a pasted kernel log)."""

from typing import List, Optional

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M
from cudaenv.facts.xid import CATALOG, xid_row

F = c.make("driver")
SHOWN = 8  # Xid codes described one by one; the rest are named


def check(s, tables=None) -> List:
    h = getattr(s, "health", None)
    if h is None:
        return []
    return xids(s, h, c.table(tables, "xid")) + unreachable_gpu(s, h)


def xid_summary(h, table=None) -> List[str]:
    """One sentence per Xid code the log holds: how often, on which GPUs, what it means and the first step."""
    out = []
    for g in h.xids[:SHOWN]:
        row = xid_row(g.code, table)
        where = " on %s" % ", ".join(g.pci[:4]) if g.pci else ""
        times = "once" if g.count == 1 else "%d times" % g.count
        if row is None:
            out.append("Xid %d, %s%s: not in cudaenv's table; look it up in NVIDIA's Xid catalog (%s)." % (g.code, times, where, CATALOG))
        else:
            out.append("Xid %d (%s), %s%s: %s. First: %s." % (g.code, row["name"], times, where, row["meaning"], row["first_step"]))
    if len(h.xids) > SHOWN:
        out.append("Also Xid %s." % ", ".join(str(g.code) for g in h.xids[SHOWN:]))
    return out


def xid_names(h, table=None) -> str:
    """The log's Xid codes in short: "Xid 79 (GPU has fallen off the bus) on 0000:41:00, Xid 13"."""
    out = []
    for g in h.xids[:SHOWN]:
        row = xid_row(g.code, table)
        out.append("Xid %d%s%s" % (g.code, " (%s)" % row["name"] if row else "", " on %s" % ", ".join(g.pci[:4]) if g.pci else ""))
    return ", ".join(out)


def _worst(h, table=None) -> Optional[str]:
    rows = [xid_row(g.code, table) for g in h.xids]
    if any(r is not None and r["severity"] == "error" for r in rows) or h.fallen_off_bus:
        return "error"
    return "warning" if h.xids else None


def dcgm_fix(h) -> List[str]:
    """DCGM's quick diagnostic, where DCGM is installed (run after the reset: it needs the GPU to answer)."""
    return ["dcgmi diag -r 1    # DCGM's quick check of every GPU, once they answer again (-r 2: a longer one)"] if h.dcgmi else []


def xids(s, h, table=None) -> List:
    worst = _worst(h, table)
    if worst is None:
        return []
    severity = "error" if worst == "error" else "warning"
    where = "the kernel log (%s)" % h.log if h.log and h.log != "paste" else "the pasted kernel log"
    off = " It also says the GPU at %s has fallen off the bus." % ", ".join(h.fallen_off_bus) if h.fallen_off_bus and not any(g.code == 79 for g in h.xids) else ""
    reset = [g.code for g in h.xids if (xid_row(g.code, table) or {}).get("reset")]
    fix = [] if not reset else ["nvidia-smi -q -d PAGE_RETIREMENT,ECC,PERFORMANCE    # retired pages, ECC counts and throttle reasons of the GPUs that answer",
                                "sudo nvidia-smi -r -i N    # reset GPU N once nothing runs on it (or reboot)"]
    return [
        F(
            "gpu-xid",
            severity,
            (M("the kernel log holds GPU faults (Xid %s)", ", ".join(str(g.code) for g in h.xids[:SHOWN])) if h.xids else M("a GPU fell off the bus")),
            M("%s shows: %s%s", where[0].upper() + where[1:], " ".join(xid_summary(h, table)), off),
            fix + dcgm_fix(h) + ["sudo nvidia-bug-report.sh    # the log bundle NVIDIA support asks for"],
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
            "it fell off the bus, failed to initialise, or is held in reset.%s", ", ".join(h.unreachable), (" " + " ".join(xid_summary(h)) if h.xids else M(" The kernel log says why (NVRM lines)."))),
            ["sudo dmesg -T | grep -i -E 'NVRM|Xid|fallen off'    # what the driver logged for it",
             "lspci -nnk -s %s    # 'Kernel driver in use: nvidia', and its link state with -vv" % h.unreachable[0]]
            + dcgm_fix(h),
        )
    ]
