"""`cudaenv checkpoint inspect`'s verdicts against what the real torch 2.13 does with the same bytes (`nox -s torch`):
the format from the first four bytes, protocol-2 names, the opcode targets its weights_only unpickler accepts, the
operand it names for a protocol-4 pickle, a plain pickle, a device value. Each case loads the file with torch and
checks that inspect predicted it. Malicious payloads only ever create a marker file in the test's folder."""

import io
import re
import struct
import warnings
import zipfile

import pytest

torch = pytest.importorskip("torch")

from cudaenv.checkpoint.analyze import inspect_file  # noqa: E402

pytestmark = pytest.mark.torch


def torch_load(path, weights_only):
    """None when torch.load loads it, else the error's text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.load(path, weights_only=weights_only)
        except Exception as exc:  # noqa: BLE001 - what torch raises is the answer
            return "%s: %s" % (type(exc).__name__, exc)
    return None


def zip_of(data_pkl: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a/data.pkl", data_pkl)
        zf.writestr("a/byteorder", b"little")
        zf.writestr("a/version", b"3\n")
    return buf.getvalue()


def test_bytes_before_a_zip_fail_in_torch_and_in_the_verdict(tmp_path, cli):
    good = tmp_path / "good.pt"
    torch.save({"w": torch.ones(3)}, good)
    path = tmp_path / "pre.pt"
    path.write_bytes(b"#!junk header\n" * 7 + good.read_bytes())
    assert "Unsupported operand 35" in torch_load(path, True)  # '#' read as a pickle opcode
    assert "invalid load key" in torch_load(path, False)
    r = inspect_file(str(path))
    assert r.weights_only is False and r.inconsistencies[0].startswith("98 bytes before the zip archive")
    assert cli("checkpoint", "inspect", str(path)).code == 1
    assert inspect_file(str(good)).weights_only is True and torch_load(good, True) is None


def test_a_pickle_with_an_end_record_appended_runs_in_torch_and_is_named(tmp_path, cli):
    marker = tmp_path / "PWNED"
    cmd = ("touch %s" % marker).encode()
    path = tmp_path / "evil.pt"
    path.write_bytes(b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"\x85R." + b"PK\x05\x06")
    res = cli("checkpoint", "inspect", str(path))
    assert res.code == 3 and "os.system" in res.out and not marker.exists()
    assert "blocked" in torch_load(path, True) and not marker.exists()  # weights_only refuses it
    assert "Invalid magic number" in torch_load(path, False)  # a plain load fails, after running it
    assert marker.exists()


def test_a_legacy_file_whose_tail_holds_an_end_record_loads_in_torch_and_here(tmp_path):
    path = tmp_path / "legacy.pt"
    torch.save({"t": torch.tensor(list(b"PK\x05\x06") + [0] * 18, dtype=torch.uint8)}, path, _use_new_zipfile_serialization=False)
    assert b"PK\x05\x06" in path.read_bytes()[-40:] and torch_load(path, True) is None
    r = inspect_file(str(path))
    assert r.format == "torch-legacy" and r.weights_only is True and r.tensors == 1 and not r.inconsistencies


def test_a_set_and_a_complex_load_with_weights_only_and_fix_rewrites_them(tmp_path, cli):
    path = tmp_path / "sc.pt"
    torch.save({"s": {1, 2}, "c": 1 + 2j, "w": torch.ones(2)}, path)
    assert torch_load(path, True) is None
    r = inspect_file(str(path))
    assert {g.name: g.verdict for g in r.globals}["__builtin__.set"] == "allowed"
    assert r.weights_only is True and not r.security
    res = cli("checkpoint", "inspect", str(path))
    assert res.code == 0 and "SECURITY" not in res.out
    out = tmp_path / "fixed.pt"
    assert cli("checkpoint", "fix", str(path), "-o", str(out), "--map-location", "cpu").code == 0
    assert torch.load(out, weights_only=True)["s"] == {1, 2} and torch.load(out, weights_only=True)["c"] == 1 + 2j


OD = b"ccollections\nOrderedDict\n"
CASES = {
    "BUILD on a dict": b"\x80\x02}}b.",
    "BUILD on a list": b"\x80\x02]}b.",
    "BUILD on a class": b"\x80\x02" + OD + b"}b.",
    "BUILD on bytes": b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x06\x00\x00\x00latin1\x86R}b.",
    "BUILD on a layout": b"\x80\x02ctorch.serialization\n_get_layout\nX\x0d\x00\x00\x00torch.strided\x85R}b.",
    "BUILD on OrderedDict()": b"\x80\x02" + OD + b")R}b.",
    "BUILD on set()": b"\x80\x02c__builtin__\nset\n)R}b.",
    "BUILD on a device": b"\x80\x02ctorch\ndevice\nX\x03\x00\x00\x00cpu\x85R}b.",
    "REDUCE of OrderedDict()": b"\x80\x02" + OD + b")R)R.",
    "REDUCE of a string": b"\x80\x02X\x01\x00\x00\x00a)R.",
    "NEWOBJ of OrderedDict()": b"\x80\x02" + OD + b")R)\x81.",
    "NEWOBJ of OrderedDict": b"\x80\x02" + OD + b")\x81.",
    "NEWOBJ of Parameter": b"\x80\x02ctorch.nn.parameter\nParameter\n)\x81.",
    "APPEND to OrderedDict()": b"\x80\x02" + OD + b")RK\x01a.",
    "APPEND to set()": b"\x80\x02c__builtin__\nset\n)RK\x01a.",
    "APPENDS to a dict": b"\x80\x02}(K\x01e.",
    "APPEND to a list": b"\x80\x02]K\x01a.",
    "SETITEM on a list": b"\x80\x02]K\x01K\x02s.",
    "SETITEMS on a list": b"\x80\x02](K\x01K\x02u.",
    "SETITEM on set()": b"\x80\x02c__builtin__\nset\n)RK\x01K\x02s.",
    "SETITEM on OrderedDict()": b"\x80\x02" + OD + b")RK\x01K\x02s.",
    "SETITEM on Counter()": b"\x80\x02ccollections\nCounter\n)RK\x01K\x02s.",
    "GLOBAL __builtin__.intern": b"\x80\x02c__builtin__\nintern\n.",
    "GLOBAL UserDict.OrderedDict": b"\x80\x02cUserDict\nOrderedDict\n.",
    "GLOBAL __builtin__.dict": b"\x80\x02c__builtin__\ndict\n.",
    "POP": b"\x80\x02K\x010N.",
}
# torch's words for each refusal, as inspect quotes them (T:_weights_only_unpickler.py)
QUOTED = ("Can only build Tensor, Parameter, OrderedDict", "Trying to call reduce for unrecognized function",
          "Can only create new object for nn.Parameter", "Can only append to lists", "Can only extend lists",
          "Can only SETITEM for dict", "Can only SETITEMS for dict", "Unsupported operand", "is blocked",
          "was not an allowed global")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_verdict_on_opcode_targets_and_names_is_torchs(tmp_path, name):
    path = tmp_path / "case.pt"
    path.write_bytes(zip_of(CASES[name]))
    error = torch_load(path, True)
    r = inspect_file(str(path))
    assert r.weights_only is (error is None), (name, error, r.weights_only_reasons)
    if error is not None:
        said = [q for q in QUOTED if q in error]
        assert said, error
        words = said[0].replace("SETITEMS", "SETITEM").replace("is blocked", "torch blocks its module").replace(
            "was not an allowed global", "is not an allowed global")
        assert any(words in x for x in r.weights_only_reasons), (error, r.weights_only_reasons)


def test_the_protocol4_operand_is_the_one_torch_names(tmp_path):
    path = tmp_path / "p4.pt"
    torch.save({"w": torch.ones(2), "b": torch.zeros(1)}, path, pickle_protocol=4)
    error = torch_load(path, True)
    torch_says = int(re.search(r"Unsupported operand (\d+)", error).group(1))
    r = inspect_file(str(path))
    reason = [x for x in r.weights_only_reasons if x.startswith("opcodes weights_only does not support")][0]
    assert reason.endswith("(torch: 'Unsupported operand %d')" % torch_says) and torch_says == 149
    assert reason.startswith("opcodes weights_only does not support: FRAME (149), ")


def test_a_plain_pickle_fails_in_torch_and_in_the_verdict(tmp_path):
    import pickle

    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps({"a": 1}, 2))
    assert "Invalid magic number" in torch_load(path, True)
    r = inspect_file(str(path))
    assert r.format == "pickle" and r.weights_only is False and "Invalid magic number" in r.weights_only_reasons[0]


def test_a_device_value_and_ema_weights_are_named(tmp_path):
    path = tmp_path / "ema.pt"
    model = torch.nn.Linear(2, 2)
    torch.save({"model": model.state_dict(), "model_ema": model.state_dict(), "device": torch.device("cuda", 2)}, path)
    assert torch_load(path, True) is None  # a torch.device value loads on a CPU-only machine: it is not a tensor
    r = inspect_file(str(path))
    assert r.kind == "training checkpoint with EMA weights"
    assert "model_ema: EMA weights, state_dict, 2 tensors" in r.structure
    assert {(d.device, d.via): d.count for d in r.devices} == {("cpu", "storage"): 2, ("cuda:2", "device-value"): 1}
    text = " ".join(r.advice)
    assert "a torch.device cuda:2 is stored in the checkpoint (a device value, not a tensor)" in text and "rebuilt" not in text
