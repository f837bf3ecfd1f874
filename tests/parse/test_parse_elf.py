"""A shared library's dynamic section through pyelftools (parse/elf.py): real libraries built by the machine's C
compiler (SONAME, NEEDED, RUNPATH with $ORIGIN, RPATH, GLIBC version needs), and hostile bytes (random, truncated,
a table with no end) that never raise and never read past the budget."""

import io
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from elf_builders import build_library
from cudaenv.parse.elf import Budget, parse_elf_dynamic


def test_needed_soname_runpath_and_version_needs(tmp_path):
    dep = build_library(tmp_path / "x", "libdep.so.1", soname="libdep.so.1")
    lib = build_library(tmp_path / "lib", "libmain.so", soname="libmain.so", links=[dep], runpath="$ORIGIN/../x:/opt/a")
    got = parse_elf_dynamic(lib.read_bytes())
    assert got.complete and got.soname == "libmain.so" and got.elf_class in (32, 64)
    assert "libdep.so.1" in got.needed and "libc.so.6" in got.needed
    assert got.runpath == ("$ORIGIN/../x", "/opt/a") and got.rpath == ()
    assert any(lib == "libc.so.6" and v.startswith("GLIBC_") for lib, v in got.version_needs)
    old = build_library(tmp_path / "lib", "libold.so", links=[dep], runpath="$ORIGIN", old_dtags=True)
    got = parse_elf_dynamic(io.BytesIO(old.read_bytes()))
    assert got.rpath == ("$ORIGIN",) and got.runpath == () and got.soname is None


def test_a_big_file_is_not_read_whole(tmp_path):
    """A library padded to 64 MiB (its dynamic section at the start, a huge tail) costs only the budget."""
    lib = build_library(tmp_path, "libbig.so", soname="libbig.so")
    with open(lib, "ab") as f:
        f.truncate(64 * 1024 * 1024)
    with open(lib, "rb") as f:
        guarded = Budget(f, 64 * 1024 * 1024)
        got = parse_elf_dynamic(guarded)
        assert got.soname == "libbig.so"
        assert guarded.read_bytes < 256 * 1024, guarded.read_bytes


def test_no_elf_and_an_elf_without_dynamic_segment():
    assert parse_elf_dynamic(b"") is None and parse_elf_dynamic(b"#!/bin/sh\n") is None
    assert parse_elf_dynamic(b"\x7fELF" + b"\0" * 60) is None


def test_truncations_and_bit_flips_of_a_real_library_never_raise(tmp_path):
    data = build_library(tmp_path, "libt.so", soname="libt.so", runpath="$ORIGIN").read_bytes()
    rng = random.Random(29)
    for cut in list(range(0, 256, 7)) + [rng.randrange(len(data)) for _ in range(60)]:
        got = parse_elf_dynamic(data[:cut])
        assert got is None or isinstance(got.needed, tuple)
    for _ in range(150):
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 12)):
            at = rng.randrange(len(flipped))
            flipped[at] = rng.randrange(256)
        got = parse_elf_dynamic(bytes(flipped), budget=1 << 20)
        assert got is None or all(isinstance(n, str) for n in got.needed)


@settings(max_examples=300)
@given(st.binary(max_size=4096))
def test_random_bytes_after_the_magic_never_raise(tail):
    got = parse_elf_dynamic(b"\x7fELF" + tail, budget=64 * 1024)
    assert got is None or isinstance(got.needed, tuple)
