"""The `cudaenv` command (bin/cudaenv, installed beside the test interpreter) ends through ``os._exit`` once its output is
flushed (cli.exit_now, issue 35): the interpreter's teardown is skipped, the exit status and every byte written are
kept. ``python -m cudaenv`` keeps the ordinary exit (a caller may run it with runpy and look on)."""

import subprocess
import sys
from pathlib import Path

import cudaenv
from builders import CHILD_CWD

SCRIPT = str(Path(sys.executable).parent / "cudaenv")
RUN = ("import os, runpy, sys\nclass Mark:\n    def __del__(self):  # freed by the interpreter's teardown\n"
       "        os.write(2, b'TEARDOWN\\n')\nmark = Mark()\n"
       "sys.argv = [%r] + %%r\nrunpy.run_path(%r, run_name='__main__')\n" % (SCRIPT, SCRIPT))


def _env(tmp_path):
    (tmp_path / "sw").mkdir(exist_ok=True)
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent),
            "HOME": str(tmp_path), "CUDAENV_TOOLKITS": str(tmp_path / "sw")}


def _run(argv, tmp_path):
    return subprocess.run([sys.executable, "-S", "-c", RUN % (argv,)], capture_output=True, text=True,
                          env=_env(tmp_path), timeout=60, cwd=CHILD_CWD)


def test_the_command_skips_the_teardown_and_keeps_its_output_and_status(tmp_path):
    ok = _run(["list", "--json"], tmp_path)
    assert ok.returncode == 0 and ok.stdout.strip().startswith(("[", "{")), (ok.stdout, ok.stderr)
    assert "TEARDOWN" not in ok.stderr  # nothing was freed: os._exit after the flush
    bad = _run(["use", "99.9", "--shell", "bash"], tmp_path)
    assert bad.returncode not in (0, None) and "TEARDOWN" not in bad.stderr and "99.9" in bad.stderr


def test_help_keeps_the_ordinary_exit(tmp_path):
    """argparse's --help raises SystemExit inside main(): the ordinary exit (and its checks of stdout) runs."""
    shown = _run(["doctor", "--help"], tmp_path)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: cudaenv doctor") and "TEARDOWN" in shown.stderr


def test_a_full_stdout_is_still_an_error(tmp_path):
    full = subprocess.run(["/bin/sh", "-c", '"$0" -S -c "$1" > /dev/full', sys.executable, RUN % (["list", "--json"],)],
                          capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert full.returncode == 1 and "cannot write" in full.stderr and "TEARDOWN" not in full.stderr, full.stderr
