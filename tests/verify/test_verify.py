"""cudaenv verify without torch: recorded child outputs, fake interpreters, the GPU paths classified.

The GPU-only paths use outputs in the child scripts' own format (tests/recorded/verify-*, labelled as
constructed: there is no GPU here); the classification uses the real error texts of tests/recorded/err-*.
A fake ``python`` prints a recorded output depending on the ``--device N`` / ``--info`` it is given.
"""

import json
import os
import shlex
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import RECORDED, TOOLS, recorded
from cudaenv.host.process import CommandResult
from cudaenv.model.snapshot import DeviceMapping, Gpu
from cudaenv.verify import (
    MARKER,
    ChildReport,
    device_result,
    distributed_result,
    map_physical,
    parse_device_output,
    parse_devices_arg,
    parse_rank_events,
    plan_device_argv,
    plan_distributed_argv,
    problem_from_report,
)


def ok_result(stdout="", stderr="", code=0, error=None, seconds=1.0, timeout=120.0):
    return CommandResult(("python",), code, stdout, stderr, error, seconds, timeout)


def fake_python(tmp_path, cases, default="", name="python"):
    """A fake interpreter: ``cases`` maps a substring of its arguments to (file under recorded/ or text, exit, sleep, die)."""
    lines = ["#!/bin/sh", 'args="$*"']
    for i, (pattern, spec) in enumerate(cases.items()):
        source, code = spec[0], spec[1]
        sleep = spec[2] if len(spec) > 2 else None
        signal = spec[3] if len(spec) > 3 else None
        out = tmp_path / ("out%d.txt" % i)
        out.write_text(recorded(source) if (RECORDED / source).is_file() else source, encoding="utf-8")
        lines.append("case \"$args\" in *%s*)" % shlex.quote(pattern))
        lines.append("  /bin/cat %s" % shlex.quote(str(out)))
        if sleep:
            lines.append("  exec /bin/sleep %s" % sleep)
        if signal:
            lines.append("  kill -%s $$" % signal)
        lines.append("  exit %d;;" % code)
        lines.append("esac")
    lines.append("echo %s" % shlex.quote(default))
    lines.append("exit 1")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return str(path)


def vcli(cli, tmp_path, *argv, env=None):
    """`cudaenv ARGV` with files read inside an empty root: the real machine's NVML library is never loaded."""
    root = tmp_path / "emptyroot"
    root.mkdir(exist_ok=True)
    full = dict(env or {"PATH": TOOLS})
    full["CUDAENV_ROOT"] = str(root)
    return cli(*argv, env=full)


def smi(fake_bin, query="smi-query-2080ti-x4.txt"):
    fake_bin.command("nvidia-smi", "", 0, by_args={"--query-gpu": (recorded(query), 0), "--query-compute-apps": ("", 0)})


# ----------------------------------------------------------------------------- pure parts
def test_parse_device_output_reads_events_and_ignores_noise():
    text = "some torch print\n" + recorded("verify-h100-ok.txt") + "\nUserWarning: whatever\n"
    report = parse_device_output(text)
    assert report.info["torch"] == "2.13.0+cu130" and report.info["device_count"] == 2
    assert report.device["name"] == "NVIDIA H100 80GB HBM3"
    assert [c.name for c in report.checks] == ["allocate", "elementwise", "matmul-fp32", "matmul-fp16", "matmul-bf16",
                                               "copy-to-host", "synchronize", "memory", "benchmark"]
    assert report.figure["tflops"] == 48.7 and report.memory["free_mib"] == 80641
    assert report.done is True and report.errors == ()


@settings(max_examples=200)
@given(st.text(max_size=2000))
def test_parse_device_output_any_text_no_exception(text):
    parse_device_output(text)
    parse_device_output(MARKER + text)
    parse_rank_events(text)


def test_parse_devices_arg():
    assert parse_devices_arg(None) is None and parse_devices_arg("all") is None
    assert parse_devices_arg("0,2") == [0, 2]
    assert parse_devices_arg("cuda:1, 3,1") == [1, 3]
    with pytest.raises(ValueError):
        parse_devices_arg("0,x")


