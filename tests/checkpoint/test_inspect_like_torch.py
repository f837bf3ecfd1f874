"""`cudaenv checkpoint inspect` decides as torch 2.13 decides (hand-built files, no torch; tests/checkpoint/
test_checkpoint_torch_verdicts.py checks the same claims against the real torch): the format from the first four
bytes only, GLOBAL names renamed as torch renames them, the targets torch's weights_only unpickler accepts for
BUILD, APPEND(S), SETITEM(S), REDUCE and NEWOBJ, the first unsupported opcode in the order the pickle has them, and
a pickle that was not read is never called safe."""

import pickletools
import struct

import pytest

import checkpoint_builders as cb
from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.analyze import inspect_file


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def marker_cmd(tmp_path):
    marker = tmp_path / "PWNED"
    return marker, ("touch %s" % marker).encode()


def os_system(cmd: bytes) -> bytes:
    return b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"\x85R."


def in_zip(data_pkl: bytes) -> bytes:
    return cb.torch_zip(None, prefix="a", data_pkl=data_pkl)


# ------------------------------------------------------------------ 1. the format from the first bytes, as torch
def test_a_pickle_with_an_end_of_directory_record_appended_is_walked_and_named(tmp_path, cli):
    """A plain pickle calling os.system with PK\\x05\\x06 after it: torch.load(weights_only=False) runs it (it reads
    any file that does not start with PK\\x03\\x04 as a pickle). inspect called it 'not a checkpoint' and exit 1."""
    marker, cmd = marker_cmd(tmp_path)
    path = write(tmp_path, "evil.pt", os_system(cmd) + b"PK\x05\x06")
    r = inspect_file(path)
    assert r.format == "pickle" and {g.name: g.verdict for g in r.globals} == {"os.system": "dangerous"}
    assert r.weights_only is False and any("os.system" in s for s in r.security)
    res = cli("checkpoint", "inspect", path)
    assert res.code == 3 and "os.system" in res.out and "SECURITY" in res.out
    assert not marker.exists()


def test_a_pickle_in_front_of_a_real_zip_is_what_torch_runs(tmp_path):
    marker, cmd = marker_cmd(tmp_path)
    r = inspect_file(write(tmp_path, "evil.pt", os_system(cmd) + cb.torch_zip(cb.cnn())))
    assert r.format == "pickle" and [g.name for g in r.globals] == ["os.system"] and r.weights_only is False
    assert any("a zip archive follows the pickle: torch.load never reads it" in n for n in r.notes)
    assert not marker.exists()


def test_a_payload_that_starts_with_an_unusual_opcode_is_still_walked(tmp_path):
    """NONE, POP, then the payload: pickle.load runs it; the first byte is not one a pickle usually starts with."""
    marker, cmd = marker_cmd(tmp_path)
    r = inspect_file(write(tmp_path, "evil.bin", b"N0" + os_system(cmd)[2:]))
    assert r.format == "pickle" and [(g.name, g.verdict) for g in r.globals] == [("os.system", "dangerous")]
    assert not marker.exists()


def test_a_legacy_file_whose_last_tensor_holds_an_end_record_is_legacy(tmp_path):
    """It was read as 'an empty zip' (the end record in its tail) while torch loads it."""
    sd = cb.state_dict([("w", cb.Tensor(cb.Storage("0", 4, "cuda:1"), (4,))),
                        ("bytes", cb.Tensor(cb.Storage("1", 64, kind="ByteStorage"), (64,)))])
    data = bytearray(cb.legacy_file(sd))
    data[-22:] = b"PK\x05\x06" + bytes(18)  # the uint8 storage's last bytes (its count and the layout unchanged)
    r = inspect_file(write(tmp_path, "legacy.pt", bytes(data)))
    assert r.format == "torch-legacy" and r.tensors == 2 and r.weights_only is True
    assert not r.inconsistencies and not any("zip" in n for n in r.notes)


def test_bytes_that_are_no_pickle_and_no_zip_are_unknown(tmp_path):
    r = inspect_file(write(tmp_path, "x.bin", b"hello, world\n" * 4))
    assert r.format == "unknown" and r.weights_only is False and r.weights_only_reasons == ("not a torch checkpoint",)


