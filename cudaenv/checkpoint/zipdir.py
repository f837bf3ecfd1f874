"""A zip's central directory, read as :mod:`zipfile` reads it (its entries, ZIP64 extra fields, the bytes before the
archive, its error messages), without importing zipfile: that import costs more than inspecting a small checkpoint.
The records are APPNOTE.TXT 4.3.12, 4.3.14-16, as CPython's zipfile spells them."""

from __future__ import annotations

import os
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import List, Tuple


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
        self.flags = 0  # general purpose bit flags (read by cudaenv.checkpoint.minizdir)
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
            raise NotImplementedError("zip file version %.1f" % (extract_version / 10))
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
            raise BadZip("Corrupt extra field %04x (size=%d)" % (tp, ln))
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
