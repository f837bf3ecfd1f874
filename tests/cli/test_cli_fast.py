"""The hot-path argument parser (`use`, `list`) agrees with argparse, and falls back to it for anything odd."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.cli.parser import build_parser
from cudaenv.core.errors import UserError
from cudaenv.core.options import Option, parse_simple
from builders import CHILD_CWD

OPTIONS = (Option("--off"), Option("--shell", takes_value=True), Option("--timeout", metavar="SECONDS", kind="seconds"))


def test_reads_flags_values_and_one_positional():
    args = parse_simple(["12.1", "--shell", "fish", "--timeout=2"], OPTIONS, "version")
    assert (args.version, args.shell, args.timeout, args.off) == ("12.1", "fish", 2.0, False)
    assert parse_simple(["--off"], OPTIONS, "version").off is True


def test_anything_unusual_falls_back_to_argparse():
    for argv in (["--help"], ["-h"], ["12.1", "11.8"], ["--shell"], ["--bogus"], ["--timeout", "x"], ["--timeout", "0"],
                 ["--off=1"]):
        assert parse_simple(argv, OPTIONS, "version") is None, argv


def test_fast_path_errors_still_come_from_argparse(cli):
    result = cli("use", "--bogus")
    assert result.code == 2 and "unrecognized arguments: --bogus" in result.err and result.out == ""
    result = cli("list", "--timeout", "0")
    assert result.code == 2 and "more than 0" in result.err


def test_unrecognized_arguments_hint_names_the_command_whose_help_lists_them(cli):
    assert "see `cudaenv use --help`" in cli("use", "--bogus").err
    assert "see `cudaenv doctor --help`" in cli("doctor", "--bogus").err
    result = cli("checkpoint", "inspect", "x.pt", "--bogus")
    assert result.code == 2 and "see `cudaenv checkpoint inspect --help`" in result.err


# ------------------------------------------------------------------ parity: one declaration, two parsers
def _tokens(module):
    flags = [f for opt in module.OPTIONS for f in opt.flags]
    words = st.sampled_from(["12.4", "12", "system", "bash", "fish", "/opt/cuda-12.4", "2", "0", "-1", "1e3", "nan", "inf",
                             "x y", "", "-", "--", "-x", "--bogus", "-h", "--help", "a=b", "--sh", "--jso", "-qq"])
    with_value = st.builds(lambda f, v: "%s=%s" % (f, v), st.sampled_from(flags), words)
    return st.lists(st.one_of(st.sampled_from(flags), words, with_value, st.text(max_size=4)), max_size=7)


def _argparse(command, argv):
    try:
        args = build_parser([command] + argv).parse_args([command] + argv)
    except (UserError, SystemExit) as exc:
        return exc
    return {k: v for k, v in vars(args).items() if k not in ("command", "_module")}


@pytest.mark.parametrize("command, module_name", [("use", "cudaenv.commands.use"), ("list", "cudaenv.commands.list_toolkits"),
                                                  ("doctor", "cudaenv.commands.doctor"),
                                                  ("explain", "cudaenv.commands.explain")])
def test_whatever_the_fast_parser_accepts_argparse_reads_the_same(command, module_name):
    """The hot path's parser and argparse come from the same declaration (OPTIONS, POSITIONAL) and agree."""
    import importlib

    module = importlib.import_module(module_name)
    accepted = []

    @settings(max_examples=400)
    @given(_tokens(module))
    def check(argv):
        fast = parse_simple(argv, module.OPTIONS, getattr(module, "POSITIONAL", None))
        if fast is None:
            return  # argparse decides (and gives the messages)
        accepted.append(argv)
        assert _argparse(command, argv) == vars(fast), argv

    check()
    assert accepted  # the property was exercised, not vacuous
    for argv in (["12.4", "--shell", "fish", "--timeout=2", "-q"], ["--off", "--root", "/r"]) if command == "use" else (["--json", "--timeout", "3"],):
        fast = parse_simple(argv, module.OPTIONS, getattr(module, "POSITIONAL", None))
        assert fast is not None and _argparse(command, argv) == vars(fast)


