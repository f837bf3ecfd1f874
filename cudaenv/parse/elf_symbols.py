"""The dynamic symbols of a shared library, for the extension check (an extension's undefined names in torch's C++
namespaces, each looked up among the names torch's libraries export): the symbol half of :mod:`cudaenv.parse.elf`
(the header and NEEDED come from there), read with ``struct`` over the same budgeted stream, bounded, never raising.

:func:`parse_elf_symbols` reads ``.dynsym`` and ``.dynstr`` whole (an extension's take a few hundred KiB) and picks
the entries it wants in bulk: the binding and section index of every entry turned into byte masks, the names matched
in the string table's bytes before any is decoded. :func:`parse_elf_defines` looks names up through the GNU (else
SysV) hash table as the loader does, reading each 4 KiB page of the file once, so a 1 GB ``libtorch_cuda.so`` costs a
few reads per name, never the file.
"""

from __future__ import annotations

from operator import mul as _mul

from cudaenv.core.tuples import named_tuple
from cudaenv.parse.elf import MAX_NAME, _Head, _needed, _open

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import IO, Dict, List, Optional, Tuple, Union

# The symbol readers below unpack the section headers, .dynsym/.dynstr and the hash tables with struct (see
# cudaenv.parse.elf's text for why not pyelftools).
SYMBOL_BUDGET = 32 * 1024 * 1024  # bytes read per file for symbols (an extension's .dynsym and .dynstr: a few MiB)
MAX_SYMBOLS = 262144  # dynamic symbol entries walked, at most
MAX_KEPT = 4096  # symbol names kept, at most
MAX_CHAIN = 65536  # hash chain entries followed per lookup, at most
SHN_UNDEF = 0
STB_GLOBAL, STB_WEAK = 1, 2


@named_tuple
class ElfSymbols:
    """The dynamic symbols of one ELF file that a reader asked for (undefined ones, or defined ones)."""

    names: Tuple[str, ...]  # in table order, each once, at most MAX_KEPT
    complete: bool  # False when the reading stopped at a bound or a broken part
    needed: Tuple[str, ...] = ()  # its DT_NEEDED entries (read from the .dynamic section)


SHT_HASH, SHT_DYNSYM, SHT_GNU_HASH = 5, 11, 0x6FFFFFF6
MAX_SECTIONS = 4096


@named_tuple
class _Layout:
    """What the symbol readers need of an ELF file, from its header and section headers (read raw, bounded)."""

    order: str  # "<" | ">"
    wide: bool  # ELF64
    sections: Tuple[Tuple[int, int, int, int, int], ...]  # (sh_type, sh_offset, sh_size, sh_link, sh_entsize)


def _layout(head: _Head, guarded) -> _Layout:
    """The section headers, unpacked with struct from the header's e_shoff/e_shnum; raises on a table cut short or
    past the budget."""
    import struct

    order, wide, shoff, size, count = head.order, head.wide, head.shoff, head.shentsize, head.shnum
    if not 0 < count <= MAX_SECTIONS or size < (64 if wide else 40):
        raise ValueError("no usable section table")
    guarded.seek(shoff)
    raw = guarded.read(count * size)
    fmt = order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
    sections = []
    for n in range(count):
        _, kind, _, _, offset, length, link, _, _, entsize = struct.unpack_from(fmt, raw, n * size)
        sections.append((kind, offset, length, link, entsize))
    return _Layout(order, wide, tuple(sections))


def _dynsym(lay: _Layout, guarded):
    """(the raw .dynsym bytes, the raw .dynstr bytes, entry size, cut) read bounded; raises on anything broken."""
    sym = next((s for s in lay.sections if s[0] == SHT_DYNSYM), None)
    if sym is None or sym[3] >= len(lay.sections):
        return None
    strings = lay.sections[sym[3]]
    entsize = 24 if lay.wide else 16
    size = min(sym[2], MAX_SYMBOLS * entsize)
    guarded.seek(sym[1])
    table = guarded.read(size)
    guarded.seek(strings[1])
    text = guarded.read(max(0, strings[2]))
    return table, text, entsize, size < sym[2]


