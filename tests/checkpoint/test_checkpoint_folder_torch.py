"""`cudaenv checkpoint inspect FOLDER` of checkpoint folders the real writers make (issue 32; `nox -s torch`): a DCP
folder saved by torch 2.13 on CPU with gloo and a world size of 2 (DTensors sharded over both ranks, plus values DCP
stores as bytes), sharded safetensors written by the safetensors library with an index, `.bin` shards from
torch.save with an index. Never a tensor byte read (counted), never a pickle run."""

import json
import os
import sys

import pytest

torch = pytest.importorskip("torch")

from cudaenv.checkpoint.folder import folder_exit_code, inspect_folder  # noqa: E402
from cudaenv.checkpoint.report import VisibleGpus  # noqa: E402

pytestmark = pytest.mark.torch

MiB = 1024 * 1024

@pytest.fixture(scope="module")
def dcp_folder(tmp_path_factory):
    from checkpoint_builders import gloo_dcp_save

    return gloo_dcp_save(tmp_path_factory.mktemp("dcp") / "ckpt")


def test_a_dcp_folder_from_two_gloo_ranks(dcp_folder, bytes_read, cli):
    names = sorted(os.listdir(dcp_folder))
    assert names == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    r = inspect_folder(str(dcp_folder))
    assert r.layout == "dcp" and r.world_size == 2 and r.shard_count == 2
    assert r.tensors == 3 and r.total_bytes == 512 * 512 * 4 + 512 * 4 + 256 * 512 * 2
    assert {d.dtype: d.count for d in r.dtypes} == {"float32": 2, "bfloat16": 1}
    assert [(p.container, p.prefix, p.keys, p.of) for p in r.prefixes] == [("model", "module.", 3, 3)]
    files = {f.name: f for f in r.files}
    assert files[".metadata"].verdict == "safe" and files[".metadata"].weights_only is None
    for name, rank in (("__0_0.distcp", 0), ("__1_0.distcp", 1)):
        f = files[name]
        assert f.rank == rank and f.tensors == 3 and f.verdict == "safe" and f.weights_only is True
        assert f.pickles >= 3 and f.size == os.path.getsize(dcp_folder / name)
    assert r.verdict == "safe" and r.weights_only is True and not r.missing and not r.unlisted and not r.inconsistencies
    assert folder_exit_code(r) == 0
    assert any("model.step" in n and "weights_only=False" in n for n in r.notes)
    on_disk = sum(os.path.getsize(dcp_folder / n) for n in names)
    assert on_disk > 1 * MiB and bytes_read[0] < 64 * 1024  # directories and data.pkl, never the tensor bytes
    # what torch itself makes of it: the same keys
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    dcp_to_torch_save(str(dcp_folder), str(dcp_folder.parent / "whole.pt"))
    whole = torch.load(dcp_folder.parent / "whole.pt", weights_only=False)
    assert sorted(whole["model"]) == ["extra", "module.emb.weight", "module.fc.bias", "module.fc.weight", "step"]
    res = cli("checkpoint", "inspect", str(dcp_folder))
    flat = " ".join(res.out.split())
    assert res.code == 0, res.out
    assert "world size 2" in flat and "prefix: module. on all 3 keys of model" in flat and "dcp_to_torch_save" in flat


def test_a_missing_rank_file_is_named(dcp_folder, tmp_path):
    import shutil

    copy = tmp_path / "ckpt"
    shutil.copytree(dcp_folder, copy)
    (copy / "__1_0.distcp").unlink()
    r = inspect_folder(str(copy))
    assert r.missing == ("__1_0.distcp",) and folder_exit_code(r) == 1


class Pwn:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch %s" % self.marker,))


def test_a_dcp_item_that_runs_code_makes_the_folder_unsafe(tmp_path):
    import torch.distributed.checkpoint as dcp

    marker = tmp_path / "pwned"
    dcp.save({"w": torch.ones(4), "evil": Pwn(marker)}, checkpoint_id=str(tmp_path / "ckpt"), no_dist=True)
    r = inspect_folder(str(tmp_path / "ckpt"))
    assert r.verdict == "unsafe" and folder_exit_code(r) == 3 and not marker.exists()
    assert any("item evil" in v.where and "system" in v.why for v in r.verdict_reasons)
    assert {f.name: f.verdict for f in r.files}[".metadata"] == "safe"


