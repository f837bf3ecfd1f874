"""CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, read with CUDA's rules into a logical -> physical mapping.

The rules follow torch's own reading of the variable, ``_parse_visible_devices`` and
``_transform_uuid_to_ordinals`` in pytorch/pytorch ``torch/cuda/__init__.py`` (which mirror CUDA, PR #84879),
plus the trimming ``_device_count_nvml`` does with the real device count:

* unset: every GPU; set but empty (or blank): no GPU;
* the first entry decides the kind: ``GPU-...`` UUIDs, ``MIG-...`` UUIDs, or integer ordinals; an entry of
  another kind ends the list;
* ordinals are read like C's ``strtoul`` in the C locale: an optional sign, then ASCII digits ``0-9`` only
  (``1gpu2`` is 1; ``²``, ``٣``, ``０`` and ``𝟙`` are no digits to C, although Python's ``str.isdigit`` says
  they are; surrounding spaces ignored); a negative or unreadable entry hides itself and every entry after
  it (``0,2,-1,1`` -> 0, 2); a number too long for an unsigned long (over 20 digits) is past every GPU;
* a repeated device (before the first invalid entry) makes the whole list invalid: no GPU at all;
* an ordinal past the last GPU ends the list there (``1`` on a one-GPU machine: nothing visible);
* UUIDs may be shortened to any unique prefix; an unknown or ambiguous prefix ends the list.

Ordinals count in CUDA's order: fastest first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; nvidia-smi counts in
PCI order. Where all GPUs are the same model both orders agree; otherwise cudaenv still maps by position and
says so with the problem kind ``order-differs``.

Each problem is a :class:`~cudaenv.model.snapshot.VisibleProblem`: a ``kind`` code (the table ``KINDS``) the
diagnosis matches on, the entry it is about, and the sentence shown to people.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import List, Optional, Sequence, Tuple

from cudaenv.model.snapshot import DeviceMapping, Gpu, VisibleDevices, VisibleProblem
from cudaenv.core.i18n import M

ORDER_VALUES = ("FASTEST_FIRST", "PCI_BUS_ID")
MAX_DIGITS = 20  # ULONG_MAX has 20 digits: a longer number overflows strtoul (ERANGE)
MAX_ENTRIES = 1024
MAX_ENTRY = 200  # characters of an entry kept in sentences

# kind -> does CUDA stop reading the list at this entry (it and all after it ignored)?
KINDS = {
    "order-unknown": False,  # CUDA_DEVICE_ORDER is not FASTEST_FIRST or PCI_BUS_ID
    "order-differs": False,  # different GPU models and not PCI_BUS_ID: cuda:N may not be nvidia-smi's N
    "empty": True,  # set but empty: no GPU
    "duplicate": True,  # a device twice: the whole list is invalid, no GPU
    "negative": True,
    "not-a-number": True,  # no ASCII digit where an ordinal was expected
    "empty-entry": True,
    "trailing-text": False,  # "1gpu2" is read as 1
    "out-of-range": True,
    "kind-mismatch": True,  # an entry not of the first entry's kind (GPU-/MIG-/ordinal)
    "uuid-no-match": True,
    "uuid-ambiguous": True,
    "uuids-unknown": False,  # UUID entries cannot be checked: the driver probe listed no UUIDs
}
STOPS = frozenset(k for k, stops in KINDS.items() if stops)


def strtoul(entry: str) -> int:
    """The integer an entry starts with, read as CUDA's ``strtoul`` reads it (sign allowed first, ASCII digits
    only), or -1 when it starts with none (as torch's ``_strtoul`` says it). A negative number stays negative."""
    s = entry.strip()
    sign = 1
    if s[:1] in ("+", "-"):
        sign, s = (-1 if s[0] == "-" else 1), s[1:]
    n = 0
    while n < len(s) and n <= MAX_DIGITS and "0" <= s[n] <= "9":
        n += 1
    if n == 0:
        return -1
    return sign * int(s[: min(n, MAX_DIGITS + 1)])


def _short(entry: str) -> str:
    return entry if len(entry) <= MAX_ENTRY else entry[: MAX_ENTRY - 3] + "..."


def _problem(kind: str, entry: Optional[str], message: str) -> VisibleProblem:
    return VisibleProblem(kind, entry if entry is None else _short(entry), message)


def parse_visible_devices(value: Optional[str], gpus: Sequence[Gpu], device_order: Optional[str] = None) -> VisibleDevices:
    """The GPUs CUDA will see, as ``cuda:N -> nvidia-smi index``; never raises."""
    ordered = sorted(gpus, key=lambda g: g.index)
    issues: List[VisibleProblem] = []
    order = (device_order or "").strip()
    if device_order is not None and order not in ORDER_VALUES:
        issues.append(_problem("order-unknown", None, M("CUDA_DEVICE_ORDER=%s is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID)", _short(device_order))))

    if value is None:
        mapping = tuple(DeviceMapping(i, g.index, g.uuid) for i, g in enumerate(ordered))
        issues.extend(_order_problems(ordered, order))
        return _result(None, device_order, mapping, (), None, issues)

    entries = tuple(e.strip() for e in value.split(",", MAX_ENTRIES)[:MAX_ENTRIES]) if value.strip() else ()
    if not entries:
        issues.append(_problem("empty", None, "CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no GPU"))
        return _result(value, device_order, (), (), None, issues)

    first = entries[0]
    if first.startswith("GPU-") or first.startswith("MIG-"):
        mapping, invalid = _by_uuid(entries, ordered, first[:4], issues)
    else:
        mapping, invalid = _by_ordinal(entries, ordered, issues)
        if mapping:
            issues.extend(_order_problems(ordered, order))
    return _result(value, device_order, tuple(mapping), entries, invalid, issues)


def _result(value, order, mapping, entries, invalid, issues: List[VisibleProblem]) -> VisibleDevices:
    return VisibleDevices(value, order, mapping, entries, invalid, tuple(p.message for p in issues), tuple(issues))


def _by_ordinal(entries: Sequence[str], ordered: Sequence[Gpu], issues: List[VisibleProblem]) -> Tuple[List[DeviceMapping], Optional[str]]:
    ordinals: List[Tuple[int, str]] = []
    invalid: Optional[str] = None
    for entry in entries:
        x = strtoul(entry)
        if x >= 0 and x in [o for o, _ in ordinals]:
            issues.append(_problem("duplicate", entry, M("duplicate entry %r (device %d twice): CUDA treats the whole list as invalid and sees no GPU", _short(entry), x)))
            return [], entry
        if x < 0:
            invalid = entry
            kind = "negative" if entry[:1] == "-" and "0" <= entry[1:2] <= "9" else "not-a-number" if entry else "empty-entry"
            what = {"negative": M("a negative ordinal"), "not-a-number": M("not a device number"), "empty-entry": M("an empty entry")}[kind]
            issues.append(_problem(kind, entry, M("entry %r is %s: it and every entry after it are ignored", _short(entry), what)))
            break
        digits = entry.lstrip("+")
        if not (digits and all("0" <= c <= "9" for c in digits)):
            issues.append(_problem("trailing-text", entry, M("entry %r is read as %s (CUDA reads the leading number and ignores the rest)", _short(entry), _num(x))))
        ordinals.append((x, entry))
    mapping: List[DeviceMapping] = []
    if not ordered:
        return mapping, invalid  # no GPU known: nothing to map, nothing to range-check
    for x, entry in ordinals:
        if x >= len(ordered):
            issues.append(_problem(
                "out-of-range", entry,
                M("entry %r is out of range: this machine has %d GPU%s (0..%d), so it and every entry after it are ignored",
                  _short(entry), len(ordered), "" if len(ordered) == 1 else "s", len(ordered) - 1)))
            return mapping, entry
        gpu = ordered[x]
        mapping.append(DeviceMapping(len(mapping), gpu.index, gpu.uuid))
    return mapping, invalid


def _num(x: int) -> str:
    text = str(x)
    return text if len(text) <= 24 else text[:10] + "...(%d digits)" % len(text)


def _by_uuid(entries: Sequence[str], ordered: Sequence[Gpu], prefix: str, issues: List[VisibleProblem]) -> Tuple[List[DeviceMapping], Optional[str]]:
    kept: List[str] = []
    invalid: Optional[str] = None
    for entry in entries:
        if entry in kept:
            issues.append(_problem("duplicate", entry, M("duplicate entry %r: CUDA treats the whole list as invalid and sees no GPU", _short(entry))))
            return [], entry
        if not entry.startswith(prefix):
            invalid = entry
            issues.append(_problem("kind-mismatch", entry, M("entry %r is not a %s UUID like the first entry: it and every entry after it are ignored", _short(entry), prefix[:-1])))
            break
        kept.append(entry)
    if not ordered:
        return [], invalid
    # (uuid, physical index) candidates: whole GPUs, or MIG devices with their parent GPU.
    if prefix == "GPU-":
        targets = [(g.uuid, g.index) for g in ordered if g.uuid]
        if not targets:
            issues.append(_problem("uuids-unknown", None, "GPU UUID entries cannot be checked: the driver probe listed no GPU UUIDs"))
            return [], invalid
    else:
        targets = [(u, g.index) for g in ordered for u in g.mig_uuids]
        if not targets:
            issues.append(_problem("uuids-unknown", None, "MIG entries cannot be checked: no MIG device was listed by the driver probe"))
            return [], invalid
    mapping: List[DeviceMapping] = []
    seen: List[str] = []
    for entry in kept:
        matches = [(u, i) for u, i in targets if u.startswith(entry)]
        if len(matches) != 1:
            kind = "uuid-no-match" if not matches else "uuid-ambiguous"
            issues.append(_problem(kind, entry, M("entry %r matches no GPU: it and every entry after it are ignored", _short(entry))
                                   if not matches else M("entry %r is ambiguous (it starts %d UUIDs): it and every entry after it are ignored",
                                                         _short(entry), len(matches))))
            return mapping, entry
        uuid, physical = matches[0]
        if uuid in seen:
            issues.append(_problem("duplicate", entry, M("entry %r names %s a second time: CUDA treats the whole list as invalid and sees no GPU", _short(entry), uuid)))
            return [], entry
        seen.append(uuid)
        mapping.append(DeviceMapping(len(mapping), physical, uuid))
    return mapping, invalid


def _order_problems(ordered: Sequence[Gpu], order: str) -> List[VisibleProblem]:
    names = sorted({g.name for g in ordered if g.name})
    if order == "PCI_BUS_ID" or len(names) < 2:
        return []
    return [_problem(
        "order-differs", None,
        M("the GPUs are different models (%s) and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers them fastest "
          "first, so cuda:N may not be nvidia-smi's GPU N (set CUDA_DEVICE_ORDER=PCI_BUS_ID to make them agree)", ", ".join(names)))]


def entry_gpu(entry: str, gpus: Sequence[Gpu]) -> Optional[Gpu]:
    """The GPU one entry names on its own: a plain ordinal (ASCII digits, ``+`` allowed) or a unique GPU-/MIG-
    UUID prefix; None for anything else."""
    e = entry.strip()
    digits = e[1:] if e.startswith("+") else e
    ordered = sorted(gpus, key=lambda g: g.index)
    if digits and len(digits) <= MAX_DIGITS and all("0" <= c <= "9" for c in digits):
        n = int(digits)
        return ordered[n] if n < len(ordered) else None
    if e.startswith("GPU-") or e.startswith("MIG-"):
        hits = [g for g in ordered if (g.uuid or "").startswith(e) or any(m.startswith(e) for m in g.mig_uuids)]
        return hits[0] if len(hits) == 1 else None
    return None


def corrected_value(entries: Sequence[str], gpus: Sequence[Gpu]) -> Optional[str]:
    """CUDA_VISIBLE_DEVICES with the entries that name no GPU, and repeats, dropped; None when nothing is left."""
    kept, seen = [], set()
    for e in entries:
        g = entry_gpu(e, gpus)
        if g is None or g.index in seen:
            continue
        seen.add(g.index)
        kept.append(e.strip())
    return ",".join(kept) if kept else None
