"""The real thing, on a machine with an NVIDIA GPU and a CUDA torch: `nox -s gpu` (offline: `.ci/gpu`).

The torch verified is the one in CUDAENV_GPU_PYTHON (the machine's own CUDA torch), else the test
interpreter's. Deselected everywhere else (`-m "not gpu"`), skipped when run by hand on a machine without
a GPU, and failed there under `nox -s gpu` (CUDAENV_GPU_REQUIRED). The figures they print (TFLOP/s,
GB/s) are the ones to copy into the README's benchmarks.
"""

import os
import shutil
import subprocess
import sys

import pytest

PYTHON = os.environ.get("CUDAENV_GPU_PYTHON") or sys.executable


def _gpu_count() -> int:
    try:
        out = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"],
                             capture_output=True, text=True, timeout=120)
        return int(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return 0


pytestmark = [pytest.mark.gpu]


@pytest.fixture(scope="module")
def gpus():
    count = _gpu_count()  # only when a gpu test is selected: nothing runs at import time
    if count <= 0:
        why = "no usable NVIDIA GPU with a CUDA torch in %s" % PYTHON
        if os.environ.get("CUDAENV_GPU_REQUIRED"):  # set by `nox -s gpu`: there, a skip would hide the problem
            pytest.fail(why + " (nox -s gpu needs one; `cudaenv doctor --python %s` says why)" % PYTHON)
        pytest.skip(why)
    return count


def _env():
    import os

    return dict(os.environ)


def test_verify_every_gpu(cli, gpus):
    r = cli("verify", "--json", "--python", PYTHON, env=_env())
    data = r.json()
    devices = data["devices"]["devices"]
    assert len(devices) == gpus
    for d in devices:
        print("%s = GPU %s %s (sm_%s): %.2f TFLOP/s fp32, %.1f GB/s device->host" % (
            d["device"], d["physical"], d["name"], (d["capability"] or "").replace(".", ""), d["tflops"] or 0, d["gbps"] or 0))
        assert d["ok"], d["error"]
        assert d["tflops"] > 0 and d["gbps"] > 0
        assert d["memory_total_mib"] > 0
        assert d["physical"] is not None  # named through UUID / PCI bus id / CUDA_VISIBLE_DEVICES
        checks = {c["name"]: c for c in d["checks"]}
        assert checks["matmul-fp16"]["ok"] and not checks["matmul-fp16"]["skipped"]
        if float(d["capability"]) >= 8.0:  # bf16 in hardware from Ampere on: run, not skipped
            assert checks["matmul-bf16"]["ok"] and not checks["matmul-bf16"]["skipped"], checks["matmul-bf16"]
    assert r.code == 0


def test_verify_one_device_by_number(cli, gpus):
    r = cli("verify", "--json", "--device", str(gpus - 1), "--python", PYTHON, env=_env())
    assert r.code == 0, r
    assert [d["logical"] for d in r.json()["devices"]["devices"]] == [gpus - 1]


def test_verify_a_device_that_does_not_exist(cli, gpus):
    r = cli("verify", "--json", "--device", str(gpus), "--python", PYTHON, env=_env())
    assert r.code == 1
    assert r.json()["devices"]["devices"][0]["error"]["id"] == "invalid-device-ordinal"


def test_distributed_nccl(cli, gpus):
    nproc = min(gpus, 2)
    r = cli("verify", "--distributed", "--nproc", str(nproc), "--json", "--python", PYTHON, env=_env())
    data = r.json()["distributed"]
    for rank in data["ranks"]:
        print("rank %d on %s (GPU %s), NCCL %s: %.2f GB/s all-reduce" % (rank["rank"], rank["device"], rank["physical"], rank["nccl"], rank["busbw_gbps"] or 0))
    assert r.code == 0, data
    assert data["backend"] == "nccl" and all(x["nccl"] for x in data["ranks"])


def test_toolkit_compiles_and_runs_on_the_gpu(cli, gpus):
    from cudaenv.host import Host
    from cudaenv.verify.toolkit_check import find_nvcc

    if find_nvcc(Host(env=_env())) is None:
        pytest.skip("no nvcc on this machine")
    if shutil.which("g++") is None and shutil.which("gcc") is None:
        pytest.skip("nvcc is here but no host C++ compiler (gcc/g++) for it to use")
    r = cli("verify", "--toolkit", "--json", env=_env())
    data = r.json()["toolkit"]
    if data["unsupported"]:
        assert r.code == 1 and data["error"]["id"] == "nvcc-arch-unsupported"
    else:
        assert r.code == 0, data
        assert data["ran"] is True and len(data["devices"]) >= 1
