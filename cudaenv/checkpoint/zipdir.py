"""A zip's central directory, read as :mod:`zipfile` reads it (its entries, ZIP64 extra fields, the bytes before the
archive, its error messages) and as torch 2.13's miniz reads it, without importing zipfile: that import costs more
than inspecting a small checkpoint. The records are APPNOTE.TXT 4.3.12, 4.3.14-16, as CPython's zipfile spells them.

The directory as torch 2.13 reads it (:func:`read_central_directory`, :class:`Directory`): by miniz 3.0.2 through
caffe2's ``PyTorchStreamReader`` (``torch._C.PyTorchFileReader``). The rules and their sources are
``data/checkpoint_zip_rules.txt``; each is named here by its row (``R-...``). Where the two readings differ it matters
which bytes torch unpickles: miniz reads the directory at the offset the end record states (zipfile shifts it by the
bytes it finds before the archive), compares names over their full length (zipfile cuts a name at a NUL byte) and
without regard to ASCII case, ignores "version needed to extract" (zipfile refuses above 6.3), finds the ZIP64 end
record where its locator says, refuses multi-disk archives and masked local headers when it opens the archive, and
refuses an encrypted, patched or other-method (not stored, not deflate) entry when that entry is read. (One module for
both: they are always read together on `checkpoint inspect`'s path.)"""

from __future__ import annotations

import os
import struct

from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Dict, List, Optional, Tuple


class Entry:
    """One zip entry as the central directory gives it."""

    __slots__ = ("name", "header_offset", "compress_size", "file_size", "compress_type", "crc", "raw_name", "flags",
                 "external")

    def __init__(self, name: str, header_offset: int, compress_size: int, file_size: int, compress_type: int, crc: int):
        self.name = name
        self.header_offset = header_offset
        self.compress_size = compress_size
        self.file_size = file_size
        self.compress_type = compress_type
        self.crc = crc
        self.raw_name = name.encode("utf-8", "surrogateescape")  # the name's bytes (miniz compares these)
        self.flags = 0  # general purpose bit flags (read by the miniz reading below)
        self.external = 0  # external attributes


class BadZip(Exception):
    """The central directory cannot be read (zipfile's BadZipFile, with its messages)."""


_END = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
_END64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_END64 = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # a central directory header, 46 bytes
_MAX_EXTRACT_VERSION = 63  # zipfile.MAX_EXTRACT_VERSION


def _end_record(fh):
    """zipfile's ``_EndRecData``: [signature, disk, disk of the directory, entries here, entries, directory size,
    directory offset, comment length, comment, where the record is], ZIP64 values filled in; None without one."""
    fh.seek(0, 2)
    filesize = fh.tell()
    if filesize < _END.size:
        return None
    fh.seek(-_END.size, 2)
    data = fh.read()
    if len(data) == _END.size and data[0:4] == b"PK\x05\x06" and data[-2:] == b"\x00\x00":
        endrec = list(_END.unpack(data)) + [b"", filesize - _END.size]
        return _end_record64(fh, -_END.size, endrec, filesize)
    start_at = max(filesize - (1 << 16) - _END.size, 0)
    fh.seek(start_at, 0)
    data = fh.read()
    start = data.rfind(b"PK\x05\x06")
    if start < 0:
        return None
    rec = data[start:start + _END.size]
    if len(rec) != _END.size:
        return None
    endrec = list(_END.unpack(rec))
    endrec += [data[start + _END.size:start + _END.size + endrec[7]], start_at + start]
    return _end_record64(fh, start_at + start - filesize, endrec, filesize)


def _end_record64(fh, offset: int, endrec: list, filesize: int) -> list:
    """zipfile's ``_EndRecData64``: the ZIP64 end record before ``offset`` (from the end), when there is one."""
    if filesize + offset - _END64_LOCATOR.size < 0:
        return endrec
    fh.seek(offset - _END64_LOCATOR.size, 2)
    data = fh.read(_END64_LOCATOR.size)
    if len(data) != _END64_LOCATOR.size:
        return endrec
    sig, diskno, _reloff, disks = _END64_LOCATOR.unpack(data)
    if sig != b"PK\x06\x07":
        return endrec
    if diskno != 0 or disks > 1:
        raise BadZip("zipfiles that span multiple disks are not supported")
    if filesize + offset - _END64_LOCATOR.size - _END64.size < 0:
        raise BadZip("File is not a zip file")  # zipfile's seek there fails, and it says so
    fh.seek(offset - _END64_LOCATOR.size - _END64.size, 2)
    data = fh.read(_END64.size)
    if len(data) != _END64.size:
        return endrec
    sig, _sz, _create, _read, disk_num, disk_dir, dircount, dircount2, dirsize, diroffset = _END64.unpack(data)
    if sig != b"PK\x06\x06":
        return endrec
    endrec[0:7] = [sig, disk_num, disk_dir, dircount, dircount2, dirsize, diroffset]
    return endrec


