"""`doctor --quick`'s read of the interpreter (issue 35): the static torch child runs with ``-S`` and makes site's sys.path
itself (the interpreter's own ``site.main()``, the .pth files' path lines added, their import lines and sitecustomize
listed in ``Torch.site_code_skipped`` and never run). The differential against the real ``site`` runs real venvs of the
test interpreter (``slow``); the rest checks what the doctor does with it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from builders import TOOLS
from cudaenv.host import Host
from cudaenv.probes.python import Interpreter
from cudaenv.probes.torch import probe_torch_static
from machine import make_probe_torch as make_fake_torch

CHILD_DIR = str(Path(__import__("cudaenv._child", fromlist=["x"]).__file__).parent)

# the child's own functions under -S: sys.path as its site emulation leaves it, and what it did not run
EMULATED = ("import sys\nsys.path.insert(0, %r)\nimport site_paths as c\nsys.path.pop(0)\nwhile sys.path and sys.path[0] == '':\n    sys.path.pop(0)\n"
            "skipped = c._site_without_code()\nimport json\nprint(json.dumps([sys.path, skipped]))\n" % CHILD_DIR)
REAL = "import sys, json\nwhile sys.path and sys.path[0] == '':\n    sys.path.pop(0)\nprint(json.dumps([sys.path, []]))\n"


def make_venv(base: Path, system_site: bool = False) -> Path:
    args = [sys.executable, "-m", "venv", "--without-pip"] + (["--system-site-packages"] if system_site else []) + [str(base)]
    subprocess.run(args, check=True, timeout=120)
    return next(base.glob("lib/python3*/site-packages"))


def paths(python: Path, code: str, cwd: Path, flags=(), **env):
    run_env = {"PATH": TOOLS, "HOME": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    run_env.update(env)
    out = subprocess.run([str(python), *flags, "-c", code], capture_output=True, text=True, env=run_env, cwd=str(cwd),
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def fill_pth(site: Path, tmp: Path, with_code: bool) -> dict:
    """.pth files of every kind of line site reads, in an order that differs from the names' creation order."""
    made = {name: tmp / name for name in ("extra-a", "extra-b", "rel", "deep")}
    for folder in made.values():
        folder.mkdir(exist_ok=True)
    (site / "rel").mkdir(exist_ok=True)
    (site / "zz-last.pth").write_text("%s\n# a comment\n\n%s\n/nonexistent/folder\n" % (made["extra-b"], made["extra-a"]))
    (site / "aa-first.pth").write_text("%s\r\nrel\n   \n%s  \n" % (made["deep"], made["extra-a"]))
    (site / ".hidden.pth").write_text("%s\n" % made["rel"])  # site skips names starting with a dot (3.13; 3.11 reads it)
    if with_code:
        (site / "mm-code.pth").write_text("import os; open(%r, 'w').close()\n%s\n" % (str(tmp / "pth-ran"), made["rel"]))
        (site / "sitecustomize.py").write_text("open(%r, 'w').close()\n" % str(tmp / "sitecustomize-ran"))
    return made


@pytest.mark.slow
def test_the_site_emulation_gives_the_real_sys_path(tmp_path):
    """Differential: in a venv without and one with the system site-packages (and a user site with its own .pth), with
    PYTHONNOUSERSITE and without, the -S child's sys.path is the one the real site makes when no .pth has code."""
    cases = []
    plain = make_venv(tmp_path / "plain")
    fill_pth(plain, tmp_path, with_code=False)
    cases.append((tmp_path / "plain" / "bin" / "python", {}))
    system = make_venv(tmp_path / "system", system_site=True)
    fill_pth(system, tmp_path, with_code=False)
    user_base = tmp_path / "userbase"
    user_site = user_base / ("lib/python%d.%d/site-packages" % sys.version_info[:2])
    user_site.mkdir(parents=True)
    (tmp_path / "from-user-pth").mkdir()
    (user_site / "u.pth").write_text("%s\n" % (tmp_path / "from-user-pth"))
    python = tmp_path / "system" / "bin" / "python"
    cases += [(python, {"PYTHONUSERBASE": str(user_base)}),
              (python, {"PYTHONUSERBASE": str(user_base), "PYTHONNOUSERSITE": "1"}),
              (python, {"PYTHONUSERBASE": str(user_base), "PYTHONPATH": str(tmp_path / "extra-b")})]
    for python, env in cases:
        real, _ = paths(python, REAL, tmp_path, **env)
        emulated, skipped = paths(python, EMULATED, tmp_path, ("-S",), **env)
        ours = [f for f in skipped if f.startswith(str(tmp_path))]
        assert ours == [], (env, skipped)
        if not skipped:
            assert emulated == real, (python, env)
        else:  # the base interpreter's own .pth code (this machine's): what it adds to sys.path is all that may differ
            assert [p for p in emulated if p not in real] == [] and [p for p in real if p not in emulated] == [], (env, skipped)
            assert [p for p in real if p in emulated] == emulated, env
        assert str(tmp_path / "extra-a") in emulated and str(tmp_path / "deep") in emulated
        assert str(plain / "rel") in emulated or str(system / "rel") in emulated  # a path line relative to its folder
        user_on = "PYTHONNOUSERSITE" not in env and "PYTHONUSERBASE" in env
        assert (str(tmp_path / "from-user-pth") in emulated) == user_on, env