def test_plan_device_argv():
    argv = plan_device_argv("/venv/bin/python", "SRC", device=2, deadline=55)
    assert argv[:3] == ["/venv/bin/python", "-c", "SRC"]
    assert argv[3:5] == ["--device", "2"] and argv[-2:] == ["--deadline", "55"]
    assert "--cpu" in plan_device_argv("p", "S", cpu=True) and "--info" in plan_device_argv("p", "S", info=True)


GPUS = (
    Gpu(0, "NVIDIA GeForce RTX 2080 Ti", "GPU-67a571b1-79ee-1016-8ea3-c1fff3f1c1d2", "00000000:0A:00.0", compute_capability="7.5"),
    Gpu(1, "NVIDIA GeForce RTX 2080 Ti", "GPU-3e34e62f-d88e-f448-415e-be2cbf2c6178", "00000000:0B:00.0", compute_capability="7.5"),
    Gpu(2, "NVIDIA GeForce RTX 2080 Ti", "GPU-2d540dd6-583b-cf11-80dd-cc28edc1dd62", "00000000:41:00.0", compute_capability="7.5"),
    Gpu(3, "NVIDIA GeForce RTX 2080 Ti", "GPU-80be5c9a-eb7d-2388-ad7c-7d3ee8f87235", "00000000:42:00.0", compute_capability="7.5"),
)


def test_map_physical_by_uuid_then_bus_then_mapping():
    assert map_physical(0, {"uuid": "GPU-80BE5C9A-eb7d-2388-ad7c-7d3ee8f87235"}, GPUS)[0] == 3
    assert map_physical(0, {"pci_bus_id": "0000:41:00.0"}, GPUS)[0] == 2
    mapping = (DeviceMapping(0, 2), DeviceMapping(1, 3))
    assert map_physical(1, {}, GPUS, mapping)[0] == 3
    assert map_physical(1, {}, (), mapping)[0] == 3
    assert map_physical(1, {}, GPUS, ()) == (None, None)
    assert map_physical(None, {"uuid": GPUS[0].uuid}, GPUS) == (None, None)  # the CPU has no physical GPU


def test_device_result_ok_names_the_physical_gpu():
    r = device_result(0, parse_device_output(recorded("verify-2080ti-cuda0-ok.txt")), ok_result(), GPUS)
    assert r.ok and r.error is None
    assert (r.physical, r.name, r.capability) == (2, "NVIDIA GeForce RTX 2080 Ti", "7.5")
    bf16 = [c for c in r.checks if c.name == "matmul-bf16"][0]
    assert bf16.skipped and bf16.ok
    data = r.to_dict()
    assert set(["logical", "physical", "name", "capability", "ok", "checks", "tflops", "gbps", "error"]) <= set(data)
    assert data["checks"][0] == {"name": "allocate", "ok": True, "seconds": 0.412, "detail": "256 x 256 fp32 host->device", "skipped": False}
    assert data["tflops"] == 12.41 and data["gbps"] == 12.9 and data["device"] == "cuda:0"


def test_device_result_no_kernel_image_is_gpu_arch_unsupported():
    r = device_result(1, parse_device_output(recorded("verify-1080ti-cu128-no-kernel.txt")), ok_result(code=1))
    assert not r.ok
    assert r.error.id == "gpu-arch-unsupported" and r.error.stage == "elementwise"
    assert r.error.message.startswith("AcceleratorError: CUDA error: no kernel image")
    assert any("cudaenv torch recommend" in a for a in r.error.advice)
    assert [c.ok for c in r.checks] == [True, False]


def test_device_result_out_of_memory():
    r = device_result(0, parse_device_output(recorded("verify-3080-oom.txt")), ok_result(code=1))
    assert r.error.id == "cuda-oom" and "It asked for 256.00 KiB." in r.error.details


