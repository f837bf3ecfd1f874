"""config: every CUDAENV_* setting in one table, parsed in one place with one error style."""

import ast
import os
import subprocess
import sys

import pytest

import cudaenv
from cudaenv.core import config
from cudaenv.core.errors import UserError
from builders import CHILD_CWD

PACKAGE = os.path.dirname(cudaenv.__file__)
SECONDS = [s["name"] for s in config.settings() if s["type"] == config.SECONDS]


def _modules():
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "data", "shell")]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, PACKAGE).replace(os.sep, "/"), ast.parse(open(path, encoding="utf-8").read())


def test_every_setting_the_code_names_is_in_the_table():
    from builders import docgen

    settings_from_code = docgen().settings_from_code

    table = {s["name"] for s in config.settings()}
    assert set(settings_from_code()) - {"CUDAENV_VERIFY", "CUDAENV_TORCH_PROBE", "CUDAENV_TOOLKIT", "CUDAENV_EDIT_LINES"} <= table
    for row in config.settings():
        assert row["meaning"] and row["type"] in ("seconds", "text", "path", "choice", "driver version", "language", "state", "script"), row


def test_no_module_but_config_reads_a_setting_from_the_environment():
    """``env.get("CUDAENV_X")`` / ``env["CUDAENV_X"]`` outside config.py (switch.py keeps the state it writes itself)."""
    reads = []
    for rel, tree in _modules():
        if rel in ("core/config.py", "toolkit/switch.py") or rel.startswith("_child/"):
            continue
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "getenv") and node.args:
                key = node.args[0]
            elif isinstance(node, ast.Subscript):
                key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("CUDAENV_"):
                reads.append("%s:%d %s" % (rel, node.lineno, key.value))
    assert reads == []


@pytest.mark.parametrize("name", SECONDS)
def test_every_timeout_fails_the_same_way(name):
    for bad in ("abc", "0", "-5", "nan", "inf", "1e400", "9" * 5000):
        with pytest.raises(UserError) as exc:
            config.value({name: bad}, name)
        assert name in exc.value.message and ("not a number of seconds" in exc.value.message or "more than 0" in exc.value.message)
        assert exc.value.hint == "for example %s=10" % name
    assert config.value({name: " 2.5 "}, name) == 2.5
    assert config.value({name: ""}, name) == config.setting(name).default  # empty is unset


def test_defaults_flags_and_choices():
    assert config.value({}, "CUDAENV_TIMEOUT") == 5.0 and config.value({}, "CUDAENV_INDEX_TIMEOUT") == 15.0
    assert config.value({}, "CUDAENV_TORCH_TIMEOUT") is None  # computed: max(timeout, 60)
    assert config.seconds({"CUDAENV_TIMEOUT": "abc"}, "CUDAENV_TIMEOUT", explicit=3.0) == 3.0  # the flag wins
    with pytest.raises(UserError, match="--timeout must be more than 0 seconds"):
        config.seconds({}, "CUDAENV_TIMEOUT", explicit=0.0)
    assert config.value({"CUDAENV_SYSTEM": "windows"}, "CUDAENV_SYSTEM") == "windows"
    with pytest.raises(UserError, match="CUDAENV_SYSTEM=beos is not one of linux, windows, darwin"):
        config.value({"CUDAENV_SYSTEM": "beos"}, "CUDAENV_SYSTEM")
    assert config.value({"CUDAENV_DRIVER_VERSION": " 550.54.15 "}, "CUDAENV_DRIVER_VERSION") == "550.54.15"
    with pytest.raises(KeyError):
        config.value({}, "CUDAENV_NO_SUCH_THING")
    rows = config.settings()
    assert [r["name"] for r in rows][:2] == ["CUDAENV_ROOT", "CUDAENV_TIMEOUT"]
    assert next(r for r in rows if r["name"] == "CUDAENV_TORCH_TIMEOUT")["default"] == "max(timeout, 60)"


def test_a_bad_torch_timeout_is_a_usage_error_not_ignored(cli, tmp_path):
    """It used to be ignored (CUDAENV_TIMEOUT=abc was an error): now both are, the same way, before any probing."""
    for name in ("CUDAENV_TORCH_TIMEOUT", "CUDAENV_TIMEOUT"):
        r = cli("doctor", "--quick", "--root", str(tmp_path), env={"PATH": str(tmp_path), name: "abc"})
        assert r.code == 2 and "%s=abc is not a number of seconds" % name in r.err and "Traceback" not in r.err


def test_a_driver_version_setting_is_checked_and_named():
    """CUDAENV_DRIVER_VERSION took any text (the doctor wrote "version": "abc$(x)"); now it is read by
    version.parse_driver_version, and a wrong one names the variable, not --driver."""
    name = "CUDAENV_DRIVER_VERSION"
    assert config.setting(name).kind == config.DRIVER
    for good in ("550.54.15", "570", " 572.61 ", "32.0.15.6094"):
        assert config.value({name: good}, name) == good.strip()
    for bad in ("abc$(x)", "550.54.15; rm -rf /", "five-fifty", "550..54", "550.54.15.1.2", "12345.1", "9" * 5000):
        with pytest.raises(UserError) as exc:
            config.value({name: bad}, name)
        assert exc.value.message.startswith("%s=" % name) and "is not a driver version" in exc.value.message
        assert "--driver" not in exc.value.message and len(exc.value.message) < 120
        assert exc.value.hint == "for example %s=550.54.15" % name


def test_a_bad_driver_version_stops_doctor_and_recommend_naming_the_variable(cli, tmp_path):
    env = {"PATH": str(tmp_path), "CUDAENV_DRIVER_VERSION": "abc$(x)", "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    for args in (("doctor", "--json"), ("torch", "recommend")):
        r = cli(*args, "--root", str(tmp_path), env=env)
        assert r.code == 2 and "CUDAENV_DRIVER_VERSION=abc$(x) is not a driver version" in r.err, (args, r)
        assert "abc$(x)" not in r.out and "--driver" not in r.err and "Traceback" not in r.err


def test_config_is_cheap_to_import():
    code = "import sys, cudaenv.core.config; print(sorted(m for m in ('json', 'argparse', 'pathlib', 'typing', 'cudaenv.core.errors') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=CHILD_CWD).stdout.strip()
    assert out == "[]"
