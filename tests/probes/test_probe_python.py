"""Which interpreter the doctor inspects: --python, VIRTUAL_ENV, CONDA_PREFIX, then python3/python on PATH."""

import os
import sys

import pytest

from cudaenv.core.errors import UserError
from cudaenv.host import Host
from cudaenv.probes.python import Interpreter, env_interpreter, find_interpreter

REAL = os.path.realpath(sys.executable)


def _env_dir(tmp_path, name, windows=False):
    """A fake venv/conda prefix whose interpreter is a link to the real python."""
    prefix = tmp_path / name
    (prefix / "bin").mkdir(parents=True)
    os.symlink(REAL, prefix / "bin" / "python")
    return prefix


def _path_dir(tmp_path, *names):
    d = tmp_path / "pathbin"
    d.mkdir(exist_ok=True)
    for n in names:
        os.symlink(REAL, d / n)
    return d


def host(env):
    return Host(env=env, system="linux")


def test_explicit_path_wins_over_everything(tmp_path):
    venv = _env_dir(tmp_path, "venv")
    explicit = _env_dir(tmp_path, "mine")
    h = host({"VIRTUAL_ENV": str(venv), "PATH": str(_path_dir(tmp_path, "python3"))})
    found = find_interpreter(h, str(explicit / "bin" / "python"))
    assert found == Interpreter(str(explicit / "bin" / "python"), "--python")


def test_explicit_venv_folder_means_its_interpreter(tmp_path):
    explicit = _env_dir(tmp_path, "mine")
    assert find_interpreter(host({}), str(explicit)).path == str(explicit / "bin" / "python")


def test_explicit_name_is_looked_up_on_path(tmp_path):
    d = _path_dir(tmp_path, "python3.11")
    found = find_interpreter(host({"PATH": str(d)}), "python3.11")
    assert found == Interpreter(str(d / "python3.11"), "--python")


@pytest.mark.parametrize("given", ["/no/such/python", "no-such-python-name", "relative/missing/python"])
def test_explicit_missing_is_a_user_error(given, tmp_path):
    with pytest.raises(UserError) as info:
        find_interpreter(host({"PATH": str(_path_dir(tmp_path, "python3"))}), given)
    assert info.value.message == "--python %s does not exist" % given
    assert info.value.hint


def test_explicit_file_that_is_not_executable_is_a_user_error(tmp_path):
    f = tmp_path / "python"
    f.write_text("not a program")
    with pytest.raises(UserError):
        find_interpreter(host({}), str(f))


def test_virtual_env_before_conda_and_path(tmp_path):
    venv = _env_dir(tmp_path, "venv")
    conda = _env_dir(tmp_path, "conda")
    h = host({"VIRTUAL_ENV": str(venv), "CONDA_PREFIX": str(conda), "PATH": str(_path_dir(tmp_path, "python3"))})
    assert find_interpreter(h) == Interpreter(str(venv / "bin" / "python"), "VIRTUAL_ENV")


def test_conda_prefix_before_path(tmp_path):
    conda = _env_dir(tmp_path, "conda")
    h = host({"CONDA_PREFIX": str(conda), "PATH": str(_path_dir(tmp_path, "python3"))})
    assert find_interpreter(h) == Interpreter(str(conda / "bin" / "python"), "CONDA_PREFIX")


def test_broken_venv_falls_through_with_a_note(tmp_path):
    conda = _env_dir(tmp_path, "conda")
    notes = []
    h = host({"VIRTUAL_ENV": str(tmp_path / "gone"), "CONDA_PREFIX": str(conda)})
    assert find_interpreter(h, notes=notes).source == "CONDA_PREFIX"
    assert len(notes) == 1 and "VIRTUAL_ENV=" in notes[0].message and notes[0].probe == "python"


def test_python3_before_python_on_path(tmp_path):
    d = _path_dir(tmp_path, "python", "python3")
    assert find_interpreter(host({"PATH": str(d)})) == Interpreter(str(d / "python3"), "PATH")


def test_plain_python_when_no_python3(tmp_path):
    d = _path_dir(tmp_path, "python")
    assert find_interpreter(host({"PATH": str(d)})) == Interpreter(str(d / "python"), "PATH")


def test_nothing_found_is_none(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert find_interpreter(host({"PATH": str(empty)})) is None


def test_interpreters_are_host_programs_even_under_a_root(fake_root, tmp_path):
    venv = _env_dir(tmp_path, "venv")  # outside the root: still found, not looked up inside it
    h = fake_root.host(env={"VIRTUAL_ENV": str(venv)})
    assert find_interpreter(h).path == str(venv / "bin" / "python")


def test_windows_layouts():
    assert env_interpreter("C:\\venv", "windows") == "C:\\venv\\Scripts\\python.exe"
    assert env_interpreter("C:\\conda\\envs\\x", "windows", conda=True) == "C:\\conda\\envs\\x\\python.exe"
    assert env_interpreter("/opt/venv", "linux") == "/opt/venv/bin/python"


@pytest.mark.parametrize("site, prefix", [
    ("/root/venvs/old/lib/python3.11/site-packages", "/root/venvs/old"),
    ("/usr/lib64/python3.9/site-packages/", "/usr"),
    ("/usr/lib/python3/dist-packages", "/usr"),
    ("C:\\Users\\me\\venv\\Lib\\site-packages", "C:\\Users\\me\\venv"),
    ("C:/Users/me/miniconda3/Lib/site-packages", "C:/Users/me/miniconda3"),
    ("/opt/odd/site-packages", None),
    ("/root/venvs/old/lib/python3.11", None),
])
def test_site_env_prefix_knows_posix_and_windows_layouts(site, prefix):
    from cudaenv.probes.site_packages import site_env_prefix

    assert site_env_prefix(site) == prefix


def test_env_interpreters_is_the_one_rule():
    from cudaenv.probes.python import env_interpreters

    assert env_interpreters("/opt/venv", "linux") == ("/opt/venv/bin/python", "/opt/venv/bin/python3")
    assert env_interpreters("C:\\venv", "windows") == ("C:\\venv\\Scripts\\python.exe", "C:\\venv\\python.exe")
    assert env_interpreters("C:\\conda", "windows", conda=True) == ("C:\\conda\\python.exe",)
    assert env_interpreters("C:/venv", "windows", conda=False) == ("C:/venv/Scripts/python.exe",)


def test_virtual_env_with_only_python3_is_found(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(REAL, venv / "bin" / "python3")
    found = find_interpreter(host({"VIRTUAL_ENV": str(venv), "PATH": ""}))
    assert found == Interpreter(str(venv / "bin" / "python3"), "VIRTUAL_ENV")
