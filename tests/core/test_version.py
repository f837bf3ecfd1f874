"""cudaenv.core.version: the one reading of version strings, CUDA/cuDNN ints and compute capabilities."""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import CHILD_CWD, assert_bounded
from cudaenv.core import version as v
from cudaenv.core import version_strings as strings


# ------------------------------------------------------------------------------ strict versions
@pytest.mark.parametrize("text", ["12", "12.4", "12.4.131", "11.8.20220929", "9.1.0.70", "550.54.15", "0"])
def test_versions_are_versions(text):
    assert v.is_version(text)
    assert v.parse_version("  %s\n" % text) == text


@pytest.mark.parametrize(
    "text",
    [
        "12.4$(touch /tmp/x)",  # issue 12: version.json ran code at a TAB
        "12.4`id`",
        "12.4 1",
        "12 .4",
        "12..4",
        ".12",
        "12.",
        "v12.4",
        "-1",
        "+12",
        "12.4a",
        "\u00b2",  # str.isdigit() is true for this
        "\u0663.\u0660",  # Arabic-Indic digits
        "1" * 3000,  # a 3000-digit nvcc release
        "1.2.3.4.5.6.7",  # too many parts
        "1234567890.1",  # too many digits
        "",
        None,
        12.4,
    ],
)
def test_anything_else_is_not_a_version(text):
    assert not v.is_version(text)
    assert v.parse_version(text) is None
    assert not v.is_version(" 12.4") and not v.is_version("12.4\n")  # parse_version strips; is_version is exact


def test_a_huge_value_is_cheap_to_reject():
    assert v.parse_version("9" * 60_000) is None
    assert v.cuda_from_int("9" * 60_000) is None
    assert v.version_key("9." * 60_000) == (9,) * 16

    def all_three(text):
        v.parse_version(text)
        v.cuda_from_int(text)
        v.version_key(text)

    # counted, not timed: 60,000 digits cost no more Python than 6,000 (each reader stops at a bound of its own)
    for unit in ("9", "9."):
        assert_bounded(all_three, unit * 6_000, unit * 60_000)


def test_malformed_note_is_short_and_says_what():
    note = v.malformed("/x/version.json", "12.4$(touch PWNED)" + "9" * 60_000)
    assert note.startswith("/x/version.json has a malformed version '12.4$(touch PWNED)")
    assert note.endswith("(60018 characters), ignored")
    assert len(note) < 120
    assert v.malformed("f", "12.4$(x)") == "f has a malformed version '12.4$(x)', ignored"
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language, tr

    set_language(CHINESE)  # a marked message: a Chinese run says the whole note (review: it was made unmarked)
    try:
        said = (tr(v.malformed("f", "12.4$(x)")), tr(note))
    finally:
        set_language(ENGLISH)
    assert said[0] == "f 中的版本 '12.4$(x)' 格式不对，已忽略", said
    assert said[1].startswith("/x/version.json 中的版本 '12.4$(touch PWNED)") and said[1].endswith("（60018 个字符）格式不对，已忽略")


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=2000), st.binary(max_size=2000).map(lambda b: b.decode("utf-8", "surrogateescape"))))
def test_strict_reading_never_raises_and_is_digits_and_dots(text):
    value = v.parse_version(text)
    if value is not None:
        assert value == text.strip()
        assert set(value) <= set("0123456789.")
        assert len(value.split(".")) <= v.MAX_PARTS
    assert v.is_version(text) == (value == text)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 10 ** v.MAX_DIGITS - 1), min_size=1, max_size=v.MAX_PARTS))
def test_every_real_version_round_trips(parts):
    text = ".".join(str(p) for p in parts)
    assert v.parse_version(text) == text
    assert v.version_key(text) == tuple(parts)


