"""Test sessions. `nox` runs the default ones (`tests`, `torch`); the others are opt-in (`nox -s NAME`):

    tests      the default suite: no torch installed, no `slow`, `gpu` or `real_machine` test
    torch      the `torch` tests against a real CPU torch 2.13.0 and the real safetensors library
    slow       the `slow` tests (ptys, wheel builds, timeouts)
    full       everything but `gpu` and `real_machine`: the default suite, `slow`, then `torch`
    isolation  the default suite with a stand-in nvidia-smi that prints a GPU on PATH (and, as root in CI, in
               /usr/bin): proves that no unit test reads this machine's GPU state
    machine    the `real_machine` tests: this development machine's own toolkit (CUDA 13.0 in /usr/local)
    bench      speed and memory targets;  gpu  real GPU checks;  lint  ruff
    browser    the `browser` tests: the fleet HTML summary in a headless Chromium (Debian's `chromium`)
    slurm      doctor --output through a real single-node Slurm started by the session, then fleet summarize
    install    `cudaenv install 13.0` for real (the package index), then compile/link with it, then uninstall
    (CI: .ci/run runs `nox`, then its CI_SESSIONS; the Slurm and Chromium sessions go there too.)

The test dependencies are the `test` extra of pyproject.toml (one list: `pip install ".[test]"` gives the same).
"""

import os
import shutil
import signal
import tempfile
from pathlib import Path

import nox

nox.options.sessions = ["tests", "torch"]
nox.options.reuse_existing_virtualenvs = True

TORCH = "torch==2.13.0"  # a CPU build; pinned so that pip never pulls a multi-GB CUDA build
# the real library for the safetensors tests ([torch]: its save_file needs numpy, which safetensors alone lacks);
# with CI set, those tests fail rather than skip where it is missing
SAFETENSORS = "safetensors[torch]==0.8.0"
UV = "uv==0.13.9"  # the real uv the slow tests run (tests/probes/test_real_uv.py): a wheel of the package index

DEFAULT = "not gpu and not torch and not slow and not real_machine and not browser"
# pytest-xdist workers (`-n`): CUDAENV_TEST_WORKERS=auto|N; 0 (the default) runs the suite in one process. On the
# 2-core build machine (shared, load 6-8) `-n auto` took 3m26s against 3m30s serial, with more CPU time: no gain.
WORKERS = os.environ.get("CUDAENV_TEST_WORKERS", "0")


def _install(session):
    # A real (non-editable) install: data/ and shell/ are read from the installed package.
    session.install("--force-reinstall", "--no-deps", ".")
    session.install(".[test]")


def _xdist():
    return [] if WORKERS in ("", "0", "1") else ["-n", WORKERS]


def _no_torch(session):
    session.run("python", "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)",
                silent=True)


@nox.session
def tests(session):
    """The default suite, with no torch installed in the test interpreter."""
    _install(session)
    _no_torch(session)
    session.run("pytest", "-m", DEFAULT, *_xdist(), *session.posargs)


@nox.session
def slow(session):
    """The `slow` tests (a pty driving `cudaenv fix`, wheel builds, real timeouts, the real uv)."""
    _install(session)
    session.install(UV)
    session.run("pytest", "-m", "slow and not gpu and not torch and not real_machine", *_xdist(), *session.posargs)


@nox.session
def torch(session):
    """The torch probe, verify --cpu, the distributed gloo check and checkpoint inspect/fix, against a real CPU torch
    2.13.0 (and the real safetensors library); with the checkpoint differential proof (5,000 seeded mutations of real
    torch.save files and 1,000 of a corpus; docs/tests-suite.md says how to change the run and keep its figures)."""
    _install(session)
    session.install(TORCH, SAFETENSORS)
    session.run("pytest", "-m", "torch and not gpu and not real_machine", *session.posargs)


@nox.session
def full(session):
    """Everything that runs without a GPU and off the development machine: the default suite and `slow` (with no
    torch installed), then the `torch` tests."""
    _install(session)
    _no_torch(session)
    session.install(UV)
    session.run("pytest", "-m", "not gpu and not torch and not real_machine", *_xdist(), *session.posargs)
    session.install(TORCH, SAFETENSORS)
    session.run("pytest", "-m", "torch and not gpu and not real_machine", *session.posargs)


@nox.session
def machine(session):
    """Tests tied to this development machine's own toolkit (`real_machine`: CUDA 13.0 in /usr/local, its nvcc)."""
    _install(session)
    session.run("pytest", "-m", "real_machine", "-v", *session.posargs)


