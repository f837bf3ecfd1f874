"""`cudaenv checkpoint fix --to pt|safetensors` with the real torch 2.13 and safetensors 0.8 (issue 32; `nox -s
torch`): one torch.save file written as safetensors (tied weights once, views copied, as the folder path does), a
safetensors file and safetensors shards written as one torch.save file (through torch in the interpreter given with
--python), each result checked key by key; a --to that OUT's name contradicts is refused before anything is read."""

import json
import os
import sys

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def safetensors_lib():
    try:
        import safetensors.torch  # noqa: F401
        from safetensors import safe_open
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail("CI: safetensors is not installed (nox -s torch installs it): %s" % exc)
        pytest.skip("safetensors is not installed")
    return safe_open


def _model_state():
    torch.manual_seed(0)
    emb = torch.randn(10, 4)
    return {"module.emb.weight": emb, "module.head.weight": emb, "module.fc.weight": torch.randn(3, 4),
            "module.fc.bias": torch.randn(3), "module.half": emb[:5]}


def test_a_pt_file_to_safetensors_ties_views_and_keys_checked(tmp_path, cli, safetensors_lib):
    sd = _model_state()
    src = tmp_path / "model.pt"
    torch.save({"model": sd, "epoch": 3}, src)
    out = tmp_path / "model.out"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--to", "safetensors", "--extract", "model",
              "--strip-prefix", "module.", "--python", sys.executable)
    assert res.code == 0, res.err
    with safetensors_lib(str(out), "pt") as f:
        assert sorted(f.keys()) == ["emb.weight", "fc.bias", "fc.weight", "half"]  # head.weight is emb.weight
        assert json.loads(f.metadata()["cudaenv.aliases"]) == {"head.weight": "emb.weight"}
        for k in f.keys():
            assert torch.equal(f.get_tensor(k), sd["module." + k])
    flat = " ".join(res.out.split())
    assert "1 tied tensors written once" in flat and "1 views of shared memory copied" in flat
    assert "--trust" not in res.err + res.out  # a safe file: loaded with weights_only=True, nothing of it run
    assert "(converted by torch in your Python, nothing of the file run)" in flat
    # and back: the safetensors file to one torch.save file, the tied name one storage again
    back = tmp_path / "back.pt"
    res = cli("checkpoint", "fix", str(out), "-o", str(back), "--to", "pt", "--add-prefix", "model.", "--python", sys.executable)
    assert res.code == 0, res.err
    got = torch.load(back, weights_only=True)
    assert sorted(got) == sorted("model." + k[len("module."):] for k in sd)
    assert got["model.head.weight"].untyped_storage().data_ptr() == got["model.emb.weight"].untyped_storage().data_ptr()
    assert all(torch.equal(got["model." + k[len("module."):]], v) for k, v in sd.items())


def test_the_suffix_still_chooses_and_a_contradicting_to_is_refused_before_anything_is_read(tmp_path, cli, safetensors_lib):
    src = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2, 2)}, src)
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "w.safetensors"), "--python", sys.executable)
    assert res.code == 0, res.err
    with safetensors_lib(str(tmp_path / "w.safetensors"), "pt") as f:
        assert list(f.keys()) == ["w"]
    for to, name in (("pt", "x.safetensors"), ("safetensors", "x.pt"), ("safetensors", "x.pth")):
        res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / name), "--to", to, "--python", "/nonexistent/python")
        assert res.code == 2 and "--to %s, but" % to in " ".join(res.err.split()), res.err
        assert not (tmp_path / name).exists()
    res = cli("checkpoint", "fix", str(src), "--in-place", "--to", "safetensors")
    assert res.code == 2 and "named as a torch.save file" in " ".join(res.err.split())
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "same.pt"), "--to", "pt")
    assert res.code == 2 and "nothing to change" in res.err


def test_a_pt_file_that_runs_code_is_converted_only_with_trust(tmp_path, cli, safetensors_lib):
    import collections

    src = tmp_path / "odd.pt"
    torch.save({"w": torch.ones(3), "cfg": collections.Counter(a=1)}, src)  # Counter: outside weights_only's allowlist
    out = tmp_path / "odd.safetensors"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--python", sys.executable)
    assert res.code == 2 and "not safe to load" in " ".join(res.err.split()) and not out.exists()
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--trust", "--python", sys.executable)
    assert res.code == 0, res.err
    assert "the file is not safe" in " ".join(res.err.split())
    with safetensors_lib(str(out), "pt") as f:
        assert list(f.keys()) == ["w"]
    assert "1 values that are not tensors left out" in " ".join(res.out.split()) and "(through torch, --trust)" in res.out
    assert json.loads(cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "again.safetensors"), "--trust", "--json",
                          "--python", sys.executable).out)["method"] == "torch"


def test_safetensors_shards_to_one_pt_file(tmp_path, cli, safetensors_lib):
    from safetensors.torch import save_file

    torch.manual_seed(1)
    sd = {"_orig_mod.layers.%d.weight" % i: torch.randn(4, 4, dtype=torch.bfloat16 if i % 2 else torch.float32)
          for i in range(4)}
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    keys = sorted(sd)
    save_file({k: sd[k] for k in keys[:2]}, tmp_path / names[0], metadata={"format": "pt"})
    save_file({k: sd[k] for k in keys[2:]}, tmp_path / names[1], metadata={"format": "pt"})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 0}, "weight_map": {k: names[i // 2] for i, k in enumerate(keys)}}))
    out = tmp_path / "one.pt"
    res = cli("checkpoint", "fix", str(tmp_path), "-o", str(out), "--strip-prefix", "_orig_mod.", "--map-location", "cpu",
              "--python", sys.executable)
    assert res.code == 0, res.err
    got = torch.load(out, weights_only=True)
    assert sorted(got) == sorted(k[len("_orig_mod."):] for k in sd)
    assert all(torch.equal(got[k[len("_orig_mod."):]], v) and got[k[len("_orig_mod."):]].dtype == v.dtype for k, v in sd.items())
    flat = " ".join(res.out.split())
    assert "read 2 safetensors files (4 tensors) with safetensors.safe_open" in flat
    # the index names the folder too; --to pt with an OUT not named for either is what --to says
    res = cli("checkpoint", "fix", str(tmp_path / "model.safetensors.index.json"), "-o", str(tmp_path / "one.weights"),
              "--to", "pt", "--python", sys.executable)
    assert res.code == 0, res.err
    assert sorted(torch.load(tmp_path / "one.weights", weights_only=True)) == keys
