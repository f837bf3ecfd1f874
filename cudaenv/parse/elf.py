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


def _open(data, budget: int):
    """(pyelftools' ELFFile over a budgeted stream, the budget) or None when ``data`` is no ELF."""
    import io

    stream = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        stream.seek(0)
        if stream.read(4) != ELF_MAGIC:
            return None
        stream.seek(0)
        from elftools.elf.elffile import ELFFile
    except Exception:  # noqa: BLE001 - an unreadable stream, or no pyelftools
        return None
    guarded = Budget(stream, budget)
    try:
        return ELFFile(guarded), guarded
    except Exception:  # noqa: BLE001
        return None


def _dynsym(elf, guarded):
    """(the raw .dynsym bytes, the raw .dynstr bytes, entry size) read bounded; raises on anything broken."""
    sym = elf.get_section_by_name(".dynsym")
    if sym is None or sym["sh_type"] != "SHT_DYNSYM":
        return None
    strings = elf.get_section(sym["sh_link"])
    entsize = 24 if elf.elfclass == 64 else 16
    size = min(int(sym["sh_size"]), MAX_SYMBOLS * entsize)
    guarded.seek(int(sym["sh_offset"]))
    table = guarded.read(size)
    guarded.seek(int(strings["sh_offset"]))
    text = guarded.read(max(0, int(strings["sh_size"])))
    return table, text, entsize, size < int(sym["sh_size"])


def parse_elf_symbols(data: Union[bytes, IO[bytes]], defined: bool = False, keep=None,
                      budget: int = SYMBOL_BUDGET) -> Optional[ElfSymbols]:
    """The global dynamic symbols of the ELF in ``data``: the undefined ones (what it needs from the libraries it
    loads; weak ones left out: they may stay unresolved), or with ``defined`` the ones it exports; only names for
    which ``keep(name)`` is true. None when it is no ELF or has no dynamic symbol table. Never raises; never reads
    more than ``budget`` bytes (a table past the budget gives None, one past MAX_SYMBOLS what came before)."""
    import struct

    opened = _open(data, budget)
    if opened is None:
        return None
    elf, guarded = opened
    try:
        found = _dynsym(elf, guarded)
        little = elf.little_endian
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
    return ElfSymbols(tuple(names), complete)


def parse_elf_defines(data: Union[bytes, IO[bytes]], names, budget: int = SYMBOL_BUDGET) -> Optional[Dict[str, bool]]:
    """For each of ``names``: whether the ELF in ``data`` exports it (a defined symbol in its dynamic symbol table),
    looked up through its GNU hash table as the loader does (the SysV ``.hash`` where there is none), so a
    library with 200,000 symbols costs a few reads per name. None when it is no ELF or has no hash table; a name
    the budget left unread is absent from the answer. Never raises."""
    opened = _open(data, budget)
    if opened is None:
        return None
    elf, guarded = opened
    try:
        table = elf.get_section_by_name(".gnu.hash") or elf.get_section_by_name(".hash")
        lookup = getattr(table, "get_symbol", None)
        if lookup is None or not hasattr(table, "params"):
            return None
        if int(table.params.get("nbuckets") or 0) < 1 or ("bloom_size" in table.params and int(table.params["bloom_size"]) < 1):
            return None
    except Exception:  # noqa: BLE001
        return None
    out: Dict[str, bool] = {}
    for name in names:
        try:
            sym = _bounded_lookup(lookup, guarded, name)
        except Exception:  # noqa: BLE001 - a broken chain or the budget: this name stays unknown
            if guarded.read_bytes >= guarded.limit:
                break
            continue
        out[name] = sym is not None and sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
    return out


def _bounded_lookup(lookup, guarded, name):
    """``lookup(name)`` with the chain walk capped: at most MAX_CHAIN words read beyond where it started."""
    start = guarded.read_bytes
    guarded.limit, saved = min(guarded.limit, start + MAX_CHAIN * 4 + 8192), guarded.limit
    try:
        return lookup(name)
    finally:
        guarded.limit = saved