def test_a_plain_pickle_is_not_a_torch_file(tmp_path, cli):
    """torch.load reads a plain pickle's value as the legacy magic number: 'Invalid magic number; corrupt file?'."""
    import pickle

    path = write(tmp_path, "plain.pkl", pickle.dumps({"a": [1, 2]}, 2))
    r = inspect_file(path)
    assert r.format == "pickle" and r.weights_only is False and not r.security
    assert "Invalid magic number; corrupt file?" in r.weights_only_reasons[0]
    assert cli("checkpoint", "inspect", path).code == 1


# ------------------------------------------------------------------ 2. protocol-2 names, renamed as torch renames them
def test_a_set_and_a_complex_saved_by_torch_are_allowed(tmp_path, cli):
    """torch.save pickles a set and a complex through __builtin__ (protocol 2); torch's weights_only unpickler reads
    __builtin__ as builtins (its IMPORT_MAPPING) before the allowlist: they load. inspect said not allowed, printed a
    SECURITY line, and fix refused."""
    pkl = (b"\x80\x02}q\x00(X\x01\x00\x00\x00sq\x01c__builtin__\nset\nq\x02]q\x03(K\x01K\x02e\x85q\x04Rq\x05"
           b"X\x01\x00\x00\x00cq\x06c__builtin__\ncomplex\nq\x07G?\xf0\x00\x00\x00\x00\x00\x00G@\x00\x00\x00\x00\x00\x00\x00"
           b"\x86q\x08Rq\tu.")  # what torch.save({"s": {1, 2}, "c": 1+2j}) writes
    path = write(tmp_path, "sc.pt", in_zip(pkl))
    r = inspect_file(path)
    assert {g.name: g.verdict for g in r.globals} == {"__builtin__.set": "allowed", "__builtin__.complex": "allowed"}
    assert r.weights_only is True and not r.security and not r.weights_only_reasons
    res = cli("checkpoint", "inspect", path)
    assert res.code == 0 and "SECURITY" not in res.out


@pytest.mark.parametrize("spelled, verdict, reason", [
    ("__builtin__\nintern", "dangerous", "GLOBAL __builtin__.intern (torch reads it as sys.intern): torch blocks its module"),
    ("__builtin__\neval", "dangerous", "GLOBAL __builtin__.eval (torch reads it as builtins.eval) is not an allowed"),
    ("commands\ngetoutput", "dangerous", "GLOBAL commands.getoutput is not an allowed global"),  # pickle.load: subprocess
    ("__builtin__\ndict", "not-allowed", "GLOBAL __builtin__.dict (torch reads it as builtins.dict) is not an allowed"),
    ("UserDict\nOrderedDict", "allowed", None),  # torch: collections.OrderedDict
])
def test_renamed_globals_are_judged_by_the_name_torch_and_pickle_read(tmp_path, spelled, verdict, reason):
    r = inspect_file(write(tmp_path, "g.pt", in_zip(b"\x80\x02c" + spelled.encode() + b"\n.")))
    assert [g.verdict for g in r.globals] == [verdict]
    if reason is None:
        assert r.weights_only is True
    else:
        assert r.weights_only is False and any(x.startswith(reason) for x in r.weights_only_reasons), r.weights_only_reasons


