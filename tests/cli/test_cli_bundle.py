"""The start-up bundle of `cudaenv use` and `cudaenv list` (cudaenv/bundle.py, issue 35): counted, not timed.

Each test copies the package to a temporary folder, compiles a bundle there with the function the wheel's build
uses, and runs the `cudaenv` command's entry (``main()`` with no arguments, as bin/cudaenv calls it) in a child
interpreter on that copy: which modules came from the bundle, which were found as usual, and the output, compared
byte for byte with the same command run without the bundle.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cudaenv
from builders import TOOLS
from cudaenv.bundle import (BUNDLE, BUNDLE_COMMANDS, DOCTOR_BUNDLE, DOCTOR_MODULES, GROUPS, LIST_ONLY, MODULES, SHARED, USE_ONLY,
                            build_bundle, read_bundle)

# Imported before the bundle is put in place (bin/cudaenv's first import: the bundle's own module): found as usual.
BEFORE = {"cudaenv", "cudaenv.bundle"}

# The `cudaenv` command: the repository's bin/cudaenv itself, run as the child's main script (its os._exit runs the
# atexit functions first, where the probes report); with --no-entry, a test's call of main(argv) (no bundle).
SCRIPT = Path(__file__).resolve().parents[2] / "bin" / "cudaenv"
ENTRY_LINES = """
if entry:
    exec(compile(open(%r).read(), %r, "exec"))
from cudaenv.cli import main
""" % (str(SCRIPT), str(SCRIPT))

PROBE = """
import atexit, json, sys
entry = sys.argv[2:3] != ["--no-entry"]
sys.argv = ["cudaenv"] + json.loads(sys.argv[1])
def source(name):
    loader = type(getattr(sys.modules[name], "__loader__", None)).__name__
    return "bundle" if loader == "BundleLoader" else "usual"
def report():  # at exit (an atexit function: the command then ends with the usual exit, cudaenv.cli._exit_now)
    report = {m: source(m) for m in sys.modules if m.split(".")[0] == "cudaenv"}
    sys.stderr.write("\\nREPORT " + json.dumps(report) + "\\n")
