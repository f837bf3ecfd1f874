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

from typing import IO, NamedTuple, Optional, Tuple, Union

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
