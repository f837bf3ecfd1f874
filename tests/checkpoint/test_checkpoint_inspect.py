"""`cudaenv checkpoint inspect`: hand-built checkpoints (tests/checkpoint_builders.py, the stdlib pickler writing the
opcodes torch 2.13 writes), no torch. Malicious pickles are only ever read: a marker file they would create never
appears."""

import io
import json
import struct
import zipfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import checkpoint_builders as cb
from builders import TOOLS, recorded
from cudaenv.checkpoint import nodes, pickle_vm
from cudaenv.checkpoint.analyze import inspect_file
from cudaenv.checkpoint.names import wrapper_chain
from cudaenv.checkpoint.report import CheckpointReport, VisibleGpus


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def report_of(tmp_path, data, name="ckpt.pt", visible=None):
    return inspect_file(write(tmp_path, name, data), visible)


def devices(r):
    return {(d.device, d.via): d.count for d in r.devices}


def dtypes(r):
    return {d.dtype: d.count for d in r.dtypes}


def prefixes(r):
    return {(p.container, p.prefix, p.where): (p.keys, p.of) for p in r.prefixes}


# ------------------------------------------------------------------ devices and memo
def test_cuda2_storages_are_counted_through_the_memoized_location(tmp_path):
    data = cb.torch_zip(cb.cnn("cuda:2"), prefix="cnn_sd")
    assert data.count(b"cuda:2") == 1  # one string, BINGET for the others (a constant tagger)
    r = report_of(tmp_path, data)
    assert r.format == "torch-zip" and r.archive_prefix == "cnn_sd"
    assert devices(r) == {("cuda:2", "storage"): 6}
    assert r.tensors == 6 and r.storages == 6
    assert r.total_bytes == (216 + 8 + 8 + 8 + 32 + 4) * 4
    assert dtypes(r) == {"float32": 6}
    assert r.weights_only is True and not r.security and not r.inconsistencies
    assert dict(r.markers)["byteorder"] == "little" and dict(r.markers)["format_version"] == "1"


def test_mixed_devices_each_string_its_own(tmp_path):
    sd = cb.state_dict([("a", cb.Tensor(cb.Storage("0", 4, "".join(["cuda:", "0"])), (4,))),
                        ("b", cb.Tensor(cb.Storage("1", 4, "".join(["cuda:", "1"])), (4,))),
                        ("c", cb.Tensor(cb.Storage("2", 4, "".join(["cuda:", "1"])), (4,))),
                        ("d", cb.Tensor(cb.Storage("3", 4, "cpu"), (4,)))])
    r = report_of(tmp_path, cb.torch_zip(sd))
    assert devices(r) == {("cuda:1", "storage"): 2, ("cuda:0", "storage"): 1, ("cpu", "storage"): 1}


def test_advice_maps_cuda2_to_the_one_visible_gpu(tmp_path):
    r = report_of(tmp_path, cb.torch_zip(cb.cnn("cuda:2")), visible=VisibleGpus(1, ("cuda:0",)))
    text = " ".join(r.advice)
    assert 'map_location={"cuda:2": "cuda:0"}' in text and "this machine sees 1 GPU (cuda:0)" in text
    r0 = report_of(tmp_path, cb.torch_zip(cb.cnn("cuda:2")), visible=VisibleGpus(0))
    assert 'map_location="cpu"' in " ".join(r0.advice) and "--map-location cpu" in " ".join(r0.advice)


def test_tied_weights_and_views_count_one_storage(tmp_path):
    shared = cb.Storage("0", 100)
    sd = cb.state_dict([("emb.weight", cb.Tensor(shared, (10, 10))), ("head.weight", cb.Tensor(shared, (10, 10))),
                        ("view", cb.Tensor(shared, (5,), offset=50)), ("t", cb.Tensor(shared, (10, 10), stride=(1, 10)))])
    r = report_of(tmp_path, cb.torch_zip(sd))
    assert r.storages == 1 and r.total_bytes == 400 and r.tensors == 4
    assert not r.inconsistencies


