"""`cudaenv init SHELL`: the hook's function and the .cuda-version auto-switch, in the real shells (a pty where needed)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders import TOOLS, SHELL_TOOLS
from cudaenv.shells import get_shell

VENV_BIN = str(Path(sys.executable).parent)
CUDAENV = str(Path(sys.executable).parent / "cudaenv")
REAL_SHELLS = [s for s in ("bash", "zsh", "fish") if shutil.which(s)]


@pytest.fixture
def world(fake_root, tmp_path):
    """Two fake toolkits, a project with .cuda-version (12.1), a plain folder, and a PATH with a counting cudaenv."""
    fake_root.toolkit("12.1.105")
    fake_root.toolkit("12.4.131")
    project = tmp_path / "proj"
    (project / "sub" / "deeper").mkdir(parents=True)
    (project / ".cuda-version").write_text("# the toolkit this project builds with\n12.1\n")
    (tmp_path / "out").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    wrap = tmp_path / "wrap"
    wrap.mkdir()
    log = tmp_path / "calls.log"
    (wrap / "cudaenv").write_text('#!/bin/sh\necho "$*" >> %s\nexec %s "$@"\n' % (log, CUDAENV))
    (wrap / "cudaenv").chmod(0o755)
    env = {
        "PATH": "%s:%s:%s" % (wrap, VENV_BIN, SHELL_TOOLS),
        "HOME": str(home),
        "CUDAENV_ROOT": str(fake_root.path),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }

    class World:
        pass

    w = World()
    w.root, w.r, w.tmp, w.env, w.log, w.project = fake_root, str(fake_root.path), tmp_path, env, log, project
    w.calls = lambda: log.read_text().splitlines() if log.exists() else []
    return w


def hook(shell_name, env=None):
    proc = subprocess.run([CUDAENV, "init", shell_name], capture_output=True, text=True, env=env or {"PATH": SHELL_TOOLS}, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name", ["bash", "zsh", "fish", "pwsh"])
def test_hook_text_is_filled_in(name):
    text = hook(name)
    assert "__CUDAENV_" not in text
    assert "doctor list use link init" in text
    assert "use --auto --quiet --shell %s" % name in text
    assert {"bash": "PROMPT_COMMAND", "zsh": "add-zsh-hook chpwd", "fish": "--on-variable PWD", "pwsh": "function global:prompt"}[name] in text


@pytest.mark.parametrize("shell", REAL_SHELLS)
def test_hook_parses(shell):
    flag = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}[shell]
    proc = subprocess.run(flag, input=hook(shell), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


def test_bash_prompt_command_by_hand(world):
    script = r"""
