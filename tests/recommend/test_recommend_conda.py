"""conda and pixi forms of the torch decision (issue 31): conda-forge's pytorch-gpu pinned to a cuda-version the driver
runs (or the PyPI route where conda-forge has no build), the installer taken from the environment, the argv `cudaenv
fix --yes` runs, and the solver's view of the machine (virtual packages, the [system-requirements] cuda to declare)."""

import pytest

from builders import TOOLS
from cudaenv.core.errors import UserError
from cudaenv.model.snapshot import Driver, Gpu, Platform, PythonEnv, Snapshot, Torch
from cudaenv.recommend import recommend
from cudaenv.recommend.conda import pick_cuda_version
from cudaenv.recommend.request import env_installer
from cudaenv.render.recommend import render_text

PY = "/ws/.pixi/envs/default/bin/python"
RTX3090 = ("NVIDIA GeForce RTX 3090", "8.6")
V100 = ("Tesla V100-SXM2-32GB", "7.0")


def machine(driver="550.54.15", cuda="12.4", gpus=(RTX3090,), env=None, torch=None, installer=None, libc="glibc 2.36"):
    return Snapshot(
        platform=Platform(system="linux", machine="x86_64", kernel="6.8.0-49-generic"),
        driver=Driver(version=driver, cuda_version=cuda) if driver else None,
        gpus=tuple(Gpu(i, name=n, compute_capability=cc) for i, (n, cc) in enumerate(gpus)),
        torch=Torch(python=PY, installed=bool(torch), version=torch, python_version="3.12.8", installer=installer, libc=libc),
        python_env=env)


CONDA = PythonEnv("conda", "/opt/conda/envs/cu", "conda", "24.11.3", "cu")
PIXI_12 = PythonEnv("pixi", "/ws/.pixi/envs/default", "pixi", None, "default", "/ws/pixi.toml", "12", ("conda-forge",))


def test_a_conda_env_gets_conda_forge_pytorch_gpu_pinned_to_a_cuda_version_the_driver_runs():
    rec = recommend(machine("580.65.06", "13.0", env=CONDA), torch_version="2.12.1")
    plan = rec.conda_install
    assert rec.installer == "conda" and plan.route == "conda-forge" and plan.channel == "conda-forge"
    assert plan.argv == ("conda", "install", "--yes", "--prefix", "/opt/conda/envs/cu", "--override-channels", "-c", "conda-forge",
                         "pytorch-gpu==2.12.1", "cuda-version==13.0")
    assert rec.commands == ("conda install --yes --prefix /opt/conda/envs/cu --override-channels -c conda-forge "
                            "pytorch-gpu==2.12.1 cuda-version==13.0",)
    assert rec.to_dict()["conda_install"]["cuda_version"] == "13.0"


def test_below_the_builds_the_oldest_of_the_same_major_runs_by_minor_version_compatibility():
    rec = recommend(machine("550.54.15", "12.4", env=CONDA), torch_version="2.12.1")
    assert rec.conda_install.cuda_version == "12.9" and "minor-compat" in rec.conda_install.notes
    assert "runs here through CUDA minor-version compatibility" in " ".join(render_text(rec).split())


def test_a_gpu_below_sm75_gets_no_cuda_13_build():
    rec = recommend(machine("580.65.06", "13.0", gpus=(V100,), env=CONDA), torch_version="2.12.1")
    assert rec.conda_install.cuda_version == "12.9" and "arch-too-old" in rec.conda_install.notes


def test_pick_cuda_version_rules():
    assert pick_cuda_version(["12.9", "13.0"], "13.1", [("g", "8.6")], {"13.0": "7.5"}) == ("13.0", [])
    assert pick_cuda_version(["12.9", "13.0"], "11.8", [("g", "8.6")], {}) == (None, [])  # no build of the driver's major
    assert pick_cuda_version(["12.6"], None, [], {}) == ("12.6", [])  # no driver known: the newest


