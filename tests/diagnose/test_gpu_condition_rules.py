"""Each GPU's condition from nvidia-smi -q (cudaenv.diagnose.health.conditions, pure) on recorded outputs: a row remap
waiting for a reset, uncorrectable ECC errors, a failed remap, the power brake; the reset said to be the host's inside a
container; and the read end to end through a fake nvidia-smi that answers -q with a recorded output."""

from builders import recorded
from machine import a10g_535, healthy
from cudaenv.diagnose import diagnose
from cudaenv.diagnose.view import build_view
from cudaenv.model.record import replace
from cudaenv.model.snapshot import Platform
from cudaenv.parse.smi_conditions import parse_smi_conditions
from cudaenv.render.report import render_report

REMAP = parse_smi_conditions(recorded("smi-q-a100-row-remap-pending.txt"))
BRAKE = parse_smi_conditions(recorded("smi-q-a100-power-brake-constructed.txt"))


def found(s):
    return {f.id: f for f in diagnose(s)}


def test_a_pending_row_remap_wants_a_reset_and_shows_on_the_gpus_row():
    s = healthy(gpu_conditions=REMAP)
    f = found(s)["gpu-memory-repair-pending"]
    assert f.severity == "warning" and f.section == "driver"
    assert "(00000000:10:1C.0: a row remap)" in f.detail
    assert f.fix == ("sudo nvidia-smi -r -i 00000000:10:1C.0    # reset the GPU once nothing runs on it (or reboot)",)
    assert "gpu-ecc-uncorrectable" not in found(s)  # its counts are 0
    text = render_report(s, diagnose(s), build_view(s))
    assert "warning GPUs" in " ".join(text.split())


def test_uncorrectable_ecc_power_brake_and_pending_retirement():
    f = found(healthy(gpu_conditions=BRAKE))
    ecc = f["gpu-ecc-uncorrectable"]
    assert ecc.severity == "error" and "00000000:10:1C.0: 2 since the driver loaded, 2 in its life" in ecc.detail
    slow = f["gpu-clocks-slowdown"]
    assert "00000000:10:1C.0: HW Slowdown, HW Power Brake Slowdown" in slow.detail and "power supply" in slow.detail
    assert "a page retirement" in f["gpu-memory-repair-pending"].detail
    old = replace(BRAKE[0], ecc_volatile_uncorrected=0, slowdowns=("HW Thermal Slowdown",))
    f = found(healthy(gpu_conditions=(old,)))
    assert f["gpu-ecc-uncorrectable"].severity == "warning" and "too hot" in f["gpu-clocks-slowdown"].detail


def test_a_failed_remap_is_an_rma_and_a_container_resets_nothing():
    failed = replace(REMAP[0], remap_failed=True)
    f = found(healthy(gpu_conditions=(failed,)))
    assert f["gpu-row-remap-failed"].severity == "error" and "RMA" in f["gpu-row-remap-failed"].detail
    assert "gpu-memory-repair-pending" not in f  # the failure says it
    boxed = healthy(gpu_conditions=REMAP, platform=replace(healthy().platform, container="docker"))
    fix = found(boxed)["gpu-memory-repair-pending"].fix
    assert fix == ("# on the host, once nothing runs on the GPU: sudo nvidia-smi -r -i 00000000:10:1C.0 (or reboot the node)",)
    assert isinstance(boxed.platform, Platform)


def test_the_doctor_reads_nvidia_smi_q_beside_its_queries(machine):
    a10g_535(machine)
    machine.bin.command("nvidia-smi", stdout=recorded("diag-banner-535-a10g.txt"), by_args={
        "--query-gpu": (recorded("diag-query-535-a10g.txt"), 0), "--query-compute-apps": ("", 0),
        "-q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER,PERFORMANCE": (recorded("smi-q-a100-row-remap-pending.txt"), 0)})
    code, f, data = machine.findings("--quick")
    assert data["gpu_conditions"][0]["remap_pending"] is True and "gpu-memory-repair-pending" in f
    plain = a10g_535(machine).findings("--quick")[2]
    assert plain["gpu_conditions"] == []  # the banner printed for -q holds no GPU block


def test_the_doctors_sysfs_link_says_lost_lanes_never_an_idle_speed():
    from cudaenv.model.snapshot import PciDevice

    idle = PciDevice(address="0000:41:00.0", link_speed=2.5, link_width=16, link_cap_speed=16.0, link_cap_width=16, source="sysfs")
    assert "gpu-pcie-link-downgraded" not in found(healthy(pci_devices=(idle,)))
    narrow = replace(idle, link_speed=16.0, link_width=8)
    f = found(healthy(pci_devices=(narrow,)))["gpu-pcie-link-downgraded"]
    assert f.severity == "warning" and f.detail.startswith("The kernel's link state (sysfs current_link_* against max_link_*): "
                                                          "0000:41:00.0: 16 GT/s x8 of 16 GT/s x16.")
    assert f.fix[1] == "sudo lspci -vv -s 0000:41:00.0 | grep -E 'LnkCap|LnkSta'"


def test_verbose_facts_show_the_conditions_and_links():
    from cudaenv.model.snapshot import PciDevice
    from cudaenv.render.facts import render_facts

    link = PciDevice(address="0000:07:00.0", link_speed=2.5, link_width=16, link_cap_speed=16.0, link_cap_width=16, source="sysfs")
    s = healthy(gpu_conditions=BRAKE, pci_devices=(link,))
    flat = " ".join(render_facts(s, build_view(s)).split())
    assert ("nvidia-smi -q 00000000:10:1C.0: ECC Enabled; uncorrectable 2 volatile / 2 aggregate; retired pages 1; "
            "a page retirement pending; persistence Enabled; slowed by HW Slowdown, HW Power Brake Slowdown") in flat
    assert "link 0000:07:00.0: PCIe 2.5 GT/s x16 of 16 GT/s x16 (sysfs)" in flat
