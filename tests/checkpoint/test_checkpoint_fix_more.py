"""`cudaenv checkpoint fix`, more: the mode of what it writes (as cp would: a new OUT gets 0666 & ~umask, an
overwritten OUT and an --in-place FILE keep theirs; it was 0600 for all), on hand-built checkpoints, no torch."""

import os
import stat

import pytest

import checkpoint_builders as cb
from builders import umask
from cudaenv.checkpoint.analyze import inspect_file


def mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def devices(r):
    return {(d.device, d.via): d.count for d in r.devices}


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
@pytest.mark.parametrize("source", ["zip", "legacy"])
def test_a_new_out_gets_the_usual_mode(tmp_path, cli, mask, expected, source):
    src = tmp_path / "a.pt"
    src.write_bytes(cb.torch_zip(cb.cnn("cuda:2")) if source == "zip" else cb.legacy_file(cb.cnn("cuda:2")))
    src.chmod(0o600)  # the input's mode is not the new file's
    out = tmp_path / "fixed.pt"
    with umask(mask):
        res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu")
    assert res.code == 0, res.err
    assert mode(out) == expected and devices(inspect_file(str(out))) == {("cpu", "storage"): 6}


def test_an_overwritten_out_keeps_its_mode(tmp_path, cli):
    src = tmp_path / "a.pt"
    src.write_bytes(cb.torch_zip(cb.cnn("cuda:2")))
    out = tmp_path / "fixed.pt"
    out.write_bytes(b"an older result")
    out.chmod(0o640)
    with umask(0o022):
        res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu")
    assert res.code == 0, res.err
    assert mode(out) == 0o640 and inspect_file(str(out)).weights_only is True


@pytest.mark.parametrize("old", [0o644, 0o640, 0o664])
def test_in_place_keeps_the_mode_of_the_file_and_its_backup(tmp_path, cli, old):
    data = cb.torch_zip(cb.cnn("cuda:2", prefix="module."))
    src = tmp_path / "a.pt"
    src.write_bytes(data)
    src.chmod(old)
    with umask(0o077):  # a umask that would make a new file private: the rewrite is not a new file
        res = cli("checkpoint", "fix", str(src), "--in-place", "--map-location", "cpu", "--strip-prefix", "module.")
    assert res.code == 0, res.err
    backup = tmp_path / "a.pt.bak"
    assert mode(src) == old and mode(backup) == old and backup.read_bytes() == data
    assert devices(inspect_file(str(src))) == {("cpu", "storage"): 6}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt", "a.pt.bak"]


def test_a_refused_fix_leaves_the_existing_out_alone(tmp_path, cli):
    src = tmp_path / "p4.pt"
    src.write_bytes(cb.torch_zip(cb.cnn(), protocol=4))
    out = tmp_path / "o.pt"
    out.write_bytes(b"keep")
    out.chmod(0o640)
    assert cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu").code == 2
    assert out.read_bytes() == b"keep" and mode(out) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.pt", "p4.pt"]
