"""The shell writers, run in the real shells: quoting is inert, `cudaenv use` switches, replaces, and turns off.

bash, zsh and fish run for real; PowerShell output is checked as text and run where `pwsh` is on PATH.
Toolkits are fake trees (bin/nvcc prints its version) under a fake root given with --root.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders import TOOLS, SHELL_TOOLS, tools
from cudaenv.shells import UnknownShell, detect_shell, get_shell
from cudaenv.toolkit.switch import EnvChange

VENV_BIN = str(Path(sys.executable).parent)
HOSTILE = [
    "plain",
    "with space",
    "it's",
    'dq"x',
    "$(touch pwned)",
    "`touch pwned`",
    "a;touch pwned;b",
    "$HOME ${PATH} $$",
    "back\\slash\\",
    "new\nline",
    "ünïcødé ✓",
    "‘curly’",
    "trailing'",
    "",
]
REAL_SHELLS = [s for s in ("bash", "zsh", "fish") if shutil.which(s)]


def run_shell(shell, script, env, cwd=None, timeout=30):
    argv = {
        "bash": ["bash", "--norc", "--noprofile", "-c", script],
        "zsh": ["zsh", "-f", "-c", script],
        "fish": ["fish", "--no-config", "-c", script],
        "pwsh": ["pwsh", "-NoProfile", "-NonInteractive", "-Command", script],
    }[shell]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    return proc


def base_env(tmp_path, **extra):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": VENV_BIN + ":" + SHELL_TOOLS, "HOME": str(home), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env.update(extra)
    return env


@pytest.mark.parametrize("shell", REAL_SHELLS)
def test_quote_round_trips_every_hostile_value_in_the_real_shell(shell, tmp_path):
    sh = get_shell(shell)
    script = "".join(
        "printf '%%s\\0' %s\n" % sh.quote(v) for v in HOSTILE
    )
    proc = run_shell(shell, script, base_env(tmp_path), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\0")[:-1] == HOSTILE
    assert not list(tmp_path.rglob("pwned"))


@pytest.mark.parametrize("shell", REAL_SHELLS)
def test_export_and_unset_of_hostile_values(shell, tmp_path):
    sh = get_shell(shell)
    value = "/opt/x y/$(touch pwned)/`id`;'\"/ü"
    change = EnvChange((("CUDA_HOME", value), ("LD_LIBRARY_PATH", "/a b:/c$d"), ("GONE", None)))
    code = sh.render(change)
    show = {
        "fish": "printf '%s\\n' \"$CUDA_HOME\"; printf '%s\\n' \"$LD_LIBRARY_PATH\"; set -q GONE; and echo still; env | grep -c '^CUDA_HOME='",
    }.get(shell, "printf '%s\\n' \"$CUDA_HOME\" \"$LD_LIBRARY_PATH\"; echo ${GONE-none}; env | grep -c '^CUDA_HOME='")
    proc = run_shell(shell, code + show, base_env(tmp_path, GONE="1"), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == value
    # fish joins a path variable with spaces in "$X"; the exported value uses colons (checked by the env count)
    assert lines[1] in ("/a b:/c$d", "/a b /c$d")
    assert "still" not in lines
    assert lines[-1] == "1"
    assert not list(tmp_path.rglob("pwned"))


def test_pwsh_text_doubles_every_kind_of_single_quote():
    sh = get_shell("powershell")
    assert sh.name == "pwsh"
    assert sh.quote("it's") == "'it''s'"
    assert sh.quote("‘x’") == "'‘‘x’’'"
    assert sh.quote("$(touch pwned) `n") == "'$(touch pwned) `n'"  # single quotes: no expansion at all
    code = sh.render(EnvChange((("CUDA_HOME", "C:\\a'b"), ("X", None))))
    assert code == "$env:CUDA_HOME = 'C:\\a''b'\nRemove-Item -LiteralPath Env:X -ErrorAction SilentlyContinue\n"


def test_names_are_checked_and_shells_detected():
    with pytest.raises(ValueError):
        get_shell("bash").export("A;rm", "x")
    assert get_shell("/usr/bin/zsh").name == "zsh"
    assert get_shell("-bash").name == "bash"
    assert get_shell("PWSH.EXE").name == "pwsh"
    assert detect_shell("fish", {"SHELL": "/bin/bash"}, "linux").name == "fish"
    assert detect_shell(None, {"CUDAENV_SHELL": "zsh", "SHELL": "/bin/bash"}, "linux").name == "zsh"
    assert detect_shell(None, {"SHELL": "/usr/bin/fish"}, "linux").name == "fish"
    assert detect_shell(None, {}, "windows").name == "pwsh"
    with pytest.raises(UnknownShell):
        detect_shell(None, {}, "linux")
    with pytest.raises(UnknownShell):
        get_shell("tcsh")


# ----------------------------------------------------------------------------- real switching
@pytest.fixture
def toolkits(fake_root):
    fake_root.toolkit("12.1.105")
    fake_root.toolkit("12.4.131")
    fake_root.toolkit("11.8.89", lib="lib")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    return fake_root


def _use(shell, args):
    root_args = " ".join(args)
    if shell == "fish":
        return "cudaenv use %s --shell fish | source\n" % root_args
    if shell == "zsh":
        return 'eval "$(cudaenv use %s --shell zsh)"\n' % root_args
    return "source <(cudaenv use %s --shell bash)\n" % root_args


def _which(shell):
    return "command -s nvcc\n" if shell == "fish" else "command -v nvcc\n"


def _print_env(shell):
    if shell == "fish":
        return "printf 'PATH=%s\\n' (string join : $PATH | string collect); printf 'LD=%s\\n' \"$LD_LIBRARY_PATH\"; set -q CUDA_HOME; and printf 'HOME=%s\\n' $CUDA_HOME; or echo HOME=unset\n"
    return "printf 'PATH=%s\\n' \"$PATH\"; printf 'LD=%s\\n' \"${LD_LIBRARY_PATH-unset}\"; printf 'HOME=%s\\n' \"${CUDA_HOME-unset}\"\n"


def _values(stdout):
    out = {}
    for line in stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


@pytest.mark.parametrize("shell", REAL_SHELLS)
def test_use_switches_replaces_and_turns_off(shell, toolkits, tmp_path):
    r = str(toolkits.path)
    env = base_env(tmp_path)
    script = (
        _use(shell, ["12.1", "--root", r]) + _which(shell) + "nvcc --version\n"
        + _use(shell, ["12.4", "--root", r]) + _use(shell, ["12.4", "--root", r]) + _use(shell, ["11", "--root", r])
        + _which(shell) + "nvcc --version\n" + _print_env(shell)
        + _use(shell, ["--off", "--root", r]) + _print_env(shell)
    )
    proc = run_shell(shell, script, env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert lines[0] == r + "/usr/local/cuda-12.1/bin/nvcc"
    assert "release 12.1, V12.1.105" in out
    assert r + "/usr/local/cuda-11.8/bin/nvcc" in lines
    assert "release 11.8, V11.8.89" in out
    blocks = out.split("PATH=")[1:]
    switched, off = _values("PATH=" + blocks[0]), _values("PATH=" + blocks[1])
    assert switched["PATH"] == r + "/usr/local/cuda-11.8/bin:" + env["PATH"]  # replaced, never accumulated
    assert switched["LD"] == r + "/usr/local/cuda-11.8/lib"
    assert switched["HOME"] == r + "/usr/local/cuda-11.8"
    assert off["PATH"] == env["PATH"]
    assert off["HOME"] == "unset"
    assert off["LD"] in ("unset", "")
    assert "CUDA 12.1.105 at " + r + "/usr/local/cuda-12.1" in proc.stderr


@pytest.mark.parametrize("shell", REAL_SHELLS)
def test_use_removes_the_link_and_old_entries_already_on_path(shell, toolkits, tmp_path):
    r = str(toolkits.path)
    start = r + "/usr/local/cuda/bin:" + r + "/usr/local/cuda-12.4/bin:" + VENV_BIN + ":" + SHELL_TOOLS
    env = base_env(tmp_path, PATH=start, LD_LIBRARY_PATH=r + "/usr/local/cuda/lib64:/opt/keep")
    proc = run_shell(shell, _use(shell, ["system", "--root", r]) + _which(shell) + _print_env(shell), env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    values = _values(proc.stdout)
    assert proc.stdout.splitlines()[0] == r + "/usr/local/cuda-12.4/bin/nvcc"
    assert values["PATH"] == r + "/usr/local/cuda-12.4/bin:" + VENV_BIN + ":" + SHELL_TOOLS
    assert values["LD"] == r + "/usr/local/cuda-12.4/lib64:/opt/keep"


HOSTILE_FOLDERS = [
    ("12.1.105", "cuda-12.1$(touch pwned)"),
    ("12.2.140", "cuda-12.2 `touch pwned`; touch pwned 'x\""),
    ("12.3.107", "cuda-12.3 ${HOME} $$ ünï ✓"),
    ("12.5.82", "cuda-12.5\nnew line"),
]


@pytest.mark.parametrize("shell", REAL_SHELLS)
def test_hostile_folder_names_stay_inert(shell, fake_root, tmp_path):
    for version, name in HOSTILE_FOLDERS:
        fake_root.toolkit(version, name=name)
    r = str(fake_root.path)
    work = tmp_path / "work"
    work.mkdir()
    env = base_env(tmp_path)
    for version, name in HOSTILE_FOLDERS:
        script = _use(shell, [version, "--root", r]) + _use(shell, [version, "--root", r]) + _which(shell) + "nvcc --version\n" + _print_env(shell)
        proc = run_shell(shell, script, env, cwd=str(work))
        assert proc.returncode == 0, (name, proc.stderr)
        folder = r + "/usr/local/" + name
        assert proc.stdout.startswith(folder + "/bin/nvcc\n"), (name, proc.stdout)
        assert "release %s" % version[:4] in proc.stdout
        path_line = proc.stdout.split("PATH=", 1)[1].split("\nLD=", 1)[0]
        assert path_line == folder + "/bin:" + env["PATH"]
    assert not list(tmp_path.rglob("pwned")), "a folder name ran as code"
    assert not (Path.cwd() / "pwned").exists()


def test_code_goes_to_stdout_messages_to_stderr(cli, toolkits):
    ok = cli("use", "12.1", "--shell", "bash", "--root", str(toolkits.path), env={"PATH": TOOLS})
    assert ok.code == 0
    assert all(line.startswith(("export ", "unset ", "hash ")) for line in ok.out.splitlines())
    assert ok.err.startswith("CUDA 12.1.105 at ")
    bad = cli("use", "12.3", "--shell", "bash", "--root", str(toolkits.path), env={"PATH": TOOLS})
    assert bad.code == 1 and bad.out == ""
    assert "no installed CUDA toolkit matches 12.3" in bad.err
    for version in ("12.1.105", "12.4.131", "11.8.89"):
        assert version in bad.err
    assert "/usr/local/cuda-12.4" in bad.err


@pytest.mark.skipif(not shutil.which("pwsh"), reason="pwsh is not installed here")
def test_pwsh_switches_for_real(toolkits, tmp_path):
    r = str(toolkits.path)
    env = base_env(tmp_path)
    script = (
        "cudaenv use 12.1 --shell pwsh --root '%s' | Out-String | Invoke-Expression; "
        "(Get-Command nvcc).Source; $env:CUDA_HOME; "
        "cudaenv use --off --shell pwsh --root '%s' | Out-String | Invoke-Expression; "
        "if ($env:CUDA_HOME) { 'still' } else { 'unset' }" % (r, r)
    )
    proc = run_shell("pwsh", script, env, cwd=str(tmp_path), timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == r + "/usr/local/cuda-12.1/bin/nvcc"
    assert lines[1] == r + "/usr/local/cuda-12.1"
    assert lines[2] == "unset"


# ------------------------------------------------------------------ fish launched from a bash login (issue 13)
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
