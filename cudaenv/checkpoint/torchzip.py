"""A file that starts with ``PK\\x03\\x04``, read as torch 2.13 reads it: the central directory by miniz's rules
(:mod:`cudaenv.checkpoint.minizdir`, ``data/checkpoint_zip_rules.txt``), the records and their checks as caffe2's
``PyTorchStreamReader`` and ``serialization.py`` make them. Part of :mod:`cudaenv.checkpoint.container`."""

from __future__ import annotations

import struct

from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.reading import MAX_PICKLE, MAX_RECORD, Container, _read_entry, _read_zip

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Dict, Optional


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


def read_torch_zip(fh, box: Container, limits) -> None:
    """A file that starts with ``PK\\x03\\x04``, read as torch 2.13 reads it (:mod:`cudaenv.checkpoint.minizdir`,
    ``inline_container.cc``, ``serialization.py``). What torch refuses before it unpickles anything is a blocking
    problem; the pickles are still walked and judged (a file refused here may load elsewhere). Where cudaenv cannot be
    sure which bytes torch unpickles, ``box.ambiguous`` says so (the verdict is inconclusive)."""
    from cudaenv.checkpoint import minizdir

    try:
        directory = minizdir.read_central_directory(fh, box.size)
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
    for n in names:  # get_all_records hands each name to Python as str: one that is not UTF-8 raises there
        try:
            n.decode("utf-8")
        except UnicodeDecodeError:
            box.problem("an entry name that is not UTF-8 (%r): torch.load raises UnicodeDecodeError listing the "
                        "records" % n[:60], "zip-refused")
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
    sid = box.raw_records.get(".data/serialization_id")
    if sid is not None:
        try:
            sid.decode("utf-8")
        except UnicodeDecodeError:  # serialization.py _load: zip_file.serialization_id() as str, after the pickle ran
            box.problem("the .data/serialization_id record is not UTF-8: torch.load raises at its end", "record-refused")
    order = box.raw_records.get("byteorder")
    if order is not None and order not in (b"little", b"big"):  # R-byteorder  # serialization.py _load: 'Unknown endianness type'
        box.problem("the byteorder record is %r: torch raises 'Unknown endianness type' before it reads the pickle"
                    % order[:40].decode("utf-8", "replace"), "byteorder")
    align = box.raw_records.get(".storage_alignment")
    if align is not None:  # serialization.py _load: int(zip_file.get_record(".storage_alignment")), before the pickle
        try:
            int(align)
        except ValueError:
            box.problem("the .storage_alignment record is %r, not a number: torch raises before it reads the pickle"
                        % align[:40].decode("utf-8", "replace"), "record-refused")
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


_READ_WHOLE = 32 << 20  # bytes: up to this size record_refusals reads the archive once, not 30 bytes per record
_SMALL_RECORD = 4096  # bytes: ... when its records average this or less


def record_refusals(box: Container, keys, fh) -> Dict[str, str]:
    """The storage records (by key) torch's reader cannot read (R-encryption, R-method, a local header that is
    not there or data past the end of the file), read as miniz reads them: 30 bytes of each local header."""
    from cudaenv.checkpoint import minizdir

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
            why = minizdir.unreadable(entry)
            if why is None and minizdir.is_directory(entry) and entry.file_size:  # R-directory
                why = ("miniz takes it for a directory (its attributes) and reads nothing: the tensor torch makes holds "
                       "memory it never filled, not the record's bytes")
            if why is None:
                if whole is not None:
                    header = whole[entry.header_offset:entry.header_offset + 30]
                else:
                    fh.seek(entry.header_offset)
                    header = fh.read(30)
                if len(header) < 30 or header[:4] != b"PK\x03\x04":
                    why = "its local header is not there (miniz: invalid header or corrupted)"
                else:
                    start = entry.header_offset + 30 + struct.unpack_from("<H", header, 26)[0] + struct.unpack_from("<H", header, 28)[0]
                    if start + entry.compress_size > box.size:
                        why = "its data runs past the end of the file (miniz: invalid header or corrupted)"
            if why is not None:
                out[key] = why
    return out
