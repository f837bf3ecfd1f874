"""`cudaenv.portable.match_keys` on hostile state_dicts, no torch: prefixes come off in linear work (a 2.1 MB key of
``module.module....`` took 73 s), a renamed key never replaces one the model has exactly (a decoy ``module.weight``
loaded over the real ``weight`` and strict=True said "All keys matched"), and an odd ``_metadata`` is the promised
``RuntimeError`` (it was AttributeError or TypeError)."""

import collections

import pytest

from cudaenv.checkpoint.names import strip_wrappers, wrapper_chain, wrapper_length
from cudaenv.portable import _match, match_keys


class CountingKey(str):
    """A key that counts the characters every slice of it copies (and whose slices count too)."""

    copied = [0]

    def __getitem__(self, index):
        got = str.__getitem__(self, index)
        CountingKey.copied[0] += len(got)
        return CountingKey(got)


def test_stripping_a_long_chain_of_prefixes_copies_the_key_about_once():
    key = CountingKey("module." * 3000 + "weight")
    CountingKey.copied[0] = 0
    out = match_keys(collections.OrderedDict([(key, 1)]), ["weight"])
    assert list(out) == ["weight"]
    # each key is stripped a few times (the shared-prefix test, the rename): a small multiple of its length, where
    # slicing one prefix off at a time copied 3000 * len / 2 characters
    assert CountingKey.copied[0] <= 10 * len(key)


def test_the_one_prefix_rule():
    assert wrapper_length("_orig_mod.module.conv.weight") == len("_orig_mod.module.")
    assert strip_wrappers("module._orig_mod.module.fc.bias") == "fc.bias"
    assert wrapper_chain("modules.x") == "" and strip_wrappers("modules.x") == "modules.x"


@pytest.mark.parametrize("order", [("module.weight", "weight"), ("weight", "module.weight")])
def test_a_decoy_prefixed_key_never_replaces_the_exact_one(order):
    values = {"weight": "real", "module.weight": "decoy"}
    sd = collections.OrderedDict((k, values[k]) for k in order)
    out, notes = _match(sd, ["weight", "bias"])
    assert out["weight"] == "real" and out["module.weight"] == "decoy"  # left as it is: an unexpected key
    assert len(notes) == 1 and "'module.weight'" in notes[0] and "kept as it is" in notes[0]


def test_two_keys_renamed_to_one_name_keep_the_first():
    sd = collections.OrderedDict([("module.fc.weight", 1), ("_orig_mod.fc.weight", 2)])
    out, notes = _match(sd, ["fc.weight"])
    assert out == collections.OrderedDict([("fc.weight", 1), ("_orig_mod.fc.weight", 2)]) and len(notes) == 1


@pytest.mark.parametrize("meta", [5, ["module"], collections.OrderedDict([("module", 3)]), "text"])
def test_an_odd_metadata_is_a_runtime_error(meta):
    sd = collections.OrderedDict([("module.fc.weight", 1)])
    sd._metadata = meta
    with pytest.raises(RuntimeError, match="_metadata"):
        match_keys(sd, ["fc.weight"])


def test_metadata_keys_that_are_not_strings_stay():
    sd = collections.OrderedDict([("module.fc.weight", 1)])
    sd._metadata = collections.OrderedDict([(7, {"version": 1}), ("module.fc", {"version": 2})])
    out = match_keys(sd, ["fc.weight"])
    assert list(out._metadata) == [7, "fc"]
