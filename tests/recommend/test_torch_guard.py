"""`cudaenv torch guard -- INSTALL...` (recommend/guard.py, guard_service.py, render/guard.py) with the test's own
fake pip: a Python script in the test's folder that answers ``--dry-run --report -`` with a report in pip's format
(version 1: an ``install`` list of metadata name/version) and otherwise rewrites the fake site-packages (torch's
dist-info and version.py) as the plan in its folder says. The interpreter is the test's, its torch the machine
model's fake one on PYTHONPATH (read from its files, never imported)."""

import json
import sys

from cudaenv.recommend.guard import dry_run_argv, installer_python, keep_argv, pip_install_at, restore_command

FAKE_PIP = r'''#!%(python)s
import json, os, shutil, sys
here = os.path.dirname(os.path.abspath(__file__))
plan = json.load(open(os.path.join(here, "plan.json")))
args = sys.argv[1:]
with open(os.path.join(here, "calls.txt"), "a") as f:
    f.write(" ".join(args) + "\n")
if "--dry-run" in args:
    print(json.dumps({"version": "1", "install": [{"metadata": {"name": n, "version": v}, "download_info": {"url": "https://files.example/%%s-%%s.whl" %% (n, v)}} for n, v in plan["install"].items()]}))
    sys.exit(0)
site = plan["site"]
for name, version in plan["install"].items():
    if name == "torch":
        for entry in os.listdir(site):
            if entry.startswith("torch-") and entry.endswith(".dist-info"):
                shutil.rmtree(os.path.join(site, entry))
        dist = os.path.join(site, "torch-%%s.dist-info" %% version)
        os.makedirs(dist)
        open(os.path.join(dist, "METADATA"), "w").write("Metadata-Version: 2.1\nName: torch\nVersion: %%s\n\n" %% version)
        open(os.path.join(dist, "INSTALLER"), "w").write("pip\n")
        open(os.path.join(site, "torch", "version.py"), "w").write("__version__ = %%r\ncuda = None\nhip = None\n" %% version)
print("Successfully installed " + " ".join("%%s-%%s" %% kv for kv in plan["install"].items()))
sys.exit(plan.get("code", 0))
'''


def _pip(machine, install, name="pip", code=0):
    folder = machine.tmp / "installer"
    folder.mkdir(exist_ok=True)
    (folder / "plan.json").write_text(json.dumps({"site": str(machine.site), "install": install, "code": code}))
    script = folder / name
    script.write_text(FAKE_PIP % {"python": sys.executable})
    script.chmod(0o755)
    return script


def _guard(machine, *argv):
    return machine.cli("torch", "guard", "--python", machine.python, *argv, env=machine.full_env())


def _torch_version(machine):
    return [p.name for p in machine.site.iterdir() if p.name.startswith("torch-")]


def test_a_pip_install_that_would_replace_torch_is_stopped_before_anything_changes(machine):
    machine.torch("2.8.0+cu128", "12.8")
    pip = _pip(machine, {"vllm": "0.11.0", "torch": "2.9.0"})
    r = _guard(machine, "--", str(pip), "install", "vllm")
    assert r.code == 3, r
    assert _torch_version(machine) == ["torch-2.8.0+cu128.dist-info"]  # nothing installed
    calls = (pip.parent / "calls.txt").read_text().splitlines()
    assert calls == ["install --dry-run --quiet --report - vllm"]
    assert "would replace torch 2.8.0+cu128 with torch 2.9.0" in r.out
    assert "%s install vllm torch==2.8.0+cu128 --extra-index-url https://download.pytorch.org/whl/cu128" % pip in r.out


def test_an_allowed_change_runs_and_names_the_restore_line(machine):
    machine.torch("2.8.0+cu128", "12.8")
    pip = _pip(machine, {"sentence-transformers": "5.1.0", "torch": "2.9.0+cpu"})
    r = _guard(machine, "--allow-torch-change", "--", str(pip), "install", "sentence-transformers")
    assert r.code == 3, r
    assert _torch_version(machine) == ["torch-2.9.0+cpu.dist-info"]
    assert "Successfully installed sentence-transformers-5.1.0 torch-2.9.0+cpu" in r.out  # pip's own output, passed through
    assert "torch was replaced: 2.8.0+cu128 -> 2.9.0+cpu." in r.out and "Its build changed too: cu128 -> cpu." in r.out
    assert "%s -m pip install torch==2.8.0+cu128 --index-url https://download.pytorch.org/whl/cu128" % machine.python in r.out


