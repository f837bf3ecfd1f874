"""`checkpoint fix --trust` with the real torch (`torch` marker): the child that rewrites in the user's Python keeps
the rule of the rewrite without torch, a key whose stripped name is taken stays as it is (a decoy ``module.weight``
was stripped onto the real ``weight``, the later one winning)."""

import argparse
import collections
import sys

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def test_a_trusted_strip_never_puts_the_decoy_over_the_real_weight(tmp_path, cli):
    real, decoy = torch.ones(2), torch.full((2,), 66.0)
    sd = collections.OrderedDict([("weight", real), ("module.weight", decoy), ("module.bias", torch.zeros(1))])
    path = tmp_path / "t.pt"
    torch.save({"state_dict": sd, "args": argparse.Namespace(lr=0.1)}, path)  # (the Namespace: only --trust rewrites it)
    out = tmp_path / "out.pt"
    res = cli("checkpoint", "fix", str(path), "-o", str(out), "--strip-prefix", "module.", "--trust", "--python", sys.executable)
    assert res.code == 1, res.err  # written; exit 1: it still needs weights_only=False (the Namespace)
    assert "keys kept as they were" in res.out
    fixed = torch.load(out, weights_only=False)["state_dict"]
    assert list(fixed) == ["weight", "module.weight", "bias"]
    assert torch.equal(fixed["weight"], real) and torch.equal(fixed["module.weight"], decoy)