@pytest.fixture(scope="module")
def coded_venv(tmp_path_factory):
    """A venv whose site-packages holds a fake torch, .pth path lines, a .pth with an import line and a sitecustomize
    (each of the last two leaves a file when it runs)."""
    tmp = tmp_path_factory.mktemp("coded")
    site = make_venv(tmp / "env")
    make_fake_torch(site)
    fill_pth(site, tmp, with_code=True)
    return tmp, site, tmp / "env" / "bin" / "python"


def test_the_quick_read_runs_no_pth_code_and_says_which(coded_venv):
    """The quick read finds the same torch, site-packages and sys.path's .pth folders as the full one, runs neither
    the .pth import line nor sitecustomize (their files stay unmade) and names both; the full read runs them."""
    tmp, site, python = coded_venv
    host = Host(env={"PATH": TOOLS, "PYTHONDONTWRITEBYTECODE": "1"}, system="linux", timeout=30)
    interpreter = Interpreter(str(python), "VIRTUAL_ENV")
    notes = []
    quick = probe_torch_static(host, interpreter, notes, quick=True)
    assert not (tmp / "pth-ran").exists() and not (tmp / "sitecustomize-ran").exists()
    assert quick.site_code_skipped == (str(site / "mm-code.pth"), str(site / "sitecustomize.py")), quick.site_code_skipped
    full = probe_torch_static(host, interpreter, [])
    assert (tmp / "pth-ran").exists() and (tmp / "sitecustomize-ran").exists()
    assert full.site_code_skipped == ()
    for field in ("installed", "version", "location", "site_packages", "in_virtualenv", "executable", "nvidia_packages",
                  "python_version", "platform_tag"):
        assert getattr(quick, field) == getattr(full, field), field
    assert quick.installed and quick.in_virtualenv and notes == []


def test_the_doctor_starts_the_quick_child_with_S_before_any_other_probe(coded_venv, refusing_runner, monkeypatch):
    """`doctor --quick`: the static child (``-S``) is started from the calling thread before any probe thread exists
    (counted: the runner's starts when the first Job is made), and the report says what the read did not run."""
    from cudaenv.probes import collect

    tmp, site, python = coded_venv
    seen = []
    real_job = collect.Job

    def job(fn, *args):
        seen.append((fn.__name__, len(refusing_runner.started)))
        return real_job(fn, *args)

    monkeypatch.setattr(collect, "Job", job)
    for made in ("pth-ran", "sitecustomize-ran"):  # the full read of the test before made them
        if (tmp / made).exists():
            os.unlink(tmp / made)
    host = Host(env={"PATH": TOOLS, "PYTHONDONTWRITEBYTECODE": "1"}, system="linux", timeout=30)
    snap = collect.collect_snapshot(host, python=str(python), quick=True)
    assert seen[0] == ("_torch_static", 1), seen
    assert refusing_runner.started[0][:3] == (str(python), "-S", "-c") and refusing_runner.started[0][-1] == "static"
    assert len(refusing_runner.started) == 1  # the static child is started once, read by its job
    assert snap.torch.installed and str(site / "mm-code.pth") in snap.torch.site_code_skipped
    assert not (tmp / "pth-ran").exists() and not (tmp / "sitecustomize-ran").exists()


def test_the_report_says_what_the_quick_read_did_not_run():
    from cudaenv.diagnose import diagnose
    from cudaenv.diagnose.view import build_view
    from cudaenv.model.snapshot import Platform, Snapshot, Torch
    from cudaenv.render.markdown import render_markdown
    from cudaenv.render.report import render_report

    torch = Torch(python="/venv/bin/python", site_code_skipped=("/venv/lib/site-packages/a.pth",))
    snap = Snapshot(platform=Platform(system="linux", machine="x86_64"), torch=torch)
    findings = diagnose(snap)
    text = render_report(snap, findings, build_view(snap), width=200)
    line = next(line for line in text.splitlines() if "site code" in line)
    assert "not run by the quick read: /venv/lib/site-packages/a.pth" in line and "without --quick" in line
    md = render_markdown(snap, findings, build_view(snap))
    assert "`/venv/lib/site-packages/a.pth`" in md and "not run by the quick read" in md
    plain = Snapshot(platform=Platform(system="linux", machine="x86_64"), torch=Torch(python="/venv/bin/python"))
    assert "site code" not in render_report(plain, diagnose(plain), build_view(plain), width=200)