def test_sharded_safetensors_from_the_library(tmp_path, bytes_read):
    try:
        import safetensors.torch as st
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail("CI: safetensors is not installed (nox -s torch installs it): %s" % exc)
        pytest.skip("safetensors is not installed")
    torch.manual_seed(0)
    sd = {"_orig_mod.module.l%d.weight" % i: torch.randn(256, 256) for i in range(4)}
    sd["_orig_mod.module.l0.bias"] = torch.zeros(256, dtype=torch.float16)
    keys = sorted(sd)
    shards = {"model-00001-of-00002.safetensors": keys[:3], "model-00002-of-00002.safetensors": keys[3:]}
    wmap = {}
    for name, ks in shards.items():
        st.save_file({k: sd[k] for k in ks}, str(tmp_path / name), metadata={"format": "pt"})
        wmap.update({k: name for k in ks})
    total = sum(t.nbytes for t in sd.values())
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": wmap}))
    r = inspect_folder(str(tmp_path / "model.safetensors.index.json"))
    assert r.layout == "safetensors-shards" and r.shard_count == 2 and r.tensors == 5 and r.total_bytes == total
    assert [(p.prefix, p.keys, p.of) for p in r.prefixes] == [("_orig_mod.module.", 5, 5)]
    assert not r.inconsistencies and not r.notes and folder_exit_code(r) == 0
    assert bytes_read[0] < 16 * 1024 < total


def test_bin_shards_from_torch_save(tmp_path, bytes_read):
    registry = torch.serialization._package_registry
    before = list(registry)
    torch.serialization.register_package(0, lambda s: "cuda:3" if s.device.type == "cpu" else None, lambda s, loc: None)
    try:
        sd = {"module.a.weight": torch.randn(256, 256), "module.a.bias": torch.randn(256), "module.b.weight": torch.randn(256, 256)}
        torch.save({k: sd[k] for k in list(sd)[:2]}, tmp_path / "pytorch_model-00001-of-00002.bin")
        torch.save({"module.b.weight": sd["module.b.weight"]}, tmp_path / "pytorch_model-00002-of-00002.bin")
    finally:
        registry[:] = before
    wmap = {"module.a.weight": "pytorch_model-00001-of-00002.bin", "module.a.bias": "pytorch_model-00001-of-00002.bin",
            "module.b.weight": "pytorch_model-00002-of-00002.bin"}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": wmap}))
    r = inspect_folder(str(tmp_path), VisibleGpus(1, ("cuda:0",)))
    assert r.layout == "bin-shards" and r.tensors == 3 and {(d.device, d.count) for d in r.devices} == {("cuda:3", 3)}
    assert r.verdict == "safe" and r.weights_only is True and folder_exit_code(r) == 1  # cuda:3: a device to map
    assert [(p.prefix, p.keys, p.of) for p in r.prefixes] == [("module.", 3, 3)]
    assert bytes_read[0] < 16 * 1024 < sum(t.nbytes for t in sd.values())  # per file: the last 4 KiB, data.pkl


# ------------------------------------------------------------------ checkpoint fix FOLDER -o OUT
def test_fix_consolidates_the_gloo_dcp_folder_with_torchs_own_converter(dcp_folder, tmp_path, cli):
    out = tmp_path / "one.pt"
    res = cli("checkpoint", "fix", str(dcp_folder), "-o", str(out), "--strip-prefix", "module.", "--python", sys.executable)
    assert res.code == 0, res.err
    flat = " ".join(res.out.split())
    assert "dcp_to_torch_save" in flat and "stripped module. from 3 keys" in flat and "world size 2" in flat
    got = torch.load(out, weights_only=True)
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    dcp_to_torch_save(str(dcp_folder), str(tmp_path / "ref.pt"))
    ref = torch.load(tmp_path / "ref.pt", weights_only=False)["model"]
    assert sorted(got["model"]) == sorted(k.replace("module.", "", 1) for k in ref)
    for k, v in ref.items():
        if isinstance(v, torch.Tensor):
            assert torch.equal(got["model"][k.replace("module.", "", 1)], v)


