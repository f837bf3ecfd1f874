"""Assembling the snapshot: every probe once, the slow ones side by side, failures as notes."""

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.probes.collect import _call, _Failed, _toolkits, collect_snapshot
from cudaenv.host import Host
from cudaenv.probes.env import parse_env, probe_env
from cudaenv.model.snapshot import Snapshot
from builders import python_waiting_for
from machine import make_probe_torch as make_fake_torch


def test_a_probe_that_raises_becomes_a_note():
    notes = []
    with pytest.raises(_Failed):
        _call(notes, "json", json.loads, "{not json")
    assert len(notes) == 1 and notes[0].probe == "collect"
    assert notes[0].message.startswith("probe json failed: JSONDecodeError: ")


def test_a_missing_probe_module_is_a_broken_install_and_fails_loudly(monkeypatch, tmp_path):
    # cudaenv's own probe modules are not optional: no "not available" note hides a broken install
    notes = []
    monkeypatch.setitem(sys.modules, "cudaenv.probes.cudnn", None)  # as if the file were missing from the install
    with pytest.raises(ImportError, match="cudaenv.probes.cudnn"):
        _toolkits(Host(root=str(tmp_path), env={}), notes, ())
    assert notes == []


def test_env_probe_picks_the_cuda_variables_sorted():
    env = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "CUDA_VISIBLE_DEVICES": "1",
        "CUDA_HOME": "/usr/local/cuda-12.4",
        "NCCL_DEBUG": "INFO",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "TORCH_CUDA_ARCH_LIST": "8.6",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "CUDNN_PATH": "/opt/cudnn",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "CUDAENV_ROOT": "/mnt",
        "MY_CUDA_THING": "x",
    }
    assert [k for k, _ in parse_env(env)] == [
        "CUDA_HOME", "CUDA_VISIBLE_DEVICES", "CUDNN_PATH", "LD_LIBRARY_PATH", "NCCL_DEBUG",
        "NVIDIA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_CUDA_ARCH_LIST",
    ]
    assert dict(probe_env(Host(env=env)))["CUDA_VISIBLE_DEVICES"] == "1"
    assert parse_env({"Cuda_Path": "C:\\CUDA"}, "windows") == (("Cuda_Path", "C:\\CUDA"),)
    assert parse_env({"Cuda_Path": "C:\\CUDA"}, "linux") == ()


_env_names = st.one_of(st.text(max_size=12), st.sampled_from(["CUDA_HOME", "cuda_path", "NCCL_DEBUG", "LD_LIBRARY_PATH", "PATH"]))


@settings(max_examples=150)
@given(st.dictionaries(_env_names, st.text(max_size=20), max_size=8), st.sampled_from(["linux", "windows", "darwin"]))
def test_env_parser_takes_any_mapping(env, system):
    picked = parse_env(env, system)
    assert [k for k, _ in picked] == sorted(k for k, _ in picked)
    assert all(env[k] == v for k, v in picked)
    assert "PATH" not in dict(picked)  # PATH is never part of the env facts


