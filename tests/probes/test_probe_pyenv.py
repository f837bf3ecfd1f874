"""probes/pyenv.py on fake roots: a uv venv (a real uv's pyvenv.cfg), a stdlib venv, a conda env (its history and the
CUDA packages of conda-meta/), a pixi env under WORKSPACE/.pixi/envs/NAME with its pixi.toml or pyproject.toml, and a
system interpreter; then the doctor's snapshot and facts with a real interpreter in a uv venv."""

import os
import sys

from builders import recorded
from cudaenv.probes.pyenv import env_prefix, probe_python_env


def test_a_uv_venv(fake_root):
    fake_root.file("home/u/proj/.venv/pyvenv.cfg", recorded("pyvenv-uv.txt"))
    python = str(fake_root / "home/u/proj/.venv/bin/python")
    e = probe_python_env(fake_root.host(), python)
    assert (e.kind, e.tool, e.tool_version) == ("uv", "uv", "0.13.9")
    assert e.prefix == str(fake_root / "home/u/proj/.venv")


def test_a_stdlib_venv(fake_root):
    fake_root.file("venvs/a/pyvenv.cfg", recorded("pyvenv-stdlib.txt"))
    e = probe_python_env(fake_root.host(), str(fake_root / "venvs/a/bin/python3"))
    assert (e.kind, e.tool) == ("venv", None)


def _conda(fake_root, prefix, history=""):
    fake_root.file(prefix + "/conda-meta/history", history)
    for name in ("cuda-version-12.6-h7480c83_3", "pytorch-2.7.1-cuda126_generic_py312_h1234_200", "numpy-2.2.1-py312h58c1407_0",
                 "cuda-nvcc-12.6.85-hcdd1206_0"):
        fake_root.file(prefix + "/conda-meta/%s.json" % name, "{}")
    return str(fake_root / prefix / "bin/python")


def test_a_conda_env_names_its_tool_and_cuda_packages(fake_root):
    python = _conda(fake_root, "opt/conda/envs/cu126", recorded("conda-history.txt"))
    e = probe_python_env(fake_root.host(), python)
    assert (e.kind, e.name, e.tool, e.tool_version) == ("conda", "cu126", "conda", "24.11.3")
    assert e.cuda_packages == ("cuda-nvcc=12.6.85=hcdd1206_0", "cuda-version=12.6=h7480c83_3",
                               "pytorch=2.7.1=cuda126_generic_py312_h1234_200")  # numpy is no CUDA package


def test_the_base_env_with_an_empty_history(fake_root):
    e = probe_python_env(fake_root.host(), _conda(fake_root, "opt/miniforge3"))
    assert (e.kind, e.name, e.tool, e.tool_version) == ("conda", "base", "conda", None)


PIXI = '[workspace]\nchannels = ["conda-forge"]\nplatforms = ["linux-64"]\n\n[system-requirements]\ncuda = "12"\n'


def test_a_pixi_env_finds_its_manifest_and_the_cuda_it_declares(fake_root):
    python = _conda(fake_root, "home/u/ws/.pixi/envs/default")
    fake_root.file("home/u/ws/pixi.toml", PIXI)
    e = probe_python_env(fake_root.host(), python)
    assert (e.kind, e.name, e.manifest, e.manifest_cuda) == ("pixi", "default", str(fake_root / "home/u/ws/pixi.toml"), "12")
    assert e.channels == ("conda-forge",) and "cuda-version=12.6=h7480c83_3" in e.cuda_packages


def test_a_pixi_env_of_a_pyproject_and_a_feature_environment(fake_root):
    python = _conda(fake_root, "ws/.pixi/envs/gpu")
    fake_root.file("ws/pyproject.toml", '[project]\nname = "x"\n[tool.pixi.workspace]\nchannels = ["conda-forge"]\n'
                                        '[tool.pixi.feature.gpu.system-requirements]\ncuda = "12.4"\n')
    e = probe_python_env(fake_root.host(), python)
    assert (e.kind, e.manifest_cuda) == ("pixi", "12.4") and e.manifest.endswith("pyproject.toml")


def test_a_pixi_env_whose_manifest_declares_no_cuda(fake_root):
    python = _conda(fake_root, "ws/.pixi/envs/default")
    fake_root.file("ws/pyproject.toml", '[project]\nname = "x"\n')  # not pixi's: no manifest
    fake_root.file("ws/pixi.toml", '[workspace]\nchannels = ["conda-forge"]\n')
    e = probe_python_env(fake_root.host(), python)
    assert e.manifest.endswith("pixi.toml") and e.manifest_cuda is None


def test_a_system_interpreter_and_no_interpreter(fake_root):
    fake_root.dir("usr/bin")
    assert probe_python_env(fake_root.host(), str(fake_root / "usr/bin/python3")).kind == "system"
    assert probe_python_env(fake_root.host(), None) is None


def test_an_interpreter_outside_the_inspected_tree_is_not_judged(fake_root, tmp_path):
    # under --root the interpreter is this machine's: its folder is not in the tree read, so nothing is claimed
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("uv = 0.13.9\n")
    assert probe_python_env(fake_root.host(), str(tmp_path / "venv" / "bin" / "python")) is None


def test_a_shim_is_judged_by_the_interpreter_it_runs(fake_root):
    fake_root.file("venv/pyvenv.cfg", "home = /usr/bin\nuv = 0.13.9\n")
    e = probe_python_env(fake_root.host(), str(fake_root / "home/u/.pyenv/shims/python3"), str(fake_root / "venv/bin/python"))
    assert e.kind == "uv"


def test_the_prefix_of_windows_interpreters(fake_root):
    host = fake_root.host(system="windows")
    assert env_prefix(host, "C:\\envs\\a\\Scripts\\python.exe") == "C:\\envs\\a"
    assert env_prefix(host, "C:\\conda\\envs\\b\\python.exe") == "C:\\conda\\envs\\b"


def test_the_doctor_reads_the_environment_of_a_real_interpreter(fake_root):
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.render.facts import render_facts

    venv = fake_root / "home/u/proj/.venv"
    (venv / "bin").mkdir(parents=True)
    real = os.path.realpath(sys.executable)
    os.symlink(real, venv / "bin" / "python")
    (venv / "pyvenv.cfg").write_text("home = %s\nuv = 0.13.9\nversion_info = 3.11\n" % os.path.dirname(real))
    snap = collect_snapshot(fake_root.host(), python=str(venv / "bin" / "python"), quick=True)
    assert (snap.python_env.kind, snap.python_env.tool_version) == ("uv", "0.13.9")
    assert snap.to_dict()["python_env"]["kind"] == "uv"
    from cudaenv.diagnose.view import build_view

    text = render_facts(snap, build_view(snap))
    flat = "".join(text.split())  # wrapped at 80 columns, a long path broken anywhere
    assert "".join(("environment uv venv at %s (uv 0.13.9)" % venv).split()) in flat