def test_an_install_that_leaves_torch_alone(machine):
    machine.torch("2.8.0+cu128", "12.8")
    pip = _pip(machine, {"einops": "0.8.1"})
    r = _guard(machine, "--", str(pip), "install", "einops")
    assert r.code == 0, r
    assert "torch 2.8.0+cu128 is unchanged." in r.out
    assert len((pip.parent / "calls.txt").read_text().splitlines()) == 2  # the dry run, then the install


def test_another_installer_runs_and_is_checked_after(machine):
    """No dry run for what is not pip (here a script named uv-like); torch replaced is said after, the installer's
    failure is its own exit status 1 unless torch changed."""
    machine.torch("2.8.0+cu128", "12.8")
    tool = _pip(machine, {"torch": "2.8.0"}, name="installer")
    r = _guard(machine, "--", str(tool), "sync")
    assert r.code == 3 and "torch was replaced: 2.8.0+cu128 -> 2.8.0." in r.out
    assert "no dry run is known for `%s`" % tool in " ".join(r.out.split())  # said, not silently run
    assert (tool.parent / "calls.txt").read_text().splitlines() == ["sync"]
    failing = _pip(machine, {}, name="failing", code=2)
    r = _guard(machine, "--", str(failing), "install", "x")
    assert r.code == 1 and "the install failed (exit status 2)" in r.out


def test_the_pure_core():
    assert pip_install_at(["pip", "install", "x"]) == 1 and pip_install_at(["/v/bin/pip3.12", "install", "x"]) == 1
    assert pip_install_at(["python3", "-m", "pip", "install", "x"]) == 3 and pip_install_at(["pip", "uninstall", "x"]) is None
    assert pip_install_at(["uv", "pip", "install", "x"]) is None and pip_install_at(["conda", "install", "x"]) is None
    assert dry_run_argv(["pip", "install", "--dry-run", "x"]) is None
    assert keep_argv(["pip", "install", "x"], "2.8.0") == ("pip", "install", "x", "torch==2.8.0")  # PyPI's build: no index
    assert restore_command("2.7.1+rocm6.3", "/v/bin/python", "uv") == (
        "uv pip install --python /v/bin/python torch==2.7.1+rocm6.3 --index-url https://download.pytorch.org/whl/rocm6.3",)
    assert installer_python(["/v/bin/python3", "-m", "pip", "install", "x"]) == "/v/bin/python3"
    assert installer_python(["/v/bin/pip", "install", "x"]) == "/v/bin/python"
    assert installer_python(["uv", "pip", "install", "--python", "/w/bin/python", "x"]) == "/w/bin/python"
    assert installer_python(["pip", "install", "x"]) is None and installer_python([]) is None


def test_the_python_the_install_names_is_the_one_guarded(machine):
    """Without --python: ``/venv/bin/pip`` guards /venv/bin/python's torch (here a link to the test interpreter, whose
    torch is the fake one on PYTHONPATH); where the command line names no Python and none is found, it says so."""
    import os

    machine.torch("2.8.0+cu128", "12.8")
    pip = _pip(machine, {"einops": "0.8.1"})
    r = machine.cli("torch", "guard", "--", str(pip), "install", "einops", env=machine.full_env())
    assert r.code == 2 and "no Python found whose torch to guard" in r.err, r  # no python beside this pip
    os.symlink(sys.executable, pip.parent / "python")
    r = machine.cli("torch", "guard", "--", str(pip), "install", "einops", env=machine.full_env())
    assert r.code == 0 and "torch 2.8.0+cu128 is unchanged." in r.out, r


# ------------------------------------------------------------------ uv pip and conda: their own dry runs (issue 29)
FAKE_TOOL = r'''#!%(python)s
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
plan = json.load(open(os.path.join(here, "plan.json")))
with open(os.path.join(here, "calls.txt"), "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
if "--dry-run" in sys.argv:
    sys.stdout.write(plan["stdout"])
    sys.stderr.write(plan["stderr"])
    sys.exit(0)
print("installed")
'''


def _tool(machine, name, stdout="", stderr=""):
    """A stand-in installer named ``name`` whose dry run prints ``stdout``/``stderr`` (a recorded real plan) and whose
    real run changes nothing (so a run that should not happen shows in calls.txt)."""
    folder = machine.tmp / ("tool-" + name)
    folder.mkdir(exist_ok=True)
    (folder / "plan.json").write_text(json.dumps({"stdout": stdout, "stderr": stderr}))
    script = folder / name
    script.write_text(FAKE_TOOL % {"python": sys.executable})
    script.chmod(0o755)
    return script


