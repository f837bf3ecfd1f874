"""`cudaenv.portable.load_state_dict` with the real torch (`torch` marker): a decoy ``module.weight`` beside the real
``weight`` is no longer loaded over it (strict=True said "All keys matched" and the model got the decoy), and an odd
``_metadata`` is the promised RuntimeError (it was AttributeError or TypeError)."""

import collections

import pytest

torch = pytest.importorskip("torch")

from cudaenv.portable import load_state_dict  # noqa: E402

pytestmark = pytest.mark.torch


def _save(tmp_path, sd):
    path = tmp_path / "ckpt.pt"
    torch.save(sd, path)
    return path


def test_a_decoy_never_replaces_the_real_weight(tmp_path):
    model = torch.nn.Linear(2, 1, bias=False)
    real = torch.ones(1, 2)
    sd = collections.OrderedDict([("weight", real), ("module.weight", torch.full((1, 2), 66.0))])
    path = _save(tmp_path, sd)
    with pytest.raises(RuntimeError, match="module.weight"):
        load_state_dict(model, path, device="cpu")
    with pytest.warns(RuntimeWarning, match="kept as it is"):
        missing, unexpected = load_state_dict(model, path, device="cpu", strict=False)
    assert torch.equal(model.weight.detach(), real) and unexpected == ["module.weight"] and not missing


@pytest.mark.parametrize("meta", [5, ["module"], collections.OrderedDict([("module", 3)])])
def test_an_odd_metadata_is_a_runtime_error(tmp_path, meta):
    model = torch.nn.Linear(2, 1, bias=False)
    sd = collections.OrderedDict([("module.weight", torch.ones(1, 2))])
    sd._metadata = meta
    path = _save(tmp_path, sd)
    with pytest.raises(RuntimeError, match="_metadata"):
        load_state_dict(model, path, device="cpu")


def test_a_wrapped_checkpoint_still_loads(tmp_path):
    model = torch.nn.Linear(2, 1)
    wrapped = collections.OrderedDict(("_orig_mod.module." + k, v + 1) for k, v in model.state_dict().items())
    path = _save(tmp_path, wrapped)
    assert load_state_dict(torch.nn.Linear(2, 1), path, device="cpu") is not None
    fresh = torch.nn.Linear(2, 1)
    load_state_dict(fresh, path, device="cpu")
    assert torch.equal(fresh.bias.detach(), model.bias.detach() + 1)
