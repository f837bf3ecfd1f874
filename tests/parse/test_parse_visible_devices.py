"""CUDA_VISIBLE_DEVICES read as CUDA reads it (ASCII digits only), with structured problems; issue 12's crashes."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear
from cudaenv.parse.visible_devices import KINDS, corrected_value, entry_gpu, parse_visible_devices, strtoul
from cudaenv.model.snapshot import Gpu

FOUR = tuple(Gpu(index=i, name="NVIDIA A100", uuid="GPU-%d000aaaa" % i) for i in range(4))


@pytest.mark.parametrize("value", ["²", "٣", "０", "𝟙", "³,1", "1٣"[1:]])
def test_unicode_digits_are_no_device_numbers(value):
    vd = parse_visible_devices(value, FOUR)
    assert vd.mapping == () and vd.issues[0].kind == "not-a-number" and vd.invalid_entry == value.split(",")[0]


def test_a_unicode_digit_after_an_ascii_one_is_trailing_text():
    vd = parse_visible_devices("1²,2", FOUR)  # strtoul reads the 1 and stops at ²
    assert [(m.logical, m.physical) for m in vd.mapping] == [(0, 1), (1, 2)]
    assert [p.kind for p in vd.issues] == ["trailing-text"]


def test_strtoul_is_ascii_only():
    assert strtoul("²") == -1 and strtoul("٣") == -1 and strtoul("０") == -1 and strtoul("𝟙") == -1
    assert strtoul("12x") == 12 and strtoul("+3") == 3 and strtoul("-2") == -2


def test_a_number_of_4300_digits_is_out_of_range_not_a_crash():
    vd = parse_visible_devices("9" * 5000, FOUR)
    assert vd.mapping == () and [p.kind for p in vd.issues] == ["out-of-range"]
    assert len(vd.issues[0].entry) <= 200 and len(vd.problems[0]) < 400
    assert parse_visible_devices("0," + "1" * 5000, ()).mapping == ()  # no GPU known: still no crash
    assert_linear(lambda text: parse_visible_devices(text, FOUR), "9")  # the digits are read once, never re-scanned


def test_every_problem_has_a_known_kind_and_its_sentence():
    values = ["", "0,0", "-1", "x", "3,,1", "1gpu", "7", "GPU-0000aaaa,1", "GPU-9", "GPU-", "MIG-1"]
    for value in values:
        vd = parse_visible_devices(value, FOUR, "PCI")
        assert vd.issues and all(p.kind in KINDS and p.message for p in vd.issues)
        assert vd.problems == tuple(p.message for p in vd.issues)
    assert parse_visible_devices("0", FOUR, "PCI").issues[0].kind == "order-unknown"


def test_entry_gpu_and_corrected_value_use_ascii_digits():
    assert entry_gpu("²", FOUR) is None and entry_gpu("1", FOUR).index == 1 and entry_gpu("+2", FOUR).index == 2
    assert entry_gpu("9" * 5000, FOUR) is None
    assert corrected_value(("1", "²", "1", "٣", "3"), FOUR) == "1,3"


@settings(max_examples=400)
@given(st.text(max_size=300), st.sampled_from([None, "PCI_BUS_ID", "x"]))
def test_any_value_never_raises(value, order):
    vd = parse_visible_devices(value, FOUR, order)
    assert all(p.kind in KINDS for p in vd.issues)
    corrected_value(vd.entries, FOUR)


def test_doctor_with_superscript_two_does_not_crash(cli, fake_root, fake_bin):
    """Issue 12: CUDA_VISIBLE_DEVICES=² crashed the doctor (str.isdigit is true for ²)."""
    from builders import recorded

    fake_bin.command("nvidia-smi", stdout="", by_args={
        "--query-gpu": (recorded("smi-query-2080ti-x4.txt"), 0), "--query-compute-apps": ("", 0)})
    for value in ("²", "0,²", "9" * 5000):
        r = cli("doctor", "--quick", "--json", "--root", str(fake_root.path),
                env={"PATH": fake_bin.env_path, "CUDA_VISIBLE_DEVICES": value})
        data = r.json()
        assert r.code in (0, 1) and "Traceback" not in r.err
        ids = [f["id"] for f in data["findings"]]
        assert "visible-devices-invalid" in ids, (value, ids)
