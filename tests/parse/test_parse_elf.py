"""cudaenv's one ELF reader (parse/elf.py, struct over a budgeted stream): real libraries built by the machine's C
compiler (SONAME, NEEDED, RUNPATH with $ORIGIN, RPATH, GLIBC version needs, stripped, 32-bit where the compiler can),
checked against pyelftools (a test dependency) on the same files; the symbol readers' NEEDED is the dynamic reader's;
and hostile bytes (random, truncated, bit flips, a table with no end, a version chain that loops) that never raise
and never read past the budget."""

import io
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from elf_builders import build_library
from cudaenv.parse.elf import Budget, parse_elf_dynamic
from cudaenv.parse.elf_symbols import parse_elf_symbols


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


def _pyelftools(path):
    """What pyelftools reads of the same file (the reference the reader is checked against)."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        dynamic = next(iter(elf.iter_segments("PT_DYNAMIC")))
        tags = {"DT_NEEDED": [], "DT_RUNPATH": [], "DT_RPATH": [], "DT_SONAME": []}
        for tag in dynamic.iter_tags():
            if tag.entry.d_tag in tags:
                tags[tag.entry.d_tag].append(getattr(tag, tag.entry.d_tag[3:].lower()))
        section = elf.get_section_by_name(".gnu.version_r")
        needs = tuple((v.name, a.name) for v, auxes in section.iter_versions() for a in auxes) if section else ()
        return (int(elf.elfclass), str(elf["e_machine"]), (tags["DT_SONAME"] or [None])[0], tuple(tags["DT_NEEDED"]),
                tuple(p for v in tags["DT_RUNPATH"] for p in v.split(":") if p),
                tuple(p for v in tags["DT_RPATH"] for p in v.split(":") if p), needs)


def test_the_reader_agrees_with_pyelftools_on_real_libraries(tmp_path):
    """Every field, on libraries with and without SONAME, RUNPATH, RPATH, several NEEDED, and stripped of its symbols
    (the program headers and the dynamic segment stay: the reader never needs the section headers for them)."""
    import shutil
    import subprocess

    __import__("pytest").importorskip("elftools")
    a = build_library(tmp_path / "a", "liba.so.1", soname="liba.so.1")
    b = build_library(tmp_path / "b", "libb.so.2", soname="libb.so.2", links=[a], runpath="$ORIGIN/../a")
    built = [a, b,
             build_library(tmp_path / "c", "libc3.so", links=[a, b], runpath="$ORIGIN:/opt/x:/opt/y"),
             build_library(tmp_path / "d", "libd.so", soname="libd.so", links=[b], runpath="/r1:$ORIGIN", old_dtags=True)]
    strip = shutil.which("strip")
    if strip:
        stripped = tmp_path / "libs.so"
        stripped.write_bytes(built[2].read_bytes())
        subprocess.run([strip, "--strip-all", str(stripped)], check=True, timeout=60)
        built.append(stripped)
    for lib in built:
        got = parse_elf_dynamic(lib.read_bytes())
        assert got.complete, lib
        assert tuple(got[:7]) == _pyelftools(lib), lib
        with open(lib, "rb") as f:
            assert parse_elf_symbols(f).needed == got.needed  # one reading of NEEDED for both readers


def test_a_version_chain_claiming_thousands_of_entries_is_bounded(tmp_path):
    """vn_cnt 65535 with each vna_next 16 bytes on (through whatever follows), and DT_VERNEEDNUM at its maximum: at
    most MAX_NEEDS pairs, a few KiB read, never an exception."""
    import struct

    from cudaenv.parse.elf import DT_VERNEED, DT_VERNEEDNUM, MAX_NEEDS, _dynamic, _open

    data = bytearray(build_library(tmp_path, "libv.so", soname="libv.so").read_bytes())
    assert parse_elf_dynamic(bytes(data)).version_needs
    head, guarded = _open(bytes(data), 1 << 20)
    dyn = _dynamic(head, guarded)
    at = dyn.to_file(dict(dyn.entries)[DT_VERNEED])
    struct.pack_into(head.order + "H", data, at + 2, 0xFFFF)  # vn_cnt
    aux = at + struct.unpack_from(head.order + "I", data, at + 8)[0]
    for n in range(0, 4096, 16):
        if aux + n + 16 <= len(data):
            struct.pack_into(head.order + "I", data, aux + n + 12, 16)  # every vna_next: the next 16 bytes
    entry = 16 if head.wide else 8
    raw_at = next(o for o in range(0, len(data) - entry, 8) if struct.unpack_from(head.order + ("qQ" if head.wide else "iI"), data, o) == (DT_VERNEEDNUM, dict(dyn.entries)[DT_VERNEEDNUM]))
    struct.pack_into(head.order + ("qQ" if head.wide else "iI"), data, raw_at, DT_VERNEEDNUM, 0xFFFFFFFF)
    counted = Counted(bytes(data))
    got = parse_elf_dynamic(counted)
    assert got is not None and got.soname == "libv.so" and len(got.version_needs) <= MAX_NEEDS
    assert counted.read_bytes < MAX_NEEDS * 4096 + 64 * 1024


# ------------------------------------------------------------------ dynamic symbols (parse_elf_symbols, parse_elf_defines)
class Counted(io.BytesIO):
    """A stream that counts the bytes read from it."""

    read_bytes = 0

    def read(self, size=-1):
        data = super().read(size)
        self.read_bytes += len(data)
        return data


def test_undefined_and_exported_symbols_of_real_libraries(tmp_path):
    from elf_builders import exporting, needing
    from cudaenv.parse.elf_symbols import parse_elf_defines, parse_elf_symbols

    dep = build_library(tmp_path, "libdep.so", soname="libdep.so", code=exporting(["_ZN3c103fooEv", "plain_c"]))
    ext = build_library(tmp_path, "ext.so", links=[dep], code=needing(["_ZN3c103fooEv", "plain_c", "puts"]))
    needs = parse_elf_symbols(ext.read_bytes())
    assert set(needs.names) == {"_ZN3c103fooEv", "plain_c", "puts"} and needs.complete  # weak __cxa_finalize left out
    assert "use_all" not in needs.names
    kept = parse_elf_symbols(ext.read_bytes(), keep=lambda n: n.startswith("_Z"))
    assert kept.names == ("_ZN3c103fooEv",)
    assert set(parse_elf_symbols(dep.read_bytes(), defined=True).names) >= {"_ZN3c103fooEv", "plain_c"}
    assert parse_elf_defines(dep.read_bytes(), ["_ZN3c103fooEv", "plain_c", "missing", "puts"]) == {
        "_ZN3c103fooEv": True, "plain_c": True, "missing": False, "puts": False}  # puts: undefined there
    assert parse_elf_symbols(b"not an elf") is None and parse_elf_defines(b"", ["x"]) is None


def test_a_lookup_in_a_big_export_table_reads_a_few_kilobytes(tmp_path):
    """2,000 exports: looking up three names goes through the hash table, not the whole symbol table."""
    from elf_builders import exporting
    from cudaenv.parse.elf_symbols import parse_elf_defines

    names = ["_ZN2at6native%dop%dEv" % (len("op%d" % i) + 0, i) for i in range(2000)]
    lib = build_library(tmp_path, "libbig.so", soname="libbig.so", code=exporting(names))
    stream = Counted(lib.read_bytes())
    assert parse_elf_defines(stream, [names[7], names[1999], "_ZN2at4noneEv"]) == {names[7]: True, names[1999]: True, "_ZN2at4noneEv": False}
    assert stream.read_bytes < 64 * 1024 < len(lib.read_bytes()), stream.read_bytes


def test_the_sysv_hash_table_where_there_is_no_gnu_one(tmp_path):
    """Linked with --hash-style=sysv (only .hash, as old toolchains and some distributions write): the same answers."""
    from elf_builders import exporting
    from cudaenv.parse.elf_symbols import parse_elf_defines

    names = ["_ZN3c10%dxEv" % i for i in range(300)]
    for style in ("sysv", "gnu", "both"):
        lib = build_library(tmp_path / style, "libh.so", soname="libh.so", code=exporting(names), flags=["-Wl,--hash-style=" + style])
        got = parse_elf_defines(lib.read_bytes(), [names[0], names[299], "_ZN3c10nopeEv", "puts"])
        assert got == {names[0]: True, names[299]: True, "_ZN3c10nopeEv": False, "puts": False}, style


def test_truncations_and_bit_flips_never_raise_in_the_symbol_readers(tmp_path):
    from elf_builders import exporting
    from cudaenv.parse.elf_symbols import parse_elf_defines, parse_elf_symbols

    data = build_library(tmp_path, "libs.so", soname="libs.so", code=exporting(["_ZN3c10%dxEv" % i for i in range(50)])).read_bytes()
    rng = random.Random(291)
    for cut in [rng.randrange(len(data)) for _ in range(40)]:
        got = parse_elf_symbols(data[:cut], defined=True)
        assert got is None or isinstance(got.names, tuple)
        assert parse_elf_defines(data[:cut], ["_ZN3c101xEv"]) in (None, {}, {"_ZN3c101xEv": True}, {"_ZN3c101xEv": False})
    for _ in range(120):
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 12)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        got = parse_elf_symbols(bytes(flipped), budget=1 << 20)
        assert got is None or all(isinstance(n, str) for n in got.names)
        answer = parse_elf_defines(bytes(flipped), ["_ZN3c101xEv", "y"], budget=1 << 20)
        assert answer is None or set(answer) <= {"_ZN3c101xEv", "y"}


@settings(max_examples=200)
@given(st.binary(max_size=4096), st.lists(st.text(max_size=40), max_size=5))
def test_random_bytes_never_raise_in_the_symbol_readers(tail, names):
    from cudaenv.parse.elf_symbols import parse_elf_defines, parse_elf_symbols

    got = parse_elf_symbols(b"\x7fELF" + tail, budget=64 * 1024)
    assert got is None or isinstance(got.names, tuple)
    answer = parse_elf_defines(b"\x7fELF" + tail, names, budget=64 * 1024)
    assert answer is None or set(answer) <= set(names)


# ------------------------------------------------------------------ the bulk symbol reading (issue 29's bench row)
TORCH_SPACES = ("c10", "at", "torch", "caffe2")


def _pyelftools_symbols(path, defined):
    """pyelftools' reading of the same .dynsym: the global undefined names, or the global and weak defined ones."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        out = []
        for sym in ELFFile(f).get_section_by_name(".dynsym").iter_symbols():
            undefined = sym["st_shndx"] == "SHN_UNDEF"
            bind = sym["st_info"]["bind"]
            if sym.name and undefined != defined and (bind == "STB_GLOBAL" or (defined and bind == "STB_WEAK")):
                out.append(sym.name)
        return tuple(dict.fromkeys(out))


