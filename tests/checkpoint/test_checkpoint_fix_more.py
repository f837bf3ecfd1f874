"""`cudaenv checkpoint fix`, more: the mode of what it writes (as cp would: a new OUT gets 0666 & ~umask, an
overwritten OUT and an --in-place FILE keep theirs; it was 0600 for all), on hand-built checkpoints, no torch."""

import io
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


def _patch_central(data, member_suffix, field_offset, value):
    """``data`` with one 4-byte field of the central-directory record of the member ending in ``member_suffix``
    set to ``value`` (20: compressed size, 24: uncompressed size)."""
    import struct
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        name = [i.filename for i in zf.infolist() if i.filename.endswith(member_suffix)][0]
    at = struct.unpack_from("<I", data, data.rindex(b"PK\x05\x06") + 16)[0]  # the central directory's offset
    while True:
        n, e, c = struct.unpack_from("<HHH", data, at + 28)
        if data[at + 46:at + 46 + n].decode() == name:
            break
        at = data.index(b"PK\x01\x02", at + 46 + n + e + c)
    out = bytearray(data)
    struct.pack_into("<I", out, at + field_offset, value)
    return bytes(out)


@pytest.mark.parametrize("field, value", [(20, 10 ** 6), (20, 8), (24, 8)])
def test_a_record_whose_directory_sizes_disagree_is_refused_in_words(tmp_path, cli, field, value):
    """Found by the mutation test on real torch files: a compressed size larger than the file made fix end in an
    OSError out of the copy (no words: the CLI raised it); a smaller one was copied cut, and only the check of the
    written file caught it. Now fix refuses before it copies, in words."""
    data = _patch_central(cb.torch_zip(cb.cnn("cuda:2")), "/data/0", field, value)
    src = tmp_path / "a.pt"
    src.write_bytes(data)
    out = tmp_path / "o.pt"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu")
    if field == 24:  # the size inspect checks: already an inconsistency, so fix refuses before any rewrite
        assert res.code == 2 and "not safe to rewrite" in res.err
    else:
        # (or, where torch's own zip reader refuses the archive, inspect says so first)
        assert res.code == 2 and ("storage record data/0: the zip directory says" in res.err
                                  or "torch's zip reader (miniz) refuses the archive" in res.err), res.err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a.pt"]
