"""The wheel: built from this tree, installed in a fresh venv, and run from there (data/ and shell/ inside it)."""

import json
import subprocess
import sys
import zipfile

import pytest

from builders import REPO, TOOLS

import cudaenv

DEPS = ["packaging", "requests", "platformdirs", "questionary"]


def _run(argv, timeout=300, **kwargs):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert proc.returncode == 0, "%s\n%s\n%s" % (argv, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("no source tree next to the tests")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, REPO])
    wheels = sorted(out.glob("cudaenv-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    env_dir = tmp_path_factory.mktemp("fresh") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", env_dir], timeout=120)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--disable-pip-version-check"]
    _run(pip + DEPS)
    _run(pip + ["--no-deps", wheel])
    return env_dir


@pytest.mark.slow
def test_the_wheel_carries_data_and_shell(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = sorted(p.name for p in (REPO / "data").glob("*.json"))
    shell = sorted(p.name for p in (REPO / "shell").iterdir() if p.is_file())
    assert data and shell
    for name in data:
        assert "cudaenv/data/%s" % name in names
    for name in shell:
        assert "cudaenv/shell/%s" % name in names
    assert "cudaenv/_child/torch_probe.py" in names
    assert not any(n.startswith(("data/", "shell/", "tests/")) for n in names)
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "cudaenv = cudaenv.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip().lower() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert not any(r.startswith("torch") for r in requires)  # torch is never a runtime dependency


@pytest.mark.slow
def test_installed_wheel_runs_and_reads_its_data(installed):
    exe = installed / "bin" / "cudaenv"
    env = {"PATH": "%s:%s" % (installed / "bin", TOOLS), "HOME": str(installed)}
    version = _run([exe, "--version"], env=env, cwd=str(installed))
    assert version.stdout.strip() == "cudaenv %s" % cudaenv.__version__
    as_module = _run([installed / "bin" / "python", "-m", "cudaenv", "--version"], env=env, cwd=str(installed))
    assert as_module.stdout == version.stdout

    # every facts table reads back from the installed package (not from this tree), equal to the source
    check = (
        "import json, sys, cudaenv.resources as r, pathlib\n"
        "assert not pathlib.Path(r.__file__).resolve().is_relative_to(pathlib.Path(sys.argv[1]).resolve())\n"
        "names = sys.argv[2:]\n"
        "print(json.dumps({n: r.load_table(n) for n in names}))\n"
    )
    tables = sorted(p.stem for p in (REPO / "data").glob("*.json"))
    shown = _run([installed / "bin" / "python", "-c", check, REPO] + tables, env=env, cwd=str(installed))
    loaded = json.loads(shown.stdout)
    for name in tables:
        assert loaded[name] == json.loads((REPO / "data" / (name + ".json")).read_text(encoding="utf-8"))

    # and one command that reads data/ or shell/, whichever this cudaenv has
    commands = REPO / "cudaenv" / "commands"
    if (commands / "torch.py").is_file() and (REPO / "data" / "torch_variants.json").is_file():
        r = _run([exe, "torch", "recommend", "--json", "--driver", "550.54", "--compute-capability", "8.6", "--torch", "2.5.1"],
                 env=env, cwd=str(installed))
        assert "whl/cu124" in r.stdout, r.stdout  # torch 2.5.1 was built up to cu124, and driver 550 runs CUDA 12.4
    elif (commands / "init.py").is_file() and (REPO / "shell" / "cudaenv.bash").is_file():
        r = _run([exe, "init", "bash"], env=env, cwd=str(installed))
        template = (REPO / "shell" / "cudaenv.bash").read_text(encoding="utf-8")
        assert any(line.strip() and line in r.stdout for line in template.splitlines() if len(line.strip()) > 20)
    else:
        r = _run([exe, "list", "--json"], env=env, cwd=str(installed))
        assert "toolkits" in json.loads(r.stdout)


def test_python_dash_m_cudaenv_is_the_cli(tmp_path):
    """`python -m cudaenv` runs the same CLI as the console script: its version, and exit 2 with one line for a bad option."""
    env = {"PATH": TOOLS, "HOME": str(tmp_path)}
    ok = subprocess.run([sys.executable, "-m", "cudaenv", "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert (ok.returncode, ok.stdout.strip()) == (0, "cudaenv %s" % cudaenv.__version__)
    bad = subprocess.run([sys.executable, "-m", "cudaenv", "doctor", "--root", str(tmp_path / "nope")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and bad.stdout == "" and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("cudaenv: error: --root ")


@pytest.mark.slow
def test_an_editable_install_reads_data_and_shell_from_the_checkout(tmp_path):
    """`pip install -e .` (a contributor's habit) has no cudaenv/data copies: the checkout's data/ and shell/ serve."""
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("no source tree next to the tests")
    env_dir = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", env_dir], timeout=120)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--disable-pip-version-check"]
    _run(pip + DEPS)
    _run(pip + ["--no-deps", "-e", REPO])  # as a contributor types it: pip fetches hatchling and editables itself
    env = {"PATH": "%s:%s" % (env_dir / "bin", TOOLS), "HOME": str(tmp_path)}
    where = _run([python, "-c", "import cudaenv, pathlib; print(pathlib.Path(cudaenv.__file__).resolve())"], env=env, cwd=str(tmp_path))
    assert where.stdout.strip() == str(REPO / "cudaenv" / "__init__.py")  # really the checkout, not a copy
    r = _run([env_dir / "bin" / "cudaenv", "torch", "recommend", "--json", "--driver", "550.54", "--compute-capability", "8.6",
              "--torch", "2.5.1"], env=env, cwd=str(tmp_path))
    assert "whl/cu124" in r.stdout, r.stdout
    init = _run([env_dir / "bin" / "cudaenv", "init", "bash"], env=env, cwd=str(tmp_path))
    assert "cudaenv" in init.stdout and init.stdout.strip()


def test_a_missing_data_file_is_one_line_and_exit_2(tmp_path, monkeypatch):
    """A broken install (a data file gone) says so in one line with the reinstall command, never a traceback."""
    import io

    from cudaenv import cli, resources

    monkeypatch.setattr(resources, "_files", lambda package: tmp_path)  # an installed package without data/
    monkeypatch.setattr(resources, "_checkout_file", lambda folder, name: None)  # and not a checkout
    resources.load_table.cache_clear()
    out, err = io.StringIO(), io.StringIO()
    try:
        code = cli.main(["torch", "recommend", "--driver", "550.54", "--compute-capability", "8.6"],
                        env={"PATH": TOOLS, "HOME": str(tmp_path)}, out=out, err=err)
    finally:
        resources.load_table.cache_clear()
    assert code == 2 and out.getvalue() == ""
    assert err.getvalue().startswith("cudaenv: error: cudaenv is installed without its data/")
    assert "pip install --force-reinstall cudaenv" in err.getvalue() and "Traceback" not in err.getvalue()
