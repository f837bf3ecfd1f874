"""cudaenv.core.pep440 reads and orders versions as packaging.version does (packaging stays a test-time reference):
the same text accepted, the same parts, normal form and order, on versions generated from PEP 440's grammar with its
alternative spellings, separators and cases, and on any text."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import InvalidVersion as PInvalid
from packaging.version import Version as PVersion

from cudaenv.core.pep440 import InvalidVersion, Version
from builders import CHILD_CWD

SEP = st.sampled_from(["", ".", "-", "_"])
NUM = st.integers(min_value=0, max_value=30).map(str) | st.sampled_from(["00", "007", "20250528", "999999999999"])
CASE = st.sampled_from([str.lower, str.upper, str.title])


@st.composite
def versions(draw):
    """PEP 440 versions, most valid, written every way the PEP permits (and some ways it does not)."""
    text = draw(st.sampled_from(["", "", "v", "V", " ", "\t"]))
    if draw(st.booleans()) and draw(st.booleans()):
        text += draw(NUM) + "!"
    text += ".".join(draw(st.lists(NUM, min_size=1, max_size=5)))
    if draw(st.booleans()):
        letter = draw(st.sampled_from(["a", "alpha", "b", "beta", "c", "rc", "pre", "preview"]))
        text += draw(SEP) + draw(CASE)(letter) + draw(SEP) + draw(st.sampled_from(["", "0", "1", "12"]))
    if draw(st.booleans()):
        if draw(st.booleans()):
            text += "-" + draw(NUM)
        else:
            text += draw(SEP) + draw(CASE)(draw(st.sampled_from(["post", "rev", "r"]))) + draw(SEP) + draw(st.sampled_from(["", "0", "3"]))
    if draw(st.booleans()):
        text += draw(SEP) + draw(CASE)("dev") + draw(SEP) + draw(st.sampled_from(["", "0", "20250528"]))
    if draw(st.booleans()):
        parts = draw(st.lists(st.sampled_from(["cu126", "CPU", "1", "0", "git1234", "rocm6", "ubuntu", "7", "abc"]), min_size=1, max_size=3))
        text += "+" + draw(SEP.filter(bool)).join(parts) if len(parts) > 1 else "+" + parts[0]
    if draw(st.integers(0, 9)) == 0:  # now and then something the grammar does not permit
        text = draw(st.sampled_from(["", "x", "+", ".", "..", "-", "!", "a"])).join([text[: len(text) // 2], text[len(text) // 2:]])
    return text + draw(st.sampled_from(["", "", " ", "\n"]))


def _theirs(text):
    try:
        return PVersion(text)
    except PInvalid:
        return None


def _ours(text):
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _same(ours, theirs):
    assert (ours is None) == (theirs is None)
    if ours is not None:
        assert str(ours) == str(theirs) and ours.public == theirs.public and ours.base_version == theirs.base_version
        assert (ours.epoch, ours.release, ours.pre, ours.post, ours.dev, ours.local) == \
            (theirs.epoch, theirs.release, theirs.pre, theirs.post, theirs.dev, theirs.local)


@settings(max_examples=600)
@given(versions(), versions())
def test_versions_read_and_order_as_packaging_reads_them(a, b):
    va, pa, vb, pb = _ours(a), _theirs(a), _ours(b), _theirs(b)
    _same(va, pa)
    _same(vb, pb)
    if va is not None and vb is not None:
        assert (va < vb, va == vb, va > vb, va <= vb, va >= vb, va != vb) == (pa < pb, pa == pb, pa > pb, pa <= pb, pa >= pb, pa != pb), (a, b)
        assert (hash(va) == hash(vb)) >= (va == vb)


@settings(max_examples=500)
@given(st.text(max_size=40) | st.text(alphabet="0123456789.!+-_abcdeilnoprstuvxACPRV \t", max_size=30))
def test_any_text_is_read_as_packaging_reads_it(text):
    _same(_ours(text), _theirs(text))


def test_the_order_of_a_release_and_its_suffixes():
    ordered = ["1.0.dev0", "1.0a1.dev1", "1.0a1", "1.0a2.post1.dev1", "1.0a2.post1", "1.0b1", "1.0rc1", "1.0",
               "1.0+abc", "1.0+abc.5", "1.0+5", "1.0.post1.dev1", "1.0.post1", "1.0.1", "1!0.1"]
    assert sorted(reversed(ordered), key=Version) == ordered
    assert Version("2.6") == Version("2.6.0.0") and Version("0") == Version("0.0")
    assert str(Version(" V1.0-PREVIEW_2.REV-3-dev.4+Ubuntu-1 ")) == "1.0rc2.post3.dev4+ubuntu.1"
    with pytest.raises(InvalidVersion):
        Version("2.7.*")


def test_doctor_quick_does_not_import_packaging_to_sort_torch_versions():
    """The facts tables' torch versions sort by PEP 440 without packaging (6 ms of the doctor's start-up)."""
    import subprocess
    import sys

    code = ("import sys\nfrom cudaenv.facts.torch import known_torch_versions\nv = known_torch_versions()\n"
            "assert len(v) > 10 and v == tuple(sorted(v, key=__import__('cudaenv.core.version').core.version.pep440_key))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'packaging'))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=CHILD_CWD)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]"]


@given(st.lists(NUM, min_size=1, max_size=6))
def test_a_plain_release_is_read_without_the_pattern_as_the_pattern_reads_it(numbers):
    """A release of ASCII digits and dots ("2.13.0") is read by str methods, the same version as the pattern reads
    (a leading "v" sends the same text through the pattern), and the same as packaging's."""
    text = ".".join(numbers)
    plain, through = Version(text), Version("v" + text)
    assert plain == through and hash(plain) == hash(through) and str(plain) == str(through) == str(PVersion(text))
    for part in ("epoch", "release", "pre", "post", "dev", "local"):
        assert getattr(plain, part) == getattr(through, part), part


@pytest.mark.parametrize("text", ["２.１", "2..1", "2.", ".2", "2.1.", "", "٣.٤"])
def test_what_only_looks_like_a_plain_release_goes_to_the_pattern(text):
    """Digits other than ASCII's (str.isdigit's wider set) and empty parts are no plain release: the pattern refuses
    them, as packaging does."""
    with pytest.raises(InvalidVersion):
        Version(text)
    with pytest.raises(PInvalid):
        PVersion(text)


def test_the_torch_releases_sort_without_compiling_the_pattern(tmp_path):
    """Counted: the facts tables' torch releases (all plain releases) sort by PEP 440 with no pattern compiled (it
    was doctor --quick's one compile after its torch child answered: about 6.6 M instructions, issue 35)."""
    import subprocess
    import sys
    from pathlib import Path

    import cudaenv

    probe = ("import sys\nfrom cudaenv.facts.torch import known_torch_versions\nimport cudaenv.core.pep440 as p\n"
             "v = known_torch_versions(include_unreleased=True)\nprint(len(v), len(p._COMPILED), v[0], v[-1])\n")
    env = {"PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent), "PATH": ""}
    out = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    count, compiled, first, last = out.stdout.split()
    assert int(count) > 10 and compiled == "0", out.stdout
    assert PVersion(first) < PVersion(last)
