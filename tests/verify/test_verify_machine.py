"""verify on a machine without a GPU says so (the doctor's finding, the --cpu offer), never blames torch; the bare
`cudaenv` is a usage error (issue 13). Fake roots and a fake interpreter printing verify_device.py's lines."""

import importlib.util
import json
import sys

import pytest

from builders import TOOLS

CPU_TORCH = r"""#!/bin/sh
case "$*" in
  *--info*|*--device*) ;;
  *) exit 0;;
esac
echo 'CUDAENV_VERIFY {"event": "info", "torch": "2.13.0+cpu", "cuda": null, "cuda_available": false, "device_count": 0}'
case "$*" in
  *--device*) echo 'CUDAENV_VERIFY {"event": "error", "stage": "select", "type": "AssertionError", "message": "Torch not compiled with CUDA enabled"}';;
esac
echo 'CUDAENV_VERIFY {"event": "done", "ok": false}'
"""


@pytest.fixture
def cpu_python(fake_bin):
    p = fake_bin.path / "python3"
    p.write_text(CPU_TORCH)
    p.chmod(0o755)
    return str(p)


def _env(fake_bin):
    return {"PATH": "%s:%s" % (fake_bin.path, TOOLS)}


def test_verify_in_a_container_without_the_gpu_names_the_container(cli, fake_root, fake_bin, cpu_python):
    fake_root.file(".dockerenv")
    r = cli("verify", "--root", str(fake_root.path), "--python", cpu_python, env=_env(fake_bin))
    assert r.code == 1
    assert "container-no-gpu" in r.out and "container started without the GPU" in r.out
    assert "verify --cpu" in r.out
    assert "install a CUDA build" not in r.out and "finding torch-cpu-only" not in r.out
    data = cli("verify", "--json", "--root", str(fake_root.path), "--python", cpu_python, env=_env(fake_bin)).json()
    assert data["devices"]["problem"]["id"] == "container-no-gpu"


def test_the_containers_fix_pastes_as_the_doctor_prints_it(cli, fake_root, fake_bin, cpu_python):
    """Issue 13: verify wrapped the finding's fix like prose, so `... && sudo systemctl` and `restart docker` were
    two commands when pasted. A finding's fix is shell lines (``fix`` in the JSON), laid out as the doctor does."""
    fake_root.file(".dockerenv")
    r = cli("verify", "--root", str(fake_root.path), "--python", cpu_python, env=_env(fake_bin))
    lines = r.out.splitlines()
    assert not any(line.rstrip().endswith("systemctl") for line in lines), r.out
    at = next(i for i, line in enumerate(lines) if "nvidia-ctk runtime configure" in line)
    whole = lines[at].rstrip()
    while whole.endswith(" \\"):
        at += 1
        whole = whole[:-2] + " " + lines[at].strip()
    assert whole.strip() == "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"
    error = cli("verify", "--json", "--root", str(fake_root.path), "--python", cpu_python, env=_env(fake_bin)).json()["devices"]["problem"]["error"]
    assert "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker" in error["fix"]
    assert error["advice"] == []


def test_verify_on_a_machine_without_driver_or_device_says_no_gpu(cli, fake_root, fake_bin, cpu_python):
    r = cli("verify", "--json", "--root", str(fake_root.path), "--python", cpu_python, env=_env(fake_bin))
    problem = r.json()["devices"]["problem"]
    assert problem["id"] == "no-gpu" and "/dev/nvidia" in problem["message"]
    assert "verify --cpu" in " ".join(problem["error"]["advice"])


def test_verify_distributed_without_gpu_says_why_and_offers_gloo(cli, fake_root, fake_bin, cpu_python):
    fake_root.file(".dockerenv")
    r = cli("verify", "--distributed", "--root", str(fake_root.path), "--python", cpu_python, env=_env(fake_bin))
    assert r.code == 1
    assert "0 ranks" not in r.out
    assert "--backend gloo" in r.out and "container-no-gpu" in r.out


def test_cudaenv_without_arguments_is_a_usage_error(cli):
    r = cli()
    assert r.code == 2 and "usage: cudaenv" in r.err and r.out == ""


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed in the test interpreter")
def test_verify_cpu_never_says_host_to_device(cli):
    r = cli("verify", "--cpu", "--json", "--python", sys.executable, env={"PATH": TOOLS})
    data = json.loads(r.out)
    details = " ".join(c["detail"] for d in data["devices"]["devices"] for c in d["checks"])
    assert "host->device" not in details and "device->host" not in details
