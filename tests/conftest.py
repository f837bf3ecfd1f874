"""Fixtures only; the builders they hand out live in builders.py (fakes, tools) and machine.py (doctor scenarios).

Unit tests never touch the real machine: every Host a test builds (a fixture's, a test's own, the one the `cli`
fixture's in-process CLI builds) runs programs through builders.RefusingRunner, which fails the test when a
program outside the test's temporary folders, the tools folder or the test interpreter is run; and the PATH a
fake Host, `cli` or `cli_subprocess` gets by default is builders.TOOLS (links to sh, cat, sleep, ...), never
/usr/bin:/bin, where a contributor's driver puts nvidia-smi. `nox -s isolation` proves it with a GPU-printing
nvidia-smi on the real PATH. Tests that read this machine on purpose are marked `real_machine` (`nox -s machine`).
"""

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional

import pytest

import cudaenv

# Test modules import the shared builders by name (`from builders import FakeRoot`); --import-mode=importlib
# does not put tests/ on sys.path.
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

from builders import TOOLS, CliResult, FakeBin, FakeRoot, RefusingRunner, recorded  # noqa: E402
from hypothesis import settings  # noqa: E402

# Property tests check "never a crash, never a hang", not speed: hypothesis's default 200 ms deadline per example is a
# wall-clock assertion that fails on a loaded 2-core machine. Speed targets live in bench/.
settings.register_profile("cudaenv", deadline=None)
settings.load_profile("cudaenv")
from machine import Machine  # noqa: E402

# The package under test must be the installed one (data/ and shell/ are read from it), never ./cudaenv.
_SRC = Path(__file__).resolve().parent.parent / "cudaenv"
if Path(cudaenv.__file__).resolve().parent == _SRC:
    pytest.exit("cudaenv is imported from the source tree (an editable install?); run the suite through `nox`, or "
                "`pip install \".[test]\"` (not -e): the suite tests the installed package", 2)


@pytest.fixture(autouse=True)
def refusing_runner(request, tmp_path_factory, monkeypatch):
    """Every Host built during the test runs programs through a RefusingRunner; a refusal fails the test.

    cudaenv's own temporary folders (the programs toolkit_check compiles with a fake nvcc) go under the test's
    temporary folder too, where the runner allows them."""
    import tempfile

    import cudaenv.host as host_module

    monkeypatch.setattr(tempfile, "tempdir", str(_session_temp(tmp_path_factory)))
    # cudaenv's caches (the doctor's memo, the index cache) of a run whose environment names no folder of its own
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))

    extra = [p for mark in request.node.iter_markers("allow_run") for p in mark.args]
    from cudaenv.host.process import subprocess_runner as real

    runner = RefusingRunner(real, [str(tmp_path_factory.getbasetemp())], extra)
    if request.node.get_closest_marker("real_machine") is None:
        monkeypatch.setattr(host_module, "default_runner", runner, raising=True)
    yield runner
    if runner.refused:
        pytest.fail("a test ran programs of the real machine:\n  " + "\n  ".join(runner.refused), pytrace=False)


def _session_temp(tmp_path_factory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "tempfile"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(name="recorded")
def recorded_fixture():
    """The `recorded(name)` function as a fixture."""
    return recorded


@pytest.fixture
def fake_root(tmp_path) -> FakeRoot:
    root = tmp_path / "root"
    root.mkdir()
    return FakeRoot(root)


@pytest.fixture
def fake_bin(tmp_path) -> FakeBin:
    return FakeBin(tmp_path / "fakebin")


@pytest.fixture
def cli():
    """Run `cudaenv ARGS` in-process with a given environment; returns CliResult(code, out, err)."""
    from cudaenv.cli import main

    def run(*argv: str, env: Optional[Mapping[str, str]] = None) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), env=dict(env or {"PATH": TOOLS}), out=out, err=err)
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def cli_subprocess():
    """Run the installed `cudaenv` console script as a real process."""

    def run(*argv: str, env: Optional[Mapping[str, str]] = None, timeout: float = 60, input: Optional[str] = None) -> CliResult:
        exe = str(Path(sys.executable).parent / "cudaenv")
        proc = subprocess.run(
            [exe, *argv], capture_output=True, text=True, env=dict(env or {"PATH": TOOLS}), timeout=timeout, input=input
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory):
    """A real interpreter without torch (a venv made from the test interpreter, without pip)."""
    base = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True, timeout=120,
                   env={**os.environ, "PATH": TOOLS})
    return str(base / "bin" / "python")


@pytest.fixture
def machine(fake_root, fake_bin, tmp_path, cli, bare_python):
    """One doctor scenario (machine.Machine): a fake root, a fake nvidia-smi, an environment, a real interpreter."""
    return Machine(fake_root, fake_bin, tmp_path, cli, bare_python)


@pytest.fixture
def chinese():
    """The renderers speak Chinese for the test (cudaenv.core.i18n), and English again after it."""
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language

    set_language(CHINESE)
    yield
    set_language(ENGLISH)
