"""`cudaenv.core.fs`: the atomic writers give a file the mode cp would (a replaced file keeps its own, a new one gets
0666 & ~umask), the mode a caller asks for when it asks (private caches), and never leave a temporary file."""

import os
import stat

import pytest

from builders import umask
from cudaenv.core import fs as _fs


def mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def write_text(path, text, **kw):
    _fs.atomic_write_text(str(path), text, **kw)


def write_binary(path, text, **kw):
    with _fs.atomic_binary(str(path), **kw) as fh:
        fh.write(text.encode())


WRITERS = pytest.mark.parametrize("write", [write_text, write_binary], ids=["text", "binary"])


@WRITERS
@pytest.mark.parametrize("mask, expected, script", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750), (0o077, 0o600, 0o700),
                                                    (0o002, 0o664, 0o775)])
def test_a_new_file_gets_the_usual_mode(tmp_path, write, mask, expected, script):
    with umask(mask):
        write(tmp_path / "new", "x")
        assert _fs.usual_mode() == expected and _fs.usual_mode(executable=True) == script
    assert mode(tmp_path / "new") == expected and (tmp_path / "new").read_text() == "x"
    assert os.listdir(str(tmp_path)) == ["new"]


@WRITERS
@pytest.mark.parametrize("old", [0o600, 0o640, 0o755, 0o444])
def test_a_replaced_file_keeps_its_own_mode(tmp_path, write, old):
    path = tmp_path / "f"
    path.write_text("old")
    path.chmod(old)
    with umask(0o022):
        write(path, "new")
    assert mode(path) == old and path.read_text() == "new"


@WRITERS
def test_an_asked_mode_wins_either_way(tmp_path, write):
    path = tmp_path / "f"
    with umask(0o022):
        write(path, "a", mode=_fs.PRIVATE)
        assert mode(path) == 0o600
        path.chmod(0o644)
        write(path, "b", mode=_fs.PRIVATE)  # a cache made readable by hand goes back to private
        assert mode(path) == 0o600


def test_through_a_link_the_target_mode_is_kept(tmp_path):
    target = tmp_path / "target"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link"
    link.symlink_to(target)
    with umask(0o022):
        write_text(link, "new")
    # os.replace puts the new file where the link was; it gets the mode of the file the link led to
    assert mode(link) == 0o640 and not link.is_symlink() and target.read_text() == "old"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "f"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with _fs.atomic_binary(str(path)) as fh:
            fh.write(b"half")
            raise RuntimeError("stop")
    assert path.read_text() == "old" and os.listdir(str(tmp_path)) == ["f"]


def test_umask_is_read_without_changing_it():
    with umask(0o027):
        assert _fs.umask() == 0o027 and _fs.umask() == 0o027
        assert os.umask(0o027) == 0o027