def read_directory(fh) -> List[Entry]:
    """The central directory's entries in order, as ``zipfile.ZipFile(fh).infolist()`` gives them (names cut at a NUL,
    cp437 unless flagged UTF-8, ZIP64 extra fields, offsets shifted by the bytes before the archive). Raises
    :class:`BadZip` (zipfile's messages), NotImplementedError (a newer zip version), UnicodeDecodeError."""
    endrec = _end_record(fh)
    if not endrec:
        raise BadZip("File is not a zip file")
    size_cd, offset_cd = endrec[5], endrec[6]
    concat = endrec[9] - size_cd - offset_cd
    if endrec[0] == b"PK\x06\x06":
        concat -= _END64.size + _END64_LOCATOR.size
    start_dir = offset_cd + concat
    if start_dir < 0:
        raise BadZip("Bad offset for central directory")
    fh.seek(start_dir, 0)
    data = fh.read(size_cd)
    end = len(data)
    unpack_from = _CENTRAL.unpack_from
    head = _CENTRAL.size
    entries: List[Entry] = []
    pos = total = 0
    while total < size_cd:
        if pos + head > end:
            raise BadZip("Truncated central directory")
        (sig, _cv, _cs, extract_version, _res, flags, compress_type, _t, _d, crc, compress_size, file_size,
         name_len, extra_len, comment_len, _vol, _ia, _ea, header_offset) = unpack_from(data, pos)
        if sig != b"PK\x01\x02":
            raise BadZip("Bad magic number for central directory")
        pos += head
        raw = data[pos:pos + name_len]
        pos += name_len
        name = raw.decode("ascii") if raw.isascii() else raw.decode("utf-8") if flags & 0x800 else raw.decode("cp437")
        extra = data[pos:pos + extra_len]
        pos += extra_len + comment_len
        if extract_version > _MAX_EXTRACT_VERSION:
            raise NotImplementedError(M("zip file version %.1f", extract_version / 10))
        if extra:
            file_size, compress_size, header_offset = _zip64_extra(extra, file_size, compress_size, header_offset)
        nul = name.find("\x00")
        if nul >= 0:
            name = name[:nul]
        if os.sep != "/" and os.sep in name:
            name = name.replace(os.sep, "/")
        entries.append(Entry(name, header_offset + concat, compress_size, file_size, compress_type, crc))
        total += head + name_len + extra_len + comment_len
    return entries


def _zip64_extra(extra: bytes, file_size: int, compress_size: int, header_offset: int) -> Tuple[int, int, int]:
    """zipfile's ``ZipInfo._decodeExtra``: the ZIP64 sizes and offset that stand in for 0xFFFFFFFF."""
    unpack_from = struct.unpack_from
    while len(extra) >= 4:
        tp, ln = unpack_from("<HH", extra, 0)
        if ln + 4 > len(extra):
            raise BadZip(M("Corrupt extra field %04x (size=%d)", tp, ln))
        if tp == 0x0001:
            data = extra[4:ln + 4]
            field = ""
            try:
                if file_size in (0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF):
                    field = "File size"
                    file_size = unpack_from("<Q", data, 0)[0]
                    data = data[8:]
                if compress_size == 0xFFFF_FFFF:
                    field = "Compress size"
                    compress_size = unpack_from("<Q", data, 0)[0]
                    data = data[8:]
                if header_offset == 0xFFFF_FFFF:
                    field = "Header offset"
                    header_offset = unpack_from("<Q", data, 0)[0]
            except struct.error:
                raise BadZip("Corrupt zip64 extra field. %s not found." % field) from None
        extra = extra[ln + 4:]
    return file_size, compress_size, header_offset


# ------------------------------------------------------------------ the directory as torch 2.13's miniz reads it (R-...)


class Refused(Exception):
    """miniz refuses to open the archive (torch.load fails before it reads any pickle): the message says why."""


_EOCD = struct.Struct("<4s4H2LH")  # 22 bytes
_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_CDH = struct.Struct("<4s4B4HL2L5H2L")  # 46 bytes
_SEARCH = 0xFFFF + _EOCD.size  # R-eocd-search: how far back from the end miniz looks

