"""A shared library's dynamic section (``NEEDED``, ``SONAME``, ``RUNPATH``/``RPATH``, the versions it needs) and its
dynamic symbols, read with ``struct`` from a seekable byte stream, bounded, and never raising. This module is the one
reader of ELF files in cudaenv: the library resolution, the frameworks' ``NEEDED`` entries and the extension symbol
check all go through it.

The dynamic section is read as the loader reads it (``ld.so``, not ``readelf -S``): the ELF header, the program
headers (``PT_DYNAMIC`` and the ``PT_LOAD`` segments that map addresses to file offsets), the dynamic entries up to
``DT_NULL``, the strings of ``DT_STRTAB`` they name, and the ``DT_VERNEED`` chain for versioned symbol needs
(``libc.so.6`` ``GLIBC_2.34``). Section headers are not needed for it (a stripped library keeps its dynamic segment).
:class:`Budget` wraps the stream and stops every reading past a byte budget, so a 1 GB library or a hostile file (a
dynamic table with no end, a string with no NUL, a version chain that loops) costs at most that budget: a reading cut
short gives what was read before, never an exception.

Why struct and not pyelftools (which the earlier readers used): the extension check opens every compiled module of
every package that builds on torch; pyelftools' construct structures cost about 4 ms per file opened and 100 us per
symbol read, which made ``doctor --quick`` 2x slower on a site with seven extensions (bench/run.py --only quick).
pyelftools stays a test dependency: tests/parse/test_parse_elf.py checks this reader against it on real libraries.

Sample (a CUDA-12 extension)::

    soname="flash_attn_2_cuda.so", needed=("libc10.so", "libcudart.so.12", ...), runpath=("$ORIGIN/../torch/lib",)
"""

from typing import IO, Dict, List, NamedTuple, Optional, Tuple, Union

BUDGET = 4 * 1024 * 1024  # bytes read per file, at most (the dynamic table and its strings take a few KiB)
MAX_TAGS = 4096  # dynamic entries read, at most (real libraries have under 100)
MAX_NEEDS = 512  # version needs read, at most
MAX_SEGMENTS = 256  # program headers read, at most (real libraries have about a dozen)
MAX_NAME = 4096  # bytes of one string read, at most
ELF_MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
# e_machine -> the name the ld.so.cache flag rows use (data/loader_search.json); others are given as "EM_<number>"
MACHINES = {3: "EM_386", 8: "EM_MIPS", 20: "EM_PPC", 21: "EM_PPC64", 22: "EM_S390", 40: "EM_ARM", 62: "EM_X86_64",
            183: "EM_AARCH64", 243: "EM_RISCV"}


class BudgetExceeded(Exception):
    """The stream was asked for more than its budget."""


class Budget:
    """A read-only stream over ``stream`` that counts the bytes read and refuses to go past ``limit``."""

    def __init__(self, stream: IO[bytes], limit: int = BUDGET):
        self._stream, self.limit, self.read_bytes = stream, limit, 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or self.read_bytes + size > self.limit:
            raise BudgetExceeded("more than %d bytes asked for" % self.limit)
        data = self._stream.read(size)
        self.read_bytes += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._stream.seek(offset, whence)

    def tell(self) -> int:
        return self._stream.tell()


class ElfDynamic(NamedTuple):
    """What the dynamic loader reads of one ELF file."""

    elf_class: int  # 32 | 64
    machine: str  # "EM_X86_64", "EM_AARCH64"
    soname: Optional[str]
    needed: Tuple[str, ...]  # DT_NEEDED, in order
    runpath: Tuple[str, ...]  # DT_RUNPATH split at ':' (searched after LD_LIBRARY_PATH)
    rpath: Tuple[str, ...]  # DT_RPATH split at ':' (searched first, and only when there is no RUNPATH)
    version_needs: Tuple[Tuple[str, str], ...]  # (library, version): ("libc.so.6", "GLIBC_2.34")
    complete: bool  # False when the reading stopped at the budget or at a broken part (what came before is kept)


class _Head(NamedTuple):
    """The ELF header's facts (64 bytes at fixed places)."""

    order: str  # "<" | ">"
    wide: bool  # ELF64
    machine: int
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int


def _open(data, budget: int):
    """(the ELF header's facts, the budgeted stream), or None when ``data`` is no ELF or cannot be read."""
    import io
    import struct

    stream = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    guarded = Budget(stream, budget)
    try:
        guarded.seek(0)
        head = guarded.read(64)
    except Exception:  # noqa: BLE001 - an unreadable stream
        return None
    if len(head) < 52 or head[:4] != ELF_MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    order, wide = ("<" if head[5] == 1 else ">"), head[4] == 2
    if wide and len(head) < 64:
        return None
    machine = struct.unpack_from(order + "H", head, 18)[0]
    if wide:
        phoff, shoff = struct.unpack_from(order + "QQ", head, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 0x36)
    else:
        phoff, shoff = struct.unpack_from(order + "II", head, 0x1C)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 0x2A)
    return _Head(order, wide, machine, phoff, phentsize, phnum, shoff, shentsize, shnum), guarded