def test_snapshot_of_a_fake_root(fake_root, tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    make_fake_torch(site)
    fake_root.toolkit("12.4.131")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    host = fake_root.host(env={"PYTHONPATH": str(site), "CUDA_VISIBLE_DEVICES": "0", "CUDA_HOME": "/usr/local/cuda"})
    seen = []
    snap = collect_snapshot(host, python=sys.executable, quick=True, progress=seen.append)
    assert isinstance(snap, Snapshot)
    assert snap.root == str(fake_root.path)
    assert snap.env == (("CUDA_HOME", "/usr/local/cuda"), ("CUDA_VISIBLE_DEVICES", "0"))
    assert snap.torch.python == sys.executable and snap.torch.python_source == "--python"
    assert snap.torch.version == "2.7.1+cu126" and not snap.torch.dynamic
    assert snap.visible_devices.cuda_visible_devices == "0"
    assert snap.platform.system == "linux"
    assert snap.cudaenv_version
    assert seen[0].startswith("reading torch in ") and seen[-1] == "done"
    assert not any("failed" in n.message for n in snap.notes if n.probe == "collect"), snap.notes
    # the JSON contract reads back into the same snapshot
    assert Snapshot.from_dict(snap.to_dict()) == snap


def test_the_torch_import_runs_beside_the_other_probes(fake_root, fake_bin, tmp_path):
    """The torch import and nvidia-smi run at the same time, shown by a rendezvous, not a stopwatch: each leaves a
    mark and waits (up to 10 s) for the other's. Run one after the other, the first waits in vain and fails."""
    torch_mark, smi_mark = tmp_path / "torch-started", tmp_path / "smi-started"
    site = tmp_path / "site-packages"
    site.mkdir()
    make_fake_torch(site, init=(
        "import os, time\nopen(%r, 'w').close()\n"
        "for _ in range(200):\n    if os.path.exists(%r):\n        break\n    time.sleep(0.05)\n"
        "else:\n    raise ImportError('nvidia-smi never ran beside the torch import')\n"
        "from . import version, cuda, backends\n") % (str(torch_mark), str(smi_mark)))
    smi = fake_bin.path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n/bin/touch %s\ni=0\nwhile [ ! -e %s ] && [ $i -lt 200 ]; do /bin/sleep 0.05; i=$((i+1)); done\n"
        "[ -e %s ] || { echo 'the torch import never ran beside nvidia-smi' >&2; exit 3; }\n"
        "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\" >&2\nexit 9\n"
        % (smi_mark, torch_mark, torch_mark))
    smi.chmod(0o755)
    host = fake_root.host(env={"PYTHONPATH": str(site)}, path=fake_bin.env_path, timeout=30)
    seen = []
    snap = collect_snapshot(host, python=sys.executable, progress=seen.append)
    assert snap.torch.dynamic and snap.torch.cuda_available is True, snap.notes  # the import saw nvidia-smi's mark
    assert any(t.tool == "nvidia-smi" for t in snap.tools)
    assert not any("never ran beside" in n.message for n in snap.notes), snap.notes  # nvidia-smi saw the import's
    assert any(m.startswith("importing torch in ") for m in seen)


def test_quick_never_imports_torch(fake_root, tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    marker = tmp_path / "imported"
    make_fake_torch(site, init="open(%r, 'w').write('yes')\n" % str(marker))
    snap = collect_snapshot(fake_root.host(env={"PYTHONPATH": str(site)}), python=sys.executable, quick=True)
    assert snap.torch.installed and not snap.torch.dynamic
    assert not marker.exists()
    collect_snapshot(fake_root.host(env={"PYTHONPATH": str(site)}), python=sys.executable)
    assert marker.read_text() == "yes"  # and without --quick it does


def test_interpreter_comes_from_virtual_env(fake_root, tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), venv / "bin" / "python")
    snap = collect_snapshot(fake_root.host(env={"VIRTUAL_ENV": str(venv)}), quick=True)
    assert snap.torch.python == str(venv / "bin" / "python") and snap.torch.python_source == "VIRTUAL_ENV"


