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
BLOCKING = ("archive-prefixes", "bytes-before-zip", "record-missing", "record-size", "zip-refused", "record-refused",
            "version", "byteorder")
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


def open_container(path: str, limits: Optional[pickle_vm.Limits] = None) -> Container:
    """Read ``path``'s container; OSError for an unreadable file, never another exception for any content."""
    from cudaenv.host import open_regular

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


ZIP_MAGIC = b"PK\x03\x04"  # R-zip-start: T:serialization.py:438 (_is_zipfile: the file's first four bytes, nothing else)


def _dispatch(fh, head: bytes, box: Container, limits) -> None:
    if head[:4] == ZIP_MAGIC:
        _read_torch_zip(fh, box, limits)
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


# ------------------------------------------------------------------ zip, as torch reads it
MIN_VERSION, MAX_VERSION = 1, 10  # caffe2/serialize/versions.h: kMinSupportedFileFormatVersion, kMaxSupportedFileFormatVersion
MAX_NAME = 511  # getAllRecords reads a name into MZ_ZIP_MAX_ARCHIVE_FILENAME_SIZE (512) bytes, NUL included


class Records(dict):
    """``box.entries``: name -> entry (the last of a repeated name, for display), looked up as miniz looks a name up
    (its full bytes, ASCII case ignored; R-lookup) when the archive was read as torch reads it."""

    directory = None  # the minizdir.Directory

    def get(self, name, default=None):
        if self.directory is None:
            return dict.get(self, name, default)
        found = self.directory.find(name.encode("utf-8", "surrogateescape"))
        return found[-1] if found else default

    def __contains__(self, name) -> bool:
        return self.get(name) is not None


def _stoull(text: bytes) -> Optional[int]:
    """``std::stoull`` of a record (leading spaces, a sign, decimal digits up to the first other byte); None when it
    throws (no digits, out of range)."""
    s = text.lstrip(b" \t\n\v\f\r")
    neg = s[:1] == b"-"
    if s[:1] in (b"+", b"-"):
        s = s[1:]
    n = 0
    while n < len(s) and 0x30 <= s[n] <= 0x39:
        n += 1
    if not n:
        return None
    value = int(s[:n])
    if value >= 1 << 64:
        return None
    return ((1 << 64) - value) % (1 << 64) if neg else value


