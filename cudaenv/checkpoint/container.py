"""The containers a checkpoint comes in, read bounded: never the tensor bytes.

* **torch zip** (``torch.save`` since 1.6): the central directory (ZIP64 included; :mod:`cudaenv.checkpoint.zipdir`
  reads it as :mod:`zipfile` does, without importing it), then
  ``<prefix>/data.pkl`` read from its local header ourselves (torch ignores CRC and saves CRC 0 when asked to;
  ``ZipFile.read`` would refuse that), the small records (``.format_version``, ``version``, ``byteorder``,
  ``.storage_alignment``, ``.data/serialization_id``) and the size of every ``data/<key>`` record. As in torch, a
  repeated name means the last entry, and the archive prefix is the first entry's folder.
* **TorchScript** (``torch.jit.save``): a torch zip with ``constants.pkl`` (torch's own test).
* **legacy** (``_use_new_zipfile_serialization=False``): five pickles (magic number, protocol, sys_info, the object,
  the storage keys), then per storage an int64 element count and the bytes; the layout is computed, not read.
* **legacy tar** (before torch 0.4): named, not read.
* **safetensors**: the 8-byte little-endian header length and the JSON header, bounded.
* anything else is walked as a pickle from its first byte, because that is what torch.load does with it (a plain
  ``pickle.load`` when weights_only=False: whatever the pickle calls runs, whatever follows it).

The format is decided as torch decides it (``T:serialization.py:428-441``, ``_is_zipfile``): a zip only when the file
starts with a zip's local header (``PK\\x03\\x04``), never from an end-of-directory record found in its tail (a plain
pickle with those four bytes appended, a legacy file whose last tensor holds them). A zip that starts later, after
other bytes that are not a pickle, is read for what it holds and named as what torch will not load.
"""

from __future__ import annotations

import os
import struct

from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.zipdir import BadZip, Entry, read_directory

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Dict, List, Optional, Tuple

MAX_PICKLE = 512 * 1024 * 1024  # the largest data.pkl read (an LLM shard's is a few MB)
MAX_RECORD = 4096  # the small text records
MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024  # the safetensors library's own cap
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C  # T:serialization.py:65 (MAGIC_NUMBER)
LEGACY_PROTOCOL = 1001  # T:serialization.py:66


# The kinds of inconsistency that make torch.load fail whatever the pickle says (so weights_only is no), and the ones
# of them a rewrite by `checkpoint fix` mends (it writes a new archive from byte 0).
BLOCKING = ("archive-prefixes", "bytes-before-zip", "record-missing", "record-size")
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
        self.extra_pickles: Dict[str, pickle_vm.WalkResult] = {}  # constants.pkl; the legacy header pickles
        self.legacy_keys: List[str] = []
        self.legacy_data_start: Optional[int] = None
        self.safetensors: Optional[dict] = None
        self.safetensors_data_start: Optional[int] = None
        self.notes: List[str] = []
        self.problems: List[str] = []  # inconsistencies torch would trip over
        self.blocking: Dict[str, str] = {}  # problem -> its kind (BLOCKING), for those that make torch.load fail
        self.unread: List[str] = []  # pickles torch.load would run that were not read (what and why): nothing in them was checked

    def problem(self, text: str, kind: Optional[str] = None, first: bool = False) -> None:
        """An inconsistency; ``kind`` (one of :data:`BLOCKING`) when torch.load fails on it whatever the pickle says."""
        self.problems.insert(0, text) if first else self.problems.append(text)
        if kind is not None:
            self.blocking[text] = kind

    def record_size(self, key: str) -> Optional[int]:
        entry = self.entries.get("%s/data/%s" % (self.prefix, key)) if self.prefix is not None else None
        return entry.file_size if entry is not None else None


def open_container(path: str, limits: Optional[pickle_vm.Limits] = None) -> Container:
    """Read ``path``'s container; OSError for an unreadable file, never another exception for any content."""
    from cudaenv.host.files import open_regular

    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        box = Container(path, size)
        head = fh.read(512)
        try:
            _dispatch(fh, head, box, limits)
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 - a hostile container must end in a note, never a crash
            box.notes.append("the file could not be read to the end: %s" % (str(exc)[:200] or type(exc).__name__))
    return box


ZIP_MAGIC = b"PK\x03\x04"  # T:serialization.py:438 (_is_zipfile: the file's first four bytes, nothing else)


def _dispatch(fh, head: bytes, box: Container, limits) -> None:
    if head[:4] == ZIP_MAGIC:
        _read_zip(fh, box, limits)
    elif len(head) >= 262 and head[257:262] == b"ustar":
        box.format = "torch-legacy-tar"
        box.notes.append("a tar archive: torch before 0.4 wrote checkpoints this way; weights_only refuses it")
    elif _looks_safetensors(head, box.size):
        _read_safetensors(fh, box)
    else:
        _read_pickles(fh, box, limits)


def _zip_after(fh, box: Container) -> Optional[int]:
    """Where a zip starts in a file that does not start with one (bytes in front of it), when its directory reads and
    has entries; None otherwise (the ``PK\\x05\\x06`` of a tail is not enough)."""
    try:
        fh.seek(0)
        directory = read_directory(fh)
    except (BadZip, ValueError, struct.error, EOFError, NotImplementedError, OSError):
        return None
    starts = [e.header_offset for e in directory if e.header_offset > 0]
    if not directory or len(starts) != len(directory):
        return None
    fh.seek(min(starts))
    return min(starts) if fh.read(4) == ZIP_MAGIC else None


