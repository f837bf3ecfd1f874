"""CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, read with CUDA's rules into a logical -> physical mapping.

The rules follow torch's own reading of the variable, ``_parse_visible_devices`` and
``_transform_uuid_to_ordinals`` in pytorch/pytorch ``torch/cuda/__init__.py`` (which mirror CUDA, PR #84879),
plus the trimming ``_device_count_nvml`` does with the real device count:

* unset: every GPU; set but empty (or blank): no GPU;
* the first entry decides the kind: ``GPU-...`` UUIDs, ``MIG-...`` UUIDs, or integer ordinals; an entry of
  another kind ends the list;
* ordinals are read like C's ``strtoul`` (``1gpu2`` is 1; surrounding spaces ignored); a negative or
  unreadable entry hides itself and every entry after it (``0,2,-1,1`` -> 0, 2);
* a repeated device (before the first invalid entry) makes the whole list invalid: no GPU at all;
* an ordinal past the last GPU ends the list there (``1`` on a one-GPU machine: nothing visible);
* UUIDs may be shortened to any unique prefix; an unknown or ambiguous prefix ends the list.

Ordinals count in CUDA's order: fastest first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; nvidia-smi counts in
PCI order. Where all GPUs are the same model both orders agree; otherwise cudaenv still maps by position and
says, in ``problems``, that ``cuda:N may not be nvidia-smi's GPU N``.
"""

import re
from typing import List, Optional, Sequence, Tuple

from cudaenv.snapshot import DeviceMapping, Gpu, VisibleDevices

ORDER_VALUES = ("FASTEST_FIRST", "PCI_BUS_ID")
ORDER_PROBLEM = "may not be nvidia-smi's GPU"  # the phrase the diagnosis looks for (device-order-differs)


def strtoul(entry: str) -> int:
    """The integer an entry starts with (sign allowed first), or -1 when it starts with none (as torch reads it)."""
    m = re.match(r"^[+-]?\d+", entry)
    return int(m.group(0)) if m else -1


def parse_visible_devices(
    value: Optional[str], gpus: Sequence[Gpu], device_order: Optional[str] = None
) -> VisibleDevices:
    """The GPUs CUDA will see, as ``cuda:N -> nvidia-smi index``; never raises."""
    ordered = sorted(gpus, key=lambda g: g.index)
    problems: List[str] = []
    order = (device_order or "").strip()
    if device_order is not None and order not in ORDER_VALUES:
        problems.append("CUDA_DEVICE_ORDER=%s is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID)" % device_order)

    if value is None:
        mapping = tuple(DeviceMapping(i, g.index, g.uuid) for i, g in enumerate(ordered))
        problems.extend(_order_problems(ordered, order))
        return VisibleDevices(None, device_order, mapping, (), None, tuple(problems))

    entries = tuple(e.strip() for e in value.split(",")) if value.strip() else ()
    if not entries:
        problems.append("CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no GPU")
        return VisibleDevices(value, device_order, (), (), None, tuple(problems))

    first = entries[0]
    if first.startswith("GPU-") or first.startswith("MIG-"):
        mapping, invalid = _by_uuid(entries, ordered, first[:4], problems)
    else:
        mapping, invalid = _by_ordinal(entries, ordered, problems)
        if mapping:
            problems.extend(_order_problems(ordered, order))
    return VisibleDevices(value, device_order, tuple(mapping), entries, invalid, tuple(problems))


def _by_ordinal(entries: Sequence[str], ordered: Sequence[Gpu], problems: List[str]) -> Tuple[List[DeviceMapping], Optional[str]]:
    ordinals: List[Tuple[int, str]] = []
    invalid: Optional[str] = None
    for entry in entries:
        x = strtoul(entry)
        if x in [o for o, _ in ordinals]:
            problems.append(
                "duplicate entry %r (device %d twice): CUDA treats the whole list as invalid and sees no GPU" % (entry, x)
            )
            return [], entry
        if x < 0:
            invalid = entry
            what = "a negative ordinal" if re.match(r"^-\d", entry) else "not a device number" if entry else "an empty entry"
            problems.append("entry %r is %s: it and every entry after it are ignored" % (entry, what))
            break
        if not re.match(r"^\+?\d+$", entry):
            problems.append("entry %r is read as %d (CUDA reads the leading number and ignores the rest)" % (entry, x))
        ordinals.append((x, entry))
    mapping: List[DeviceMapping] = []
    if not ordered:
        return mapping, invalid  # no GPU known: nothing to map, nothing to range-check
    for x, entry in ordinals:
        if x >= len(ordered):
            problems.append(
                "entry %r is out of range: this machine has %d GPU%s (0..%d), so it and every entry after it are ignored"
                % (entry, len(ordered), "" if len(ordered) == 1 else "s", len(ordered) - 1)
            )
            return mapping, entry
        gpu = ordered[x]
        mapping.append(DeviceMapping(len(mapping), gpu.index, gpu.uuid))
    return mapping, invalid


def _by_uuid(
    entries: Sequence[str], ordered: Sequence[Gpu], prefix: str, problems: List[str]
) -> Tuple[List[DeviceMapping], Optional[str]]:
    kept: List[str] = []
    invalid: Optional[str] = None
    for entry in entries:
        if entry in kept:
            problems.append("duplicate entry %r: CUDA treats the whole list as invalid and sees no GPU" % entry)
            return [], entry
        if not entry.startswith(prefix):
            invalid = entry
            problems.append(
                "entry %r is not a %s UUID like the first entry: it and every entry after it are ignored" % (entry, prefix[:-1])
            )
            break
        kept.append(entry)
    if not ordered:
        return [], invalid
    # (uuid, physical index) candidates: whole GPUs, or MIG devices with their parent GPU.
    if prefix == "GPU-":
        targets = [(g.uuid, g.index) for g in ordered if g.uuid]
        if not targets:
            problems.append("GPU UUID entries cannot be checked: the driver probe listed no GPU UUIDs")
            return [], invalid
    else:
        targets = [(u, g.index) for g in ordered for u in g.mig_uuids]
        if not targets:
            problems.append("MIG entries cannot be checked: no MIG device was listed by the driver probe")
            return [], invalid
    mapping: List[DeviceMapping] = []
    seen: List[str] = []
    for entry in kept:
        matches = [(u, i) for u, i in targets if u.startswith(entry)]
        if len(matches) != 1:
            why = "matches no GPU" if not matches else "is ambiguous (it starts %d UUIDs)" % len(matches)
            problems.append("entry %r %s: it and every entry after it are ignored" % (entry, why))
            return mapping, entry
        uuid, physical = matches[0]
        if uuid in seen:
            problems.append(
                "entry %r names %s a second time: CUDA treats the whole list as invalid and sees no GPU" % (entry, uuid)
            )
            return [], entry
        seen.append(uuid)
        mapping.append(DeviceMapping(len(mapping), physical, uuid))
    return mapping, invalid


def _order_problems(ordered: Sequence[Gpu], order: str) -> List[str]:
    names = sorted({g.name for g in ordered if g.name})
    if order == "PCI_BUS_ID" or len(names) < 2:
        return []
    return [
        "the GPUs are different models (%s) and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers them fastest "
        "first, so cuda:N %s N (set CUDA_DEVICE_ORDER=PCI_BUS_ID to make them agree)" % (", ".join(names), ORDER_PROBLEM)
    ]


def probe_visibility(host, gpus: Sequence[Gpu]) -> VisibleDevices:
    """Read the two variables from the host environment."""
    return parse_visible_devices(host.env.get("CUDA_VISIBLE_DEVICES"), gpus, host.env.get("CUDA_DEVICE_ORDER"))