def test_the_symbol_reader_agrees_with_pyelftools_and_select_with_keep(tmp_path):
    """Undefined and exported names as pyelftools reads them, on real libraries; ``select`` (torch's namespaces as a
    bytes pattern) keeps exactly what a ``keep`` calling in_namespaces keeps, in the same order."""
    __import__("pytest").importorskip("elftools")
    from elf_builders import exporting, needing
    from cudaenv.parse.symbols import in_namespaces, namespace_selector

    torch_names = ["_ZN3c10%dx%dEv" % (len("x%d" % i), i) for i in range(60)] + ["_ZN2at6native%dop%dEv" % (len("op%d" % i), i) for i in range(60)]
    c_names = ["plain_c_%d" % i for i in range(300)] + ["_ZN3c1023atomic_lookalikeEv", "_ZN2at", "_ZN9torchlike1fEv"]
    dep = build_library(tmp_path, "libdep.so", soname="libdep.so", code=exporting(torch_names + c_names))
    ext = build_library(tmp_path, "ext.so", links=[dep], code=needing(torch_names[::3] + c_names))
    select = namespace_selector(TORCH_SPACES)
    for path, defined in ((ext, False), (dep, True)):
        whole = parse_elf_symbols(path.read_bytes(), defined=defined)
        assert whole.names == _pyelftools_symbols(path, defined) and whole.complete
        by_keep = parse_elf_symbols(path.read_bytes(), defined=defined, keep=lambda n: in_namespaces(n, TORCH_SPACES))
        by_select = parse_elf_symbols(path.read_bytes(), defined=defined, select=select)
        assert by_select == by_keep and by_select.names == tuple(n for n in whole.names if in_namespaces(n, TORCH_SPACES))
    assert set(parse_elf_symbols(ext.read_bytes(), select=select).names) == set(torch_names[::3]) | {"_ZN3c1023atomic_lookalikeEv", "_ZN2at"}