ENCRYPTED, STRONG, PATCH, MASKED = 0x0001, 0x0040, 0x0020, 0x2000  # general purpose bit flags (APPNOTE 4.4.4)
DOS_DIR = 0x10  # external attribute: a directory (R-directory)


def _find_eocd(fh, size: int) -> Optional[int]:
    """R-eocd-search: the last ``PK\\x05\\x06`` with at least 22 bytes after it, scanning back from the end in 4 KiB
    blocks until a block starts 64 KiB + 22 before the end (``mz_zip_reader_locate_header_sig``)."""
    # the last 4 KiB first: the last signature there is the last in the whole window too, and a torch zip's end record
    # is its last 22 bytes; only a file without one there is read back to the whole window (never a big file's
    # tensor bytes just to find its end)
    for back in (4096 + _EOCD.size, _SEARCH + 4096):
        start = max(size - back, 0)
        fh.seek(start)
        tail = fh.read(size - start)
        at = tail.rfind(b"PK\x05\x06", 0, len(tail) - _EOCD.size + 4)
        if at >= 0:
            return start + at
        if start == 0:
            return None
    return None


class Directory:
    """The entries as miniz indexes them (central-directory order), and name lookup as ``mz_zip_reader_locate_file``
    does it: a name over its full length, ASCII case ignored (R-lookup)."""

    def __init__(self, entries: List[Entry]):
        self.entries = entries
        self.by_name: Dict[bytes, List[Entry]] = {}
        for e in entries:
            self.by_name.setdefault(e.raw_name.lower(), []).append(e)  # bytes.lower: ASCII only, as MZ_TOLOWER

    def find(self, name: bytes) -> List[Entry]:
        """Every entry miniz could resolve ``name`` to: one, or several when names repeat (R-duplicates: which one
        its binary search over its heap-sorted index finds is not the first or the last in general)."""
        return self.by_name.get(name.split(b"\x00", 1)[0].lower(), [])  # the looked-up name is a C string


def read_central_directory(fh, size: int) -> Directory:
    """The central directory as ``mz_zip_reader_read_central_dir`` reads it; :class:`Refused` where miniz refuses."""
    at = _find_eocd(fh, size)
    if at is None:
        raise Refused(M("no end of central directory record in the last 64 KiB (miniz: failed finding central directory)"))
    fh.seek(at)
    (_sig, this_disk, cdir_disk, on_disk, total, cdir_size, cdir_ofs, _clen) = _EOCD.unpack(fh.read(_EOCD.size))
    zip64 = None
    if at >= _LOCATOR.size + _EOCD64.size:  # R-zip64: the locator just before the end record, the record where it says
        fh.seek(at - _LOCATOR.size)
        sig, _disk, rel, disks = _LOCATOR.unpack(fh.read(_LOCATOR.size))
        if sig == b"PK\x06\x07":
            if rel > size - _EOCD64.size:
                raise Refused(M("the ZIP64 end record's offset is past the end of the file"))
            fh.seek(rel)
            raw = fh.read(_EOCD64.size)
            if len(raw) == _EOCD64.size and raw[:4] == b"PK\x06\x06":
                zip64 = _EOCD64.unpack(raw), disks
    if zip64 is not None:
        (_s, rec_size, _m, _v, this_disk, cdir_disk, on_disk, total, cdir_size, cdir_ofs), disks = zip64
        if rec_size < _EOCD64.size - 12:
            raise Refused(M("the ZIP64 end record is damaged"))
        if disks != 1:
            raise Refused(M("a multi-disk archive (ZIP64 locator: %d disks); miniz does not read those", disks))
        if total > 0xFFFFFFFF or on_disk > 0xFFFFFFFF or cdir_size > 0xFFFFFFFF:
            raise Refused(M("more entries or a larger central directory than miniz reads"))
    if total != on_disk:  # R-multidisk
        raise Refused(M("a multi-disk archive (%d entries here, %d in all); miniz does not read those", on_disk, total))
    if (this_disk | cdir_disk) != 0 and (this_disk != 1 or cdir_disk != 1):
        raise Refused(M("a multi-disk archive (disk %d, directory on disk %d); miniz does not read those", this_disk, cdir_disk))
    if cdir_size < total * _CDH.size or cdir_ofs + cdir_size > size:
        raise Refused(M("the central directory's size or offset does not fit the file (miniz: corrupted)"))
    fh.seek(cdir_ofs)  # R-cdir-offset: the stated offset, never shifted by bytes before the archive
    data = fh.read(cdir_size)
    if len(data) != cdir_size:
        raise Refused(M("the central directory is cut short"))
    entries: List[Entry] = []
    pos = 0
    for _ in range(total):
        if cdir_size - pos < _CDH.size or data[pos:pos + 4] != b"PK\x01\x02":
            raise Refused(M("a central directory record is damaged (miniz: corrupted)"))
        (_sig, _cv, _cs, _ev, _eh, flags, method, _t, _d, crc, comp, uncomp, name_len, extra_len, comment_len, disk,
         _ia, external, offset) = _CDH.unpack_from(data, pos)
        name = data[pos + _CDH.size:pos + _CDH.size + name_len]
        extra = data[pos + _CDH.size + name_len:pos + _CDH.size + name_len + extra_len]
        if extra_len and max(comp, uncomp, offset) == 0xFFFFFFFF:
            uncomp, comp, offset = _zip64_sizes(extra, uncomp, comp, offset)
        if comp != 0xFFFFFFFF and uncomp != 0xFFFFFFFF:
            method_and_time = struct.unpack_from("<I", data, pos + 10)[0]  # miniz reads 4 bytes there
            if (method_and_time == 0 and uncomp != comp) or (uncomp and not comp):
                raise Refused(M("an entry's sizes do not agree (miniz: corrupted)"))
        if disk == 0xFFFF or (disk != this_disk and disk != 1):
            raise Refused(M("an entry on another disk (miniz: multi-disk)"))
        if comp != 0xFFFFFFFF and offset + 30 + comp > size:
            raise Refused(M("an entry runs past the end of the file (miniz: corrupted)"))
        if flags & MASKED:  # R-masked
            raise Refused(M("an entry with a masked local header (miniz: unsupported encryption)"))
        total_len = _CDH.size + name_len + extra_len + comment_len
        if total_len > cdir_size - pos:
            raise Refused(M("a central directory record runs past the directory (miniz: corrupted)"))
        # R-version-needed: never read (zipfile refuses above 63); R-lookup: the name's full bytes are kept
        e = Entry(name.decode("utf-8", "replace"), offset, comp, uncomp, method, crc)
        e.raw_name, e.flags, e.external = name, flags, external
        entries.append(e)
        pos += total_len
    return Directory(entries)


