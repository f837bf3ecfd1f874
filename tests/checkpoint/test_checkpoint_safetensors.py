"""`cudaenv checkpoint inspect` of files the real safetensors library writes (`safetensors.torch.save_file`, torch
marker; `nox -s torch` installs safetensors[torch]: its save_file needs numpy). With CI set, a missing safetensors
fails the test instead of skipping it, so the torch session can never pass without having run it."""

import json
import os
import struct

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from cudaenv.checkpoint.analyze import inspect_file  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def st():
    try:
        import safetensors.torch as st
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail("CI: safetensors is not installed (nox -s torch installs it): %s" % exc)
        pytest.skip("safetensors is not installed (pip install 'safetensors[torch]')")
    return st


def header_of(path):
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        return json.loads(fh.read(n)), 8 + n


def test_every_dtype_shape_and_byte_count_as_the_library_wrote_them(tmp_path, st):
    tensors = {"module.f64": torch.ones(2, dtype=torch.float64), "module.f32": torch.ones(2, 3), "f16": torch.ones(4, dtype=torch.float16),
               "bf16": torch.ones(1, 1, 5, dtype=torch.bfloat16), "i64": torch.arange(3), "i32": torch.ones(2, dtype=torch.int32),
               "i16": torch.ones(2, dtype=torch.int16), "i8": torch.ones(2, dtype=torch.int8), "u8": torch.ones(7, dtype=torch.uint8),
               "b": torch.ones(3, dtype=torch.bool), "scalar": torch.tensor(1.5), "empty": torch.zeros(0, 3),
               "e4m3": torch.zeros(4, dtype=torch.float8_e4m3fn), "e5m2": torch.zeros(2, 2, dtype=torch.float8_e5m2),
               "e4m3fnuz": torch.zeros(3, dtype=torch.float8_e4m3fnuz), "e8m0": torch.zeros(3, dtype=torch.float8_e8m0fnu),
               "u16": torch.ones(2, dtype=torch.uint16), "u32": torch.ones(2, dtype=torch.uint32), "u64": torch.ones(2, dtype=torch.uint64),
               "c64": torch.ones(2, dtype=torch.complex64)}
    path = tmp_path / "all.safetensors"
    st.save_file(tensors, str(path), metadata={"format": "pt", "epoch": "12"})
    r = inspect_file(str(path))
    assert r.format == "safetensors" and r.kind == "state_dict" and not r.inconsistencies
    assert r.tensors == r.storages == len(tensors)
    header, start = header_of(path)
    assert r.total_bytes == sum(t.nbytes for t in tensors.values()) == os.path.getsize(path) - start
    names = {str(t.dtype)[len("torch."):] for t in tensors.values()}
    assert {d.dtype for d in r.dtypes} == names and sum(d.count for d in r.dtypes) == len(tensors)
    listed = {e.key: (e.dtype, e.shape, e.device) for e in r.tensor_list}
    assert listed == {k: (str(t.dtype)[len("torch."):], tuple(t.shape), None) for k, t in tensors.items()}
    markers = dict(r.markers)
    assert markers["metadata.format"] == "pt" and markers["metadata.epoch"] == "12"
    assert header["__metadata__"] == {"format": "pt", "epoch": "12"}
    assert not r.devices and any("stores no device" in n for n in r.notes)
    assert [(p.prefix, p.keys, p.of) for p in r.prefixes if p.where == "keys"] == [("module.", 2, len(tensors))]
    back = st.load_file(str(path))  # the library reads back what the report describes
    assert {k: (v.dtype, tuple(v.shape)) for k, v in back.items()} == {k: (t.dtype, tuple(t.shape)) for k, t in tensors.items()}


def test_sub_byte_float4_is_counted_in_its_own_bits(tmp_path, st):
    packed = torch.arange(6, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)  # 6 bytes, 12 float4 elements
    path = tmp_path / "f4.safetensors"
    st.save_file({"w": packed}, str(path))
    header, _ = header_of(path)
    assert header["w"]["dtype"] == "F4" and header["w"]["shape"] == [12]
    r = inspect_file(str(path))
    assert not r.inconsistencies and r.total_bytes == 6 and {d.dtype for d in r.dtypes} == {"float4_e2m1fn_x2"}


def test_a_model_state_dict_and_what_inspect_prints(tmp_path, st, cli):
    model = nn.DataParallel(nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4)))
    sd = model.state_dict()
    path = tmp_path / "dp.safetensors"
    st.save_file(sd, str(path), metadata={"format": "pt"})
    r = inspect_file(str(path))
    assert r.tensors == len(sd) == 4 and r.total_bytes == sum(t.nbytes for t in sd.values()) == 4 * (12 + 4 + 4 + 4)
    assert [(p.prefix, p.keys, p.of) for p in r.prefixes if p.where == "keys"] == [("module.", 4, 4)]
    res = cli("checkpoint", "inspect", str(path))
    assert res.code == 0, res.err
    flat = " ".join(res.out.split())
    assert "safetensors" in flat and "float32 ×4" in flat and "stores no device" in flat and "saved on" not in flat
    data = cli("checkpoint", "inspect", "--json", str(path)).json()
    assert data["format"] == "safetensors" and data["devices"] == [] and data["total_bytes"] == r.total_bytes
    with st.safe_open(str(path), framework="pt", device="cpu") as f:  # the device is the loader's choice
        assert sorted(f.keys()) == sorted(sd) and f.metadata() == {"format": "pt"}