def test_device_result_timeout_and_crash():
    partial = parse_device_output(recorded("verify-h100-hang-partial.txt"))
    r = device_result(0, partial, ok_result(code=None, error="timeout", timeout=30.0), timeout=30.0)
    assert not r.ok and r.error.id == "verify-timeout"
    assert [c.name for c in r.checks] == ["allocate", "elementwise"]
    crashed = device_result(1, partial, ok_result(code=-11, stderr="Segmentation fault"))
    assert crashed.error.id == "verify-crashed" and "signal 11" in crashed.error.message


def test_device_result_wrong_numbers_without_an_exception():
    text = recorded("verify-h100-ok.txt").replace(
        '"name": "matmul-fp16", "ok": true', '"name": "matmul-fp16", "ok": false').replace("relative error 4.87e-04", "relative error 3.14e-01")
    r = device_result(0, parse_device_output(text), ok_result())
    assert not r.ok and r.error.id == "wrong-result"
    assert r.error.message == "matmul-fp16 gave a wrong result: relative error 3.14e-01 (limit 1e-02)"


def test_problem_from_report():
    report = parse_device_output(recorded("verify-driver-too-old.txt"))
    p = problem_from_report(report, "/venv/bin/python")
    assert p.id == "driver-too-old-for-torch"
    assert "torch 2.7.1+cu128 in /venv/bin/python (built for CUDA 12.8) cannot use a GPU here" in p.message
    assert "The driver reports CUDA 11.4 as the newest it supports." in p.error.details
    missing = ChildReport(errors=({"stage": "import", "type": "ModuleNotFoundError", "message": "No module named 'torch'"},))
    assert problem_from_report(missing, "/usr/bin/python3").id == "torch-missing"
    libs = ChildReport(errors=({"stage": "import", "type": "ImportError", "message": recorded("err-libcudart-missing.txt")},))
    assert problem_from_report(libs, "p").id == "libcudart-missing"
    odd = ChildReport(errors=({"stage": "import", "type": "SyntaxError", "message": "invalid syntax"},))
    assert problem_from_report(odd, "p").id == "torch-import-error"  # the doctor's id for a torch that fails to import
    cpu = ChildReport(info={"torch": "2.13.0+cpu", "cuda": None}, errors=({"stage": "select", "message": "Torch not compiled with CUDA enabled"},))
    assert problem_from_report(cpu, "p").id == "torch-cpu-only"
    nogpu = ChildReport(info={"torch": "2.13.0+cu130", "cuda": "13.0"}, errors=({"stage": "select", "message": "No CUDA GPUs are available"},))
    assert problem_from_report(nogpu, "p").id == "torch-cuda-unavailable"
    assert problem_from_report(parse_device_output(recorded("verify-h100-ok.txt")), "p") is None


# ----------------------------------------------------------------------------- the command, with fake interpreters
def test_verify_names_physical_gpus_behind_cuda_visible_devices(cli, tmp_path, fake_bin):
    smi(fake_bin)
    py = fake_python(tmp_path, {"--device 0": ("verify-2080ti-cuda0-ok.txt", 0), "--device 1": ("verify-2080ti-cuda1-ok.txt", 0)})
    r = vcli(cli, tmp_path, "verify", "--json", "--python", py, env={"PATH": fake_bin.env_path, "CUDA_VISIBLE_DEVICES": "2,3"})
    assert r.code == 0, r
    data = r.json()
    assert data["ok"] is True
    devices = data["devices"]["devices"]
    assert [(d["logical"], d["physical"], d["ok"]) for d in devices] == [(0, 2, True), (1, 3, True)]
    assert data["devices"]["torch"] == "2.7.1+cu118" and data["devices"]["problem"] is None
    text = vcli(cli, tmp_path, "verify", "--python", py, env={"PATH": fake_bin.env_path, "CUDA_VISIBLE_DEVICES": "2,3"})
    assert "cuda:0 = GPU 2: NVIDIA GeForce RTX 2080 Ti (sm_75)" in text.out
    assert "cuda:1 = GPU 3: NVIDIA GeForce RTX 2080 Ti (sm_75)" in text.out
    assert "12.41 TFLOP/s fp32 matmul, 12.9 GB/s device->host, 10.6 of 10.8 GiB free" in text.out
    assert "all checks passed on 2 devices" in text.out
    assert all(len(line) <= 80 for line in text.out.splitlines())


