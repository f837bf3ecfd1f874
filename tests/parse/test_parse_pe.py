"""A PE file's imports (parse/pe.py): real Windows executables (pip's and setuptools' launchers in the test
interpreter, x86, x86-64 and arm64) checked against objdump where it reads them, constructed DLLs with import and
delay-load tables (PE32+ and PE32, old VA delay descriptors), and hostile bytes (random, truncated, bit flips, a
table with no end) that never raise and never read past the budget."""

import glob
import os
import random
import shutil
import subprocess
import sysconfig

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_builders import build_pe
from cudaenv.parse.elf import Budget
from cudaenv.parse.pe import MAX_IMPORTS, parse_pe_imports

SITE = sysconfig.get_paths()["purelib"]
LAUNCHERS = sorted(glob.glob(os.path.join(SITE, "pip", "_vendor", "distlib", "*.exe"))
                   + glob.glob(os.path.join(SITE, "setuptools", "*.exe")))


def test_real_launchers_read_as_objdump_reads_them():
    if not LAUNCHERS:
        pytest.skip("no Windows launcher in this interpreter's packages")
    objdump = shutil.which("objdump")
    checked = 0
    for path in LAUNCHERS:
        got = parse_pe_imports(open(path, "rb").read())
        assert got is not None and got.complete and "KERNEL32.dll" in got.imports, path
        assert got.machine in ("i386", "x86_64", "arm64"), path
        if objdump is None:
            continue
        out = subprocess.run([objdump, "-p", path], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            continue  # a machine objdump does not know (arm64 here)
        names = tuple(line.split("DLL Name:", 1)[1].strip() for line in out.stdout.splitlines() if "DLL Name:" in line)
        assert got.imports + got.delay == names, path
        checked += 1
    if objdump is not None:
        assert checked >= 2


def test_import_and_delay_load_tables_of_a_constructed_dll():
    pe = build_pe(["c10.dll", "cudart64_12.dll", "cublas64_12.dll", "KERNEL32.dll"], ["nvcuda.dll"])
    got = parse_pe_imports(pe)
    assert got == (("x86_64", True, ("c10.dll", "cudart64_12.dll", "cublas64_12.dll", "KERNEL32.dll"), ("nvcuda.dll",), True))
    old = parse_pe_imports(build_pe(["a.dll"], ["b.dll"], wide=False, machine=0x14C, old_delay=True, image_base=0x10000000))
    assert (old.machine, old.wide, old.imports, old.delay) == ("i386", False, ("a.dll",), ("b.dll",))
    assert parse_pe_imports(build_pe()) == ("x86_64", True, (), (), True)


def test_no_pe_and_broken_headers():
    assert parse_pe_imports(b"") is None and parse_pe_imports(b"\x7fELF" + b"\0" * 100) is None
    assert parse_pe_imports(b"MZ" + b"\0" * 62) is None  # e_lfanew 0: no PE signature there
    pe = bytearray(build_pe(["a.dll"]))
    pe[0x40:0x44] = b"XX\0\0"
    assert parse_pe_imports(bytes(pe)) is None


def test_a_table_with_no_end_is_bounded():
    """An import table whose descriptors never end (every one names a DLL): at most MAX_IMPORTS read, marked cut."""
    pe = build_pe(["x%d.dll" % n for n in range(MAX_IMPORTS + 20)])
    got = parse_pe_imports(pe)
    assert len(got.imports) == MAX_IMPORTS and not got.complete


def test_a_big_file_is_not_read_whole():
    pe = build_pe(["cudart64_12.dll"]) + b"\0" * (32 * 1024 * 1024)
    import io

    guarded = Budget(io.BytesIO(pe), 1 << 30)
    assert parse_pe_imports(guarded).imports == ("cudart64_12.dll",)
    assert guarded.read_bytes < 16 * 1024, guarded.read_bytes


def test_truncations_and_bit_flips_never_raise():
    data = build_pe(["c10.dll", "cudart64_12.dll"], ["nvcuda.dll"])
    if LAUNCHERS:
        data = open(LAUNCHERS[0], "rb").read()
    rng = random.Random(295)
    for cut in list(range(0, 600, 13)) + [rng.randrange(len(data)) for _ in range(60)]:
        got = parse_pe_imports(data[:cut])
        assert got is None or isinstance(got.imports, tuple)
    for _ in range(200):
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 12)):
            flipped[rng.randrange(min(len(flipped), 4096))] = rng.randrange(256)
        got = parse_pe_imports(bytes(flipped), budget=1 << 20)
        assert got is None or all(isinstance(n, str) and n.isprintable() for n in got.imports + got.delay)


@settings(max_examples=300)
@given(st.binary(max_size=4096))
def test_random_bytes_after_the_magic_never_raise(tail):
    got = parse_pe_imports(b"MZ" + tail, budget=64 * 1024)
    assert got is None or isinstance(got.imports, tuple)


@settings(max_examples=200)
@given(st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.", min_size=1, max_size=40), max_size=12),
       st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.", min_size=1, max_size=40), max_size=4), st.booleans())
def test_constructed_tables_read_back(imports, delay, wide):
    got = parse_pe_imports(build_pe(imports, delay, wide=wide, machine=0x8664 if wide else 0x14C))
    assert got.imports == tuple(dict.fromkeys(imports)) and got.delay == tuple(dict.fromkeys(delay)) and got.complete