atexit.register(report)
""" + ENTRY_LINES + """
sys.exit(main() if entry else main(sys.argv[1:]))
"""


@pytest.fixture
def package(tmp_path):
    """A copy of the installed package (no __pycache__, no bundle) under ``tmp_path / "pkg"``, and a fake root with
    two toolkits in a CUDAENV_TOOLKITS folder."""
    top = tmp_path / "pkg"
    shutil.copytree(Path(cudaenv.__file__).resolve().parent, top / "cudaenv",
                    ignore=shutil.ignore_patterns("__pycache__", BUNDLE, DOCTOR_BUNDLE))
    for version in ("12.4.131", "12.1.105"):
        tree = tmp_path / "root" / "sw" / version[:4]
        (tree / "bin").mkdir(parents=True)
        (tree / "version.json").write_text(json.dumps({"cuda": {"version": version}}))
    return top


def _run(package, tmp_path, *argv, entry=True, flags=()):
    env = {"PATH": "/sw/12.1/bin:%s" % TOOLS, "HOME": str(tmp_path), "CUDAENV_TOOLKITS": "/sw",
           "CUDAENV_ROOT": str(tmp_path / "root"), "PYTHONPATH": str(package), "PYTHONDONTWRITEBYTECODE": "1"}
    args = [json.dumps(list(argv))] + ([] if entry else ["--no-entry"])
    run = subprocess.run([sys.executable, "-S", *flags, "-c", PROBE, *args], capture_output=True, env=env, timeout=60, cwd=str(tmp_path))
    err, mark, report = run.stderr.decode().rpartition("\nREPORT ")
    return run.returncode, run.stdout, (err if mark else report), (json.loads(report) if mark else None)


def _bundle(package, data=None):
    (package / "cudaenv" / "bundle" / BUNDLE).write_bytes(build_bundle(str(package)) if data is None else data)


def test_use_and_list_import_every_module_after_the_entry_from_the_bundle(package, tmp_path):
    _bundle(package)
    seen = set()
    for argv in (["use", "12.4", "--shell", "bash"], ["list"]):
        plain = _run(package, tmp_path, *argv, entry=False)
        code, out, err, report = _run(package, tmp_path, *argv)
        assert (code, out, err) == plain[:3] and code == 0, (argv, err)
        assert {m for m, how in plain[3].items() if how == "bundle"} == set()  # main(argv): a test's call, no bundle
        usual = {m for m, how in report.items() if how == "usual"}
        assert usual == BEFORE & set(report), (argv, sorted(usual))
        seen |= set(report) - BEFORE
        if argv[0] == "use":  # in English, no catalog and no renderer on the switch's path
            assert not {"cudaenv.core.i18n", "cudaenv.render", "cudaenv.core.errors"} & set(report), sorted(report)
    assert b"/sw/12.4/bin" in _run(package, tmp_path, "use", "12.4", "--shell", "bash")[1]
    assert set(MODULES) == seen  # no module of these paths is left out, and none is carried for nothing
    assert set(BUNDLE_COMMANDS) == {"use", "list"}


def test_the_doctor_imports_every_module_after_the_entry_from_its_own_bundle(package, tmp_path):
    """`doctor --json --quick` and `doctor --json` (no torch in this interpreter) in a fake root: every cudaenv module
    after the entry comes from the doctor's bundle (DOCTOR_MODULES), and the report is the one the usual import
    gives."""
    (package / "cudaenv" / "bundle" / DOCTOR_BUNDLE).write_bytes(build_bundle(str(package), DOCTOR_MODULES))
    env = {"PATH": TOOLS, "HOME": str(tmp_path), "CUDAENV_ROOT": str(tmp_path / "root"), "PYTHONPATH": str(package),
           "PYTHONDONTWRITEBYTECODE": "1"}
    seen = set()
    for argv in (["doctor", "--json", "--quick", "--python", sys.executable], ["doctor", "--json", "--python", sys.executable]):
        runs = []
        for entry in ([], ["--no-entry"]):
            run = subprocess.run([sys.executable, "-S", "-c", PROBE, json.dumps(argv), *entry], capture_output=True,
                                 env=env, timeout=120, cwd=str(tmp_path))
            err, _, report = run.stderr.decode().rpartition("\nREPORT ")
            assert run.returncode in (0, 1), err
            out = json.loads(run.stdout)
            out.pop("generated_at", None)
            runs.append((run.returncode, out, json.loads(report)))
        (code, out, report), (plain_code, plain_out, plain_report) = runs
        assert (code, out) == (plain_code, plain_out)
        assert set(plain_report.values()) == {"usual"}  # main(argv): a test's call, no bundle
        usual = {m for m, how in report.items() if how == "usual"}
        assert usual == BEFORE & set(report), (argv, sorted(usual))
        seen |= set(report) - BEFORE
    assert seen <= set(DOCTOR_MODULES)
    for name in DOCTOR_MODULES:  # each is a module of the package (a bundle of a missing file fails the build)
        base = package.joinpath(*name.split("."))
        assert (base / "__init__.py").is_file() or base.with_suffix(".py").is_file(), name


def test_a_module_whose_source_changed_since_the_build_is_imported_from_its_file(package, tmp_path):
    _bundle(package)
    switch = package / "cudaenv" / "toolkit" / "switch.py"
    switch.write_text(switch.read_text() + "\nraise ImportError('the edited file was run')\n")
    code, out, err, report = _run(package, tmp_path, "use", "12.4", "--shell", "bash")
    assert code != 0 and "the edited file was run" in err  # the file's code ran, not the bundle's
    switch.write_text(switch.read_text().replace("\nraise ImportError('the edited file was run')\n", "\n# edited\n"))
    code, out, err, report = _run(package, tmp_path, "use", "12.4", "--shell", "bash")
    assert code == 0 and report["cudaenv.toolkit.switch"] == "usual"
    assert report["cudaenv.toolkit.select"] == "bundle"  # the others still come from the bundle


def test_a_bundle_of_another_interpreter_or_a_cut_one_is_not_used(package, tmp_path):
    good = build_bundle(str(package))
    head, _, rest = good.partition(b"\n")
    other = head[:-4] + (b"0000" if not head.endswith(b"0000") else b"1111")  # another magic number
    plain = _run(package, tmp_path, "use", "12.4", "--shell", "bash", entry=False)
    for data in (other + b"\n" + rest, good[: len(head) + 20], b"", b"cudaenv-bundle 1 x\n"):
        _bundle(package, data)
        code, out, err, report = _run(package, tmp_path, "use", "12.4", "--shell", "bash")
        assert (code, out, err) == plain[:3]
        assert set(report.values()) == {"usual"}, data[:40]
        assert read_bundle(str(package / "cudaenv" / "bundle" / BUNDLE)) is None
    _bundle(package)
    assert read_bundle(str(package / "cudaenv" / "bundle" / BUNDLE)) is not None
    code, out, err, report = _run(package, tmp_path, "use", "12.4", "--shell", "bash", flags=("-O",))
    assert code == 0 and set(report.values()) == {"usual"}  # python -O: the usual optimised import


def test_a_module_from_the_bundle_is_the_module_the_usual_import_makes(package, tmp_path):
    """``__file__``, ``__spec__``, ``__path__``, ``__cached__`` and the code's file name (a traceback's lines) as the
    usual import gives them."""
    _bundle(package)
    probe = """
