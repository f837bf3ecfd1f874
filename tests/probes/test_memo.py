"""The doctor's memo (probes/memo.py): what it read from a file, used again only while every file it came from keeps
its identity (device, inode, size, mtime and ctime in ns); never stored for a file changed in the last 2 seconds; the
memo file read as untrusted input (anything but a memo of this layout is an empty memo, never an error); written
atomically and private; off under --root and with CUDAENV_NO_CACHE=1. The cache folder: CUDAENV_CACHE_DIR, else XDG's
on Linux (differential against platformdirs)."""

import json
import os
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.core import config
from cudaenv.host import Host
from cudaenv.probes.memo import MAX_BYTES, MEMO_FILE, SCHEMA, SETTLED_NS, Memo, identity, open_memo, parse_memo

def later() -> int:
    """A "now" after every file a test has written so far has settled."""
    return time.time_ns() + 10 * SETTLED_NS


def _file(tmp_path, name="lib.so", data=b"\x7fELF one"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_a_value_comes_back_in_the_next_run_while_its_files_keep_their_identity(tmp_path):
    lib, torch = _file(tmp_path), _file(tmp_path, "libc10.so", b"torch")
    memo_path = str(tmp_path / "cache" / MEMO_FILE)
    first = Memo(memo_path, now_ns=later())
    assert first.get("x:" + lib, [identity(lib), identity(torch)]) is None  # nothing yet (no memo file: read as empty)
    assert first.put("x:" + lib, [identity(lib), identity(torch)], {"links_torch": True, "n": 3})
    assert first.save() and not first.save()  # written once; nothing new to write after
    assert oct(os.stat(memo_path).st_mode & 0o777) == "0o600"
    again = Memo(memo_path)
    assert again.get("x:" + lib, [identity(lib), identity(torch)]) == {"links_torch": True, "n": 3}
    # the extension rewritten (same size), torch replaced by another file: each alone is a miss
    os.utime(torch, ns=(1, 1))
    assert again.get("x:" + lib, [identity(lib), identity(torch)]) is None
    assert again.get("x:" + lib, [identity(lib)]) is None  # another set of files
    assert again.get("x:" + lib, [None, identity(torch)]) is None  # a file that is gone


def test_a_copy_with_its_times_kept_is_another_file(tmp_path):
    lib = _file(tmp_path)
    memo = Memo(str(tmp_path / MEMO_FILE), now_ns=later())
    assert memo.put("x", [identity(lib)], {"v": 1})
    before = os.stat(lib)
    os.unlink(lib)
    _file(tmp_path)  # the same bytes at the same path, its times set back as `cp -p` does: the ctime is new
    os.utime(lib, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert identity(lib)[3] == before.st_mtime_ns
    assert memo.get("x", [identity(lib)]) is None


def test_a_file_changed_in_the_last_two_seconds_is_not_stored(tmp_path):
    lib = _file(tmp_path)
    now = time.time_ns()
    memo = Memo(str(tmp_path / MEMO_FILE), now_ns=now)
    assert not memo.put("x", [identity(lib)], {"v": 1})  # written just now: a change in the same tick could hide
    assert not memo.save() and not os.path.exists(str(tmp_path / MEMO_FILE))
    assert not memo.put("y", [None], {"v": 1})
    settled = Memo(str(tmp_path / MEMO_FILE), now_ns=now + SETTLED_NS + max(identity(lib)[3], identity(lib)[4]) - now + 1)
    assert settled.put("x", [identity(lib)], {"v": 1})


def test_only_regular_files_have_an_identity(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert identity(str(fifo)) is None and identity(str(tmp_path)) is None and identity(str(tmp_path / "none")) is None
    assert identity(_file(tmp_path))[2] == len(b"\x7fELF one")


@pytest.mark.parametrize("content", [
    b"", b"not json", b"[]", b"{}", json.dumps({"schema": SCHEMA + 1, "entries": {}}).encode(),
    json.dumps({"schema": SCHEMA, "entries": []}).encode(), b"[" * 100_000, b"\xff\xfe",
    json.dumps({"schema": SCHEMA, "entries": {"x": {"files": [[1, 2, 3, 4, 5]], "value": {"v": 1}}}}).encode() + b" " * MAX_BYTES,
])
def test_anything_but_a_memo_of_this_layout_is_an_empty_memo(tmp_path, content):
    lib = _file(tmp_path)
    path = tmp_path / MEMO_FILE
    path.write_bytes(content)
    memo = Memo(str(path), now_ns=later())
    assert memo.get("x", [identity(lib)]) is None
    assert memo.put("x", [identity(lib)], {"v": 2}) and memo.save()  # and the next run's memo replaces it
    assert Memo(str(path)).get("x", [identity(lib)]) == {"v": 2}


def test_a_memo_that_is_a_fifo_or_a_link_to_a_device_is_not_read(tmp_path):
    lib = _file(tmp_path)
    os.mkfifo(tmp_path / MEMO_FILE)  # a read would block forever
    assert Memo(str(tmp_path / MEMO_FILE)).get("x", [identity(lib)]) is None
    os.symlink("/dev/zero", tmp_path / "zero.json")
    assert Memo(str(tmp_path / "zero.json")).get("x", [identity(lib)]) is None


def test_malformed_entries_are_dropped_one_by_one():
    good = {"files": [[1, 2, 3, 4, 5]], "value": {"v": 1}}
    entries = {"good": good, "short": {"files": [[1, 2, 3]], "value": {}}, "negative": {"files": [[1, 2, 3, 4, -5]], "value": {}},
               "bool": {"files": [[True, 2, 3, 4, 5]], "value": {}}, "float": {"files": [[1.0, 2, 3, 4, 5]], "value": {}},
               "none": {"files": [], "value": {}}, "value": {"files": [[1, 2, 3, 4, 5]], "value": [1]}, "list": [1]}
    got = parse_memo(json.dumps({"schema": SCHEMA, "entries": entries}).encode())
    assert got == {"good": (((1, 2, 3, 4, 5),), {"v": 1})}


@settings(max_examples=300)
@given(st.binary(max_size=4096))
def test_any_bytes_are_a_memo_or_none(data):
    got = parse_memo(data)
    assert isinstance(got, dict)
    assert all(isinstance(k, tuple) and isinstance(v, dict) for k, v in got.values())


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2, 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=6), inner, max_size=6), max_leaves=40)


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=10), st.fixed_dictionaries({"files": JSON, "value": JSON}) | JSON, max_size=8))
def test_any_json_entries_are_checked_at_every_level(entries):
    got = parse_memo(json.dumps({"schema": SCHEMA, "entries": entries}).encode())
    for name, (keys, value) in got.items():
        assert name in entries and isinstance(value, dict) and keys
        assert all(len(k) == 5 and all(type(n) is int and n >= 0 for n in k) for k in keys)


