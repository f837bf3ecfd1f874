"""`cudaenv doctor` facts: the readable report, --json, user errors, and a hung nvidia-smi."""

import json
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TOOLS, recorded
from cudaenv.render.facts import SECTIONS, render_facts
from cudaenv.render.json_out import dumps
from cudaenv.model.snapshot import (
    ActiveToolkit,
    CudaSymlink,
    Cudnn,
    DeviceMapping,
    Driver,
    Gpu,
    GpuProcess,
    Note,
    Platform,
    Snapshot,
    ToolStatus,
    Toolkit,
    Torch,
    TorchDevice,
    VisibleDevices,
)
from cudaenv.diagnose.view import build_view
from machine import make_probe_torch

LONG = "/home/someone/projects/a-rather-long-project-name/.venv/lib/python3.11/site-packages/nvidia/cuda_nvcc"


def squash(text: str) -> str:
    """The report with runs of spaces made one (column widths are layout, not content)."""
    return re.sub(r" +", " ", text)


def full_snapshot() -> Snapshot:
    return Snapshot(
        platform=Platform(
            system="linux", distro="Ubuntu 22.04.4 LTS", kernel="5.15.153.1-microsoft-standard-WSL2", machine="x86_64",
            wsl=2, wsl_signals=("osrelease", "WSLInterop", "/dev/dxg"), container=None, dev_dxg=True,
            libcuda=("/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
        ),
        driver=Driver(version="550.54.15", cuda_version="12.4", kernel_module=None, source="nvidia-smi",
                      nvidia_smi="/usr/lib/wsl/lib/nvidia-smi", wsl_windows_side=True),
        gpus=(
            Gpu(0, "NVIDIA GeForce RTX 3090", "GPU-2f5a8c7e-1b3d-4e6f-9a0b-7c8d9e0f1a2b", "00000000:01:00.0", 24576, 1024, "8.6"),
            Gpu(1, "NVIDIA GeForce GTX 1080 Ti", None, "00000000:02:00.0", 11264, None, "6.1"),
        ),
        visible_devices=VisibleDevices("1,0,-1,2", None, (DeviceMapping(0, 1), DeviceMapping(1, 0)), ("1", "0", "-1", "2"), "-1",
                                       ("entry '-1' is invalid: it and every entry after it are ignored",)),
        toolkits=(
            Toolkit("12.4.131", "/usr/local/cuda-12.4", "/usr/local/cuda-*", "runfile", active=True, is_link_target=True),
            Toolkit("12.6.77", LONG, "pip", "pip"),
        ),
        cuda_symlink=CudaSymlink("/usr/local/cuda", "/usr/local/cuda-12.4", "/usr/local/cuda-12.4"),
        active_toolkit=ActiveToolkit("/usr/local/cuda-12.4", "/usr/local/cuda-12.4/bin/nvcc", "12.4.131", "PATH",
                                     ("/usr/local/bin/nvcc", "/usr/bin/nvcc")),
        cudnn=(Cudnn("9.1.0", "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h", "system", 9),),
        env=(("CUDA_VISIBLE_DEVICES", "1,0,-1,2"), ("LD_LIBRARY_PATH", "/usr/local/cuda/lib64")),
        torch=Torch(
            python="/home/someone/.venv/bin/python", installed=True, version="2.5.1+cu124", cuda="12.4", cuda_available=True,
            device_count=2, arch_list=("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"),
            devices=(TorchDevice("NVIDIA GeForce RTX 3090", "8.6", 24135), TorchDevice("NVIDIA GeForce GTX 1080 Ti", "6.1")),
            cudnn="9.1.0", nccl="2.21.5", installer="pip", python_version="3.11.7", python_source="VIRTUAL_ENV",
            location="/home/someone/.venv/lib/python3.11/site-packages", dynamic=True, in_virtualenv=True,
            nvidia_packages=("nvidia-cudnn-cu12==9.1.0.70", "nvidia-nccl-cu12==2.21.5"),
        ),
        processes=(GpuProcess(4242, "python", 1000, gpu_index=0, state="zombie"),),
        tools=(ToolStatus("nvml", "/usr/lib/wsl/lib/libnvidia-ml.so.1", "ok", seconds=0.05), ToolStatus("nvidia-smi", "/usr/lib/wsl/lib/nvidia-smi")),
        notes=(Note("nvidia", "nvidia-smi timed out after 5 s " + "and this note is long enough to need wrapping " * 3),),
    )


def test_report_has_every_section_in_order_within_80_columns():
    text = render_facts(full_snapshot(), build_view(full_snapshot()))
    lines = text.splitlines()
    titles = [line for line in lines if line and not line.startswith(" ")]
    assert titles == list(SECTIONS)
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    for fact in ("Ubuntu 22.04.4 LTS", "WSL2", "550.54.15", "12.4", "RTX 3090", "compute 8.6", "24576 MiB (1024 used)",
                 "cuda:0 is GPU 1", "'-1'", "12.4.131", "[active, /usr/local/cuda]", "9.1.0", "2.5.1+cu124",
                 "CUDA available yes, 2 devices", "sm_86", "2.21.5", "pid 4242 python: 1000 MiB on GPU 0 (zombie)",
                 "/usr/local/bin/nvcc -> /usr/local/cuda-12.4/bin/nvcc", "libcuda /usr/lib/wsl/lib/libcuda.so.1", "nvidia-smi timed out after 5 s"):
        assert fact in squash(text), fact
    assert LONG in text.replace("\n", "").replace(" ", "")  # the long path is wrapped, not cut


def test_facts_name_what_the_checklist_leaves_out():
    """doctor --verbose appends these facts: the ids a helper asks for, which the checklist lines do not carry."""
    text = render_facts(full_snapshot(), build_view(full_snapshot()))
    for fact in ("GPU-2f5a8c7e-1b3d-4e6f-9a0b-7c8d9e0f1a2b", "00000000:02:00.0", "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h",
                 "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90", "cuda:1 NVIDIA GeForce GTX 1080 Ti, compute 6.1"):
        assert fact in squash(text), fact


def test_report_of_an_empty_machine():
    bare = Snapshot(platform=Platform(system="linux"), torch=Torch(python=None))
    text = squash(render_facts(bare, build_view(bare)))
    assert "driver none found" in text
    assert "no GPUs seen" in text and "no CUDA toolkit found" in text and "no cuDNN headers found" in text
    assert "python none found" in text
    assert "Notes\n none\n" in text


def test_report_of_a_quick_run_says_torch_was_not_imported():
    snap = Snapshot(platform=Platform(system="linux"), torch=Torch(python="/usr/bin/python3", installed=True, version="2.13.0+cpu"))
    text = render_facts(snap, build_view(snap))
    assert "2.13.0+cpu (CPU only)" in text and "not imported (--quick)" in text


_names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=120)


