"""The wheel: built from this tree, installed in a fresh venv, and run from there (data/ and shell/ inside it)."""

import json
import subprocess
import sys
import zipfile

import pytest

from builders import REPO, TOOLS

import cudaenv
from cudaenv.core.linetable import parse_lines_table

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
    data = sorted(p.name for p in (REPO / "data").glob("*.json")) + sorted(p.name for p in (REPO / "data").glob("*.txt"))
    shell = sorted(p.name for p in (REPO / "shell").iterdir() if p.is_file())
    assert data and shell
    for name in data:
        assert "cudaenv/data/%s" % name in names
        # a line table or a JSON table, and its compiled copy (hatch_build.py compile_tables)
        assert "cudaenv/data/%s.marshal" % name in names
    for name in shell:
        assert "cudaenv/shell/%s" % name in names
    assert "cudaenv/_child/torch_probe.py" in names
    assert "cudaenv/bundle/startup.bundle" in names  # the code of use's and list's modules (hatch_build.py compile_bundle)
    assert "cudaenv/bundle/doctor.bundle" in names  # the doctor's (bundle.DOCTOR_MODULES)
    # the torch probe's scripts compiled (hatch_build.py compile_children), loaded by a child of the same bytecode
    assert "cudaenv/_child/torch_probe.static.code" in names and "cudaenv/_child/torch_probe.dynamic.code" in names
    assert not any(n.startswith(("data/", "shell/", "tests/")) for n in names)
    # the command is the wheel's own script (hatch_build.py), with no entry point pip would shadow it with
    assert not any(n.endswith(".dist-info/entry_points.txt") for n in names)
    script = zipfile.ZipFile(wheel).read("cudaenv-%s.data/scripts/cudaenv" % cudaenv.__version__).decode()
    assert script.startswith("#!python\n") and "from cudaenv.cli import exit_now, main" in script and "exit_now(main())" in script and "import re" not in script
    assert wheel.name.endswith("-py3-none-any.whl")
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip().lower() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert not any(r.startswith("torch") for r in requires)  # torch is never a runtime dependency


@pytest.mark.slow
def test_a_wheel_built_for_windows_declares_the_entry_point(tmp_path):
    """On Windows an installer makes cudaenv.exe only for an entry point: that wheel has it, no script, and a
    platform tag (so that, published beside the py3-none-any wheel, Windows installers pick it)."""
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("no source tree next to the tests")
    import os

    env = dict(os.environ, CUDAENV_WHEEL_PLATFORM="win_amd64")
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", tmp_path, REPO], env=env)
    (wheel,) = tmp_path.glob("cudaenv-*.whl")
    assert wheel.name == "cudaenv-%s-py3-none-win_amd64.whl" % cudaenv.__version__
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert not any(".data/scripts/" in n for n in names)
    entry = archive.read("cudaenv-%s.dist-info/entry_points.txt" % cudaenv.__version__).decode()
    assert entry.split() == ["[console_scripts]", "cudaenv", "=", "cudaenv.cli:main"]
    assert "Tag: py3-none-win_amd64" in archive.read("cudaenv-%s.dist-info/WHEEL" % cudaenv.__version__).decode()
    bad = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", tmp_path / "bad", REPO],
                         capture_output=True, text=True, timeout=300, env=dict(env, CUDAENV_WHEEL_PLATFORM="linux_x86_64"))
    assert bad.returncode != 0 and "only a Windows platform tag" in bad.stdout + bad.stderr


@pytest.mark.slow
def test_the_installed_command_starts_without_re(installed, tmp_path):
    """bin/cudaenv is the wheel's script with the venv's interpreter on its first line, and `cudaenv use` imports
    neither re nor anything else pip's wrapper would (the start-up budget of docs/design.md)."""
    exe = installed / "bin" / "cudaenv"
    assert exe.read_text().splitlines()[0] == "#!" + str(installed / "bin" / "python")
    tree = tmp_path / "sw" / "12.4"
    (tree / "bin").mkdir(parents=True)
    (tree / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.131"}}))
    env = {"PATH": "%s:%s" % (installed / "bin", TOOLS), "HOME": str(tmp_path), "SHELL": "/bin/bash",
           "CUDAENV_TOOLKITS": str(tmp_path / "sw"), "PYTHONPROFILEIMPORTTIME": "1"}
    r = _run([exe, "use", "12.4", "--shell", "bash"], env=env, cwd=str(tmp_path))
    assert str(tree / "bin") in r.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert {"cudaenv.cli", "cudaenv.toolkit.switch"} <= imported  # the profile saw the command's own imports
    assert not imported & {"re", "enum", "argparse", "json", "typing", "subprocess"}, sorted(imported)
    # the start-up bundle the wheel carries is this interpreter's: the command takes its modules from it
    from cudaenv.bundle import BUNDLE, DOCTOR_BUNDLE, read_bundle

    bundle = next(installed.glob("lib/python*/site-packages/cudaenv/bundle/" + BUNDLE))
    assert read_bundle(str(bundle)) is not None
    assert read_bundle(str(bundle.with_name(DOCTOR_BUNDLE))) is not None


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
        "import json, sys, cudaenv.core.resources as r, pathlib\n"
        "assert not pathlib.Path(r.__file__).resolve().is_relative_to(pathlib.Path(sys.argv[1]).resolve())\n"
        "names = sys.argv[2:]\n"
        "print(json.dumps({n: r.load_table(n) for n in names}))\n"
    )
    tables = sorted(p.stem for p in (REPO / "data").glob("*.json"))
    lines_tables = sorted(p.stem for p in (REPO / "data").glob("*.txt"))  # the line format (data/README.md)
    assert lines_tables and not set(tables) & set(lines_tables)
    shown = _run([installed / "bin" / "python", "-c", check, REPO] + tables + lines_tables, env=env, cwd=str(installed))
    loaded = json.loads(shown.stdout)
    for name in tables:
        assert loaded[name] == json.loads((REPO / "data" / (name + ".json")).read_text(encoding="utf-8"))
    for name in lines_tables:
        source = (REPO / "data" / (name + ".txt")).read_text(encoding="utf-8")
        assert loaded[name]["rows"] and loaded[name] == parse_lines_table(source, name)

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
    assert " ".join(bad.stderr.split()).startswith("cudaenv: error: --root ")  # wrapped to 80 columns


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

    from cudaenv import cli
    from cudaenv.core import resources

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
