"""End-to-end: `cudaenv doctor --json` on scenarios built like bug reports, one per finding id.

Each scenario is a fake root (toolkits, /proc, /sys, /dev files), a fake `nvidia-smi` printing recorded real
outputs (tests/recorded/smi-*, diag-*), an environment mapping, and a real interpreter: an empty venv, with a
small FAKE torch distribution on PYTHONPATH where the scenario needs a CUDA build that cannot be installed here
(it mimics exactly what cudaenv/_child/torch_probe.py calls, and applies CUDA_VISIBLE_DEVICES like CUDA does).
The real CPU torch 2.13.0 scenario is marked `torch`.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from builders import recorded
from machine import (
    A10G,
    ARCH_CU118,
    ARCH_CU121,
    ARCH_CU126,
    ARCH_CU128,
    ARCH_CU130,
    GTX1080TI,
    RTX2080TI_X4,
    TITANV_5880,
    Machine,
    a10g_535,
)


# ------------------------------------------------------------------ healthy
def test_healthy_machine_has_no_finding_above_info(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("12.1.1", on_path=True)
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    code, found, data = machine.findings("--strict")
    assert code == 0, found
    assert {f["severity"] for f in found.values()} <= {"info"}
    assert data["driver"]["version"] == "535.247.01" and data["torch"]["cuda_available"] is True
    assert all(set(f) >= {"id", "severity", "title", "detail", "fix"} for f in found.values())


# ------------------------------------------------------------------ environment
def test_wsl1(machine):
    machine.root.file("proc/version", recorded("proc-version-wsl1.txt"))
    machine.root.file("proc/sys/kernel/osrelease", "4.4.0-18985-Microsoft\n")
    machine.env["WSL_DISTRO_NAME"] = "Ubuntu-22.04"
    code, found, data = machine.findings()
    assert code == 1 and found["wsl1-no-cuda"]["severity"] == "error"
    # the env probe records WSL_DISTRO_NAME, so the fix names this distribution
    assert data["env"]["WSL_DISTRO_NAME"] == "Ubuntu-22.04"
    assert "wsl --set-version Ubuntu-22.04 2" in found["wsl1-no-cuda"]["fix"]


def test_wsl2_with_a_linux_driver_inside(machine):
    machine.root.file("proc/version", recorded("proc-version-wsl2.txt"))
    machine.root.file("proc/sys/kernel/osrelease", "5.4.72-microsoft-standard-WSL2\n")
    machine.root.file("dev/dxg", "")
    machine.root.file("usr/lib/wsl/lib/libcuda.so.1", "")
    machine.root.file("usr/lib/x86_64-linux-gnu/libcuda.so.1", "")
    machine.bin.command("nvidia-smi", stdout=recorded("smi-banner-wsl2.txt"))
    code, found, data = machine.findings()
    assert data["platform"]["wsl"] == 2
    f = found["wsl-linux-driver-installed"]
    assert code == 1 and "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in f["detail"]


def test_container_started_without_gpus(machine):
    machine.root.file(".dockerenv", "")
    machine.env["NVIDIA_VISIBLE_DEVICES"] = "all"
    code, found, _ = machine.findings()
    f = found["container-no-gpu"]
    assert code == 1 and f["severity"] == "error" and any("--gpus all" in x for x in f["fix"])


# ------------------------------------------------------------------ driver
def _pci_gpu(m, address="0000:01:00.0"):
    m.root.file("sys/bus/pci/devices/%s/vendor" % address, "0x10de\n")
    m.root.file("sys/bus/pci/devices/%s/class" % address, "0x030000\n")


def test_no_driver(machine):
    _pci_gpu(machine)
    machine.root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
    code, found, _ = machine.findings()
    f = found["no-driver"]
    assert code == 1 and "0000:01:00.0" in f["detail"] and "sudo ubuntu-drivers install" in f["fix"]


@pytest.mark.parametrize(
    "name, exit_code, fid",
    [
        ("smi-fail-no-driver.txt", 9, "driver-not-loaded"),
        ("smi-fail-mismatch.txt", 18, "driver-library-mismatch"),
        ("smi-fail-gpu-lost.txt", 15, "gpu-lost"),
        ("smi-fail-no-permission.txt", 4, "driver-no-permission"),
        ("smi-fail-no-devices.txt", 6, "driver-no-devices"),
    ],
)
def test_driver_failure_texts(machine, name, exit_code, fid):
    _pci_gpu(machine)
    machine.bin.command("nvidia-smi", stdout=recorded(name), exit_code=exit_code)
    code, found, _ = machine.findings()
    assert code == 1 and found[fid]["severity"] == "error", found
    assert recorded(name).splitlines()[0].strip() in found[fid]["detail"]
    assert "no-driver" not in found


def test_hung_nvidia_smi(machine):
    machine.bin.command("nvidia-smi", "never printed", sleep=30)
    code, found, _ = machine.findings("--timeout", "1", "--quick")
    assert code == 1 and "nvidia-smi-hang" in found


# ------------------------------------------------------------------ visibility
def test_four_gpus_with_cuda_visible_devices_2_3(machine):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"))  # driver 520.61.05: a cu118 torch fits it
    machine.torch("2.7.1+cu118", "11.8", RTX2080TI_X4, ARCH_CU118)
    machine.env["CUDA_VISIBLE_DEVICES"] = "2,3"
    code, found, data = machine.findings()
    assert code == 0 and data["torch"]["device_count"] == 2
    f = found["torch-count-differs"]
    assert f["severity"] == "info" and "cuda:0 = GPU 2" in f["detail"] and "cuda:1 = GPU 3" in f["detail"]
    assert "visible-devices-invalid" not in found


def test_one_gpu_with_cuda_visible_devices_1(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    machine.env["CUDA_VISIBLE_DEVICES"] = "1"
    code, found, data = machine.findings()
    f = found["visible-devices-invalid"]
    assert code == 1 and f["severity"] == "error" and "no GPU" in f["detail"]
    assert f["fix"][0] == "export CUDA_VISIBLE_DEVICES=0"
    assert data["torch"]["cuda_available"] is False and "torch-cuda-unavailable" not in found


def test_empty_cuda_visible_devices(machine):
    a10g_535(machine)
    machine.env["CUDA_VISIBLE_DEVICES"] = ""
    code, found, _ = machine.findings("--quick")
    assert code == 1 and found["visible-devices-empty"]["severity"] == "error"


@pytest.mark.parametrize("value", ["", "7"])
def test_a_setting_that_hides_every_gpu_is_its_own_finding_never_a_cpu_plan(machine, value):
    # an empty CUDA_VISIBLE_DEVICES (as some schedulers leave it) or one naming no GPU: the A10G decides the build
    a10g_535(machine)
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    code, found, _ = machine.findings()
    assert code == 1 and ("visible-devices-empty" if not value else "visible-devices-invalid") in found
    fix = "\n".join(found["torch-missing"]["fix"])
    assert "https://download.pytorch.org/whl/cu126" in fix and "/whl/cpu" not in fix, fix
    machine.torch("2.13.0+cpu", None)
    _, found, _ = machine.findings()
    fix = "\n".join(found["torch-cpu-only"]["fix"])
    assert "https://download.pytorch.org/whl/cu126" in fix and "/whl/cpu" not in fix, fix


def test_two_models_without_pci_bus_order(machine):
    machine.smi(query=recorded("smi-query-titanv-5880.txt"))
    machine.torch("2.13.0+cu126", "12.6", TITANV_5880, ARCH_CU126, order=[1, 0])  # CUDA puts the faster Ada first
    code, found, _ = machine.findings()
    f = found["device-order-differs"]
    assert "0: NVIDIA TITAN V, 1: NVIDIA RTX 5880 Ada Generation" in f["detail"]
    assert "cuda:0: NVIDIA RTX 5880 Ada Generation" in f["detail"]
    machine.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    _, found2, _ = machine.findings("--quick")
    assert "device-order-differs" not in found2


def test_torch_sees_fewer_gpus_than_nvidia_smi(machine):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"))
    machine.torch("2.13.0+cu130", "13.0", RTX2080TI_X4, ARCH_CU130, order=[0])
    code, found, _ = machine.findings()
    assert found["torch-count-differs"]["severity"] == "warning"


# ------------------------------------------------------------------ versions
def test_torch_missing_is_info(machine):
    a10g_535(machine)
    code, found, _ = machine.findings()
    assert code == 0 and found["torch-missing"]["severity"] == "info"
    assert machine.python in found["torch-missing"]["detail"]


def test_fake_cpu_torch_beside_a_gpu(machine):
    a10g_535(machine).torch("2.13.0+cpu", None)
    code, found, _ = machine.findings()
    f = found["torch-cpu-only"]
    assert code == 1 and "2.13.0+cpu" in f["title"]
    fix = "\n".join(f["fix"])
    assert machine.python in fix and "torch==2.13.0" in fix and "https://download.pytorch.org/whl/cu126" in fix


@pytest.mark.torch
def test_real_cpu_torch_2_13_beside_a_gpu(fake_root, fake_bin, tmp_path, cli):
    pytest.importorskip("torch")
    m = Machine(fake_root, fake_bin, tmp_path, cli, sys.executable)
    a10g_535(m)
    code, found, data = m.findings()
    assert data["torch"]["version"].startswith("2.13.0") and data["torch"]["cuda"] is None and data["torch"]["dynamic"] is True
    f = found["torch-cpu-only"]
    assert code == 1 and sys.executable in "\n".join(f["fix"]) and "torch==2.13.0" in "\n".join(f["fix"])


def test_cu128_torch_beside_a_535_driver(machine):
    a10g_535(machine).torch("2.9.0+cu128", "12.8", A10G, ARCH_CU128)
    code, found, _ = machine.findings()
    f = found["driver-minor-compat"]
    # the A10G runs the build's sm_86 cubin: minor-version compatibility costs torch nothing here (a note)
    assert f["severity"] == "info" and "535.247.01" in f["detail"] and "570.26" in f["detail"]
    assert code == 0 and "driver-too-old-for-torch" not in found
    strict = machine.doctor("--strict")
    assert strict.code == 0


def test_cu130_torch_beside_a_535_driver(machine):
    a10g_535(machine).torch("2.13.0+cu130", "13.0", A10G, ARCH_CU130,
                            warning="The NVIDIA driver on your system is too old (found version 12020).")
    code, found, _ = machine.findings()
    f = found["driver-too-old-for-torch"]
    assert code == 1 and "580" in f["detail"] and "535.247.01" in f["detail"]
    assert "cu126" in " ".join(f["fix"]) or "cu126" in f["detail"]
    assert "torch-cuda-unavailable" not in found


def test_gtx_1080_ti_with_an_arch_list_from_sm_75(machine):
    machine.smi(query=recorded("diag-query-1080ti.txt"), banner=recorded("diag-banner-1080ti.txt"))
    machine.torch("2.13.0+cu130", "13.0", GTX1080TI, ARCH_CU130)
    code, found, _ = machine.findings()
    f = found["gpu-arch-unsupported"]
    assert code == 1 and "6.1" in f["detail"] and "sm_75" in f["detail"]
    assert "whl/cu126" in "\n".join(f["fix"])


def test_torch_cuda_unavailable_on_a_working_driver(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121,
                            warning="CUDA unknown error - this may be due to an incorrectly set up environment")
    code, found, _ = machine.findings()
    f = found["torch-cuda-unavailable"]
    assert code == 1 and "CUDA unknown error" in f["detail"]


def test_torch_whose_import_fails(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", init_raises="OSError('libcudnn.so.9: cannot open shared object file')")
    code, found, _ = machine.findings()
    assert code == 1 and "libcudnn.so.9" in found["torch-import-error"]["detail"]


# ------------------------------------------------------------------ toolkits
def test_cuda_link_to_12_1_while_path_has_11_8(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    machine.toolkit("11.8.0", on_path=True).toolkit("12.1.1")
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    code, found, data = machine.findings()
    f = found["cuda-link-not-active"]
    assert "/usr/local/cuda-12.1" in f["detail"] and "/usr/local/cuda-11.8" in f["detail"]
    assert any("cudaenv use 12.1" in x for x in f["fix"])
    assert "nvcc-torch-mismatch" in found


def test_toolkit_newer_than_the_driver(machine):
    a10g_535(machine).toolkit("13.0.2", on_path=True)
    code, found, _ = machine.findings("--quick")
    f = found["toolkit-newer-than-driver"]
    assert code == 1 and f["severity"] == "error" and "580" in f["detail"]


def test_dangling_cuda_link(machine):
    machine.toolkit("12.1.1", on_path=True)
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    code, found, _ = machine.findings("--quick")
    f = found["cuda-link-dangling"]
    assert any("ln -sfn /usr/local/cuda-12.1 /usr/local/cuda" in x for x in f["fix"])


def test_two_toolkits_on_path(machine):
    machine.toolkit("12.1.1", on_path=True).toolkit("11.8.0", on_path=True)
    code, found, _ = machine.findings("--quick")
    assert "/usr/local/cuda-11.8" in found["multiple-toolkits-on-path"]["detail"]


def test_cuda_home_points_at_another_toolkit(machine):
    machine.toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    machine.env["CUDA_HOME"] = "/usr/local/cuda-11.8"
    code, found, _ = machine.findings("--quick")
    f = found["cuda-home-mismatch"]
    assert f["fix"][0].startswith("export CUDA_HOME=/usr/local/cuda-12.1")


def test_ld_library_path_holds_another_toolkit(machine):
    machine.toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    machine.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.8/lib64:/opt/intel/lib"
    code, found, _ = machine.findings("--quick")
    assert found["ld-library-path-mismatch"]["fix"][0] == "export LD_LIBRARY_PATH=/opt/intel/lib"


def test_two_cudnn_majors(machine):
    machine.toolkit("12.4.1", on_path=True, cudnn="8.9.7")
    machine.root.file("usr/include/cudnn_version.h", recorded("cudnn-9.6.0-cudnn_version.h"))
    code, found, data = machine.findings("--quick")
    assert "cudnn-mismatch" in found, data["cudnn"]


# ------------------------------------------------------------------ resources and hints
def test_busy_gpu_and_stale_processes(machine):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"), apps=recorded("smi-apps-2080ti.txt"))
    machine.root.file("proc/4054862/status", "Name:\tpython\nState:\tS (sleeping)\nUid:\t1000\t1000\t1000\t1000\n")
    machine.root.file("proc/4055325/status", "Name:\tpython3\nState:\tZ (zombie)\nUid:\t0\t0\t0\t0\n")
    machine.root.file("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n")
    code, found, _ = machine.findings("--quick")
    busy = found["gpu-memory-busy"]
    assert "GPU 1" in busy["title"] and "pid 4054862" in busy["detail"] and "alice" in busy["detail"]
    assert busy["fix"][0].startswith("kill 4054862")
    stale = found["stale-gpu-process"]
    assert "pid 777" in stale["detail"] and "pid 4055325" in stale["detail"]


def test_multi_gpu_hints(machine):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"))
    machine.torch("2.7.1+cu118", "11.8", RTX2080TI_X4, ARCH_CU118)
    _, found, _ = machine.findings()
    assert {"hint-launch-blocking", "hint-distributed-debug", "hint-nccl-debug"} <= set(found)
    assert all(found[i]["severity"] == "info" for i in ("hint-launch-blocking", "hint-distributed-debug", "hint-nccl-debug"))


def test_no_debugging_hints_while_an_error_stands(machine):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"))  # driver 520.61.05 cannot run a cu130 torch
    machine.torch("2.13.0+cu130", "13.0", RTX2080TI_X4, ARCH_CU130)
    code, found, _ = machine.findings()
    assert code == 1 and "driver-too-old-for-torch" in found
    assert not any(fid.startswith("hint-") for fid in found)
    assert "torch 2.7.1" in found["driver-too-old-for-torch"]["detail"]  # the newest torch with a build for this driver
    assert any("whl/cu118" in x for x in found["driver-too-old-for-torch"]["fix"])


# ------------------------------------------------------------------ more toolkit and hint scenarios
def test_nvcc_torch_mismatch_with_no_matching_toolkit_installed(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("11.8.0", on_path=True)
    machine.root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
    code, found, _ = machine.findings()
    f = found["nvcc-torch-mismatch"]
    assert f["severity"] == "warning" and code == 0
    assert "(11.8) mismatches the version that was used to compile PyTorch (12.1)" in f["detail"]
    assert f["fix"][0].startswith("sudo apt-get install cuda-toolkit-12-1") and "cudaenv use 12.1" in f["fix"][1]


def test_nvcc_torch_mismatch_points_at_the_installed_toolkit(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("11.8.0", on_path=True).toolkit("12.1.1")
    _, found, _ = machine.findings()
    f = found["nvcc-torch-mismatch"]
    assert "CUDA 12.1 is installed at /usr/local/cuda-12.1" in f["detail"]
    assert f["fix"] == ["source <(cudaenv use 12.1)    # fish: cudaenv use 12.1 --shell fish | source"]


def test_cudnn_8_inside_a_cuda_13_toolkit(machine):
    machine.toolkit("13.0.2", on_path=True, cudnn="8.9.7")
    code, found, data = machine.findings("--quick")
    f = found["cudnn-mismatch"]
    assert "cuDNN 8.9.7 does not fit the CUDA 13.0 toolkit" in f["title"], data["cudnn"]
    assert "/usr/local/cuda-13.0" in f["detail"] and "cudnn9-cuda-13" in f["fix"][0] and "cuDNN 9 for CUDA 13" in f["fix"][0]


def test_launch_blocking_left_set(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    machine.env["CUDA_LAUNCH_BLOCKING"] = "1"
    code, found, _ = machine.findings("--strict")
    assert code == 0 and found["launch-blocking-set"]["severity"] == "info"
    assert found["launch-blocking-set"]["fix"] == ["unset CUDA_LAUNCH_BLOCKING"] and "hint-launch-blocking" not in found


SYSTEM_PYTHON = "/usr/bin/python3"


def _pep668_marked(python):
    r = subprocess.run([python, "-c", "import sys, sysconfig, os; print(sys.prefix != sys.base_prefix or "
                        "not os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"],
                       capture_output=True, text=True, timeout=60)
    return r.returncode == 0 and r.stdout.strip() == "False"


@pytest.mark.allow_run(SYSTEM_PYTHON)  # a real system interpreter, on purpose
def test_torch_missing_beside_a_pep_668_system_python(fake_root, fake_bin, tmp_path, cli):
    """A real system interpreter marked EXTERNALLY-MANAGED: the fix makes a venv (pip would refuse), as `cudaenv fix` does."""
    if not Path(SYSTEM_PYTHON).exists() or not _pep668_marked(SYSTEM_PYTHON):
        pytest.skip("no PEP 668 system Python at %s" % SYSTEM_PYTHON)
    m = a10g_535(Machine(fake_root, fake_bin, tmp_path, cli, SYSTEM_PYTHON))
    code, found, data = m.findings("--quick")
    if data["torch"]["installed"]:
        pytest.skip("%s has torch" % SYSTEM_PYTHON)
    assert data["torch"]["externally_managed"] is True
    fix = found["torch-missing"]["fix"]
    assert fix[0].startswith("/usr/bin/python3 -m venv ~/.venvs/torch") and "PEP 668" in fix[0]
    assert fix[1].startswith("~/.venvs/torch/bin/python -m pip install torch") and "whl/cu126" in fix[1]
