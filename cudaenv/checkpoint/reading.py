"""What the checkpoint format readers share (:mod:`cudaenv.checkpoint.container`, :mod:`cudaenv.checkpoint.torchzip`,
:mod:`cudaenv.checkpoint.legacytar`): the :class:`Container` record they fill, the read bounds, and the bounded reads
of an open file (a zip entry, a pickle at an offset, a zip read as zipfile reads it). Pure: it reads only the file
object it is handed."""

from __future__ import annotations

import struct

from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.zipdir import BadZip, Entry, read_directory

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Dict, List, Optional, Tuple

MAX_PICKLE = 512 * 1024 * 1024  # the largest data.pkl read (an LLM shard's is a few MB)
MAX_RECORD = 4096  # the small text records

# The kinds of inconsistency that make torch.load fail whatever the pickle says (so weights_only is no), and the ones
# of them a rewrite by `checkpoint fix` mends (it writes a new archive from byte 0).
BLOCKING = ("archive-prefixes", "bytes-before-zip", "leading-pickle", "record-missing", "record-size", "zip-refused", "record-refused",
            "version", "byteorder", "view-bounds")
MENDED_BY_REWRITE = ("bytes-before-zip",)


class Container:
    """What :func:`open_container` found: the format, the pickles to walk, the records around them."""

    def __init__(self, path: str, size: int):
        self.path = path
        self.size = size
        self.format = "unknown"  # torch-zip | torchscript | torch-legacy | torch-legacy-tar | safetensors | pickle | unknown
        self.prefix: Optional[str] = None
        self.prefixes: List[str] = []  # every top folder seen (torch refuses more than one)
        self.markers: Dict[str, str] = {}
        self.entries: Dict[str, Entry] = {}  # name -> last entry of that name
        self.order: List[str] = []  # names in central-directory order (repeats kept)
        self.pickle: Optional[pickle_vm.WalkResult] = None  # data.pkl, or the legacy object pickle
        # the walk from byte 0 of a file that is read as something else (a zip after other bytes, an unknown file):
        # what torch.load unpickles first
        self.leading: Optional[pickle_vm.WalkResult] = None
        self.extra_pickles: Dict[str, pickle_vm.WalkResult] = {}  # constants.pkl; the legacy header pickles
        self.legacy_keys: List[str] = []
        self.legacy_data_start: Optional[int] = None
        self.safetensors: Optional[dict] = None
        self.safetensors_data_start: Optional[int] = None
        self.notes: List[str] = []
        self.problems: List[str] = []  # inconsistencies torch would trip over
        self.blocking: Dict[str, str] = {}  # problem -> its kind (BLOCKING), for those that make torch.load fail
        # (where, why) for what makes it unsure which bytes torch would unpickle: the verdict is "inconclusive"
        self.ambiguous: List[Tuple[str, str]] = []
        self.unread: List[str] = []
        self.raw_records: Dict[str, bytes] = {}  # the small records' bytes as torch reads them (version, byteorder)
        self.duplicates: Dict[str, List[bytes]] = {}  # a record name -> the differing bytes of its repeated entries  # pickles torch.load would run that were not read (what and why): nothing in them was checked

    def problem(self, text: str, kind: Optional[str] = None, first: bool = False) -> None:
        """An inconsistency; ``kind`` (one of :data:`BLOCKING`) when torch.load fails on it whatever the pickle says."""
        self.problems.insert(0, text) if first else self.problems.append(text)
        if kind is not None:
            self.blocking[text] = kind

    def record_size(self, key: str) -> Optional[int]:
        entry = self.entries.get("%s/data/%s" % (self.prefix, key)) if self.prefix is not None else None
        return entry.file_size if entry is not None else None


# ------------------------------------------------------------------ zip, as zipfile reads it (a zip after other bytes)
def _read_zip(fh, box: Container, limits) -> None:
    fh.seek(0)
    try:
        directory = read_directory(fh)
    except (BadZip, ValueError, struct.error, EOFError) as exc:
        box.format = "unknown"
        box.notes.append("starts like a zip but its central directory cannot be read: %s" % str(exc)[:200])
        return
    order, entries, prefixes = box.order, box.entries, box.prefixes
    seen = set()
    for entry in directory:
        name = entry.name
        order.append(name)
        entries[name] = entry  # a repeated name: the last one wins, as in torch
        top = name.split("/", 1)[0] if "/" in name else ""
        if top not in seen:
            seen.add(top)
            prefixes.append(top)
    if not box.order:
        box.format = "unknown"
        box.notes.append("an empty zip")
        return
    first = box.order[0]
    box.prefix = first.split("/", 1)[0] if "/" in first else ""
    if len(box.prefixes) > 1:
        box.problem("entries under %d archive prefixes (%s): torch 2.13 refuses the archive ('file in archive is not in "
                    "a subdirectory')" % (len(box.prefixes), ", ".join(repr(p) for p in box.prefixes[:4])), "archive-prefixes")
    p = box.prefix
    for record, marker in ((".format_version", "format_version"), ("version", "version"), ("byteorder", "byteorder"),
                           (".storage_alignment", "storage_alignment"), (".data/serialization_id", "serialization_id"),
                           (".data/version", "data_version")):
        entry = box.entries.get("%s/%s" % (p, record))
        if entry is not None:
            raw = _read_entry(fh, entry, MAX_RECORD, box)
            if raw is not None:
                box.markers[marker] = raw.decode("utf-8", "replace").strip()
    torchscript = "%s/constants.pkl" % p in box.entries
    box.format = "torchscript" if torchscript else "torch-zip"
    if torchscript and any(n.startswith("%s/code/" % p) for n in box.entries):
        box.markers["code"] = "code/"
    data_pkl = box.entries.get("%s/data.pkl" % p)
    if data_pkl is None:
        box.format = "zip" if not torchscript else box.format
        box.notes.append("a zip without %s/data.pkl: not a torch checkpoint" % p)
        return
    raw = _read_pickle(fh, data_pkl, box)
    if raw is not None:
        box.pickle = pickle_vm.walk(raw, 0, limits)
        box.markers["protocol"] = str(box.pickle.protocol) if box.pickle.protocol is not None else "0-1"
    if torchscript:
        raw = _read_pickle(fh, box.entries["%s/constants.pkl" % p], box)
        if raw is not None:
            box.extra_pickles["constants.pkl"] = pickle_vm.walk(raw, 0, limits)


