"""``checkpoint fix`` without torch: the walked object graph changed (locations, keys, one entry kept), written back as
a protocol-2 pickle by a small writer of our own, and the storage records copied byte for byte into a new torch zip.

The writer emits only the opcodes torch 2.13's weights_only unpickler accepts (``data/checkpoint_weights_only.txt``)
and refuses anything else (a set, a bytes payload, a computed global). The zip is what ``torch.save`` writes (the
project's checkpoint facts, section 1.1): every entry stored, ``<prefix>/data.pkl`` first, the records' data at file
offsets that are multiples of 64 (a local-header extra field ``FB`` filled with ``Z``, as
``caffe2/serialize/inline_container.cc`` ``getPadding()`` does), ZIP64 where sizes or offsets need it, real CRCs;
``byteorder``, ``.format_version``, ``.storage_alignment``, ``version`` and ``.data/serialization_id`` kept.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Callable, Dict, List, Optional, Tuple

from cudaenv.checkpoint.nodes import Blob, Call, Global, Persid, SDict, ShortBytes, SList
from cudaenv.core.i18n import M

ALIGNMENT = 64
MAX_DEPTH = 200  # levels of nesting written (each is two Python frames: a 600-deep dict hit the RecursionError)
MEMO_STR = 8  # strings of at least this many bytes are memoized by identity (written once, then GET)
COPY_CHUNK = 4 * 1024 * 1024


class Unsupported(ValueError):
    """The graph holds something the writer does not write (and weights_only would not load)."""


# ------------------------------------------------------------------ the pickle writer
class PickleWriter:
    """Protocol 2, weights_only opcodes only. ``persid`` maps each :class:`Persid` to the tuple to write."""

    def __init__(self, persid: Callable[[Persid], Any]):
        self.out = bytearray()
        self.memo: Dict[Any, int] = {}
        self.persid = persid
        self._alive: List[Any] = []  # keeps memoized objects alive, so that id() stays theirs

    def dumps(self, root: Any) -> bytes:
        self.out += b"\x80\x02"
        try:
            self._save(root, 0)
        except RecursionError:  # (MAX_DEPTH keeps it below Python's limit; a caller deep in its own stack may not be)
            raise Unsupported(M("the object is nested too deep to write")) from None
        self.out += b"."
        return bytes(self.out)

    def _put(self, key: Any, obj: Any) -> None:
        index = len(self.memo)
        self.memo[key] = index
        self._alive.append(obj)
        self.out += (b"q" + bytes([index])) if index < 256 else (b"r" + struct.pack("<I", index))

    def _get(self, key: Any) -> bool:
        index = self.memo.get(key)
        if index is None:
            return False
        self.out += (b"h" + bytes([index])) if index < 256 else (b"j" + struct.pack("<I", index))
        return True

    def _save(self, obj: Any, depth: int) -> None:  # noqa: C901 - one dispatch
        if depth > MAX_DEPTH:
            raise Unsupported(M("the object is nested more than %d levels deep", MAX_DEPTH))
        out = self.out
        if obj is None:
            out += b"N"
        elif obj is True:
            out += b"\x88"
        elif obj is False:
            out += b"\x89"
        elif isinstance(obj, int):
            if 0 <= obj < 256:
                out += b"K" + bytes([obj])
            elif 0 <= obj < 65536:
                out += b"M" + struct.pack("<H", obj)
            elif -(2 ** 31) <= obj < 2 ** 31:
                out += b"J" + struct.pack("<i", obj)
            else:
                raw = obj.to_bytes((obj.bit_length() + 8) // 8, "little", signed=True)
                if len(raw) > 255:
                    raise Unsupported(M("an integer of %d bytes", len(raw)))
                out += b"\x8a" + bytes([len(raw)]) + raw
        elif isinstance(obj, float):
            out += b"G" + struct.pack(">d", obj)
        elif isinstance(obj, ShortBytes):
            if len(obj) > 255:
                raise Unsupported(M("a byte string of %d bytes", len(obj)))
            out += b"U" + bytes([len(obj)]) + bytes(obj)
        elif isinstance(obj, str):
            if len(obj) >= MEMO_STR and self._get(id(obj)):
                return
            raw = obj.encode("utf-8", "surrogatepass")
            out += b"X" + struct.pack("<I", len(raw)) + raw
            if len(obj) >= MEMO_STR:
                self._put(id(obj), obj)
        elif isinstance(obj, tuple):
            # a tuple the graph shares (the walk's memo gave the same one again) is written once, then GET: a 470-byte
            # pickle of tuples of tuples of the same tuple made 2^N leaves (36 s, 1.1 GB) when each was written out
            if not obj:
                out += b")"
            elif not self._get(id(obj)):
                if len(obj) <= 3:
                    for item in obj:
                        self._save(item, depth + 1)
                    out += (b"\x85", b"\x86", b"\x87")[len(obj) - 1]
                else:
                    out += b"("
                    for item in obj:
                        self._save(item, depth + 1)
                    out += b"t"
                if id(obj) in self.memo:  # it holds itself (through a list or a dict): pickle needs POP_MARK for that
                    raise Unsupported(M("a tuple that contains itself"))
                self._put(id(obj), obj)
        elif isinstance(obj, Global):
            if not self._get(("global", obj.full)):
                out += b"c" + obj.module.encode("utf-8") + b"\n" + obj.name.encode("utf-8") + b"\n"
                self._put(("global", obj.full), obj)
        elif isinstance(obj, Persid):
            if not self._get(id(obj)):
                self._save(self.persid(obj), depth + 1)
                self.out += b"Q"
                self._put(id(obj), obj)
        elif isinstance(obj, SList):
            if not self._get(id(obj)):
                out += b"]"
                self._put(id(obj), obj)
                self._items(obj.items, depth)
        elif isinstance(obj, SDict):
            if not self._get(id(obj)):
                out += b"}"
                self._put(id(obj), obj)
                self._pairs(obj.pairs, depth)
        elif isinstance(obj, Call):
            if not self._get(id(obj)):
                if not isinstance(obj.func, Global):
                    raise Unsupported(M("a call of something that is not a named global"))
                if obj.kind not in ("reduce", "newobj"):
                    raise Unsupported("a %s opcode" % obj.kind.upper())
                self._save(obj.func, depth + 1)
                self._save(obj.args, depth + 1)
                out += b"R" if obj.kind == "reduce" else b"\x81"
                self._put(id(obj), obj)
                self._pairs(obj.pairs, depth)
                self._items(obj.items, depth)
                for state in obj.states:
                    self._save(state, depth + 1)
                    self.out += b"b"
        elif isinstance(obj, Blob):
            raise Unsupported(M("a %s payload of %d bytes", obj.kind, obj.length))
        else:
            raise Unsupported("a %s value" % type(obj).__name__)

    def _items(self, items: List[Any], depth: int) -> None:
        for start in range(0, len(items), 1000):
            self.out += b"("
            for item in items[start:start + 1000]:
                self._save(item, depth + 1)
            self.out += b"e"

    def _pairs(self, pairs: List[Tuple[Any, Any]], depth: int) -> None:
        for start in range(0, len(pairs), 1000):
            self.out += b"("
            for k, v in pairs[start:start + 1000]:
                self._save(k, depth + 1)
                self._save(v, depth + 1)
            self.out += b"u"


# ------------------------------------------------------------------ the zip writer
class ZipOut:
    """A torch-style zip written to a binary file: stored entries, data 64-byte aligned, ZIP64 as needed."""

    def __init__(self, fh):
        self.fh = fh
        self.central: List[bytes] = []
        self.count = 0

    def _local(self, name: bytes, size: int, crc: int) -> Tuple[int, int]:
        offset = self.fh.tell()
        zip64 = size >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, size, size) if zip64 else b""
        base = offset + 30 + len(name) + len(extra)
        pad = (-(base + 4)) % ALIGNMENT
        extra += b"FB" + struct.pack("<H", pad) + b"Z" * pad
        small = 0xFFFFFFFF if zip64 else size
        self.fh.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 20, 0, 0, 0, 0x21, crc, small, small,
                                  len(name), len(extra)))
        self.fh.write(name)
        self.fh.write(extra)
        return offset, self.fh.tell()

    def _central(self, name: bytes, size: int, crc: int, offset: int) -> None:
        fields = []
        if size >= 0xFFFFFFFF:
            fields += [size, size]
        if offset >= 0xFFFFFFFF:
            fields.append(offset)
        extra = struct.pack("<HH", 1, 8 * len(fields)) + b"".join(struct.pack("<Q", f) for f in fields) if fields else b""
        small = 0xFFFFFFFF if size >= 0xFFFFFFFF else size
        self.central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45 if fields else 20, 45 if fields else 20,
                                        0, 0, 0, 0x21, crc, small, small, len(name), len(extra), 0, 0, 0, 0,
                                        0xFFFFFFFF if offset >= 0xFFFFFFFF else offset) + name + extra)
        self.count += 1

    def write_bytes(self, name: str, data: bytes) -> None:
        raw = name.encode("utf-8")
        crc = zlib.crc32(data) & 0xFFFFFFFF
        offset, _ = self._local(raw, len(data), crc)
        self.fh.write(data)
        self._central(raw, len(data), crc, offset)

    def copy_from(self, name: str, src, start: int, size: int) -> None:
        """``size`` bytes of ``src`` from ``start``, streamed (never all in memory), CRC computed on the way."""
        raw = name.encode("utf-8")
        offset, data_start = self._local(raw, size, 0)
        crc = 0
        src.seek(start)
        left = size
        while left:
            chunk = src.read(min(COPY_CHUNK, left))
            if not chunk:
                raise OSError(M("the source ends %d bytes early while copying %s", left, name))
            crc = zlib.crc32(chunk, crc)
            self.fh.write(chunk)
            left -= len(chunk)
        end = self.fh.tell()
        self.fh.seek(offset + 14)
        self.fh.write(struct.pack("<I", crc & 0xFFFFFFFF))
        self.fh.seek(end)
        self._central(raw, size, crc & 0xFFFFFFFF, offset)

    def close(self) -> None:
        start = self.fh.tell()
        for entry in self.central:
            self.fh.write(entry)
        size = self.fh.tell() - start
        if self.count >= 0xFFFF or start >= 0xFFFFFFFF or size >= 0xFFFFFFFF:
            z64 = self.fh.tell()
            self.fh.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, self.count, self.count, size, start))
            self.fh.write(struct.pack("<IIQI", 0x07064B50, 0, z64, 1))
            self.fh.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
        else:
            self.fh.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, self.count, self.count, size, start, 0))


# ------------------------------------------------------------------ key changes
def strip_key(key: str, prefixes: List[str]) -> str:
    """``key`` with each prefix removed, in the order given, where it starts with it."""
    for p in prefixes:
        if key.startswith(p):
            key = key[len(p):]
    return key


def strip_metadata_key(key: str, prefixes: List[str]) -> str:
    """A ``_metadata`` key (a module path without the trailing dot: ``''``, ``'module'``, ``'module.conv1'``)."""
    for p in prefixes:
        bare = p[:-1] if p.endswith(".") else p
        if key == bare:
            key = ""
        elif key.startswith(p):
            key = key[len(p):]
    return key


def add_metadata_key(key: str, prefix: str) -> str:
    bare = prefix[:-1] if prefix.endswith(".") else prefix
    return bare if key == "" else prefix + key


def rename_pairs(pairs: List[Tuple[Any, Any]], rename: Callable[[str], str], keep_taken: bool = False) -> Tuple[int, List[str]]:
    """Rename string keys in place; returns (how many changed, the keys that collide). ``keep_taken``: a key whose
    new name another key already has (one that keeps its name, or was renamed to it first) is left as it is, so no
    value replaces another (a decoy ``module.weight`` beside the real ``weight``); without it both are kept under the
    one name and the later one wins when loaded (``_metadata``'s ``''`` and ``'module'``, as torch's
    consume_prefix_in_state_dict_if_present does)."""
    changed = 0
    seen: Dict[str, int] = {}
    collisions: List[str] = []
    taken = {k for k, _ in pairs if isinstance(k, str) and rename(k) == k} if keep_taken else set()
    for i, (k, v) in enumerate(pairs):
        if isinstance(k, str):
            new = rename(k)
            if keep_taken and new != k and new in taken:
                collisions.append(k)
                new = k
            if new != k:
                pairs[i] = (new, v)
                changed += 1
            if not keep_taken and new in seen and new not in collisions:
                collisions.append(new)
            seen[new] = i
            taken.add(new)
    return changed, collisions


def metadata_pairs(obj: Any) -> Optional[List[Tuple[Any, Any]]]:
    """The pairs list of a state_dict's ``_metadata`` OrderedDict (to rename in place), or None."""
    if not isinstance(obj, Call):
        return None
    for state in obj.states:
        for k, v in getattr(state, "pairs", ()) or ():
            if k == "_metadata" and isinstance(v, (Call, SDict)):
                return v.pairs
    return None
