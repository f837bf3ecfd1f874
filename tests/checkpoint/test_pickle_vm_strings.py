"""The pickle walk reads text as pickle does (UTF-8 with surrogatepass): a string pickle cannot decode ends the walk
with a note, as pickle.loads and torch.load (either weights_only) stop there; the verdict is then "does not load".
It used to be decoded with replacement characters and the walk went on, so inspect said such a file would load."""

import pickle

import pytest

import checkpoint_builders as cb
from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.analyze import inspect_file

OPCODES = [b"X\x02\x00\x00\x00", b"\x8c\x02", b"\x8d\x02\x00\x00\x00\x00\x00\x00\x00"]  # BINUNICODE, SHORT_, BINUNICODE8


@pytest.mark.parametrize("op", OPCODES)
@pytest.mark.parametrize("fast", [True, False])
def test_a_string_pickle_cannot_decode_ends_the_walk(op, fast):
    data = b"\x80\x04" + op + b"\xff\xfe."
    with pytest.raises(UnicodeDecodeError):
        pickle.loads(data)
    res = pickle_vm.walk(data, 0, None, template=fast)
    assert not res.complete and any("not UTF-8" in n and "byte" in n for n in res.notes)
    ref = pickle_vm.reference_walk(data, 0, None)
    assert not ref.complete and ref.notes == res.notes


@pytest.mark.parametrize("raw", ["é", "\ud800", "k\x00", "日本"])
def test_text_pickle_reads_is_read_alike(raw):
    data = pickle.dumps(raw, protocol=2)
    if "\ud800" in raw:  # pickle writes a lone surrogate with surrogatepass, and reads it back
        assert pickle.loads(data) == raw
    res = pickle_vm.walk(data)
    assert res.complete and res.root == raw


def test_a_state_dict_with_a_broken_key_does_not_load(tmp_path):
    sd = cb.cnn("cpu")
    good = cb.torch_zip(sd, prefix="a")
    bad = good.replace(b"conv1.weight", b"conv1.\xffeight", 1)  # same length: the zip stays readable
    assert bad != good
    path = tmp_path / "a.pt"
    path.write_bytes(bad)
    r = inspect_file(str(path))
    assert r.weights_only is False and "the pickle is incomplete" in r.weights_only_reasons
