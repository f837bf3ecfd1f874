"""A shared library's dynamic section (``NEEDED``, ``SONAME``, ``RUNPATH``/``RPATH``, the versions it needs), read
with pyelftools from a seekable byte stream, bounded, and never raising.

Only what the loader reads is touched: the ELF header, the program headers (``PT_DYNAMIC`` and the ``PT_LOAD``
segments that map the string table), the dynamic entries, the strings they name, and the section headers'
``.gnu.version_r`` for versioned symbol needs (``libcudart.so.12`` needs ``libcudart.so.12`` ``libcudart.so.12``;
``GLIBC_2.34``). :class:`Budget` wraps the stream and stops every reading past a byte budget, so a 1 GB library or a
hostile file (a dynamic table with no end, a string with no NUL) costs at most that budget: a reading cut short
gives what was read before, never an exception. pyelftools is imported on first use (off the `cudaenv use` path).

Sample (a CUDA-12 extension)::

    soname="flash_attn_2_cuda.so", needed=("libc10.so", "libcudart.so.12", ...), runpath=("$ORIGIN/../torch/lib",)
"""

from typing import IO, Dict, List, NamedTuple, Optional, Tuple, Union

BUDGET = 4 * 1024 * 1024  # bytes read per file, at most (the dynamic table and its strings take a few KiB)
MAX_TAGS = 4096  # dynamic entries read, at most (real libraries have under 100)
MAX_NEEDS = 512  # version needs read, at most
ELF_MAGIC = b"\x7fELF"


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


def _text(value) -> Optional[str]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) and 0 < len(value) <= 4096 else None