@pytest.mark.real_machine
def test_real_machine_smoke(cli_subprocess):
    """This machine: CUDA 13.0 at /usr/local/cuda-13.0 (no version.json), the /usr/local/cuda link, an nvcc wrapper, no driver."""
    if not Path("/usr/local/cuda-13.0/bin/nvcc").exists() or Path("/proc/driver/nvidia").exists():
        pytest.skip("not the machine with the wheel-assembled CUDA 13.0 toolkit and no driver")
    r = cli_subprocess("doctor", "--json", "--quick", env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root"})
    assert r.code in (0, 1), r  # 1: no driver is an error finding
    data = r.json()
    assert data["schema_version"] == 1
    assert data["driver"] is None and data["gpus"] == []
    # exactly this machine: one toolkit under /usr/local, 13.0 read from cuda.h (no version.json or version.txt,
    # and cuda.h is read before nvcc is run), active through the wrapper on PATH, the link's target
    assert [t["path"] for t in data["toolkits"] if t["path"].startswith("/usr/local/")] == ["/usr/local/cuda-13.0"]
    tk = [t for t in data["toolkits"] if t["path"] == "/usr/local/cuda-13.0"]
    assert (tk[0]["version"], tk[0]["version_source"]) == ("13.0.88", "dist-info")  # issue 13: the nvcc wheel's dist-info
    assert tk[0]["active"] is True and tk[0]["is_link_target"] is True and tk[0]["on_path"] is True
    assert tk[0]["nvcc"] == "/usr/local/cuda-13.0/bin/nvcc" and tk[0]["lib_dir"] == "lib64"  # lib64 -> lib
    assert [t["path"] for t in data["toolkits"] if t["active"]] == ["/usr/local/cuda-13.0"]
    assert not any(n["probe"] in ("toolkits", "collect") for n in data["notes"]), data["notes"]
    assert data["cuda_symlink"]["path"] == "/usr/local/cuda"
    assert data["cuda_symlink"]["resolved"] == "/usr/local/cuda-13.0" and not data["cuda_symlink"]["dangling"]
    active = data["active_toolkit"]
    assert active["path"] == "/usr/local/cuda-13.0" and active["version"].startswith("13.0")
    assert active["nvcc_on_path"][0] == "/usr/local/bin/nvcc"  # the wrapper, followed to the real nvcc
    assert active["nvcc"] == "/usr/local/cuda-13.0/bin/nvcc"


def test_the_callers_work_runs_beside_the_static_torch_child(fake_root, tmp_path):
    """`beside` (the doctor importing its rules) runs while the static pass's child runs, shown by a rendezvous: the
    interpreter is a wrapper that waits (up to 10 s) for the mark `beside` leaves before it starts Python. Run one
    after the other, the child would wait in vain and the static pass would fail (a note, torch not installed)."""
    mark = tmp_path / "beside-ran"
    python = python_waiting_for(tmp_path, mark)
    site = tmp_path / "site-packages"
    site.mkdir()
    make_fake_torch(site)
    snap = collect_snapshot(fake_root.host(env={"PYTHONPATH": str(site)}, timeout=30), python=str(python), quick=True,
                            beside=mark.touch)
    assert snap.torch.installed, snap.notes


def test_the_torch_import_starts_beside_the_static_pass(fake_root, tmp_path):
    """`import torch` (the dynamic child) starts with the static pass, not after it, shown by a rendezvous: the
    interpreter is a wrapper whose static run waits (up to 10 s) for the mark its dynamic run leaves. One after the
    other, the static pass would wait in vain, fail, and no torch would be imported."""
    mark = tmp_path / "dynamic-started"
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\nif [ \"$3\" = dynamic ]; then /bin/touch %s; fi\n"
                      "if [ \"$3\" = static ]; then i=0\n while [ ! -e %s ] && [ $i -lt 200 ]; do /bin/sleep 0.05; i=$((i+1)); done\n"
                      " [ -e %s ] || exit 3\nfi\nexec %s \"$@\"\n" % (mark, mark, mark, sys.executable))
    python.chmod(0o755)
    site = tmp_path / "site-packages"
    site.mkdir()
    make_fake_torch(site)
    snap = collect_snapshot(fake_root.host(env={"PYTHONPATH": str(site)}, timeout=30), python=str(python))
    assert snap.torch.installed and snap.torch.dynamic, snap.notes


def test_no_torch_the_early_import_is_not_read(fake_root, tmp_path):
    """Where the static pass finds no torch, the dynamic child that started beside it is waited for, and its answer
    (an import error) is not part of the snapshot."""
    site = tmp_path / "site-packages"
    site.mkdir()
    snap = collect_snapshot(fake_root.host(env={"PYTHONPATH": str(site)}, timeout=30), python=sys.executable)
    assert not snap.torch.installed and not snap.torch.dynamic and snap.torch.import_error is None
    assert not any("import torch" in n.message for n in snap.notes), snap.notes
