"""probes/gpu_health.py: the kernel log is read only for a sick GPU, through journalctl, else dmesg (a fake printing
a recorded log), a log this user may not read is a note, and a GPU the PCI bus has but NVML did not list is named."""

from builders import recorded
from cudaenv.model.snapshot import Gpu, Platform, ToolStatus
from cudaenv.probes.gpu_health import probe_gpu_health, unreachable_gpus

LOST = ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", "failed", "gpu-lost", "Unable to determine the device handle")
OK = ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", "ok")
TWO = Platform(system="linux", pci_nvidia_devices=("0000:41:00.0", "0000:61:00.0"))


def read(host, platform=TWO, gpus=(), tools=(LOST,)):
    notes = []
    return probe_gpu_health(host, notes, platform, gpus, tools), notes


def test_a_lost_gpu_reads_the_journal(fake_root, fake_bin):
    fake_bin.command("journalctl", stdout=recorded("kernel-log-xid79-rtx5080.txt"))
    fake_bin.command("dmesg", stdout="never read\n", exit_code=3)
    health, notes = read(fake_root.host(path=fake_bin.env_path))
    assert health.log == "journalctl -k" and [(g.code, g.pci) for g in health.xids] == [(79, ("0000:2b:00",))]
    assert health.fallen_off_bus == ("0000:2b:00.0",) and health.dcgmi is None and notes == []


def test_journal_refused_then_dmesg(fake_root, fake_bin):
    hint = ("Hint: You are currently not seeing messages from other users and the system.\n"
            "      Users in groups 'adm', 'systemd-journal' can see all messages.\n")
    fake_bin.command("journalctl", stderr=hint, stdout="-- No entries --\n")
    fake_bin.command("dmesg", stdout=recorded("kernel-log-fallen-off-multiline.txt"))
    fake_bin.command("dcgmi", exit_code=1)
    health, notes = read(fake_root.host(path=fake_bin.env_path))
    assert (health.log, health.xids, health.fallen_off_bus) == ("dmesg", (), ("0000:b3:00.0",))
    assert health.dcgmi == str(fake_bin.path / "dcgmi") and notes == []


def test_no_rights_is_a_note_not_an_error(fake_root, fake_bin):
    fake_bin.command("dmesg", stderr=recorded("dmesg-denied.txt"), exit_code=1)
    health, notes = read(fake_root.host(path=fake_bin.env_path))
    assert health.log is None and health.xids == ()
    assert [n.probe for n in notes] == ["gpu-health"] and "sudo dmesg" in notes[0].message and "(dmesg)" in notes[0].message


def test_a_log_that_hangs_is_a_timeout_note(fake_root, fake_bin):
    fake_bin.command("journalctl", stdout="x\n", sleep=5)
    host = fake_root.host(path=fake_bin.env_path, timeout=0.3)
    health, notes = read(host)
    assert health.log is None and [n.message for n in notes] == ["journalctl -k gave no answer within 0.3 s"]


def test_a_healthy_machine_reads_no_log(fake_root, fake_bin):
    fake_bin.command("journalctl", stdout=recorded("kernel-log-xid79-rtx5080.txt"))
    gpus = (Gpu(index=0, pci_bus_id="00000000:41:00.0"), Gpu(index=1, pci_bus_id="00000000:61:00.0"))
    health, notes = read(fake_root.host(path=fake_bin.env_path), gpus=gpus, tools=(OK,))
    assert health is None and notes == []


def test_a_gpu_the_bus_has_and_nvml_does_not(fake_root, fake_bin):
    fake_bin.command("journalctl", stdout=recorded("kernel-log-xid79-rtx5080.txt"))
    fake_root.link("sys/bus/pci/devices/0000:61:00.0/driver", "../../../bus/pci/drivers/nvidia")
    health, _ = read(fake_root.host(path=fake_bin.env_path), gpus=(Gpu(index=0, pci_bus_id="00000000:41:00.0"),), tools=(OK,))
    assert health.unreachable == ("0000:61:00.0",) and health.xids[0].code == 79


def test_unreachable_skips_passthrough_containers_and_no_answer():
    one = (Gpu(index=0, pci_bus_id="00000000:41:00.0"),)
    vfio = {"0000:61:00.0": "vfio-pci"}.get
    assert unreachable_gpus(TWO, one, (OK,), vfio) == ()  # bound to vfio-pci: a VM's GPU, not lost
    assert unreachable_gpus(TWO, one, (OK,), lambda a: None) == ("0000:61:00.0",)  # no driver link readable: still named
    boxed = Platform(system="linux", container="docker", pci_nvidia_devices=TWO.pci_nvidia_devices)
    assert unreachable_gpus(boxed, one, (OK,)) == ()  # a container sees the host's bus, not its GPUs
    assert unreachable_gpus(TWO, (), (OK,)) == () and unreachable_gpus(TWO, one, (LOST,)) == ()


def test_pci_links_from_sysfs(fake_root):
    """The kernel's reading of each NVIDIA GPU's link (sysfs' current/max link speed and width; the values in the
    kernel's pci-sysfs format, 'N.N GT/s PCIe'), the GPUs with nothing readable left out."""
    from cudaenv.probes.gpu_health import probe_pci_links

    for name, value in (("current_link_speed", "16.0 GT/s PCIe\n"), ("max_link_speed", "16.0 GT/s PCIe\n"),
                        ("current_link_width", "8\n"), ("max_link_width", "16\n")):
        fake_root.file("sys/bus/pci/devices/0000:41:00.0/" + name, value)
    fake_root.file("sys/bus/pci/devices/0000:61:00.0/current_link_speed", "Unknown\n")
    (link,) = probe_pci_links(fake_root.host(), TWO)
    assert (link.address, link.link_speed, link.link_width, link.link_cap_speed, link.link_cap_width, link.source) == (
        "0000:41:00.0", 16.0, 8, 16.0, 16, "sysfs")
