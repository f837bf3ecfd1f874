"""`cudaenv checkpoint fix` without torch: the rewritten pickle and zip (tests/checkpoint_builders.py checkpoints).
The torch tests (test_checkpoint_torch.py) load the results with the real torch. Also the mode of what it writes (as
cp would: a new OUT gets 0666 & ~umask, an overwritten OUT and an --in-place FILE keep theirs; it was 0600 for all),
and records whose zip directory sizes disagree, refused in words."""

import io
import os
import stat
import struct
import zipfile

import pytest

import checkpoint_builders as cb
from builders import umask
from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.analyze import inspect_file
from cudaenv.checkpoint.graph import pairs_of
from cudaenv.checkpoint.rewrite import strip_key, strip_metadata_key


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def devices(r):
    return {(d.device, d.via): d.count for d in r.devices}


def keys_of(path, member_suffix="data.pkl"):
    with zipfile.ZipFile(path) as zf:
        name = [n for n in zf.namelist() if n.endswith("/" + member_suffix)][0]
        root = pickle_vm.walk(zf.read(name)).root
    return root


def records(path):
    """data/<key> -> bytes, and every entry's data offset (from the local header)."""
    out, offsets = {}, {}
    with open(path, "rb") as fh, zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            fh.seek(info.header_offset)
            h = fh.read(30)
            n, e = struct.unpack_from("<HH", h, 26)
            offsets[info.filename] = info.header_offset + 30 + n + e
            if "/data/" in info.filename:
                out[info.filename.split("/data/")[1]] = zf.read(info.filename)
    return out, offsets


