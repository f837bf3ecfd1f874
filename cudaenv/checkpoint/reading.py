"""What the checkpoint format readers share (:mod:`cudaenv.checkpoint.container`,
:mod:`cudaenv.checkpoint.legacytar`): the :class:`Container` record they fill, the read bounds, the bounded reads of
an open file (a zip entry, a pickle at an offset, a zip read as zipfile reads it), and the torch zip reader. Pure: it
reads only the file object it is handed.

The torch zip reader (:func:`read_torch_zip`, :func:`record_refusals`; part of
:mod:`cudaenv.checkpoint.container`): a file that starts with ``PK\\x03\\x04``, read as torch 2.13 reads it: the
central directory by miniz's rules (:func:`cudaenv.checkpoint.zipdir.read_central_directory`,
``data/checkpoint_zip_rules.txt``), the records and their checks as caffe2's ``PyTorchStreamReader`` and
``serialization.py`` make them. (One module: both are read on `checkpoint inspect`'s path of every zip.)"""

from __future__ import annotations

import struct

from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint import zipdir
from cudaenv.checkpoint.zipdir import BadZip, Entry, read_directory
from cudaenv.core.i18n import M

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
        box.notes.append(M("starts like a zip but its central directory cannot be read: %s", str(exc)[:200]))
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
        box.notes.append(M("an empty zip"))
        return
    first = box.order[0]
    box.prefix = first.split("/", 1)[0] if "/" in first else ""
    if len(box.prefixes) > 1:
        box.problem(M("entries under %d archive prefixes (%s): torch 2.13 refuses the archive ('file in archive is not in "
                    "a subdirectory')", len(box.prefixes), ", ".join(repr(p) for p in box.prefixes[:4])), "archive-prefixes")
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
        box.notes.append(M("a zip without %s/data.pkl: not a torch checkpoint", p))
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
        box.unread.append(said[-1] if said else M("%s could not be read", entry.name))
    return raw


def _read_entry(fh, entry: Entry, limit: int, box: Container, miniz: bool = False) -> Optional[bytes]:
    """An entry's bytes from its local header (CRC not checked, as torch does), at most ``limit`` bytes. ``miniz``: as
    miniz reads them: a stored entry's uncompressed size from where its data starts, a deflated one inflated to
    exactly that size."""
    if entry.compress_size > limit or entry.file_size > limit:
        box.notes.append(M("%s is %d bytes, more than the %d read", entry.name, entry.file_size, limit))
        return None
    try:
        fh.seek(data_offset(fh, entry))
    except ValueError as exc:  # (torch's reader, too, cannot read it: miniz 'invalid header or archive is corrupted')
        box.problem(exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc),
                    "record-refused" if miniz else None)  # (data_offset's marked message)
        return None
    if miniz and entry.compress_type == 0:  # R-stored-size (and R-crc: never checked)
        raw = fh.read(entry.file_size)
        if len(raw) < entry.file_size:
            box.problem(M("%s is cut short (%d of %d bytes): torch cannot read it", entry.name, len(raw), entry.file_size),
                        "record-refused")
            return None
        return raw
    raw = fh.read(entry.compress_size)
    if len(raw) < entry.compress_size:
        box.problems.append(M("%s is cut short (%d of %d bytes)", entry.name, len(raw), entry.compress_size))
    if entry.compress_type == 0:
        return raw
    if entry.compress_type == 8:
        import zlib

        d = zlib.decompressobj(-15)
        out = d.decompress(raw, limit + 1)
        if len(out) > limit:
            box.notes.append(M("%s inflates past %d bytes", entry.name, limit))
            return None
        box.notes.append(M("%s is deflate-compressed (torch writes every entry stored)", entry.name))
        if miniz and len(out) != entry.file_size:
            box.problem(M("%s inflates to %d bytes, its directory says %d: torch cannot read it", entry.name, len(out), entry.file_size), "record-refused")
            return None
        return out
    box.notes.append(M("%s uses zip compression method %d, which cudaenv does not read", entry.name, entry.compress_type))
    return None


def data_offset(fh, entry: Entry) -> int:
    """Where ``entry``'s stored bytes start (after its local header's name and extra field). ValueError when the
    header is not there (a central directory whose offsets, less the bytes before the zip, point before it)."""
    if entry.header_offset < 0:
        raise ValueError(M("the local header of %s is missing or damaged", entry.name))
    fh.seek(entry.header_offset)
    header = fh.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise ValueError(M("the local header of %s is missing or damaged", entry.name))
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
        res.notes.append(M("the pickle at byte %d is longer than the %d bytes read", offset, len(raw)))
    return res, offset + res.end


