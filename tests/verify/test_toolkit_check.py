"""cudaenv verify --toolkit: a fake nvcc for the logic (and a fake compiled program standing for a GPU run),
the real CUDA 13.0 nvcc of this machine for the compile half."""

import os
import shlex
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TOOLS, recorded
from cudaenv.core.version import sm_name
from cudaenv.parse.nvcc import parse_nvcc_version
from cudaenv.verify.toolkit_check import (
    check_toolkit,
    parse_gpu_code_list,
    parse_run_output,
    plan_compile,
    target_archs,
)

REAL_NVCC = "/usr/local/cuda-13.0/bin/nvcc"
real_machine = pytest.mark.skipif(not os.path.isfile(REAL_NVCC), reason="no real CUDA 13.0 toolkit here")


def test_parsers():
    assert parse_nvcc_version(recorded("nvcc-13.0.88-this-machine.txt")) == "13.0.88"
    assert parse_nvcc_version("Cuda compilation tools, release 9.0") == "9.0"
    assert parse_nvcc_version("garbage") is None
    listed = parse_gpu_code_list(recorded("verify-nvcc-13.0-list-gpu-code.txt"))
    assert listed[0] == "sm_75" and listed[-1] == "sm_121" and "sm_61" not in listed and "sm_90" in listed
    assert sm_name("6.1") == "sm_61" and sm_name("sm_90a") == "sm_90a"
    assert sm_name("12.0") == "sm_120" and sm_name("compute_75") == "sm_75"
    assert sm_name("86") == "sm_86" and sm_name("x") is None and sm_name("6") is None
    assert target_archs(["7.5", "7.5", "9.0"]) == ("sm_75", "sm_90")


def test_plan_compile_uses_arch_or_gencode():
    assert plan_compile("nvcc", "a.cu", "a", ["sm_61"])[:2] == ["nvcc", "-arch=sm_61"]
    argv = plan_compile("nvcc", "a.cu", "a", ["sm_75", "sm_90"])
    assert "arch=compute_75,code=sm_75" in argv and "arch=compute_90,code=sm_90" in argv
    assert argv.count("-gencode") == 2
    assert not any(a.startswith("-arch") or a == "-gencode" for a in plan_compile("nvcc", "a.cu", "a", []))


def test_parse_run_output():
    text = ('CUDAENV_TOOLKIT {"runtime": 13000, "driver": 13000, "count": 1}\nnoise\n'
            'CUDAENV_TOOLKIT {"device": 0, "name": "NVIDIA H100", "capability": "9.0", "ok": true, "wrong": 0}\nCUDAENV_TOOLKIT {bad')
    header, devices = parse_run_output(text)
    assert header["count"] == 1 and devices[0]["name"] == "NVIDIA H100"


def fake_nvcc(fake_root, program_output="", program_exit=0, refuse=("sm_61", "compute_61"), outside=None):
    """A fake toolkit's nvcc: --version, --list-gpu-code, refuses Pascal like CUDA 13, else writes a program
    that prints ``program_output`` (standing for the compiled CUDA program run on a GPU)."""
    out_file = fake_root / "program-output.txt"
    out_file.write_text(program_output)
    refusals = "\n".join(
        'case "$args" in *%s*) echo "nvcc fatal   : Unsupported gpu architecture \'%s\'" >&2; exit 1;; esac' % (r, r) for r in refuse)
    listing = fake_root / "gpu-code.txt"
    listing.write_text(recorded("verify-nvcc-13.0-list-gpu-code.txt"))
    version = fake_root / "version.txt"
    version.write_text(recorded("nvcc-13.0.88-this-machine.txt"))
    script = "\n".join([
        "#!/bin/sh",
        'args="$*"',
        'case "$args" in *--version*) /bin/cat %s; exit 0;; *--list-gpu-code*) /bin/cat %s; exit 0;; esac' % (shlex.quote(str(version)), shlex.quote(str(listing))),
        refusals,
        'out=""; prev=""; for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done',
        'printf "#!/bin/sh\\n/bin/cat %s\\nexit %d\\n" > "$out"; /bin/chmod +x "$out"' % (shlex.quote(str(out_file)), program_exit),
        "exit 0", ""])
    if outside is not None:  # a toolkit outside the root (the CLI never runs a program inside --root)
        path = outside / "nvcc"
        path.write_text(script)
        path.chmod(0o755)
        return path
    return fake_root.executable("usr/local/cuda-13.0/bin/nvcc", script)


def test_compiles_for_the_default_arch_without_a_gpu(fake_root):
    nvcc = fake_nvcc(fake_root)
    host = fake_root.host(path="%s:%s" % (nvcc.parent, TOOLS))
    rep = check_toolkit(host, [], gpu_present=False)
    assert rep.ok and rep.compiled and rep.ran is None
    assert rep.version == "13.0.88" and rep.archs == ()
    assert rep.note == "compiled for nvcc's default architecture, but there is no GPU here, so it could not run"
    assert [s.name for s in rep.stages] == ["nvcc", "targets", "compile"]


def test_cuda13_refuses_pascal_with_a_clear_report(fake_root):
    nvcc = fake_nvcc(fake_root)
    host = fake_root.host(path="%s:%s" % (nvcc.parent, TOOLS))
    rep = check_toolkit(host, ["6.1"], gpu_present=True)
    assert not rep.ok and not rep.compiled
    assert rep.unsupported == ("sm_61",)
    assert rep.error.id == "nvcc-arch-unsupported"
    assert rep.error.message == "nvcc fatal   : Unsupported gpu architecture 'sm_61'"
    assert rep.note == "nvcc 13.0.88 cannot compile for sm_61; it targets sm_75 to sm_121"