def test_checkpoint_inspect_fast_parser_reads_what_argparse_reads():
    """`checkpoint inspect` (a start-up benchmark) has the fast path too: FILE is required, so a namespace without it
    goes to argparse; whatever the fast parser accepts, argparse reads the same way."""
    from cudaenv.cli import _parse_fast
    from cudaenv.commands import checkpoint

    accepted = []
    flags = [f for opt in checkpoint.INSPECT_OPTIONS for f in opt.flags]
    words = st.sampled_from(["m.pt", "/x/y.pt", "2", "0", "-1", "", "-", "--", "-x", "--bogus", "-h", "--help", "--js", "a=b"])
    tokens = st.lists(st.one_of(st.sampled_from(flags), words, st.builds(lambda f, v: "%s=%s" % (f, v), st.sampled_from(flags), words),
                                st.text(max_size=4)), max_size=6)

    @settings(max_examples=400)
    @given(st.sampled_from(["inspect", "fix", "--json", "bogus"]), tokens)
    def check(action, argv):
        fast = _parse_fast(checkpoint, [action] + argv)
        if fast is None:
            return
        accepted.append(argv)
        assert action == "inspect" and fast.file is not None
        assert _argparse("checkpoint", [action] + argv) == vars(fast), argv

    check()
    assert accepted
    for argv in (["m.pt"], ["m.pt", "--json", "--timeout", "3", "--root", "/r"]):
        fast = _parse_fast(checkpoint, ["inspect"] + argv)
        assert fast is not None and _argparse("checkpoint", ["inspect"] + argv) == vars(fast)
    assert _parse_fast(checkpoint, ["inspect"]) is None and _parse_fast(checkpoint, ["inspect", "--json"]) is None


def test_checkpoint_inspect_imports_nothing_heavy(tmp_path):
    """`checkpoint inspect` of a small file stays within 2x `python -c pass`: no argparse, zipfile, typing, json for
    the text report, importlib.resources or textwrap (the timing itself is bench/run.py's)."""
    import subprocess
    import sys

    import cudaenv
    from builders import TOOLS
    from checkpoint_builders import cnn, torch_zip

    path = tmp_path / "small.pt"
    path.write_bytes(torch_zip(cnn()))
    # and one whose report says what to do (the fix command quotes its path, the lines wrap): still none of them
    moved = tmp_path / "it's on cuda 2.pt"
    moved.write_bytes(torch_zip(cnn(location="cuda:2", prefix="module.")))
    heavy = ("argparse", "zipfile", "typing", "importlib.resources", "textwrap", "pathlib", "tempfile", "subprocess",
             "re", "json", "shlex", "enum", "functools", "collections")
    for file, code, seen in ((path, 0, "saved on: cpu ×6"), (moved, 1, "--strip-prefix module.")):
        probe = ("import sys\nfrom cudaenv.cli import main\ncode = main(['checkpoint', 'inspect', %r])\n"
                 "sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in %r if m in sys.modules)) + '\\n')\nsys.exit(code)\n" % (str(file), heavy))
        env = {"PATH": TOOLS, "HOME": str(tmp_path), "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
        run = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=CHILD_CWD)
        assert run.returncode == code, run.stderr
        text = " ".join(run.stdout.split())  # the long path wraps the first line
        assert "torch zip checkpoint" in text and seen in text, run.stdout
        assert run.stderr.rsplit("LOADED", 1)[1].split() == []


def test_a_value_that_looks_like_an_option_goes_to_argparse():
    assert parse_simple(["--shell", "-x"], OPTIONS, "version") is None
    assert parse_simple(["--shell=-x"], OPTIONS, "version").shell == "-x"
    # argparse reads "--" by what came before it (`list --` and `use 12.4 --shell x --` are errors, `use 12 --` is
    # not, `--shell=--` gives []): the parity test found each, so the fast parser leaves every "--" to argparse
    for argv in (["--"], ["12.4", "--shell", "x", "--"], ["--", "12.4"], ["--shell=--"]):
        assert parse_simple(argv, OPTIONS, "version") is None, argv


HEAVY = ("argparse", "json", "subprocess", "pathlib", "typing", "dataclasses", "packaging", "re", "enum", "tempfile")