MIN_VERSION, MAX_VERSION = 1, 10  # caffe2/serialize/versions.h: kMinSupportedFileFormatVersion, kMaxSupportedFileFormatVersion
MAX_NAME = 511  # getAllRecords reads a name into MZ_ZIP_MAX_ARCHIVE_FILENAME_SIZE (512) bytes, NUL included


# ------------------------------------------------------------------ the torch zip reader (PK\x03\x04, as torch 2.13 reads it)


class Records(dict):
    """``box.entries``: name -> entry (the last of a repeated name, for display), looked up as miniz looks a name up
    (its full bytes, ASCII case ignored; R-lookup) when the archive was read as torch reads it."""

    directory = None  # the zipdir.Directory (miniz's reading)

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


def read_torch_zip(fh, box: Container, limits) -> None:
    """A file that starts with ``PK\\x03\\x04``, read as torch 2.13 reads it (:func:`cudaenv.checkpoint.zipdir.read_central_directory`,
    ``inline_container.cc``, ``serialization.py``). What torch refuses before it unpickles anything is a blocking
    problem; the pickles are still walked and judged (a file refused here may load elsewhere). Where cudaenv cannot be
    sure which bytes torch unpickles, ``box.ambiguous`` says so (the verdict is inconclusive)."""
    try:
        directory = zipdir.read_central_directory(fh, box.size)
    except zipdir.Refused as exc:
        box.problem(M("torch's zip reader (miniz) refuses the archive: %s", exc.args[0] if len(exc.args) == 1 else str(exc)),
                    "zip-refused")
        _read_zip(fh, box, limits)  # read as zipfile does, to judge what it holds
        return
    entries = directory.entries
    box.entries = Records((e.name, e) for e in entries)
    box.entries.directory = directory
    box.order = [e.name for e in entries]
    if not entries:
        box.format = "unknown"
        box.notes.append(M("an empty zip (torch: 'archive does not contain any files')"))
        return
    first = entries[0].raw_name
    slash = first.find(b"/")
    if slash < 0:
        box.format = "zip"
        box.problem(M("the first entry %r is not in a folder: torch refuses the archive ('file in archive is not in a "
                    "subdirectory')", entries[0].name), "archive-prefixes")
        return
    raw_prefix = first[:slash]  # R-prefix
    box.prefix = raw_prefix.decode("utf-8", "replace")
    if b"\x00" in raw_prefix:  # every name torch looks up is cut there (a C string): not the records named
        box.ambiguous.append((M("the zip's first entry"), M("its folder name holds a NUL byte, so the names torch looks up "
                                                       "are cut short there: which entries it reads is unclear")))
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
        box.problem(M("entries under %d archive prefixes (%s; outside %r: %s): torch 2.13 refuses the archive ('file in "
                    "archive is not in a subdirectory')", len(tops), ", ".join(repr(p) for p in tops[:4]), box.prefix, ", ".join(repr(n.decode("utf-8", "replace")) for n in outside[:3])),
                    "archive-prefixes")
    for n in names:  # get_all_records hands each name to Python as str: one that is not UTF-8 raises there
        try:
            n.decode("utf-8")
        except UnicodeDecodeError:
            box.problem(M("an entry name that is not UTF-8 (%r): torch.load raises UnicodeDecodeError listing the "
                        "records", n[:60]), "zip-refused")
            break
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
            why = zipdir.unreadable(entry)
            if why is not None:
                box.problem(M("%s: %s", entry.name, why), "record-refused")
                return None
            if zipdir.is_directory(entry) and entry.file_size:  # R-directory
                box.ambiguous.append((entry.name, M("miniz reads nothing for it (a directory, or 0 compressed bytes) and "
                                                  "torch uses a buffer it never filled")))
                return None
            datas.append(_read_entry(fh, entry, limit, box, miniz=True))
        if len(set(datas)) > 1:  # R-duplicates
            box.ambiguous.append((found[0].name, M("%d entries answer to the name %s (miniz ignores ASCII case) with "
                                                 "different bytes: which one torch reads depends on miniz's sorted index", len(found), what)))
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
        box.problem(M("no %s/version record: torch's reader refuses the archive before it reads the pickle", box.prefix), "version")
    else:
        version = _stoull(raw)
        if version is None or not MIN_VERSION <= version <= MAX_VERSION:
            box.problem(M("the %s record says %r: torch 2.13 reads versions %d to %d and refuses the archive", which, raw[:40].decode("utf-8", "replace"), MIN_VERSION, MAX_VERSION), "version")
    sid = box.raw_records.get(".data/serialization_id")
    if sid is not None:
        try:
            sid.decode("utf-8")
        except UnicodeDecodeError:  # serialization.py _load: zip_file.serialization_id() as str, after the pickle ran
            box.problem(M("the .data/serialization_id record is not UTF-8: torch.load raises at its end"), "record-refused")
    order = box.raw_records.get("byteorder")
    if order is not None and order not in (b"little", b"big"):  # R-byteorder  # serialization.py _load: 'Unknown endianness type'
        box.problem(M("the byteorder record is %r: torch raises 'Unknown endianness type' before it reads the pickle", order[:40].decode("utf-8", "replace")), "byteorder")
    align = box.raw_records.get(".storage_alignment")
    if align is not None:  # serialization.py _load: int(zip_file.get_record(".storage_alignment")), before the pickle
        try:
            int(align)
        except ValueError:
            box.problem(M("the .storage_alignment record is %r, not a number: torch raises before it reads the pickle", align[:40].decode("utf-8", "replace")), "record-refused")
    for name in ("data.pkl",) + (("constants.pkl",) if torchscript else ()):
        found = directory.find(raw_prefix + b"/" + name.encode())
        if not found:
            if name == "data.pkl":
                box.format = "zip" if not torchscript else box.format
                box.notes.append(M("a zip without %s/data.pkl: not a torch checkpoint", box.prefix))
            continue
        raw = record(name, MAX_PICKLE, name)
        if raw is None and not any(u.startswith(found[0].name) for u in box.unread):
            box.unread.append(M("%s could not be read as torch reads it", found[0].name))
        walked = {}
        for i, data in enumerate(box.duplicates.get(name, [])):  # every distinct candidate is judged
            if data not in walked:
                walked[data] = pickle_vm.walk(data, 0, limits)
                if data != raw:
                    box.extra_pickles[M("%s (repeated entry %d)", found[0].name, i + 1)] = walked[data]
        if raw is None:
            continue
        res = walked.get(raw) or pickle_vm.walk(raw, 0, limits)
        if name == "data.pkl":
            box.pickle = res
            box.markers["protocol"] = str(res.protocol) if res.protocol is not None else "0-1"
        else:
            box.extra_pickles["constants.pkl"] = res