@settings(max_examples=100)
@given(name=_names, path=_names, version=st.one_of(st.none(), _names), message=_names)
def test_report_never_fails_and_stays_narrow(name, path, version, message):
    snap = Snapshot(
        platform=Platform(system="linux", distro=name),
        gpus=(Gpu(0, name),),
        toolkits=(Toolkit(version, path, "CUDA_HOME"),),
        torch=Torch(python=path, installed=True, version=version, dynamic=True, cuda_error=message or None),
        notes=(Note("x", message),),
    )
    for line in render_facts(snap, build_view(snap)).splitlines():
        if "\n" not in name + path + message:
            assert len(line) <= 80


def test_json_is_the_contract_in_field_order():
    snap = full_snapshot()
    text = dumps(snap.to_dict())
    data = json.loads(text)
    assert list(data)[:3] == ["schema_version", "platform", "driver"]
    assert data["schema_version"] == 1 and data["env"]["CUDA_VISIBLE_DEVICES"] == "1,0,-1,2"
    assert data["torch"]["arch_list"][-1] == "sm_90" and data["gpus"][1]["compute_capability"] == "6.1"
    assert text.startswith('{\n  "schema_version": 1,') and text.endswith("}\n")
    assert Snapshot.from_dict(data) == snap
    assert dumps({"b": 1, "a": "é"}) == '{\n  "b": 1,\n  "a": "é"\n}\n'