def _uv_run(args):
    from builders import recorded_runs

    return recorded_runs("uv-pip-install-dry-run-0.13.9.txt")[args]  # real uv 0.13.9 output


def test_a_uv_pip_install_that_would_replace_torch_is_stopped(machine):
    """uv prints its plan on stderr (recorded from uv 0.13.9): ` + torch==2.9.1` against the installed 2.8.0+cu128."""
    machine.torch("2.8.0+cu128", "12.8")
    uv = _tool(machine, "uv", stderr=_uv_run("six torch==2.9.1"))
    r = _guard(machine, "--", str(uv), "pip", "install", "six", "torch==2.9.1")
    assert r.code == 3, r
    assert (uv.parent / "calls.txt").read_text().splitlines() == ["pip install --dry-run six torch==2.9.1"]  # nothing installed
    assert "uv's dry run of `%s pip install six torch==2.9.1` would replace torch 2.8.0+cu128 with torch 2.9.1" % uv in " ".join(r.out.split())
    assert "%s pip install six torch==2.9.1 torch==2.8.0+cu128 --extra-index-url https://download.pytorch.org/whl/cu128" % uv in r.out


def test_a_uv_pip_install_that_leaves_torch_runs(machine):
    machine.torch("2.8.0+cu128", "12.8")
    uv = _tool(machine, "uv", stderr=_uv_run("six"))
    r = _guard(machine, "--", str(uv), "pip", "install", "six")
    assert r.code == 0 and "torch 2.8.0+cu128 is unchanged." in r.out, r
    assert (uv.parent / "calls.txt").read_text().splitlines() == ["pip install --dry-run six", "pip install six"]


def test_a_conda_install_that_would_relink_pytorch_is_stopped_with_its_build_pinned(machine):
    """conda's --dry-run --json (the later shape: the action group object; records as dist_fields_dump writes them,
    constructed in the recorded paste's format) links a CPU build of the same pytorch version: a replacement."""
    machine.torch("2.5.1", "12.6")
    plan = {"actions": {"LINK": [{"name": "pytorch", "version": "2.5.1", "build_string": "cpu_generic_py312h0d5e7e4_8",
                                  "channel": "conda-forge"}, {"name": "einops", "version": "0.8.1", "build_string": "pyhd8ed1ab_0"}],
                        "UNLINK": [{"name": "pytorch", "version": "2.5.1", "build_string": "cuda126_py312h1763f6d_308",
                                    "channel": "conda-forge"}], "PREFIX": "/opt/conda/envs/x"}, "dry_run": True, "success": True}
    conda = _tool(machine, "conda", stdout=json.dumps(plan))
    r = _guard(machine, "--", str(conda), "install", "-y", "einops")
    assert r.code == 3, r
    assert (conda.parent / "calls.txt").read_text().splitlines() == ["install --dry-run --json -y einops"]
    assert "would replace torch 2.5.1 with torch 2.5.1 (cpu_generic_py312h0d5e7e4_8)" in " ".join(r.out.split())
    assert "%s install -y einops pytorch=2.5.1=cuda126_py312h1763f6d_308" % conda in r.out
    quiet = _tool(machine, "conda", stdout='{"message": "All requested packages already installed.", "success": true}')
    r = _guard(machine, "--", str(quiet), "install", "einops")
    assert r.code == 0 and "torch 2.5.1 is unchanged." in r.out, r


def test_the_pure_core_of_uv_and_conda():
    from cudaenv.recommend.guard import installer_of, read_plan

    assert dry_run_argv(["uv", "pip", "install", "x"]) == ("uv", "pip", "install", "--dry-run", "x")
    assert dry_run_argv(["conda", "install", "-n", "e", "x"]) == ("conda", "install", "--dry-run", "--json", "-n", "e", "x")
    assert dry_run_argv(["conda", "install", "--json", "x"]) is None and dry_run_argv(["uv", "sync"]) is None
    assert [installer_of(a) for a in (["pip", "install", "x"], ["uv", "pip", "install", "x"], ["/o/bin/conda", "update", "x"],
                                      ["mamba", "install", "x"], ["uv", "add", "x"])] == ["pip", "uv", "conda", "mamba", None]
    assert keep_argv(["conda", "install", "x"], "2.5.1", "conda") == ("conda", "install", "x", "pytorch==2.5.1")
    assert read_plan("uv", "", _uv_run("six torch==2.9.1")) == ("2.9.1", None, False)
    assert read_plan("conda", "not json", "") == ("", None, False)


