"""parse/proc.py on recorded real files, and the platform probe's Jetson and PID-namespace facts in fake roots."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.host import Host
from cudaenv.parse import proc
from cudaenv.probes import platform as pf
from cudaenv.core.resources import load_table


def aarch64(fake_root, **env):
    return Host(root=fake_root.path, env=dict(env), system="linux", machine="aarch64")


def test_nv_tegra_release_and_jetpack():
    assert proc.parse_nv_tegra_release(recorded("tegra-release-r35-agx-orin.txt")) == "35.4.1"
    assert proc.parse_nv_tegra_release("> # R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic") == "36.4.3"
    assert proc.parse_nv_tegra_release("R35 release") is None and proc.parse_nv_tegra_release(b"\xff" * 10) is None
    rows = load_table("jetson")["rows"]
    assert proc.jetpack_for_l4t("35.4.1", rows) == "5.1.2" and proc.jetpack_for_l4t("99.1", rows) is None


def test_device_tree_compatible_with_and_without_nuls():
    pasted = recorded("devtree-compatible-agx-orin-cat.txt")  # as cat shows it: the NULs are invisible
    assert proc.tegra_soc(proc.parse_device_tree_compatible(pasted)) == "tegra234"
    raw = b"nvidia,p3768-0000+p3767-0000\x00nvidia,p3767-0000\x00nvidia,tegra234\x00"
    assert proc.parse_device_tree_compatible(raw) == ("nvidia,p3768-0000+p3767-0000", "nvidia,p3767-0000", "nvidia,tegra234")
    assert proc.tegra_soc(proc.parse_device_tree_compatible(b"raspberrypi,4-model-b\x00brcm,bcm2711\x00")) is None


def test_pid_namespace_link():
    assert proc.parse_pid_namespace("pid:[4026531836]") is True  # PROC_PID_INIT_INO
    assert proc.parse_pid_namespace("pid:[4026532577]") is False
    assert proc.parse_pid_namespace(None) is None and proc.parse_pid_namespace("pid:[x]") is None


def test_jetson_from_its_files(fake_root):
    fake_root.file("etc/nv_tegra_release", recorded("tegra-release-r35-agx-orin.txt"))
    (fake_root / "proc/device-tree").mkdir(parents=True)
    (fake_root / "proc/device-tree/compatible").write_bytes(b"nvidia,p3737-0000+p3701-0005\x00nvidia,tegra234\x00")
    p = pf.probe_platform(aarch64(fake_root), [])
    j = p.jetson
    assert (j.l4t, j.jetpack, j.soc, j.signals) == ("35.4.1", "5.1.2", "tegra234", ("/etc/nv_tegra_release", "/proc/device-tree/compatible"))


def test_jetson_from_the_l4t_kernel_module_alone(fake_root):
    fake_root.file("proc/driver/nvidia/version", recorded("proc-nvidia-open-jetson.txt"))
    p = pf.probe_platform(aarch64(fake_root), [])
    assert (p.jetson.l4t, p.jetson.jetpack, p.jetson.signals) == ("35.3.1", "5.1.1", ("l4t-driver",))


def test_no_jetson_on_an_arm_server_or_x86(fake_root):
    fake_root.file("proc/driver/nvidia/version", recorded("proc-nvidia-proprietary-580.txt"))
    assert pf.probe_platform(aarch64(fake_root), []).jetson is None  # GH200/SBSA: a real driver series
    fake_root.file("etc/nv_tegra_release", recorded("tegra-release-r35-agx-orin.txt"))
    x86 = Host(root=fake_root.path, env={}, system="linux", machine="x86_64")
    assert pf.probe_platform(x86, []).jetson is None


def test_pid_namespace_from_the_link(fake_root):
    host = Host(root=fake_root.path, env={}, system="linux", machine="x86_64")
    assert pf.probe_platform(host, []).pid_namespace is None  # an image has no live /proc/self
    fake_root.link("proc/self/ns/pid", "pid:[4026532577]")
    assert pf.probe_platform(host, []).pid_namespace == "container"
    fake_root.link("proc/self/ns/pid", "pid:[4026531836]")
    assert pf.probe_platform(host, []).pid_namespace == "initial"


@pytest.mark.real_machine
def test_this_machine_pid_namespace_is_read():
    import os

    if not os.path.islink("/proc/self/ns/pid"):
        pytest.skip("no /proc/self/ns/pid here")
    host = Host(root="/", env={}, system="linux")
    expected = os.readlink("/proc/self/ns/pid") == "pid:[4026531836]"
    assert pf._pid_namespace(host) == ("initial" if expected else "container")


def all_parsers(text):
    proc.parse_proc_driver_version(text)
    proc.parse_sys_module_version(text)
    proc.parse_proc_status(text)
    proc.parse_passwd(text)
    proc.parse_os_release(text)
    proc.parse_wsl(text, text)
    proc.parse_cgroup_container(text)
    proc.parse_pci_class(text, text)
    proc.parse_nv_tegra_release(text)
    proc.tegra_soc(proc.parse_device_tree_compatible(text))
    proc.parse_pid_namespace(text if isinstance(text, str) else None)


@settings(max_examples=300)
@given(st.text(max_size=500) | st.binary(max_size=500))
def test_any_text_or_bytes_never_raises(text):
    all_parsers(text)


@pytest.mark.parametrize("unit", ["NVRM version: ", "NVRM version: Kernel Module ", "# R", "# R35 (", "0", " ", "=", "'", "\\"])
def test_adversarial_runs_take_linear_work(unit):
    assert_linear(all_parsers, unit)
    assert_linear(all_parsers, unit.replace(" ", "\n"))


def test_passwd_accounts_name_uid_and_home_in_file_order():
    """The one /etc/passwd reader (issue 25: the driver probe and uninstall's SUDO_USER lookup each had one).
    Lines in the format of passwd(5); the second 'dup' line is a constructed duplicate name."""
    text = ("root:x:0:0:root:/root:/bin/bash\n# comment\nalice:x:1000:1000:Alice:/home/alice:/bin/zsh\n"
            "broken:x:notanumber:0::/nowhere:/bin/sh\nshort:x:7\ndup:x:1001:1001::/home/dup:/bin/sh\ndup:x:1002:1002::/srv/dup:/bin/sh\n")
    accounts = proc.parse_passwd(text)
    assert [(a.name, a.uid, a.home) for a in accounts] == [
        ("root", "0", "/root"), ("alice", "1000", "/home/alice"), ("short", "7", ""), ("dup", "1001", "/home/dup"),
        ("dup", "1002", "/srv/dup")]
    assert proc.parse_passwd(None) == () and proc.parse_passwd(b"\xff:x:5:5::/h:/s\n")[0].uid == "5"
