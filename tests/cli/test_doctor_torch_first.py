"""`cudaenv doctor`'s timeline against the torch import floor (issue 35), as counted work: the torch child is the first
program the doctor starts, and nothing else starts before it has; what the parent has imported by then; what the child
compiles before its `import torch`; the process ends without the interpreter's teardown once its report is written.
The timings are bench/run.py's and bench/timeline.py's."""

import json
import subprocess
import sys
from pathlib import Path

import cudaenv
import pytest

# What the parent may have imported when the torch child starts: the command, the doctor's service and the probes on
# the way to the child (the interpreter, the child script, the runner). Everything else (the hardware, toolkit and
# framework probes, the rules, the facts tables, the renderers) is imported beside the child. cudaenv.bundle: the
# doctor's modules come from its bundle (bundle.DOCTOR_MODULES).
BEFORE_THE_CHILD = {
    "cudaenv", "cudaenv._child", "cudaenv.bundle", "cudaenv.cli", "cudaenv.cli.streams", "cudaenv.commands", "cudaenv.commands.doctor",
    "cudaenv.core", "cudaenv.core.config", "cudaenv.core.errors", "cudaenv.core.i18n", "cudaenv.core.jobs",
    "cudaenv.core.lazy", "cudaenv.core.options", "cudaenv.core.text", "cudaenv.core.version", "cudaenv.core.version_strings",
    "cudaenv.diagnose",
    "cudaenv.diagnose.service", "cudaenv.host", "cudaenv.host.children", "cudaenv.host.files", "cudaenv.host.process",
    "cudaenv.host.resolve", "cudaenv.host.state", "cudaenv.model", "cudaenv.model.record", "cudaenv.model.reports",
    "cudaenv.model.snapshot", "cudaenv.model.toolkits", "cudaenv.probes", "cudaenv.probes.collect", "cudaenv.probes.env",
    "cudaenv.probes.python", "cudaenv.probes.site_packages", "cudaenv.probes.torch", "cudaenv.probes.torch_child",
    "cudaenv.render", "cudaenv.render.spinner",
}
NOT_BEFORE_THE_CHILD = ("json", "argparse", "dataclasses", "inspect", "socket", "platform", "pathlib", "typing", "ctypes")

SCRIPT = """
import atexit, json, os, sys
start = set(sys.modules)
def hook(event, args):
    if event == "subprocess.Popen":
        seen = [str(args[1][-1]), sorted(m for m in set(sys.modules) - start)]
        os.write(2, ("SPAWN " + json.dumps(seen) + "\\n").encode())
sys.addaudithook(hook)
atexit.register(lambda: sys.stderr.write("TEARDOWN\\n"))
sys.argv = ["cudaenv"] + %r
from cudaenv.cli import main
code = main()
sys.stderr.write("RETURNED %%d\\n" %% code)
sys.exit(code)
"""


def _doctor(tmp_path, fake_root, argv):
    """``cudaenv ARGV`` as the `cudaenv` script runs it (main() without argv), a fake torch on PYTHONPATH; each
    program it starts is written on stderr as it starts, with the modules imported by then (_spawns)."""
    import os

    from builders import TOOLS
    from machine import make_probe_torch

    folder = tmp_path / ("run%d" % len(list(tmp_path.glob("run*"))))
    site = folder / "site-packages"
    site.mkdir(parents=True)
    make_probe_torch(site)
    env = {"PATH": TOOLS, "HOME": str(folder), "CUDAENV_ROOT": str(fake_root.path),
           "PYTHONPATH": os.pathsep.join((str(Path(cudaenv.__file__).resolve().parent.parent), str(site)))}
    # -S: no site (its .pth files may import anything); PYTHONPATH names the installed package and the fake torch; the
    # folder as the current directory, which `python -c` puts first on sys.path (never the source tree's cudaenv)
    return subprocess.run([sys.executable, "-S", "-c", SCRIPT % (argv,)], capture_output=True, text=True, env=env,
                          timeout=120, cwd=str(folder))


def _spawns(run):
    return [json.loads(ln[len("SPAWN "):]) for ln in run.stderr.splitlines() if ln.startswith("SPAWN ")]