# ------------------------------------------------------------------ mamba and micromamba: conda's document (issue 29)
def test_the_pure_core_of_mamba_and_micromamba():
    """install/create/update of mamba and micromamba (and conda's forms, upgrade too) get ``--dry-run --json`` after the
    subcommand (micromamba's global options, documented in mamba's commands_micromamba/install.rst; no ``-y``: a dry
    run returns before the prompt); anything else of theirs is not an install the guard can dry-run."""
    from cudaenv.recommend.guard import conda_install_at, conda_tool, installer_of

    assert dry_run_argv(["micromamba", "install", "-y", "-n", "e", "x"]) == (
        "micromamba", "install", "--dry-run", "--json", "-y", "-n", "e", "x")
    assert dry_run_argv(["/opt/mm/bin/mamba", "create", "-p", "/e", "x"]) == (
        "/opt/mm/bin/mamba", "create", "--dry-run", "--json", "-p", "/e", "x")
    assert dry_run_argv(["micromamba", "update", "--json", "x"]) is None  # already asks for JSON: run as given
    assert [installer_of([tool, sub, "x"]) for tool, sub in (
        ("micromamba", "install"), ("micromamba", "create"), ("micromamba", "update"), ("mamba", "update"),
        ("conda", "create"), ("conda", "upgrade"), ("C:\\mm\\micromamba.exe", "install"))] == [
        "micromamba", "micromamba", "micromamba", "mamba", "conda", "conda", "micromamba"]
    assert [conda_install_at(a) for a in (["micromamba", "remove", "x"], ["micromamba", "upgrade", "x"], ["mamba", "env", "update"],
                                          ["micromamba"], ["mambaforge", "install", "x"])] == [None] * 5
    assert conda_tool("/usr/bin/conda") == "conda" and conda_tool("condax") is None
    assert conda_tool("C:\\Miniforge3\\condabin\\conda.bat") == "conda" and conda_tool("mamba.EXE") == "mamba"


def test_the_environment_a_conda_family_install_names():
    """``-p PREFIX`` is the prefix; ``-n NAME`` is ROOT/envs/NAME under ``-r``, else MAMBA_ROOT_PREFIX (micromamba,
    mamba), else the root the program lives in (its path, or where PATH found it); ``-n base`` is the root; neither:
    the active environment, CONDA_PREFIX. A name whose root is not known: (None, True)."""
    from cudaenv.recommend.guard import conda_target_python

    assert conda_target_python(["micromamba", "install", "-p", "/e/t", "x"], {}) == ("/e/t/bin/python", True)
    assert conda_target_python(["micromamba", "install", "--prefix=/e/t", "x"], {}) == ("/e/t/bin/python", True)
    assert conda_target_python(["micromamba", "install", "-r", "/mm", "-n", "t", "x"], {}) == ("/mm/envs/t/bin/python", True)
    assert conda_target_python(["micromamba", "install", "-n", "t", "x"], {"MAMBA_ROOT_PREFIX": "/mr"}) == ("/mr/envs/t/bin/python", True)
    assert conda_target_python(["micromamba", "install", "-n", "t", "x"], {}) == (None, True)  # no root known
    assert conda_target_python(["/opt/conda/bin/conda", "install", "-n", "t", "x"], {"MAMBA_ROOT_PREFIX": "/mr"}) == (
        "/opt/conda/envs/t/bin/python", True)
    assert conda_target_python(["conda", "install", "-n", "t", "x"], {}, "linux", "/opt/conda/bin/conda") == (
        "/opt/conda/envs/t/bin/python", True)
    assert conda_target_python(["/opt/conda/bin/mamba", "install", "-n", "base", "x"], {}) == ("/opt/conda/bin/python", True)
    assert conda_target_python(["micromamba", "install", "-p", "C:\\e\\t", "x"], {}, "windows") == ("C:\\e\\t\\python.exe", True)
    assert conda_target_python(["micromamba", "install", "x"], {"CONDA_PREFIX": "/mr/envs/a"}) == ("/mr/envs/a/bin/python", False)
    assert conda_target_python(["micromamba", "install", "x"], {"MAMBA_ROOT_PREFIX": "/mr"}) == (None, False)
    assert conda_target_python(["pip", "install", "-p", "/e", "x"], {}) == (None, False)