def test_one_failing_device_does_not_stop_the_others(cli, tmp_path):
    py = fake_python(tmp_path, {"--device 0": ("verify-2080ti-cuda0-ok.txt", 0), "--device 1": ("verify-1080ti-cu128-no-kernel.txt", 1)})
    r = vcli(cli, tmp_path, "verify", "--json", "--python", py)
    assert r.code == 1
    devices = r.json()["devices"]["devices"]
    assert [d["ok"] for d in devices] == [True, False]
    assert devices[1]["error"]["id"] == "gpu-arch-unsupported"
    assert devices[1]["name"] == "NVIDIA GeForce GTX 1080 Ti" and devices[1]["capability"] == "6.1"
    text = vcli(cli, tmp_path, "verify", "--python", py)
    assert "error gpu-arch-unsupported: torch has no kernels for this GPU" in text.out
    assert "1 of 2 devices passed" in text.out


@pytest.mark.slow  # waits out a real device timeout
def test_a_hung_device_is_stopped_and_the_next_one_runs(cli, tmp_path):
    py = fake_python(tmp_path, {"--device 0": ("verify-h100-hang-partial.txt", 0, 30), "--device 1": ("verify-h100-ok.txt", 0)})
    r = vcli(cli, tmp_path, "verify", "--json", "--python", py, "--device-timeout", "2")  # device 0 sleeps 30 s
    assert r.code == 1
    devices = r.json()["devices"]["devices"]
    assert devices[0]["error"]["id"] == "verify-timeout" and devices[0]["ok"] is False
    assert devices[1]["ok"] is True and devices[1]["name"] == "NVIDIA H100 80GB HBM3"


def test_a_crashed_device_is_reported_and_the_next_one_runs(cli, tmp_path):
    py = fake_python(tmp_path, {"--device 0": ("verify-h100-hang-partial.txt", 0, None, "SEGV"), "--device 1": ("verify-h100-ok.txt", 0)})
    r = vcli(cli, tmp_path, "verify", "--json", "--python", py)
    assert r.code == 1
    devices = r.json()["devices"]["devices"]
    assert devices[0]["error"]["id"] == "verify-crashed" and "signal 11" in devices[0]["error"]["message"]
    assert devices[1]["ok"] is True


def test_explicit_device_list(cli, tmp_path):
    py = fake_python(tmp_path, {"--device 1": ("verify-2080ti-cuda1-ok.txt", 0)})
    r = vcli(cli, tmp_path, "verify", "--json", "--device", "1", "--python", py)
    assert r.code == 0, r
    assert [d["logical"] for d in r.json()["devices"]["devices"]] == [1]


def test_no_usable_gpu_says_why_with_the_doctor_id(cli, tmp_path):
    py = fake_python(tmp_path, {"--device 0": ("verify-driver-too-old.txt", 1)})
    r = vcli(cli, tmp_path, "verify", "--python", py)
    assert r.code == 1
    assert "cannot use a GPU here" in r.out and "error driver-too-old-for-torch" in r.out
    assert "finding driver-too-old-for-torch" in r.out
    j = vcli(cli, tmp_path, "verify", "--json", "--python", py).json()
    assert j["ok"] is False and j["devices"]["devices"] == [] and j["devices"]["problem"]["id"] == "driver-too-old-for-torch"