import sys, linecache
from cudaenv.bundle import use_bundle
finder = use_bundle()
finder.import_directly()  # (use's and list's way: past the import system's steps)
import cudaenv.toolkit.switch as switch, cudaenv.host as host
out = []
for m in (switch, host):
    out.append(repr((type(m.__loader__).__name__, m.__file__, m.__spec__.origin, m.__cached__, m.__package__,
                     getattr(m, "__path__", None), m.__spec__.submodule_search_locations, m.__spec__.parent,
                     [k for k in vars(m) if k.startswith("__")], m.__spec__._initializing, sys.modules[m.__name__] is m)))
out.append(repr((host.files is sys.modules["cudaenv.host.files"], sys.modules["cudaenv.toolkit"].switch is switch)))
code = switch.plan_switch.__code__
out.append(repr((code.co_filename, linecache.getline(code.co_filename, code.co_firstlineno).strip())))
print("\\n".join(out))
"""
    for prefix in (None, str(tmp_path / "pycache")):  # __cached__ where PYTHONPYCACHEPREFIX moves it too
        env = {"PYTHONPATH": str(package), "PYTHONDONTWRITEBYTECODE": "1", "PATH": TOOLS}
        if prefix:
            env["PYTHONPYCACHEPREFIX"] = prefix
        bundled = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=str(tmp_path))
        plain = probe.replace("finder = use_bundle()\nfinder.import_directly()", "")
        usual = subprocess.run([sys.executable, "-S", "-c", plain], capture_output=True, text=True, env=env, timeout=60, cwd=str(tmp_path))
        assert bundled.returncode == 0 and usual.returncode == 0, bundled.stderr + usual.stderr
        assert bundled.stdout.count("'BundleLoader'") == 2 and usual.stdout.count("'SourceFileLoader'") == 2
        assert bundled.stdout.replace("'BundleLoader'", "'SourceFileLoader'") == usual.stdout
        assert str(package / "cudaenv" / "toolkit" / "switch.py") in bundled.stdout and "def plan_switch(" in bundled.stdout
        assert ("__pycache__" in bundled.stdout) == (prefix is None) and (prefix or "__pycache__") in bundled.stdout


def test_no_bundle_on_windows_and_a_found_one_goes_first(package, monkeypatch):
    """Windows gets the usual import (its paths use its own separator); elsewhere the finder goes first on
    sys.meta_path, and vouches only for the bundle's modules (taken off again here: nothing is imported)."""
    import os

    from cudaenv.bundle import use_bundle

    _bundle(package)
    path = str(package / "cudaenv" / "bundle" / BUNDLE)
    before = list(sys.meta_path)
    monkeypatch.setattr(os, "sep", "\\")
    assert use_bundle(path) is None and sys.meta_path == before
    monkeypatch.undo()
    finder = use_bundle(path)
    try:
        assert finder is not None and sys.meta_path[0] is finder
        assert finder.find_spec("json") is None and finder.find_spec("cudaenv.commands.doctor") is None
    finally:
        sys.meta_path.remove(finder)
    assert sys.meta_path == before


