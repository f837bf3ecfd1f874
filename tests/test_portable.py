"""`cudaenv.portable` without torch: importing it touches nothing, and pick_device's choices against a stand-in torch
module (the real torch runs in test_checkpoint_torch.py)."""

import importlib
import sys
import types

import pytest


class _Device:
    def __init__(self, spec):
        kind, _, index = str(spec).partition(":")
        self.type = kind
        self.index = int(index) if index else None

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __repr__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)


def fake_torch(gpus):
    class Guard(types.ModuleType):
        def __getattr__(self, name):  # anything else portable might reach for is a test failure
            raise AssertionError("portable used torch.%s" % name)

    torch = Guard("torch")
    torch.device = _Device
    torch.cuda = types.SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus)
    torch.backends = types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: False))
    return torch


def test_import_does_not_touch_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(0))
    monkeypatch.delitem(sys.modules, "cudaenv.portable", raising=False)
    calls = []
    monkeypatch.setattr(sys.modules["torch"].cuda, "device_count", lambda: calls.append(1) or 0)
    mod = importlib.import_module("cudaenv.portable")
    assert callable(mod.pick_device) and not calls


@pytest.mark.parametrize("gpus, prefer, expected, warns", [
    (0, None, "cpu", False),
    (2, None, "cuda:0", False),
    (2, "cuda:1", "cuda:1", False),
    (1, "cuda:1", "cuda:0", True),   # degrades to the GPU that is there
    (0, "cuda:3", "cpu", True),      # and to cpu when there is none
    (0, "cpu", "cpu", False),
])
def test_pick_device(monkeypatch, gpus, prefer, expected, warns):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(gpus))
    from cudaenv.portable import pick_device

    if warns:
        with pytest.warns(RuntimeWarning, match="is not available here"):
            got = pick_device(prefer)
    else:
        got = pick_device(prefer)
    assert repr(got) == expected


def test_match_keys_strips_and_adds_wrappers(monkeypatch):
    import collections

    from cudaenv.portable import match_keys

    sd = collections.OrderedDict([("_orig_mod.module.fc.weight", 1), ("module.fc.bias", 2), ("extra", 3)])
    sd._metadata = collections.OrderedDict([("_orig_mod.module.fc", {}), ("module", {})])
    out = match_keys(sd, ["fc.weight", "fc.bias"])
    assert list(out) == ["fc.weight", "fc.bias", "extra"]  # what matches nothing stays, to be reported
    assert list(match_keys(collections.OrderedDict([("fc.weight", 1)]), ["module.fc.weight"])) == ["module.fc.weight"]