def test_record_size_mismatch_is_an_inconsistency(tmp_path):
    r = report_of(tmp_path, cb.torch_zip(cb.cnn(), record_sizes={"0": 100}))
    assert any("data/0 is 100 bytes" in p and "216 elements" in p for p in r.inconsistencies)
    assert r.weights_only is False


def test_view_past_its_storage_is_an_inconsistency(tmp_path):
    sd = cb.state_dict([("w", cb.Tensor(cb.Storage("0", 10), (5,), offset=8))])
    r = report_of(tmp_path, cb.torch_zip(sd))
    assert any("reaches element 13 of storage 0" in p for p in r.inconsistencies)


def test_v3_dtype_comes_from_the_dtype_global(tmp_path):
    sd = cb.state_dict([("u", cb.Tensor(cb.Storage("0", 8, kind="UntypedStorage"), (4,), dtype="uint16")),
                        ("f8", cb.Tensor(cb.Storage("1", 4, kind="UntypedStorage"), (4,), dtype="float8_e4m3fn")),
                        ("h", cb.Tensor(cb.Storage("2", 4, kind="HalfStorage"), (4,)))])
    r = report_of(tmp_path, cb.torch_zip(sd))
    assert dtypes(r) == {"uint16": 1, "float8_e4m3fn": 1, "float16": 1}
    assert r.total_bytes == 8 + 4 + 8 and not r.inconsistencies and r.weights_only


def test_devices_outside_the_storage_tuple(tmp_path):
    meta = cb.Reduce(cb.glob("torch._utils", "_rebuild_meta_tensor_no_storage"), (cb.glob("torch", "float32"), (2, 2), (2, 1), False))
    xla = cb.Reduce(cb.glob("torch._utils", "_rebuild_device_tensor_from_cpu_tensor"),
                    (cb.Tensor(cb.Storage("0", 4), (4,)), cb.glob("torch", "float32"), "xla:0", False))
    dev = cb.Reduce(cb.glob("torch", "device"), ("cuda", 3))
    r = report_of(tmp_path, cb.torch_zip({"m": meta, "x": xla, "where": dev}))
    d = devices(r)
    assert d[("meta", "meta")] == 1 and d[("xla:0", "rebuild-argument")] == 1 and d[("cuda:3", "device-value")] == 1
    assert d[("cpu", "storage")] == 1
    # a torch.device value is not a tensor: the advice says so (it said "1 tensor rebuilt on cuda:3")
    text = " ".join(r.advice)
    assert "a torch.device cuda:3 is stored in the checkpoint (a device value, not a tensor)" in text
    assert "rebuilt on cuda:3" not in text and "1 tensor rebuilt on xla:0 (rebuild-argument)" in text


# ------------------------------------------------------------------ prefixes and structure
def test_module_prefix_on_all_keys_and_in_metadata(tmp_path):
    r = report_of(tmp_path, cb.torch_zip(cb.cnn(prefix="module.")))
    p = prefixes(r)
    assert p[("", "module.", "keys")] == (6, 6)
    assert p[("", "module.", "_metadata")] == (4, 5)
    assert any("--strip-prefix module." in a for a in r.advice)


def test_mixed_and_nested_prefixes(tmp_path):
    sd = cb.state_dict([("module.a", cb.Tensor(cb.Storage("0", 1), (1,))), ("b", cb.Tensor(cb.Storage("1", 1), (1,))),
                        ("_orig_mod.module.c", cb.Tensor(cb.Storage("2", 1), (1,))),
                        ("module._orig_mod.d", cb.Tensor(cb.Storage("3", 1), (1,)))])
    p = prefixes(report_of(tmp_path, cb.torch_zip(sd)))
    assert p[("", "module.", "keys")] == (1, 4)
    assert p[("", "_orig_mod.module.", "keys")] == (1, 4)
    assert p[("", "module._orig_mod.", "keys")] == (1, 4)
    assert wrapper_chain("_orig_mod.module.conv.weight") == "_orig_mod.module."
    assert wrapper_chain("modules.x") == ""


