"""Visibility: CUDA_VISIBLE_DEVICES that hides GPUs, CUDA's order against nvidia-smi's, torch's device count."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M, join
from cudaenv.core.version import cc_tuple
from cudaenv.model.visible import visible_gpus

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional

F = c.make("visibility")


def check(s, tables=None) -> List:
    if not s.gpus:
        return []
    out = []
    out += empty(s)
    out += invalid(s)
    out += order(s)
    out += torch_count(s)
    return out


def mapping_text(s) -> str:
    """``cuda:0 = GPU 2 (NVIDIA A100), cuda:1 = GPU 3 (NVIDIA A100)``."""
    parts = []
    for m in s.visible_devices.mapping:
        g = c.gpu_by_index(s, m.physical)
        parts.append("cuda:%d = GPU %d%s" % (m.logical, m.physical, (" (%s)" % g.name) if g is not None and g.name else ""))
    return ", ".join(parts) if parts else M("no GPU")


def _all_indices(s) -> str:
    return ",".join(str(g.index) for g in sorted(s.gpus, key=lambda g: g.index))


def corrected_value(s) -> Optional[str]:
    """CUDA_VISIBLE_DEVICES with the entries that name no GPU, and repeats, dropped; None when nothing is left."""
    from cudaenv.parse.visible_devices import corrected_value as corrected

    return corrected(s.visible_devices.entries, s.gpus)


def empty(s) -> List:
    cvd = s.visible_devices.cuda_visible_devices
    if cvd is None or cvd.strip() != "":
        return []
    return [
        F(
            "visible-devices-empty",
            "error",
            M("CUDA_VISIBLE_DEVICES is set but empty: no GPU is visible"),
            M("CUDA_VISIBLE_DEVICES=%r hides every GPU from CUDA programs, although nvidia-smi shows %d (%s).",
              cvd, len(s.gpus), join(M(", "), [c.gpu_label(g) for g in s.gpus])),
            [M("unset CUDA_VISIBLE_DEVICES    # all GPUs"), "export CUDA_VISIBLE_DEVICES=%s" % _all_indices(s)],
        )
    ]


def invalid(s) -> List:
    v = s.visible_devices
    if v.cuda_visible_devices is None or not v.cuda_visible_devices.strip():
        return []
    if not v.invalid_entry:
        return []  # other problems (the device order, an entry read like strtoul, unverifiable UUIDs) are not this finding
    visible = mapping_text(s)
    problems = [p.message for p in v.issues if p.kind != "order-differs"]
    reason = join(M("; "), problems) or M("entry %r matches no GPU", v.invalid_entry)
    rule = "" if problems else M(" CUDA stops at the first invalid entry and ignores it and everything after it.")
    detail = M("CUDA_VISIBLE_DEVICES=%s: %s.%s The GPUs actually visible: %s. nvidia-smi shows %d GPU%s, numbered %s.",
               v.cuda_visible_devices, reason, rule, visible, len(s.gpus), "" if len(s.gpus) == 1 else "s", _all_indices(s))
    fixed = corrected_value(s)
    fix = []
    if fixed and fixed != v.cuda_visible_devices:
        fix.append("export CUDA_VISIBLE_DEVICES=%s" % fixed)
    elif not fixed:
        fix.append("export CUDA_VISIBLE_DEVICES=%s" % _all_indices(s))
    fix.append(M("unset CUDA_VISIBLE_DEVICES    # all %d GPU%s", len(s.gpus), "" if len(s.gpus) == 1 else "s"))
    severity = "error" if not v.mapping else "warning"
    return [F("visible-devices-invalid", severity, M("CUDA_VISIBLE_DEVICES hides GPUs: an entry is invalid"), detail, fix)]


def order(s) -> List:
    v = s.visible_devices
    gpus = visible_gpus(s)
    models = {g.name for g in gpus if g.name}
    if len(models) < 2 or (v.device_order or "").strip().upper() == "PCI_BUS_ID":
        return []
    smi = ", ".join("%d: %s" % (g.index, g.name) for g in gpus)
    t = s.torch
    if t is not None and t.dynamic and t.devices:
        cuda = ", ".join("cuda:%d: %s" % (i, d.name) for i, d in enumerate(t.devices))
        seen = M("torch sees, in CUDA's order: %s.", cuda)
    else:
        ranked = sorted(gpus, key=lambda g: cc_tuple(g.compute_capability) or (0, 0), reverse=True)
        seen = M("CUDA's default order (FASTEST_FIRST) would likely start with %s.", ranked[0].name)
    return [
        F(
            "device-order-differs",
            "warning",
            M("different GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: cuda:0 may not be GPU 0"),
            M("nvidia-smi numbers GPUs in PCI bus order (%s); CUDA numbers them fastest first unless "
              "CUDA_DEVICE_ORDER=PCI_BUS_ID%s. %s",
              smi, M(" (it is %s)", v.device_order) if v.device_order else M(" (unset here)"), seen),
            [M("export CUDA_DEVICE_ORDER=PCI_BUS_ID    # cuda:N is then nvidia-smi's GPU N (within CUDA_VISIBLE_DEVICES)")],
        )
    ]


def torch_count(s) -> List:
    t = s.torch
    if t is None or not t.dynamic or t.device_count is None or not t.cuda_available:
        return []
    v = s.visible_devices
    expected = len(v.mapping) if v.cuda_visible_devices is not None else len(s.gpus)
    n = t.device_count
    if n == len(s.gpus) and n == expected:
        return []
    if n == expected:
        return [
            F(
                "torch-count-differs",
                "info",
                M("torch sees %d of the %d GPUs: CUDA_VISIBLE_DEVICES=%s", n, len(s.gpus), v.cuda_visible_devices),
                M("nvidia-smi lists %d GPUs; CUDA_VISIBLE_DEVICES=%s leaves %d, renumbered from 0: %s. "
                  "cuda:%d and above do not exist in this environment.",
                  len(s.gpus), v.cuda_visible_devices, n, mapping_text(s), n),
                [M("unset CUDA_VISIBLE_DEVICES    # to use all %d", len(s.gpus))],
            )
        ]
    causes = []
    if s.platform.nvidia_visible_devices not in (None, "", "all"):
        causes.append(M("the container runtime exposes NVIDIA_VISIBLE_DEVICES=%s", s.platform.nvidia_visible_devices))
    if any(g.mig_uuids for g in s.gpus):
        causes.append(M("MIG is on: CUDA sees MIG instances, not whole GPUs"))
    causes.append(M("a GPU is in a bad state (nvidia-smi -q -d PAGE_RETIREMENT,ECC), or torch ran with another environment"))
    return [
        F(
            "torch-count-differs",
            "warning",
            M("torch sees %d GPU%s, nvidia-smi %d", n, "" if n == 1 else "s", len(s.gpus)),
            M("torch.cuda.device_count() is %d but %d %s expected (%s). Possible causes: %s.",
              n, expected, "is" if expected == 1 else "are",
              ("CUDA_VISIBLE_DEVICES=%s: " % v.cuda_visible_devices + mapping_text(s)) if v.cuda_visible_devices is not None
              else M("CUDA_VISIBLE_DEVICES is unset"), join("; ", causes)),
            ["%s -c \"import torch; print([torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])\"" % c.python_cmd(s),
             "nvidia-smi -L"],
        )
    ]