# ------------------------------------------------------------------ 3. the targets torch's unpickler accepts
OD = b"ccollections\nOrderedDict\n"
TARGETS = [
    # (pickle, weights_only, the start of the reason)
    (b"\x80\x02}}b.", False, "BUILD on dict (torch: 'Can only build Tensor, Parameter, OrderedDict"),
    (b"\x80\x02]}b.", False, "BUILD on list"),
    (b"\x80\x02" + OD + b"}b.", False, "BUILD on a global itself"),
    (b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x06\x00\x00\x00latin1\x86R}b.", False,
     "BUILD on the result of _codecs.encode(...)"),
    (b"\x80\x02" + OD + b")R)R.", False, "REDUCE of the result of collections.OrderedDict(...), not a global (torch: "
                                        "'Trying to call reduce for unrecognized function')"),
    (b"\x80\x02X\x01\x00\x00\x00a)R.", False, "REDUCE of str, not a global"),
    (b"\x80\x02" + OD + b")R)\x81.", False, "NEWOBJ of the result of collections.OrderedDict(...), not a global (torch: "
                                           "'Can only create new object for nn.Parameter"),
    (b"\x80\x02" + OD + b")RK\x01a.", False, "APPEND on the result of collections.OrderedDict(...) (torch: 'Can only append to lists')"),
    (b"\x80\x02}(K\x01e.", False, "APPENDS on dict (torch: 'Can only extend lists')"),
    (b"\x80\x02]K\x01K\x02s.", False, "SETITEM on list (torch: 'Can only SETITEM for dict, collections.OrderedDict"),
    (b"\x80\x02c__builtin__\nset\n)RK\x01K\x02s.", False, "SETITEM on the result of __builtin__.set(...)"),
    (b"\x80\x02" + OD + b")R}b.", True, None),
    (b"\x80\x02" + OD + b")RK\x01K\x02s.", True, None),
    (b"\x80\x02ccollections\nCounter\n)RK\x01K\x02s.", True, None),
    (b"\x80\x02" + OD + b")\x81.", True, None),
    (b"\x80\x02c__builtin__\nset\n)R}b.", True, None),
    (b"\x80\x02]K\x01a.", True, None),
]


@pytest.mark.parametrize("pkl, loads, reason", TARGETS)
def test_opcode_targets_are_judged_as_torch_judges_them(tmp_path, pkl, loads, reason):
    r = inspect_file(write(tmp_path, "t.pt", in_zip(pkl)))
    assert r.weights_only is loads, r.weights_only_reasons
    if reason is not None:
        assert any(x.startswith(reason) for x in r.weights_only_reasons), r.weights_only_reasons


def test_the_walk_records_only_the_targets_torch_refuses():
    res = pickle_vm.walk(b"\x80\x02" + OD + b")RK\x01a]K\x02a}(K\x03e0" + OD + b")R)R0" + OD + b")R)\x810.")
    assert res.complete and res.call_targets == {("REDUCE", "collections.OrderedDict"): 1, ("NEWOBJ", "collections.OrderedDict"): 1}
    assert res.append_targets == {("APPEND", "collections.OrderedDict"): 1, ("APPENDS", "SDict"): 1}