def test_strip_prefix_advice_is_the_same_in_every_run(tmp_path):
    """Chains of one length come in alphabetical order after the longest-first sort (they came in a set's order,
    which the string hashes change from one run to the next)."""
    sd = cb.state_dict([("module.a", cb.Tensor(cb.Storage("0", 1), (1,))),
                        ("_orig_mod.module.c", cb.Tensor(cb.Storage("2", 1), (1,))),
                        ("module._orig_mod.d", cb.Tensor(cb.Storage("3", 1), (1,)))])
    line = [a for a in report_of(tmp_path, cb.torch_zip(sd)).advice if "--strip-prefix" in a][0]
    assert "--strip-prefix _orig_mod.module. --strip-prefix module._orig_mod. --strip-prefix module. -o " in line


def test_training_checkpoint_with_optimizer_state(tmp_path):
    model = cb.cnn(prefix="module.")
    opt = {"state": {0: {"step": cb.Tensor(cb.Storage("10", 1), ()), "exp_avg": cb.Tensor(cb.Storage("11", 216), (8, 3, 3, 3))}},
           "param_groups": [{"lr": 0.001, "params": [0, 1, 2]}]}
    r = report_of(tmp_path, cb.torch_zip({"state_dict": model, "optimizer": opt, "epoch": 7}))
    assert r.kind == "training checkpoint"
    assert r.tensors == 8
    assert prefixes(r)[("state_dict", "module.", "keys")] == (6, 6)
    assert "epoch: int 7" in r.structure
    keys = {t.key for t in r.tensor_list}
    assert "optimizer.state.0.exp_avg" in keys and "state_dict.module.conv1.weight" in keys


def test_lightning_and_ema(tmp_path):
    ck = {"pytorch-lightning_version": "2.4.0", "state_dict": cb.cnn(prefix="model."), "ema": cb.cnn(start=10),
          "optimizer_states": [], "global_step": 100}
    r = report_of(tmp_path, cb.torch_zip(ck))
    assert r.kind == "lightning checkpoint with EMA weights"
    assert prefixes(r)[("state_dict", "model.", "keys")] == (6, 6)
    assert "ema: EMA weights, state_dict, 6 tensors" in r.structure
    assert "state_dict: state_dict, 6 tensors" in r.structure


@pytest.mark.parametrize("ck, kind", [
    ({"model_ema": "sd"}, "EMA weights"),
    ({"model": "sd", "state_dict_ema": "sd", "epoch": 3}, "training checkpoint with EMA weights"),
    ({"model": "sd", "epoch": 3}, "training checkpoint"),
])
def test_ema_entries_are_named_in_the_kind_and_the_structure(tmp_path, ck, kind):
    r = report_of(tmp_path, cb.torch_zip({k: cb.cnn(start=10 * i) if v == "sd" else v for i, (k, v) in enumerate(ck.items())}))
    assert r.kind == kind
    ema = [s for s in r.structure if "EMA" in s]
    assert ema == [s for s in r.structure if s.split(":")[0] in ("model_ema", "state_dict_ema")]
    assert all(s.endswith(": EMA weights, state_dict, 6 tensors") for s in ema)


def test_parameters_are_one_tensor_each(tmp_path):
    sd = cb.state_dict([("w", cb.Parameter(cb.Tensor(cb.Storage("0", 4), (4,))))])
    r = report_of(tmp_path, cb.torch_zip(sd))
    assert r.tensors == 1 and r.weights_only


# ------------------------------------------------------------------ formats
def test_legacy_layout_is_computed_without_reading_the_data(tmp_path):
    r = report_of(tmp_path, cb.legacy_file(cb.cnn("cuda:1")))
    assert r.format == "torch-legacy"
    assert devices(r) == {("cuda:1", "storage"): 6}
    assert dict(r.markers)["byteorder"] == "little" and dict(r.markers)["legacy_protocol"] == "1001"
    assert not r.inconsistencies and r.weights_only


def test_legacy_truncated_data_is_named(tmp_path):
    data = cb.legacy_file(cb.cnn())
    r = report_of(tmp_path, data[:-10])
    assert any("legacy data section ends" in p or "ends before" in p for p in r.inconsistencies)


