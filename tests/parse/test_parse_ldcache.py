"""/etc/ld.so.cache read as glibc writes it (parse/ldcache.py): caches built in the test by the machine's own
``ldconfig -C FILE -f CONF`` (the new format, and the compat layout with the old table in front), small caches
packed by hand (constructed from the layout in glibc's dl-cache.h: both byte orders, the invalid mark, a table that
runs past the end, strings with no end), and any bytes after the magic: never a crash, never past the bytes."""

import shutil
import struct
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elf_builders import build_library, ld_cache
from cudaenv.parse.ldcache import NEW_MAGIC, OLD_MAGIC, cache_paths, parse_ld_so_cache




ENTRIES = [(0x303, "libcudart.so.12", "/usr/local/cuda-12.4/lib64/libcudart.so.12", 0),
           (0x003, "libcudart.so.12", "/usr/lib/i386-linux-gnu/libcudart.so.12", 0),
           (0x303, "libnccl.so.2", "/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libnccl.so.2", 1 << 62),
           (0x303, "libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", 0)]


def test_constructed_caches_in_both_byte_orders_and_the_compat_layout():
    for data, layout in ((ld_cache(ENTRIES), "new"), (ld_cache(ENTRIES, ">", 3), "new"), (ld_cache(ENTRIES, old=3), "old+new")):
        got = parse_ld_so_cache(data)
        assert got.layout == layout and got.complete and len(got.entries) == 4
        assert got.entries[0].name == "libcudart.so.12" and got.entries[0].flags == 0x303
        paths = cache_paths(got, 0x303)
        assert paths == {"libcudart.so.12": "/usr/local/cuda-12.4/lib64/libcudart.so.12",
                         "libnccl.so.2": "/usr/lib/x86_64-linux-gnu/libnccl.so.2"}  # not the hwcaps one, not i386
        assert cache_paths(got, 0x003) == {"libcudart.so.12": "/usr/lib/i386-linux-gnu/libcudart.so.12"}


def test_what_is_not_a_usable_cache():
    assert parse_ld_so_cache(b"") is None and parse_ld_so_cache(b"hello") is None and parse_ld_so_cache("text") is None
    assert parse_ld_so_cache(OLD_MAGIC + b"\0" + struct.pack("<I", 0)) is None  # only the old format
    assert parse_ld_so_cache(ld_cache(ENTRIES, endian=1)) is None  # marked invalid by ldconfig
    assert parse_ld_so_cache(ld_cache(ENTRIES)[:40]) is None  # a header cut short
    cut = parse_ld_so_cache(ld_cache(ENTRIES, nlibs=1000))  # claims more entries than the file holds
    assert not cut.complete and len(cut.entries) <= 4
    broken = bytearray(ld_cache(ENTRIES))
    broken[-1:] = b"x"  # the last string has no end
    got = parse_ld_so_cache(bytes(broken))
    assert not got.complete and len(got.entries) == 3


@settings(max_examples=300)
@given(st.binary(max_size=2048), st.sampled_from([NEW_MAGIC, OLD_MAGIC + b"\0", b""]))
def test_any_bytes_never_raise(tail, magic):
    got = parse_ld_so_cache(magic + tail)
    assert got is None or all(isinstance(e.path, str) for e in got.entries)


NAME = st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(0, 0xFFFF), st.text(NAME, min_size=1, max_size=20), st.text(NAME, min_size=1, max_size=40),
                          st.integers(0, 2**64 - 1)), max_size=20))
def test_what_is_packed_is_read_back(entries):
    got = parse_ld_so_cache(ld_cache(entries))
    assert [(e.flags, e.name, e.path, e.hwcap) for e in got.entries] == entries


def _ldconfig():
    tool = shutil.which("ldconfig") or ("/sbin/ldconfig" if shutil.os.path.exists("/sbin/ldconfig") else None)
    if not tool:
        pytest.skip("no ldconfig on this machine")
    return tool


@pytest.mark.parametrize("layout", ["new", "compat"])
def test_caches_built_by_this_machines_ldconfig(tmp_path, layout):
    """The real writer: a folder of libraries built here, named in a configuration file, cached by ldconfig."""
    tool = _ldconfig()
    lib = tmp_path / "opt" / "cuda" / "lib64"
    build_library(lib, "libcudart.so.12.4.127", soname="libcudart.so.12")
    build_library(lib, "libnccl.so.2.21.5", soname="libnccl.so.2")
    conf = tmp_path / "ld.so.conf"
    conf.write_text("%s\n" % lib)
    cache = tmp_path / "ld.so.cache"
    done = subprocess.run([tool, "-C", str(cache), "-f", str(conf), "-c", layout], capture_output=True, timeout=120)
    if done.returncode != 0 or not cache.exists():
        pytest.skip("ldconfig could not write a cache here: %r" % done.stderr[-200:])
    got = parse_ld_so_cache(cache.read_bytes())
    assert got.layout == ("new" if layout == "new" else "old+new") and got.complete
    mine = {e.name: e.path for e in got.entries if e.path.startswith(str(lib))}
    assert mine == {"libcudart.so.12": str(lib / "libcudart.so.12"), "libnccl.so.2": str(lib / "libnccl.so.2")}
    listed = subprocess.run([tool, "-p", "-C", str(cache)], capture_output=True, text=True, timeout=60).stdout
    assert len(got.entries) == int(listed.split(" libs found", 1)[0])  # ldconfig -p's own count
