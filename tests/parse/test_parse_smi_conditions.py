"""nvidia-smi -q's health sections (cudaenv.parse.smi_conditions) on recorded real outputs (an A100 with a pending row
remap, a GPU at rest, a pasted Remapped Rows part) and one constructed from them (a power brake, the older Double Bit
ECC layout, a pending page retirement); any text never raises, in linear work."""

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.model.snapshot import GpuCondition
from cudaenv.parse.smi_conditions import parse_smi_conditions


def test_a100_after_xid_63_a_row_remap_waits_for_a_reset():
    (g,) = parse_smi_conditions(recorded("smi-q-a100-row-remap-pending.txt"))
    assert g == GpuCondition(pci_bus_id="00000000:10:1C.0", ecc_volatile_uncorrected=0, ecc_aggregate_uncorrected=0,
                             remapped_uncorrectable=0, remap_pending=True, remap_failed=False)  # N/A pages: None


def test_a_paste_of_one_section_and_a_gpu_at_rest():
    assert parse_smi_conditions(recorded("smi-q-remapped-rows-uncorrectable-pending.txt")) == (
        GpuCondition(remapped_uncorrectable=4, remap_pending=True),)
    assert parse_smi_conditions(recorded("smi-q-throttle-reasons-idle.txt")) == ()  # only Idle: nothing to say


def test_power_brake_double_bit_layout_and_pending_retirement():
    (g,) = parse_smi_conditions(recorded("smi-q-a100-power-brake-constructed.txt"))
    assert (g.slowdowns, g.ecc_mode, g.persistence_mode) == (("HW Slowdown", "HW Power Brake Slowdown"), "Enabled", "Enabled")
    assert (g.ecc_volatile_uncorrected, g.ecc_aggregate_uncorrected, g.retired_pages, g.retirement_pending) == (2, 2, 1, True)


def test_two_gpus_each_in_its_block():
    one = recorded("smi-q-a100-row-remap-pending.txt").replace("[...]\n", "")
    two = one + "\n" + one.split("Attached GPUs", 1)[1].split("\n", 1)[1].replace("00000000:10:1C.0", "00000000:20:1C.0").replace(
        "Pending                           : Yes", "Pending                           : No")
    a, b = parse_smi_conditions(two)
    assert (a.pci_bus_id, a.remap_pending, b.pci_bus_id, b.remap_pending) == ("00000000:10:1C.0", True, "00000000:20:1C.0", False)


@settings(max_examples=200)
@given(st.text())
def test_any_text_never_raises(text):
    for g in parse_smi_conditions(text):
        assert isinstance(g.slowdowns, tuple)
    parse_smi_conditions(None)


def test_linear_on_hostile_text():
    assert_linear(parse_smi_conditions, "    ECC Errors\n        Volatile\n            DRAM Uncorrectable : 1\n",
                  head="GPU 00000000:10:1C.0\n")
    assert_linear(parse_smi_conditions, "GPU 00000000:10:1C.0\n    HW Slowdown : Active\n")