def test_fix_refuses_a_dcp_folder_whose_item_runs_code_unless_trusted(tmp_path, cli):
    import torch.distributed.checkpoint as dcp

    marker = tmp_path / "pwned"
    dcp.save({"w": torch.ones(4), "evil": Pwn(marker)}, checkpoint_id=str(tmp_path / "ckpt"), no_dist=True)
    res = cli("checkpoint", "fix", str(tmp_path / "ckpt"), "-o", str(tmp_path / "one.pt"), "--python", sys.executable)
    assert res.code == 2 and "not safe to load" in " ".join(res.err.split())
    assert not marker.exists() and not (tmp_path / "one.pt").exists()


def test_fix_merges_bin_shards_and_maps_their_devices(tmp_path, cli):
    registry = torch.serialization._package_registry
    before = list(registry)
    torch.serialization.register_package(0, lambda s: "cuda:3" if s.device.type == "cpu" else None, lambda s, loc: None)
    try:
        sd = {"module.a.weight": torch.randn(8, 8), "module.a.bias": torch.randn(8), "module.b.weight": torch.randn(8, 8)}
        torch.save({k: sd[k] for k in list(sd)[:2]}, tmp_path / "pytorch_model-00001-of-00002.bin")
        torch.save({"module.b.weight": sd["module.b.weight"]}, tmp_path / "pytorch_model-00002-of-00002.bin")
    finally:
        registry[:] = before
    wmap = {"module.a.weight": "pytorch_model-00001-of-00002.bin", "module.a.bias": "pytorch_model-00001-of-00002.bin",
            "module.b.weight": "pytorch_model-00002-of-00002.bin"}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": wmap}))
    out = tmp_path / "merged" / "model.pt"
    out.parent.mkdir()
    res = cli("checkpoint", "fix", str(tmp_path / "pytorch_model.bin.index.json"), "-o", str(out), "--map-location", "cpu",
              "--strip-prefix", "module.", "--python", sys.executable)
    assert res.code == 0, res.err
    got = torch.load(out, weights_only=True)  # loads here: every storage on cpu
    assert sorted(got) == ["a.bias", "a.weight", "b.weight"]
    assert all(torch.equal(got[k[len("module."):]], v) for k, v in sd.items())
    assert "saved on cpu ×3" in " ".join(res.out.split())


STAND_IN_ZERO_TO_FP32 = '''# a stand-in for DeepSpeed's zero_to_fp32.py (DeepSpeed is not in the torch session): the one function cudaenv calls,
# with DeepSpeed's signature; it records that it ran (fix runs the folder's own script only with --trust)
import os
import torch


def get_fp32_state_dict_from_zero_checkpoint(checkpoint_dir, tag=None):
    open(os.path.join(checkpoint_dir, "ran-" + str(tag)), "w").close()
    return {"module.fc.weight": torch.ones(2, 2), "module.fc.bias": torch.zeros(2)}
'''


def test_fix_runs_the_zero_folders_own_script_only_with_trust(tmp_path, cli):
    # the layout of a real DeepSpeed 0.19.8 save (tests/recorded/deepspeed-zero-layouts.txt, stage 2), with torch.save
    top = tmp_path / "ds"
    (top / "global_step1").mkdir(parents=True)
    (top / "latest").write_text("global_step1")
    (top / "zero_to_fp32.py").write_text(STAND_IN_ZERO_TO_FP32)
    torch.save({"module": {"fc.weight": torch.ones(2, 2)}, "buffer_names": [], "param_shapes": []},
               top / "global_step1" / "mp_rank_00_model_states.pt")
    for r in (0, 1):
        torch.save({"optimizer_state_dict": {"zero_stage": 2, "partition_count": 2,
                                             "single_partition_of_fp32_groups": [torch.ones(3)]}},
                   top / "global_step1" / ("zero_pp_rank_%d_mp_rank_00_optim_states.pt" % r))
    out = tmp_path / "fp32.pt"
    res = cli("checkpoint", "fix", str(top), "-o", str(out), "--python", sys.executable)
    assert res.code == 2 and not (top / "ran-global_step1").exists() and not out.exists()
    res = cli("checkpoint", "fix", str(top), "-o", str(out), "--trust", "--strip-prefix", "module.", "--python", sys.executable)
    assert res.code == 0, res.err
    assert (top / "ran-global_step1").exists()
    assert sorted(torch.load(out, weights_only=True)) == ["fc.bias", "fc.weight"]
    assert "zero_to_fp32.py" in res.out and "stripped module. from 2 keys" in " ".join(res.out.split())