def test_doctor_json_on_a_fake_root(cli, fake_root):
    fake_root.file("etc/os-release", 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n')
    r = cli("doctor", "--json", "--quick", "--root", str(fake_root.path), "--python", sys.executable,
            env={"PATH": TOOLS, "CUDA_VISIBLE_DEVICES": ""})
    assert r.code in (0, 1), r
    data = r.json()
    assert data["root"] == str(fake_root.path)
    assert data["platform"]["distro"] == "Ubuntu 24.04.1 LTS"
    assert data["env"] == {"CUDA_VISIBLE_DEVICES": ""}
    assert data["torch"]["python"] == sys.executable and data["torch"]["dynamic"] is False


def test_doctor_text_on_a_fake_root(cli, fake_root):
    r = cli("doctor", "--quick", env={"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path)})
    assert r.code in (0, 1), r  # 1: the diagnosis found an error (no driver, no GPU); never a crash
    assert r.out and r.err == ""


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--python", "/no/such/python"), "cudaenv: error: --python /no/such/python does not exist\n"),
        (("--root", "/no/such/root"), "cudaenv: error: --root /no/such/root is not a directory\n"),
    ],
)
def test_user_errors_are_one_line_and_a_hint(cli, argv, message):
    r = cli("doctor", "--json", *argv)
    assert r.code == 2 and r.out == ""
    lines = r.err.splitlines()
    # the hint may wrap to the terminal's width (continuation lines indented): still one error, then one hint
    assert r.err.startswith(message) and lines[1].startswith("hint: ") and all(x.startswith("  ") for x in lines[2:])
    assert all(len(x) <= 80 for x in lines)


def test_a_hung_nvidia_smi_costs_one_timeout(cli_subprocess, fake_root, fake_bin, tmp_path):
    """A hung nvidia-smi costs one timeout: its queries run at the same time and each is stopped at the timeout;
    none is started again. Shown by the fakes themselves (each one started finds the other still running) rather
    than by a wall-clock bound, which flaked on a loaded machine; the subprocess timeout only rules out the hang."""
    log = tmp_path / "starts"
    smi = fake_bin.path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n"
                   "echo $$ >> '%s.pids'\n"
                   "echo \"started $*\" >> '%s'\n"
                   "/bin/sleep 0.3\n"  # well within the 1 s timeout: a query run after this one's timeout finds it gone
                   "for p in $(/bin/cat '%s.pids'); do [ \"$p\" != $$ ] && kill -0 \"$p\" 2>/dev/null && echo overlap >> '%s'; done\n"
                   "exec /bin/sleep 30\n" % (log, log, log, log))
    smi.chmod(0o755)
    env = {"PATH": fake_bin.env_path, "CUDAENV_ROOT": str(fake_root.path), "HOME": str(fake_root.path)}
    r = cli_subprocess("doctor", "--json", "--timeout", "1", "--quick", env=env, timeout=30)
    assert r.code in (0, 1), r
    data = r.json()
    assert any("nvidia-smi" in n["message"] and "timed out after 1 s" in n["message"] for n in data["notes"]), data["notes"]
    assert [t["status"] for t in data["tools"] if t["tool"] == "nvidia-smi"] == ["timeout"]
    assert "nvidia-smi-hang" in [f["id"] for f in data["findings"]]
    lines = log.read_text().splitlines()
    started = sorted(line.split()[1].split("=")[0] for line in lines if line.startswith("started"))
    # each query once (and the -q condition read beside them), never again after the timeout
    assert started == ["--query-compute-apps", "--query-gpu", "-q"], lines
    assert "overlap" in lines, lines  # the second started while the first still ran: one timeout, not two