def test_runs_on_a_gpu_and_reads_the_program_output(fake_root):
    output = ('CUDAENV_TOOLKIT {"runtime": 13000, "driver": 13000, "count": 1}\n'
              'CUDAENV_TOOLKIT {"device": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "ok": true, "wrong": 0}\n')
    nvcc = fake_nvcc(fake_root, output)
    host = fake_root.host(path="%s:%s" % (nvcc.parent, TOOLS))
    rep = check_toolkit(host, ["9.0"], gpu_present=True)
    assert rep.ok and rep.ran is True
    assert rep.devices[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert rep.command[1] == "-arch=sm_90"


def test_a_failing_run_is_classified(fake_root):
    output = ('CUDAENV_TOOLKIT {"runtime": 13000, "driver": 12040, "count": 1}\n'
              'CUDAENV_TOOLKIT {"device": 0, "ok": false, "stage": "launch", "code": 35, '
              '"error": "CUDA driver version is insufficient for CUDA runtime version"}\n')
    nvcc = fake_nvcc(fake_root, output, program_exit=1)
    host = fake_root.host(path="%s:%s" % (nvcc.parent, TOOLS))
    rep = check_toolkit(host, ["9.0"], gpu_present=True)
    assert not rep.ok and rep.ran is False and rep.compiled
    assert rep.error.id == "driver-too-old-for-torch" and rep.error.stage == "launch"


def test_no_nvcc(fake_root):
    rep = check_toolkit(fake_root.host(), [])
    assert not rep.ok and rep.nvcc is None and rep.error.id == "nvcc-missing"


def test_cli_toolkit_with_a_fake_gpu(cli, fake_root, fake_bin):
    fake_bin.command("nvidia-smi", "", 0, by_args={"--query-gpu": (recorded("smi-query-2080ti-x4.txt"), 0), "--query-compute-apps": ("", 0)})
    output = 'CUDAENV_TOOLKIT {"runtime": 13000, "driver": 13000, "count": 1}\nCUDAENV_TOOLKIT {"device": 0, "name": "NVIDIA GeForce RTX 2080 Ti", "capability": "7.5", "ok": true, "wrong": 0}\n'
    toolkit = fake_root.path.parent / "shared-toolkit-bin"
    toolkit.mkdir()
    nvcc = fake_nvcc(fake_root, output, outside=toolkit)
    r = cli("verify", "--toolkit", "--nvcc", str(nvcc), "--json", "--root", str(fake_root.path), env={"PATH": fake_bin.env_path})
    assert r.code == 0, r
    data = r.json()["toolkit"]
    assert data["archs"] == ["sm_75"] and data["ran"] is True and data["nvcc"] == str(nvcc)
    assert "devices" not in r.json()  # --toolkit alone runs no torch
    text = cli("verify", "--toolkit", "--nvcc", str(nvcc), "--root", str(fake_root.path), env={"PATH": fake_bin.env_path}).out
    assert "device 0: NVIDIA GeForce RTX 2080 Ti (7.5) ran the kernel" in text and "toolkit check passed" in text
    assert os.path.isfile(str(nvcc))


# ----------------------------------------------------------------------------- this machine's real CUDA 13.0
@pytest.mark.real_machine
@real_machine
def test_real_nvcc_compiles_for_its_default_arch_and_cannot_run_without_a_gpu(cli):
    r = cli("verify", "--toolkit", "--json", "--nvcc", REAL_NVCC, env={"PATH": "/usr/bin:/bin"})
    data = r.json()["toolkit"]
    assert data["version"].startswith("13.0")
    assert data["compiled"] is True
    if shutil.which("nvidia-smi") is None:
        assert r.code == 0 and data["ran"] is None
        assert "no GPU here, so it could not run" in data["note"]


@pytest.mark.real_machine
@real_machine
def test_real_cuda13_refuses_pascal(cli):
    r = cli("verify", "--toolkit", "--arch", "6.1", "--nvcc", REAL_NVCC, env={"PATH": "/usr/bin:/bin"})
    assert r.code == 1
    assert "error nvcc-arch-unsupported: this nvcc cannot compile for that GPU" in r.out
    assert "Unsupported gpu architecture 'sm_61'" in r.out
    assert "cannot compile for sm_61; it targets sm_75 to sm_12" in r.out


@pytest.mark.real_machine
@real_machine
def test_real_nvcc_gencode_for_two_archs(fake_root):
    from cudaenv.host import Host

    rep = check_toolkit(Host(env={"PATH": "/usr/bin:/bin"}), ["7.5", "9.0"], gpu_present=False, nvcc=REAL_NVCC)
    assert rep.compiled and rep.ok, rep
    assert "arch=compute_90,code=sm_90" in rep.command


@settings(max_examples=200)
@given(st.text(max_size=1500))
def test_toolkit_parsers_any_text_no_exception(text):
    parse_nvcc_version(text)
    parse_gpu_code_list(text)
    parse_run_output(text)
    parse_run_output("CUDAENV_TOOLKIT " + text)
    sm_name(text)
    target_archs([text, text[:3]])