# what the -S child may import besides what the interpreter loads at start: site and sysconfig (whose data module's
# name varies by platform and build), the path finder's helpers; never json, ast, importlib.util or anything a .pth names
CHILD_MAY_IMPORT = ("site", "_sitebuiltins", "sysconfig", "_sysconfigdata", "_imp", "os", "stat", "_stat", "posixpath",
                    "genericpath", "_collections_abc", "io", "abc", "codecs", "encodings", "_distutils_system_mod", "_osx_support",
                    "_aix_support", "threading", "_weakrefset", "warnings", "rlcompleter")


# put before the child's -c source: the modules loaded are written out when the -S child closes its output (its end)
LIST_MODULES_AT_EXIT = ("import os, sys\n_closerange = os.closerange\n"
                        "def _listed(low, high):\n    sys.stdout.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
                        "    sys.stdout.flush()\n    _closerange(low, high)\nos.closerange = _listed\n")


def test_the_quick_child_imports_only_site_and_sysconfig(coded_venv):
    """Counted work: the -S child (the doctor's one source) imports site, sysconfig and their helpers, nothing else
    (with site, this machine's pyenv Python imports certifi, importlib.resources, pathlib, tempfile and zipfile)."""
    from cudaenv.probes.torch_child import child_command, parse_child_output

    tmp, site, python = coded_venv
    code = LIST_MODULES_AT_EXIT + child_command("static", str(python), Host(env={}, system="linux"))
    env = {"PATH": TOOLS, "HOME": str(tmp), "PYTHONDONTWRITEBYTECODE": "1"}
    bare = subprocess.run([str(python), "-S", "-c", "import sys; print(' '.join(sorted(sys.modules)))"],
                          capture_output=True, text=True, env=env, timeout=60)
    run = subprocess.run([str(python), "-S", "-c", code, "static"], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    data = parse_child_output(run.stdout)
    assert data and data["installed"] and data["site_code_skipped"], run.stdout
    loaded = run.stdout.rsplit("MODULES ", 1)[1].split()
    new = sorted(set(loaded) - set(bare.stdout.split()))
    odd = [m for m in new if not m.startswith(CHILD_MAY_IMPORT)]
    assert odd == [], new
    assert "site" in new and "json" not in new and "importlib.util" not in new and "ast" not in new


def test_a_pyenv_shim_is_one_start_of_its_interpreter_with_S(tmp_path, refusing_runner, monkeypatch):
    """Counted work: `doctor --quick` through python3 a pyenv shim starts one program, the version's interpreter with
    -S (no bash, no `pyenv exec`), resolved once; the record names the shim, which is what the user runs."""
    from builders import recorded
    from cudaenv.probes.collect import collect_snapshot

    root = tmp_path / "pyenv"
    (root / "shims").mkdir(parents=True)
    shim = root / "shims" / "python3"
    shim.write_text(recorded("pyenv-2.6.30-shim-python3.sh").replace("/root/.pyenv", str(root)))
    shim.chmod(0o755)
    (root / "versions" / "3.11.7" / "bin").mkdir(parents=True)
    real = root / "versions" / "3.11.7" / "bin" / "python3"
    os.symlink(sys.executable, real)
    (root / "version").write_text("3.11.7\n")
    site = tmp_path / "site-packages"
    site.mkdir()
    make_fake_torch(site)
    monkeypatch.chdir(tmp_path)
    ran = []
    real_call = refusing_runner.__class__.__call__

    def counted(self, argv, *args, **kwargs):
        ran.append(tuple(argv))
        return real_call(self, argv, *args, **kwargs)

    monkeypatch.setattr(refusing_runner.__class__, "__call__", counted)
    host = Host(env={"PATH": "%s:%s" % (root / "shims", TOOLS), "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"},
                system="linux", timeout=30)
    snap = collect_snapshot(host, python=str(shim), quick=True)
    children = [argv for argv in refusing_runner.started + ran if "-c" in argv]
    assert [argv[:2] for argv in children] == [(str(real), "-S")], children
    assert not any(os.path.basename(argv[0]) in ("bash", "pyenv") for argv in ran)
    assert snap.torch.installed and snap.torch.python == str(shim)
