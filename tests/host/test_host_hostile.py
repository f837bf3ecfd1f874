"""The Host seam against a hostile machine: FIFOs and devices where files are expected, huge and crashing
commands, grandchildren that hold pipes or escape, interrupts, a closed or full stdout, a hung interpreter.

Everything here is real: FIFOs made with os.mkfifo, sparse files, fake programs in a tmp bin, real signals
sent to a real `cudaenv` process. No mock of subprocess.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builders import interruptible, tools
from cudaenv.host import Host
from cudaenv.host.files import open_regular, read_regular, read_regular_why
from cudaenv.host.process import CommandResult, Deadline, MAX_CAPTURE, subprocess_runner

CUDAENV = str(Path(sys.executable).parent / "cudaenv")
SYSTEM_BIN = tools("head", "tr", "setsid")  # the only real programs these tests run (with sh, sleep, cat)
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, signals and /proc: Linux")


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids, seconds: float = 3.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _pids(path: Path):
    if not path.exists():
        return []
    return [int(x) for x in path.read_text().split() if x.strip().isdigit()]


def _cleanup(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)
    return p


def _cudaenv(*argv, env=None, timeout=60, **kwargs):
    return subprocess.run([CUDAENV, *argv], capture_output=True, text=True, env=env or {"PATH": SYSTEM_BIN}, timeout=timeout, **kwargs)


# ----------------------------------------------------------------------------- 1. regular files only
@pytest.mark.timeout(20)
def test_a_fifo_version_json_is_refused_without_blocking(fake_root):
    tk = fake_root.toolkit("12.4.131", version_json=False)
    os.mkfifo(str(tk / "version.json"))
    host = fake_root.host()
    # opening a FIFO with no writer blocks for ever: the timeout mark fails a read that tried
    assert host.read_text("/usr/local/cuda-12.4/version.json") is None
    assert host.read_bytes("/usr/local/cuda-12.4/version.json") is None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["usr/local/cuda-12.4/version.json", "usr/local/cuda-12.4/version.txt",
                                   "etc/os-release", "proc/driver/nvidia/version"])
def test_commands_under_root_do_not_hang_on_a_fifo(fake_root, where):
    fake_root.toolkit("12.4.131", nvcc=False)
    target = fake_root / where
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        target.unlink()
    os.mkfifo(str(target))
    for argv in (["list", "--root", str(fake_root.path)], ["doctor", "--quick", "--root", str(fake_root.path)]):
        res = _cudaenv(*argv, timeout=30)  # old code: blocked forever in open()
        assert "Traceback" not in res.stderr, res.stderr


@pytest.mark.timeout(20)
def test_devices_sockets_and_links_to_them_are_refused(tmp_path):
    import socket

    assert read_regular("/dev/zero") is None
    data, why = read_regular_why("/dev/zero")
    assert data is None and "character device" in why
    os.symlink("/dev/zero", str(tmp_path / "cache.json"))
    assert read_regular(str(tmp_path / "cache.json")) is None
    sock_path = str(tmp_path / "s.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(sock_path)
    try:
        assert read_regular(sock_path) is None
        assert "socket" in read_regular_why(sock_path)[1]
    finally:
        sock.close()
    fifo = tmp_path / "f"
    os.mkfifo(str(fifo))
    with pytest.raises(OSError, match="FIFO"):
        open_regular(str(fifo))
    assert read_regular_why(str(tmp_path / "missing")) == (None, None)


def test_a_kind_with_no_name_is_said_once():
    """A file type the table does not name (a symlink's own mode, a BSD whiteout) is said as "not a regular file" once,
    not "it is not a regular file, not a regular file"."""
    from cudaenv.host.files import _not_regular

    for mode in (0o120777, 0o160000, 0):
        assert str(_not_regular(mode)) == "it is not a regular file; not read"
    assert str(_not_regular(0o010644)) == "it is a FIFO, not a regular file; not read"


def test_a_sparse_file_is_read_only_up_to_the_limit(tmp_path):
    big = tmp_path / "version.json"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB of holes
    assert len(read_regular(str(big), 4096)) == 4096
    host = Host(root=str(tmp_path), env={"PATH": SYSTEM_BIN})
    assert len(host.read_bytes("/version.json", limit=65536)) == 65536


def test_proc_files_are_still_read(tmp_path):
    text = read_regular("/proc/self/status", 65536)
    assert text and b"Pid:" in text


@pytest.mark.timeout(20)
def test_the_torch_index_cache_fifo_or_dev_zero_is_a_note_not_a_hang(tmp_path):
    from cudaenv.index.cache import load_cache

    fifo = tmp_path / "fifo.json"
    os.mkfifo(str(fifo))
    data, note = load_cache(str(fifo), "https://download.pytorch.org/whl", "2026-01-01")
    assert data is None and "FIFO" in note
    link = tmp_path / "zero.json"
    os.symlink("/dev/zero", str(link))
    data, note = load_cache(str(link), "https://download.pytorch.org/whl", "2026-01-01")
    assert data is None and "character device" in note
    sparse = tmp_path / "huge.json"
    with open(sparse, "wb") as fh:
        fh.truncate(500 * 1024 * 1024)
    data, note = load_cache(str(sparse), "https://download.pytorch.org/whl", "2026-01-01")
    assert data is None and "over" in note  # refused by its size, before reading it


@pytest.mark.timeout(30)
def test_check_installer_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "cuda_12.4.0_550.54.14_linux.run"
    os.mkfifo(str(fifo))
    res = _cudaenv("check-installer", str(fifo), timeout=20)
    assert res.returncode == 2 and "FIFO" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.timeout(30)
def test_a_fifo_cuda_version_file_does_not_hang_use(fake_root, tmp_path):
    fake_root.toolkit("12.4.131")
    project = tmp_path / "project"
    project.mkdir()
    os.mkfifo(str(project / ".cuda-version"))
    res = _cudaenv("use", "--root", str(fake_root.path), cwd=str(project), timeout=20)
    assert "Traceback" not in res.stderr


# ----------------------------------------------------------------------------- 2. bounded capture
@pytest.mark.timeout(30)
def test_a_command_printing_100_mb_is_captured_up_to_the_limit(tmp_path):
    res = subprocess_runner(["sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' A; echo tail >&2"], 10, {"PATH": SYSTEM_BIN})
    assert res.ok and res.truncated  # ok: the runner drained the 100 MB within its 10 s, keeping MAX_CAPTURE
    assert len(res.stdout) == MAX_CAPTURE and res.stderr == "tail\n"
    assert len(res.describe()) < 400 and len(res.excerpt()) <= 200


@pytest.mark.timeout(60)
def test_doctor_json_with_a_100_mb_nvidia_smi_is_bounded(tmp_path):
    bin_dir = tmp_path / "bin"
    _script(bin_dir, "nvidia-smi", "head -c 100000000 /dev/zero | tr '\\0' A\necho\n")
    res = _cudaenv("doctor", "--json", "--quick", "--timeout", "2", env={"PATH": "%s:%s" % (bin_dir, SYSTEM_BIN)}, timeout=50)
    assert len(res.stdout) < 200_000, len(res.stdout)  # was 210 MB of JSON
    json.loads(res.stdout)


# ----------------------------------------------------------------------------- 3. grandchildren
@pytest.mark.timeout(30)
def test_a_grandchild_holding_the_pipe_does_not_lose_the_answer(tmp_path):
    pidfile = tmp_path / "pids"
    res = subprocess_runner(["sh", "-c", "(sleep 1000 & echo $! > %s); echo ok" % pidfile], 10, {"PATH": SYSTEM_BIN})
    try:
        # a runner waiting for the grandchild's end of the pipe would have hit its 10 s timeout: error "timeout"
        assert res.ok and res.error is None and res.stdout == "ok\n"
        assert not _wait_gone(_pids(pidfile)), "the grandchild in the group was left running"
    finally:
        _cleanup(_pids(pidfile))


@pytest.mark.timeout(60)
def test_a_setsid_grandchild_is_not_left_running_after_doctor(tmp_path):
    bin_dir = tmp_path / "bin"
    pidfile = tmp_path / "pids"
    _script(bin_dir, "nvidia-smi", "setsid sleep 1000 >/dev/null 2>&1 </dev/null &\necho $! >> %s\necho 'No devices were found'\n" % pidfile)
    res = _cudaenv("doctor", "--quick", "--timeout", "5", env={"PATH": "%s:%s" % (bin_dir, SYSTEM_BIN)}, timeout=50)
    try:
        assert "Traceback" not in res.stderr
        assert _pids(pidfile), "the fake nvidia-smi did not run"
        assert not _wait_gone(_pids(pidfile)), "a setsid grandchild survived the doctor"
    finally:
        _cleanup(_pids(pidfile))


# ----------------------------------------------------------------------------- 4. signals
def test_a_segfault_is_recorded_with_its_signal(tmp_path):
    smi = _script(tmp_path / "bin", "nvidia-smi", "kill -SEGV $$\n")
    res = subprocess_runner([str(smi)], 5, {"PATH": SYSTEM_BIN})
    assert res.signal == "SIGSEGV" and not res.ok and res.crashed
    assert res.describe().startswith("nvidia-smi crashed (SIGSEGV)")
    wrapper = _script(tmp_path / "wrap", "nvidia-smi", "exit 139\n")
    res = subprocess_runner([str(wrapper)], 5, {"PATH": SYSTEM_BIN})
    assert res.returncode == 139 and res.signal == "SIGSEGV"
    assert res.describe().startswith("nvidia-smi crashed (SIGSEGV)")
    plain = subprocess_runner(["sh", "-c", "exit 3"], 5, {"PATH": SYSTEM_BIN})
    assert plain.signal is None and plain.describe() == "sh exited with status 3"


def test_describe_keeps_old_results_working():
    r = CommandResult(("nvidia-smi",), None, error="timeout", timeout=2.01819)
    assert r.describe() == "nvidia-smi timed out after 2 s"


# ----------------------------------------------------------------------------- 5. interrupts
def _sleepy_python(tmp_path) -> Path:
    return _script(tmp_path / "bin", "python3", "echo $$ >> %s\nexec sleep 1000\n" % (tmp_path / "pids"))


def _interrupt(argv, tmp_path, sig, env_path=None, wait_for=None):
    env = {"PATH": env_path or "%s:%s" % (tmp_path / "bin", SYSTEM_BIN)}
    proc = subprocess.Popen([CUDAENV, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=interruptible)
    pidfile = wait_for or (tmp_path / "pids")
    end = time.monotonic() + 20
    while time.monotonic() < end and not _pids(pidfile):
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err, _pids(pidfile)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_verify_interrupted_kills_its_python(tmp_path, sig, code):
    python = _sleepy_python(tmp_path)
    rc, out, err, pids = _interrupt(["verify", "--cpu", "--python", str(python)], tmp_path, sig)
    try:
        assert pids, "the fake python never started"
        assert rc == code, (rc, err)
        assert err.strip().splitlines() == ["cudaenv: interrupted"], err
        assert not _wait_gone(pids), "a child survived the interrupt"
    finally:
        _cleanup(pids)


@pytest.mark.timeout(60)
def test_doctor_interrupted_kills_a_hanging_nvidia_smi(tmp_path):
    _script(tmp_path / "bin", "nvidia-smi", "echo $$ >> %s\nexec sleep 1000\n" % (tmp_path / "pids"))
    rc, out, err, pids = _interrupt(["doctor", "--quick", "--timeout", "60"], tmp_path, signal.SIGTERM)
    try:
        assert pids and rc == 143 and "interrupted" in err and "Traceback" not in err
        assert not _wait_gone(pids)
    finally:
        _cleanup(pids)


@pytest.mark.timeout(60)
def test_explain_probe_interrupted_kills_its_python(tmp_path):
    python = _sleepy_python(tmp_path)
    rc, out, err, pids = _interrupt(["explain", "--probe", "--python", str(python), "CUDA out of memory"], tmp_path, signal.SIGINT)
    try:
        assert pids and rc == 130 and "interrupted" in err
        assert not _wait_gone(pids)
    finally:
        _cleanup(pids)


# ----------------------------------------------------------------------------- 6. the user's timeout bounds the run
@pytest.mark.timeout(60)
def test_verify_cpu_timeout_bounds_a_python_hanging_at_import(tmp_path):
    python = _sleepy_python(tmp_path)
    res = _cudaenv("verify", "--cpu", "--python", str(python), "--timeout", "2", env={"PATH": "%s:%s" % (tmp_path / "bin", SYSTEM_BIN)})
    try:
        assert res.returncode == 1
        assert "hung while importing torch" in res.stdout
        assert "no answer within 2 s" in res.stdout, res.stdout  # the user's --timeout, not the 120 s --device-timeout
        assert "GPU work hung" not in res.stdout and "nvidia-smi -r" not in res.stdout
        data = json.loads(_cudaenv("verify", "--cpu", "--json", "--python", str(python), "--timeout", "1",
                                   env={"PATH": "%s:%s" % (tmp_path / "bin", SYSTEM_BIN)}).stdout)
        assert data["devices"]["problem"]["id"] == "torch-import-hang"
    finally:
        _cleanup(_pids(tmp_path / "pids"))


@pytest.mark.timeout(60)
def test_explain_probe_timeout_bounds_the_probe(tmp_path):
    python = _sleepy_python(tmp_path)
    res = _cudaenv("explain", "--probe", "--json", "--python", str(python), "--timeout", "2", "CUDA out of memory",
                   env={"PATH": "%s:%s" % (tmp_path / "bin", SYSTEM_BIN)})
    try:
        # the user's --timeout bounds the probe (it was 30 s)
        assert json.loads(res.stdout)["facts"]["import_error"].endswith("hung: no answer within 2 s")
    finally:
        _cleanup(_pids(tmp_path / "pids"))


def test_a_deadline_clips_every_child(fake_root):
    host = fake_root.host(timeout=30).with_deadline(1.0)
    first = host.run(["sleep", "5"])
    second = host.run(["sleep", "5"], timeout=60)
    # unclipped, each would have slept its 5 s and ended well (timeouts 30 and 60 s)
    assert first.error == "timeout" and second.error == "timeout"
    assert first.describe() == "sleep timed out after 1 s"  # the deadline's 1 s, not the Host's 30 s
    assert float(second.describe().rsplit(" after ", 1)[1].split()[0]) <= 1, second.describe()  # what was left, not 60
    assert Deadline(None).clip(7) == 7 and Deadline(0.001).clip(7) <= 0.05 + 1e-9


@pytest.mark.timeout(20)
def test_a_child_that_never_reads_stdin_costs_only_the_timeout():
    # a runner blocked writing to a full pipe would never reach its timeout: the timeout mark fails it
    res = subprocess_runner(["sleep", "30"], 1, {"PATH": SYSTEM_BIN}, stdin_chunks=iter(lambda: b"x" * 65536, None))
    assert res.error == "timeout"
    fed = subprocess_runner(["cat"], 5, {"PATH": SYSTEM_BIN}, stdin_chunks=[b"abc"] * 3)
    assert fed.stdout == "abcabcabc"


# ----------------------------------------------------------------------------- 7. closed or full stdout
def _commands(fake_root, tmp_path):
    fake_root.toolkit("12.4.131")
    root = str(fake_root.path)
    installer = tmp_path / "cuda_12.4.0_550.54.14_linux.run"
    installer.write_bytes(b"#!/bin/sh\n" + b"x" * 100)
    return [
        ["list", "--root", root],
        ["use", "12.4", "--shell", "bash", "--root", root],
        ["link", "12.4", "--root", root],
        ["doctor", "--quick", "--root", root],
        ["doctor", "--quick", "--json", "--root", root],
        ["explain", "CUDA out of memory. Tried to allocate 2.00 GiB"],
        ["init", "bash"],
        ["check-installer", str(installer)],
        ["uninstall", "12.4", "--root", root],
        ["--help"],
        ["doctor", "--help"],
    ]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("how", ["closed", "full"])
def test_a_closed_or_full_stdout_is_one_message_not_a_traceback(fake_root, tmp_path, how):
    for argv in _commands(fake_root, tmp_path):
        if how == "closed":
            res = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', CUDAENV, *argv], capture_output=True, text=True,
                                 env={"PATH": SYSTEM_BIN}, timeout=60)
        else:
            with open("/dev/full", "w") as full:
                res = subprocess.run([CUDAENV, *argv], stdout=full, stderr=subprocess.PIPE, text=True, env={"PATH": SYSTEM_BIN}, timeout=60)
        assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, (argv, res.stderr)
        assert res.returncode == 1, (argv, res.returncode, res.stderr)
        assert res.stderr.strip().splitlines()[-1].startswith("cudaenv: error: cannot write the output"), (argv, res.stderr)


@pytest.mark.timeout(120)
def test_a_closed_or_full_stderr_is_silence(fake_root, tmp_path):
    fake_root.toolkit("12.4.131")
    root = str(fake_root.path)
    res = subprocess.run(["sh", "-c", 'exec "$0" "$@" 2>&-', CUDAENV, "use", "12.4", "--shell", "bash", "--root", root], capture_output=True,
                         text=True, env={"PATH": SYSTEM_BIN}, timeout=60)
    assert res.returncode == 0 and "CUDA_HOME" in res.stdout
    for argv in (["use", "12.4", "--shell", "bash", "--root", root], ["doctor", "--quick", "--root", root], ["use", "99.9", "--root", root]):
        with open("/dev/full", "w") as full:
            res = subprocess.run([CUDAENV, *argv], stdout=subprocess.PIPE, stderr=full, text=True, env={"PATH": SYSTEM_BIN}, timeout=60)
        assert res.returncode in (0, 1, 2) and res.returncode != 120, (argv, res.returncode)
        if argv[1] == "12.4" and argv[0] == "use":
            assert res.returncode == 0


def test_a_broken_pipe_is_quiet(fake_root):
    fake_root.toolkit("12.4.131")
    proc = subprocess.Popen([CUDAENV, "doctor", "--quick", "--root", str(fake_root.path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={"PATH": SYSTEM_BIN})
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err and "Exception ignored" not in err


# ----------------------------------------------------------------------------- 8, 9. one loader, layers
def test_one_child_script_loader():
    from cudaenv._child import source

    assert "__global__" in source("check.cu")
    assert "cudaenv.cudaenv-backup" not in source("line_editor.py") and "shutil.copy2" in source("line_editor.py")
    from cudaenv.toolkit.uninstall.rcfiles import EDIT_LINES_CODE

    assert EDIT_LINES_CODE == source("line_editor.py").strip()
    pkg = Path(__import__("cudaenv").__file__).parent
    offenders = []
    for path in pkg.rglob("*.py"):
        rel = path.relative_to(pkg).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel != "_child/__init__.py" and 'files("cudaenv._child")' in text:
            offenders.append(rel)
        if rel.startswith("_child/") or rel in ("host/__init__.py", "host/files.py", "host/process.py", "_child/__init__.py"):
            continue
        if "_child.__file__" in text:
            offenders.append(rel)
    assert not offenders, offenders


def test_verify_and_toolkit_check_run_children_only_through_host():
    pkg = Path(__import__("cudaenv").__file__).parent
    for rel in ("verify/__init__.py", "verify/records.py", "verify/child.py", "verify/classify.py", "verify/run.py",
                "verify/toolkit_check.py", "commands/verify.py", "probes/collect.py", "probes/torch.py", "probes/nvidia.py"):
        text = (pkg / rel).read_text(encoding="utf-8")
        for word in ("import subprocess", "import tempfile", "from subprocess", "from tempfile"):
            assert word not in text, (rel, word)
    assert "cudaenv.probes.collect" not in (pkg / "probes/nvidia.py").read_text(encoding="utf-8")
