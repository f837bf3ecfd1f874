"""Platform probe: os-release, WSL 1/2 from several signals, containers, device nodes, PCI, Secure Boot, libcuda."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TOOLS, recorded
from cudaenv.parse import proc
from cudaenv.parse.ldconf import parse_ld_so_conf
from cudaenv.probes import platform as pf


def kernel_of(proc_version: str) -> str:
    """/proc/sys/kernel/osrelease holds the release word of /proc/version ("Linux version RELEASE (...")."""
    return proc_version.split()[2] + "\n"


WSL2 = recorded("proc-version-wsl2.txt")
WSL2_OLD = recorded("proc-version-wsl2-old.txt")
WSL1 = recorded("proc-version-wsl1.txt")
UBUNTU = recorded("osrelease-ubuntu-2204.txt")


def probe(host):
    notes = []
    return pf.probe_platform(host, notes), notes


# ------------------------------------------------------------------------------------------------ parsers

def test_os_release_recorded():
    osr = proc.parse_os_release(UBUNTU)
    assert (osr["PRETTY_NAME"], osr["ID"], osr["VERSION_ID"], osr["VERSION_CODENAME"]) == ("Ubuntu 22.04.4 LTS", "ubuntu", "22.04", "jammy")


def test_os_release_quoting_and_junk():
    text = "# comment\nNAME='Fedora Linux'\nVERSION=\"40 (Workstation \\\"Edition\\\")\"\nbad line\n=x\nID=fedora\nEMPTY=\nUNBALANCED=\"oops\n"
    osr = proc.parse_os_release(text)
    assert osr["NAME"] == "Fedora Linux" and osr["ID"] == "fedora" and osr["EMPTY"] == ""
    assert osr["VERSION"] == '40 (Workstation "Edition")' and osr["UNBALANCED"] == "oops"
    assert proc.parse_os_release(None) == {}


@pytest.mark.parametrize(
    "osrelease, proc_version, kwargs, expected",
    [
        (kernel_of(WSL2), WSL2, {}, (2, ("osrelease", "/proc/version"))),
        (kernel_of(WSL2_OLD), WSL2_OLD, {}, (2, ("osrelease", "/proc/version"))),
        (kernel_of(WSL1), WSL1, {"interop": True}, (1, ("osrelease", "/proc/version", "WSLInterop"))),
        ("6.8.0-45-generic\n", "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)", {}, (None, ())),
        # a custom WSL2 kernel without "microsoft" in its name: the other signals still tell
        ("6.6.36-custom\n", None, {"interop": True, "dev_dxg": True, "run_wsl": True}, (2, ("WSLInterop", "/run/WSL", "/dev/dxg"))),
        (None, None, {"wsl_lib": True}, (2, ("/usr/lib/wsl/lib",))),
        # the variable alone proves nothing (copied into a container, or set by hand)
        ("6.8.0-45-generic\n", None, {"distro_name": "Ubuntu"}, (None, ("WSL_DISTRO_NAME",))),
        (kernel_of(WSL2), None, {"distro_name": "Ubuntu-22.04"}, (2, ("osrelease", "WSL_DISTRO_NAME"))),
    ],
)
def test_parse_wsl(osrelease, proc_version, kwargs, expected):
    assert proc.parse_wsl(osrelease, proc_version, **kwargs) == expected


@pytest.mark.parametrize(
    "cgroup, kind",
    [
        ("12:devices:/docker/3f1c9a7e5d2b\n11:cpu,cpuacct:/docker/3f1c9a7e5d2b\n", "docker"),
        ("0::/system.slice/docker-3f1c9a7e5d2b.scope\n", "docker"),
        ("0::/machine.slice/libpod-0c1d2e3f.scope/container\n", "podman"),
        ("11:memory:/kubepods/burstable/pod1234/abcd\n", "kubernetes"),
        ("0::/system.slice/containerd.service\n", "containerd"),
        ("0::/lxc.payload.web/\n", "lxc"),
        ("0::/init.scope\n", None),
        ("0::/\n", None),
    ],
)
def test_cgroup_container(cgroup, kind):
    # constructed in the shapes cgroup v1 and v2 print for each runtime
    assert proc.parse_cgroup_container(cgroup) == kind


def test_pci_class_and_secure_boot():
    assert proc.parse_pci_class("0x10de\n", "0x030000\n") and proc.parse_pci_class("0x10de", "0x030200")
    assert not proc.parse_pci_class("0x10de", "0x040300")  # the GPU's HDMI audio function
    assert not proc.parse_pci_class("0x8086", "0x030000")
    assert proc.parse_secure_boot(b"\x06\x00\x00\x00\x01") is True
    assert proc.parse_secure_boot(b"\x06\x00\x00\x00\x00") is False
    assert proc.parse_secure_boot(b"\x06") is None


def test_ld_so_conf():
    dirs, includes = parse_ld_so_conf("# c\ninclude /etc/ld.so.conf.d/*.conf\n/usr/local/cuda/lib64/\nrelative\n")
    assert dirs == ["/usr/local/cuda/lib64"] and includes == ["/etc/ld.so.conf.d/*.conf"]


@settings(max_examples=200)
@given(st.text(max_size=300), st.text(max_size=100), st.booleans(), st.booleans())
def test_parsers_never_raise(text, other, flag1, flag2):
    proc.parse_os_release(text)
    wsl, signals = proc.parse_wsl(text, other, interop=flag1, dev_dxg=flag2, distro_name=other or None)
    assert wsl in (None, 1, 2) and (wsl is None or signals)
    proc.parse_cgroup_container(text)
    proc.parse_pci_class(text, other)
    proc.parse_secure_boot(text.encode("utf-8", "replace"))
    parse_ld_so_conf(text)


# ---------------------------------------------------------------------------------------------- scenarios

def ubuntu_root(root, kernel="6.8.0-45-generic\n", proc_version="Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n"):
    root.file("etc/os-release", UBUNTU)
    root.file("proc/sys/kernel/osrelease", kernel)
    if proc_version is not None:
        root.file("proc/version", proc_version)
    return root


def test_plain_ubuntu_with_a_gpu(fake_root):
    ubuntu_root(fake_root)
    for node in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"):
        fake_root.file("dev/" + node)
    fake_root.file("sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n")
    fake_root.file("sys/bus/pci/devices/0000:01:00.0/class", "0x030000\n")
    fake_root.file("sys/bus/pci/devices/0000:01:00.1/vendor", "0x10de\n")
    fake_root.file("sys/bus/pci/devices/0000:01:00.1/class", "0x040300\n")
    fake_root.file("sys/bus/pci/devices/0000:00:02.0/vendor", "0x8086\n")
    fake_root.file("sys/bus/pci/devices/0000:00:02.0/class", "0x030000\n")
    (fake_root.dir("sys/firmware/efi/efivars") / "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c").write_bytes(b"\x06\x00\x00\x00\x01")
    p, notes = probe(fake_root.host())
    assert (p.system, p.distro, p.distro_id, p.distro_version, p.kernel) == ("linux", "Ubuntu 22.04.4 LTS", "ubuntu", "22.04", "6.8.0-45-generic")
    assert p.dev_nvidia == ("/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl")
    assert p.pci_nvidia_devices == ("0000:01:00.0",)
    assert (p.wsl, p.container, p.secure_boot, p.nouveau_loaded, p.dev_dxg) == (None, None, True, False, False)
    assert p.machine and notes == []


def test_nouveau_and_usr_lib_os_release(fake_root):
    fake_root.file("usr/lib/os-release", 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n')
    fake_root.dir("sys/module/nouveau")
    p, _ = probe(fake_root.host())
    assert (p.distro, p.distro_id, p.nouveau_loaded, p.secure_boot) == ("Debian GNU/Linux 12 (bookworm)", "debian", True, None)


def test_no_os_release_is_a_note(fake_root):
    p, notes = probe(fake_root.host())
    assert p.distro is None and p.kernel is None
    assert [n.probe for n in notes] == ["platform"]


def test_wsl2_without_wsl_distro_name(fake_root):
    # as under sudo or in a systemd unit: the variable is gone, the system still says WSL2
    ubuntu_root(fake_root, kernel_of(WSL2), WSL2)
    fake_root.file("proc/sys/fs/binfmt_misc/WSLInterop", "enabled\n")
    fake_root.file("dev/dxg")
    fake_root.file("usr/lib/wsl/lib/libcuda.so.1")
    fake_root.file("usr/lib/wsl/lib/nvidia-smi")
    p, _ = probe(fake_root.host())
    assert p.wsl == 2 and p.dev_dxg is True and p.dev_nvidia == ()
    assert p.wsl_signals == ("osrelease", "/proc/version", "WSLInterop", "/dev/dxg", "/usr/lib/wsl/lib")
    assert p.libcuda == ("/usr/lib/wsl/lib/libcuda.so.1",)


def test_wsl2_with_a_linux_driver_shadowing_it(fake_root):
    ubuntu_root(fake_root, "5.15.153.1-microsoft-standard-WSL2\n", None)
    fake_root.file("proc/sys/fs/binfmt_misc/WSLInterop-late", "enabled\n")
    fake_root.file("usr/lib/wsl/lib/libcuda.so.1")
    fake_root.file("usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15")
    fake_root.link("usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.550.54.15")
    fake_root.link("lib", "usr/lib")  # usrmerge: /lib/x86_64-linux-gnu is the same folder
    fake_root.file("opt/odd/libcuda.so.1")
    fake_root.file("etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    fake_root.file("etc/ld.so.conf.d/odd.conf", "/opt/odd\n")
    p, _ = probe(fake_root.host(env={"WSL_DISTRO_NAME": "Ubuntu"}))
    assert p.wsl == 2 and "WSLInterop" in p.wsl_signals and "WSL_DISTRO_NAME" in p.wsl_signals
    assert p.libcuda == (
        "/usr/lib/wsl/lib/libcuda.so.1",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
        "/opt/odd/libcuda.so.1",
    )


def test_wsl1(fake_root):
    ubuntu_root(fake_root, kernel_of(WSL1), WSL1)
    fake_root.file("proc/sys/fs/binfmt_misc/WSLInterop", "enabled\n")
    fake_root.dir("run/WSL")
    p, _ = probe(fake_root.host(env={"WSL_DISTRO_NAME": "Ubuntu"}))
    assert p.wsl == 1 and p.kernel == "4.4.0-18985-Microsoft"
    assert p.wsl_signals == ("osrelease", "/proc/version", "WSLInterop", "/run/WSL", "WSL_DISTRO_NAME")


def test_docker_container_without_gpus(fake_root):
    ubuntu_root(fake_root)
    fake_root.file(".dockerenv")
    fake_root.file("proc/1/cgroup", "0::/\n")
    p, _ = probe(fake_root.host(env={"NVIDIA_VISIBLE_DEVICES": "all"}))
    assert (p.container, p.container_signals, p.nvidia_visible_devices, p.dev_nvidia) == ("docker", ("/.dockerenv",), "all", ())


def test_podman_container(fake_root):
    ubuntu_root(fake_root)
    fake_root.file("run/.containerenv", 'engine="podman-4.9.3"\n')
    fake_root.file("proc/1/cgroup", "0::/\n")
    p, _ = probe(fake_root.host(env={"container": "podman"}))
    assert p.container == "podman" and p.container_signals == ("/run/.containerenv", "container=podman")


def test_kubernetes_pod(fake_root):
    ubuntu_root(fake_root)
    fake_root.file("proc/1/cgroup", "11:memory:/kubepods/besteffort/pod5e2f/0a1b2c\n")
    fake_root.file("dev/nvidia0")
    fake_root.file("dev/nvidiactl")
    p, _ = probe(fake_root.host(env={"KUBERNETES_SERVICE_HOST": "10.96.0.1", "NVIDIA_VISIBLE_DEVICES": "GPU-1234"}))
    assert p.container == "kubernetes" and p.container_signals == ("KUBERNETES_SERVICE_HOST", "/proc/1/cgroup")
    assert p.dev_nvidia == ("/dev/nvidia0", "/dev/nvidiactl") and p.nvidia_visible_devices == "GPU-1234"


def test_docker_from_cgroup_only(fake_root):
    ubuntu_root(fake_root)
    fake_root.file("proc/1/cgroup", "12:devices:/docker/3f1c9a7e5d2b\n")
    p, _ = probe(fake_root.host())
    assert (p.container, p.container_signals) == ("docker", ("/proc/1/cgroup",))


def test_windows_host_reads_no_linux_files(fake_root):
    ubuntu_root(fake_root)  # present, but a Windows system has no /etc/os-release to read
    fake_root.file("dev/nvidia0")
    p, notes = probe(fake_root.host(system="windows", env={"NVIDIA_VISIBLE_DEVICES": "0"}))
    assert (p.system, p.distro, p.kernel, p.wsl, p.dev_nvidia, p.nvidia_visible_devices) == ("windows", "Windows", None, None, (), "0")
    assert notes == []


def test_machine_from_host(fake_root):
    from cudaenv.host import Host

    p, _ = probe(Host(root=fake_root.path, env={}, system="linux", machine="aarch64"))
    assert p.machine == "aarch64"


@pytest.mark.real_machine
def test_this_machine_kernel_is_read():
    """The real /proc/sys/kernel/osrelease (a 4 MiB read of it fails with ENOMEM on some kernels)."""
    import os
    import sys

    from cudaenv.host import Host

    if not sys.platform.startswith("linux"):
        pytest.skip("Linux only")
    p = pf.probe_platform(Host(env={}), [])
    assert p.kernel == os.uname().release


def test_amd_display_controllers_are_found_in_the_same_pci_scan(fake_root):
    from cudaenv.probes.platform import probe_platform

    for address, vendor, klass in (("0000:03:00.0", "0x1002", "0x038000"),  # an Instinct: "other display" class
                                   ("0000:03:00.1", "0x1002", "0x040300"),  # its HDMI audio function
                                   ("0000:65:00.0", "0x10de", "0x030000")):
        fake_root.file("sys/bus/pci/devices/%s/vendor" % address, vendor + "\n")
        fake_root.file("sys/bus/pci/devices/%s/class" % address, klass + "\n")
    p = probe_platform(fake_root.host(), [])
    assert p.pci_amd_devices == ("0000:03:00.0",) and p.pci_nvidia_devices == ("0000:65:00.0",)


def test_torch_recommend_picks_rocm_for_an_amd_gpu_on_the_pci_bus(fake_root, cli):
    fake_root.file("sys/bus/pci/devices/0000:03:00.0/vendor", "0x1002\n")
    fake_root.file("sys/bus/pci/devices/0000:03:00.0/class", "0x038000\n")
    res = cli("torch", "recommend", "--json", "--torch", "2.7.1", "--root", str(fake_root.path), "--python", "3.11",
              env={"PATH": TOOLS})
    assert res.json()["variant"].startswith("rocm"), res


def test_libcuda_of_a_driver_mounted_at_usr_local_nvidia(fake_root):
    ubuntu_root(fake_root)
    fake_root.file("usr/local/nvidia/lib64/libcuda.so.580.126.09", "the driver")
    fake_root.link("usr/local/nvidia/lib64/libcuda.so.1", "libcuda.so.580.126.09")
    p, _ = probe(fake_root.host())
    assert p.libcuda == ("/usr/local/nvidia/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.580.126.09")


def test_libcuda_in_ld_library_path_but_never_cuda_stubs(fake_root):
    """The same driver folders as NVML's: a driver in its own prefix counts (it shadows a WSL 2 driver just the
    same); the toolkit's stubs/libcuda.so, which only links, never does."""
    ubuntu_root(fake_root)
    fake_root.file("opt/driver-580/lib64/libcuda.so.1", "a driver in its own prefix")
    fake_root.file("usr/local/cuda/lib64/stubs/libcuda.so", "the toolkit's link-time stub")
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64/stubs:/opt/driver-580/lib64/"}
    p, _ = probe(fake_root.host(env=env))
    assert p.libcuda == ("/opt/driver-580/lib64/libcuda.so.1",)


def test_escape_sequences_in_os_release_print_escaped_in_the_text_doctor(cli, fake_root):
    """Issue 12: an image's PRETTY_NAME set the terminal title and cleared the screen."""
    fake_root.file("etc/os-release", 'ID=ubuntu\nPRETTY_NAME="Evil \x1b]0;title\x07\x1b[2J Linux"\n')
    for fmt in ((), ("--format", "markdown"), ("--verbose",)):
        r = cli("doctor", "--quick", "--root", str(fake_root.path), *fmt)
        assert "\x1b" not in r.out and "\x07" not in r.out, fmt
        assert "Evil \\x1b]0;title\\x07\\x1b[2J Linux" in r.out, fmt


def test_a_huge_pretty_name_is_cut(fake_root):
    fake_root.file("etc/os-release", 'PRETTY_NAME="%s"\n' % ("A" * 100000))
    p, _ = probe(fake_root.host())
    assert 0 < len(p.distro) <= 200
