"""Resources: a GPU whose memory is nearly full, and memory held by processes that are gone or zombies."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M, N_, join

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List

F = c.make("resources")
BUSY = 0.90  # used / total at or above this is "nearly full"


def check(s, tables=None) -> List:
    return busy(s) + stale(s)


def _procs_on(s, g) -> List:
    return [p for p in s.processes if (p.gpu_index is not None and p.gpu_index == g.index) or (g.uuid and p.gpu_uuid == g.uuid)]


def _short_name(p, limit: int = 32) -> str:
    """A process's command for a comment: at most ``limit`` characters."""
    name = (p.name or "").strip() or "pid %d" % p.pid
    return name if len(name) <= limit else name[: limit - 3] + "..."


STATES = {"zombie": N_("zombie"), "gone": N_("gone")}  # a process's state (GpuProcess.state), said in words


def _who(p) -> str:
    bits = ["pid %d" % p.pid]
    if p.owner:
        bits.append(M("user %s", p.owner))
    if p.name:
        bits.append(p.name)
    if p.used_memory_mib is not None:
        bits.append("%d MiB" % p.used_memory_mib)
    if p.state == "elsewhere":
        bits.append(M("a pid of another PID namespace (another container's job, not this one's to end)"))
    elif p.state and p.state != "running":
        bits.append(M(STATES[p.state]) if p.state in STATES else p.state)
    return join(M(", "), bits)


def busy(s) -> List:
    """One finding for every GPU whose memory is nearly full (a finding id is reported once: four full GPUs are one
    finding naming all four, not GPU 0 alone)."""
    full = [g for g in s.gpus if g.memory_total_mib and g.memory_used_mib is not None
            and g.memory_used_mib >= BUSY * g.memory_total_mib]
    if not full:
        return []
    details, fix, killed = [], [], set()
    for g in full:
        procs = sorted(_procs_on(s, g), key=lambda p: -(p.used_memory_mib or 0))
        running = [p for p in procs if p.state in (None, "running") and p.pid not in killed]
        if procs:
            held = M("Held by: %s.", join(M("; "), [_who(p) for p in procs]))
        else:
            held = M("No process is listed: it belongs to another container or PID namespace (or nvidia-smi may not show it).")
        details.append(M("%s has %d MiB of %d MiB in use (%d%%). %s",
                         c.gpu_label(g), g.memory_used_mib, g.memory_total_mib,
                         round(100.0 * g.memory_used_mib / g.memory_total_mib), held))
        fix += ["kill %d    # %s" % (p.pid, _short_name(p)) for p in running]
        killed.update(p.pid for p in running)
        if not procs:
            fix.append(M("%sfuser -v /dev/nvidia%d    # who has the GPU open", c.sudo(s), g.index))
    if killed:
        pids = " ".join(str(p) for p in sorted(killed))
        if len(killed) == 1:
            fix.append(M("kill -9 %s    # if it does not exit%s", pids, M("; sudo for another user's") if c.sudo(s) else ""))
        else:
            fix.append(M("kill -9 %s    # if they do not exit%s", pids, M("; sudo for another user's") if c.sudo(s) else ""))
    indices = ",".join(str(g.index) for g in full)
    fix.append("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv -i %s" % indices)
    if len(full) == 1:
        g = full[0]
        title = M("GPU %d memory is nearly full: %d of %d MiB used", g.index, g.memory_used_mib, g.memory_total_mib)
    else:
        title = M("GPUs %s memory is nearly full (%d of %d GPUs)", ", ".join(str(g.index) for g in full), len(full), len(s.gpus))
    detail = join(" ", details) + M(" A new job there fails with \"CUDA out of memory\".")
    return [F("gpu-memory-busy", "warning", title, detail, fix)]


def stale(s) -> List:
    stale_procs = [p for p in s.processes if p.state in ("gone", "zombie")]
    if not stale_procs:
        return []
    fix = []
    for p in stale_procs:
        gpu = "" if p.gpu_index is None else " -i %d" % p.gpu_index
        if p.state == "zombie":
            fix.append(M("kill -9 $(ps -o ppid= -p %d)    # a zombie frees its GPU memory when its parent reaps it", p.pid))
        else:
            fix.append(M("%sfuser -v /dev/nvidia*    # pid %d is gone: find who still holds the device", c.sudo(s), p.pid))
            if not s.platform.container:  # a container's GPU is shared: never reset it under other containers' jobs
                fix.append(M("%snvidia-smi --gpu-reset%s    # when nothing else uses that GPU; else reboot", c.sudo(s), gpu))
    return [
        F(
            "stale-gpu-process",
            "warning",
            M("GPU memory is held by %s", M("a dead process") if len(stale_procs) == 1 else M("%d dead processes", len(stale_procs))),
            M("nvidia-smi lists %s. A zombie keeps its GPU memory until its parent reaps it; a pid that no longer exists "
              "here is in another PID namespace (a container) or its memory leaked in the driver.",
              join(M("; "), [_who(p) + ("" if p.gpu_index is None else M(" on GPU %d", p.gpu_index)) for p in stale_procs])),
            fix,
        )
    ]
