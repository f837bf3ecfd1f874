"""The dynamic loader's cache, ``/etc/ld.so.cache``, as glibc's ldconfig writes it (``sysdeps/generic/dl-cache.h``):
the ``glibc-ld.so.cache1.1`` format, alone (glibc 2.32 and later write only it) or after the old ``ld.so-1.7.0``
table (older ldconfig's "compat" layout: skipped, its entries are the same libraries). Pure: bytes in, entries out;
never raises, reads nothing past the bytes it is given, at most MAX_ENTRIES entries.

Layout (little or big endian, as the header's flags say; 48-byte header, 24-byte entries; every string offset
counted from the start of the new header)::

    "glibc-ld.so.cache" "1.1" | nlibs u32 | len_strings u32 | flags u8 (& 3: 2 little, 3 big, 1 invalid) | pad[3]
    | extension_offset u32 | unused u32[3] | nlibs x (flags i32, key u32, value u32, osversion u32, hwcap u64) | strings

``key`` is the library's name (its soname: ``libcudart.so.12``), ``value`` the file's path; ``flags`` says the ELF
class and ABI (0x0303: x86-64 libc6, 0x0a03: AArch64), which the loader compares with its own before taking an entry.
"""

from __future__ import annotations

import struct

from cudaenv.core.tuples import named_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Dict, Optional, Tuple

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
NEW_HEADER = 48
NEW_ENTRY = 24
OLD_ENTRY_SIZE = 12
MAX_ENTRIES = 1 << 20  # entries read, at most (a distribution's cache has a few thousand)
MAX_STRING = 4096
HWCAP_EXTENSION = 1 << 62  # an entry of a glibc-hwcaps subfolder (used only on CPUs with those features)


@named_tuple
class CacheEntry:
    name: str  # "libcudart.so.12"
    path: str  # "/usr/local/cuda-12.8/targets/x86_64-linux/lib/libcudart.so.12"
    flags: int  # 0x0303: x86-64 libc6
    hwcap: int


@named_tuple
class LdCache:
    entries: Tuple[CacheEntry, ...]  # in the cache's order
    layout: str  # "new" | "old+new"
    complete: bool  # False when the entry table or a string ran past the end, or MAX_ENTRIES cut it


def _string(data: bytes, at: int) -> Optional[str]:
    if at < 0 or at >= len(data):
        return None
    end = data.find(b"\0", at, at + MAX_STRING)
    if end < 0:
        return None
    return data[at:end].decode("utf-8", "surrogateescape")


def _new_start(data: bytes) -> Optional[Tuple[int, str]]:
    """Where the new-format header starts: 0, or after an old table (aligned to 8 bytes)."""
    if data.startswith(NEW_MAGIC):
        return 0, "new"
    if not data.startswith(OLD_MAGIC) or len(data) < 16:
        return None
    nlibs = struct.unpack_from("<I", data, 12)[0]  # the old table has no endianness mark: every writer we know is LE
    end = 16 + nlibs * OLD_ENTRY_SIZE
    for start in (end + (-end % 8), end + (-end % 4)):
        if data[start:start + len(NEW_MAGIC)] == NEW_MAGIC:
            return start, "old+new"
    return None


def parse_ld_so_cache(data: bytes) -> Optional[LdCache]:
    """The entries of an ``ld.so.cache`` file's bytes; None when it is not one (or only the old format, or marked
    invalid)."""
    if not isinstance(data, (bytes, bytearray)):
        return None
    data = bytes(data)
    found = _new_start(data)
    if found is None:
        return None
    start, layout = found
    if len(data) < start + NEW_HEADER:
        return None
    endian = data[start + 28] & 3
    if endian == 1:
        return None
    order = ">" if endian == 3 else "<"
    nlibs = struct.unpack_from(order + "I", data, start + 20)[0]
    cache = data[start:]
    room = (len(cache) - NEW_HEADER) // NEW_ENTRY
    count = min(nlibs, room, MAX_ENTRIES)
    entries = []
    complete = count == nlibs
    for n in range(count):
        flags, key, value, _, hwcap = struct.unpack_from(order + "iIIIQ", cache, NEW_HEADER + n * NEW_ENTRY)
        name, path = _string(cache, key), _string(cache, value)
        if not name or not path:
            complete = False
            continue
        entries.append(CacheEntry(name, path, flags, hwcap))
    return LdCache(tuple(entries), layout, complete)


def cache_paths(cache: LdCache, flags: Optional[int]) -> Dict[str, str]:
    """name -> the path the loader takes for it: the first entry of that name whose flags are ``flags`` (the loader's
    own, for the object's machine; None: any), leaving out glibc-hwcaps entries (they depend on the CPU)."""
    out: Dict[str, str] = {}
    for entry in cache.entries:
        if entry.name in out or (flags is not None and entry.flags != flags):
            continue
        if (entry.hwcap >> 32) & ~0x3FF == HWCAP_EXTENSION >> 32:
            continue
        out[entry.name] = entry.path
    return out
