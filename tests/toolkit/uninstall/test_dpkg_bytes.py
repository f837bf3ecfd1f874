"""`cudaenv uninstall`'s dpkg database searched as bytes first (issue 35): the lists are read whole, and only those
that hold a path asked about are parsed; the answers are those of parsing every list line by line."""

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.parse.dpkg import parse_list, parse_list_bytes
from cudaenv.probes.dpkg import probe_dpkg_lists
from cudaenv.toolkit.uninstall.dpkg import DpkgDatabase, ListFiles, probe_dpkg

STATUS = "Package: %s\nStatus: install ok installed\nVersion: 1.0-1\n"


def database(fake_root, others=200):
    """A dpkg database of three CUDA 12.4 packages and ``others`` unrelated ones (a system's lists, smaller)."""
    cuda = {"cuda-nvcc-12-4": ["bin", "bin/nvcc"], "cuda-cudart-12-4": ["lib64", "lib64/libcudart.so.12"],
            "cuda-cudart-dev-12-4": ["include", "include/cuda.h"]}
    status = []
    for name, rels in cuda.items():
        paths = ["/.", "/usr", "/usr/local", "/usr/local/cuda-12.4"] + ["/usr/local/cuda-12.4/" + r for r in rels]
        fake_root.file("var/lib/dpkg/info/%s.list" % name, "\n".join(paths) + "\n")
        status.append(STATUS % name)
    for i in range(others):
        name = "lib%d" % i
        paths = ["/.", "/usr", "/usr/lib", "/usr/lib/%s" % name] + ["/usr/lib/%s/f%d.so" % (name, j) for j in range(20)]
        fake_root.file("var/lib/dpkg/info/%s:amd64.list" % name, "\n".join(paths) + "\n")
        status.append(STATUS % name)
    # /usr/local/cuda-12.4 in a name only: its bytes are there, its line is not (parsed, and not an owner)
    fake_root.file("var/lib/dpkg/info/lib0:i386.list", "/usr/share/doc/lib0/see-/usr/local/cuda-12.4-notes\n")
    fake_root.file("var/lib/dpkg/status", "\n".join(status))
    return sorted(cuda)


def test_uninstall_parses_only_the_lists_that_hold_the_folder(fake_root):
    """Counted work: of 204 lists, the three CUDA packages' and the one whose bytes name the folder are parsed."""
    owners = database(fake_root)
    host = fake_root.host()
    notes = []
    db = probe_dpkg(host, notes)
    assert isinstance(db.files, ListFiles) and len(db.files) == 203 and db.files.parsed == 0
    assert db.owners_under("/usr/local/cuda-12.4") == tuple(owners)
    assert db.files.parsed == 4
    assert db.owners_of("/usr/local/cuda-12.4/bin/nvcc") == ("cuda-nvcc-12-4",)
    assert db.files.parsed == 4
    assert db.owned_paths(["cuda-nvcc-12-4"]) == {"/usr", "/usr/local", "/usr/local/cuda-12.4", "/usr/local/cuda-12.4/bin",
                                                  "/usr/local/cuda-12.4/bin/nvcc"}
    assert notes == []


def test_the_byte_search_answers_what_parsing_every_list_answers(fake_root):
    database(fake_root, others=30)
    fake_root.link("var/lib/dpkg/info/linked.list", "/var/lib/dpkg/info/cuda-nvcc-12-4.list")  # followed inside the root
    fake_root.link("var/lib/dpkg/info/gone.list", "/nowhere.list")  # dangling: unreadable, as before
    fake_root.dir("var/lib/dpkg/info/folder.list")  # not a file: unreadable, as before
    host = fake_root.host()
    every, unreadable = probe_dpkg_lists(host, lambda name: True)
    db = probe_dpkg(host, [])
    assert sorted(unreadable) == ["folder.list", "gone.list"]
    assert dict(db.files.items()) == every  # the multiarch lib0 too: both of its lists, in the same order
    plain = DpkgDatabase(db.packages, every)
    for path in ("/usr/local/cuda-12.4", "/usr/local/cuda-12.4/bin/nvcc", "/usr/lib/lib3", "/usr/lib/lib3/f7.so", "/usr",
                 "/", "/usr/local/cuda-12", "/usr/share/doc/lib0/see-/usr/local/cuda-12.4-notes", "/nothing"):
        assert db.owners_under(path) == plain.owners_under(path), path
        assert db.owners_of(path) == plain.owners_of(path), path


@settings(max_examples=200)
@given(st.binary(max_size=400), st.integers(1, 64))
def test_a_list_read_as_bytes_is_the_list_read_line_by_line(data, max_line):
    """parse_list_bytes gives what parse_list gives of Host.iter_lines (lines cut at max_line bytes, surrogates kept,
    any line ends), the reader the lists had."""
    import tempfile

    from cudaenv.host import Host

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.list")
        with open(path, "wb") as fh:
            fh.write(data)
        streamed = parse_list(Host(env={}).iter_lines(path, max_line=max_line))
    assert parse_list_bytes(data, max_line) == streamed