def test_cpu_only_torch_in_a_fake_python(cli, tmp_path):
    cpu_info = MARKER + json.dumps({"event": "info", "torch": "2.13.0+cpu", "cuda": None, "cuda_available": False, "device_count": 0})
    select = MARKER + json.dumps({"event": "error", "stage": "select", "type": "AssertionError", "message": "Torch not compiled with CUDA enabled"})
    py = fake_python(tmp_path, {"--device 0": (cpu_info + "\n" + select + "\n", 1)})
    r = vcli(cli, tmp_path, "verify", "--json", "--python", py)
    # issue 13: with no driver and no /dev/nvidia* the reason is the machine, not the CPU build (it was torch-cpu-only)
    problem = r.json()["devices"]["problem"]
    assert r.code == 1 and problem["id"] == "no-gpu" and "CPU-only build" in " ".join(problem["error"]["details"])


def test_cuda_torch_that_sees_no_gpu_and_no_driver_answers(cli, tmp_path):
    info = MARKER + json.dumps({"event": "info", "torch": "2.13.0+cu130", "cuda": "13.0", "cuda_available": False, "device_count": 0})
    select = MARKER + json.dumps({"event": "error", "stage": "select", "type": "RuntimeError", "message": "No CUDA GPUs are available"})
    py = fake_python(tmp_path, {"--device 0": (info + "\n" + select + "\n", 1)})
    r = vcli(cli, tmp_path, "verify", "--json", "--python", py)
    assert r.code == 1
    problem = r.json()["devices"]["problem"]
    assert problem["id"] == "torch-cuda-unavailable"
    assert "nvidia-smi and NVML show no GPU either" in problem["message"]


def test_cuda_torch_without_a_driver_real_output_is_no_driver(cli, tmp_path):
    """Recorded for real (torch 2.14.1+cu130, no driver): is_available() is False with no warning, and the child's
    torch.cuda.init() gives the reason, so verify names the doctor's no-driver, not a generic "sees no GPU"."""
    py = fake_python(tmp_path, {"--device 0": ("verify-cu130-no-driver.txt", 1)})
    r = vcli(cli, tmp_path, "verify", "--python", py)
    assert r.code == 1
    assert "error no-driver" in r.out and "finding no-driver" in r.out
    problem = vcli(cli, tmp_path, "verify", "--json", "--python", py).json()["devices"]["problem"]
    assert problem["id"] == "no-driver" and problem["error"]["id"] == "no-driver"
    assert "Found no NVIDIA driver on your system" in problem["message"]
    assert "nvidia-smi and NVML show no GPU either" not in problem["message"]  # said only of the generic case


def test_distributed_with_a_cuda_torch_and_no_driver_is_no_driver(cli, tmp_path):
    info = recorded("verify-cu130-no-driver.txt").splitlines()[0] + "\n"  # the real info line
    py = fake_torchrun_python(tmp_path, info, [])
    err = vcli(cli, tmp_path, "verify", "--distributed", "--json", "--python", py).json()["distributed"]["error"]
    assert err["id"] == "no-driver"
    assert "Found no NVIDIA driver" in err["message"] and "--backend gloo" in err["message"]


def test_device_child_asks_torch_cuda_init_why_no_gpu(cli, tmp_path):
    """verify_device.py itself, in a real interpreter, against a fake CUDA torch whose init() raises the real text."""
    import sys

    from machine import PROBE_CUDA_NO_DRIVER, make_probe_torch

    site = tmp_path / "site"
    site.mkdir()
    make_probe_torch(site, version="2.14.1+cu130", cuda="'13.0'", cuda_module=PROBE_CUDA_NO_DRIVER)
    env = {"PATH": TOOLS, "PYTHONPATH": str(site)}
    problem = vcli(cli, tmp_path, "verify", "--json", "--python", sys.executable, env=env).json()["devices"]["problem"]
    assert problem["id"] == "no-driver", problem
    assert "torch 2.14.1+cu130" in problem["message"] and "Found no NVIDIA driver" in problem["message"]


