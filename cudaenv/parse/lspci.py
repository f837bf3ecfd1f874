"""``lspci`` output (plain, ``-nn``, ``-k``, ``-v``/``-vv``) read for its NVIDIA GPUs (pure): each display or 3D
controller of vendor NVIDIA (by name, or ``[10de:xxxx]`` with ``-nn``), its revision (``rev ff``: the configuration
space reads all ones), the driver in use, and the PCIe link it can run (``LnkCap``) against the one it runs
(``LnkSta``). Link lines pasted without their device line are one device of unknown address.

Formats: pciutils' lspci(8) and the outputs recorded in tests/recorded/lspci-*.txt (tab or space indents).
"""

from __future__ import annotations

from cudaenv.model.snapshot import PciDevice
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor's start-up reads few of these

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple

_DEVICE = LazyPattern(r"^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+([^:\[]{1,80}?)(?:\s*\[[0-9a-fA-F]{4}\])?:\s+(.{1,300})$")
_REV = LazyPattern(r"\(rev ([0-9a-fA-F]{2})\)")
_IDS = LazyPattern(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_SPEED = LazyPattern(r"Speed\s+([0-9]{1,3}(?:\.[0-9]{1,2})?)\s*GT/s")
_WIDTH = LazyPattern(r"Width\s+x([0-9]{1,2})\b")
_PROG_IF = LazyPattern(r"\(prog-if [^)]{0,40}\)")
LSPCI_GPU_CLASSES = ("vga compatible controller", "3d controller", "display controller")  # lspci's words for 0x0300/0x0302/0x0380
MAX_DEVICES = 256
MAX_LINES = 200_000


def _nvidia(rest: str) -> bool:
    ids = _IDS.search(rest)
    if ids is not None:
        return ids.group(1).lower() == "10de"
    return rest.lower().startswith("nvidia")


def _name(rest: str) -> str:
    out = _REV.sub("", rest)
    out = _PROG_IF.sub("", out)
    out = _IDS.sub("", out)
    return " ".join(out.split())[:200]


class _Dev:
    def __init__(self, address: Optional[str], name: Optional[str], revision: Optional[str]):
        self.values = {"address": address, "name": name, "revision": revision}

    def link(self, which: str, line: str) -> None:
        speed, width = _SPEED.search(line), _WIDTH.search(line)
        prefix = "link_cap" if which == "LnkCap" else "link"
        if speed is not None:
            self.values[prefix + "_speed"] = float(speed.group(1))
        if width is not None:
            self.values[prefix + "_width"] = int(width.group(1))

    def record(self) -> PciDevice:
        return PciDevice(**self.values)


def parse_lspci(text: object) -> Tuple[PciDevice, ...]:
    """The NVIDIA GPUs in ``text``, in order (at most 256); () when it holds none."""
    if not isinstance(text, str):
        return ()
    out: List[_Dev] = []
    current: Optional[_Dev] = None  # the NVIDIA GPU whose indented lines follow
    seen_device = False
    for n, raw in enumerate(text.splitlines()):
        if n >= MAX_LINES or len(out) > MAX_DEVICES:
            break
        line = raw[:1000].rstrip()
        if not line.strip():
            continue
        if not line[0].isspace():
            m = _DEVICE.match(line.strip())
            if m is None:
                continue
            seen_device = True
            current = None
            klass, rest = m.group(2).strip().lower(), m.group(3)
            if klass in LSPCI_GPU_CLASSES and _nvidia(rest):
                rev = _REV.search(rest)
                current = _Dev(m.group(1), _name(rest), rev.group(1).lower() if rev else None)
                out.append(current)
            continue
        body = line.strip()
        key = body.split(":", 1)[0]
        if key in ("LnkCap", "LnkSta"):
            if current is None and not seen_device:  # link lines pasted alone: one device, address unknown
                current = _Dev(None, None, None)
                out.append(current)
            if current is not None:
                current.link(key, body)
        elif key == "Kernel driver in use" and current is not None:
            current.values["driver"] = body.split(":", 1)[1].strip()[:64] or None
    return tuple(d.record() for d in out[:MAX_DEVICES])


_SYSFS_SPEED = LazyPattern(r"^\s*([0-9]{1,3}(?:\.[0-9]{1,2})?)\s*GT/s")


def parse_sysfs_link(cur_speed: object, max_speed: object, cur_width: object, max_width: object) -> Optional[Tuple]:
    """sysfs' ``current_link_speed`` / ``max_link_speed`` (``"16.0 GT/s PCIe"``) and ``current_link_width`` /
    ``max_link_width`` (``"16"``) as ``(speed, width, cap speed, cap width)``; None when none reads (``Unknown``)."""
    def speed(v):
        m = _SYSFS_SPEED.match(v) if isinstance(v, str) else None
        return float(m.group(1)) if m else None

    def width(v):
        v = v.strip() if isinstance(v, str) else ""
        return int(v) if v.isdigit() and v.isascii() and 0 < len(v) <= 2 and int(v) > 0 else None

    out = (speed(cur_speed), width(cur_width), speed(max_speed), width(max_width))
    return out if any(x is not None for x in out) else None