def parse_elf_symbols(data: Union[bytes, IO[bytes]], defined: bool = False, keep=None,
                      budget: int = SYMBOL_BUDGET, needing=None, select=None) -> Optional[ElfSymbols]:
    """The global dynamic symbols of the ELF in ``data``: the undefined ones (what it needs from the libraries it
    loads; weak ones left out: they may stay unresolved), or with ``defined`` the ones it exports; only names for
    which ``keep(name)`` is true; with its NEEDED entries. ``select`` (a compiled bytes pattern): only names it matches
    at their start, picked in the string table's bytes before any name is decoded (the same answer as a ``keep`` doing
    that match, without a Python step per symbol). ``needing`` (a collection of sonames): when no NEEDED entry is one
    of them, the symbol table is not read (names ``()``). None when it is no ELF or has no dynamic symbol table. Never
    raises; never reads more than ``budget`` bytes (a table past the budget gives None, one past MAX_SYMBOLS what came
    before)."""
    import struct

    opened = _open(data, budget)
    if opened is None:
        return None
    header, guarded = opened
    try:
        lay = _layout(header, guarded)
        needed = _needed(header, guarded)
        if needing is not None and not any(n in needing for n in needed):
            return ElfSymbols((), True, needed)
        found = _dynsym(lay, guarded)
        little = lay.order == "<"
    except Exception:  # noqa: BLE001 - a section table cut short, a budget hit: nothing reliable to say
        return None
    if found is None:
        return None
    table, text, entsize, cut = found
    names: List[str] = []
    seen = set()
    complete = not cut
    at_start = _at_name_start(select) if select is not None and not select.groups else None
    picked = _picked(table, text, entsize, little, defined, None if at_start is not None else select)
    if picked is not None:  # the bulk path: the offsets of the names wanted, each NUL-ended within MAX_NAME
        offsets, whole = picked
        raw = _names_at(text, offsets)
        if at_start is not None:  # ``select`` at each name's start, one search over the names joined
            raw = at_start.findall(b"\0" + b"\0".join(raw))
        # decoded in one go (a NUL never ends a UTF-8 sequence, so joining changes no name), each name once, in order
        joined = b"\0".join(raw).decode("utf-8", "surrogateescape")
        unique = list(dict.fromkeys(joined.split("\0"))) if raw else []
        if keep is not None:
            unique = [n for n in unique if keep(n)]
        if len(unique) >= MAX_KEPT:
            return ElfSymbols(tuple(unique[:MAX_KEPT]), False, needed)
        return ElfSymbols(tuple(unique), complete and whole, needed)
    fmt = ("<" if little else ">") + ("IBBHQQ" if entsize == 24 else "IIIBBH")
    for entry in struct.iter_unpack(fmt, table[: len(table) - len(table) % entsize]):
        if entsize == 24:
            name_at, info, _, shndx = entry[0], entry[1], entry[2], entry[3]
        else:
            name_at, info, shndx = entry[0], entry[3], entry[5]
        bind = info >> 4
        if not name_at or (shndx == SHN_UNDEF) == bool(defined):
            continue
        if bind != STB_GLOBAL and not (defined and bind == STB_WEAK):
            continue
        end = text.find(b"\0", name_at, name_at + MAX_NAME)
        if end < 0:
            complete = False
            continue
        if select is not None and not select.match(text, name_at, end):
            continue
        name = text[name_at:end].decode("utf-8", "surrogateescape")
        if name in seen or (keep is not None and not keep(name)):
            continue
        seen.add(name)
        names.append(name)
        if len(names) >= MAX_KEPT:
            complete = False
            break
    return ElfSymbols(tuple(names), complete, needed)