def test_a_release_conda_forge_did_not_build_takes_the_pypi_route():
    rec = recommend(machine(env=CONDA), torch_version="2.4.1")
    assert rec.conda_install.route == "pypi" and "no-build" in rec.conda_install.notes
    assert rec.commands[0].startswith("%s -m pip install torch==2.4.1+cu124" % PY) and rec.conda_install.argv == ()
    pixi = recommend(machine(env=PIXI_12), torch_version="2.4.1")
    assert pixi.conda_install.snippet == ("[pypi-dependencies]",
                                          'torch = { version = "==2.4.1+cu124", index = "https://download.pytorch.org/whl/cu124" }')
    assert pixi.commands == ("pixi install --manifest-path /ws/pixi.toml",)


def test_a_pixi_env_whose_manifest_declares_cuda_gets_pixi_add_in_its_manifest():
    rec = recommend(machine("580.65.06", "13.0", env=PIXI_12), torch_version="2.12.1")
    assert rec.installer == "pixi"
    assert rec.conda_install.argv == ("pixi", "add", "--manifest-path", "/ws/pixi.toml", "pytorch-gpu==2.12.1", "cuda-version==13.0")
    assert rec.conda_install.snippet == () and rec.solver.problem is None


def test_a_pixi_manifest_without_cuda_needs_the_lines_first_and_fix_will_not_run_it():
    from cudaenv.fix.apply import install_argv

    env = PythonEnv("pixi", "/ws/.pixi/envs/default", "pixi", None, "default", "/ws/pixi.toml", None, ("nvidia",))
    rec = recommend(machine(env=env), torch_version="2.12.1")
    plan = rec.conda_install
    assert plan.argv == () and plan.snippet == ("[system-requirements]", 'cuda = "12"')
    assert {"declare-cuda", "channel-missing"} <= set(plan.notes) and rec.solver.problem == "manifest-missing-cuda"
    with pytest.raises(UserError) as err:
        install_argv(rec, PY)
    assert 'cuda = "12"' in str(err.value)
    text = render_text(rec)
    assert "Add to /ws/pixi.toml:\n  [system-requirements]\n  cuda = \"12\"" in text


def test_fix_runs_the_conda_argv_and_pip_for_the_pypi_route():
    from cudaenv.fix.apply import install_argv

    rec = recommend(machine("580.65.06", "13.0", env=CONDA), torch_version="2.12.1")
    assert install_argv(rec, PY)[:3] == ["conda", "install", "--yes"]
    old = recommend(machine(env=CONDA), torch_version="2.4.1")
    assert install_argv(old, PY)[:4] == [PY, "-m", "pip", "install"]


def test_the_installer_comes_from_the_environment():
    assert env_installer(machine(env=PIXI_12)) == "pixi"
    assert env_installer(machine(env=CONDA)) == "conda"
    assert env_installer(machine(env=CONDA, torch="2.7.1+cu126", installer="pip")) is None  # pip's torch in a conda env
    assert env_installer(machine(env=PythonEnv("uv", "/v", "uv", "0.13.9"))) == "uv"
    assert env_installer(machine(env=PythonEnv("venv", "/v"))) is None
    assert recommend(machine(env=CONDA), torch_version="2.12.1", installer="pip").conda_install is None  # asked for pip


def test_the_solver_view_of_this_machine():
    rec = recommend(machine("550.54.15", "12.4", gpus=(RTX3090, V100), env=CONDA), torch_version="2.12.1")
    seen = {p.name: (p.value, p.source) for p in rec.solver.packages}
    assert seen == {"__cuda": ("12.4", "driver"), "__cuda_arch": ("7.0", "GPUs"), "__glibc": ("2.36", "libc"),
                    "__linux": ("6.8.0", "kernel"), "__unix": ("0", "system")}
    assert rec.solver.declare_cuda == "12"
    text = render_text(rec)
    assert "__cuda       12.4  (the driver's own CUDA)" in text and "__cuda_arch  7.0" in text


def test_a_what_if_driver_gives_the_cuda_of_its_own_toolkit():
    rec = recommend(machine(None, None, env=CONDA), torch_version="2.12.1", driver="580.65.06")
    assert next(p for p in rec.solver.packages if p.name == "__cuda").value == "13.0"