def _string(guarded, at: int, end: int) -> Optional[str]:
    """The NUL-ended string at file offset ``at`` (not past ``end``, the string table's end), None when there is none."""
    if at < 0 or at >= end:
        return None
    guarded.seek(at)
    raw = guarded.read(min(MAX_NAME, end - at))
    if b"\0" not in raw:
        return None
    name = raw.split(b"\0", 1)[0]
    return name.decode("utf-8", "surrogateescape") if name else None


class _Dynamic(NamedTuple):
    """The dynamic segment's entries as the loader reads them."""

    entries: Tuple[Tuple[int, int], ...]  # (d_tag, d_val), up to DT_NULL
    to_file: object  # a virtual address -> its file offset (None when no PT_LOAD maps it)
    complete: bool


def _dynamic(head: _Head, guarded) -> Optional[_Dynamic]:
    """The PT_DYNAMIC entries and the PT_LOAD address map; None when there is no dynamic segment; raises on a header
    table cut short or the budget."""
    import struct

    size = 56 if head.wide else 32
    if not 0 < head.phnum <= MAX_SEGMENTS or head.phentsize < size:
        return None
    guarded.seek(head.phoff)
    raw = guarded.read(head.phnum * head.phentsize)
    loads, dynamic = [], None
    for n in range(min(head.phnum, len(raw) // head.phentsize)):
        at = n * head.phentsize
        if head.wide:
            kind, _, offset, vaddr, _, filesz = struct.unpack_from(head.order + "IIQQQQ", raw, at)
        else:
            kind, offset, vaddr, _, filesz = struct.unpack_from(head.order + "IIIII", raw, at)
        if kind == PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif kind == PT_DYNAMIC and dynamic is None:
            dynamic = (offset, filesz)
    if dynamic is None:
        return None
    entry = 16 if head.wide else 8
    guarded.seek(dynamic[0])
    raw = guarded.read(min(dynamic[1], MAX_TAGS * entry))
    entries, complete = [], len(raw) >= min(dynamic[1], MAX_TAGS * entry)
    ended = False
    for tag, value in struct.iter_unpack(head.order + ("qQ" if head.wide else "iI"), raw[: len(raw) - len(raw) % entry]):
        if tag == DT_NULL:
            ended = True
            break
        entries.append((tag, value))
    complete = complete and ended

    def to_file(address: int) -> Optional[int]:
        for vaddr, offset, filesz in loads:
            if vaddr <= address < vaddr + filesz:
                return offset + address - vaddr
        return None
    return _Dynamic(tuple(entries), to_file, complete)


def _names(head: _Head, guarded, dyn: _Dynamic, tags) -> Tuple[Dict[int, List[str]], bool]:
    """(the strings the entries of ``tags`` name, by tag, in order (through DT_STRTAB and DT_STRSZ); complete?): a
    reading cut short by the budget keeps the names read before."""
    values = dict(dyn.entries)
    table = dyn.to_file(values[DT_STRTAB]) if DT_STRTAB in values else None
    out: Dict[int, List[str]] = {t: [] for t in tags}
    if table is None:
        return out, not any(tag in out for tag, _ in dyn.entries)
    end = table + values.get(DT_STRSZ, MAX_NAME)
    try:
        for tag, value in dyn.entries:
            if tag in out:
                text = _string(guarded, table + value, end)
                if text is not None:
                    out[tag].append(text)
    except Exception:  # noqa: BLE001 - the budget, or a stream that fails: keep what was read
        return out, False
    return out, True


def _version_needs(head: _Head, guarded, dyn: _Dynamic) -> Tuple[Tuple[Tuple[str, str], ...], bool]:
    """((library, version) of the DT_VERNEED chain, complete?): Elf_Verneed records (16 bytes: version, count, file,
    aux, next) each with a chain of Elf_Vernaux (16 bytes: hash, flags, other, name, next); bounded by MAX_NEEDS."""
    import struct

    values = dict(dyn.entries)
    if DT_VERNEED not in values:
        return (), True
    at, table = dyn.to_file(values[DT_VERNEED]), dyn.to_file(values.get(DT_STRTAB, -1))
    if at is None or table is None:
        return (), False
    end = table + values.get(DT_STRSZ, MAX_NAME)
    needs: List[Tuple[str, str]] = []
    for _ in range(min(values.get(DT_VERNEEDNUM, MAX_NEEDS), MAX_NEEDS)):
        guarded.seek(at)
        _, count, name, aux, step = struct.unpack(head.order + "HHIII", guarded.read(16))
        library = _string(guarded, table + name, end) or "?"
        here = at + aux
        for _ in range(min(count, MAX_NEEDS)):
            guarded.seek(here)
            _, _, _, vname, vstep = struct.unpack(head.order + "IHHII", guarded.read(16))
            version = _string(guarded, table + vname, end)
            if version:
                needs.append((library, version))
            if len(needs) >= MAX_NEEDS:
                return tuple(needs), False
            if not vstep:
                break
            here += vstep
        if not step:
            return tuple(needs), True
        at += step
    return tuple(needs), False


def parse_elf_dynamic(data: Union[bytes, IO[bytes]], budget: int = BUDGET) -> Optional[ElfDynamic]:
    """The dynamic section of the ELF in ``data`` (bytes or a seekable binary stream); None when it is no ELF or has
    no dynamic segment. Never raises; never reads more than ``budget`` bytes."""
    opened = _open(data, budget)
    if opened is None:
        return None
    head, guarded = opened
    try:
        dyn = _dynamic(head, guarded)
    except Exception:  # noqa: BLE001 - a header table cut short, or past the budget: nothing reliable to say
        return None
    if dyn is None:
        return None
    complete = dyn.complete
    values, whole_names = _names(head, guarded, dyn, (DT_NEEDED, DT_RUNPATH, DT_RPATH, DT_SONAME))
    complete = complete and whole_names
    try:
        needs, whole = _version_needs(head, guarded, dyn)
    except Exception:  # noqa: BLE001 - a chain cut short or past the budget
        needs, whole = (), False

    def paths(kind: int) -> Tuple[str, ...]:
        return tuple(p for v in values[kind] for p in v.split(":") if p)

    return ElfDynamic(64 if head.wide else 32, MACHINES.get(head.machine, "EM_%d" % head.machine),
                      (values[DT_SONAME] or [None])[0], tuple(values[DT_NEEDED]), paths(DT_RUNPATH), paths(DT_RPATH),
                      needs, complete and whole)


def _needed(head: _Head, guarded) -> Tuple[str, ...]:
    """The DT_NEEDED names, for the symbol readers (the same reading as :func:`parse_elf_dynamic`'s)."""
    dyn = _dynamic(head, guarded)
    return tuple(_names(head, guarded, dyn, (DT_NEEDED,))[0][DT_NEEDED]) if dyn is not None else ()


# ------------------------------------------------------------------ dynamic symbols (extensions against torch)
# The symbol readers below unpack the section headers, .dynsym/.dynstr and the hash tables with struct (see the
# module's text for why not pyelftools).
SYMBOL_BUDGET = 32 * 1024 * 1024  # bytes read per file for symbols (an extension's .dynsym and .dynstr: a few MiB)
MAX_SYMBOLS = 262144  # dynamic symbol entries walked, at most
MAX_KEPT = 4096  # symbol names kept, at most
MAX_CHAIN = 65536  # hash chain entries followed per lookup, at most
SHN_UNDEF = 0
STB_GLOBAL, STB_WEAK = 1, 2


class ElfSymbols(NamedTuple):
    """The dynamic symbols of one ELF file that a reader asked for (undefined ones, or defined ones)."""

    names: Tuple[str, ...]  # in table order, each once, at most MAX_KEPT
    complete: bool  # False when the reading stopped at a bound or a broken part
    needed: Tuple[str, ...] = ()  # its DT_NEEDED entries (read from the .dynamic section)


SHT_HASH, SHT_DYNSYM, SHT_GNU_HASH = 5, 11, 0x6FFFFFF6
MAX_SECTIONS = 4096


class _Layout(NamedTuple):
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
    picked = _picked(table, text, entsize, little, defined, select)
    if picked is not None:  # the bulk path: the offsets of the names wanted, each NUL-ended within MAX_NAME
        offsets, whole = picked
        # decoded in one go (a NUL never ends a UTF-8 sequence, so joining changes no name), each name once, in order
        joined = b"\0".join([text[n:text.find(b"\0", n)] for n in offsets]).decode("utf-8", "surrogateescape")
        unique = list(dict.fromkeys(joined.split("\0"))) if offsets else []
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
    return [n for n in offsets if n < len(text)], whole


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


def _gnu_hash(name: bytes) -> int:
    """The GNU hash of ``name`` (bfd's dl_new_hash: h = h * 33 + c from 5381, 32 bits)."""
    h = _GNU_HASHES.get(name)
    if h is None:
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