def test_select_hands_only_the_selected_names_on(tmp_path):
    """Counted work: of an extension's 340 undefined names, the 40 in torch's namespaces are the only ones decoded and
    handed to ``keep``; the entry-by-entry reading (forced) gives the same answer and hands on all 340."""
    from elf_builders import exporting, needing
    from cudaenv.parse import elf_symbols as elf
    from cudaenv.parse.symbols import namespace_selector

    torch_names = ["_ZN5torch%dt%dEv" % (len("t%d" % i), i) for i in range(40)]
    c_names = ["plain_c_%d" % i for i in range(300)]
    dep = build_library(tmp_path, "libdep.so", soname="libdep.so", code=exporting(torch_names + c_names))
    ext = build_library(tmp_path, "ext.so", links=[dep], code=needing(torch_names + c_names)).read_bytes()
    seen = []

    def counting(name):
        seen.append(name)
        return True

    select = namespace_selector(TORCH_SPACES)
    fast = parse_elf_symbols(ext, keep=counting, select=select)
    assert sorted(fast.names) == sorted(torch_names) and len(seen) == 40 and fast.complete
    seen.clear()
    slow = parse_elf_symbols(ext, keep=counting)
    assert len(seen) == len(slow.names) == 340  # (and puts, __cxa_finalize: weak or libc's, left out or counted alike)
    real = elf._picked
    try:
        elf._picked = lambda *a: None  # the entry-by-entry reading
        assert parse_elf_symbols(ext, keep=counting, select=select) == fast
    finally:
        elf._picked = real