def _zip64_sizes(extra: bytes, uncomp: int, comp: int, offset: int):
    """R-zip64-extra: the first 0x0001 extra field's sizes, for the values that are 0xFFFFFFFF (as
    ``mz_zip_file_stat_internal`` reads them)."""
    pos = 0
    while len(extra) - pos >= 4:
        field, length = struct.unpack_from("<HH", extra, pos)
        if length + 4 > len(extra) - pos:
            raise Refused(M("a damaged extra field (miniz: corrupted)"))
        if field == 1:
            body = extra[pos + 4:pos + 4 + length]
            vals = []
            for present in (uncomp == 0xFFFFFFFF, comp == 0xFFFFFFFF, offset == 0xFFFFFFFF):
                if present:
                    if len(body) < 8:
                        raise Refused(M("a damaged ZIP64 extra field (miniz: corrupted)"))
                    vals.append(struct.unpack_from("<Q", body)[0])
                    body = body[8:]
                else:
                    vals.append(None)
            return (vals[0] if vals[0] is not None else uncomp, vals[1] if vals[1] is not None else comp,
                    vals[2] if vals[2] is not None else offset)
        pos += 4 + length
    if pos != len(extra):
        raise Refused(M("a damaged extra field (miniz: corrupted)"))
    return uncomp, comp, offset


def unreadable(entry: Entry) -> Optional[str]:
    """Why miniz refuses to read this entry's bytes (``mz_zip_reader_extract_to_mem``), None when it reads them
    (R-encryption, R-method)."""
    if entry.flags & (ENCRYPTED | STRONG | PATCH):
        return M("it is flagged encrypted or a patch (general purpose flags 0x%04x): miniz refuses to read it", entry.flags)
    if entry.compress_type not in (0, 8):
        return M("it uses compression method %d: miniz reads only stored (0) and deflate (8)", entry.compress_type)
    return None


def is_directory(entry: Entry) -> bool:
    """R-directory: miniz reads nothing for a 'directory' (a name ending in / or the DOS directory attribute) or an
    entry of 0 compressed bytes, and hands torch a buffer it never filled."""
    return entry.raw_name.endswith(b"/") or bool(entry.external & DOS_DIR) or entry.compress_size == 0