def test_big_endian_byteorder_and_other_prefix(tmp_path):
    r = report_of(tmp_path, cb.torch_zip(cb.cnn(), prefix="my.model.v2", byteorder="big"))
    assert dict(r.markers)["byteorder"] == "big" and r.archive_prefix == "my.model.v2"
    assert any("big-endian" in n for n in r.notes)


def test_zip64_entries_are_read(tmp_path):
    data = cb.torch_zip(cb.cnn("cuda:1", prefix="module."), zip64=True)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:  # the builder really wrote ZIP64 local headers
        for info in zf.infolist():
            name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
            assert extra_len and data[info.header_offset + 30 + name_len:][:2] == b"\x01\x00"
    r = report_of(tmp_path, data)
    assert r.format == "torch-zip" and devices(r) == {("cuda:1", "storage"): 6} and not r.inconsistencies
    assert r.weights_only is True and r.total_bytes == sum(4 * n for n in (216, 8, 8, 8, 32, 4))


def test_bytes_before_the_zip_make_it_fail_like_torch(tmp_path, cli):
    """torch.load reads a file as a zip only when it starts with PK\\x03\\x04 (torch/serialization.py _is_zipfile):
    with bytes in front it reads a pickle and fails. The zip is still read for what it holds; the verdict is no, and
    the command exits 1 (it exited 0 and said weights_only yes)."""
    data = b"#!junk header\n" * 7 + cb.torch_zip(cb.cnn("cuda:3"))
    r = report_of(tmp_path, data)
    assert r.format == "torch-zip" and devices(r) == {("cuda:3", "storage"): 6}
    assert r.inconsistencies[0].startswith("98 bytes before the zip archive: torch.load reads a file as a zip only")
    assert r.weights_only is False and any("98 bytes before the zip" in x for x in r.weights_only_reasons)
    res = cli("checkpoint", "inspect", write(tmp_path, "pre.pt", data))
    assert res.code == 1 and "98 bytes before the zip archive" in " ".join(res.out.split())


def test_two_archive_prefixes_are_refused_like_torch(tmp_path):
    r = report_of(tmp_path, cb.torch_zip(cb.cnn(), prefix="y", extra=[("x/other", b"1")]))
    assert any("archive prefixes" in p for p in r.inconsistencies) and r.weights_only is False


def test_duplicate_data_pkl_last_one_wins(tmp_path):
    first = cb.dumps(cb.cnn("cpu"))
    buf = cb.torch_zip(cb.cnn("cuda:5"), prefix="y")
    import io

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buf)) as src, zipfile.ZipFile(out, "w") as dst:
        dst.writestr("y/data.pkl", first)
        for info in src.infolist():
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dst.writestr(info.filename, src.read(info.filename))
    r = report_of(tmp_path, out.getvalue())
    assert devices(r) == {("cuda:5", "storage"): 6}


def test_zero_crc_is_read_anyway(tmp_path):
    data = bytearray(cb.torch_zip(cb.cnn("cuda:2")))
    # zero every CRC (local headers and central directory), as compute_crc32=False writes
    for sig, off in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        i = data.find(sig)
        while i >= 0:
            data[i + off:i + off + 4] = b"\0\0\0\0"
            i = data.find(sig, i + 4)
    r = report_of(tmp_path, bytes(data))
    assert devices(r) == {("cuda:2", "storage"): 6}


def test_torchscript_is_named_and_refused(tmp_path):
    data = cb.torch_zip(cb.Reduce(cb.glob("__torch__", "M"), ()), prefix="scripted",
                        extra=[("scripted/constants.pkl", cb.dumps(())), ("scripted/code/__torch__.py", b"class M: pass")])
    r = report_of(tmp_path, data)
    assert r.format == "torchscript" and r.kind == "TorchScript module" and r.weights_only is False


def test_whole_module_pickle_is_named(tmp_path):
    model = cb.Reduce(cb.glob("__main__", "CNN"), (), state={"_parameters": cb.state_dict([("w", cb.Tensor(cb.Storage("0", 4), (4,)))])})
    r = report_of(tmp_path, cb.torch_zip(model))
    assert r.kind == "whole module (torch.save(model))" and r.whole_module == "__main__.CNN"
    assert r.tensors == 1 and r.weights_only is False
    assert any(g.name == "__main__.CNN" and g.verdict == "not-allowed" for g in r.globals)