# ------------------------------------------------------------------ 4. a pickle that was not read
def claim_size(data: bytes, name: bytes, size: int) -> bytes:
    """The zip with its central directory saying ``name`` is ``size`` bytes (compressed and not)."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        n = struct.unpack_from("<H", out, at + 28)[0]
        if bytes(out[at + 46:at + 46 + n]) == name:
            struct.pack_into("<II", out, at + 20, size, size)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def test_a_data_pkl_too_big_to_read_is_not_called_safe(tmp_path, cli):
    """The directory claims a 600 MB data.pkl (over the 512 MiB read): nothing in it was checked, so the verdict is
    no and the exit 1 (it was weights_only None and exit 0, with no word of warning)."""
    path = write(tmp_path, "big.pt", claim_size(cb.torch_zip(cb.cnn(), prefix="big"), b"big/data.pkl", 600_000_000))
    r = inspect_file(path)
    assert r.format == "torch-zip" and r.weights_only is False
    # (a size past the end of the file: torch's zip reader refuses the archive too; zipfile's reading is judged)
    assert "not read, so not checked: big/data.pkl is 600000000 bytes, more than the 536870912 read" in r.weights_only_reasons
    assert any(n.startswith("nothing in the unread pickle was checked (big/data.pkl is 600000000 bytes") for n in r.notes)
    assert any(a.startswith("cudaenv did not read the pickle torch.load would run (big/data.pkl is") for a in r.advice)
    assert r.verdict == "inconclusive" and r.verdict_reasons[0].where == "big/data.pkl"
    res = cli("checkpoint", "inspect", path)
    assert res.code == 4 and "weights_only: torch.load(weights_only=True) on torch 2.13 in a fresh process: no" in " ".join(res.out.split())
    assert cli("checkpoint", "fix", path, "-o", str(tmp_path / "o.pt"), "--map-location", "cpu").code == 2


# ------------------------------------------------------------------ 5. the first unsupported opcode, in stream order
def first_seen_by_genops(data: bytes, wanted) -> list:
    order = []
    for op, _, _ in pickletools.genops(data):
        code = op.code.encode("latin-1")[0]
        if code in wanted and code not in order:
            order.append(code)
    return order


def test_the_protocol4_reason_quotes_the_opcode_torch_stops_at(tmp_path):
    """Opcodes were sorted: 'Unsupported operand 140' (SHORT_BINUNICODE) while torch says 149 (FRAME comes first)."""
    data = cb.torch_zip(cb.cnn(), protocol=4)
    r = inspect_file(write(tmp_path, "p4.pt", data))
    reason = [x for x in r.weights_only_reasons if x.startswith("opcodes weights_only does not support")][0]
    assert reason.startswith("opcodes weights_only does not support: FRAME (149), ") and reason.endswith("(torch: 'Unsupported operand 149')")
    pkl = cb.dumps(cb.cnn(), 4)
    listed = [int(part.rsplit("(", 1)[1].rstrip(")")) for part in reason.split(": ", 1)[1].split(" (torch")[0].split(", ")]
    assert listed == first_seen_by_genops(pkl, set(listed)) and len(listed) >= 4


@pytest.mark.parametrize("body, first", [(b"K\x010N\x94.", 48), (b"N\x94K\x012\x30.", 148), (b"N2\x94.", 50)])
def test_first_seen_follows_the_bytes(body, first):
    data = b"\x80\x02" + body
    res = pickle_vm.walk(data)
    wanted = [op for op in res.opcodes if op in (0x30, 0x32, 0x94)]
    assert pickle_vm.first_seen(res, wanted) == first_seen_by_genops(data, set(wanted))
    assert pickle_vm.first_seen(res, wanted)[0] == first


# ------------------------------------------------------------------ 6. storage records torch's reader refuses
def local_header_at(data: bytes, name: bytes) -> int:
    """Where the local header of ``name`` starts, as the central directory says."""
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        n = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + n] == name:
            return struct.unpack_from("<I", data, at + 42)[0]
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError("no %r in the directory" % name)


@pytest.mark.parametrize("whole", [True, False], ids=["read-once", "read-per-record"])
def test_a_record_whose_local_header_is_gone_is_refused_either_way_it_is_read(tmp_path, monkeypatch, whole):
    """record_refusals reads a small archive once and a large one 30 bytes per record: both find the record whose
    local header is not there (miniz: invalid header), and only that one."""
    from cudaenv.checkpoint import reading

    data = bytearray(cb.torch_zip(cb.cnn(), prefix="m"))
    at = local_header_at(bytes(data), b"m/data/0")
    data[at:at + 4] = b"XX\x03\x04"
    if not whole:
        monkeypatch.setattr(reading, "_READ_WHOLE", 0)
    r = inspect_file(write(tmp_path, "m.pt", bytes(data)))
    refused = [p for p in r.inconsistencies if p.startswith("record data/")]
    assert refused == ["record data/0: its local header is not there (miniz: invalid header or corrupted)"]
    assert r.weights_only is False


@pytest.mark.parametrize("key, why", [
    (b"}", "a dict key is a dict"),
    (b"]", "a dict key is a list"),
    (b"}\x85", "a dict key is a tuple holding a dict"),  # (TUPLE1 of an empty dict)
    (b"K\x01}\x86", "a dict key is a tuple holding a dict"),
])
def test_an_unhashable_dict_key_is_found_through_a_tuple_too(tmp_path, key, why):
    """torch raises building the dict (TypeError: unhashable type): the key walk finds it, also inside a tuple key."""
    r = inspect_file(write(tmp_path, "k.pt", in_zip(b"\x80\x02}" + key + b"K\x01s.")))
    assert r.weights_only is False
    assert any(reason.startswith(why + ",") or reason.startswith(why + " ") for reason in r.weights_only_reasons), r.weights_only_reasons


def test_hashable_keys_of_every_scalar_kind_raise_nothing(tmp_path):
    r = inspect_file(write(tmp_path, "k.pt", in_zip(b"\x80\x02}(X\x01\x00\x00\x00aK\x01K\x02K\x03G?\xf0\x00\x00\x00\x00\x00\x00K\x04\x88K\x05NK\x06K\x07K\x08\x86K\tu.")))
    assert not any("hashable" in reason for reason in r.weights_only_reasons), r.weights_only_reasons
