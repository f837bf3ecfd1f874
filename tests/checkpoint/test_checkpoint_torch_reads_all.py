"""Two verdicts the mutation test on real torch files (test_checkpoint_torch_fix.py) found wrong, now right:

1. A legacy file is five pickles, and torch.load unpickles all five (weights_only or not): a global or an opcode in
   the magic, protocol, sys_info or storage-key pickle counts (a `posix.system` call in sys_info runs under
   torch.load(weights_only=False); checked by hand with torch 2.13: the marker file appeared).
2. torch.load reads a file as a zip only when it starts with b"PK\\x03\\x04" (serialization._is_zipfile); with bytes
   before the zip it unpickles byte 0 as a legacy file and fails ("Unsupported operand ...").
"""

import pickle

import checkpoint_builders as cb
from cudaenv.checkpoint.analyze import inspect_file

SYS_INFO = pickle.dumps({"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}, 2)


def _legacy_with_sys_info(tmp_path, sys_info):
    good = cb.legacy_file(cb.cnn())
    assert good.count(SYS_INFO) == 1
    path = tmp_path / "legacy.pt"
    path.write_bytes(good.replace(SYS_INFO, sys_info))
    return str(path)


def test_the_legacy_file_builder_is_what_inspect_reads(tmp_path):
    r = inspect_file(_legacy_with_sys_info(tmp_path, SYS_INFO))  # the unchanged file: the xfails below are not noise
    assert r.format == "torch-legacy" and r.weights_only is True and not r.inconsistencies


def test_a_global_in_the_legacy_sys_info_pickle_is_named(tmp_path):
    cmd = b"touch /nonexistent/never-run"
    evil = b"\x80\x02cposix\nsystem\nX" + len(cmd).to_bytes(4, "little") + cmd + b"\x85R0" + SYS_INFO[2:]
    r = inspect_file(_legacy_with_sys_info(tmp_path, evil))
    assert "posix.system" in {g.name for g in r.globals} and r.weights_only is False


def test_an_opcode_weights_only_refuses_in_the_legacy_sys_info_pickle(tmp_path):
    dup = SYS_INFO[:3] + b"2" + SYS_INFO[3:]  # DUP after EMPTY_DICT: torch says 'Unsupported operand 50'
    assert pickle.loads(dup) == pickle.loads(SYS_INFO)
    r = inspect_file(_legacy_with_sys_info(tmp_path, dup))
    assert r.weights_only is False and any("DUP (50)" in w for w in r.weights_only_reasons)


def test_bytes_before_a_zip_mean_torch_does_not_read_it_as_a_zip(tmp_path):
    path = tmp_path / "pre.pt"
    path.write_bytes(b"\x00" + cb.torch_zip(cb.cnn()))
    r = inspect_file(str(path))
    assert r.weights_only is False and any("before the zip" in p for p in r.inconsistencies)
