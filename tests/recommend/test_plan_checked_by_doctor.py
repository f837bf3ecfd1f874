"""One decision, checked by the doctor (issue 27): the build recommend (and so `fix` and the doctor's torch fixes)
plans, once installed, raises no doctor warning or error about itself.

A scenario matrix (drivers x GPUs x torch releases x platforms) of hand-built Snapshots: recommend decides; the
planned state is the same machine with that build installed (its arch list from data/torch_arch.json, as torch
reports it); the doctor on it must find no warning or error that the machine without torch did not already have.
"""

import itertools

import pytest

from cudaenv.diagnose import diagnose
from cudaenv.facts import torch as tf
from cudaenv.model.record import replace
from cudaenv.model.snapshot import DeviceMapping, Driver, Gpu, Platform, Snapshot, Torch, TorchDevice, VisibleDevices
from cudaenv.recommend import recommend

PY = "/venv/bin/python"

LINUX_DRIVERS = ("470.82.01", "535.104.05", "560.35.03", "575.51.03", "580.95.05", "590.48.01", "595.71.05")
WINDOWS_DRIVERS = ("537.13", "560.94", "572.61", "581.57")
GPUS = (("Tesla K80", "3.7"), ("NVIDIA GeForce GTX 1080 Ti", "6.1"), ("Tesla V100-SXM2-16GB", "7.0"), ("Tesla T4", "7.5"),
        ("NVIDIA A100-SXM4-80GB", "8.0"), ("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA GeForce RTX 5090", "12.0"))
TORCH = (None, "2.7.1", "latest")
PLATFORMS = (("linux", "x86_64", LINUX_DRIVERS), ("linux", "aarch64", ("535.104.05", "580.95.05", "595.71.05")),
             ("windows", "AMD64", WINDOWS_DRIVERS))
NAMES = {cc: name for name, cc in GPUS}
CASES = [(system, machine, driver, cc, torch) for system, machine, drivers in PLATFORMS
         for driver, (_, cc), torch in itertools.product(drivers, GPUS, TORCH)]
WARNED = ("warning", "error")


def before(system, machine, driver, gpu):
    g = Gpu(0, name=gpu[0], compute_capability=gpu[1], uuid="GPU-00000000-0000-0000-0000-000000000000")
    return Snapshot(platform=Platform(system=system, machine=machine, dev_nvidia=("/dev/nvidia0",)),
                    driver=Driver(version=driver, source="nvml"), gpus=(g,),
                    visible_devices=VisibleDevices(mapping=(DeviceMapping(0, 0, g.uuid),)),
                    torch=Torch(python=PY, installed=False, python_version="3.11.9", installer="pip"))


def planned(s, rec):
    """The machine with the recommended build installed, as the torch probe would see it."""
    version = "%s+%s" % (rec.torch_version, rec.variant)
    row = tf.arch_list_for(rec.torch_version, rec.variant, s.platform.system, s.platform.machine)
    arch = tf.arch_list_of(*row) if row else ()
    g = s.gpus[0]
    t = Torch(python=PY, installed=True, version=version, cuda=tf.variant_cuda(rec.variant), python_version="3.11.9",
              installer="pip", dynamic=True, cuda_available=True, device_count=1, arch_list=arch,
              devices=(TorchDevice(name=g.name, capability=g.compute_capability),))
    return replace(s, torch=t)


@pytest.mark.parametrize("system, machine, driver, gpu, torch", CASES)
def test_the_planned_build_raises_no_warning_about_itself(system, machine, driver, gpu, torch):
    s = before(system, machine, driver, (NAMES[gpu], gpu))
    rec = recommend(s, torch_version=torch)
    if not rec.ok or not rec.variant or not rec.variant.startswith("cu"):
        return  # nothing to install here (no build fits): the matrix checks the plans there are
    known = {f.id for f in diagnose(s) if f.severity in WARNED}
    after = [f for f in diagnose(planned(s, rec)) if f.severity in WARNED and f.id not in known]
    assert not after, (rec.torch_version, rec.variant, [(f.id, f.title) for f in after])


def test_the_matrix_plans_cuda_builds_and_the_580_case_is_cu130():
    # the matrix is not empty of plans, and the case issue 27 measured: a 580 driver gets cu130 (runs natively)
    plans = 0
    for system, machine, driver, gpu, torch in CASES[:120]:
        rec = recommend(before(system, machine, driver, (NAMES[gpu], gpu)), torch_version=torch)
        plans += bool(rec.ok and rec.variant and rec.variant.startswith("cu"))
    assert plans > 60
    rec = recommend(before("linux", "x86_64", "580.95.05", GPUS[4]), torch_version="latest")  # A100
    assert rec.variant == "cu130"