_READ_WHOLE = 32 << 20  # bytes: up to this size record_refusals reads the archive once, not 30 bytes per record
_SMALL_RECORD = 4096  # bytes: ... when its records average this or less


def record_refusals(box: Container, keys, fh) -> Dict[str, str]:
    """The storage records (by key) torch's reader cannot read (R-encryption, R-method, a local header that is
    not there or data past the end of the file), read as miniz reads them: 30 bytes of each local header."""
    out: Dict[str, str] = {}
    if box.prefix is None or getattr(box.entries, "directory", None) is None:
        return out
    whole = None  # a small archive is read once (a read per record costs more than the walk for 20,000 tensors)
    # ... but only one of small records (4 KiB each on average or less): an archive of big tensors is never read whole
    # just to find its local headers (issue 32: inspecting a folder of shards reads no tensor bytes)
    if box.size <= _READ_WHOLE and len(keys) * _SMALL_RECORD >= box.size:
        fh.seek(0)
        whole = fh.read(box.size)
    if True:  # (``fh``: the checkpoint, open)
        for key in keys:
            entry = box.entries.get("%s/data/%s" % (box.prefix, key))
            if entry is None:
                continue
            why = zipdir.unreadable(entry)
            if why is None and zipdir.is_directory(entry) and entry.file_size:  # R-directory
                why = (M("miniz takes it for a directory (its attributes) and reads nothing: the tensor torch makes holds "
                       "memory it never filled, not the record's bytes"))
            if why is None:
                if whole is not None:
                    header = whole[entry.header_offset:entry.header_offset + 30]
                else:
                    fh.seek(entry.header_offset)
                    header = fh.read(30)
                if len(header) < 30 or header[:4] != b"PK\x03\x04":
                    why = M("its local header is not there (miniz: invalid header or corrupted)")
                else:
                    start = entry.header_offset + 30 + struct.unpack_from("<H", header, 26)[0] + struct.unpack_from("<H", header, 28)[0]
                    if start + entry.compress_size > box.size:
                        why = M("its data runs past the end of the file (miniz: invalid header or corrupted)")
            if why is not None:
                out[key] = why
    return out