def test_map_location_and_strip_prefix(tmp_path, cli):
    src = write(tmp_path, "dp.pt", cb.torch_zip(cb.cnn("cuda:2", prefix="module."), prefix="dp"))
    out = str(tmp_path / "fixed.pt")
    res = cli("checkpoint", "fix", src, "-o", out, "--map-location", "cpu", "--strip-prefix", "module.")
    assert res.code == 0, res.err
    flat = " ".join(res.out.split())
    assert "6 storages cuda:2 -> cpu" in flat and "stripped module. from 6 keys and 4 _metadata keys" in flat
    r = inspect_file(out)
    assert devices(r) == {("cpu", "storage"): 6} and r.weights_only is True and not r.inconsistencies
    assert not [p for p in r.prefixes if p.prefix == "module."]
    root = keys_of(out)
    assert [k for k, _ in pairs_of(root)] == ["conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "fc.weight", "fc.bias"]
    meta = [k for k, _ in pairs_of(dict(pairs_of(root.states[0]))["_metadata"])]
    assert meta == ["", "", "conv1", "bn1", "fc"]  # 'module' became '' (the later one wins, as in torch)
    before, _ = records(src)
    after, offsets = records(out)
    assert before == after  # every storage record copied byte for byte
    assert all(off % 64 == 0 for name, off in offsets.items()), offsets
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert names[0] == "fixed/data.pkl" and "fixed/byteorder" in names and "fixed/version" in names
        assert zf.read("fixed/byteorder") == b"little" and zf.read("fixed/.storage_alignment") == b"64"
        assert zf.testzip() is None  # real CRCs


def test_zip64_inputs_are_copied_byte_for_byte(tmp_path, cli):
    src = write(tmp_path, "z64.pt", cb.torch_zip(cb.cnn("cuda:2"), prefix="z", zip64=True))
    out = str(tmp_path / "fixed-z64.pt")
    assert cli("checkpoint", "fix", src, "-o", out, "--map-location", "cpu").code == 0
    r = inspect_file(out)
    assert devices(r) == {("cpu", "storage"): 6} and r.weights_only is True and not r.inconsistencies
    stores = cb.storages_in(cb.cnn())  # keys 0..5, each record the builder's pattern bytes
    after, _ = records(out)
    assert sorted(after) == sorted(stores)
    assert all(after[k] == cb.pattern(k, stores[k].nbytes) for k in after)


def test_a_zip_with_bytes_in_front_is_mended(tmp_path, cli):
    """torch.load reads a file as a zip only when it starts with one: bytes in front make it fail, so inspect names
    them as an inconsistency; fix mends exactly that (the rewrite writes the archive from byte 0), and nothing else."""
    src = write(tmp_path, "pre.pt", b"junk before the archive\n" * 3 + cb.torch_zip(cb.cnn("cuda:2"), prefix="p"))
    before = inspect_file(src)
    assert before.weights_only is False and any("72 bytes before the zip archive" in p for p in before.inconsistencies)
    assert before.mended_by_fix == before.inconsistencies  # the one problem, and fix's rewrite mends it
    out = tmp_path / "fixed-pre.pt"
    res = cli("checkpoint", "fix", src, "-o", str(out), "--map-location", "cpu")
    assert res.code == 0, res.err
    assert "starts at byte 0" in " ".join(res.out.split())
    assert out.read_bytes()[:4] == b"PK\x03\x04"
    r = inspect_file(str(out))
    assert r.weights_only is True and not r.inconsistencies and devices(r) == {("cpu", "storage"): 6}


def test_bytes_before_a_zip_with_another_problem_are_not_mended(tmp_path, cli):
    """A zip that is wrong in another way too (here a global outside the allowlist) is refused as before."""
    evil = cb.torch_zip({"x": cb.Reduce(cb.glob("os", "system"), ("true",))}, prefix="p")
    src = write(tmp_path, "pre-evil.pt", b"junk" + evil)
    assert len(inspect_file(src).mended_by_fix) == 1  # mended, but not enough: the global stays
    res = cli("checkpoint", "fix", src, "-o", str(tmp_path / "out.pt"), "--map-location", "cpu")
    assert res.code == 2 and "os.system" in " ".join(res.err.split())
    assert not (tmp_path / "out.pt").exists()


def test_only_keys_with_the_prefix_change(tmp_path, cli):
    sd = cb.state_dict([("module.a", cb.Tensor(cb.Storage("0", 1), (1,))), ("b", cb.Tensor(cb.Storage("1", 1), (1,))),
                        ("_orig_mod.module.c", cb.Tensor(cb.Storage("2", 1), (1,)))])
    src = write(tmp_path, "m.pt", cb.torch_zip(sd))
    out = str(tmp_path / "o.pt")
    assert cli("checkpoint", "fix", src, "-o", out, "--strip-prefix", "_orig_mod.", "--strip-prefix", "module.").code == 0
    assert [k for k, _ in pairs_of(keys_of(out))] == ["a", "b", "c"]
    assert strip_key("modules.x", ["module."]) == "modules.x"
    assert strip_metadata_key("module", ["module."]) == "" and strip_metadata_key("module.fc", ["module."]) == "fc"


def test_extract_and_add_prefix(tmp_path, cli):
    opt = {"state": {0: {"exp_avg": cb.Tensor(cb.Storage("20", 216), (8, 3, 3, 3))}}, "param_groups": []}
    src = write(tmp_path, "t.pt", cb.torch_zip({"state_dict": cb.cnn("cuda:1"), "optimizer": opt, "epoch": 3}))
    out = str(tmp_path / "sd.pt")
    res = cli("checkpoint", "fix", src, "-o", out, "--extract", "state_dict", "--add-prefix", "module.")
    assert res.code == 0, res.err
    r = inspect_file(out)
    assert r.kind == "state_dict" and r.tensors == 6 and r.storages == 6
    assert [(p.prefix, p.keys, p.where) for p in r.prefixes] == [("module.", 6, "keys"), ("module.", 4, "_metadata")]
    assert devices(r) == {("cuda:1", "storage"): 6}  # no --map-location: locations kept
    assert "20" not in records(out)[0]  # the optimizer's storage is left out
    res = cli("checkpoint", "fix", src, "-o", out, "--extract", "nope")
    assert res.code == 2 and "state_dict" in res.err


def test_add_prefix_skips_optimizer_state(tmp_path, cli):
    opt = {"state": {0: {"exp_avg": cb.Tensor(cb.Storage("20", 4), (4,))}}, "param_groups": []}
    src = write(tmp_path, "t.pt", cb.torch_zip({"model": cb.cnn(), "optimizer": opt}))
    out = str(tmp_path / "o.pt")
    assert cli("checkpoint", "fix", src, "-o", out, "--add-prefix", "module.").code == 0
    keys = {t.key for t in inspect_file(out).tensor_list}
    assert "model.module.conv1.weight" in keys and "optimizer.state.0.exp_avg" in keys


def test_legacy_becomes_a_torch_zip(tmp_path, cli):
    src = write(tmp_path, "leg.pt", cb.legacy_file(cb.cnn("cuda:2")))
    out = str(tmp_path / "z.pt")
    res = cli("checkpoint", "fix", src, "-o", out, "--map-location", "cpu")
    assert res.code == 0, res.err
    r = inspect_file(out)
    assert r.format == "torch-zip" and devices(r) == {("cpu", "storage"): 6} and not r.inconsistencies
    after, _ = records(out)
    assert after["0"] == cb.pattern("0", 216 * 4)


def test_big_endian_record_is_kept(tmp_path, cli):
    src = write(tmp_path, "be.pt", cb.torch_zip(cb.cnn("cuda:0"), byteorder="big"))
    out = str(tmp_path / "o.pt")
    assert cli("checkpoint", "fix", src, "-o", out, "--map-location", "cpu").code == 0
    with zipfile.ZipFile(out) as zf:
        assert zf.read("o/byteorder") == b"big"


def test_auto_is_cpu_without_a_gpu(tmp_path, cli):
    src = write(tmp_path, "a.pt", cb.torch_zip(cb.cnn("cuda:3")))
    out = str(tmp_path / "o.pt")
    assert cli("checkpoint", "fix", src, "-o", out, "--map-location", "auto").code == 0
    assert devices(inspect_file(out)) == {("cpu", "storage"): 6}


def test_malicious_file_is_refused_and_never_runs(tmp_path, cli):
    marker = tmp_path / "PWNED"
    cmd = ("touch %s" % marker).encode()
    pkl = b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"\x85R."
    src = write(tmp_path, "evil.pt", cb.torch_zip(None, prefix="evil", data_pkl=pkl))
    out = tmp_path / "o.pt"
    res = cli("checkpoint", "fix", src, "-o", str(out), "--map-location", "cpu")
    assert res.code == 2 and "--trust" in res.err and "os.system" in res.err
    assert not out.exists() and not marker.exists()


def test_never_overwrites_the_input_and_in_place_keeps_a_backup(tmp_path, cli):
    data = cb.torch_zip(cb.cnn("cuda:2"))
    src = write(tmp_path, "a.pt", data)
    res = cli("checkpoint", "fix", src, "-o", src, "--map-location", "cpu")
    assert res.code == 2 and open(src, "rb").read() == data
    assert cli("checkpoint", "fix", src, "--map-location", "cpu").code == 2
    res = cli("checkpoint", "fix", src, "--in-place", "--map-location", "cpu")
    assert res.code == 0, res.err
    assert open(src + ".bak", "rb").read() == data
    assert devices(inspect_file(src)) == {("cpu", "storage"): 6}
    assert [p.name for p in tmp_path.iterdir() if "cudaenv-tmp" in p.name] == []


def test_protocol4_file_is_not_rewritten_without_trust(tmp_path, cli):
    src = write(tmp_path, "p4.pt", cb.torch_zip(cb.cnn(), protocol=4))
    res = cli("checkpoint", "fix", src, "-o", str(tmp_path / "o.pt"), "--map-location", "cpu")
    assert res.code == 2 and "FRAME" in res.err


def test_nothing_to_change_is_a_usage_error(tmp_path, cli):
    src = write(tmp_path, "a.pt", cb.torch_zip(cb.cnn()))
    assert cli("checkpoint", "fix", src, "-o", str(tmp_path / "o.pt")).code == 2
    assert cli("checkpoint", "fix", src, "-o", str(tmp_path / "o.pt"), "--map-location", "gpu7").code == 2


def test_a_wrong_record_size_blocks_and_is_not_mended(tmp_path, cli):
    """A record shorter than its storage says makes torch.load fail (a blocking inconsistency, by its kind, not its
    words); the rewrite would copy it as it is, so fix refuses."""
    src = write(tmp_path, "short.pt", cb.torch_zip(cb.cnn(), record_sizes={"0": 4}))
    r = inspect_file(src)
    assert r.weights_only is False and r.mended_by_fix == ()
    assert [p for p in r.inconsistencies if p.startswith("record data/0 is 4 bytes")] == [p for p in r.weights_only_reasons
                                                                                          if p.startswith("record data/0")]
    res = cli("checkpoint", "fix", src, "-o", str(tmp_path / "out.pt"), "--map-location", "cpu")
    assert res.code == 2 and not (tmp_path / "out.pt").exists()


# ------------------------------------------------------------------ the mode of what fix writes
def mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


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
    err = " ".join(res.err.split())  # the error wraps to the terminal (a long path stands on a line of its own)
    if field == 24:  # the size inspect checks: already an inconsistency, so fix refuses before any rewrite
        assert res.code == 2 and "not safe to rewrite" in err
    else:
        # (or, where torch's own zip reader refuses the archive, inspect says so first)
        assert res.code == 2 and ("storage record data/0: the zip directory says" in err
                                  or "torch's zip reader (miniz) refuses the archive" in err), res.err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a.pt"]


def test_a_one_file_folder_is_said_as_one_file():
    """The fix report's "before" line of a consolidated folder counts its files with the plural rule: "1 file", never
    "1 files"."""
    from cudaenv.checkpoint.report import FixReport, FolderReport, ShardFile
    from cudaenv.render.checkpoint import render_fix

    def said(n):
        files = tuple(ShardFile(name="model-%05d-of-%05d.safetensors" % (i + 1, n), role="shard", size=8) for i in range(n))
        folder = FolderReport(path="ckpt", layout="safetensors-shards", files=files, tensors=3, total_bytes=24)
        return render_fix(FixReport(source="ckpt", output="out.safetensors", method="merge", folder=folder))

    assert "safetensors-shards, 1 file, 3 tensors" in said(1)
    assert "safetensors-shards, 2 files, 3 tensors" in said(2)
