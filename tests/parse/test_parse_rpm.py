"""rpm header blobs (cudaenv.parse.rpm), constructed by tests/rpm_builders.py in rpm's documented layout: name,
version, release and epoch, with or without the magic, truncated by a bounded read; any bytes never raise."""

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from rpm_builders import rpm_header
from cudaenv.parse.rpm import parse_rpm_header


def test_name_version_release_epoch():
    blob = rpm_header("nvidia-container-toolkit", "1.17.8", "1", epoch=None)
    assert parse_rpm_header(blob) == ("nvidia-container-toolkit", "1.17.8", "1", None)
    assert parse_rpm_header(rpm_header("libnvidia-container1", "1.17.8", "1", epoch=3, magic=True)) == (
        "libnvidia-container1", "1.17.8", "1", 3)
    assert parse_rpm_header(memoryview(rpm_header("x"))) == ("x", None, None, None)


def test_a_truncated_blob_gives_what_lies_inside_it():
    blob = rpm_header("cuda-toolkit-12-4", "12.4.1", "1", filler=2000)
    assert parse_rpm_header(blob[:60]) is None  # the name's string lies past the cut
    cut = parse_rpm_header(rpm_header("a", "1", "2")[:-2])
    assert cut == ("a", "1", None, None)


def test_what_is_not_a_header():
    assert parse_rpm_header(b"") is None and parse_rpm_header("text") is None
    assert parse_rpm_header(struct.pack(">II", 0, 0)) is None
    assert parse_rpm_header(struct.pack(">II", 10 ** 6, 4)) is None
    assert parse_rpm_header(rpm_header("")) is None


@settings(max_examples=200)
@given(st.binary(max_size=4096), st.integers(0, 40), st.integers(0, 4096))
def test_any_bytes_never_raise(data, il, dl):
    parse_rpm_header(data)
    parse_rpm_header(struct.pack(">II", il, dl) + data)
