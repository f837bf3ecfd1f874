"""cudaenv.host.tree: the readers' one folder walk through the Host (inspected-system names, links not followed)."""

import os

from cudaenv.host.tree import count_files, walk


def test_walk_names_folders_as_the_inspected_system_and_never_follows_links(fake_root):
    fake_root.file("opt/tk/bin/nvcc", "x")
    fake_root.file("opt/tk/lib64/libcudart.so.12", "x")
    fake_root.file("elsewhere/secret/a", "x")
    fake_root.link("opt/tk/out", "/elsewhere/secret")  # absolute: inside the root it is the image's /elsewhere
    host = fake_root.host()
    got = {folder: (sorted(dirs), sorted(files)) for folder, dirs, files in walk(host, "/opt/tk")}
    # the link is an entry, never entered (and not classified by what this machine has at /elsewhere)
    assert got == {"/opt/tk": (["bin", "lib64"], ["out"]), "/opt/tk/bin": ([], ["nvcc"]),
                   "/opt/tk/lib64": ([], ["libcudart.so.12"])}
    assert count_files(host, "/opt/tk") == 3
    fake_root.link("opt/cuda", "tk")  # the walked folder itself may be a link: followed inside the root
    assert [f for _d, _s, files in walk(host, "/opt/cuda/") for f in files] == ["out", "nvcc", "libcudart.so.12"]
    assert next(walk(host, "/opt/cuda"))[0] == "/opt/cuda"
    assert count_files(host, "/opt/none") == 0 and list(walk(host, "/opt/none")) == []


def test_walk_stops_at_its_limit(fake_root):
    for i in range(30):
        fake_root.file("big/d%02d/f" % i, "x")
    host = fake_root.host()
    for limit in (0, 1, 5, 29, 30, 31, 59, 60, 61, 100):
        entries = [(folder, name) for folder, dirs, files in walk(host, "/big", limit) for name in dirs + files]
        assert len(entries) == min(limit, 60), limit
        assert all(folder.startswith("/big") for folder, _ in entries)


def test_an_unreadable_folder_is_reported_not_raised(fake_root):
    fake_root.file("tk/ok/a", "x")
    locked = fake_root.file("tk/locked/b", "x").parent
    os.chmod(locked, 0)
    try:
        host = fake_root.host()
        unreadable = []
        files = [f for _folder, _dirs, fs in walk(host, "/tk", unreadable=unreadable) for f in fs]
        if os.geteuid() != 0:  # root reads a mode-0 folder anyway
            assert files == ["a"] and unreadable == ["/tk/locked"]
        assert count_files(host, "/tk") == len(files)
    finally:
        os.chmod(locked, 0o755)
