"""The real uv (issue 31): a venv that `uv venv` makes is read as uv's, with the version `uv --version` prints, and the
install line cudaenv writes for uv (a flat listing named with --find-links, the local-tag pin) is one real uv runs:
it installs the pinned +cu126 build, not the plain one beside it. Offline (a local folder of wheels made here).

uv comes from the package index as a wheel (`nox -s slow` installs it; `pip download uv` shows it installs without
network); without it these tests skip, and with CI set they fail."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.slow


def _uv():
    found = shutil.which("uv")
    if found is None:
        try:
            import uv

            found = uv.find_uv_bin()
        except (ImportError, FileNotFoundError):
            found = None
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("uv is not installed (nox -s slow installs it)")
        pytest.skip("uv is not installed (pip install uv)")
    return found


def _run(argv, **kw):
    env = dict(os.environ, UV_OFFLINE="1", UV_NO_CONFIG="1", UV_CACHE_DIR=kw.pop("cache"))
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, **kw)


def _wheel(folder, version, package=False):
    """A minimal pure wheel of a distribution named torch (no code, no dependencies); ``package``: with a torch/
    folder holding the version.py the site-packages reader reads (no code that runs)."""
    name = "torch-%s-py3-none-any.whl" % version
    dist = "torch-%s.dist-info" % version
    with zipfile.ZipFile(folder / name, "w") as z:
        if package:
            z.writestr("torch/__init__.py", "")
            cuda = version.split("+cu", 1)[1] if "+cu" in version else None
            z.writestr("torch/version.py", "__version__ = %r\ncuda = %r\nhip = None\n" % (
                version, cuda and "%s.%s" % (cuda[:-1], cuda[-1])))
        z.writestr(dist + "/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: %s\n" % version)
        z.writestr(dist + "/WHEEL", "Wheel-Version: 1.0\nGenerator: cudaenv-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(dist + "/RECORD", "")
    return name


def test_a_uv_venv_is_read_as_uv_with_its_version(fake_root, tmp_path):
    from cudaenv.probes.pyenv import probe_python_env

    uv = _uv()
    version = _run([uv, "--version"], cache=str(tmp_path / "cache")).stdout.split()[1]
    venv = fake_root.path / "proj" / ".venv"
    made = _run([uv, "venv", str(venv), "--python", sys.executable], cache=str(tmp_path / "cache"))
    assert made.returncode == 0, made.stderr
    e = probe_python_env(fake_root.host(), str(venv / "bin" / "python"))
    assert (e.kind, e.tool, e.tool_version) == ("uv", "uv", version)


def test_cudaenvs_uv_line_with_a_flat_listing_installs_the_pinned_build(tmp_path):
    from cudaenv.recommend.install import install_argv

    uv = _uv()
    cache = str(tmp_path / "cache")
    venv = tmp_path / "venv"
    assert _run([uv, "venv", str(venv), "--python", sys.executable], cache=cache).returncode == 0
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "2.7.1")  # a plain build of the same version: the local-tag pin must keep it out
    _wheel(wheels, "2.7.1+cu126")
    argv = install_argv(["torch==2.7.1+cu126"], str(wheels), str(venv / "bin" / "python"), "uv", flat=True)
    assert argv[:5] == ["uv", "pip", "install", "--python", str(venv / "bin" / "python")] and "--find-links" in argv
    done = _run([uv] + argv[1:] + ["--no-index"], cache=cache)  # --no-index: offline, PyPI is not asked
    assert done.returncode == 0, done.stderr
    installed = sorted(p.name for p in venv.glob("lib/python*/site-packages/torch-*.dist-info"))
    assert installed == ["torch-2.7.1+cu126.dist-info"]


def test_guard_reads_the_real_uvs_dry_run_and_keeps_torch(tmp_path):
    """issue 29: `cudaenv torch guard -- uv pip install ... torch==2.9.1` over a venv holding torch 2.8.0+cu128 (both
    minimal local wheels, installed by the real uv): guard runs uv's own --dry-run, reads ` + torch==2.9.1` from its
    stderr, installs nothing (exit 3) and prints the pinned line; an install that leaves torch alone runs."""
    uv = _uv()
    cache = str(tmp_path / "cache")
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")
    assert _run([uv, "venv", str(venv), "--python", sys.executable], cache=cache).returncode == 0
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "2.8.0+cu128", package=True)
    _wheel(wheels, "2.9.1", package=True)
    base = [uv, "pip", "install", "--python", python, "--no-index", "--find-links", str(wheels)]
    assert _run(base + ["torch==2.8.0+cu128"], cache=cache).returncode == 0

    def guard(*spec):
        env = dict(os.environ, UV_OFFLINE="1", UV_NO_CONFIG="1", UV_CACHE_DIR=cache)
        return subprocess.run([sys.executable, "-m", "cudaenv", "torch", "guard", "--python", python, "--"] + base + list(spec),
                              capture_output=True, text=True, timeout=120, env=env)

    r = guard("torch==2.9.1")
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "uv's dry run of" in r.stdout and "would replace torch 2.8.0+cu128 with torch 2.9.1" in " ".join(r.stdout.split())
    assert "torch==2.9.1 torch==2.8.0+cu128 --extra-index-url https://download.pytorch.org/whl/cu128" in r.stdout
    assert sorted(p.name for p in venv.glob("lib/python*/site-packages/torch-*.dist-info")) == ["torch-2.8.0+cu128.dist-info"]
    r = guard("torch==2.8.0+cu128")  # already there: uv's plan installs nothing, the install runs
    assert r.returncode == 0 and "torch 2.8.0+cu128 is unchanged." in r.stdout, (r.stdout, r.stderr)
