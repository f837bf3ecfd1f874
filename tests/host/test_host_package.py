"""The host package: one noun a module (files, resolve, process, children, state, tree and the Host record in the
package), each name imported from the module that defines it, and the runner kept off the paths that run no
program (`use`, `list`)."""

import subprocess
import sys
from pathlib import Path

import cudaenv.host as host_module
from cudaenv.host import children, files, process
from builders import CHILD_CWD

PARTS = {
    files: ("NotRegularFile", "read_regular_why", "scratch_dir"),
    process: ("CommandResult", "Deadline", "EXIT_GRACE", "MAX_CAPTURE", "signal_name", "subprocess_runner"),
    children: ("kill_process_group", "live_children", "reap_orphans"),
}


def test_the_package_re_exports_none_of_its_parts_names():
    """No second import place: ``from cudaenv.host import CommandResult`` fails; the name has one home."""
    assert not hasattr(host_module, "__all__")
    for module, names in PARTS.items():
        for name in names:
            assert hasattr(module, name), name
            assert not hasattr(host_module, name), "cudaenv.host re-exports %s" % name


def test_an_unknown_name_is_an_attribute_error():
    try:
        host_module.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def _fresh(code: str) -> str:
    import cudaenv

    env = {"PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent), "PATH": ""}
    run = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=60, cwd=CHILD_CWD)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_reading_files_does_not_load_the_runner(tmp_path):
    (tmp_path / "f").write_text("hello")
    out = _fresh(
        "import sys\nfrom cudaenv.host import Host, kill_all_children\nh = Host(root=%r, env={})\n"
        "print(h.read_text('/f'), 'cudaenv.host.process' in sys.modules, kill_all_children(stop_new=False),\n"
        "      'cudaenv.host.children' in sys.modules)\n" % str(tmp_path)
    )
    assert out.split() == ["hello", "False", "[]", "False"]


def test_closing_before_the_runner_is_loaded_still_stops_every_later_child():
    """`use` ends with kill_all_children(stop_new=True) without loading the runner; a thread that runs a program
    afterwards must still get `interrupted`, as when everything was one module."""
    out = _fresh(
        "from cudaenv.host import Host, kill_all_children\nkill_all_children(stop_new=True)\n"
        "r = Host(env={}).run([%r, '-c', 'print(1)'])\nprint(r.error, r.returncode)\n" % sys.executable
    )
    assert out.split() == ["interrupted", "None"]
