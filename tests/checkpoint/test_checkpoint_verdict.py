"""The safety verdict of `checkpoint inspect` (issue 26): safe, unsafe (exit 3) or inconclusive (exit 4), fail closed.

Every file here is built without torch (tests/checkpoint_builders.py, tests/checkpoint_hostile.py); nothing is loaded.
"""

import pytest

import checkpoint_builders as cb
from cudaenv.checkpoint.analyze import build_report, inspect_file
from cudaenv.checkpoint.container import open_container
from cudaenv.checkpoint.nodes import Limits


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_a_plain_state_dict_is_safe_and_exits_0(tmp_path, cli):
    path = write(tmp_path, "sd.pt", cb.torch_zip(cb.cnn()))
    r = inspect_file(path)
    assert (r.verdict, r.verdict_reasons, r.weights_only) == ("safe", (), True)
    res = cli("checkpoint", "inspect", path)
    assert res.code == 0 and "verdict: safe" in res.out


@pytest.mark.parametrize("module,name", [("os", "system"), ("cProfile", "run"), ("uuid", "_get_command_stdout"),
                                         ("imaplib", "IMAP4_stream"), ("torch.storage", "_load_from_bytes"),
                                         ("__main__", "CNN")])
def test_any_global_outside_the_allowlist_is_unsafe_exit_3(tmp_path, cli, module, name):
    """An allow-list, not a deny-list: cProfile.run or imaplib.IMAP4_stream (scanner bypasses, in no deny-list of
    cudaenv's) are as unsafe as os.system (exit 1 'not allowed' before)."""
    sd = cb.cnn()
    sd["x"] = cb.Reduce(cb.glob(module, name), ("id",))
    path = write(tmp_path, "evil.pt", cb.torch_zip(sd))
    r = inspect_file(path)
    assert r.verdict == "unsafe" and r.weights_only is False
    assert any("%s.%s" % (module, name) in x.why and x.where == "archive/data.pkl" for x in r.verdict_reasons)
    res = cli("checkpoint", "inspect", path)
    assert res.code == 3 and "UNSAFE" in res.out


def test_a_bound_that_is_hit_is_inconclusive_never_yes(tmp_path):
    """The walk stops at the opcode bound before the end: nothing after it was seen (it was weights_only 'no' with
    an exit 1 and no word that the rest was unseen)."""
    sd = cb.state_dict([("w%d" % i, cb.Tensor(cb.Storage(str(i), 4), (4,))) for i in range(300)], [""])
    path = write(tmp_path, "sd.pt", cb.torch_zip(sd))
    assert inspect_file(path).verdict == "safe"
    r = build_report(open_container(path, Limits(max_ops=1000)))
    assert r.verdict == "inconclusive" and r.weights_only is False
    assert r.verdict_reasons[0].where.startswith("archive/data.pkl, byte ")
    assert "more than 1000 opcodes" in r.verdict_reasons[0].why


def test_a_file_of_zeros_is_not_a_checkpoint_and_nothing_in_it_runs(tmp_path):
    path = write(tmp_path, "z.pt", bytes(1 << 20))
    r = inspect_file(path)
    assert r.format == "unknown" and r.verdict is None and r.weights_only is False
