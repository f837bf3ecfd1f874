"""A wheel's METADATA headers: one scan (parse/toolkit_files) for ``Version:`` and ``Name:`` (uninstall's pip reading
used its own regex and its own PEP 503 normalisation)."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.parse import toolkit_files

METADATA = "Metadata-Version: 2.1\nName: nvidia-cuda-nvcc-cu12\nVersion: 12.4.131\nSummary: CUDA nvcc\n"


def test_name_and_version_of_a_recorded_shape():
    assert toolkit_files.parse_dist_metadata_name(METADATA) == "nvidia-cuda-nvcc-cu12"
    assert toolkit_files.parse_dist_metadata_version(METADATA) == "12.4.131"
    assert toolkit_files.parse_dist_metadata_name("Metadata-Version: 2.1\nVersion: 1.0\n") is None
    assert toolkit_files.parse_dist_metadata_name("Name:\nVersion: 1.0\n") is None  # never the next line's word


@settings(max_examples=300)
@given(st.lists(st.one_of(st.text(alphabet="Name: \t\r_-.Nv1", max_size=20),
                          st.sampled_from(["Name: nvidia-cublas-cu12", "Name:\ttorch", "Name:", "Name:  ", "Name: a b"])),
                max_size=5))
def test_the_metadata_name_scan_matches_its_specification(lines):
    text = "\n".join(lines)
    m = re.compile(r"(?m)^Name:[ \t]*(\S+)").search(text)
    assert toolkit_files.parse_dist_metadata_name(text) == (m.group(1) if m else None)


@settings(max_examples=150)
@given(st.one_of(st.text(max_size=2000), st.binary(max_size=200), st.none(), st.integers()))
def test_any_input_gives_a_word_or_none(value):
    got = toolkit_files.parse_dist_metadata_name(value)
    assert got is None or (isinstance(got, str) and got and not any(c.isspace() for c in got))
