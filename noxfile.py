"""Test sessions. `nox` runs the default ones (the whole suite); `nox -s bench` and `nox -s gpu` are opt-in."""

import os

import nox

nox.options.sessions = ["tests", "torch"]
nox.options.reuse_existing_virtualenvs = True

TEST_DEPS = ["pytest>=7", "hypothesis>=6", "pexpect>=4.8", "build", "hatchling"]
TORCH = "torch==2.13.0"  # a CPU build; pinned so that pip never pulls a multi-GB CUDA build


def _install(session):
    # A real (non-editable) install: data/ and shell/ are read from the installed package.
    session.install(*TEST_DEPS)
    session.install("--force-reinstall", "--no-deps", ".")
    session.install(".")


@nox.session
def tests(session):
    """The whole suite, with no torch installed in the test interpreter."""
    _install(session)
    session.run("python", "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)",
                success_codes=[0], silent=True)
    session.run("pytest", "-m", "not gpu and not torch", *session.posargs)


@nox.session
def torch(session):
    """The torch probe, verify --cpu and the distributed gloo check, against a real CPU torch 2.13.0."""
    _install(session)
    session.install(TORCH)
    session.run("pytest", "-m", "torch and not gpu", *session.posargs)


@nox.session
def bench(session):
    """Speed and memory targets, reported as ratios against baselines measured in the same run."""
    _install(session)
    session.install(TORCH)
    session.run("python", "bench/run.py", *session.posargs)


@nox.session
def gpu(session):
    """Real GPU checks, on a machine with an NVIDIA GPU and its driver (nvcc and a host compiler for the toolkit
    check). The torch verified is CUDAENV_GPU_PYTHON's (an interpreter with a CUDA torch, e.g. the machine's
    python3); without it, a torch is installed here: CUDAENV_GPU_TORCH (default: the newest torch, a CUDA build
    on Linux x86_64) from CUDAENV_GPU_INDEX_URL if set (e.g. .../whl/cu126). Offline: see .ci/gpu."""
    # .ci/gpu puts nox itself on PYTHONPATH; it must not shadow the packages of this session's environment.
    session.env["PYTHONPATH"] = None
    session.env["CUDAENV_GPU_REQUIRED"] = "1"  # no GPU here is a failure of this session, not five skips
    _install(session)
    if not os.environ.get("CUDAENV_GPU_PYTHON"):
        index = os.environ.get("CUDAENV_GPU_INDEX_URL")
        session.install(os.environ.get("CUDAENV_GPU_TORCH", "torch"), *(["--index-url", index] if index else []))
    session.run("pytest", "-m", "gpu", "-v", "-s", *session.posargs)


@nox.session
def lint(session):
    """Pyflakes-class errors and likely bugs (rules in pyproject.toml)."""
    session.install("ruff")
    session.run("ruff", "check", "cudaenv", "tests", "bench", "noxfile.py")
