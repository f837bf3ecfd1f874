"""A safetensors header with values of the wrong JSON type is a one-line verdict, not a traceback (a list ``dtype``
raised TypeError: unhashable type). Hand-built headers, no library."""

import json
import struct

import pytest

from cudaenv.checkpoint.analyze import inspect_file


def safetensors_bytes(header):
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\0" * 16


@pytest.mark.parametrize("dtype", [["F32"], {"a": 1}, 7, None, True])
def test_a_dtype_that_is_not_a_string_is_named(tmp_path, cli, dtype):
    path = tmp_path / "odd.safetensors"
    path.write_bytes(safetensors_bytes({"w": {"dtype": dtype, "shape": [4], "data_offsets": [0, 16]}}))
    r = inspect_file(str(path))
    assert r.format == "safetensors"
    assert any("dtype that is not a string" in p for p in r.inconsistencies)
    res = cli("checkpoint", "inspect", str(path))
    assert res.code == 1 and "Traceback" not in res.err and "dtype that is not a string" in res.out