def parse_elf_dynamic(data: Union[bytes, IO[bytes]], budget: int = BUDGET) -> Optional[ElfDynamic]:
    """The dynamic section of the ELF in ``data`` (bytes or a seekable binary stream); None when it is no ELF, has
    no dynamic segment, or pyelftools is missing. Never raises; never reads more than ``budget`` bytes."""
    import io

    stream = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        stream.seek(0)
        if stream.read(4) != ELF_MAGIC:
            return None
        stream.seek(0)
        from elftools.elf.elffile import ELFFile
    except Exception:  # noqa: BLE001 - an unreadable stream, or no pyelftools: nothing to say
        return None
    guarded = Budget(stream, budget)
    try:
        elf = ELFFile(guarded)
        dynamic = next(iter(elf.iter_segments("PT_DYNAMIC")), None)
        elf_class, machine = int(elf.elfclass), str(elf["e_machine"])
    except Exception:  # noqa: BLE001 - pyelftools raises ELFError, struct errors, KeyError... on hostile bytes
        return None
    if dynamic is None:
        return None
    values = {"DT_NEEDED": [], "DT_RUNPATH": [], "DT_RPATH": [], "DT_SONAME": []}
    complete = True
    try:
        size = max(0, int(dynamic["p_filesz"]))
        count = min(MAX_TAGS, size // max(1, dynamic._tagsize))
        for n in range(count):
            tag = dynamic.get_tag(n)
            kind = tag.entry.d_tag
            if kind == "DT_NULL":
                break
            if kind in values:
                name = {"DT_NEEDED": "needed", "DT_RUNPATH": "runpath", "DT_RPATH": "rpath", "DT_SONAME": "soname"}[kind]
                text = _text(getattr(tag, name, None))
                if text is not None:
                    values[kind].append(text)
    except Exception:  # noqa: BLE001 - keep what was read
        complete = False
    needs = []
    try:
        section = elf.get_section_by_name(".gnu.version_r")
        if section is not None and hasattr(section, "iter_versions"):
            for verneed, auxes in section.iter_versions():
                library = _text(verneed.name) or "?"
                for aux in auxes:
                    name = _text(aux.name)
                    if name:
                        needs.append((library, name))
                    if len(needs) >= MAX_NEEDS:
                        break
                if len(needs) >= MAX_NEEDS:
                    complete = False
                    break
    except Exception:  # noqa: BLE001
        complete = False

    def paths(kind: str) -> Tuple[str, ...]:
        return tuple(p for v in values[kind] for p in v.split(":") if p)

    return ElfDynamic(elf_class, machine, (values["DT_SONAME"] or [None])[0], tuple(values["DT_NEEDED"]),
                      paths("DT_RUNPATH"), paths("DT_RPATH"), tuple(needs), complete)


# ------------------------------------------------------------------ dynamic symbols (extensions against torch)
# The symbol readers below unpack the ELF header, the section headers, .dynamic, .dynsym/.dynstr and the hash tables
# with struct, not pyelftools: the extension check opens every compiled module of every package that builds on torch
# and looks up thousands of names; pyelftools' construct structures cost about 4 ms per file opened and 100 us per
# symbol read, which made doctor --quick 2x slower on a site with seven extensions (bench/run.py --only quick).
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


def _open(data, budget: int):
    """(the ELF header's facts: byte order, ELF64, e_shoff, e_shentsize, e_shnum; the budgeted stream) or None when
    ``data`` is no ELF. The header is 64 bytes at fixed places (read with struct: the symbol readers open many files,
    and building pyelftools' structures costs more than the lookups)."""
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
    shoff = struct.unpack_from(order + ("Q" if wide else "I"), head, 0x28 if wide else 0x20)[0]
    shentsize, shnum = struct.unpack_from(order + "HH", head, 0x3A if wide else 0x2E)
    return (order, wide, shoff, shentsize, shnum), guarded


SHT_DYNAMIC = 6
DT_NEEDED = 1
SHT_HASH, SHT_DYNSYM, SHT_GNU_HASH = 5, 11, 0x6FFFFFF6
MAX_SECTIONS = 4096


class _Layout(NamedTuple):
    """What the symbol readers need of an ELF file, from its header and section headers (read raw, bounded)."""

    order: str  # "<" | ">"
    wide: bool  # ELF64
    sections: Tuple[Tuple[int, int, int, int, int], ...]  # (sh_type, sh_offset, sh_size, sh_link, sh_entsize)


def _layout(header, guarded) -> _Layout:
    """The section headers, unpacked with struct from the header's e_shoff/e_shnum; raises on a table cut short or
    past the budget."""
    import struct

    order, wide, shoff, size, count = header
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


def _needed(lay: _Layout, guarded) -> Tuple[str, ...]:
    """The DT_NEEDED names of the .dynamic section (its entries, and the strings of the table it links)."""
    import struct

    dyn = next((s for s in lay.sections if s[0] == SHT_DYNAMIC), None)
    if dyn is None or dyn[3] >= len(lay.sections):
        return ()
    strings = lay.sections[dyn[3]]
    size = 16 if lay.wide else 8
    guarded.seek(dyn[1])
    raw = guarded.read(min(dyn[2], MAX_TAGS * size))
    out = []
    for tag, value in struct.iter_unpack(lay.order + ("qQ" if lay.wide else "iI"), raw[: len(raw) - len(raw) % size]):
        if tag == 0:
            break
        if tag == DT_NEEDED and value < strings[2]:
            guarded.seek(strings[1] + value)
            name = guarded.read(256).split(b"\0", 1)[0]
            if name:
                out.append(name.decode("utf-8", "surrogateescape"))
    return tuple(out)


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
                      budget: int = SYMBOL_BUDGET, needing=None) -> Optional[ElfSymbols]:
    """The global dynamic symbols of the ELF in ``data``: the undefined ones (what it needs from the libraries it
    loads; weak ones left out: they may stay unresolved), or with ``defined`` the ones it exports; only names for
    which ``keep(name)`` is true; with its NEEDED entries. ``needing`` (a collection of sonames): when no NEEDED entry
    is one of them, the symbol table is not read (names ``()``). None when it is no ELF or has no dynamic symbol
    table. Never raises; never reads more than ``budget`` bytes (a table past the budget gives None, one past
    MAX_SYMBOLS what came before)."""
    import struct

    opened = _open(data, budget)
    if opened is None:
        return None
    header, guarded = opened
    try:
        lay = _layout(header, guarded)
        needed = _needed(lay, guarded)
        if needing is not None and not any(n in needing for n in needed):
            return ElfSymbols((), True, needed)
        found = _dynsym(lay, guarded)
        little = lay.order == "<"
    except Exception:  # noqa: BLE001 - a section table cut short, a budget hit: nothing reliable to say
        return None
    if found is None:
        return None
    table, text, entsize, cut = found
    fmt = ("<" if little else ">") + ("IBBHQQ" if entsize == 24 else "IIIBBH")
    names: List[str] = []
    seen = set()
    complete = not cut
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
        end = text.find(b"\0", name_at, name_at + 4096)
        if end < 0:
            complete = False
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

    def defined(index: int, name: bytes) -> bool:
        guarded.seek(sym[1] + index * entsize)
        entry = struct.unpack(fmt, guarded.read(entsize))
        name_at, info, shndx = (entry[0], entry[1], entry[3]) if lay.wide else (entry[0], entry[3], entry[5])
        guarded.seek(strings[1] + name_at)
        if guarded.read(len(name) + 1) != name + b"\0":
            return False
        return shndx != SHN_UNDEF and (info >> 4) in (STB_GLOBAL, STB_WEAK)

    def chain_words(at: int, count: int):
        guarded.seek(at)
        data = guarded.read(4 * count)
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
            h = 5381
            for c in name:
                h = (h * 33 + c) & 0xFFFFFFFF
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