def test_a_memo_that_cannot_be_written_leaves_things_as_they_were(tmp_path):
    lib = _file(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    memo = Memo(str(blocker / MEMO_FILE), now_ns=later())
    assert memo.put("x", [identity(lib)], {"v": 1})
    assert memo.save() is False and blocker.read_text() == "x"


def test_the_memo_is_off_under_a_root_with_no_cache_and_where_no_folder_is_named(tmp_path):
    assert open_memo(Host(root=str(tmp_path), env={"CUDAENV_CACHE_DIR": str(tmp_path)})) is None
    assert open_memo(Host(env={"CUDAENV_CACHE_DIR": str(tmp_path), "CUDAENV_NO_CACHE": "1"})) is None
    assert open_memo(Host(env={})) is None  # no folder named: platformdirs is not asked
    assert open_memo(Host(env={"CUDAENV_CACHE_DIR": str(tmp_path)})).path == str(tmp_path / MEMO_FILE)
    assert open_memo(Host(env={"CUDAENV_NO_CACHE": "0", "CUDAENV_CACHE_DIR": str(tmp_path)})) is not None
    with pytest.raises(Exception, match="CUDAENV_NO_CACHE"):
        open_memo(Host(env={"CUDAENV_NO_CACHE": "yes", "CUDAENV_CACHE_DIR": str(tmp_path)}))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG is the Linux rule")
@pytest.mark.parametrize("xdg, home", [(None, "/home/u"), ("/x/cache", "/home/u"), ("", "/home/u"), ("/x/cache/", "/"),
                                       ("   ", "/home/u/")])
def test_the_cache_folder_is_platformdirs_on_linux(monkeypatch, xdg, home):
    import platformdirs

    monkeypatch.setenv("HOME", home)
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    monkeypatch.delenv("CUDAENV_CACHE_DIR", raising=False)
    assert os.path.normpath(config.cache_dir(dict(os.environ))) == os.path.normpath(platformdirs.user_cache_dir("cudaenv", appauthor=False))
    assert config.cache_dir(dict(os.environ), fallback=False) == config.cache_dir(dict(os.environ))


def test_the_cache_folder_named_or_none():
    assert config.cache_dir({"CUDAENV_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x"}) == "/c"
    if sys.platform.startswith("linux"):
        assert config.cache_dir({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == "/h/.cache/cudaenv"  # XDG: relative is ignored
        assert config.cache_dir({"HOME": "relative"}, fallback=False) == ""
    assert config.cache_dir({}, fallback=False) == ""


def test_the_memo_written_stays_readable_keeping_the_newest_entries(tmp_path):
    """Entries past MAX_BYTES are dropped oldest first when written: a bigger file would be read as no memo at all."""
    lib = _file(tmp_path)
    path = str(tmp_path / MEMO_FILE)
    memo = Memo(path, now_ns=later())
    for i in range(400):
        assert memo.put("x%03d" % i, [identity(lib)], {"pad": "y" * 4000})
    assert memo.save() and os.path.getsize(path) <= MAX_BYTES
    again = Memo(path)
    assert again.get("x399", [identity(lib)]) == {"pad": "y" * 4000} and again.get("x000", [identity(lib)]) is None
    kept = parse_memo(open(path, "rb").read())
    assert len(kept) > 100 and list(kept)[-1] == "x399"
