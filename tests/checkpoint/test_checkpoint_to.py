"""`cudaenv checkpoint fix --to pt|safetensors` without torch (issue 32): the names and shapes a converted file must
hold, computed from cudaenv's own reading of the source (cudaenv.checkpoint.flat, the child's renaming rules), and
the check that refuses a written file that does not hold them (the child is replaced by one that writes a known
file: real torch runs in tests/checkpoint/test_checkpoint_to_torch.py)."""

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import checkpoint_builders as cb
from checkpoint_builders import Storage, Tensor
from cudaenv.checkpoint import fix as F
from cudaenv.checkpoint import flat
from cudaenv.checkpoint.container import open_container
from cudaenv.checkpoint.graph import graph, storages_of


def _shapes_of(path, **opts):
    box = open_container(str(path))
    an = graph(box.pickle.root, storages_of(box))

    def tensor_of(v):
        t = an.tensor(v)
        return tuple(t.shape) if t is not None else None

    return flat.pt_shapes(box.pickle.root, tensor_of, **opts)


def test_pt_shapes_follow_the_childs_renaming(tmp_path):
    w = Tensor(Storage("0", 12), (3, 4))
    sd = cb.state_dict([("module.fc.weight", w), ("module.fc.bias", Tensor(Storage("1", 3), (3,))),
                        ("fc.bias", Tensor(Storage("2", 3), (3,)))])
    src = tmp_path / "ckpt.pt"
    src.write_bytes(cb.torch_zip({"model": sd, "epoch": 3, "opt": {"lr": 0.1}}))
    assert _shapes_of(src) == {"model.module.fc.weight": (3, 4), "model.module.fc.bias": (3,), "model.fc.bias": (3,)}
    # strip in every dict of tensors; fc.bias is taken, so module.fc.bias keeps its name (the child's rule)
    assert _shapes_of(src, strip=["module."], extract="model") == {"fc.weight": (3, 4), "module.fc.bias": (3,),
                                                                   "fc.bias": (3,)}
    # add: the model state_dicts (model is one of them), not the top level of a training checkpoint
    assert _shapes_of(src, add="net.") == {"model.net.module.fc.weight": (3, 4), "model.net.module.fc.bias": (3,),
                                           "model.net.fc.bias": (3,)}
    assert _shapes_of(src, extract="missing") is None


def test_safetensors_shapes_count_the_tied_names_and_compare_names_every_difference():
    header = {"__metadata__": {"cudaenv.aliases": json.dumps({"head.weight": "emb.weight", "x": "nowhere"})},
              "emb.weight": {"dtype": "F32", "shape": [10, 4], "data_offsets": [0, 160]}}
    assert flat.safetensors_shapes(header) == {"emb.weight": (10, 4), "head.weight": (10, 4)}
    assert flat.compare({"a": (2,), "b": (3,)}, {"a": (2,), "b": (3,)}) == []
    problems = flat.compare({"a": (2,), "b": (3,), "c": (1,)}, {"a": (2, 1), "b": (3,), "d": (1,)})
    assert problems == ["1 keys of the source are not in it: c", "1 keys in it are not in the source: d",
                        "1 tensors changed shape: a [2] -> [2, 1]"]
    assert flat.renamed_keys(["module.a", "a", "module.b"], ["module."], "m.") == ["m.module.a", "m.a", "m.b"]


@pytest.mark.parametrize("written, code", [({"a.weight": (16,), "a.bias": (4,), "b.weight": (16,), "b.bias": (4,)}, 0),
                                           ({"a.weight": (4, 4), "a.bias": (4,), "b.weight": (16,), "b.bias": (4,)}, 1),
                                           ({"a.weight": (16,), "a.bias": (4,), "b.weight": (16,)}, 1)])
def test_shards_to_pt_write_only_what_holds_the_shards_keys_and_shapes(tmp_path, cli, monkeypatch, written, code):
    folder = tmp_path / "hf"
    folder.mkdir()
    one = {"module.a.weight": ("F32", (16,), 64), "module.a.bias": ("F32", (4,), 16)}
    two = {"module.b.weight": ("F32", (16,), 64), "module.b.bias": ("F32", (4,), 16)}
    (folder / "model-00001-of-00002.safetensors").write_bytes(cb.safetensors_file(one))
    (folder / "model-00002-of-00002.safetensors").write_bytes(cb.safetensors_file(two))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": dict(
        [(k, "model-00001-of-00002.safetensors") for k in one] + [(k, "model-00002-of-00002.safetensors") for k in two])}))
    seen = []

    def child(host, python, timeout, path, spec):  # what torch would write: a torch.save file of `written`
        seen.append(spec)
        n = 1
        items = []
        for i, (k, shape) in enumerate(written.items()):
            n = 1
            for d in shape:
                n *= d
            items.append((k, Tensor(Storage(str(i), n), shape)))
        with open(spec["output"], "wb") as fh:
            fh.write(cb.torch_zip(cb.state_dict(items)))
        return ["(stand-in)"]

    monkeypatch.setattr(F, "_run_child", child)
    out = tmp_path / "one.pt"
    res = cli("checkpoint", "fix", str(folder), "-o", str(out), "--strip-prefix", "module.")
    assert res.code == code, res.err
    assert seen[0]["layout"] == "safetensors" and [p.rsplit("/", 1)[1] for p in seen[0]["sources"]] == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    assert out.exists() == (code == 0)
    if code:
        assert "does not hold what the source holds" in " ".join(res.err.split())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".cudaenv-tmp")]