COUNTED = """
import json, sys
bootstrap = sys.modules["_frozen_importlib"]
usual = bootstrap._find_and_load
through = []
def counted(name, import_):  # each module the import system itself finds and loads
    through.append(name)
    return usual(name, import_)
bootstrap._find_and_load = counted
sys.argv = ["cudaenv"] + json.loads(sys.argv[1])
entry = True
import atexit
atexit.register(lambda: sys.stderr.write("\\nREPORT " + json.dumps([n for n in through if n.split(".")[0] == "cudaenv"]) + "\\n"))
""" + ENTRY_LINES


def test_use_and_list_take_the_bundles_modules_past_the_import_system(package, tmp_path):
    """Counted (issue 35): after the bundle is in place, no module of `use` or `list` goes through the import system's
    own find-and-load (its module locks, its search of sys.meta_path: about 40,000 instructions a module); only the
    modules imported before the bundle do. The output is the one the usual import gives. Under ``-X importtime`` every
    module goes the usual way (its report names them all)."""
    _bundle(package)
    env = {"PATH": "/sw/12.1/bin:%s" % TOOLS, "HOME": str(tmp_path), "CUDAENV_TOOLKITS": "/sw",
           "CUDAENV_ROOT": str(tmp_path / "root"), "PYTHONPATH": str(package), "PYTHONDONTWRITEBYTECODE": "1"}
    for argv in (["use", "12.4", "--shell", "bash"], ["list"], ["use", "9.9", "--shell", "fish"]):
        plain = _run(package, tmp_path, *argv, entry=False)
        for flags, expected in (((), BEFORE), (("-X", "importtime"), None)):
            run = subprocess.run([sys.executable, "-S", *flags, "-c", COUNTED, json.dumps(argv)], capture_output=True,
                                 env=env, timeout=60, cwd=str(tmp_path))
            err, _, report = run.stderr.decode().rpartition("\nREPORT ")
            through = set(json.loads(report))
            if not flags:
                assert (run.returncode, run.stdout, err) == plain[:3], argv
                assert not through & set(MODULES), (argv, sorted(through & set(MODULES)))  # none of the bundle's
                if argv[1:2] != ["9.9"]:  # (the error's words are no module of the bundle: found as usual)
                    assert through == expected & (set(plain[3]) | {"cudaenv.bundle"}), (argv, sorted(through))
            else:
                assert set(plain[3]) <= through | {"cudaenv.bundle"} and len(through) > len(BEFORE) + 10, argv


