"""Fixes that converge (issue 27): on a model of a machine (tests/machine.py: a fake root, fake commands, an
environment), a finding's fix is applied as the user would apply it (`source <(cudaenv use X)` emits an environment
that is applied to the env mapping, `unset`/`export` change a variable, `ln -sfn` repoints the fake
/usr/local/cuda), the doctor runs again, and the finding is gone with no new warning or error in its place.
"""

import pytest

from builders import recorded
from machine import a10g_535

WARNED = ("warning", "error")


def warned(found):
    return {i for i, f in found.items() if f["severity"] in WARNED}


def system_13_0_with_wrappers(m):
    """This development machine's layout: /usr/local/cuda-13.0 (nvcc's 13.0.88), /usr/local/cuda pointing at it, and
    /usr/local/bin holding exec wrappers (nvcc, ptxas) to it, on PATH."""
    a10g_535(m)
    m.root.toolkit("13.0.88", version_json=False, cuda_h=False)
    m.root.link("usr/local/cuda", "/usr/local/cuda-13.0")
    wrapper = recorded("nvcc-exec-wrapper.txt")
    m.root.executable("usr/local/bin/nvcc", wrapper)
    m.root.executable("usr/local/bin/ptxas", wrapper.replace("/nvcc", "/ptxas"))
    m.path_in_root.append("/usr/local/bin")
    return m


def test_the_readme_flow_ends_without_a_toolkit_warning(machine):
    # cudaenv install 13.0 && source <(cudaenv use 13.0) && cudaenv doctor
    m = system_13_0_with_wrappers(machine)
    _, before, _ = m.findings()
    assert not warned(before) & {"cuda-link-not-active", "multiple-toolkits-on-path"}, before.keys()
    m.cudaenv_install("13.0.2")
    assert m.apply_fix("source <(cudaenv use 13.0)")
    assert m.path_in_root[0] == "/data/toolkits/13.0.2/bin"
    _, after, data = m.findings()
    assert data["active_toolkit"]["path"] == "/data/toolkits/13.0.2"
    assert "cuda-link-not-active" not in after, after.get("cuda-link-not-active")
    assert "multiple-toolkits-on-path" not in after, after.get("multiple-toolkits-on-path")


def _converges(m, fid):
    """Apply each fix line of ``fid`` that the model knows, in order, until one clears it; no new warning appears."""
    _, found, _ = m.findings()
    assert fid in found, found.keys()
    before = warned(found)
    applied = []
    for line in found[fid]["fix"]:
        if m.apply_fix(line):
            applied.append(line)
            break
    assert applied, (fid, found[fid]["fix"])  # a fix the user can apply here
    _, after, _ = m.findings()
    assert fid not in after, (fid, applied, after[fid])
    assert warned(after) <= before, (fid, applied, warned(after) - before)


@pytest.mark.parametrize("value", ["", "7", "0,0"])
def test_a_visible_devices_fix_clears_it(machine, value):
    a10g_535(machine)
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    _, found, _ = machine.findings()
    fid = next(i for i in found if i.startswith("visible-devices-"))
    _converges(machine, fid)


def test_cuda_link_not_active_across_versions_converges(machine):
    a10g_535(machine)
    machine.toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    machine.root.link("usr/local/cuda", "/usr/local/cuda-11.8")
    _converges(machine, "cuda-link-not-active")


def test_multiple_toolkits_on_path_converges(machine):
    a10g_535(machine)
    machine.toolkit("12.1.1", on_path=True).toolkit("11.8.0", on_path=True)
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    _converges(machine, "multiple-toolkits-on-path")


def test_cuda_home_mismatch_converges(machine):
    a10g_535(machine)
    machine.toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    machine.env["CUDA_HOME"] = "/usr/local/cuda-11.8"
    _converges(machine, "cuda-home-mismatch")


def test_cuda_link_dangling_converges(machine):
    a10g_535(machine)
    machine.toolkit("12.1.1", on_path=True)
    machine.root.link("usr/local/cuda", "/usr/local/cuda-11.8")
    _converges(machine, "cuda-link-dangling")


def test_device_order_converges(machine):
    from machine import ARCH_CU126, TITANV_5880

    machine.smi(query=recorded("smi-query-titanv-5880.txt"))
    machine.torch("2.13.0+cu126", "12.6", TITANV_5880, ARCH_CU126, order=[1, 0])
    _converges(machine, "device-order-differs")


def test_the_link_fix_never_points_the_system_link_into_a_users_install(machine):
    # a system 12.1 behind /usr/local/cuda, then cudaenv install 13.0 && source <(cudaenv use 13.0)
    a10g_535(machine).toolkit("12.1.1")
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    machine.cudaenv_install("13.0.2")
    assert machine.apply_fix("source <(cudaenv use 13.0)")
    _, found, _ = machine.findings()
    fix = "\n".join(found["cuda-link-not-active"]["fix"])
    assert "ln -sfn" not in fix and "cudaenv link" not in fix and "sudo" not in fix, fix
    assert "cudaenv use 12.1" in fix
    _converges(machine, "cuda-link-not-active")


@pytest.mark.parametrize("installed", [None, "2.13.0+cpu", "2.7.1+cu128"])
def test_a_torch_install_fix_converges(machine, installed):
    # no torch, a CPU torch, a cu128 torch on a 535 driver (minor-version compatibility): the planned build, installed
    a10g_535(machine)
    if installed:
        from machine import ARCH_CU128

        machine.torch(installed, "12.8" if "cu" in installed else None, machine.gpu_specs, ARCH_CU128)
    _, found, _ = machine.findings()
    fid = next(i for i in ("torch-missing", "torch-cpu-only", "driver-minor-compat") if i in found)
    if fid == "driver-minor-compat":
        assert found[fid]["severity"] == "info"  # the A10G has its sm_86 cubin: nothing to fix in the build
        return
    _converges(machine, fid)
    _, after, data = machine.findings()
    assert data["torch"]["cuda_available"] is True and not warned(after)