def test_safetensors_header_only(tmp_path):
    data = cb.safetensors_file({"module.w": ("F32", (2, 3), 24), "module.b": ("BF16", (3,), 6)}, {"format": "pt"})
    r = report_of(tmp_path, data, "m.safetensors")
    assert r.format == "safetensors" and r.tensors == 2 and r.total_bytes == 30
    assert dtypes(r) == {"float32": 1, "bfloat16": 1}
    assert prefixes(r)[("", "module.", "keys")] == (2, 2)
    assert any("no device" in n for n in r.notes) and not r.inconsistencies


def test_safetensors_wrong_offsets(tmp_path):
    data = cb.safetensors_file({"w": ("F32", (2, 3), 20)})
    r = report_of(tmp_path, data, "m.safetensors")
    assert any("24 bytes" in p for p in r.inconsistencies)


def test_protocol4_fails_weights_only_by_opcode(tmp_path):
    r = report_of(tmp_path, cb.torch_zip(cb.cnn(), protocol=4))
    assert r.weights_only is False
    assert any("FRAME (149)" in x for x in r.weights_only_reasons)
    assert devices(r) == {("cpu", "storage"): 6}  # still read: MEMOIZE and STACK_GLOBAL followed


# ------------------------------------------------------------------ malicious pickles
def _payload_zip(tmp_path, data_pkl):
    return write(tmp_path, "evil.pt", cb.torch_zip(None, prefix="evil", data_pkl=data_pkl))


def _marker_cmd(tmp_path):
    marker = tmp_path / "PWNED"
    return marker, ("touch %s" % marker).encode()


def _sbu(s: bytes) -> bytes:
    return b"\x8c" + bytes([len(s)]) + s


def test_reduce_of_os_system_never_runs_and_is_named(tmp_path, cli):
    marker, cmd = _marker_cmd(tmp_path)
    pkl = b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"\x85R."
    path = _payload_zip(tmp_path, pkl)
    r = inspect_file(path)
    assert [g.verdict for g in r.globals if g.name == "os.system"] == ["dangerous"]
    assert r.weights_only is False and any("os.system" in s for s in r.security)
    res = cli("checkpoint", "inspect", path)
    assert res.code == 3 and "os.system" in res.out and "SECURITY" in res.out
    assert not marker.exists()


def test_stack_global_with_mixed_memo_resolves_to_the_real_name(tmp_path):
    # picklescan#14: BINPUT 5 then MEMOIZE (index 1, not 0): the module is memo[1] = "os", not "collections"
    marker, cmd = _marker_cmd(tmp_path)
    pkl = (b"\x80\x04" + _sbu(b"collections") + b"q\x05" + _sbu(b"os") + b"\x94" + b"0" + b"0"
           + b"h\x01" + _sbu(b"system") + b"\x93" + _sbu(cmd) + b"\x85R.")
    r = inspect_file(_payload_zip(tmp_path, pkl))
    names = {g.name: g.verdict for g in r.globals}
    assert names == {"os.system": "dangerous"}
    assert r.weights_only is False and not marker.exists()


def test_stack_global_of_a_computed_name_is_flagged(tmp_path):
    # modelscan#85-style: the module comes out of a call, not a string: nothing a scanner can read off the stream
    pkl = (b"\x80\x04" + b"cbuiltins\nstr\n" + _sbu(b"os") + b"\x85R" + _sbu(b"system") + b"\x93" + _sbu(b"true") + b"\x85R.")
    r = inspect_file(_payload_zip(tmp_path, pkl))
    assert any("computed" in s for s in r.security)
    assert r.weights_only is False