def test_use_and_list_each_read_their_own_groups_of_the_bundle(package, tmp_path):
    """Each group of the bundle is one marshal.loads (cudaenv.bundle.GROUPS): `use` imports every module of SHARED and
    USE_ONLY and none of LIST_ONLY, `list` every module of SHARED and LIST_ONLY and none of USE_ONLY, so neither reads
    code it does not run (counted: the modules imported; the groups cover MODULES once)."""
    _bundle(package)
    for argv, own, other in ((["use", "12.4", "--shell", "bash"], USE_ONLY, LIST_ONLY), (["list"], LIST_ONLY, USE_ONLY)):
        code, out, err, report = _run(package, tmp_path, *argv)
        assert code == 0, err
        imported = {m for m, how in report.items() if how == "bundle"}
        assert imported == set(SHARED) | set(own), (argv, sorted(imported ^ (set(SHARED) | set(own))))
        assert not imported & set(other)
    names = [name for group in GROUPS for name in group]
    assert len(names) == len(set(names)) == len(MODULES) and set(names) == set(MODULES)
    index, spans, code = read_bundle(str(package / "cudaenv" / "bundle" / BUNDLE))
    assert len(spans) == len(GROUPS) and index["cudaenv.toolkit.switch"][3] == GROUPS.index(USE_ONLY)
    (tmp_path / DOCTOR_BUNDLE).write_bytes(build_bundle(str(package), DOCTOR_MODULES))  # the doctor's: one a module
    index, spans, code = read_bundle(str(tmp_path / DOCTOR_BUNDLE))
    assert len(spans) == len(DOCTOR_MODULES) == len({entry[3] for entry in index.values()})


def test_the_other_commands_do_not_read_the_bundles_module(package, tmp_path):
    """`cudaenv --version`, `explain`, `fix --help`: bin/cudaenv and main() import cudaenv.bundle only for the commands
    of cudaenv.BUNDLED_COMMANDS (counted: the modules imported), which are the ones it has a bundle for."""
    _bundle(package)
    assert set(cudaenv.BUNDLED_COMMANDS) == set(BUNDLE_COMMANDS) | {"doctor"}
    for argv in (["--version"], ["fix", "--help"], ["link", "--help"]):
        code, out, err, report = _run(package, tmp_path, *argv)
        assert code == 0 and out, (argv, err)
        assert "cudaenv.bundle" not in report and set(report.values()) == {"usual"}, (argv, sorted(report))
    code, out, err, report = _run(package, tmp_path, "use", "12.4", "--shell", "bash")
    assert code == 0 and "cudaenv.bundle" in report


def test_once_a_thread_runs_the_bundles_modules_take_the_usual_import(package, tmp_path):
    """The direct making of a bundle module has no module locks: while another thread runs, every import goes through
    the import system (counted: its find-and-load sees the bundle's modules, still loaded from the bundle), and
    `builtins.__import__` is the usual one again after close(). (No module of the bundle starts a thread when
    imported, so no thread can see a module the main thread is making.)"""
    _bundle(package)
    probe = """
import builtins, json, sys, threading
bootstrap = sys.modules["_frozen_importlib"]
usual, through = bootstrap._find_and_load, []
bootstrap._find_and_load = lambda name, import_: (through.append(name), usual(name, import_))[1]
from cudaenv.bundle import use_bundle
before = builtins.__import__
finder = use_bundle()
finder.import_directly()
import cudaenv.core.text
direct = list(through)
stop = threading.Event()
worker = threading.Thread(target=stop.wait)
worker.start()
import cudaenv.toolkit.select
stop.set()
worker.join()
import cudaenv.host.state
finder.close()
print(json.dumps([direct, through, builtins.__import__ is before, sorted(set(finder.loaded))]))
"""
    env = {"PYTHONPATH": str(package), "PYTHONDONTWRITEBYTECODE": "1", "PATH": TOOLS}
    run = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    direct, through, restored, loaded = json.loads(run.stdout)
    assert "cudaenv.core.text" not in direct and "cudaenv.core" not in direct  # made directly: no thread yet
    assert "cudaenv.toolkit.select" in through and "cudaenv.toolkit" in through  # a thread ran: the import system's
    assert "cudaenv.host.state" not in through  # the thread is gone: directly again
    assert {"cudaenv.core.text", "cudaenv.toolkit.select", "cudaenv.host.state"} <= set(loaded) and restored
