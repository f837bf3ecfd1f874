"""An rpm package header as the rpm database stores it (``Packages.blob`` of ``rpmdb.sqlite``): its name, version
and release (pure: bytes in, values out).

The format (rpm.org, "RPM file format", the Header section; rpm's ``lib/header.c`` ``headerExport``): the database
keeps the header without its 8-byte magic (``8e ad e8 01`` and 4 reserved bytes; accepted here too): two big-endian
32-bit counts, ``il`` index entries and ``dl`` bytes of data, then ``il`` entries of 16 bytes (tag, type, offset,
count), then the data store. NAME is tag 1000, VERSION 1001, RELEASE 1002, EPOCH 1003; a STRING (type 6) is
NUL-terminated at its offset. A truncated blob (a bounded read) gives what lies inside it.
"""

import struct
from typing import Optional, Tuple

MAGIC = b"\x8e\xad\xe8\x01"
TAGS = {1000: "name", 1001: "version", 1002: "release", 1003: "epoch"}
STRING, INT32, I18NSTRING = 6, 4, 9
MAX_ENTRIES = 100_000  # rpm's own limit on a header's index (HEADER_TAGS_MAX is 0x0000ffff); more is not a header


def parse_rpm_header(blob: object) -> Optional[Tuple[str, Optional[str], Optional[str], Optional[int]]]:
    """``(name, version, release, epoch)`` of an rpm header blob; None when it is not one or has no name."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        return None
    data = bytes(blob)
    if data[:4] == MAGIC:
        data = data[8:]
    if len(data) < 8:
        return None
    il, dl = struct.unpack(">II", data[:8])
    if not 0 < il <= MAX_ENTRIES:
        return None
    store = 8 + 16 * il
    found = {}
    for i in range(min(il, (len(data) - 8) // 16)):
        tag, kind, offset, count = struct.unpack(">iiii", data[8 + 16 * i: 24 + 16 * i])
        if tag not in TAGS or offset < 0 or offset >= dl:
            continue
        at = store + offset
        if kind in (STRING, I18NSTRING) and at < len(data):
            end = data.find(b"\x00", at, min(len(data), at + 4096))
            if end >= 0:
                found[TAGS[tag]] = data[at:end].decode("utf-8", "replace")
        elif kind == INT32 and count >= 1 and at + 4 <= len(data):
            found[TAGS[tag]] = struct.unpack(">i", data[at: at + 4])[0]
    name = found.get("name")
    if not isinstance(name, str) or not name:
        return None
    epoch = found.get("epoch")
    return (name, _text(found.get("version")), _text(found.get("release")), epoch if isinstance(epoch, int) else None)


def _text(value) -> Optional[str]:
    return value if isinstance(value, str) and value else None