def _read_pickle(fh, entry: Entry, box: Container) -> Optional[bytes]:
    """A pickle entry's bytes; one it cannot read (too big, damaged, compressed another way) is in ``box.unread``."""
    notes, problems = len(box.notes), len(box.problems)
    raw = _read_entry(fh, entry, MAX_PICKLE, box)
    if raw is None:
        said = box.notes[notes:] + box.problems[problems:]  # the one message _read_entry left
        box.unread.append(said[-1] if said else "%s could not be read" % entry.name)
    return raw


def _read_entry(fh, entry: Entry, limit: int, box: Container, miniz: bool = False) -> Optional[bytes]:
    """An entry's bytes from its local header (CRC not checked, as torch does), at most ``limit`` bytes. ``miniz``: as
    miniz reads them: a stored entry's uncompressed size from where its data starts, a deflated one inflated to
    exactly that size."""
    if entry.compress_size > limit or entry.file_size > limit:
        box.notes.append("%s is %d bytes, more than the %d read" % (entry.name, entry.file_size, limit))
        return None
    try:
        fh.seek(data_offset(fh, entry))
    except ValueError as exc:  # (torch's reader, too, cannot read it: miniz 'invalid header or archive is corrupted')
        box.problem(str(exc), "record-refused" if miniz else None)
        return None
    if miniz and entry.compress_type == 0:  # R-stored-size (and R-crc: never checked)
        raw = fh.read(entry.file_size)
        if len(raw) < entry.file_size:
            box.problem("%s is cut short (%d of %d bytes): torch cannot read it" % (entry.name, len(raw), entry.file_size),
                        "record-refused")
            return None
        return raw
    raw = fh.read(entry.compress_size)
    if len(raw) < entry.compress_size:
        box.problems.append("%s is cut short (%d of %d bytes)" % (entry.name, len(raw), entry.compress_size))
    if entry.compress_type == 0:
        return raw
    if entry.compress_type == 8:
        import zlib

        d = zlib.decompressobj(-15)
        out = d.decompress(raw, limit + 1)
        if len(out) > limit:
            box.notes.append("%s inflates past %d bytes" % (entry.name, limit))
            return None
        box.notes.append("%s is deflate-compressed (torch writes every entry stored)" % entry.name)
        if miniz and len(out) != entry.file_size:
            box.problem("%s inflates to %d bytes, its directory says %d: torch cannot read it" % (
                entry.name, len(out), entry.file_size), "record-refused")
            return None
        return out
    box.notes.append("%s uses zip compression method %d, which cudaenv does not read" % (entry.name, entry.compress_type))
    return None


def data_offset(fh, entry: Entry) -> int:
    """Where ``entry``'s stored bytes start (after its local header's name and extra field). ValueError when the
    header is not there (a central directory whose offsets, less the bytes before the zip, point before it)."""
    if entry.header_offset < 0:
        raise ValueError("the local header of %s is missing or damaged" % entry.name)
    fh.seek(entry.header_offset)
    header = fh.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise ValueError("the local header of %s is missing or damaged" % entry.name)
    name_len, extra_len = struct.unpack_from("<HH", header, 26)
    return entry.header_offset + 30 + name_len + extra_len


# ------------------------------------------------------------------ legacy and plain pickles
def _walk_at(fh, offset: int, size: int, limits) -> Tuple[pickle_vm.WalkResult, int]:
    """The pickle at ``offset``, reading as little as needed: 64 KiB, and only when the walk runs out of those bytes,
    the rest of the file (at most :data:`MAX_PICKLE`) in one read and one more walk: never re-walked at growing caps,
    never read further than where pickle itself stops (a file of zeros: its first byte). A pickle cut short by the
    cap is not one pickle fails on: its walk is inconclusive."""
    fh.seek(offset)
    chunk = 64 * 1024
    raw = fh.read(chunk)
    res = pickle_vm.walk(raw, 0, limits)
    if not res.complete and res.ran_out and len(raw) == chunk and offset + chunk < size:
        fh.seek(offset)
        raw = fh.read(min(size - offset, MAX_PICKLE))
        res = pickle_vm.walk(raw, 0, limits)
    if not res.complete and res.ran_out and offset + len(raw) < size:
        res.fails = False
        res.notes.append("the pickle at byte %d is longer than the %d bytes read" % (offset, len(raw)))
    return res, offset + res.end
