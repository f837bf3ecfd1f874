"""parse/kernel_log.py on recorded kernel logs from public threads: Xid lines grouped by code, the GPUs that fell off
the bus in each wording the driver has used, and any text in without a crash, in linear work."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.parse.kernel_log import has_gpu_faults, parse_xid_log


def groups(text):
    return [(g.code, g.count, g.pci) for g in parse_xid_log(text).xids]


def test_xid_79_and_the_fallen_off_line_of_a_journal():
    log = parse_xid_log(recorded("kernel-log-xid79-rtx5080.txt"))
    assert [(g.code, g.count, g.pci) for g in log.xids] == [(79, 1, ("0000:2b:00",))]
    assert log.xids[0].first == "NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus."
    assert log.fallen_off_bus == ("0000:2b:00.0",) and log.log == "paste"


def test_repeated_codes_are_counted_in_the_order_first_logged():
    assert groups(recorded("kernel-log-xid69-31.txt")) == [(69, 7, ("0000:08:00",)), (31, 1, ("0000:08:00",))]


def test_row_remapping_line_with_a_pid():
    log = parse_xid_log(recorded("kernel-log-xid63-row-remap.txt"), log="dmesg")
    assert groups(recorded("kernel-log-xid63-row-remap.txt")) == [(63, 1, ("0000:10:1c",))] and log.log == "dmesg"


@pytest.mark.parametrize("name, address", [
    ("kernel-log-fallen-off-multiline.txt", "0000:b3:00.0"),  # no Xid at all: NVIDIA/NVSentinel#155
    ("kernel-log-fallen-off-old.txt", "0000:01:00.0"),  # "GPU at ADDRESS has fallen off the bus", logged twice
])
def test_fallen_off_the_bus_without_an_xid(name, address):
    log = parse_xid_log(recorded(name))
    assert log.xids == () and log.fallen_off_bus == (address,) and has_gpu_faults(log)


def test_two_gpus_and_a_pasted_quote():
    text = ("> [  5.1] NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
            "> [  5.2] NVRM: Xid (PCI:0000:61:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    assert groups(text) == [(79, 2, ("0000:41:00", "0000:61:00"))]


def test_a_multiline_address_does_not_reach_a_far_line():
    text = "NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: a\nNVRM: b\nNVRM: c\nNVRM: d\nNVRM: fallen off the bus and is not responding"
    assert parse_xid_log(text).fallen_off_bus == ()


def test_nothing_of_the_gpu_in_an_ordinary_log():
    log = parse_xid_log(recorded("dmesg-denied.txt") + "\n[ 1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
                           "Xid is a word; NVRM: Xid (bad): 12\n")
    assert log.xids == () and log.fallen_off_bus == () and not has_gpu_faults(log)


@settings(max_examples=200)
@given(st.one_of(st.text(), st.binary()))
def test_any_input_never_raises(data):
    log = parse_xid_log(data)
    assert all(g.count >= 1 and g.code >= 0 for g in log.xids)


@given(st.lists(st.sampled_from(["NVRM: ", "Xid (PCI:0000:41:00): ", "79", "fallen off", "The NVIDIA GPU ", "0000:b3:00.0",
                                 "\n", " ", ":"]), max_size=60).map("".join))
def test_fragments_of_real_lines_never_raise(text):
    assert isinstance(parse_xid_log(text).fallen_off_bus, tuple)


@pytest.mark.parametrize("unit", [
    "[ 5.1] NVRM: Xid (PCI:0000:41:00): 79, GPU has fallen off the bus.\n",
    "NVRM: The NVIDIA GPU 0000:b3:00.0\n",
    "NVRM: Xid (PCI:" + "0" * 300 + "\n",
    "NVRM: GPU at " + "0:" * 200 + " fallen off\n",
])
def test_linear_on_hostile_logs(unit):
    assert_linear(parse_xid_log, unit)
