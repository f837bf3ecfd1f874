"""`cudaenv use` end to end: errors, .cuda-version, --local, --write scripts, CUDAENV_TOOLKITS, the real toolkit."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders import SHELL_TOOLS

VENV_BIN = str(Path(sys.executable).parent)
CUDAENV = str(Path(sys.executable).parent / "cudaenv")


def env_for(tmp_path, **extra):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": VENV_BIN + ":" + SHELL_TOOLS, "HOME": str(home), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def run(argv, env, cwd=None, timeout=30):
    return subprocess.run([CUDAENV] + list(argv), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def bash(script, env, cwd=None):
    return subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env, cwd=cwd, timeout=30)


@pytest.fixture
def root(fake_root):
    fake_root.toolkit("12.1.105")
    fake_root.toolkit("12.1.66", where="opt", name="cuda-12.1-old")
    fake_root.toolkit("12.4.131")
    fake_root.toolkit("11.8.89")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    return fake_root


def test_ambiguous_versions_print_nothing_and_list_the_candidates(fake_root, tmp_path):
    fake_root.toolkit("12.1.105")
    fake_root.toolkit("12.1.105", where="opt")
    proc = run(["use", "12.1", "--shell", "bash", "--root", str(fake_root.path)], env_for(tmp_path))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "ambiguous" in proc.stderr
    assert "/usr/local/cuda-12.1" in proc.stderr and "/opt/cuda-12.1" in proc.stderr


def test_no_toolkits_at_all_is_an_error_with_nothing_on_stdout(fake_root, tmp_path):
    proc = run(["use", "12", "--shell", "zsh", "--root", str(fake_root.path)], env_for(tmp_path))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert "no CUDA toolkits found" in proc.stderr


def test_shell_comes_from_the_environment(root, tmp_path):
    r = str(root.path)
    fish = run(["use", "12.4", "--root", r], env_for(tmp_path, SHELL="/usr/bin/fish"))
    assert fish.stdout.startswith("set -gx CUDA_HOME ")
    zsh = run(["use", "12.4", "--root", r], env_for(tmp_path, SHELL="/bin/bash", CUDAENV_SHELL="pwsh"))
    assert zsh.stdout.startswith("$env:CUDA_HOME = ")
    none = run(["use", "12.4", "--root", r], env_for(tmp_path))
    assert none.returncode == 2 and none.stdout == "" and "--shell" in none.stderr


def test_path_spec_and_relative_path(root, tmp_path):
    r = str(root.path)
    env = env_for(tmp_path)
    proc = run(["use", r + "/opt/cuda-12.1-old", "--shell", "bash", "--root", r], env)
    assert proc.returncode == 0, proc.stderr
    assert "export CUDA_HOME='%s/opt/cuda-12.1-old'" % r in proc.stdout
    proc = run(["use", "./cuda-12.1-old", "--shell", "bash", "--root", r], env, cwd=r + "/opt")
    assert proc.returncode == 0, proc.stderr
    assert "CUDA 12.1.66 at %s/opt/cuda-12.1-old" % r in proc.stderr


def test_local_writes_cuda_version_and_plain_use_reads_it_upwards(root, tmp_path):
    r = str(root.path)
    project = tmp_path / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    env = env_for(tmp_path)
    proc = run(["use", "--local", "11.8", "--shell", "bash", "--root", r], env, cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    assert (project / ".cuda-version").read_text() == "11.8\n"
    assert "export CUDA_HOME='%s/usr/local/cuda-11.8'" % r in proc.stdout
    proc = run(["use", "--shell", "bash", "--root", r], env, cwd=str(deep))
    assert proc.returncode == 0, proc.stderr
    assert "CUDA 11.8.89 at" in proc.stderr
    # nothing to read: an error, nothing on stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run(["use", "--shell", "bash", "--root", r], env, cwd=str(elsewhere))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert ".cuda-version" in proc.stderr


def test_local_refuses_an_unknown_version_and_writes_nothing(root, tmp_path):
    proc = run(["use", "--local", "10.2", "--shell", "bash", "--root", str(root.path)], env_for(tmp_path), cwd=str(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ""
    assert not (tmp_path / ".cuda-version").exists()


def test_cuda_toolkits_variable_with_a_hostile_folder_no_root(fake_root, tmp_path):
    # No --root: the probe also sees this machine's toolkits; the fake ones come from CUDAENV_TOOLKITS.
    folder = fake_root.toolkit("12.7.1", where="sw", name="cuda-12.7$(touch pwned)")
    work = tmp_path / "work"
    work.mkdir()
    env = env_for(tmp_path, CUDAENV_TOOLKITS=str(fake_root.path / "sw"))
    script = 'eval "$(cudaenv use 12.7 --shell bash)"; command -v nvcc; nvcc --version; printf "%s\\n" "$CUDA_HOME"'
    proc = bash(script, env, cwd=str(work))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == str(folder) + "/bin/nvcc"
    assert "release 12.7, V12.7.1" in proc.stdout
    assert lines[-1] == str(folder)
    assert not list(tmp_path.rglob("pwned"))


def test_write_makes_a_standalone_script_bash_runs(root, tmp_path):
    r = str(root.path)
    script = tmp_path / "switch_cuda.sh"
    env = env_for(tmp_path)
    proc = run(["use", "12.1.105", "--write", str(script), "--root", r], env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n# A standalone CUDA toolkit switch script")
    # cudaenv must not be needed: run it with a PATH without the venv
    plain = {"PATH": r + "/usr/local/cuda-11.8/bin:" + r + "/usr/local/cuda/bin:" + SHELL_TOOLS, "HOME": env["HOME"],
             "LD_LIBRARY_PATH": r + "/usr/local/cuda-11.8/lib64:/opt/keep"}
    body = 'source "$0"; source "$0"; command -v nvcc; nvcc --version; printf "P=%s\\nL=%s\\nH=%s\\n" "$PATH" "$LD_LIBRARY_PATH" "$CUDA_HOME"'
    shells = [["bash", "--norc", "--noprofile", "-c", body]] + ([["zsh", "-f", "-c", body]] if shutil.which("zsh") else [])
    for argv in shells:  # the script says `source FILE` works in bash and zsh
        sourced = subprocess.run(argv + [str(script)], capture_output=True, text=True, env=plain, timeout=30)
        assert sourced.returncode == 0, (argv[0], sourced.stderr)
        out = sourced.stdout
        assert out.splitlines()[0] == r + "/usr/local/cuda-12.1/bin/nvcc"
        assert "release 12.1, V12.1.105" in out
        assert "P=%s/usr/local/cuda-12.1/bin:%s\n" % (r, SHELL_TOOLS) in out
        assert "L=%s/usr/local/cuda-12.1/lib64:/opt/keep\n" % r in out
        assert "H=%s/usr/local/cuda-12.1\n" % r in out
        assert sourced.stderr.count("CUDA 12.1.105 at ") == 2  # sourced, not run: no hint to source it
    ran = subprocess.run(["bash", str(script), "nvcc", "--version"], capture_output=True, text=True, env=plain, timeout=30)
    assert ran.returncode == 0 and "release 12.1" in ran.stdout


def test_write_script_with_a_hostile_toolkit_folder(fake_root, tmp_path):
    folder = fake_root.toolkit("12.2.140", name="cuda-12.2 `touch pwned`; $(touch pwned) 'q\"")
    script = tmp_path / "s.sh"
    proc = run(["use", "12.2", "--write", str(script), "--root", str(fake_root.path)], env_for(tmp_path))
    assert proc.returncode == 0, proc.stderr
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run(
        ["bash", "--norc", "-c", 'source "$0"; source "$0"; command -v nvcc; printf "%s\\n" "$PATH"', str(script)],
        capture_output=True, text=True, env={"PATH": SHELL_TOOLS}, cwd=str(work), timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [str(folder) + "/bin/nvcc", str(folder) + "/bin:" + SHELL_TOOLS]
    assert not list(tmp_path.rglob("pwned"))


def test_complete_lists_versions(root, tmp_path):
    proc = run(["use", "--complete", "--root", str(root.path)], env_for(tmp_path))
    words = proc.stdout.split()
    assert words[0] == "12.4" and "12.1.105" in words and "11.8" in words and words[-1] == "system"


def test_off_with_a_version_is_refused(root, tmp_path):
    proc = run(["use", "--off", "12.1", "--shell", "bash", "--root", str(root.path)], env_for(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ""


@pytest.mark.real_machine
@pytest.mark.skipif(not os.path.isdir("/usr/local/cuda-13.0"), reason="no real CUDA 13.0 toolkit here")
def test_real_toolkit_13_0_in_bash(tmp_path):
    env = env_for(tmp_path, PATH=VENV_BIN + ":/usr/local/bin:/usr/bin:/bin")
    script = 'source <(cudaenv use 13.0 --shell bash); command -v nvcc; nvcc --version; printf "%s\\n" "$CUDA_HOME" "$LD_LIBRARY_PATH"'
    proc = bash(script, env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "/usr/local/cuda-13.0/bin/nvcc"
    assert "release 13.0" in proc.stdout
    assert lines[-2] == "/usr/local/cuda-13.0"
    assert lines[-1].startswith("/usr/local/cuda-13.0/lib")
    assert "CUDA 13.0" in proc.stderr


def test_cuda_version_with_a_relative_path_counts_from_its_folder(root, tmp_path):
    r = str(root.path)
    project = Path(r) / "opt" / "proj"
    (project / "src").mkdir(parents=True)
    (project / ".cuda-version").write_text("# pinned\n../cuda-12.1-old\n")
    proc = run(["use", "--shell", "bash", "--root", r], env_for(tmp_path), cwd=str(project / "src"))
    assert proc.returncode == 0, proc.stderr
    assert "CUDA 12.1.66 at %s/opt/cuda-12.1-old" % r in proc.stderr