eval "$(cudaenv init bash)"
eval "$(cudaenv init bash)"   # loading twice adds the hook once
printf 'PC=%s\n' "$PROMPT_COMMAND"
cudaenv use 12.4; printf 'A=%s\n' "$CUDA_HOME"
eval "$PROMPT_COMMAND"
cd proj/sub; eval "$PROMPT_COMMAND"; printf 'B=%s\n' "$CUDA_HOME"; nvcc --version | grep release
cd deeper; eval "$PROMPT_COMMAND"; eval "$PROMPT_COMMAND"; eval "$PROMPT_COMMAND"
cd ../../../out; eval "$PROMPT_COMMAND"; printf 'C=%s\n' "$CUDA_HOME"
eval "$PROMPT_COMMAND"; eval "$PROMPT_COMMAND"
cudaenv use --off; printf 'D=%s\n' "${CUDA_HOME-unset}"
cudaenv --version
"""
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=world.env, cwd=str(world.tmp), timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    r = world.r
    assert "PC=_cudaenv_hook\n" in out
    assert "A=%s/usr/local/cuda-12.4\n" % r in out
    assert "B=%s/usr/local/cuda-12.1\n" % r in out
    assert "release 12.1" in out
    assert "C=%s/usr/local/cuda-12.4\n" % r in out  # back to what was active before the project
    assert "D=unset\n" in out
    assert "cudaenv 0.1.0" in out
    calls = world.calls()
    # the hook ran the program only when crossing into or out of the project; never on an unchanged prompt
    assert [c for c in calls if "--auto" in c] == ["use --auto --quiet --shell bash"] * 2  # into proj, out of it
    assert "use --shell bash 12.4" in calls and "use --shell bash --off" in calls and "--version" in calls


def test_bash_hook_is_fast_when_nothing_changed(world):
    script = 'eval "$(cudaenv init bash)"; cd proj; _cudaenv_hook; s=$(date +%s%N); for i in $(seq 200); do _cudaenv_hook; done; e=$(date +%s%N); echo $(( (e - s) / 200000 ))'
    proc = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, env=world.env, cwd=str(world.tmp), timeout=60)
    assert proc.returncode == 0, proc.stderr
    per_call_us = int(proc.stdout.split()[-1]) * 1000 // 1000
    assert per_call_us < 5000  # microseconds; measured ~10-20 us here


def _interactive(world, argv, prompt, env_extra=None):
    pexpect = pytest.importorskip("pexpect")
    env = dict(world.env)
    env.update(env_extra or {})
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(world.tmp / "out"), encoding="utf-8", timeout=30, dimensions=(40, 200))
    child.expect_exact(prompt)
    return child


def _ask(child, prompt, shell, var="CUDA_HOME"):
    """Print a variable between markers; the typed line holds `$`, the printed one never does."""
    expr = "$%s" % var
    child.sendline('printf "V=<%%s>\\n" "%s"' % expr)
    child.expect(r"V=<([^>$%\r\n]*)>")
    value = child.match.group(1)
    child.expect_exact(prompt)
    return value


def _drive(world, child, prompt, shell):
    r = world.r
    try:
        assert _ask(child, prompt, shell) == ""
        child.sendline("cd ../proj/sub")
        child.expect_exact(prompt)
        assert _ask(child, prompt, shell) == r + "/usr/local/cuda-12.1"
        child.sendline("nvcc --version")
        child.expect(r"release 12\.1, V12\.1\.105")
        child.expect_exact(prompt)
        child.sendline("cd deeper")
        child.expect_exact(prompt)
        child.sendline("cd ../../../out")
        child.expect_exact(prompt)
        assert _ask(child, prompt, shell) == ""  # switched back (nothing was active before)
        child.sendline("cudaenv use 12.4")
        child.expect_exact(prompt)
        assert _ask(child, prompt, shell) == r + "/usr/local/cuda-12.4"
        child.sendline("cd ../proj")
        child.expect_exact(prompt)
        assert _ask(child, prompt, shell) == r + "/usr/local/cuda-12.1"
        child.sendline("cd ..")
        child.expect_exact(prompt)
        assert _ask(child, prompt, shell) == r + "/usr/local/cuda-12.4"
        child.sendline("cudaenv use --off")
        child.expect_exact(prompt)
        assert _ask(child, prompt, shell) == ""
        child.sendline("exit")
        child.expect(pytest.importorskip("pexpect").EOF)
    finally:
        child.close(force=True)
    auto = [c for c in world.calls() if "--auto" in c]
    # start (none) + into proj + out + into proj + out: `cd deeper` and every unchanged prompt run nothing
    assert len(auto) <= 5, auto
    assert all(c == "use --auto --quiet --shell %s" % shell for c in auto)


@pytest.mark.skipif(not shutil.which("bash"), reason="no bash")
def test_bash_interactive_auto_switch(world):
    rc = world.tmp / "bashrc"
    rc.write_text("PS1='BP> '\neval \"$(cudaenv init bash)\"\n")
    child = _interactive(world, ["bash", "--noprofile", "--rcfile", str(rc), "-i"], "BP> ")
    _drive(world, child, "BP> ", "bash")


@pytest.mark.skipif(not shutil.which("zsh"), reason="no zsh")
def test_zsh_interactive_auto_switch(world):
    zdot = world.tmp / "zdot"
    zdot.mkdir()
    (zdot / ".zshrc").write_text("PS1='ZP> '\nunsetopt BEEP\neval \"$(cudaenv init zsh)\"\n")
    child = _interactive(world, ["zsh", "-i"], "ZP> ", {"ZDOTDIR": str(zdot)})
    _drive(world, child, "ZP> ", "zsh")


@pytest.mark.skipif(not shutil.which("fish"), reason="no fish")
def test_fish_interactive_auto_switch(world):
    conf = Path(world.env["XDG_CONFIG_HOME"]) / "fish"
    conf.mkdir(parents=True)
    (conf / "config.fish").write_text(
        "set -g fish_greeting ''\nfunction fish_prompt; echo -n 'FP> '; end\ncudaenv init fish | source\n"
    )
    child = _interactive(world, ["fish", "-i"], "FP> ")
    _drive(world, child, "FP> ", "fish")


@pytest.mark.skipif(not shutil.which("pwsh"), reason="pwsh is not installed here")
def test_pwsh_hook_for_real(world):
    script = (
        "(& cudaenv init pwsh) -join \"`n\" | Invoke-Expression; cudaenv use 12.4; $env:CUDA_HOME; "
        "Set-Location ../proj; _cudaenv_hook; $env:CUDA_HOME; Set-Location ../out; _cudaenv_hook; $env:CUDA_HOME"
    )
    proc = subprocess.run(["pwsh", "-NoProfile", "-NonInteractive", "-Command", script], capture_output=True, text=True,
                          env=world.env, cwd=str(world.tmp / "out"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-3:] == [world.r + "/usr/local/cuda-12.4", world.r + "/usr/local/cuda-12.1", world.r + "/usr/local/cuda-12.4"]


# ------------------------------------------------------------------------------------ --install
@pytest.mark.parametrize("shell,rc", [("bash", ".bashrc"), ("zsh", ".zshrc"), ("fish", ".config/fish/config.fish"),
                                      ("pwsh", ".config/powershell/Microsoft.PowerShell_profile.ps1")])
def test_install_once_with_a_backup(shell, rc, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": TOOLS, "HOME": str(home)}
    target = home / rc
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("# my settings\nalias ll='ls -l'")  # no trailing newline
    target.chmod(0o600)
    first = subprocess.run([CUDAENV, "init", shell, "--install"], capture_output=True, text=True, env=env, timeout=30)
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""
    text = target.read_text()
    assert text.startswith("# my settings\nalias ll='ls -l'\n\n# >>> cudaenv init >>>\n")
    assert text.count("# >>> cudaenv init >>>") == 1 and text.rstrip().endswith("# <<< cudaenv init <<<")
    assert "cudaenv init %s" % shell in text
    backup = Path(str(target) + ".cudaenv-backup")
    assert backup.read_text() == "# my settings\nalias ll='ls -l'"
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    second = subprocess.run([CUDAENV, "init", shell, "--install"], capture_output=True, text=True, env=env, timeout=30)
    assert second.returncode == 0 and "already" in second.stderr
    assert target.read_text() == text
    assert sorted(p.name for p in target.parent.iterdir() if "cudaenv" in p.name) == [target.name + ".cudaenv-backup"]


def test_install_creates_a_missing_rc_and_follows_a_linked_one(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": TOOLS, "HOME": str(home), "ZDOTDIR": str(tmp_path / "zdot")}
    proc = subprocess.run([CUDAENV, "init", "zsh", "--install"], capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    made = tmp_path / "zdot" / ".zshrc"
    assert made.read_text().startswith("# >>> cudaenv init >>>\n")
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "bashrc").write_text("export X=1\n")
    os.symlink(str(dotfiles / "bashrc"), str(home / ".bashrc"))
    proc = subprocess.run([CUDAENV, "init", "bash", "--install"], capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert (home / ".bashrc").is_symlink()
    assert "cudaenv init bash" in (dotfiles / "bashrc").read_text()


def test_installed_block_loads_the_hook_in_bash(tmp_path, world):
    env = dict(world.env)
    subprocess.run([CUDAENV, "init", "bash", "--install"], check=True, capture_output=True, env=env, timeout=30)
    rc = Path(env["HOME"]) / ".bashrc"
    proc = subprocess.run(["bash", "--norc", "-c", 'source "$0"; type -t cudaenv; cudaenv use 12.4; printf "%s\\n" "$CUDA_HOME"', str(rc)],
                          capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["function", world.r + "/usr/local/cuda-12.4"]


def test_init_unknown_shell_is_a_user_error(cli):
    res = cli("init", "tcsh")
    assert res.code == 2 and res.out == "" and "tcsh" in res.err


def test_bash_completion_of_subcommands_and_versions(world):
    script = (
        'eval "$(cudaenv init bash)"\n'
        'COMP_WORDS=(cudaenv li); COMP_CWORD=1; _cudaenv_complete; printf "S=%s\\n" "${COMPREPLY[@]}"\n'
        'COMP_WORDS=(cudaenv use 12); COMP_CWORD=2; _cudaenv_complete; printf "V=%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, env=world.env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [x for x in lines if x.startswith("S=")] == ["S=list", "S=link"]
    assert {x for x in lines if x.startswith("V=")} == {"V=12.4", "V=12.4.131", "V=12.1", "V=12.1.105"}


@pytest.mark.skipif(not shutil.which("fish"), reason="no fish")
def test_fish_completion_of_subcommands_and_versions(world):
    script = "cudaenv init fish | source; complete -C 'cudaenv ver'; complete -C 'cudaenv use 12.'"
    proc = subprocess.run(["fish", "--no-config", "-c", script], capture_output=True, text=True, env=world.env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    words = [line.split("\t")[0] for line in proc.stdout.splitlines()]
    assert "verify" in words
    assert {"12.4", "12.4.131", "12.1", "12.1.105"} <= set(words)


@pytest.mark.skipif(not shutil.which("zsh"), reason="no zsh")
@pytest.mark.parametrize("order", ["compinit-first", "hook-first"])
def test_zsh_tab_completion_in_a_pty(world, order):
    """`cudaenv us<TAB>` and `cudaenv use 12.4.<TAB>` complete in a real zsh, whether compinit runs before or after the hook."""
    zdot = world.tmp / "zdot"
    zdot.mkdir()
    compinit = "autoload -Uz compinit && compinit -u -D\n"
    hook_line = 'eval "$(cudaenv init zsh)"\n'
    body = compinit + hook_line if order == "compinit-first" else hook_line + compinit
    (zdot / ".zshrc").write_text("PS1='ZP> '\nunsetopt BEEP\n" + body)
    child = _interactive(world, ["zsh", "-i"], "ZP> ", {"ZDOTDIR": str(zdot)})
    try:
        # the list of versions: two TABs after `use 1` show every installed version
        child.send("cudaenv use 1\t\t")
        child.expect_exact("12.1.105")  # zsh lists them sorted: 12.1 12.1.105 12.4 12.4.131
        child.expect_exact("12.4.131")
        child.expect_exact("ZP> cudaenv use 12.")  # the line redrawn below the list, the common prefix filled in
        child.send("\x15")  # kill the line
        # completing both words, then Enter, runs `cudaenv use 12.4.131` through the hook's function
        child.send("cudaenv us\t")
        child.send("12.4.\t")
        child.send("\r")
        child.expect_exact("CUDA 12.4.131 at ")
        child.expect_exact("ZP> ")
        assert _ask(child, "ZP> ", "zsh") == world.r + "/usr/local/cuda-12.4"
        # the one-shot registration removed itself from precmd after the first prompt
        assert "_cudaenv_compdef" not in _ask(child, "ZP> ", "zsh", var="{precmd_functions[*]}")
    finally:
        child.close(force=True)
    assert "use --shell zsh 12.4.131" in world.calls()


def test_pwsh_completer_is_the_native_form_for_a_parameterless_function():
    """PowerShell completes a function's unbound arguments with the completer registered for its name in native
    mode; that completer gets ($wordToComplete, $commandAst, $cursorPosition). A parameter-style script block
    (five arguments) or a param() block on the function would leave `cudaenv use <TAB>` without versions."""
    import re

    text = hook("pwsh")
    function = re.search(r"function global:cudaenv \{\n(.*?)\n\}\n", text, re.S).group(1)
    assert "param(" not in function and "$args" in function  # no parameters: every argument stays unbound
    reg = re.search(r"Register-ArgumentCompleter (.*?) -ScriptBlock \{\n\s*param\(([^)]*)\)", text)
    assert reg, text
    assert set(reg.group(1).split()) == {"-Native", "-CommandName", "cudaenv"}
    assert [p.strip() for p in reg.group(2).split(",")] == ["$wordToComplete", "$commandAst", "$cursorPosition"]
    assert "use --complete" in text and "$global:_CUDAENV_COMMANDS -split ' '" in text


@pytest.mark.skipif(not shutil.which("pwsh"), reason="pwsh is not installed here")
def test_pwsh_completion_for_real(world):
    script = (
        "(& cudaenv init pwsh) -join \"`n\" | Invoke-Expression; "
        "(TabExpansion2 -inputScript 'cudaenv us' -cursorColumn 10).CompletionMatches.CompletionText; "
        "(TabExpansion2 -inputScript 'cudaenv use 12.4' -cursorColumn 16).CompletionMatches.CompletionText"
    )
    proc = subprocess.run(["pwsh", "-NoProfile", "-NonInteractive", "-Command", script], capture_output=True, text=True,
                          env=world.env, cwd=str(world.tmp / "out"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["use", "12.4", "12.4.131"]


HOSTILE_PROJECT = "p $(touch pwned) `touch pwned`; touch pwned 'q\" ${HOME} ünï"


@pytest.mark.parametrize("shell", REAL_SHELLS)
def test_auto_switch_in_a_hostile_project_folder_is_inert(world, shell):
    """A project folder named like shell code: the hook enters and leaves it, and nothing runs."""
    proj = world.tmp / HOSTILE_PROJECT
    proj.mkdir()
    (proj / ".cuda-version").write_text("12.1\n")
    enter = {"bash": 'eval "$PROMPT_COMMAND"', "zsh": ":", "fish": "true"}[shell]
    show = {"bash": 'printf "H=%s\\n" "${CUDA_HOME-}"', "zsh": 'printf "H=%s\\n" "${CUDA_HOME-}"',
            "fish": 'printf "H=%s\\n" "$CUDA_HOME"'}[shell]
    load = {"bash": 'eval "$(cudaenv init bash)"', "zsh": 'eval "$(cudaenv init zsh)"', "fish": "cudaenv init fish | source"}[shell]
    script = "\n".join([load, "cd %s" % get_shell(shell).quote(str(proj)), enter, show, "cd ..", enter, show, ""])
    argv = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"], "fish": ["fish", "--no-config", "-c"]}[shell]
    proc = subprocess.run(argv + [script], capture_output=True, text=True, env=world.env, cwd=str(world.tmp / "out"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    homes = [line[2:] for line in proc.stdout.splitlines() if line.startswith("H=")]
    assert homes == [world.r + "/usr/local/cuda-12.1", ""], proc.stdout + proc.stderr
    assert not list(world.tmp.rglob("pwned")), "a folder name ran as code"
    auto = [c for c in world.calls() if "--auto" in c]
    assert len(auto) == 2, auto  # into and out of the project; loading the hook outside a project runs nothing


def test_bash_local_pins_the_project_and_leaving_switches_back(world):
    script = r"""
