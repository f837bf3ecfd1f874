"""Constructed PE files (the PE/COFF layout of https://learn.microsoft.com/en-us/windows/win32/debug/pe-format):
a minimal PE32+ or PE32 image with one section holding an import table and a delay-load import table of the given
DLL names. No code: only what a loader (and cudaenv.parse.pe) reads to know what the file imports. Real PE files
come from the test interpreter's own packages (pip's and setuptools' Windows launchers)."""

import struct
from typing import Sequence


def build_pe(imports: Sequence[str] = (), delay: Sequence[str] = (), wide: bool = True, machine: int = 0x8664,
             old_delay: bool = False, image_base: int = 0x180000000) -> bytes:
    """The file's bytes; ``old_delay``: delay-load descriptors holding VAs (Attributes bit 0 clear), as old linkers wrote."""
    va, rawptr = 0x1000, 0x200
    n_imp, n_del = len(imports), len(delay)
    imp_at = 0
    del_at = imp_at + 20 * (n_imp + 1)
    names_at = del_at + 32 * (n_del + 1)
    names, offsets = b"", []
    for name in list(imports) + list(delay):
        offsets.append(names_at + len(names))
        names += name.encode("ascii") + b"\0"
    body = bytearray(names_at + len(names))
    for n in range(n_imp):
        struct.pack_into("<IIIII", body, imp_at + 20 * n, 0, 0, 0, va + offsets[n], 0)
    for n in range(n_del):
        rva = va + offsets[n_imp + n]
        struct.pack_into("<IIIIIIII", body, del_at + 32 * n, 0 if old_delay else 1, rva + (image_base if old_delay else 0),
                         0, 0, 0, 0, 0, 0)
    body[names_at:] = names
    optsize = 240 if wide else 224
    opt = bytearray(optsize)
    struct.pack_into("<H", opt, 0, 0x20B if wide else 0x10B)
    if wide:
        struct.pack_into("<Q", opt, 24, image_base)
        struct.pack_into("<I", opt, 108, 16)
        dirs = 112
    else:
        struct.pack_into("<I", opt, 28, image_base & 0xFFFFFFFF)
        struct.pack_into("<I", opt, 92, 16)
        dirs = 96
    if n_imp:
        struct.pack_into("<II", opt, dirs + 8 * 1, va + imp_at, 20 * (n_imp + 1))
    if n_del:
        struct.pack_into("<II", opt, dirs + 8 * 13, va + del_at, 32 * (n_del + 1))
    coff = struct.pack("<HHIIIHH", machine, 1, 0, 0, 0, optsize, 0x2022)
    section = b".idata\0\0" + struct.pack("<IIIIIIHHI", len(body), va, len(body), rawptr, 0, 0, 0, 0, 0xC0000040)
    head = bytearray(b"MZ" + b"\0" * 58 + struct.pack("<I", 0x40))
    head += b"PE\0\0" + coff + bytes(opt) + section
    head += b"\0" * (rawptr - len(head))
    return bytes(head) + bytes(body)