def test_getattr_import_chain_and_hub_are_named(tmp_path):
    pkl = (b"\x80\x02cbuiltins\ngetattr\ncbuiltins\n__import__\nX\x02\x00\x00\x00os\x85RX\x06\x00\x00\x00system\x86R"
           b"X\x04\x00\x00\x00true\x85R0ctorch.hub\nload\nX\x01\x00\x00\x00x\x85R.")
    r = inspect_file(_payload_zip(tmp_path, pkl))
    verdicts = {g.name: g.verdict for g in r.globals}
    assert verdicts == {"builtins.getattr": "dangerous", "builtins.__import__": "dangerous", "torch.hub.load": "dangerous"}


def test_tensor_bytes_that_look_like_a_pickle_are_not_scanned(tmp_path):
    sd = cb.state_dict([("w", cb.Tensor(cb.Storage("0", 14, kind="ByteStorage"), (14,)))])
    data = cb.torch_zip(sd).replace(cb.pattern("0", 14), b"\x80\x02cos\nsystem\n.", 1)
    assert b"cos\nsystem" in data
    r = report_of(tmp_path, data)
    assert r.weights_only is True and not r.security


def test_legacy_module_persistent_id(tmp_path):
    pkl = b"\x80\x02(X\x06\x00\x00\x00modulecuser\nNet\nX\x06\x00\x00\x00net.pyX\x00\x00\x00\x00tQ."
    r = report_of(tmp_path, pkl, "raw.pkl")
    assert r.format == "pickle" and r.kind == "whole module (torch.save(model))"
    assert r.weights_only is False


# ------------------------------------------------------------------ the machine walk itself
def test_walk_limits_and_broken_input():
    assert not pickle_vm.walk(b"").complete
    res = pickle_vm.walk(b"\x80\x02" + b"(" * 50 + b".", limits=pickle_vm.Limits(max_stack=10))
    assert not res.complete and res.notes
    res = pickle_vm.walk(b"X\xff\xff\xff\xff")
    assert not res.complete and "runs past" in res.notes[0]
    res = pickle_vm.walk(b"\x80\x02X\x05\x00\x00\x00hello.", limits=pickle_vm.Limits(max_string=2))
    assert res.complete and isinstance(res.root, nodes.Blob)
    res = pickle_vm.walk(b"h\x07.")
    assert "never stored" in res.notes[0]


def test_every_length_prefixed_string_opcode_reads_as_pickle_does():
    """Each protocol's counted strings and bytes (BINUNICODE8 used to keep its 8 length bytes as text, and as bytes)."""
    import pickle
    import struct

    cases = [
        (b"\x8c\x05hello", "hello"), (b"\x8d" + struct.pack("<Q", 5) + b"hello", "hello"),
        (b"U\x03abc", b"abc"), (b"T" + struct.pack("<i", 3) + b"abc", b"abc"),
        (b"C\x03abc", b"abc"), (b"B" + struct.pack("<I", 3) + b"abc", b"abc"),
        (b"\x8e" + struct.pack("<Q", 3) + b"abc", b"abc"),
    ]
    for body, want in cases:
        data = b"\x80\x04" + body + b"."
        assert pickle.loads(data, encoding="bytes") == want  # the bytes are a real pickle of `want`
        res = pickle_vm.walk(data)
        assert res.complete and not res.notes, (body, res.notes)
        got = res.root
        if isinstance(want, str):
            assert got == want
        else:  # bytes are never read: a Blob (BINBYTES*) or the short bytes themselves (BINSTRING*)
            assert (isinstance(got, nodes.Blob) and got.length == 3) or bytes(got) == want
    assert "runs past" in pickle_vm.walk(b"\x80\x04\x8d" + struct.pack("<Q", 99) + b"hi.").notes[0]


def test_cli_json_is_a_registered_record(tmp_path, cli):
    path = write(tmp_path, "a.pt", cb.torch_zip(cb.cnn("cuda:2", prefix="module.")))
    res = cli("checkpoint", "inspect", "--json", path)
    data = json.loads(res.out)
    assert data["schema_version"] == 1 and data["devices"][0] == {"device": "cuda:2", "count": 6, "via": "storage"}
    back = CheckpointReport.from_dict(data)
    assert back.tensors == 6 and back.prefixes[0].prefix == "module."
    assert res.code == 1  # cuda:2 does not load here without a mapping