eval "$(cudaenv init bash)"
cudaenv use 12.4; eval "$PROMPT_COMMAND"
mkdir pinned; cd pinned; eval "$PROMPT_COMMAND"
cudaenv use --local 12.1; eval "$PROMPT_COMMAND"; printf 'IN=%s\n' "$CUDA_HOME"; cat .cuda-version
cd ..; eval "$PROMPT_COMMAND"; printf 'OUT=%s\n' "$CUDA_HOME"
cd pinned; eval "$PROMPT_COMMAND"; printf 'AGAIN=%s\n' "$CUDA_HOME"
"""
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=world.env,
                          cwd=str(world.tmp / "out"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    r = world.r
    assert proc.stdout.splitlines() == ["IN=%s/usr/local/cuda-12.1" % r, "12.1", "OUT=%s/usr/local/cuda-12.4" % r,
                                        "AGAIN=%s/usr/local/cuda-12.1" % r]


def test_install_keeps_an_older_backup_and_leaves_no_temp_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    rc = home / ".bashrc"
    rc.write_text("export A=1\n")
    old_backup = home / ".bashrc.cudaenv-backup"
    old_backup.write_text("an older backup\n")
    proc = subprocess.run([CUDAENV, "init", "bash", "--install"], capture_output=True, text=True,
                          env={"PATH": TOOLS, "HOME": str(home)}, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert old_backup.read_text() == "an older backup\n"  # never overwritten
    stamped = [p for p in home.iterdir() if p.name.startswith(".bashrc.cudaenv-backup-")]
    assert len(stamped) == 1 and stamped[0].read_text() == "export A=1\n"
    assert stamped[0].name in proc.stderr
    assert not [p for p in home.iterdir() if "cudaenv-tmp" in p.name]
    assert rc.read_text().startswith("export A=1\n\n# >>> cudaenv init >>>\n")


# ------------------------------------------------- issue 12: completion never runs what a candidate holds
def _complete_in_bash(env, cwd, cur):
    script = (
        'eval "$(cudaenv init bash)"\n'
        'COMP_WORDS=(cudaenv use "$1"); COMP_CWORD=2; _cudaenv_complete; printf "V=%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", cur], capture_output=True, text=True,
                          env=env, timeout=30, cwd=str(cwd))
    assert proc.returncode == 0, proc.stderr
    return [x[2:] for x in proc.stdout.splitlines() if x.startswith("V=")]


def test_bash_completion_never_expands_a_hostile_version_json_or_folder_name(world):
    pwned = world.tmp / "PWNED"
    hostile = world.root.toolkit("12.9.1")
    (hostile / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4$(touch %s)" % pwned}}))
    (hostile / "include" / "cuda.h").unlink()  # nothing else tells its version
    (hostile / "bin" / "nvcc").unlink()
    named = world.root.toolkit("12.6.1", name="cuda-$(touch PWNED)`touch PWNED`")  # run in out/, it would make out/PWNED
    assert named.is_dir()
    words = _complete_in_bash(world.env, world.tmp / "out", "")
    assert not pwned.exists() and not (world.tmp / "out" / "PWNED").exists()
    assert set(words) == {"12.4", "12.4.131", "12.1", "12.1.105", "12.6", "12.6.1"}


def test_bash_completion_takes_candidates_literally(world):
    """Even a candidate list holding shell code, backticks and a glob is matched and offered as plain text."""
    pwned = world.tmp / "PWNED"
    fake = world.tmp / "fakebin"
    fake.mkdir()
    words = ["12.4$(touch %s)" % pwned, "`touch %s`" % pwned, "*", "12.8"]
    (fake / "cudaenv").write_text(
        "#!/bin/sh\nif [ \"$1 $2\" = 'use --complete' ]; then printf '%%s\\n' %s; else exec %s \"$@\"; fi\n"
        % (" ".join("'%s'" % w for w in words), CUDAENV))
    (fake / "cudaenv").chmod(0o755)
    env = dict(world.env, PATH="%s:%s" % (fake, world.env["PATH"]))
    (world.tmp / "out" / "a-file").write_text("")  # what an unquoted * would glob to
    assert _complete_in_bash(env, world.tmp / "out", "") == words
    assert _complete_in_bash(env, world.tmp / "out", "12") == [words[0], "12.8"]
    assert _complete_in_bash(env, world.tmp / "out", "*") == ["*"]
    assert not pwned.exists()