# The stand-in: what a contributor's machine with a driver has on PATH (banner, --query-gpu, no processes).
_STAND_IN = """#!/bin/sh
case "$*" in
  *--query-gpu*) cat '{query}';;
  *--query-compute-apps*) ;;
  *) cat '{banner}';;
esac
"""


def _recorded(name):
    text = (Path("tests") / "recorded" / name).read_text(encoding="utf-8")
    return text.split("\n# ---\n", 1)[1] if text.startswith("# source:") else text


def _stand_in(folder: Path) -> Path:
    """Writes FOLDER/nvidia-smi printing a real A10G's recorded output (tests/recorded/diag-*-535-a10g.txt)."""
    for name in ("banner", "query"):
        (folder / (name + ".txt")).write_text(_recorded("diag-%s-535-a10g.txt" % name), encoding="utf-8")
    smi = folder / "nvidia-smi"
    smi.write_text(_STAND_IN.format(query=folder / "query.txt", banner=folder / "banner.txt"))
    smi.chmod(0o755)
    return smi


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


@nox.session
def isolation(session):
    """The default suite with a GPU-printing nvidia-smi first on the real PATH, then (as root in CI) in /usr/bin."""
    _install(session)
    folder = Path(tempfile.mkdtemp(prefix="cudaenv-stand-in-"))
    placed = None
    # the /usr/bin copy must go even when the session is stopped: SIGTERM/SIGHUP become SystemExit, so `finally` runs
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    try:
        smi = _stand_in(folder)
        path = os.pathsep.join([str(folder), session.bin, os.environ.get("PATH", "")])
        session.run("sh", "-c", "command -v nvidia-smi && nvidia-smi", env={"PATH": path}, external=True)  # a GPU is "there"
        session.log("1/2: the default suite with the stand-in first on PATH")
        session.run("pytest", "-m", DEFAULT, *_xdist(), *session.posargs, env={"PATH": path})
        # CUDAENV_STAND_IN_AT moves the second copy (to try this session's clean-up without touching /usr/bin)
        target = Path(os.environ.get("CUDAENV_STAND_IN_AT", "/usr/bin/nvidia-smi"))
        if os.geteuid() != 0 or not os.environ.get("CI"):
            session.log("2/2 skipped: the /usr/bin placement runs only as root with CI set (a throwaway CI machine)")
        elif target.exists() or target.is_symlink():
            session.log("2/2 skipped: %s already exists (a real driver?); it is left alone" % target)
        else:
            shutil.copy(str(smi), str(target))
            placed = target
            session.log("2/2: the default suite with the stand-in at %s" % target)
            session.run(str(target), external=True)
            session.run("pytest", "-m", DEFAULT, *_xdist(), *session.posargs)
    finally:
        if placed is not None:
            placed.unlink()
        shutil.rmtree(str(folder), ignore_errors=True)


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
def install(session):
    """`cudaenv install 13.0` from the package index into a temp data dir; thrust, -rdc and CMake builds (compile and
    link only: no GPU needed) in a bash shell switched by `cudaenv use`; then `cudaenv uninstall --yes` leaves nothing."""
    _install(session)
    if shutil.which("cmake") is None:
        session.install("cmake")
    with tempfile.TemporaryDirectory(prefix="cudaenv-install-session-") as work:
        session.run("bash", str(Path(__file__).parent / "tests" / "install_session" / "check.sh"), work, external=True)


@nox.session
def browser(session):
    """The `browser` tests: `fleet summarize --format html` loaded in Debian's headless `chromium` (not installed
    by this session: `apt-get install -y chromium`)."""
    _install(session)
    if os.environ.get("CI") and not (shutil.which("chromium") or shutil.which("chromium-browser")):
        session.error("CI: chromium is not installed, so the browser test would only be skipped (.ci/run installs it)")
    session.run("pytest", "-m", "browser", "-v", *session.posargs)


@nox.session
def slurm(session):
    """`cudaenv doctor --json --output` through a real single-node Slurm started (and stopped by pid) by this session
    (as root: installs Debian's slurm-wlm and munge where missing), then `fleet summarize` over what it wrote."""
    _install(session)
    cudaenv = os.path.join(session.bin, "cudaenv")
    session.run("python", str(Path(__file__).parent / "tests" / "slurm_session" / "run.py"), cudaenv)


@nox.session
def lint(session):
    """Pyflakes-class errors and likely bugs (rules in pyproject.toml)."""
    session.install("ruff")
    session.run("ruff", "check", "cudaenv", "tests", "tools", "bench", "noxfile.py")
