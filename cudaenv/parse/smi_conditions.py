"""``nvidia-smi -q``'s per-GPU health sections (pure: text in, records out): ECC mode and uncorrectable counts,
retired pages, remapped rows, the clock event (throttle) reasons that say the hardware slows the GPU down, and the
persistence mode.

The layout (nvidia-smi(1), "-q"; the outputs recorded in tests/recorded/smi-q-*.txt): a block per GPU headed
``GPU 00000000:10:1C.0``, then ``Key : Value`` lines and section headings indented four spaces a level. Newer drivers
print ``SRAM|DRAM Uncorrectable`` counts (summed here) where older ones print ``Double Bit`` ... ``Total``; ``Clocks
Throttle Reasons`` became ``Clocks Event Reasons`` (R535). A paste that starts inside a GPU's block (``grep -A``) is
that one GPU's. Lines over 1,000 characters are cut, and at most 64 GPUs and 200,000 lines are read.
"""

import re
from typing import Dict, List, Optional, Tuple

from cudaenv.model.snapshot import GpuCondition

# The clock reasons that mean the hardware or the thermal limit holds the clocks down (nvml.h's clocksEventReasons):
# not Idle, the applications clocks, Sync Boost or the SW power cap a busy GPU reaches in normal work.
HW_SLOWDOWNS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")
_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_PAIR = re.compile(r"^( *)([A-Za-z][A-Za-z0-9 ./()-]{0,60}?)\s*:\s*(.{0,200})$")
_HEADING = re.compile(r"^( *)([A-Za-z][A-Za-z0-9 ./()-]{0,60}?)\s*$")
MAX_GPUS = 64
MAX_LINES = 200_000


def _int(value: str) -> Optional[int]:
    v = value.strip()
    return int(v) if v.isdigit() and v.isascii() and len(v) <= 18 else None


def _yes(value: str) -> Optional[bool]:
    v = value.strip().lower()
    return True if v == "yes" else False if v == "no" else None


class _Gpu:
    def __init__(self, bus: Optional[str]):
        self.bus = bus
        self.values: Dict[str, object] = {}
        self.sums: Dict[str, int] = {}
        self.slowdowns: List[str] = []

    def add(self, path: Tuple[str, ...], value: str) -> None:
        top, key = (path[0] if path else ""), path[-1]
        if top == "Persistence Mode" and len(path) == 1:
            self.values["persistence_mode"] = value.strip() or None
        elif path[:1] == ("ECC Mode",) and key == "Current":
            self.values["ecc_mode"] = value.strip() or None
        elif top == "ECC Errors" and len(path) >= 3 and path[1] in ("Volatile", "Aggregate"):
            field = "ecc_%s_uncorrected" % path[1].lower()
            n = _int(value)
            if n is None:
                return
            if "Uncorrectable" in key and len(path) == 3:  # SRAM / DRAM Uncorrectable (and its Parity, SEC-DED parts)
                self.sums[field] = self.sums.get(field, 0) + n
            elif path[2] == "Double Bit" and key == "Total":
                self.values[field] = n
        elif top == "Retired Pages" and len(path) == 2:
            if key in ("Single Bit ECC", "Double Bit ECC") and _int(value) is not None:
                self.sums["retired_pages"] = self.sums.get("retired_pages", 0) + (_int(value) or 0)
            elif key.startswith("Pending"):
                self.values["retirement_pending"] = _yes(value)
        elif top == "Remapped Rows" and len(path) == 2:
            if key == "Uncorrectable Error":
                self.values["remapped_uncorrectable"] = _int(value)
            elif key == "Pending":
                self.values["remap_pending"] = _yes(value)
            elif key == "Remapping Failure Occurred":
                self.values["remap_failed"] = _yes(value)
        elif top in ("Clocks Throttle Reasons", "Clocks Event Reasons") and key in HW_SLOWDOWNS:
            if value.strip() == "Active" and key not in self.slowdowns:
                self.slowdowns.append(key)

    def record(self) -> GpuCondition:
        values = dict(self.values)
        for field, total in self.sums.items():
            values.setdefault(field, total)
        return GpuCondition(pci_bus_id=self.bus, slowdowns=tuple(s for s in HW_SLOWDOWNS if s in self.slowdowns), **values)


def parse_smi_conditions(text: object) -> Tuple[GpuCondition, ...]:
    """Each GPU's :class:`GpuCondition` in ``nvidia-smi -q`` output (any of its ``-d`` selections), in order; () when
    the text holds none of its sections."""
    if not isinstance(text, str):
        return ()
    gpus: List[_Gpu] = []
    current: Optional[_Gpu] = None
    stack: List[Tuple[int, str]] = []  # (indent, heading) of the open sections
    base = None  # the indent of a GPU's own keys (4 in nvidia-smi's output; a grep -A paste may start deeper)
    for n, raw in enumerate(text.splitlines()):
        if n >= MAX_LINES:
            break
        line = raw[:1000].rstrip().replace("\t", "    ")
        if not line.strip():
            continue
        m = _GPU.match(line.strip()) if not line.startswith(" ") else None
        if m is not None:
            if len(gpus) >= MAX_GPUS:
                break
            current, stack, base = _Gpu(m.group(1)), [], None
            gpus.append(current)
            continue
        pair = _PAIR.match(line)
        heading = _HEADING.match(line) if pair is None else None
        match = pair or heading
        if match is None:
            continue
        indent = len(match.group(1))
        if indent == 0 and pair is not None:  # the header's "Driver Version : ...": outside every GPU
            stack = []
            continue
        if current is None:  # a paste that starts inside a GPU's block
            current = _Gpu(None)
            gpus.append(current)
        if base is None or indent < base:
            base = indent
        while stack and stack[-1][0] >= indent:
            stack.pop()
        name = match.group(2).strip()
        if heading is not None:
            stack.append((indent, name))
            continue
        current.add(tuple(h for _, h in stack) + (name,), match.group(3))
    out = []
    for g in gpus:
        r = g.record()
        if r != GpuCondition(pci_bus_id=g.bus):  # a block with none of these sections says nothing
            out.append(r)
    return tuple(out)