def test_cli_reads_visible_gpus_through_nvidia_smi(tmp_path, cli, fake_bin):
    fake_bin.command("nvidia-smi", by_args={"-L": (recorded("smi-list-h100nvl-mig.txt"), 0)})
    path = write(tmp_path, "a.pt", cb.torch_zip(cb.cnn("cuda:2")))
    res = cli("checkpoint", "inspect", path, env={"PATH": "%s:%s" % (fake_bin.path, TOOLS)})
    flat = " ".join(res.out.split())
    assert "this machine sees 1 GPU (cuda:0)" in flat
    assert 'map_location={"cuda:2": "cuda:0"}' in flat


def test_cli_escapes_hostile_keys(tmp_path, cli):
    sd = cb.state_dict([("evil\x1b[2J\nkey", cb.Tensor(cb.Storage("0", 1), (1,)))])
    res = cli("checkpoint", "inspect", write(tmp_path, "a.pt", cb.torch_zip(sd)))
    assert "\x1b" not in res.out and "\\x1b[2J" in res.out


def test_cli_usage_errors(tmp_path, cli):
    assert cli("checkpoint", "inspect", str(tmp_path / "missing.pt")).code == 2
    assert cli("checkpoint", "inspect", str(tmp_path)).code == 2


# ------------------------------------------------------------------ never a crash
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_crash(tmp_path, data):
    r = report_of(tmp_path, data)
    assert isinstance(r, CheckpointReport)


_BASE = [cb.torch_zip(cb.cnn("cuda:2", prefix="module.")), cb.legacy_file(cb.cnn()), cb.torch_zip(cb.cnn(), protocol=4)]


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(range(len(_BASE))), st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), max_size=8),
       st.integers(0, 10 ** 6))
@example(which=0, edits=[(3218, 1)], cut=0)  # found by hypothesis: a central-directory offset before the zip
def test_mutated_checkpoints_never_crash(tmp_path, which, edits, cut):
    data = bytearray(_BASE[which])
    for pos, value in edits:
        data[pos % len(data)] = value
    data = bytes(data[: max(1, len(data) - cut % 64)])
    r = report_of(tmp_path, data)
    assert isinstance(r, CheckpointReport)


def test_pickle_walk_follows_the_stdlib_on_plain_data():
    import pickle

    value = {"a": [1, 2.5, "x", None, True], "b": (1, 2), 3: {"n": -7, "big": 2 ** 70}}
    for proto in range(0, 6):
        res = pickle_vm.walk(pickle.dumps(value, proto))
        assert res.complete, proto
        pairs = dict(res.root.pairs)
        assert pairs["a"].items == [1, 2.5, "x", None, True]
        assert pairs["b"] == (1, 2) and dict(pairs[3].pairs) == {"n": -7, "big": 2 ** 70}