def test_the_real_micromamba_and_mamba_documents_leave_torch_alone(machine):
    """micromamba 1.5.12's and mamba 2.6.0's real dry-run documents (conda-lock's captures: libzlib, zlib) link no
    pytorch: the install runs after its dry run, with the flags each tool was given."""
    from builders import recorded

    machine.torch("2.5.1", "12.6")
    for name, doc in (("micromamba", "micromamba-create-dry-run-json-1.5.12.txt"), ("mamba", "mamba-create-dry-run-json-2.6.0.txt")):
        tool = _tool(machine, name, stdout=recorded(doc))
        r = _guard(machine, "--", str(tool), "install", "-y", "-n", "base", "zlib")
        assert r.code == 0 and "torch 2.5.1 is unchanged." in r.out, r
        assert (tool.parent / "calls.txt").read_text().splitlines() == [
            "install --dry-run --json -y -n base zlib", "install -y -n base zlib"]


def test_a_micromamba_install_that_would_replace_pytorch_is_stopped(machine):
    """The plan unlinks pytorch 2.5.1's CUDA build and links its CPU build (constructed in micromamba 1.5.12's real
    record shape): stopped before anything changed, with the CUDA build pinned in the same command line."""
    from builders import recorded

    machine.torch("2.5.1", "12.6")
    mm = _tool(machine, "micromamba", stdout=recorded("micromamba-install-dry-run-json-pytorch-constructed.txt"))
    r = _guard(machine, "--", str(mm), "install", "-y", "-n", "torchenv", "einops")
    assert r.code == 3, r
    assert (mm.parent / "calls.txt").read_text().splitlines() == ["install --dry-run --json -y -n torchenv einops"]
    out = " ".join(r.out.split())
    assert "micromamba's dry run of `%s install -y -n torchenv einops` would replace torch 2.5.1 with torch 2.5.1 (cpu_generic_py312h0d5e7e4_8)" % mm in out
    assert "%s install -y -n torchenv einops pytorch=2.5.1=cuda126_py312h1763f6d_308" % mm in r.out
    r = _guard(machine, "--allow-torch-change", "--", str(mm), "install", "-y", "-n", "torchenv", "einops")
    assert r.code == 0 and "torch 2.5.1 is unchanged." in r.out, r  # the stand-in's real run changes nothing


def test_the_environment_the_micromamba_line_names_is_the_one_guarded(machine):
    """Without --python: ``micromamba install -p PREFIX`` guards PREFIX/bin/python (a link to the test interpreter,
    whose torch is the model's). A prefix with no Python yet (``create`` of a new environment) has no torch to guard:
    it runs as given, with no dry run, and says so; a ``-n NAME`` whose root prefix is not known is refused."""
    import os

    machine.torch("2.5.1", "12.6")
    mm = _tool(machine, "micromamba", stdout='{"success": true}\n')
    calls = mm.parent / "calls.txt"
    prefix = machine.tmp / "mmenv"
    r = machine.cli("torch", "guard", "--", str(mm), "create", "-p", str(prefix), "pytorch", env=machine.full_env())
    assert r.code == 0 and "torch was not installed in %s before the install: nothing to guard." % (prefix / "bin" / "python") in r.out, r
    assert calls.read_text().splitlines() == ["create -p %s pytorch" % prefix]  # no dry run: nothing there to replace
    (prefix / "bin").mkdir(parents=True)
    os.symlink(sys.executable, prefix / "bin" / "python")
    r = machine.cli("torch", "guard", "--", str(mm), "install", "-p", str(prefix), "einops", env=machine.full_env())
    assert r.code == 0 and "torch 2.5.1 is unchanged." in r.out, r
    assert calls.read_text().splitlines()[1:] == ["install --dry-run --json -p %s einops" % prefix, "install -p %s einops" % prefix]
    env = machine.full_env()
    env.pop("MAMBA_ROOT_PREFIX", None)
    r = machine.cli("torch", "guard", "--", str(mm), "install", "-n", "torchenv", "einops", env=env)
    assert r.code == 2 and "names an environment whose root prefix is not known" in r.err and "-r/--root-prefix" in r.err, r
    env["MAMBA_ROOT_PREFIX"] = str(machine.tmp)
    (machine.tmp / "envs").mkdir(exist_ok=True)
    os.rename(prefix, machine.tmp / "envs" / "torchenv")  # MAMBA_ROOT_PREFIX/envs/torchenv
    r = machine.cli("torch", "guard", "--", str(mm), "install", "-n", "torchenv", "einops", env=env)
    assert r.code == 0 and "torch 2.5.1 is unchanged." in r.out, r
    assert calls.read_text().splitlines()[-2] == "install --dry-run --json -n torchenv einops"


