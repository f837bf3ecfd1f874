"""`sudo` only where it is needed and present (issue 27): a doctor run as root, or by a user without sudo, prints every
fix without a leading sudo (the driver and environment sections, the driver tables, the container host's fixes);
a user with sudo keeps it, and so does a report of another root (--root: the user there is not known)."""

import re

import pytest

from cudaenv.diagnose import diagnose
from cudaenv.model.record import replace
from cudaenv.model.snapshot import ContainerHost, Driver, EngineConfig, Platform, Snapshot, ToolStatus, VisibleDevices
from cudaenv.toolkit.sudo import without_sudo

from machine import healthy

SUDO = re.compile(r"\bsudo\b")


def _failed(failure, platform):
    tools = (ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="failed", failure=failure, message="the verbatim line"),)
    return healthy(platform=platform, driver=Driver(version=None, kernel_module_version="550.54.15", source="proc"), gpus=(),
                   tools=tools, visible_devices=VisibleDevices())


def _machines(platform):
    """Snapshots whose fixes need root: each driver failure, a hung nvidia-smi, no driver, WSL 2 with a Linux driver,
    a container host without the toolkit."""
    out = [_failed(f, platform) for f in ("driver-not-loaded", "driver-library-mismatch", "gpu-lost", "no-permission", "no-devices")]
    out.append(healthy(platform=platform, tools=(ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="timeout", seconds=5.0),)))
    out.append(Snapshot(platform=replace(platform, pci_nvidia_devices=("0000:01:00.0",), dev_nvidia=()),
                        tools=(ToolStatus("nvml", status="missing"), ToolStatus("nvidia-smi", status="missing"))))
    wsl = replace(platform, wsl=2, dev_dxg=True, libcuda=("/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"))
    out.append(healthy(platform=wsl, driver=Driver(version="560.94", cuda_version="12.6", source="nvidia-smi",
                                                   nvidia_smi="/usr/lib/wsl/lib/nvidia-smi", wsl_windows_side=True)))
    out.append(healthy(platform=platform, containers=ContainerHost(engines=("docker",), configs=(EngineConfig(engine="docker"),))))
    return out


def _fixes(s):
    return [(f.id, x) for f in diagnose(s) for x in f.fix]


@pytest.mark.parametrize("who", [dict(root_user=True, sudo=False), dict(root_user=True, sudo=True), dict(root_user=False, sudo=False)])
def test_root_or_no_sudo_gets_no_sudo(who):
    platform = replace(healthy().platform, distro_id="ubuntu", **who)
    fixes = [fx for s in _machines(platform) for fx in _fixes(s)]
    ids = {fid for fid, _ in fixes}
    assert {"driver-not-loaded", "driver-library-mismatch", "gpu-lost", "driver-no-permission", "driver-no-devices", "nvidia-smi-hang",
            "no-driver", "wsl-linux-driver-installed", "container-toolkit-missing"} <= ids
    assert [fx for fx in fixes if SUDO.search(fx[1])] == []
    assert ("driver-library-mismatch", "rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia") in fixes
    assert ("no-driver", "ubuntu-drivers install") in fixes


@pytest.mark.parametrize("who", [dict(root_user=False, sudo=True), dict(root_user=None, sudo=None)])
def test_a_user_with_sudo_and_another_roots_report_keep_it(who):
    platform = replace(healthy().platform, distro_id="ubuntu", **who)
    fixes = [fx for s in _machines(platform) for fx in _fixes(s)]
    assert ("driver-library-mismatch", "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia") in fixes
    assert ("no-driver", "sudo ubuntu-drivers install") in fixes


def test_fix_offers_the_driver_steps_without_sudo_to_root():
    from cudaenv.fix.plan import driver_steps

    user = Platform(system="linux", distro_id="ubuntu", root_user=False, sudo=True)
    assert "sudo apt-get update" in driver_steps(user, "580")
    root = replace(user, root_user=True, sudo=False)
    assert "apt-get update" in driver_steps(root, "580") and not any(SUDO.search(x) for x in driver_steps(root, "580"))


def test_only_a_sudo_that_leads_a_command_goes():
    assert without_sudo("sudo reboot    # if modprobe fails, then read: sudo dmesg | grep -i nvidia") == \
        "reboot    # if modprobe fails, then read: dmesg | grep -i nvidia"
    assert without_sudo("printf 'x\\n' | sudo tee /etc/modprobe.d/b.conf") == "printf 'x\\n' | tee /etc/modprobe.d/b.conf"
    assert without_sudo("sudo akmods --force || sudo dkms autoinstall") == "akmods --force || dkms autoinstall"
    assert without_sudo("echo pseudo sudoers; visudo") == "echo pseudo sudoers; visudo"
    assert without_sudo("sudo -E make") == "sudo -E make"  # an option of sudo's own: left for the reader


def test_a_fix_line_without_sudo_keeps_its_chinese():
    """The line stripped of sudo is still the marked message it was: in Chinese it reads translated, without sudo."""
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language, tr

    platform = replace(healthy().platform, distro_id="ubuntu", root_user=True, sudo=False)
    fixes = [x for s in _machines(platform) for f in diagnose(s) for x in f.fix]
    assert "reboot    # if modprobe fails, then read: dmesg | grep -i nvidia" in fixes
    set_language(CHINESE)
    try:
        chinese = [tr(x) for x in fixes]
    finally:
        set_language(ENGLISH)
    assert "reboot    # 如果 modprobe 失败，再查看：dmesg | grep -i nvidia" in chinese
    assert [x for x in chinese if SUDO.search(x)] == []
    assert [tr(x) for x in fixes] == fixes  # English again: the same lines
    assert without_sudo("重启    # 再查看：sudo dmesg") == "重启    # 再查看：dmesg"