@settings(max_examples=300)
@given(st.binary(max_size=512), st.sampled_from([b"", b"\x80\x02", b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00"]))
def test_walk_of_any_bytes_ends_in_stop_or_a_note(data, head):
    res = pickle_vm.walk(head + data, limits=pickle_vm.Limits(max_ops=5000, max_memo=100, max_stack=100, max_string=64))
    assert res.complete or res.notes
    assert sum(res.opcodes.values()) <= 5000 + 1024


def test_walk_bounds_are_enforced_on_the_memo_and_the_stack():
    many_puts = b"\x80\x02N" + b"".join(b"r" + struct.pack("<I", i) for i in range(5000)) + b"."
    res = pickle_vm.walk(many_puts, limits=pickle_vm.Limits(max_memo=1000))
    assert not res.complete and "memo passes 1000" in res.notes[0]
    deep = b"\x80\x02" + b"N" * 5000 + b"."
    res = pickle_vm.walk(deep, limits=pickle_vm.Limits(max_stack=1000))
    assert not res.complete and "stack passes 1000" in res.notes[0]
    assert pickle_vm.walk(deep).complete


def _directory_as_zipfile_reads_it(data: bytes):
    try:
        return [(i.filename, i.header_offset, i.compress_size, i.file_size, i.compress_type, i.CRC)
                for i in zipfile.ZipFile(io.BytesIO(data)).infolist()]
    except zipfile.BadZipFile as exc:
        return ("error", str(exc))
    except (ValueError, NotImplementedError, struct.error, EOFError) as exc:
        return ("error", type(exc).__name__)


def _directory_as_cudaenv_reads_it(data: bytes):
    from cudaenv.checkpoint.zipdir import BadZip, read_directory

    try:
        return [(e.name, e.header_offset, e.compress_size, e.file_size, e.compress_type, e.crc) for e in read_directory(io.BytesIO(data))]
    except BadZip as exc:
        return ("error", str(exc))
    except (ValueError, NotImplementedError, struct.error, EOFError) as exc:
        return ("error", type(exc).__name__)


def _zip_samples():
    plain = cb.torch_zip(cb.cnn())
    z64 = cb.torch_zip(cb.cnn(), zip64=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a/data.pkl", b"x")
        zf.writestr("a/\u00e9t\u00e9", b"y")  # a UTF-8-flagged name
        zf.comment = b"an archive comment"
    return [plain, z64, b"#!/bin/sh\nprepended\n" + plain, buf.getvalue()]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_zip_samples()), st.lists(st.tuples(st.integers(min_value=1, max_value=400), st.integers(0, 255)), max_size=4),
       st.integers(min_value=0, max_value=10))
def test_the_zip_directory_is_read_as_zipfile_reads_it(data, edits, cut):
    """container.read_directory (zipfile stays unimported: it costs more than inspecting a small file) gives
    zipfile's entries, offsets and sizes, and its error for a damaged directory, for real and mutated archives."""
    raw = bytearray(data)
    for back, value in edits:  # the directory and end records are at the end
        raw[max(0, len(raw) - back)] = value
    raw = bytes(raw[: len(raw) - cut * 7])
    assert _directory_as_cudaenv_reads_it(raw) == _directory_as_zipfile_reads_it(raw)


def test_both_rewrites_are_offered_as_one_command_that_pastes(tmp_path):
    """Saved on cuda:2 with `module.` keys, on a machine without a GPU: besides the two fixes, one command does both,
    and it is printed as a shell reads it (its last words are flags, continued with ` \\` when the line is full)."""
    from cudaenv.checkpoint.report import VisibleGpus
    from cudaenv.render.checkpoint import render_inspect

    path = tmp_path / "dp.pt"
    path.write_bytes(cb.torch_zip(cb.cnn("cuda:2", prefix="module.")))
    r = inspect_file(str(path), VisibleGpus(0, (), "no nvidia-smi"))
    both = [a for a in r.advice if a.startswith("both in one rewrite: ")]
    assert len(both) == 1 and both[0].endswith("--map-location cpu --strip-prefix module. -o %s -- %s" % (tmp_path / "dp.fixed.pt", path))
    text = render_inspect(r, 60)
    block = [line for line in text[text.index("both in one rewrite:"):].split("\n")[1:] if line.startswith("      ")]
    assert len(block) > 1 and all(line.endswith(" \\") for line in block[:-1]) and not block[-1].endswith("\\")
    cmd = " ".join(line.strip().rstrip("\\").strip() for line in block)
    assert cmd == "cudaenv checkpoint fix --map-location cpu --strip-prefix module. -o %s -- %s" % (tmp_path / "dp.fixed.pt", path)



def test_the_more_keys_line_counts_every_key_not_the_capped_list(tmp_path):
    # issue 27: a 64-key state_dict printed "... 36 more keys" (41 capped entries less 5 shown)
    from cudaenv.render.checkpoint import render_inspect

    items = [("layer%d.weight" % i, cb.Tensor(cb.Storage(str(i), 4, "cpu"), (4,))) for i in range(64)]
    r = report_of(tmp_path, cb.torch_zip(cb.state_dict(items)))
    assert r.key_count == 64 and r.kind == "state_dict"
    text = render_inspect(r)
    assert "... 59 more keys (--json lists the first 40)" in text, text
    assert "more keys" not in " ".join(line for line in text.splitlines() if "key" in line and "59" not in line)