def test_condas_real_unlink_document_through_the_guard(machine):
    """conda 4.4's real dry-run (conda/conda#6641: UNLINK pytest 3.3.0, LINK 3.3.1, the older list of action groups):
    no pytorch in it, so the install runs. The stored copy of the paste stops after "actions"; the closing keys are
    conda's own (constructed, as test_parse_install_plans.py's CLOSING)."""
    from builders import recorded

    machine.torch("2.5.1", "12.6")
    closing = '\n  "dry_run": true,\n  "success": true\n}\n'
    conda = _tool(machine, "conda", stdout=recorded("conda-update-dry-run-json-4.4.txt") + closing)
    r = _guard(machine, "--", str(conda), "update", "pytest")
    assert r.code == 0 and "torch 2.5.1 is unchanged." in r.out, r
    assert (conda.parent / "calls.txt").read_text().splitlines() == ["update --dry-run --json pytest", "update pytest"]


def test_a_failed_dry_run_is_said(machine):
    """A dry run that fails (here the tool's exit status 1 for a spec it cannot solve) leaves the install unguarded:
    it still runs (it is the user's command), and the output says the guard could not see the plan."""
    machine.torch("2.5.1", "12.6")
    folder = machine.tmp / "tool-failing"
    folder.mkdir()
    script = folder / "micromamba"
    script.write_text("#!%s\nimport sys\nsys.exit(1 if '--dry-run' in sys.argv else 0)\n" % sys.executable)
    script.chmod(0o755)
    r = _guard(machine, "--", str(script), "install", "nosuchpkg")
    assert r.code == 0, r
    assert "micromamba's dry run failed (exit status 1): the install ran unguarded" in " ".join(r.out.split())
    script.write_text("#!%s\nimport sys, time\nif '--dry-run' in sys.argv: time.sleep(30)\n" % sys.executable)
    env = dict(machine.full_env(), CUDAENV_INSTALL_TIMEOUT="1")
    r = machine.cli("torch", "guard", "--python", machine.python, "--", str(script), "install", "x", env=env)
    assert r.code == 0 and "micromamba's dry run did not finish (timeout): the install ran unguarded" in " ".join(r.out.split()), r


def test_a_conda_family_restore_line_keeps_the_environment():
    from cudaenv.recommend.guard import conda_restore_command

    assert conda_restore_command(["micromamba", "install", "-y", "-n", "t", "-r", "/mm", "x"], "2.5.1",
                                 "pytorch=2.5.1=cuda126_py312h1763f6d_308") == (
        "micromamba install -n t -r /mm pytorch=2.5.1=cuda126_py312h1763f6d_308",)
    assert conda_restore_command(["conda", "update", "--prefix=/e x", "y"], "2.5.1") == ("conda install '--prefix=/e x' pytorch==2.5.1",)


# ------------------------------------------------------------------ a plan that uninstalls torch: uv pip sync, conda's UNLINK
def _uv_sync_run(args):
    from builders import recorded_runs

    return recorded_runs("uv-pip-sync-dry-run-0.13.9.txt")[args]  # real uv 0.13.9 output


def test_a_uv_pip_sync_that_would_uninstall_torch_is_stopped(machine):
    """uv pip sync uninstalls what its requirement files leave out: the real plan ` + six==1.17.0`, ` - torch==2.8.0+cu128`
    installs no torch, and that is a change too. Its arguments are files, so the keep advice is the lines to add."""
    machine.torch("2.8.0+cu128", "12.8")
    uv = _tool(machine, "uv", stderr=_uv_sync_run("req-six.txt"))
    r = _guard(machine, "--", str(uv), "pip", "sync", "req.txt")
    assert r.code == 3, r
    assert (uv.parent / "calls.txt").read_text().splitlines() == ["pip sync --dry-run req.txt"]
    out = " ".join(r.out.split())
    assert "uv's dry run of `%s pip sync req.txt` would uninstall torch 2.8.0+cu128 and install none." % uv in out
    assert "add these lines to the requirement files it syncs: torch==2.8.0+cu128 --extra-index-url https://download.pytorch.org/whl/cu128" in out
    assert "install with it pinned" not in out  # no `uv pip sync req.txt torch==...`: sync takes files
    quiet = _tool(machine, "uv", stderr=_uv_sync_run("--no-index req-torch.txt"))
    r = _guard(machine, "--", str(quiet), "pip", "sync", "--no-index", "req.txt")
    assert r.code == 0 and "torch 2.8.0+cu128 is unchanged." in r.out, r
    assert (quiet.parent / "calls.txt").read_text().splitlines()[1:] == ["pip sync --dry-run --no-index req.txt", "pip sync --no-index req.txt"]


