"""A Windows DLL's or executable's imports (the DLL names of its import and delay-load import tables), read from a
seekable byte stream with ``struct``, bounded, never raising: the Windows counterpart of :mod:`cudaenv.parse.elf`'s
``NEEDED`` entries, for resolving torch's and the frameworks' CUDA DLLs in the Windows DLL search order
(:mod:`cudaenv.probes.dlls`).

Only what the loader reads is touched (the PE/COFF specification, https://learn.microsoft.com/en-us/windows/win32/debug/pe-format):
the DOS header's ``e_lfanew``, the ``PE\\0\\0`` signature and COFF header, the optional header's magic (PE32 0x10b,
PE32+ 0x20b) and its data directories 1 (import table) and 13 (delay-load import table), the section table that maps
their RVAs to file offsets, the 20-byte import descriptors (Name at +12) and the 32-byte delay-load descriptors
(DllNameRVA at +4; an RVA when bit 0 of Attributes is set, else a VA, the image base subtracted), each list ended by a
zero entry, and the NUL-ended names. Every reading goes through :class:`cudaenv.parse.elf.Budget`.

Sample (a CUDA 12 build of torch_cuda.dll, abridged)::

    machine=0x8664, imports=("c10.dll", "cudart64_12.dll", "cublas64_12.dll", "KERNEL32.dll", ...), delay=("nvcuda.dll",)
"""

from typing import IO, List, NamedTuple, Optional, Tuple, Union

from cudaenv.parse.elf import Budget

PE_BUDGET = 4 * 1024 * 1024  # bytes read per file, at most (headers, two tables, their names: a few KiB)
MAX_SECTIONS = 96  # the PE format allows 96 sections
MAX_IMPORTS = 1024  # import descriptors read per table, at most
MAX_NAME = 256
IMPORT, DELAY_IMPORT = 1, 13  # data directory indexes
PE_MACHINES = {0x14C: "i386", 0x8664: "x86_64", 0xAA64: "arm64", 0x1C4: "armnt"}


class PeImports(NamedTuple):
    """The DLLs a PE file imports."""

    machine: str  # "x86_64", "arm64", "i386", or "0x<hex>"
    wide: bool  # PE32+ (64-bit)
    imports: Tuple[str, ...]  # the import table's DLL names, in order
    delay: Tuple[str, ...]  # the delay-load import table's (loaded at the first call into them)
    complete: bool  # False when a bound or a broken part stopped the reading (what came before is kept)


def _name(guarded, at: int) -> Optional[str]:
    guarded.seek(at)
    raw = guarded.read(MAX_NAME)
    if b"\0" not in raw:
        return None
    name = raw.split(b"\0", 1)[0]
    if not name or any(c < 0x20 or c > 0x7E for c in name):
        return None  # DLL names are printable ASCII
    return name.decode("ascii")


def parse_pe_imports(data: Union[bytes, IO[bytes]], budget: int = PE_BUDGET) -> Optional[PeImports]:
    """The imports of the PE file in ``data`` (bytes or a seekable binary stream); None when it is no PE file or its
    headers are broken. Never raises; never reads more than ``budget`` bytes."""
    import io
    import struct

    stream = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    guarded = Budget(stream, budget)
    try:
        guarded.seek(0)
        dos = guarded.read(64)
        if len(dos) < 64 or dos[:2] != b"MZ":
            return None
        lfanew = struct.unpack_from("<I", dos, 0x3C)[0]
        guarded.seek(lfanew)
        head = guarded.read(24)
        if len(head) < 24 or head[:4] != b"PE\0\0":
            return None
        machine, nsections, _, _, _, optsize, _ = struct.unpack_from("<HHIIIHH", head, 4)
        opt = guarded.read(optsize)
        if len(opt) < optsize or optsize < 2:
            return None
        magic = struct.unpack_from("<H", opt, 0)[0]
        if magic not in (0x10B, 0x20B):
            return None
        wide = magic == 0x20B
        base_at, count_at, dirs_at = (24, 108, 112) if wide else (28, 92, 96)
        if optsize < dirs_at:
            return None
        image_base = struct.unpack_from("<Q" if wide else "<I", opt, base_at)[0]
        ndirs = min(struct.unpack_from("<I", opt, count_at)[0], 16, (optsize - dirs_at) // 8)
        dirs = [struct.unpack_from("<II", opt, dirs_at + 8 * n) for n in range(ndirs)]
        raw = guarded.read(40 * min(nsections, MAX_SECTIONS))
        sections = [struct.unpack_from("<IIII", raw, 40 * n + 8) for n in range(len(raw) // 40)]  # vsize, va, rawsize, rawptr
    except Exception:  # noqa: BLE001 - a header cut short, or past the budget
        return None
    complete = nsections <= MAX_SECTIONS

    def to_file(rva: int) -> Optional[int]:
        for vsize, va, rawsize, rawptr in sections:
            if va <= rva < va + max(vsize, rawsize):
                return rawptr + rva - va
        return None

    def table(index: int, entry: int, name_at: int, delay: bool) -> Tuple[Tuple[str, ...], bool]:
        if index >= len(dirs) or not dirs[index][0]:
            return (), True
        start = to_file(dirs[index][0])
        if start is None:
            return (), False
        names: List[str] = []
        try:
            for n in range(MAX_IMPORTS):
                guarded.seek(start + n * entry)
                raw = guarded.read(entry)
                if len(raw) < entry:
                    return tuple(names), False
                if raw == b"\0" * entry:
                    return tuple(names), True
                rva = struct.unpack_from("<I", raw, name_at)[0]
                if delay and not struct.unpack_from("<I", raw, 0)[0] & 1:
                    rva -= image_base  # an old delay-load descriptor holds a VA
                at = to_file(rva) if rva > 0 else None
                name = _name(guarded, at) if at is not None else None
                if name is not None and name not in names:
                    names.append(name)
        except Exception:  # noqa: BLE001 - the budget, a stream that fails: keep what was read
            return tuple(names), False
        return tuple(names), False

    imports, whole = table(IMPORT, 20, 12, False)
    delay, whole_delay = table(DELAY_IMPORT, 32, 4, True)
    return PeImports(PE_MACHINES.get(machine, "0x%x" % machine), wide, imports, delay, complete and whole and whole_delay)