@settings(max_examples=300)
@given(st.booleans(), st.booleans(), st.booleans(),
       st.lists(st.tuples(st.integers(0, 90), st.integers(0, 255), st.sampled_from([0, 0, 1, 7, 0xFFF1])), max_size=40),
       st.lists(st.sampled_from([b"_ZN3c101fEv", b"_ZN2at1gEv", b"puts", b"", b"_ZN5torchX", b"\xff\xfe"]), max_size=12))
def test_the_bulk_pick_is_the_entry_by_entry_one(wide, little, defined, entries, strings):
    """_picked on constructed tables of both widths and byte orders: the same offsets, in order, as reading each entry
    (binding, section index, a name inside the string table), or None; names NUL-ended as the reader needs."""
    import struct

    from cudaenv.parse.elf_symbols import SHN_UNDEF, STB_GLOBAL, STB_WEAK, _picked
    from cudaenv.parse.symbols import namespace_selector

    text = b"\0" + b"".join(s + b"\0" for s in strings)
    order = "<" if little else ">"
    fmt = order + ("IBBHQQ" if wide else "IIIBBH")
    table = b"".join(struct.pack(fmt, *((n, info, 0, shndx, 0, 0) if wide else (n, 0, 0, info, 0, shndx))) for n, info, shndx in entries)
    select = namespace_selector(TORCH_SPACES)
    got = _picked(table, text, 24 if wide else 16, little, defined, select)
    want, whole = [], True
    for n, info, shndx in entries:
        if not n or (shndx == SHN_UNDEF) == defined or not ((info >> 4) == STB_GLOBAL or (defined and (info >> 4) == STB_WEAK)):
            continue
        if n >= len(text):
            whole = False
            continue
        if select.match(text, n):
            want.append(n)
    assert got is None or got == (want, whole)