def test_a_conda_plan_that_unlinks_pytorch_alone_is_stopped(machine):
    """A plan whose UNLINK holds pytorch and whose LINK holds none removes torch (constructed from the recorded
    micromamba document with its pytorch LINK entry taken out)."""
    from builders import recorded

    doc = json.loads(recorded("micromamba-install-dry-run-json-pytorch-constructed.txt"))
    doc["actions"]["LINK"] = [e for e in doc["actions"]["LINK"] if e["name"] != "pytorch"]
    machine.torch("2.5.1", "12.6")
    mm = _tool(machine, "micromamba", stdout=json.dumps(doc))
    r = _guard(machine, "--", str(mm), "install", "-n", "torchenv", "einops")
    assert r.code == 3, r
    out = " ".join(r.out.split())
    assert "micromamba's dry run of `%s install -n torchenv einops` would uninstall torch 2.5.1 and install none." % mm in out
    assert "%s install -n torchenv einops pytorch=2.5.1=cuda126_py312h1763f6d_308" % mm in r.out


def test_the_pure_core_of_removals():
    from cudaenv.recommend.guard import keep_requirements, read_plan

    assert read_plan("uv", "", _uv_sync_run("req-six.txt")) == ("", None, True)
    assert read_plan("uv", "", _uv_sync_run("--no-index req-torch.txt")) == ("", None, False)
    assert read_plan("uv", "", " - torch==2.8.0\n + torch==2.9.0\n") == ("2.9.0", None, False)  # a replacement, said as one
    assert read_plan("pip", '{"version": "1", "install": []}', "") == ("", None, False)
    assert dry_run_argv(["uv", "pip", "sync", "r.txt"]) == ("uv", "pip", "sync", "--dry-run", "r.txt")
    assert keep_argv(["uv", "pip", "sync", "r.txt"], "2.8.0", "uv") == ()
    assert keep_requirements(["uv", "pip", "sync", "r.txt"], "2.8.0", "uv") == ("torch==2.8.0",)
    assert keep_requirements(["uv", "pip", "install", "x"], "2.8.0+cpu", "uv") == ()


def test_the_guard_speaks_chinese(machine):
    """Every sentence of render/guard.py is marked: a Chinese run says the stop, the plan and the kept line in Chinese,
    the commands, versions and paths as they are."""
    from builders import recorded

    machine.torch("2.5.1", "12.6")
    mm = _tool(machine, "micromamba", stdout=recorded("micromamba-install-dry-run-json-pytorch-constructed.txt"))
    env = dict(machine.full_env(), LANG="zh_CN.UTF-8")
    r = machine.cli("torch", "guard", "--python", machine.python, "--", str(mm), "install", "-n", "torchenv", "einops", env=env)
    assert r.code == 3, r
    assert "cudaenv torch guard：在任何改动之前就已停止。" in r.out
    assert "micromamba 对 `%s install -n torchenv einops` 的试运行显示：它会把 torch 2.5.1 替换为 torch 2.5.1 (cpu_generic_py312h0d5e7e4_8)。" % mm in r.out
    assert "  %s install -n torchenv einops pytorch=2.5.1=cuda126_py312h1763f6d_308" % mm in r.out
    assert "stopped before" not in r.out and "To keep this torch" not in r.out