def test_a_pixi_manifest_above_the_driver_is_a_solver_problem():
    env = PythonEnv("pixi", "/ws/.pixi/envs/default", "pixi", None, "default", "/ws/pixi.toml", "13", ("conda-forge",))
    rec = recommend(machine("550.54.15", "12.4", env=env), torch_version="2.12.1")
    assert rec.solver.problem == "manifest-above-driver" and rec.conda_install.argv == ()
    assert 'declares cuda = "13", above this driver\'s CUDA 12.4' in " ".join(render_text(rec).split())


def test_the_command_with_an_override_and_the_json(cli, fake_root, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_DRIVER_VERSION": "550.54.15", "CUDAENV_CACHE_DIR": str(tmp_path / "c"),
           "CONDA_OVERRIDE_CUDA": ""}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--compute-capability", "8.6", "--torch", "2.12.1",
              "--python-version", "3.12", "--installer", "pixi", "--json", env=env)
    assert res.code == 0, res
    data = res.json()
    assert data["installer"] == "pixi" and data["conda_install"]["route"] == "conda-forge"
    cuda = next(p for p in data["solver"]["packages"] if p["name"] == "__cuda")
    assert cuda == {"name": "__cuda", "value": None, "source": "CONDA_OVERRIDE_CUDA"}
    over = cli("torch", "recommend", "--root", str(fake_root.path), "--compute-capability", "8.6", "--torch", "2.12.1",
               "--python-version", "3.12", "--installer", "conda", env=dict(env, CONDA_OVERRIDE_CUDA="13.0"))
    assert "CONDA_OVERRIDE_CUDA=13.0 is above this driver's CUDA" in " ".join(over.out.split())


def test_fix_runs_conda_with_an_argument_vector_never_a_shell(fake_root, fake_bin, tmp_path):
    """`cudaenv fix --yes`'s install step in a conda env: a fake `conda` logs each argument it gets, one a line. A prefix
    with a space and a $(...) reaches it as one literal argument (no shell saw it), and nothing ran it."""
    import sys

    from cudaenv.fix.apply import apply_install

    log = tmp_path / "conda-args.txt"
    (fake_bin.path / "conda").write_text('#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a" >> %s; done\nexit 0\n' % log)
    (fake_bin.path / "conda").chmod(0o755)
    prefix = "/opt/conda/envs/my env $(touch %s)" % (tmp_path / "pwned")
    env = PythonEnv("conda", prefix, "conda", "24.11.3", "my env")
    from cudaenv.model.record import replace

    before = replace(machine("580.65.06", "13.0", env=env), torch=Torch(python=sys.executable, installed=False, python_version="3.12.8"))
    rec = recommend(before, torch_version="2.12.1")
    host = fake_root.host(path=fake_bin.env_path)
    outcome = apply_install(host, {"CUDAENV_INSTALL_TIMEOUT": "60"}, before, rec)
    assert outcome.code == 0, outcome.output
    assert log.read_text().splitlines() == ["install", "--yes", "--prefix", prefix, "--override-channels", "-c", "conda-forge",
                                            "pytorch-gpu==2.12.1", "cuda-version==13.0"]
    assert not (tmp_path / "pwned").exists()
    assert outcome.argv[0] == "conda"


def test_fix_offers_each_conda_line_once():
    # the pip builds that fit (cu130, cu132, cu126) are two conda-forge installs (13.0, and 12.9 for cu126): each once
    from cudaenv.fix.plan import plan_fix
    from cudaenv.recommend.request import request_from_snapshot

    plan = plan_fix(request_from_snapshot(machine("580.65.06", "13.0", env=CONDA)), [], None, Platform(system="linux"))
    installs = [c for c in plan.choices if c.key == "install"]
    lines = [c.recommendation.commands[0] for c in installs]
    assert len(lines) == 2 and all(x.startswith("conda install --yes --prefix /opt/conda/envs/cu") for x in lines)
    assert lines[0].endswith("cuda-version==13.0") and lines[1].endswith("cuda-version==12.9")


def test_an_asked_variant_caps_the_cuda_version():
    # --variant cu126 with conda: no conda-forge build newer than CUDA 12.x's oldest that exists (12.9, by minor compat)
    rec = recommend(machine("580.65.06", "13.0", env=CONDA), torch_version="2.12.1", variant="cu126")
    assert rec.conda_install.cuda_version == "12.9" and "minor-compat" in rec.conda_install.notes
