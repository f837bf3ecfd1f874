"""A library file's dynamic section, read through Host: a regular file only (never a FIFO or device), opened once,
read with a byte budget (:func:`cudaenv.parse.elf.parse_elf_dynamic`); None when it cannot be read or is no ELF."""

from __future__ import annotations

from cudaenv.parse.elf import BUDGET, ElfDynamic, parse_elf_dynamic

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Optional


def open_file(host, path: str):
    """The inspected system's regular file ``path`` opened for binary reading (links followed inside the root, as
    ``host.real`` does, without building a Path: pathlib stays off the doctor's path, issue 35; a FIFO or a device is
    refused unopened: :func:`cudaenv.host.files.open_regular`), or None when it cannot be opened."""
    from cudaenv.host.files import open_regular

    resolved = host.resolve(path)
    if resolved is None:
        return None
    try:
        return open_regular(host.local(resolved))
    except (OSError, ValueError):
        return None


def probe_elf_dynamic(host, path: str, budget: int = BUDGET) -> Optional[ElfDynamic]:
    """The dynamic section of the inspected system's ``path`` (links followed inside the root)."""
    stream = open_file(host, path)
    if stream is None:
        return None
    try:
        with stream:
            return parse_elf_dynamic(stream, budget)
    except OSError:
        return None


def probe_needed(host, path: str):
    """The NEEDED entries of ``path``, () when it cannot be read."""
    found = probe_elf_dynamic(host, path)
    return found.needed if found is not None else ()