def _looks_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 10:
        return False
    n = struct.unpack_from("<Q", head, 0)[0]
    return 2 <= n <= MAX_SAFETENSORS_HEADER and 8 + n <= size and head[8:9] == b"{"


# ------------------------------------------------------------------ zip
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


def _read_entry(fh, entry: Entry, limit: int, box: Container) -> Optional[bytes]:
    """An entry's bytes from its local header (CRC not checked, as torch does), at most ``limit`` bytes."""
    if entry.compress_size > limit or entry.file_size > limit:
        box.notes.append("%s is %d bytes, more than the %d read" % (entry.name, entry.file_size, limit))
        return None
    try:
        fh.seek(data_offset(fh, entry))
    except ValueError as exc:
        box.problems.append(str(exc))
        return None
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
    """The pickle at ``offset``, reading as little as needed: 64 KiB, doubled while the walk runs out of bytes."""
    chunk = 64 * 1024
    while True:
        fh.seek(offset)
        raw = fh.read(min(chunk, MAX_PICKLE))
        res = pickle_vm.walk(raw, 0, limits)
        if res.complete or len(raw) < chunk or chunk >= MAX_PICKLE:
            return res, offset + res.end
        chunk *= 4


def _read_pickles(fh, box: Container, limits) -> None:
    """torch.load of a file that is not a zip: (not a tar) its pickles from byte 0, the legacy magic number first."""
    first, offset = _walk_at(fh, 0, box.size, limits)
    if not first.complete and not first.globals and not first.persids:  # nothing a pickle.load of it would call
        at = _zip_after(fh, box)
        if at is not None:
            _read_zip(fh, box, limits)
            box.problem("%d bytes before the zip archive: torch.load reads a file as a zip only when it starts with one "
                        "(PK\\x03\\x04), so it reads this one as a pickle and fails at its first byte" % at, "bytes-before-zip",
                        first=True)
            return
        if first.data[:1] not in _PICKLE_STARTS:
            box.format = "unknown"
            box.notes.append("neither a torch zip, a legacy torch file, TorchScript, safetensors nor a pickle")
            return
    if first.complete and first.root == LEGACY_MAGIC:
        box.format = "torch-legacy"
        proto, offset = _walk_at(fh, offset, box.size, limits)
        box.markers["legacy_protocol"] = str(proto.root)
        if proto.root != LEGACY_PROTOCOL:
            box.problems.append("legacy protocol version %r, torch reads %d" % (proto.root, LEGACY_PROTOCOL))
        info, offset = _walk_at(fh, offset, box.size, limits)
        little = _sdict_get(info.root, "little_endian")
        if little is not None:
            box.markers["byteorder"] = "little" if little else "big"
        sizes = _sdict_get(info.root, "type_sizes")
        if sizes is not None:
            box.markers["type_sizes"] = ",".join("%s=%s" % (k, v) for k, v in getattr(sizes, "pairs", ()))
        box.markers["protocol"] = str(first.protocol) if first.protocol is not None else "0-1"
        box.pickle, offset = _walk_at(fh, offset, box.size, limits)
        keys, offset = _walk_at(fh, offset, box.size, limits)
        # torch.load unpickles all five (with the weights_only unpickler when asked): a global, an opcode or a
        # damage in any of them counts as in the object pickle
        box.extra_pickles.update((("legacy magic number", first), ("legacy protocol", proto), ("legacy sys_info", info),
                                  ("legacy storage keys", keys)))
        items = getattr(keys.root, "items", None)
        if keys.complete and items is not None:
            box.legacy_keys = [k for k in items if isinstance(k, str)]
            box.legacy_data_start = offset
        else:
            box.problems.append("the legacy storage-key list is missing or damaged")
        return
    box.format = "pickle"
    box.pickle = first
    box.markers["protocol"] = str(first.protocol) if first.protocol is not None else "0-1"
    if first.complete and _zip_after(fh, box) is not None:
        box.notes.append("a zip archive follows the pickle: torch.load never reads it (a zip only at byte 0)")


# the bytes a pickle usually starts with (PROTO, MARK, EMPTY_DICT, EMPTY_LIST, GLOBAL, STOP): a file that starts with
# another and whose walk stops at once, calling nothing, is not called a pickle
_PICKLE_STARTS = (b"\x80", b"(", b"}", b"]", b"c", b".")


def _sdict_get(obj, key):
    for k, v in getattr(obj, "pairs", ()):
        if k == key:
            return v
    return None


# ------------------------------------------------------------------ safetensors
def _read_safetensors(fh, box: Container) -> None:
    import json

    fh.seek(0)
    n = struct.unpack("<Q", fh.read(8))[0]
    raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        box.format = "unknown"
        box.notes.append("starts like safetensors but its header is not JSON: %s" % str(exc)[:200])
        return
    if not isinstance(header, dict):
        box.format = "unknown"
        box.notes.append("starts like safetensors but its header is not a JSON object")
        return
    box.format = "safetensors"
    box.safetensors = header
    box.safetensors_data_start = 8 + n
    meta = header.get("__metadata__")
    if isinstance(meta, dict):
        for k, v in list(meta.items())[:20]:
            if isinstance(k, str) and isinstance(v, str):
                box.markers["metadata." + k[:60]] = v[:200]
