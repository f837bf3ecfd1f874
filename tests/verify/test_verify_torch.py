"""cudaenv verify for real against the CPU torch 2.13.0 of the test interpreter (`nox -s torch`).

The interpreter under test is ``sys.executable`` (it has torch); nothing here needs a GPU. Each test stays
well under 30 s: tiny tensors, two ranks.
"""

import importlib.util
import sys

import pytest

from builders import TOOLS

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed in the test interpreter"),
]

ENV = {"PATH": TOOLS, "HOME": "/tmp"}


def test_verify_cpu_passes_with_real_numbers(cli):
    r = cli("verify", "--cpu", "--json", "--python", sys.executable, env=ENV)
    assert r.code == 0, r
    data = r.json()
    dev = data["devices"]["devices"][0]
    assert dev["ok"] and dev["device"] == "cpu" and dev["logical"] is None
    assert [c["name"] for c in dev["checks"]] == ["allocate", "elementwise", "matmul-fp32", "matmul-fp16", "matmul-bf16",
                                                  "copy-to-host", "synchronize", "benchmark"]
    assert all(c["ok"] for c in dev["checks"])
    assert dev["tflops"] > 0 and dev["gbps"] > 0
    assert data["devices"]["torch"].startswith("2.13.0")
    text = cli("verify", "--cpu", "--python", sys.executable, env=ENV)
    assert text.code == 0 and "all checks passed on 1 device" in text.out
    assert "TFLOP/s fp32 matmul" in text.out


def machine_reason(cli):
    """What verify must name on this machine: the doctor's first environment or driver problem (a container
    started without its GPU, no driver, ...), else None (then torch's own symptom is the reason)."""
    doctor = cli("doctor", "--json", "--quick", "--python", sys.executable, env=ENV).json()
    for f in doctor["findings"]:
        if f["section"] in ("environment", "driver") and f["severity"] in ("error", "warning"):
            return f["id"]
    return None


def test_verify_without_a_gpu_says_why_and_exits_1(cli):
    r = cli("verify", "--json", "--python", sys.executable, env=ENV)
    assert r.code == 1
    problem = r.json()["devices"]["problem"]
    reason = machine_reason(cli)
    if reason is not None:  # e.g. container-no-gpu in CI's container: the machine's reason comes before torch's
        assert problem["id"] == reason
        assert problem["message"].startswith("nothing can run on a GPU here: ")
    elif r.json()["devices"]["torch_cuda"] is None:
        assert problem["id"] in ("torch-cpu-only", "no-gpu")
    else:
        assert problem["id"] in ("torch-cuda-unavailable", "no-driver", "no-gpu")
    text = cli("verify", "--python", sys.executable, env=ENV).out
    assert "Nothing ran on a GPU (finding %s)" % problem["id"] in text


def test_verify_distributed_gloo_two_real_ranks(cli):
    r = cli("verify", "--distributed", "--backend", "gloo", "--nproc", "2", "--json", "--python", sys.executable, env=ENV)
    assert r.code == 0, r
    data = r.json()["distributed"]
    assert data["ok"] and data["backend"] == "gloo" and data["nproc"] == 2
    assert [x["rank"] for x in data["ranks"]] == [0, 1]
    for rank in data["ranks"]:
        assert rank["ok"] and rank["device"] == "cpu"
        names = [c["name"] for c in rank["checks"]]
        assert names == ["init", "all-reduce", "broadcast", "barrier", "bandwidth"]
        assert rank["checks"][1]["detail"] == "sum of ranks 1..2 = 3 (got 3)"


def test_verify_distributed_a_hung_rank_is_stopped_and_explained(cli):
    r = cli("verify", "--distributed", "--backend", "gloo", "--nproc", "2", "--hang-rank", "1", "--device-timeout", "15",
            "--json", "--python", sys.executable, env=ENV)
    assert r.code == 1
    data = r.json()["distributed"]
    assert data["error"]["id"] == "dist-timeout"
    assert not data["ranks"][0]["ok"] and data["ranks"][0]["error"]["stage"] == "all-reduce"


def test_verify_distributed_without_gpus_defaults_to_nccl_and_says_use_gloo(cli):
    from importlib.metadata import version

    r = cli("verify", "--distributed", "--json", "--python", sys.executable, env=ENV)
    assert r.code == 1  # nothing here has a GPU: nccl cannot run
    err = r.json()["distributed"]["error"]
    assert "--backend gloo" in err["message"]
    reason = machine_reason(cli)
    if reason is not None:  # the machine's own reason (container-no-gpu in CI's container) comes first
        assert err["id"] == reason
    elif version("torch").endswith("+cpu"):  # the pinned CPU torch 2.13.0 of `nox -s torch`
        assert err["id"] in ("torch-cpu-only", "no-gpu")
    else:
        assert err["id"] in ("torch-cuda-unavailable", "no-driver")


def test_explain_probe_adds_this_machines_facts(cli):
    r = cli("explain", "--probe", "--json", "--python", sys.executable, "RuntimeError: CUDA error: invalid device ordinal", env=ENV)
    assert r.code == 0, r
    data = r.json()
    assert data["facts"]["torch"].startswith("2.13.0")
    assert data["context"][0] == "Here torch sees 0 GPU(s): no GPU."


def test_device_child_directly_on_a_cpu_torch():
    from cudaenv.host import Host
    from cudaenv.verify import verify_devices

    report = verify_devices(Host(env=ENV), sys.executable, [0], timeout=60, hardware=((), ()))
    assert report.problem is not None and report.results == ()
    assert report.info["device_count"] == 0
