"""Real ELF shared libraries built by this machine's C compiler in the test's folder: a SONAME, NEEDED entries on
other built libraries, RUNPATH or RPATH (``$ORIGIN`` kept literal), and the versioned symbols of libc every linked
library needs. Tests that use them skip where there is no ``cc``."""

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Optional, Sequence

import pytest


def compiler() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build ELF libraries")
    return cc


def build_library(folder: Path, file_name: str, soname: Optional[str] = None, links: Sequence[Path] = (),
                  runpath: Optional[str] = None, old_dtags: bool = False, symbol: str = "f", code: Optional[str] = None,
                  flags: Sequence[str] = ()) -> Path:
    """``folder/file_name``: a shared library with ``soname``, NEEDED on each of ``links`` (built libraries, linked by
    path: the NEEDED entry is each one's SONAME), and ``runpath`` (DT_RUNPATH, or DT_RPATH with ``old_dtags``);
    ``code``: its C source instead of one function ``symbol``; ``flags``: more linker flags."""
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / (file_name + ".c")
    src.write_text(code if code is not None else "#include <stdio.h>\nint %s(void) { return puts(\"x\"); }\n" % symbol)
    out = folder / file_name
    args = [compiler(), "-shared", "-fPIC", "-o", str(out), str(src)]
    if soname:
        args.append("-Wl,-soname," + soname)
    if runpath:
        args += ["-Wl,-rpath," + runpath, "-Wl,--disable-new-dtags" if old_dtags else "-Wl,--enable-new-dtags"]
    args += list(flags) + ["-Wl,--no-as-needed"] + [str(p) for p in links]  # NEEDED even without a symbol used from them
    subprocess.run(args, check=True, timeout=60, capture_output=True)
    src.unlink()
    return out


def exporting(names: Sequence[str]) -> str:
    """C source defining a function of each (mangled) name: a C identifier may spell a C++ symbol."""
    return "".join("int %s(void) { return %d; }\n" % (n, i) for i, n in enumerate(names))


def needing(names: Sequence[str]) -> str:
    """C source calling a function of each (mangled) name, left undefined for the loader to find."""
    decls = "".join("extern int %s(void);\n" % n for n in names)
    return decls + "int use_all(void) { return 0%s; }\n" % "".join(" + %s()" % n for n in names)


def ld_cache(entries, order="<", endian=2, old=None, nlibs=None):
    """A constructed /etc/ld.so.cache (the layout of glibc's dl-cache.h): ``entries`` (flags, name, path, hwcap) in the new format; ``old``: an old-format table of
    that many entries in front (the compat layout)."""
    strings = b""
    offsets = []
    base = 48 + 24 * len(entries)
    for _, name, path, _ in entries:
        offsets.append((base + len(strings), base + len(strings) + len(name.encode()) + 1))
        strings += name.encode() + b"\0" + path.encode() + b"\0"
    head = b"glibc-ld.so.cache1.1" + struct.pack(order + "II", len(entries) if nlibs is None else nlibs, len(strings)) + bytes([endian, 0, 0, 0]) + b"\0" * 16
    body = b"".join(struct.pack(order + "iIIIQ", flags, k, v, 0, hwcap) for (flags, _, _, hwcap), (k, v) in zip(entries, offsets))
    new = head + body + strings
    if old is None:
        return new
    front = b"ld.so-1.7.0" + b"\0" + struct.pack("<I", old) + b"\0" * (12 * old)
    return front + b"\0" * (-len(front) % 8) + new