def test_torch_missing(cli, tmp_path):
    err = MARKER + json.dumps({"event": "error", "stage": "import", "type": "ModuleNotFoundError", "message": "No module named 'torch'"})
    py = fake_python(tmp_path, {"--device": (err + "\n", 1), "--cpu": (err + "\n", 1)})
    for extra in ((), ("--cpu",)):
        r = vcli(cli, tmp_path, "verify", "--json", "--python", py, *extra)
        assert r.code == 1
        assert r.json()["devices"]["problem"]["id"] == "torch-missing"


def test_usage_errors(cli, tmp_path):
    assert vcli(cli, tmp_path, "verify", "--device", "0,x").code == 2
    assert vcli(cli, tmp_path, "verify", "--cpu", "--device", "0").code == 2
    r = vcli(cli, tmp_path, "verify", "--python", str(tmp_path / "nope"))
    assert r.code == 2 and "does not exist" in " ".join(r.err.split())  # a long path wraps the error
    assert vcli(cli, tmp_path, "verify", "--toolkit", "--arch", "banana").code == 2
    assert vcli(cli, tmp_path, "verify", "--distributed", "--nproc", "0").code == 2


# ----------------------------------------------------------------------------- distributed, recorded ranks
def ranks_from(*names):
    return {i: recorded(n) for i, n in enumerate(names)}


def test_distributed_result_two_nccl_ranks_ok():
    texts = ranks_from("verify-dist-nccl-rank0-ok.jsonl", "verify-dist-nccl-rank1-ok.jsonl")
    rep = distributed_result("p", "nccl", 2, texts, ok_result(), 120, gpus=GPUS, mapping=(DeviceMapping(0, 2), DeviceMapping(1, 3)))
    assert rep.ok and rep.error is None
    assert [(r.rank, r.device, r.physical, r.nccl, r.busbw_gbps) for r in rep.ranks] == [
        (0, "cuda:0", 2, "2.21.5", 9.84), (1, "cuda:1", 3, "2.21.5", 9.84)]
    data = rep.to_dict()
    assert data["ranks"][0]["checks"][1]["name"] == "all-reduce"


def test_distributed_nccl_system_error_is_classified():
    texts = ranks_from("verify-dist-nccl-rank0-system-error.jsonl", "verify-dist-nccl-rank1-ok.jsonl")
    rep = distributed_result("p", "nccl", 2, texts, ok_result(code=1), 120)
    assert not rep.ok
    assert rep.ranks[0].error.id == "nccl-error" and rep.error.id == "nccl-error"
    assert "NCCL said: unhandled system error." in rep.error.details


def test_distributed_missing_rank_and_timeout():
    texts = ranks_from("verify-dist-nccl-rank0-ok.jsonl")
    rep = distributed_result("p", "nccl", 2, texts, ok_result(code=1), 120)
    assert not rep.ok and rep.ranks[1].error.message == "rank 1 did not start or wrote nothing"
    rep = distributed_result("p", "nccl", 2, texts, ok_result(code=None, error="timeout"), 30)
    assert rep.error.id == "dist-timeout" and "did not finish within 30 s" in rep.error.message


def test_distributed_ranks_are_said_in_chinese(chinese):
    """Issue 33: each rank's line and its error's stage took an ASCII colon and English list commas in Chinese."""
    from cudaenv.render.verify import render_distributed

    texts = ranks_from("verify-dist-nccl-rank0-system-error.jsonl", "verify-dist-nccl-rank1-ok.jsonl")
    text = render_distributed(distributed_result("p", "nccl", 2, texts, ok_result(code=1), 120))
    assert "  rank 0：cuda:0" in text and "  rank 1：cuda:1" in text, text
    assert "rank 0:" not in text and "rank 1:" not in text


def test_plan_distributed_argv():
    argv = plan_distributed_argv("/venv/bin/python", "/tmp/x/verify_dist.py", 4, "nccl", "/tmp/x/results", 110)
    assert argv[:6] == ["/venv/bin/python", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "4"]
    assert argv[6] == "/tmp/x/verify_dist.py" and argv[-2:] == ["--deadline", "110"]


