"""Issue 13 for the toolkit commands: fish behind SHELL=/bin/bash, and an LD_LIBRARY_PATH naming a toolkit that is gone."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders import TOOLS, tools
from cudaenv.shells import detect_shell

VENV_BIN = str(Path(sys.executable).parent)


# ------------------------------------------------------------------ fish launched from a bash login
def test_detect_fish_from_the_parent_or_fish_version():
    bash_login = {"SHELL": "/bin/bash"}
    assert detect_shell(None, bash_login, "linux").name == "bash"
    assert detect_shell(None, bash_login, "linux", parent="fish").name == "fish"
    assert detect_shell(None, dict(bash_login, FISH_VERSION="3.7.1"), "linux").name == "fish"
    assert detect_shell(None, bash_login, "linux", parent="bash").name == "bash"
    assert detect_shell("zsh", bash_login, "linux", parent="fish").name == "zsh"  # --shell wins
    assert detect_shell(None, dict(bash_login, CUDAENV_SHELL="bash"), "linux", parent="fish").name == "bash"


@pytest.mark.skipif(not shutil.which("fish"), reason="no fish")
def test_fish_with_shell_bash_gets_fish_code(fake_root, tmp_path):
    fake_root.toolkit("12.4.131")
    env = {"PATH": "%s:%s" % (VENV_BIN, tools("fish", "env")), "HOME": str(tmp_path), "SHELL": "/bin/bash",
           "CUDAENV_ROOT": str(fake_root.path), "LANG": "C.UTF-8"}
    proc = subprocess.run(["fish", "--no-config", "-c", "cudaenv use 12.4 | source; and echo CUDA_HOME=$CUDA_HOME"],
                          capture_output=True, text=True, env=env, timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "CUDA_HOME=%s/usr/local/cuda-12.4" % fake_root.path in proc.stdout, proc.stderr


# ------------------------------------------------------------------ LD_LIBRARY_PATH naming a removed toolkit
def _doctor(cli, fake_root, ld):
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "LD_LIBRARY_PATH": ld}
    res = cli("doctor", "--quick", "--json", env=env)
    assert res.code in (0, 1), res
    return res.json()


def test_ld_library_path_of_a_removed_toolkit_is_a_finding(cli, fake_root):
    fake_root.toolkit("12.4.131")
    data = _doctor(cli, fake_root, "/usr/local/cuda-11.8/lib64:/opt/mylibs")
    found = [f for f in data["findings"] if f["id"] == "ld-library-path-missing-toolkit"]
    assert len(found) == 1, [f["id"] for f in data["findings"]]
    f = found[0]
    assert "/usr/local/cuda-11.8" in f["title"] and f["severity"] == "warning"
    assert f["fix"][0] == "export LD_LIBRARY_PATH=/opt/mylibs"


def test_ld_library_path_of_an_installed_toolkit_is_no_such_finding(cli, fake_root):
    fake_root.toolkit("12.4.131")
    for ld in ("/usr/local/cuda-12.4/lib64", "/opt/mylibs:/usr/lib/x86_64-linux-gnu", ""):
        ids = [f["id"] for f in _doctor(cli, fake_root, ld)["findings"]]
        assert "ld-library-path-missing-toolkit" not in ids, (ld, ids)


def test_the_text_report_shows_it_on_the_ld_library_path_line(cli, fake_root):
    fake_root.toolkit("12.4.131")
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"}
    res = cli("doctor", "--quick", env=env)
    assert "ld-library-path-missing-toolkit" in res.out or "not installed here" in res.out, res.out