def test_the_torch_child_is_the_first_program_and_starts_before_most_of_cudaenv(tmp_path, fake_root):
    """`doctor --json`: the first program started is the dynamic torch child (`import torch`), before the static pass's
    child and every other probe's; when it starts, the parent has imported only BEFORE_THE_CHILD of cudaenv and none
    of NOT_BEFORE_THE_CHILD (json comes after it: the child's answer is read later). The report is whole, and the fake torch was imported by the child."""
    run = _doctor(tmp_path, fake_root, ["doctor", "--json", "--python", sys.executable])
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    assert report["schema_version"] == 1 and report["torch"]["dynamic"] is True, report["torch"]
    spawns = _spawns(run)
    assert [mode for mode, _ in spawns][:2] == ["dynamic", "static"], spawns
    loaded = set(spawns[0][1])
    assert {m for m in loaded if m.startswith("cudaenv")} <= BEFORE_THE_CHILD, sorted(
        {m for m in loaded if m.startswith("cudaenv")} - BEFORE_THE_CHILD)
    assert [m for m in NOT_BEFORE_THE_CHILD if m in loaded] == []


def test_an_in_process_main_returns(fake_root, tmp_path, cli, cli_subprocess):
    """main() called with argv (the tests, an embedding program) returns its code after a whole doctor run: only the
    `cudaenv` process exits at once. The installed script's exit code is the report's."""
    env = {"PATH": "", "HOME": str(tmp_path), "CUDAENV_ROOT": str(fake_root.path)}
    argv = ("doctor", "--json", "--quick", "--python", sys.executable)
    inside = cli(*argv, env=env)
    report = json.loads(inside.out)
    errors = any(f["severity"] == "error" for f in report["findings"])
    assert inside.code == (1 if errors else 0), inside.err
    outside = cli_subprocess(*argv, env=env)
    assert outside.code == inside.code and json.loads(outside.out)["findings"] == report["findings"], outside.err


def test_the_dynamic_pass_compiles_only_its_own_code(tmp_path):
    """The dynamic pass's script leaves out the static pass's blocks: about a third of the lines compiled in the child
    before its `import torch`; its answer is the whole script's answer, on a fake torch."""
    from cudaenv.probes.torch_child import child_script, parse_child_output
    from machine import make_probe_torch

    whole, dynamic = child_script(), child_script("dynamic")
    assert child_script("static") == whole
    assert len(dynamic.splitlines()) * 5 < len(whole.splitlines()) * 2, (len(dynamic.splitlines()), len(whole.splitlines()))
    for name in ("def static(", "def site_packages(", "def parse_version_py(", "def _site_packages(", "VERSION_KEYS"):
        assert name in whole and name not in dynamic, name
    compile(dynamic, "<dynamic>", "exec")
    site = tmp_path / "site"
    site.mkdir()
    make_probe_torch(site)
    answers = []
    for script in (whole, dynamic):
        run = subprocess.run([sys.executable, "-S", "-c", script, "dynamic"], capture_output=True, text=True,
                             env={"PYTHONPATH": str(site), "PATH": ""}, timeout=60, cwd=str(tmp_path))
        answers.append(parse_child_output(run.stdout))
    assert answers[0] == answers[1] and answers[0]["dynamic"] is True and answers[0]["version"] == "2.7.1+cu126", answers


ANSWERS_THEN_WAITS = """
import os, sys, time
if %r:
    sys.stdout.write("ANSWER 1\\n")
    sys.stdout.flush()
os.closerange(1, 3)
if %r:
    os.kill(os.getpid(), 11)
for _ in range(200 if %r else 0):  # where the doctor's torch child frees torch's memory, this one waits for the mark
    if os.path.exists(%r):
        break
    time.sleep(0.05)
os._exit(3)
"""


@pytest.mark.parametrize("answers, crashes", [(True, False), (False, False), (False, True)])
def test_a_child_that_answered_and_closed_its_output_is_not_waited_for(tmp_path, answers, crashes):
    """``until``: a child whose stdout holds the mark when both its streams close is done: the result comes at once,
    before it exits (it waits for a mark the test leaves only afterwards), with no exit status, and the child is
    killed, not left running. Without the mark at the close, its exit is awaited: its status, or its crash's signal."""
    from cudaenv.host import Host
    from cudaenv.host.children import live_children

    mark = tmp_path / "exit-now"
    host = Host("/", env={"PATH": ""}, root_is_this_machine=True)
    script = ANSWERS_THEN_WAITS % (answers, crashes, answers, str(mark))
    result = host.run([sys.executable, "-S", "-c", script], timeout=60, until=b"ANSWER ")
    mark.touch()
    assert result.error is None and live_children() == []
    if answers:
        assert result.stdout == "ANSWER 1\n" and result.returncode is None, result
    elif crashes:
        assert result.signal == "SIGSEGV" and result.stdout == "", result
    else:
        assert result.returncode == 3 and result.stdout == "", result
