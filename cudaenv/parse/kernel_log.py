"""The kernel log's GPU faults: ``NVRM: Xid`` lines grouped by code, and ``GPU has fallen off the bus`` lines.

Reads ``journalctl -k``, ``dmesg`` (with or without ``-T``) and ``/var/log/kern.log`` the same way: each line is
searched from its ``NVRM:`` on, whatever prefix (a timestamp, a host name, ``kernel:``) comes before it. Pure and
linear: at most ``MAX_LINES`` lines of bounded length, one anchored regular expression per line that holds ``Xid``
or ``fallen off``.

>>> log = parse_xid_log("[ 12.3] NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', GPU has fallen off the bus.")
>>> [(g.code, g.count, g.pci) for g in log.xids]
[(79, 1, ('0000:41:00',))]
"""

from __future__ import annotations

import re

from cudaenv.model.snapshot import GpuHealth, XidGroup
from cudaenv.parse._lines import as_text, lines

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Dict, List, Tuple
    from cudaenv.parse._lines import Text

FIRST = 300  # characters of a code's first line kept as its evidence
_PCI = r"(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?"
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(" + _PCI + r")\):? ?(\d{1,4})\b")
# "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus." and the older "NVRM: GPU at 0000:01:00.0 has fallen off the bus."
_OFF_BUS = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?(" + _PCI + r"):? (?:GPU )?has fallen off the bus")
# Newer drivers spread it over lines: "NVRM: The NVIDIA GPU 0000:b3:00.0" ... "NVRM: fallen off the bus and is not ..."
_THE_GPU = re.compile(r"NVRM: The NVIDIA GPU (" + _PCI + r")")
SPREAD = 3  # lines after "The NVIDIA GPU ADDRESS" that may say it fell off the bus


def parse_xid_log(data: Text, log: str = "paste") -> GpuHealth:
    """The Xid groups (by code, in the order first logged) and the fallen-off-the-bus GPUs of a kernel log."""
    groups: Dict[int, List] = {}
    off_bus: List[str] = []
    pending, left = None, 0  # the address of a "The NVIDIA GPU ADDRESS" line, and the lines it may continue on
    for line in lines(as_text(data)):
        if "NVRM" not in line:
            continue
        left -= 1
        if "The NVIDIA GPU" in line:
            m = _THE_GPU.search(line)
            if m is not None:
                pending, left = m.group(1), SPREAD
        if "Xid" in line:
            m = _XID.search(line)
            if m is not None:
                code, pci = int(m.group(2)), m.group(1)
                entry = groups.get(code)
                if entry is None:
                    groups[code] = [1, [pci], line[m.start():][:FIRST]]
                else:
                    entry[0] += 1
                    if pci not in entry[1]:
                        entry[1].append(pci)
                continue
        if "fallen off" in line:
            m = _OFF_BUS.search(line)
            address = m.group(1) if m is not None else (pending if left >= 0 else None)
            if address is not None and address not in off_bus:
                off_bus.append(address)
    xids: Tuple[XidGroup, ...] = tuple(
        XidGroup(code=code, count=count, pci=tuple(pcis), first=first) for code, (count, pcis, first) in groups.items()
    )
    return GpuHealth(log=log, xids=xids, fallen_off_bus=tuple(off_bus))


def has_gpu_faults(health: GpuHealth) -> bool:
    """True when the log showed an Xid or a GPU that fell off the bus."""
    return bool(health.xids or health.fallen_off_bus)