def fake_torchrun_python(tmp_path, info_text, rank_files, stderr_text=""):
    """--info prints ``info_text``; `-m torch.distributed.run ... --results DIR` copies rank files there."""
    info = tmp_path / "info.txt"
    info.write_text(info_text)
    err = tmp_path / "stderr.txt"
    err.write_text(stderr_text)
    copies = []
    for i, name in enumerate(rank_files):
        src = tmp_path / ("rank%d.jsonl" % i)
        src.write_text(recorded(name))
        copies.append('/bin/cp %s "$results/rank-%d.jsonl"' % (shlex.quote(str(src)), i))
    script = "\n".join([
        "#!/bin/sh",
        'case "$*" in *--info*) /bin/cat %s; exit 0;; esac' % shlex.quote(str(info)),
        'results=""; prev=""',
        'for a in "$@"; do [ "$prev" = "--results" ] && results="$a"; prev="$a"; done',
        'case "$*" in *torch.distributed.run*) ;; *) exit 1;; esac',
    ] + copies + ["/bin/cat %s >&2" % shlex.quote(str(err)), "exit 0", ""])
    path = tmp_path / "python"
    path.write_text(script)
    path.chmod(0o755)
    return str(path)


GPU_INFO = MARKER + json.dumps({"event": "info", "torch": "2.7.1+cu118", "cuda": "11.8", "cuda_available": True, "device_count": 2, "nccl": "2.21.5"}) + "\n"


def test_distributed_cli_with_recorded_ranks(cli, tmp_path, fake_bin):
    smi(fake_bin)
    py = fake_torchrun_python(tmp_path, GPU_INFO, ["verify-dist-nccl-rank0-ok.jsonl", "verify-dist-nccl-rank1-ok.jsonl"],
                              "host:5100:5100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\nsomething else\n")
    env = {"PATH": fake_bin.env_path, "CUDA_VISIBLE_DEVICES": "2,3"}
    r = vcli(cli, tmp_path, "verify", "--distributed", "--json", "--nccl-debug", "--python", py, env=env)
    assert r.code == 0, r
    data = r.json()["distributed"]
    assert data["backend"] == "nccl" and data["nproc"] == 2 and data["ok"] is True
    assert [x["physical"] for x in data["ranks"]] == [2, 3]
    assert data["nccl_debug"] == ["host:5100:5100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>"]
    text = vcli(cli, tmp_path, "verify", "--distributed", "--python", py, env=env).out
    assert "rank 0: cuda:0 = GPU 2 (NVIDIA GeForce RTX 2080 Ti) ok  NCCL 2.21.5, 9.84 GB/s all-reduce" in text
    assert "distributed check passed" in text


def test_distributed_without_gpus_needs_gloo(cli, tmp_path):
    info = MARKER + json.dumps({"event": "info", "torch": "2.13.0+cpu", "cuda": None, "cuda_available": False, "device_count": 0}) + "\n"
    py = fake_torchrun_python(tmp_path, info, [])
    r = vcli(cli, tmp_path, "verify", "--distributed", "--json", "--python", py)
    assert r.code == 1
    err = r.json()["distributed"]["error"]
    assert err["id"] == "no-gpu" and "--backend gloo" in err["message"]  # issue 13: the machine has no GPU (was torch-cpu-only)


def env_recording(tmp_path, inner, log_name):
    """A fake python that appends its CUDA_LAUNCH_BLOCKING / NCCL_DEBUG to a log, then runs ``inner``."""
    log = tmp_path / log_name
    path = tmp_path / ("rec-" + log_name)
    path.write_text('#!/bin/sh\necho "CLB=${CUDA_LAUNCH_BLOCKING-unset} NCCL_DEBUG=${NCCL_DEBUG-unset}" >> %s\nexec %s "$@"\n'
                    % (shlex.quote(str(log)), shlex.quote(inner)))
    path.chmod(0o755)
    return str(path), log