def test_a_pt_file_to_safetensors_refuses_a_result_with_other_keys(tmp_path, cli, monkeypatch):
    src = tmp_path / "model.pt"
    src.write_bytes(cb.torch_zip(cb.cnn(prefix="module.")))
    specs = []

    def child(host, python, timeout, path, spec):  # writes the keys unstripped: the check must catch it
        specs.append(spec)
        tensors = {k: ("F32", (1,), 4) for k in ("module.conv1.weight", "module.conv1.bias")}
        with open(spec["output"], "wb") as fh:
            fh.write(cb.safetensors_file(tensors))
        return []

    monkeypatch.setattr(F, "_run_child", child)
    out = tmp_path / "model.safetensors"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--strip-prefix", "module.")
    assert res.code == 1 and not out.exists()
    assert specs[0]["to"] == "safetensors" and specs[0]["weights_only"] is True  # a safe file: nothing of it runs
    err = " ".join(res.err.split())
    assert "6 keys of the source are not in it: conv1.weight, conv1.bias, bn1.weight, bn1.bias, fc.weight" in err


def test_a_safetensors_file_renamed_without_torch(tmp_path, cli):
    src = tmp_path / "model.safetensors"
    src.write_bytes(cb.safetensors_file({"module.w": ("F32", (2, 2), 16), "module.b": ("F16", (2,), 4)}, {"format": "pt"}))
    out = tmp_path / "renamed.safetensors"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--strip-prefix", "module.")
    assert res.code == 0, res.err
    raw = out.read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    assert sorted(k for k in header if k != "__metadata__") == ["b", "w"]
    assert "rewrote the safetensors header (2 tensors" in " ".join(res.out.split())
    res = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "x.safetensors"), "--extract", "state_dict")
    assert res.code == 2 and "--extract does not apply" in " ".join(res.err.split())


def test_output_format():
    assert F.output_format("a.safetensors", None) == "safetensors" and F.output_format("a.pt", None) == "pt"
    assert F.output_format("a.weights", "safetensors") == "safetensors" and F.output_format("A.SAFETENSORS", "safetensors")
    from cudaenv.core.errors import UserError

    for out, to in (("a.safetensors", "pt"), ("a.pt", "safetensors"), ("a.bin", "safetensors"), ("a.pt", "onnx")):
        with pytest.raises(UserError):
            F.output_format(out, to)


def test_tied_names_are_renamed_with_their_keys_and_a_file_is_known_by_its_bytes_not_its_name(tmp_path, cli):
    src = tmp_path / "tied.safetensors"
    aliases = json.dumps({"module.head.weight": "module.emb.weight"})
    src.write_bytes(cb.safetensors_file({"module.emb.weight": ("F32", (10, 4), 160)}, {"cudaenv.aliases": aliases}))
    out = tmp_path / "out.safetensors"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--strip-prefix", "module.")
    assert res.code == 0, res.err  # (the check counts head.weight: its alias must follow the rename)
    raw = out.read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    assert json.loads(header["__metadata__"]["cudaenv.aliases"]) == {"head.weight": "emb.weight"}
    # a torch zip named .safetensors is a torch zip: rewritten without torch, as its bytes say
    odd = tmp_path / "odd.safetensors"
    odd.write_bytes(cb.torch_zip(cb.cnn(prefix="module.")))
    res = cli("checkpoint", "fix", str(odd), "-o", str(tmp_path / "odd.pt"), "--strip-prefix", "module.")
    assert res.code == 0 and "rewritten without torch" in res.out, res.err


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=20)


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=12), _json, max_size=8))
def test_any_header_gives_shapes_and_the_comparison_of_any_two_is_empty_only_when_they_match(header):
    shapes = flat.safetensors_shapes(header)
    assert all(isinstance(k, str) and isinstance(v, tuple) for k, v in shapes.items())
    assert flat.compare(shapes, dict(shapes)) == []
    if shapes:
        k = next(iter(shapes))
        assert flat.compare(shapes, {k2: v for k2, v in shapes.items() if k2 != k}) != []
