"""A shared library's dynamic section (``NEEDED``, ``SONAME``, ``RUNPATH``/``RPATH``, the versions it needs) and its
dynamic symbols, read with ``struct`` from a seekable byte stream, bounded, and never raising. This module and its
symbol half, :mod:`cudaenv.parse.elf_symbols`, are the one reader of ELF files in cudaenv: the library resolution,
the frameworks' ``NEEDED`` entries and the extension symbol check all go through them.

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

from __future__ import annotations


from cudaenv.core.tuples import named_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import IO, Dict, List, Optional, Tuple, Union

BUDGET = 4 * 1024 * 1024  # bytes read per file, at most (the dynamic table and its strings take a few KiB)
MAX_TAGS = 4096  # dynamic entries read, at most (real libraries have under 100)
MAX_NEEDS = 512  # version needs read, at most
MAX_SEGMENTS = 256  # program headers read, at most (real libraries have about a dozen)
MAX_NAME = 4096  # bytes of one string read, at most
MAX_PATH = 64 * 1024  # bytes of one DT_RUNPATH/DT_RPATH string read, at most (TensorFlow 2.21's RUNPATH is about 20,000)
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


@named_tuple
class ElfDynamic:
    """What the dynamic loader reads of one ELF file."""

    elf_class: int  # 32 | 64
    machine: str  # "EM_X86_64", "EM_AARCH64"
    soname: Optional[str]
    needed: Tuple[str, ...]  # DT_NEEDED, in order
    runpath: Tuple[str, ...]  # DT_RUNPATH split at ':' (searched after LD_LIBRARY_PATH)
    rpath: Tuple[str, ...]  # DT_RPATH split at ':' (searched first, and only when there is no RUNPATH)
    version_needs: Tuple[Tuple[str, str], ...]  # (library, version): ("libc.so.6", "GLIBC_2.34")
    complete: bool  # False when the reading stopped at the budget or at a broken part (what came before is kept)


@named_tuple
class _Head:
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


def _string(guarded, at: int, end: int, limit: int = MAX_NAME) -> Optional[str]:
    """The NUL-ended string at file offset ``at`` (not past ``end``, the string table's end, nor ``limit`` bytes), None
    when there is none."""
    if at < 0 or at >= end:
        return None
    guarded.seek(at)
    raw = guarded.read(min(limit, end - at))
    if b"\0" not in raw:
        return None
    name = raw.split(b"\0", 1)[0]
    return name.decode("utf-8", "surrogateescape") if name else None


@named_tuple
class _Dynamic:
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
                text = _string(guarded, table + value, end, MAX_PATH if tag in (DT_RUNPATH, DT_RPATH) else MAX_NAME)
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