def _picked(table: bytes, text: bytes, entsize: int, little: bool, defined: bool, select):
    """(the string offsets of the symbols :func:`parse_elf_symbols` would keep, in table order; whether every name
    was readable) found without a Python step per symbol: st_info and the two bytes of st_shndx sliced out of the
    table as byte strings, turned into 0/1 masks by translate and combined as integers, st_name taken through the
    mask by compress; then ``select`` matched in the string table's bytes. None where that reading could differ from
    the entry-by-entry one (a name without its NUL within MAX_NAME bytes, a platform without a 4-byte array type):
    the caller walks the entries then."""
    import array
    import sys
    from itertools import compress

    words = array.array("I")
    if words.itemsize != 4 or (text and (text[-1:] != b"\0" or max(map(len, text.split(b"\0"))) >= MAX_NAME)):
        return None
    usable = len(table) - len(table) % entsize
    count = usable // entsize
    if not count:
        return [], True
    words.frombytes(table[:usable])
    if (sys.byteorder == "little") != little:
        words.byteswap()
    at = 4 if entsize == 24 else 12  # st_info, then st_other and st_shndx (whose two bytes are 0 in either order)
    bind = int.from_bytes(table[at:usable:entsize].translate(_GLOBAL_OR_WEAK if defined else _GLOBAL), "little")
    undefined = (int.from_bytes(table[at + 2:usable:entsize].translate(_ZERO), "little")
                 & int.from_bytes(table[at + 3:usable:entsize].translate(_ZERO), "little"))
    if defined:
        undefined ^= int.from_bytes(b"\1" * count, "little")  # now: st_shndx is not SHN_UNDEF
    mask = (bind & undefined).to_bytes(count, "little")
    offsets = list(filter(None, compress(words[0::entsize // 4], mask)))  # st_name is the entry's first word
    whole = not offsets or max(offsets) < len(text)
    if select is not None:
        match = select.match
        offsets = [n for n in offsets if match(text, n)]
    return offsets if whole else [n for n in offsets if n < len(text)], whole


def _names_at(text: bytes, offsets) -> list:
    """The NUL-ended names of the string table ``text`` at ``offsets``: looked up among the table's strings by their
    start (one split, the starts summed at C level), a name that starts inside another string (a linker may share a
    string's tail) read from its offset."""
    from itertools import accumulate

    parts = text.split(b"\0")
    by_start = dict(zip(accumulate(map((1).__add__, map(len, parts)), initial=0), parts))
    raw = list(map(by_start.get, offsets))
    if None in raw:
        raw = [r if r is not None else text[n:text.find(b"\0", n)] for r, n in zip(raw, offsets)]
    return raw


def _at_name_start(select):
    """``select`` (a bytes pattern without groups that never matches a NUL) after each NUL of names joined by NUL with
    one before the first, with the rest of the name as the pattern's group: ``findall`` gives the selected names in
    order, what ``select.match`` at each name's offset in the string table keeps (the search jumps from NUL to NUL).
    Compiled once: ``re``'s own cache keeps it."""
    import re

    return re.compile(b"\0((?:" + select.pattern + b")[^\0]*)", select.flags)


# 0/1 tables for bytes.translate: st_info's binding (the high nibble) STB_GLOBAL, or STB_GLOBAL or STB_WEAK; a zero byte
_GLOBAL = bytes(1 if b >> 4 == STB_GLOBAL else 0 for b in range(256))
_GLOBAL_OR_WEAK = bytes(1 if b >> 4 in (STB_GLOBAL, STB_WEAK) else 0 for b in range(256))
_ZERO = bytes(1 if b == 0 else 0 for b in range(256))


def parse_elf_defines(data: Union[bytes, IO[bytes]], names, budget: int = SYMBOL_BUDGET) -> Optional[Dict[str, bool]]:
    """For each of ``names``: whether the ELF in ``data`` exports it (a defined global or weak symbol of its dynamic
    symbol table), looked up through its GNU hash table as the loader does (the SysV ``.hash`` where there is none),
    so a library with 200,000 symbols costs a few small reads per name. None when it is no ELF or has no hash table;
    a name the budget left unread is absent from the answer. Never raises."""
    opened = _open(data, budget)
    if opened is None:
        return None
    header, guarded = opened
    try:
        lookup = _hash_lookup(_layout(header, guarded), guarded)
    except Exception:  # noqa: BLE001 - a broken or missing table: nothing to say
        return None
    if lookup is None:
        return None
    out: Dict[str, bool] = {}
    for name in names:
        try:
            out[name] = lookup(name)
        except Exception:  # noqa: BLE001 - a broken chain or the budget: this name stays unknown
            if guarded.read_bytes >= guarded.limit:
                break
    return out


PAGE = 4096  # the hash lookups read the file in pages of this size (each read once per file)
_GNU_HASHES: Dict[bytes, int] = {}  # a name's GNU hash, kept for the next library asked (torch has six), bounded
_POWERS: List[int] = [1]  # 33 ** k modulo 2 ** 32, k = 0, 1, ...: grown to the longest name hashed so far


def _powers(n: int) -> List[int]:
    """:data:`_POWERS` up to 33 ** n at least (a longer list made apart and then put in place: threads may share it)."""
    global _POWERS
    powers = _POWERS
    if len(powers) <= n:
        powers = list(powers)
        while len(powers) <= n:
            powers.append(powers[-1] * 33 & 0xFFFFFFFF)
        _POWERS = powers
    return powers


def _gnu_hash(name: bytes) -> int:
    """The GNU hash of ``name`` (bfd's dl_new_hash: h = h * 33 + c from 5381, 32 bits). A name of up to MAX_NAME
    bytes through its closed form, 5381 * 33 ** n + sum(c_i * 33 ** (n - 1 - i)) modulo 2 ** 32, summed in C (``map``
    over the powers kept modulo 2 ** 32) rather than one Python step per byte; a longer one step by step."""
    h = _GNU_HASHES.get(name)
    if h is None:
        if len(name) <= MAX_NAME:
            powers = _powers(len(name))
            h = (5381 * powers[len(name)] + sum(map(_mul, reversed(name), powers))) & 0xFFFFFFFF
        else:
            h = 5381
            for c in name:
                h = (h * 33 + c) & 0xFFFFFFFF
        if len(_GNU_HASHES) >= 16384:
            _GNU_HASHES.clear()
        _GNU_HASHES[name] = h
    return h


def _hash_lookup(lay: _Layout, guarded):
    """A function name -> defined? over the file's GNU (else SysV) hash table and the dynamic symbols it indexes."""
    import struct

    order = lay.order
    table = next((s for s in lay.sections if s[0] == SHT_GNU_HASH), None) or next((s for s in lay.sections if s[0] == SHT_HASH), None)
    if table is None or table[3] >= len(lay.sections):
        return None
    sym = lay.sections[table[3]]
    if sym[0] != SHT_DYNSYM or sym[3] >= len(lay.sections):
        return None
    strings = lay.sections[sym[3]]
    entsize, fmt = (24, order + "IBBHQQ") if lay.wide else (16, order + "IIIBBH")
    pages: Dict[int, bytes] = {}  # the file's 4 KiB pages read so far: lookups of many names share their reads

    def window(at: int, size: int) -> bytes:
        first, last = at // PAGE, (at + size - 1) // PAGE
        if first == last and first in pages:  # the common case: one page, read before
            return pages[first][at - first * PAGE: at - first * PAGE + size]
        for page in range(first, last + 1):
            if page not in pages:
                guarded.seek(page * PAGE)
                pages[page] = guarded.read(PAGE)
        blob = b"".join(pages[p] for p in range(first, last + 1))
        return blob[at - first * PAGE: at - first * PAGE + size]

    def defined(index: int, name: bytes) -> bool:
        entry = struct.unpack(fmt, window(sym[1] + index * entsize, entsize))
        name_at, info, shndx = (entry[0], entry[1], entry[3]) if lay.wide else (entry[0], entry[3], entry[5])
        if window(strings[1] + name_at, len(name) + 1) != name + b"\0":
            return False
        return shndx != SHN_UNDEF and (info >> 4) in (STB_GLOBAL, STB_WEAK)

    sixteen = struct.Struct(order + "16I")

    def chain_words(at: int, count: int):
        data = window(at, 4 * count)
        if len(data) == 64:
            return sixteen.unpack(data)
        if len(data) < 4:
            raise ValueError("the hash chain runs past the end of the file")
        return struct.unpack(order + "%dI" % (len(data) // 4), data[: len(data) - len(data) % 4])

    if table[0] == SHT_GNU_HASH:
        guarded.seek(table[1])
        nbuckets, symoffset, bloom_size, bloom_shift = struct.unpack(order + "4I", guarded.read(16))
        word = 8 if lay.wide else 4
        if nbuckets < 1 or bloom_size < 1 or nbuckets > 1 << 24 or bloom_size > 1 << 24:
            return None
        bloom = struct.unpack(order + "%d%s" % (bloom_size, "Q" if lay.wide else "I"), guarded.read(bloom_size * word))
        buckets = struct.unpack(order + "%dI" % nbuckets, guarded.read(4 * nbuckets))
        chains = table[1] + 16 + bloom_size * word + 4 * nbuckets
        bits = word * 8

        def gnu(text: str) -> bool:
            name = text.encode("utf-8", "surrogateescape")
            h = _gnu_hash(name)
            mask = (1 << (h % bits)) | (1 << ((h >> bloom_shift) % bits))
            if bloom[(h // bits) % bloom_size] & mask != mask:
                return False
            index = buckets[h % nbuckets]
            if index < symoffset:
                return False
            for _ in range(MAX_CHAIN // 16):
                for n, value in enumerate(chain_words(chains + 4 * (index - symoffset), 16)):
                    if (value | 1) == (h | 1) and defined(index + n, name):
                        return True
                    if value & 1:
                        return False
                index += 16
            return False
        return gnu

    guarded.seek(table[1])
    nbucket, nchain = struct.unpack(order + "2I", guarded.read(8))
    if nbucket < 1 or nbucket > 1 << 24 or nchain > 1 << 24:
        return None
    buckets = struct.unpack(order + "%dI" % nbucket, guarded.read(4 * nbucket))
    chain_at = table[1] + 8 + 4 * nbucket

    def sysv(text: str) -> bool:
        name = text.encode("utf-8", "surrogateescape")
        h = 0
        for c in name:
            h = ((h << 4) + c) & 0xFFFFFFFF
            h = (h ^ ((h & 0xF0000000) >> 24)) & 0x0FFFFFFF
        index, steps = buckets[h % nbucket], 0
        while index and steps < MAX_CHAIN and index < nchain:
            if defined(index, name):
                return True
            index, steps = chain_words(chain_at + 4 * index, 1)[0], steps + 1
        return False
    return sysv