def test_children_run_with_launch_blocking_and_nccl_debug_only_on_request(cli, tmp_path, fake_bin):
    smi(fake_bin)
    env = {"PATH": fake_bin.env_path, "CUDA_VISIBLE_DEVICES": "2,3"}
    dev = fake_python(tmp_path, {"--device 0": ("verify-2080ti-cuda0-ok.txt", 0), "--device 1": ("verify-2080ti-cuda1-ok.txt", 0)},
                      name="devpython")
    py, log = env_recording(tmp_path, dev, "device.log")
    assert vcli(cli, tmp_path, "verify", "--json", "--python", py, env=env).code == 0
    runs = log.read_text().splitlines()
    assert len(runs) >= 2 and all(line.startswith("CLB=1 ") for line in runs), runs  # one child per device
    dist = fake_torchrun_python(tmp_path, GPU_INFO, ["verify-dist-nccl-rank0-ok.jsonl", "verify-dist-nccl-rank1-ok.jsonl"],
                                "host:5100:5100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n")
    py, log = env_recording(tmp_path, dist, "dist.log")
    plain = vcli(cli, tmp_path, "verify", "--distributed", "--json", "--python", py, env=env)
    assert plain.code == 0 and plain.json()["distributed"]["nccl_debug"] == []
    assert log.read_text().splitlines()[-1] == "CLB=1 NCCL_DEBUG=unset"
    debug = vcli(cli, tmp_path, "verify", "--distributed", "--json", "--nccl-debug", "--python", py, env=env)
    assert debug.code == 0 and log.read_text().splitlines()[-1] == "CLB=1 NCCL_DEBUG=INFO"
    assert debug.json()["distributed"]["nccl_debug"] == ["host:5100:5100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>"]


def test_json_device_shape_has_every_documented_key(cli, tmp_path):
    """Issue 6's --json shape: {logical, physical, name, capability, ok, checks[{name, ok, seconds, detail}], tflops, gbps,
    error{id, message}}, for a passing and a failing device alike."""
    py = fake_python(tmp_path, {"--device 0": ("verify-2080ti-cuda0-ok.txt", 0), "--device 1": ("verify-1080ti-cu128-no-kernel.txt", 1)})
    devices = vcli(cli, tmp_path, "verify", "--json", "--python", py).json()["devices"]["devices"]
    assert len(devices) == 2
    for d in devices:
        assert {"logical", "physical", "name", "capability", "ok", "checks", "tflops", "gbps", "error"} <= set(d)
        assert d["checks"] and all({"name", "ok", "seconds", "detail"} <= set(c) for c in d["checks"])
        assert all(isinstance(c["seconds"], float) for c in d["checks"])
    assert devices[0]["error"] is None and isinstance(devices[0]["tflops"], float)
    assert {"id", "message"} <= set(devices[1]["error"]) and devices[1]["error"]["id"] == "gpu-arch-unsupported"
    assert devices[1]["tflops"] is None and devices[1]["logical"] == 1


PY37 = "/root/.pyenv/versions/3.7.16/bin/python"


@pytest.mark.skipif(not os.path.exists(PY37), reason="no Python 3.7 here")
@pytest.mark.allow_run(PY37)  # this machine's Python 3.7, on purpose
def test_children_run_on_python_37(cli, tmp_path):
    """The child scripts must run in an old interpreter too: compiled by 3.7, and a 3.7 without torch says so."""
    from cudaenv._child import source

    for name in ("verify_device.py", "verify_dist.py"):
        res = subprocess.run([PY37, "-c", "import sys; compile(sys.stdin.read(), %r, 'exec')" % name],
                             input=source(name), capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, (name, res.stderr)
    for extra in ((), ("--cpu",)):
        r = vcli(cli, tmp_path, "verify", "--json", "--python", PY37, *extra)
        assert r.code == 1 and r.json()["devices"]["problem"]["id"] == "torch-missing", r


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_parse_devices_arg_any_text_is_a_list_none_or_valueerror(text):
    try:
        got = parse_devices_arg(text)
    except ValueError:
        return
    assert got is None or (got and all(isinstance(i, int) and i >= 0 for i in got) and len(set(got)) == len(got))