# ------------------------------------------------------------------ the JSON contract of issue 2, by name
CONTRACT = {
    "platform": ("system", "distro", "kernel", "machine", "wsl", "container"),
    "driver": ("version", "cuda_version", "kernel_module", "source"),
    "gpus": ("index", "name", "uuid", "pci_bus_id", "memory_total_mib", "memory_used_mib", "compute_capability"),
    "visible_devices": ("cuda_visible_devices", "device_order", "mapping"),
    "toolkits": ("version", "path", "source", "install_method", "active"),
    "cuda_symlink": ("path", "target"),
    "active_toolkit": ("path", "nvcc", "version"),
    "cudnn": ("version", "header", "source"),
    "torch": ("python", "installed", "version", "cuda", "hip", "cuda_available", "device_count", "arch_list", "devices",
              "cudnn", "nccl", "installer"),
}


def test_doctor_json_has_every_field_the_contract_names(cli, fake_root, fake_bin, tmp_path):
    """A machine where every list is filled: 4 GPUs, processes, a link, a toolkit, cuDNN, a torch that imports."""
    query = recorded("smi-query-2080ti-x4.txt")
    apps = recorded("smi-apps-2080ti.txt")
    banner = recorded("smi-banner-550-single.txt")  # only its "CUDA Version" is used here
    fake_bin.command("nvidia-smi", stdout=banner, by_args={"--query-gpu": (query, 0), "--query-compute-apps": (apps, 0)})
    fake_root.file("etc/os-release", 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n')
    fake_root.file("proc/driver/nvidia/version", recorded("proc-nvidia-open-565.txt"))
    fake_root.toolkit("12.4.131", cudnn="9.1.0")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    site = tmp_path / "site-packages"
    site.mkdir()
    make_probe_torch(site)
    env = {"PATH": "/usr/local/cuda/bin:" + fake_bin.env_path, "CUDAENV_ROOT": str(fake_root.path), "PYTHONPATH": str(site),
           "CUDA_VISIBLE_DEVICES": "2,3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NCCL_DEBUG": "INFO", "HOME": str(tmp_path)}
    r = cli("doctor", "--json", "--python", sys.executable, env=env)
    assert r.code in (0, 1), r
    data = r.json()
    assert data["schema_version"] == 1
    for key, names in CONTRACT.items():
        value = data[key]
        rows = value if isinstance(value, list) else [value]
        assert rows and all(isinstance(row, dict) for row in rows), (key, value)
        for row in rows:
            missing = [n for n in names if n not in row]
            assert not missing, (key, missing)
    assert [set(m) >= {"logical", "physical"} for m in data["visible_devices"]["mapping"]] == [True, True]
    assert [(m["logical"], m["physical"]) for m in data["visible_devices"]["mapping"]] == [(0, 2), (1, 3)]
    assert all(set(d) >= {"name", "capability"} for d in data["torch"]["devices"]) and data["torch"]["devices"]
    assert data["processes"] and all(isinstance(p["pid"], int) for p in data["processes"])
    assert data["notes"] == [] or all(set(n) == {"probe", "message"} for n in data["notes"])
    assert data["env"]["NCCL_DEBUG"] == "INFO" and data["env"]["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert "PATH" not in data["env"] and "HOME" not in data["env"]
    # versions are strings
    versions = [data["driver"]["version"], data["driver"]["cuda_version"], data["torch"]["version"], data["torch"]["cuda"],
                data["active_toolkit"]["version"]] + [t["version"] for t in data["toolkits"]] + [c["version"] for c in data["cudnn"]]
    assert all(isinstance(v, str) for v in versions), versions
    assert data["driver"]["version"] == "520.61.05" and data["gpus"][1]["pci_bus_id"].endswith("0B:00.0")
    assert data["cuda_symlink"]["target"] == "/usr/local/cuda-12.4" and data["active_toolkit"]["path"] == "/usr/local/cuda-12.4"
    assert [c["version"] for c in data["cudnn"]] == ["9.1.0"]
    assert data["torch"]["installed"] is True and data["torch"]["arch_list"]