def test_fix_writes_safetensors_from_dcp_and_from_tied_bin_shards(dcp_folder, tmp_path, cli):
    try:
        from safetensors import safe_open
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail("CI: safetensors is not installed (nox -s torch installs it): %s" % exc)
        pytest.skip("safetensors is not installed")
    out = tmp_path / "model.safetensors"
    res = cli("checkpoint", "fix", str(dcp_folder), "-o", str(out), "--extract", "model", "--strip-prefix", "module.",
              "--python", sys.executable)
    assert res.code == 0, res.err
    with safe_open(str(out), "pt") as f:
        assert sorted(f.keys()) == ["emb.weight", "fc.bias", "fc.weight"] and f.get_tensor("emb.weight").dtype == torch.bfloat16
    assert "2 values that are not tensors left out (safetensors stores only tensors): step, extra.note" in " ".join(res.out.split())
    # tied weights (one storage, two names) and a view of it: written once, the alias in the metadata; the view copied
    shards = tmp_path / "tied"
    shards.mkdir()
    emb = torch.randn(10, 4)
    torch.save({"emb.weight": emb, "head.weight": emb, "half": emb[:5]}, shards / "pytorch_model-00001-of-00001.bin")
    (shards / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {}, "weight_map": {
        k: "pytorch_model-00001-of-00001.bin" for k in ("emb.weight", "head.weight", "half")}}))
    out = tmp_path / "tied.safetensors"
    res = cli("checkpoint", "fix", str(shards), "-o", str(out), "--python", sys.executable)
    assert res.code == 0, res.err
    with safe_open(str(out), "pt") as f:
        assert sorted(f.keys()) == ["emb.weight", "half"]
        assert json.loads(f.metadata()["cudaenv.aliases"]) == {"head.weight": "emb.weight"}
        assert torch.equal(f.get_tensor("half"), emb[:5]) and torch.equal(f.get_tensor("emb.weight"), emb)


XOR_EXTENSION_SAVE = r"""
import io, sys
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint._extension import StreamTransformExtension
from torch.distributed.checkpoint.filesystem import FileSystemWriter


class Xor(StreamTransformExtension):  # an extension of the user's own: torch's reader has no such name registered
    @staticmethod
    def registry_name():
        return "cudaenv.test.xor"

    @staticmethod
    def from_descriptor(version):
        return Xor()

    def get_descriptor(self):
        return "cudaenv.test.xor/1"

    def transform_to(self, output):
        class W(io.RawIOBase):
            def writable(self):
                return True

            def write(self, b):
                output.write(bytes(x ^ 0x5A for x in bytes(b)))
                return len(b)
        return W()

    def transform_from(self, input):
        return io.BytesIO(bytes(x ^ 0x5A for x in input.read()))


dcp.save({"w": torch.ones(4, 4), "b": torch.zeros(4)}, storage_writer=FileSystemWriter(sys.argv[1], _extensions=[Xor()]),
         no_dist=True)
"""


def test_a_dcp_folder_saved_through_an_extension_torch_does_not_know_is_refused_before_anything_runs(tmp_path, cli):
    import subprocess

    script = tmp_path / "save.py"
    script.write_text(XOR_EXTENSION_SAVE)
    folder = tmp_path / "ckpt"
    proc = subprocess.run([sys.executable, str(script), str(folder)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = inspect_folder(str(folder))
    assert r.layout == "dcp" and r.transforms == ("cudaenv.test.xor/1",) and r.unreadable_transforms == ("cudaenv.test.xor/1",)
    assert r.verdict == "inconclusive" and folder_exit_code(r) == 4
    assert any("2 items are stored through the transform cudaenv.test.xor/1" in p for p in r.inconsistencies)
    # torch's own converter cannot read it either (what the refusal says)
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with pytest.raises(BaseException) as raised:  # (torch's CheckpointException is a BaseException)
        dcp_to_torch_save(str(folder), str(tmp_path / "ref.pt"))
    assert "Unknown extension name='cudaenv.test.xor'" in str(raised.value)
    out = tmp_path / "one.pt"
    res = cli("checkpoint", "fix", str(folder), "-o", str(out), "--trust", "--python", sys.executable)
    assert res.code == 2 and "which torch's DCP reader does not know" in " ".join(res.err.split()) and not out.exists()