def test_cudaenv_use_imports_nothing_heavy(tmp_path):
    """`cudaenv use` must feel instant: a switch between two toolkits (version.json, cuda.h, nvcc on disk) imports
    none of the modules that cost milliseconds each. (The timing itself is a benchmark: bench/run.py.)"""
    import json
    import subprocess
    import sys

    from builders import TOOLS

    for version in ("12.4.131", "12.1.105"):
        mm = ".".join(version.split(".")[:2])
        top = tmp_path / "root" / "sw" / mm
        (top / "bin").mkdir(parents=True)
        (top / "lib64").mkdir()
        (top / "include").mkdir()
        (top / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
        (top / "include" / "cuda.h").write_text("#define CUDA_VERSION %d%02d0\n" % tuple(int(x) for x in mm.split(".")))
        (top / "bin" / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release %s, V%s'\n" % (mm, version))
        (top / "bin" / "nvcc").chmod(0o755)
    probe = ("import sys\nfrom cudaenv.cli import main\ncode = main(['use', '12.4', '--shell', 'bash'])\n"
             "sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in %r if m in sys.modules)) + '\\n')\nsys.exit(code)\n" % (HEAVY,))
    # inside a fake root: the machine's own /usr/local (a cuda-13.0 here, none there) must not decide the answer
    env = {"PATH": "/sw/12.1/bin:%s" % TOOLS, "HOME": str(tmp_path), "SHELL": "/bin/bash", "CUDAENV_TOOLKITS": "/sw",
           "CUDAENV_ROOT": str(tmp_path / "root")}
    # -S: no site (its .pth files may import anything); -I would also drop the installed package, so PYTHONPATH names it
    import cudaenv

    env["PYTHONPATH"] = str(Path(cudaenv.__file__).resolve().parent.parent)
    run = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=CHILD_CWD)
    assert run.returncode == 0, run.stderr
    assert "export PATH=" in run.stdout and "/sw/12.4/bin" in run.stdout, run.stdout
    loaded = run.stderr.rsplit("LOADED", 1)[1].split()
    assert loaded == [], loaded


# The cudaenv modules `cudaenv use 12.4 --shell bash` imports (issue 35): start-up is the cost of `use`, and each module
# costs about 0.1 ms to find, read and run (a tenth of a percent of the 1.4 x budget each): the count may only go down.
USE_MODULES = 36


def test_cudaenv_use_imports_at_most_its_budget_of_modules(tmp_path):
    """Counted work, not time: the modules of cudaenv a switch loads (the shell hooks give --shell, so the parent
    process is not asked and cudaenv.probes.parent stays unloaded)."""
    import subprocess
    import sys

    import cudaenv
    from builders import TOOLS

    for version in ("12.4.131", "12.1.105"):
        top = tmp_path / "root" / "sw" / version[:4]
        (top / "bin").mkdir(parents=True)
        (top / "version.json").write_text('{"cuda": {"version": "%s"}}' % version)
    probe = ("import sys\nfrom cudaenv.cli import main\ncode = main(['use', '12.4', '--shell', 'bash'])\n"
             "sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'cudaenv')) + '\\n')\n"
             "sys.exit(code)\n")
    env = {"PATH": "/sw/12.1/bin:%s" % TOOLS, "HOME": str(tmp_path), "CUDAENV_TOOLKITS": "/sw",
           "CUDAENV_ROOT": str(tmp_path / "root"), "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=CHILD_CWD)
    assert run.returncode == 0, run.stderr
    assert "/sw/12.4/bin" in run.stdout, run.stdout
    loaded = run.stderr.rsplit("LOADED", 1)[1].split()
    assert "cudaenv.probes.parent" not in loaded
    # the snapshot's 29 records are not defined for the 4 a switch makes (cudaenv.model.toolkits holds those)
    assert "cudaenv.model.snapshot" not in loaded and "cudaenv.model.toolkits" in loaded
    # nor the version home's other forms (integers, compute capabilities, PEP 440) for the version strings it reads
    assert "cudaenv.core.version" not in loaded and "cudaenv.core.version_strings" in loaded
    assert len(loaded) <= USE_MODULES, (len(loaded), loaded)


def test_a_missing_command_module_is_a_broken_install_and_fails_loudly(monkeypatch):
    """cudaenv's own command modules are not optional: no 'not available' message (exit 2) hides a broken install
    (bench/run.py's has_command needs none: a cudaenv without the command answers argparse's exit 2)."""
    import io

    from cudaenv import commands
    from cudaenv.cli import main

    monkeypatch.setitem(commands.COMMANDS, "gone", ("cudaenv.commands.no_such_module", "a command whose module is missing"))
    with pytest.raises(ModuleNotFoundError, match="cudaenv.commands.no_such_module"):
        main(["gone"], out=io.StringIO(), err=io.StringIO(), env={})
    err = io.StringIO()
    assert main(["no-such-command"], out=io.StringIO(), err=err, env={}) == 2 and "invalid choice" in err.getvalue()


def test_cudaenv_list_imports_nothing_heavy(fake_root, tmp_path):
    """`cudaenv list` reads its tables in the line format and the dpkg lists without dataclasses: a runfile toolkit
    (its uninstaller's globs read), a deb one (the .list files read) and the active one, with none of HEAVY."""
    import subprocess
    import sys

    import cudaenv
    from builders import TOOLS

    fake_root.toolkit("12.4.131", runfile=True)
    fake_root.toolkit("12.1.105")
    fake_root.file("var/lib/dpkg/info/cuda-nvcc-12-1.list", "/.\n/usr/local/cuda-12.1\n/usr/local/cuda-12.1/bin/nvcc\n")
    fake_root.file("var/lib/dpkg/status", "Package: cuda-nvcc-12-1\nStatus: install ok installed\nVersion: 12.1.105-1\n")
    probe = ("import sys\nfrom cudaenv.cli import main\ncode = main(['list'])\n"
             "sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in %r if m in sys.modules)) + '\\n')\nsys.exit(code)\n" % (HEAVY,))
    env = {"PATH": "/usr/local/cuda-12.4/bin:%s" % TOOLS, "HOME": str(tmp_path), "CUDAENV_ROOT": str(fake_root.path),
           "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=CHILD_CWD)
    assert run.returncode == 0, run.stderr
    rows = {line.split()[-1]: line for line in run.stdout.splitlines() if "/usr/local/cuda-" in line}
    assert "runfile" in rows["/usr/local/cuda-12.4"] and "deb" in rows["/usr/local/cuda-12.1"], run.stdout
    assert run.stderr.rsplit("LOADED", 1)[1].split() == []


def test_explain_of_a_paste_imports_no_argparse_and_no_verify(tmp_path):
    """`cudaenv explain` of a short paste (issue 35's 2-line paste: 6 x `python -c pass`): the fast parser reads its
    words (no argparse, gettext, locale, shutil), and cudaenv.verify (for --probe) is not imported."""
    import subprocess
    import sys

    import cudaenv
    from builders import TOOLS

    paste = tmp_path / "paste.txt"
    paste.write_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                     "CUDA kernel errors might be asynchronously reported at some other API call\n")
    heavy = ("argparse", "gettext", "locale", "shutil", "cudaenv.verify", "cudaenv.parse.collect_env", "subprocess")
    for argv in (["explain", "--offline", "--file", str(paste)], ["explain", "--json", "--offline", "CUDA error: out of", "memory"]):
        probe = ("import sys\nfrom cudaenv.cli import main\ncode = main(%r)\n"
                 "sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in %r if m in sys.modules)) + '\\n')\nsys.exit(code)\n" % (argv, heavy))
        env = {"PATH": TOOLS, "HOME": str(tmp_path), "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
        run = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=CHILD_CWD)
        assert run.returncode == 0, run.stderr
        assert "gpu-arch-unsupported" in run.stdout or '"cuda-oom"' in run.stdout, run.stdout
        assert run.stderr.rsplit("LOADED", 1)[1].split() == []


EXIT_PROBE = """
import atexit, os, sys, threading, time
class Mark:
    def __del__(self):  # runs when the interpreter's teardown frees this module's objects
        os.write(2, b"TORN DOWN\\n")
mark = Mark()
how = sys.argv[1]
sys.argv = ["cudaenv"] + sys.argv[2:]
if how == "atexit":
    atexit.register(lambda: os.write(2, b"AT EXIT\\n"))
if how == "thread":
    threading.Thread(target=lambda: (time.sleep(0.2), os.write(2, b"THREAD DONE\\n"))).start()
from cudaenv.cli import exit_now, main
code = main(sys.argv[1:]) if how == "called" else main()
sys.stdout.write("AFTER MAIN\\n") if how == "called" else None
sys.exit(code) if how == "called" else exit_now(code)  # bin/cudaenv's last line
"""


def _two_toolkits_env(tmp_path):
    """A fake root with CUDA 12.4 and 12.1 under /sw, 12.1 on PATH, and the environment that runs the installed
    cudaenv's use and list on it."""
    import cudaenv
    from builders import TOOLS

    for version in ("12.4.131", "12.1.105"):
        top = tmp_path / "root" / "sw" / version[:4]
        (top / "bin").mkdir(parents=True)
        (top / "version.json").write_text('{"cuda": {"version": "%s"}}' % version)
    return {"PATH": "/sw/12.1/bin:%s" % TOOLS, "HOME": str(tmp_path), "CUDAENV_TOOLKITS": "/sw",
            "CUDAENV_ROOT": str(tmp_path / "root"), "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}


def test_use_and_list_end_without_the_interpreters_teardown_when_nothing_runs_at_exit(tmp_path):
    """Counted, not timed (issue 35): the `cudaenv` command's `use` and `list` end with their output written and
    flushed, without the teardown (an object freed at teardown says so); an atexit function still runs; another
    thread, or a call of main() with arguments (a test's, a library's) gets the usual exit."""
    import subprocess
    import sys

    env = _two_toolkits_env(tmp_path)

    def run(how, *argv):
        r = subprocess.run([sys.executable, "-S", "-c", EXIT_PROBE, how, *argv], capture_output=True, text=True,
                           env=env, timeout=60, cwd=str(tmp_path))
        return r.returncode, r.stdout, r.stderr

    use = ("use", "12.4", "--shell", "bash")
    code, out, err = run("entry", *use)
    assert code == 0 and "/sw/12.4/bin" in out and out.endswith("hash -r 2>/dev/null || true\n")
    assert "CUDA 12.4.131 at" in err and "TORN DOWN" not in err
    code, out, err = run("entry", "use", "99", "--shell", "bash")
    assert code == 1 and out == "" and "no installed CUDA toolkit matches 99" in err and "TORN DOWN" not in err
    code, out, err = run("entry", "list")
    assert code == 0 and "12.1.105" in out and "TORN DOWN" not in err
    code, out, err = run("atexit", *use)
    assert code == 0 and "/sw/12.4/bin" in out and "AT EXIT" in err and "TORN DOWN" not in err
    code, out, err = run("thread", *use)
    assert code == 0 and "/sw/12.4/bin" in out and "THREAD DONE" in err and "TORN DOWN" in err
    code, out, err = run("called", *use)
    assert code == 0 and out.endswith("AFTER MAIN\n") and "TORN DOWN" in err
    code, out, err = run("entry", "--version")
    assert code == 0 and "TORN DOWN" in err  # any other command: the usual exit


GC_PROBE = """
import gc, sys
how = sys.argv[1]
sys.argv = ["cudaenv"] + sys.argv[2:]
from cudaenv.cli import main
code = main() if how == "entry" else main(sys.argv[1:])
before = sum(s["collections"] for s in gc.get_stats())
made = [(i,) for i in range(5000)]  # what an exit allocates, and more
sys.stderr.write("GC %s %d\\n" % (gc.isenabled(), sum(s["collections"] for s in gc.get_stats()) - before))
sys.exit(code)
"""


def test_the_cudaenv_command_exits_without_collecting_what_use_made(tmp_path):
    """Counted (issue 35): `use` and `list` run with the cyclic collector off; the `cudaenv` command (main() with no
    arguments, bin/cudaenv) leaves it off, since switched on again at the end its first collection walks every object
    the run made (about 2 % of `use`'s instructions) in a process about to exit; main(argv) in a longer-lived process
    (a test, a library) gets it back on."""
    import subprocess
    import sys

    env = _two_toolkits_env(tmp_path)
    for argv in (("use", "12.4", "--shell", "bash"), ("list",)):
        said = {}
        for how in ("entry", "called"):
            r = subprocess.run([sys.executable, "-S", "-c", GC_PROBE, how, *argv], capture_output=True, text=True,
                               env=env, timeout=60, cwd=str(tmp_path))
            assert r.returncode == 0 and "12.4" in r.stdout, r.stderr
            said[how] = r.stderr.rsplit("GC ", 1)[1].split()
        assert said["entry"] == ["False", "0"], said
        assert said["called"][0] == "True" and int(said["called"][1]) > 0, said