# ------------------------------------------------------------------------------ sort key
def test_version_key_and_comparisons():
    assert v.version_key("12.10") > v.version_key("12.9") > v.version_key("12.1.20230222") > v.version_key(None)
    assert v.version_key("V13.0.88") == (13, 0, 88)
    assert v.version_key("2.13.0+cpu") == (2, 13, 0)
    assert v.compare_versions("580", "580.65.06") == -1
    assert v.compare_versions("12.4.0", "12.4") == 0
    assert v.major_minor("12.4.131") == "12.4" and v.major_minor("12") == "12.0" and v.major_minor("x") is None


@settings(max_examples=300)
@given(st.text(max_size=80))
def test_version_key_reads_a_string_once_and_answers_as_the_first_reading(text):
    """Counted work (issue 35): a version string read again is answered from what was read (`cudaenv use` with 1,000
    toolkits reads 27 strings 356 times), with the same answer; a long string is not kept."""
    strings._KEYS.clear()
    first = v.version_key(text)
    kept = text in strings._KEYS
    assert kept == (bool(text) and len(text) <= strings._KEYS_LONGEST)
    if kept:
        strings._KEYS[text] = ("answered", "from", "the", "cache")  # a planted answer: the second reading must return it
        assert v.version_key(text) == ("answered", "from", "the", "cache")
        del strings._KEYS[text]
    assert v.version_key(text) == first


def test_version_key_keeps_a_bounded_number_of_answers():
    strings._KEYS.clear()
    for n in range(strings._KEYS_KEPT + 10):
        assert v.version_key("12.%d" % n) == (12, n)
    assert 0 < len(strings._KEYS) <= strings._KEYS_KEPT
    assert v.version_key("x" * 100 + ".1") == () and "x" * 100 + ".1" not in strings._KEYS


def test_the_one_reading_has_one_name_and_no_old_import_place():
    from cudaenv.model import snapshot
    from cudaenv.facts import drivers

    assert not hasattr(snapshot, "version_key") and not hasattr(drivers, "version_tuple")


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=2000), st.integers(), st.none(), st.floats()))
def test_everything_never_raises(value):
    assert isinstance(v.version_key(value), tuple)
    for fn in (v.cuda_from_int, v.cudnn_from_int, v.cc_tuple, v.cc_text, v.sm_name, v.split_arch, v.cuda_to_int):
        fn(value)


# ------------------------------------------------------------------------------ CUDA and cuDNN ints
@pytest.mark.parametrize(
    "value, expected",
    [(12040, "12.4"), (11080, "11.8"), (13000, "13.0"), (9020, "9.2"), ("12040", "12.4"), (12090, "12.9"),
     (0, None), (999, None), (-12040, None), (True, None), (None, None), ("12040x", None), ("1" * 7, None), (10 ** 7, None)],
)
def test_cuda_from_int(value, expected):
    assert v.cuda_from_int(value) == expected


def test_cuda_to_int_is_the_inverse():
    assert v.cuda_to_int("12.4") == 12040 and v.cuda_to_int("11.8") == 11080 and v.cuda_to_int("13") == 13000
    assert v.cuda_to_int("12.4$(x)") is None
    for n in (9020, 11080, 12040, 13000):
        assert v.cuda_to_int(v.cuda_from_int(n)) == n


@pytest.mark.parametrize(
    "value, expected",
    [(90100, "9.1.0"), (91002, "9.10.2"), (8907, "8.9.7"), (7605, "7.6.5"), (21805, "2.18.5"), ("8902", "8.9.2"),
     (999, None), (0, None), (10 ** 7, None), (False, None)],
)
def test_cudnn_from_int_both_schemes(value, expected):
    assert v.cudnn_from_int(value) == expected


# ------------------------------------------------------------------------------ compute capability
@pytest.mark.parametrize(
    "value, cc, sm",
    [("8.6", (8, 6), "sm_86"), ((8, 6), (8, 6), "sm_86"), ("sm_86", (8, 6), "sm_86"), ("86", (8, 6), "sm_86"),
     ("compute_90", (9, 0), "sm_90"), ("sm_90a", (9, 0), "sm_90a"), ("12.0", (12, 0), "sm_120"), ("sm_100f", (10, 0), "sm_100f"),
     ("120", (12, 0), "sm_120"), (" SM_61 ", (6, 1), "sm_61"), ("6", None, None), ("8.10", None, None), ("x", None, None),
     ("8.6$(x)", None, None), ((8,), None, None), ((True, 1), None, None)],
)
def test_compute_capability_forms(value, cc, sm):
    assert v.cc_tuple(value) == cc
    assert v.sm_name(value) == sm
    assert v.cc_text(value) == ("%d.%d" % cc if cc else None)


