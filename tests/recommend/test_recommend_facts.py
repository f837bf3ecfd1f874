"""The torch decision's facts in data/ (policy rules, distro driver advice) and the decision from a frozen request."""

import copy
import time

import pytest

from cudaenv.diagnose import diagnose
from cudaenv.diagnose import _common as c
from cudaenv.facts import driver_install, drivers, torch_policy
from cudaenv.index.torch import IndexData
from cudaenv.recommend import recommend
from cudaenv.recommend.decide import decide
from cudaenv.fix.plan import driver_steps
from cudaenv.recommend.records import Request
from cudaenv.core.resources import load_table
from cudaenv.model.snapshot import Driver, Gpu, Platform, Snapshot, Torch, ToolStatus


@pytest.mark.parametrize("name", ["torch_policy", "driver_install"])
def test_every_row_names_a_known_source(name):
    table = load_table(name)
    assert table["rows"]
    for row in table["rows"]:
        assert row["source"] in table["sources"], row
        assert row.get("confirmed", True) in (True, False)


# ------------------------------------------------------------------ one table of driver advice
@pytest.mark.parametrize("distro", ["ubuntu", "debian", "fedora", "rhel", "arch", "gentoo"])
def test_doctor_and_fix_give_the_same_driver_steps(distro):
    platform = Platform(system="linux", distro_id=distro)
    snap = Snapshot(platform=platform)
    assert c.driver_install_commands(snap, "570") == list(driver_steps(platform, "570"))


def test_ubuntu_and_debian_steps_are_the_documented_ones():
    ubuntu = driver_install.install_steps("linux", "ubuntu", "525.60.13")
    assert ubuntu[0] == "sudo apt-get update" and "sudo ubuntu-drivers install nvidia:525" in ubuntu and "sudo reboot" in ubuntu
    assert driver_install.install_steps("linux", "ubuntu")[2] == "sudo ubuntu-drivers install"  # no branch known: the recommended one
    debian = driver_install.install_steps("linux", "debian", "580")
    assert "sudo apt-get install nvidia-kernel-dkms nvidia-driver firmware-misc-nonfree" in debian
    assert any("non-free-firmware" in s for s in debian) and any("older than 580" in s for s in debian)
    for kind in ("wsl1", "wsl2"):
        steps = driver_install.install_steps(kind, "ubuntu", "580")
        assert not any(s.startswith(("sudo", "apt")) for s in steps)  # never a Linux driver inside WSL


def test_the_doctor_no_driver_fix_reads_the_table():
    p = Platform(system="linux", distro_id="debian", pci_nvidia_devices=("0000:01:00.0",))
    s = Snapshot(platform=p, tools=(ToolStatus("nvml", status="missing"), ToolStatus("nvidia-smi", status="missing")))
    f = next(x for x in diagnose(s) if x.id == "no-driver")
    assert "sudo apt-get install nvidia-kernel-dkms nvidia-driver firmware-misc-nonfree" in f.fix


# ------------------------------------------------------------------ policy rows
def test_policy_rules():
    assert not hasattr(torch_policy, "gpu_min_cuda")  # which CUDA first builds for a GPU: facts/cuda_arch.py
    assert torch_policy.gpu_min_driver("12.0", "linux") == ("570", "Blackwell")
    assert torch_policy.not_rebuilt("torchaudio", "2.11.0", "2.13.0")
    assert not torch_policy.not_rebuilt("torchaudio", "2.11.0", "2.11.0")
    assert not torch_policy.not_rebuilt("torchvision", "0.28.0", "2.13.0")
    assert torch_policy.local_tag("cpu", "linux-x86_64") and not torch_policy.local_tag("cpu", "linux-aarch64")
    assert torch_policy.local_tag("cuda", "linux-aarch64") and not torch_policy.local_tag("cpu", "macos-arm64")


# ------------------------------------------------------------------ a CUDA major the tables do not know
def test_an_unknown_cuda_major_needs_at_least_the_newest_known_minimum():
    assert drivers.min_driver_for_cuda("14.0", "linux") == "580"
    assert drivers.beyond_tables("14.0") and not drivers.beyond_tables("13.2") and not drivers.beyond_tables("9.0")
    assert drivers.min_driver_for_cuda("9.0") is None  # older than every row: unknown, not a floor


def test_a_learned_cu140_is_not_offered_to_a_535_driver():
    data = IndexData("https://download.pytorch.org/whl", time.time(), {
        "cu140": {"2.15.0": {"linux-x86_64": ["3.11"]}},
        "cu130": {"2.15.0": {"linux-x86_64": ["3.11"]}},
        "cu126": {"2.15.0": {"linux-x86_64": ["3.11"]}},
    })
    snap = Snapshot(platform=Platform(system="linux", machine="x86_64"), driver=Driver(version="535.104.05"),
                    gpus=(Gpu(0, name="NVIDIA H100", compute_capability="9.0"),), torch=Torch(python="/v/bin/python", python_version="3.11.4"))
    rec = recommend(snap, torch_version="2.15.0", index_data=data)
    assert rec.variant == "cu126", rec.reasons
    reasons = " | ".join(rec.reasons)
    assert "cu140: needs driver >= 580" in reasons and "cu130: needs driver >= 580" in reasons
    assert any("CUDA 14.0 (cu140) is newer than the driver tables" in n for n in rec.notes)
    assert "CUDA 14 needs driver" not in reasons
    assert not recommend(snap, torch_version="2.15.0", index_data=data, variant="cu140").ok


# ------------------------------------------------------------------ the decision reads a frozen request and the tables it is given
def test_decide_from_a_request_record():
    req = Request(driver="560.35.03", gpus=(("GTX 1080 Ti", "6.1"),), nvidia=True, python_version="3.11", torch_version="2.7.1")
    rec = decide(req)
    assert (rec.variant, rec.ok) == ("cu126", True)
    with pytest.raises(AttributeError):
        req.driver = "580"  # frozen


def test_the_doctor_passes_its_tables_to_the_decision():
    """The rule used to call recommend() without the tables, under `except Exception`."""
    tables = {"torch_companions": copy.deepcopy(load_table("torch_companions"))}
    for row in tables["torch_companions"]["rows"]:
        if row["torch"] == "2.13.0":
            row["torchvision"] = "0.99.9"
    snap = Snapshot(platform=Platform(system="linux", machine="x86_64"), driver=Driver(version="580.95.05", cuda_version="13.0"),
                    gpus=(Gpu(0, name="NVIDIA A100", compute_capability="8.0"),),
                    tools=(ToolStatus("nvml", status="ok"),),
                    torch=Torch(python="/v/bin/python", installed=True, version="2.13.0+cpu", python_version="3.11.4",
                                companions=("torchvision==0.28.0+cpu",)))
    shipped = next(f for f in diagnose(snap) if f.id == "torch-cpu-only")
    custom = next(f for f in diagnose(snap, tables) if f.id == "torch-cpu-only")
    assert any("torchvision==0.28.0" in x for x in shipped.fix)
    assert any("torchvision==0.99.9" in x for x in custom.fix)