def test_lookups_of_many_names_read_each_page_once(tmp_path):
    """Counted work: 600 names looked up in a library of 2,000 exports read each 4 KiB page at most once (about 3
    reads per name before), and give the same answers as one lookup at a time."""
    from elf_builders import exporting
    from cudaenv.parse.elf_symbols import PAGE, parse_elf_defines

    names = ["_ZN2at6native%dop%dEv" % (len("op%d" % i), i) for i in range(2000)]
    lib = build_library(tmp_path, "libbig.so", soname="libbig.so", code=exporting(names)).read_bytes()
    wanted = names[::4] + ["_ZN2at%dnope%dEv" % (len("nope%d" % i), i) for i in range(100)]

    class Reads(Counted):
        calls = 0

        def read(self, size=-1):
            self.calls += 1
            return super().read(size)

    stream = Reads(lib)
    answer = parse_elf_defines(stream, wanted)
    assert answer == {n: n in set(names) for n in wanted}
    assert stream.calls <= len(lib) // PAGE + 8, (stream.calls, len(wanted))
    assert {n: parse_elf_defines(lib, [n])[n] for n in wanted[::50]} == {n: answer[n] for n in wanted[::50]}


def _gnu_hash_by_byte(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


@settings(max_examples=400)
@given(st.binary(max_size=600))
def test_the_gnu_hash_in_closed_form_is_the_loaders(name):
    """Issue 35: the GNU hash summed in C over powers of 33 modulo 2 ** 32 is bfd's dl_new_hash byte by byte."""
    from cudaenv.parse import elf_symbols

    elf_symbols._GNU_HASHES.pop(name, None)
    assert elf_symbols._gnu_hash(name) == _gnu_hash_by_byte(name)


def test_the_gnu_hash_of_known_names_and_of_a_name_past_max_name():
    """Published values (https://flapenguin.me/elf-dt-gnu-hash: "" 0x1505, "printf" 0x156b2bb8, "exit" 0x7c967e3f,
    "syscall" 0xbac212a0), and a name longer than MAX_NAME hashed step by step; the powers kept stay bounded by
    MAX_NAME."""
    from cudaenv.parse import elf_symbols
    from cudaenv.parse.elf import MAX_NAME

    for name, h in ((b"", 0x1505), (b"printf", 0x156B2BB8), (b"exit", 0x7C967E3F), (b"syscall", 0xBAC212A0)):
        elf_symbols._GNU_HASHES.pop(name, None)
        assert elf_symbols._gnu_hash(name) == h, name
    long = b"_ZN2at" + b"x" * (MAX_NAME * 2)
    assert elf_symbols._gnu_hash(long) == _gnu_hash_by_byte(long)
    assert len(elf_symbols._POWERS) <= MAX_NAME + 1


@settings(max_examples=300)
@given(st.lists(st.sampled_from([b"_ZN3c101fEv", b"_ZN2at1gEv", b"puts", b"", b"_ZN5torchX", b"\xff\xfe", b"x_ZN2at1gEv",
                                 b"_ZNK3c104HalfEv", b"_ZN6caffe2"]), max_size=30),
       st.lists(st.integers(0, 400), max_size=40))
def test_the_names_at_offsets_and_the_bulk_select_are_the_one_by_one_reading(strings, offsets):
    """_names_at (the string table's names by their start, a shared tail read from its offset) and _at_name_start's
    findall over the names joined give what reading each offset to its NUL and matching ``select`` there give."""
    from cudaenv.parse.elf_symbols import _at_name_start, _names_at
    from cudaenv.parse.symbols import namespace_selector

    text = b"\0" + b"".join(s + b"\0" for s in strings)
    inside = [n for n in offsets if n < len(text)]
    one_by_one = [text[n:text.find(b"\0", n)] for n in inside]
    assert _names_at(text, inside) == one_by_one
    select = namespace_selector(TORCH_SPACES)
    assert _at_name_start(select).findall(b"\0" + b"\0".join(one_by_one)) == [n for n in one_by_one if select.match(n)]