def _read_torch_zip(fh, box: Container, limits) -> None:
    """A file that starts with ``PK\\x03\\x04``, read as torch 2.13 reads it (:mod:`cudaenv.checkpoint.minizdir`,
    ``inline_container.cc``, ``serialization.py``). What torch refuses before it unpickles anything is a blocking
    problem; the pickles are still walked and judged (a file refused here may load elsewhere). Where cudaenv cannot be
    sure which bytes torch unpickles, ``box.ambiguous`` says so (the verdict is inconclusive)."""
    from cudaenv.checkpoint import minizdir

    try:
        directory = minizdir.read(fh, box.size)
    except minizdir.Refused as exc:
        box.problem("torch's zip reader (miniz) refuses the archive: %s" % exc, "zip-refused")
        _read_zip(fh, box, limits)  # read as zipfile does, to judge what it holds
        return
    entries = directory.entries
    box.entries = Records((e.name, e) for e in entries)
    box.entries.directory = directory
    box.order = [e.name for e in entries]
    if not entries:
        box.format = "unknown"
        box.notes.append("an empty zip (torch: 'archive does not contain any files')")
        return
    first = entries[0].raw_name
    slash = first.find(b"/")
    if slash < 0:
        box.format = "zip"
        box.problem("the first entry %r is not in a folder: torch refuses the archive ('file in archive is not in a "
                    "subdirectory')" % entries[0].name, "archive-prefixes")
        return
    raw_prefix = first[:slash]  # R-prefix
    box.prefix = raw_prefix.decode("utf-8", "replace")
    if b"\x00" in raw_prefix:  # every name torch looks up is cut there (a C string): not the records named
        box.ambiguous.append(("the zip's first entry", "its folder name holds a NUL byte, so the names torch looks up "
                                                       "are cut short there: which entries it reads is unclear"))
    # R-all-under-prefix: getAllRecords (torch.load calls it, for _is_torchscript_zip): every name, cut at a NUL and at 511 bytes, must start
    # with the first entry's folder and a slash, case and all (strncmp)
    want = raw_prefix + b"/"
    names = [e.raw_name.split(b"\x00", 1)[0][:MAX_NAME] for e in entries]
    outside = [n for n in names if not n.startswith(want)]
    tops = []
    for n in names:
        top = n.split(b"/", 1)[0].decode("utf-8", "replace") if b"/" in n else ""
        if top not in tops:
            tops.append(top)
    box.prefixes = tops
    if outside:
        box.problem("entries under %d archive prefixes (%s; outside %r: %s): torch 2.13 refuses the archive ('file in "
                    "archive is not in a subdirectory')" % (len(tops), ", ".join(repr(p) for p in tops[:4]), box.prefix,
                                                             ", ".join(repr(n.decode("utf-8", "replace")) for n in outside[:3])),
                    "archive-prefixes")
    records = set(n[len(want):] for n in names if n.startswith(want))
    torchscript = b"constants.pkl" in records  # R-torchscript: serialization.py _is_torchscript_zip: exact, case and all
    box.format = "torchscript" if torchscript else "torch-zip"
    if torchscript and any(n.startswith(b"code/") for n in records):
        box.markers["code"] = "code/"

    def record(name: str, limit: int, what: str):
        """A record's bytes as torch gets them; None when there is none or torch cannot read it (a problem said)."""
        found = directory.find(raw_prefix + b"/" + name.encode())
        if not found:
            return None
        datas = []
        for entry in found:
            why = minizdir.unreadable(entry)
            if why is not None:
                box.problem("%s: %s" % (entry.name, why), "record-refused")
                return None
            if minizdir.is_directory(entry) and entry.file_size:  # R-directory
                box.ambiguous.append((entry.name, "miniz reads nothing for it (a directory, or 0 compressed bytes) and "
                                                  "torch uses a buffer it never filled"))
                return None
            datas.append(_read_entry(fh, entry, limit, box, miniz=True))
        if len(set(datas)) > 1:  # R-duplicates
            box.ambiguous.append((found[0].name, "%d entries answer to the name %s (miniz ignores ASCII case) with "
                                                 "different bytes: which one torch reads depends on miniz's sorted index"
                                 % (len(found), what)))
            box.duplicates[name] = [d for d in datas if d is not None]
        return datas[-1]

    for name, marker in ((".format_version", "format_version"), ("version", "version"), ("byteorder", "byteorder"),
                         (".storage_alignment", "storage_alignment"), (".data/serialization_id", "serialization_id"),
                         (".data/version", "data_version")):
        raw = record(name, MAX_RECORD, name)
        if raw is not None:
            box.markers[marker] = raw.decode("utf-8", "replace").strip()
            box.raw_records[name] = raw
    # R-version-record: inline_container.cc init(): .data/version if present, else version (TORCH_CHECK), read by std::stoull, 1..10
    which = ".data/version" if ".data/version" in box.raw_records else "version"
    raw = box.raw_records.get(which)
    if raw is None:
        box.problem("no %s/version record: torch's reader refuses the archive before it reads the pickle" % box.prefix, "version")
    else:
        version = _stoull(raw)
        if version is None or not MIN_VERSION <= version <= MAX_VERSION:
            box.problem("the %s record says %r: torch 2.13 reads versions %d to %d and refuses the archive" % (
                which, raw[:40].decode("utf-8", "replace"), MIN_VERSION, MAX_VERSION), "version")
    order = box.raw_records.get("byteorder")
    if order is not None and order not in (b"little", b"big"):  # R-byteorder  # serialization.py _load: 'Unknown endianness type'
        box.problem("the byteorder record is %r: torch raises 'Unknown endianness type' before it reads the pickle"
                    % order[:40].decode("utf-8", "replace"), "byteorder")
    for name in ("data.pkl",) + (("constants.pkl",) if torchscript else ()):
        found = directory.find(raw_prefix + b"/" + name.encode())
        if not found:
            if name == "data.pkl":
                box.format = "zip" if not torchscript else box.format
                box.notes.append("a zip without %s/data.pkl: not a torch checkpoint" % box.prefix)
            continue
        raw = record(name, MAX_PICKLE, name)
        if raw is None and not any(u.startswith(found[0].name) for u in box.unread):
            box.unread.append("%s could not be read as torch reads it" % found[0].name)
        walked = {}
        for i, data in enumerate(box.duplicates.get(name, [])):  # every distinct candidate is judged
            if data not in walked:
                walked[data] = pickle_vm.walk(data, 0, limits)
                if data != raw:
                    box.extra_pickles["%s (repeated entry %d)" % (found[0].name, i + 1)] = walked[data]
        if raw is None:
            continue
        res = walked.get(raw) or pickle_vm.walk(raw, 0, limits)
        if name == "data.pkl":
            box.pickle = res
            box.markers["protocol"] = str(res.protocol) if res.protocol is not None else "0-1"
        else:
            box.extra_pickles["constants.pkl"] = res


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
    except ValueError as exc:
        box.problems.append(str(exc))
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


def _read_pickles(fh, box: Container, limits) -> None:
    """torch.load of a file that is not a zip: (not a tar) its pickles from byte 0, the legacy magic number first."""
    first, offset = _walk_at(fh, 0, box.size, limits)
    if not first.complete and not first.globals and not first.persids:  # nothing a pickle.load of it would call
        at = _zip_after(fh, box)
        box.leading = first
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