def test_split_arch_keeps_the_kind_and_suffix():
    assert v.split_arch("sm_90a") == ("sm", 9, 0, "a")
    assert v.split_arch("compute_86") == ("compute", 8, 6, "")
    assert v.sm_name("sm_90a", suffix=False) == "sm_90"


# ------------------------------------------------------------------------------ cheap to import
def test_importing_it_loads_nothing_heavy():
    code = "import sys; import cudaenv.core.version; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CHILD_CWD).stdout.split())
    assert not loaded & {"re", "typing", "json", "pathlib", "subprocess", "argparse", "dataclasses", "packaging"}


def test_driver_and_python_version_readers():
    from cudaenv.core.version import parse_driver_version, parse_python_version

    for good in ("550.54.15", "570", "572.61", "32.0.15.6094", " 535.104.05 "):
        assert parse_driver_version(good) == good.strip()
    for bad in ("abc$(x)", "550.54.15x", "550..54", "12345", "1.2.3.4.5", "", None, 550, "550 54"):
        assert parse_driver_version(bad) is None, bad
    for good in ("3.11", "3.11.4", "3.13t", " 3.9 "):
        assert parse_python_version(good) == good.strip()
    for bad in ("3", "3.11rc1", "py3.11", "3.11.4.1", "3.1t1", "t", "", None, 3.11, "3.11tt"):
        assert parse_python_version(bad) is None, bad


def test_pep440_orders_torch_pre_dev_post_and_local_versions():
    """compare_versions (drivers, CUDA) reads 2.6.0rc1 and 2.6.0.dev builds as 2.6.0; package versions are PEP 440."""
    from cudaenv.core.version import compare_pep440, pep440_key, pep440_release

    ordered = ["2.5.1", "2.6.0.dev20241112", "2.6.0a0+git1234", "2.6.0rc1", "2.6.0rc2", "2.6.0", "2.6.0+cu118", "2.6.0+cu126",
               "2.6.0.post1", "2.6.1", "2.10.0"]
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            assert compare_pep440(a, b) == -1 and compare_pep440(b, a) == 1, (a, b)
    assert sorted(reversed(ordered), key=pep440_key) == ordered
    assert v.compare_versions("2.6.0rc1", "2.6.0") == 0 and v.compare_versions("2.6.0.dev20241112", "2.6.0") == 0  # why
    assert compare_pep440("2.6", "2.6.0") == 0 and compare_pep440("v2.6.0", "2.6.0") == 0
    assert compare_pep440("not a version", "0.0.1") == -1 and compare_pep440(None, "") == 0
    assert compare_pep440("9" * 200, "1.0") == -1  # too long to be read: sorts lowest, no work on it
    assert pep440_release("2.7.0.dev20250310+cpu") == "2.7.0" and pep440_release("2.8.0rc1") == "2.8.0"
    assert pep440_release("2.7") == "2.7" and pep440_release("abc") is None


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_pep440_reads_any_text_without_raising(text):
    from cudaenv.core.version import compare_pep440, pep440_key

    pep440_key(text)
    assert compare_pep440(text, text) == 0


def test_the_version_strings_are_the_homes_own_and_use_reads_only_them():
    """`cudaenv use` imports cudaenv.core.version_strings, not the whole home (issue 35): the home gives the same
    functions, and the strings module holds none of the other forms."""
    for name in ("version_key", "is_version", "parse_version", "parse_driver_version", "MAX_PARTS", "MAX_DIGITS"):
        assert getattr(v, name) is getattr(strings, name)
    assert not {"cc_text", "cuda_from_int", "pep440", "split_arch", "compare_versions"} & set(vars(strings))