# ------------------------------------------------------------------ uv and pip run as a module of a Python (issue 29)
def test_uv_run_as_a_module_is_recognised_like_uv():
    from cudaenv.recommend.guard import installer_of, keep_requirements, uv_install_at

    for py in ("python", "python3", "/path/to/python", "/opt/venv/bin/python3.12"):
        assert uv_install_at([py, "-m", "uv", "pip", "install", "x"]) == 4
        assert installer_of([py, "-m", "uv", "pip", "install", "x"]) == "uv"
        assert pip_install_at([py, "-m", "uv", "pip", "install", "x"]) is None  # uv's pip has no --report
        assert dry_run_argv([py, "-m", "uv", "pip", "sync", "r.txt"]) == (py, "-m", "uv", "pip", "sync", "--dry-run", "r.txt")
        assert installer_python([py, "-m", "uv", "pip", "install", "x"]) == py  # uv's __main__ points uv at this Python
    assert installer_python(["python3", "-m", "uv", "pip", "install", "--python", "/w/bin/python", "x"]) == "/w/bin/python"
    assert keep_argv(["python3", "-m", "uv", "pip", "sync", "r.txt"], "2.8.0", "uv") == ()
    assert keep_requirements(["python3", "-m", "uv", "pip", "sync", "r.txt"], "2.8.0", "uv") == ("torch==2.8.0",)
    assert keep_argv(["python3", "-m", "uv", "pip", "install", "x"], "2.8.0", "uv") == (
        "python3", "-m", "uv", "pip", "install", "x", "torch==2.8.0")
    # not uv's pip: another module, another uv subcommand, uv as an argument
    for argv in (["python3", "-m", "uvicorn", "app"], ["python3", "-m", "uv", "add", "x"], ["python3", "-m", "uv"],
                 ["python3", "uv", "pip", "install", "x"], ["python3", "-m", "pip", "uv", "install"]):
        assert uv_install_at(argv) is None, argv
    assert installer_of(["python3", "-m", "uv", "add", "x"]) is None
    assert installer_of(["C:\\Tools\\uv.exe", "pip", "install", "x"]) == "uv"
    # and pip as a module: its own dry run (--report)
    assert installer_of(["/path/to/python", "-m", "pip", "install", "x"]) == "pip"
    assert dry_run_argv(["python3", "-m", "pip", "install", "x"]) == (
        "python3", "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", "x")


def test_a_python_m_uv_pip_install_that_would_replace_torch_is_stopped(machine):
    """``python3 -m uv pip install`` gets uv's dry run (real uv 0.13.9 plan on stderr), not a plain run."""
    machine.torch("2.8.0+cu128", "12.8")
    py = _tool(machine, "python3", stderr=_uv_run("six torch==2.9.1"))
    r = _guard(machine, "--", str(py), "-m", "uv", "pip", "install", "six", "torch==2.9.1")
    assert r.code == 3, r
    assert (py.parent / "calls.txt").read_text().splitlines() == ["-m uv pip install --dry-run six torch==2.9.1"]
    out = " ".join(r.out.split())
    assert "uv's dry run of `%s -m uv pip install six torch==2.9.1` would replace torch 2.8.0+cu128 with torch 2.9.1" % py in out
    assert ("%s -m uv pip install six torch==2.9.1 torch==2.8.0+cu128 --extra-index-url "
            "https://download.pytorch.org/whl/cu128" % py) in r.out


def test_a_python_m_uv_pip_sync_that_would_uninstall_torch_is_stopped(machine):
    machine.torch("2.8.0+cu128", "12.8")
    py = _tool(machine, "python", stderr=_uv_sync_run("req-six.txt"))
    r = _guard(machine, "--", str(py), "-m", "uv", "pip", "sync", "req.txt")
    assert r.code == 3, r
    assert (py.parent / "calls.txt").read_text().splitlines() == ["-m uv pip sync --dry-run req.txt"]
    out = " ".join(r.out.split())
    assert "would uninstall torch 2.8.0+cu128 and install none." in out
    assert "add these lines to the requirement files it syncs: torch==2.8.0+cu128" in out
    assert "install with it pinned" not in out


def test_a_python_m_pip_install_that_would_replace_torch_is_stopped(machine):
    machine.torch("2.8.0+cu128", "12.8")
    py = _pip(machine, {"vllm": "0.11.0", "torch": "2.9.0"}, name="python3")
    r = _guard(machine, "--", str(py), "-m", "pip", "install", "vllm")
    assert r.code == 3, r
    assert (py.parent / "calls.txt").read_text().splitlines() == ["-m pip install --dry-run --quiet --report - vllm"]
    assert _torch_version(machine) == ["torch-2.8.0+cu128.dist-info"]  # nothing installed
    assert "%s -m pip install vllm torch==2.8.0+cu128 --extra-index-url https://download.pytorch.org/whl/cu128" % py in r.out
