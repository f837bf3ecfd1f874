"""The GPU health findings: gpu-xid (each Xid code's meaning and first step, from data/xid.json), gpu-unreachable, and
gpu-lost leading with what the kernel log shows, on hand-built snapshots and through `cudaenv doctor --json`."""

from builders import recorded
from cudaenv.diagnose import diagnose
from cudaenv.model.snapshot import Driver, GpuHealth, Snapshot, ToolStatus, VisibleDevices, XidGroup
from cudaenv.parse.kernel_log import parse_xid_log

from machine import healthy

LOST = (ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="failed", failure="gpu-lost",
                   message="Unable to determine the device handle for GPU 0000:41:00.0: Unknown Error"),)


def found(s):
    return {f.id: f for f in diagnose(s)}


def lost(health):
    return healthy(driver=Driver(version=None, kernel_module_version="550.54.15", source="proc"), gpus=(), tools=LOST,
                   visible_devices=VisibleDevices(), health=health)


def test_gpu_lost_leads_with_the_xid_the_journal_shows():
    health = GpuHealth(log="journalctl -k", xids=parse_xid_log(recorded("kernel-log-xid79-rtx5080.txt")).xids,
                       fallen_off_bus=("0000:2b:00.0",), dcgmi="/usr/bin/dcgmi")
    f = found(lost(health))
    assert f["gpu-lost"].detail.startswith(
        "The kernel log (journalctl -k) shows what happened: Xid 79 (GPU has fallen off the bus) on 0000:2b:00; "
        "0000:2b:00.0 fell off the bus")
    assert "sudo dmesg -T | grep -i -E 'Xid|fallen off the bus'" not in f["gpu-lost"].fix  # already read
    assert any(cmd.startswith("dcgmi diag -r 1") for cmd in f["gpu-lost"].fix)
    x = f["gpu-xid"]
    assert x.severity == "error" and x.section == "driver"
    assert "Xid 79 (GPU has fallen off the bus), once on 0000:2b:00: the GPU stopped answering on the PCIe bus" in x.detail
    assert "First: power-cycle the machine" in x.detail and any(c.startswith("sudo nvidia-smi -r -i N") for c in x.fix)


def test_gpu_lost_without_a_log_keeps_the_old_advice():
    f = found(lost(None))["gpu-lost"]
    assert "usually Xid 79" in f.detail and f.fix[0] == "sudo dmesg -T | grep -i -E 'Xid|fallen off the bus'"
    assert not any("dcgmi" in c for c in f.fix)
    quiet = found(lost(GpuHealth(log="dmesg")))
    assert "holds no Xid for it this boot" in quiet["gpu-lost"].detail and "gpu-xid" not in quiet


def test_program_faults_are_a_warning_and_unknown_codes_point_at_the_catalog():
    health = GpuHealth(log="dmesg", xids=parse_xid_log(recorded("kernel-log-xid69-31.txt")).xids + (XidGroup(code=999, first="x"),))
    x = found(healthy(health=health))["gpu-xid"]
    assert x.severity == "warning" and x.title == "the kernel log holds GPU faults (Xid 69, 31, 999)"
    assert "Xid 69 (Graphics Engine class error), 7 times on 0000:08:00" in x.detail
    assert "Xid 999, once: not in cudaenv's table; look it up in NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/" in x.detail
    assert not any("nvidia-smi -r" in c for c in x.fix)  # nothing that needs a reset


def test_a_gpu_the_driver_does_not_answer_for():
    f = found(healthy(health=GpuHealth(log="dmesg", unreachable=("0000:61:00.0",))))
    u = f["gpu-unreachable"]
    assert u.severity == "error" and u.title == "1 NVIDIA GPU on the PCI bus does not answer the driver"
    assert "0000:61:00.0" in u.detail and "lspci -nnk -s 0000:61:00.0    # 'Kernel driver in use: nvidia', and its link state with -vv" in u.fix
    assert "gpu-xid" not in f


def test_a_healthy_machine_has_no_health_findings():
    f = found(healthy())
    assert not {"gpu-xid", "gpu-unreachable", "gpu-lost"} & set(f)
    assert Snapshot.from_dict(healthy(health=GpuHealth(log="dmesg", xids=(XidGroup(code=13),))).to_dict()).health.xids[0].code == 13


def _pci_gpu(m, address):
    m.root.file("sys/bus/pci/devices/%s/vendor" % address, "0x10de\n")
    m.root.file("sys/bus/pci/devices/%s/class" % address, "0x030000\n")


def test_doctor_reads_the_journal_for_the_seeds_lost_gpu(machine):
    _pci_gpu(machine, "0000:41:00.0")
    machine.bin.command("nvidia-smi", stdout=recorded("smi-fail-gpu-lost.txt"), exit_code=15)
    machine.bin.command("journalctl", stdout=recorded("kernel-log-xid79-rtx5080.txt"))
    code, found_, data = machine.findings()
    assert code == 1 and found_["gpu-lost"]["detail"].startswith("The kernel log (journalctl -k) shows what happened: Xid 79")
    assert found_["gpu-xid"]["severity"] == "error"
    assert data["health"]["log"] == "journalctl -k" and data["health"]["xids"][0]["code"] == 79


def test_doctor_on_a_healthy_machine_runs_no_log(machine):
    machine.bin.command("journalctl", stdout=recorded("kernel-log-xid79-rtx5080.txt"))
    _, found_, data = machine.findings("--quick")
    assert data["health"] is None and "gpu-xid" not in found_
