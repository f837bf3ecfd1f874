"""cudaenv.shells.startup: the one rule for a user's shell start-up files, given HOME, ZDOTDIR and XDG_CONFIG_HOME."""

import subprocess

import pytest

from builders import SHELL_TOOLS, real_tool

from cudaenv.shells import get_shell
from cudaenv.shells.startup import startup_file, startup_files, startup_words


def test_each_shell_reads_its_file_where_the_environment_puts_it():
    home = {"HOME": "/home/u"}
    assert startup_file("bash", home) == "/home/u/.bashrc"
    assert startup_file("sh", home) == "/home/u/.profile"
    assert startup_file("zsh", home) == "/home/u/.zshrc"
    assert startup_file("fish", home) == "/home/u/.config/fish/config.fish"
    assert startup_file("zsh", dict(home, ZDOTDIR="/home/u/.config/zsh")) == "/home/u/.config/zsh/.zshrc"
    assert startup_file("fish", dict(home, XDG_CONFIG_HOME="/xdg")) == "/xdg/fish/config.fish"
    assert startup_file("bash", {}) == "~/.bashrc"  # no HOME: the user's ~
    with pytest.raises(KeyError):
        startup_file("csh", home)


def test_the_shells_write_their_hook_where_the_rule_says():
    env = {"HOME": "/home/u", "ZDOTDIR": "/z", "XDG_CONFIG_HOME": "/xdg"}
    for name in ("bash", "zsh", "sh", "fish"):
        assert get_shell(name).rc_file(env, "linux") == startup_file(name, env)
    assert get_shell("pwsh").rc_file(env, "linux") == "/xdg/powershell/Microsoft.PowerShell_profile.ps1"


def test_the_files_searched_are_the_moved_ones_and_the_usual_ones_once_each():
    plain = startup_files("/home/u")
    assert plain == ("/home/u/.bashrc", "/home/u/.zshrc", "/home/u/.profile", "/home/u/.bash_profile",
                     "/home/u/.config/fish/config.fish")
    moved = startup_files("/home/u", {"ZDOTDIR": "/z", "XDG_CONFIG_HOME": "/xdg"})
    assert set(moved) == set(plain) | {"/z/.zshrc", "/xdg/fish/config.fish"} and len(moved) == len(set(moved))
    assert startup_files("/home/u", {"ZDOTDIR": "/home/u"}) == plain  # ZDOTDIR=$HOME: no second copy


@pytest.mark.skipif(real_tool("bash") is None, reason="needs bash")
def test_the_doctors_words_name_the_files_as_the_users_shell_resolves_them(tmp_path):
    """The doctor's grep reads ${ZDOTDIR:-~}/.zshrc: bash expands it to the file zsh reads, set or unset."""
    home, zdot, xdg = tmp_path / "home", tmp_path / "zdot", tmp_path / "xdg"
    for d in (home, zdot, xdg / "fish"):
        d.mkdir(parents=True)
    script = "printf '%s\\n' " + " ".join(startup_words())
    env = {"PATH": SHELL_TOOLS, "HOME": str(home)}
    plain = subprocess.run([real_tool("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert plain.stdout.split() == list(startup_files(str(home)))
    env.update(ZDOTDIR=str(zdot), XDG_CONFIG_HOME=str(xdg))
    moved = subprocess.run([real_tool("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert moved.stdout.split() == [startup_file(n, env) for n in ("bash", "zsh", "sh")] + [
        str(home / ".bash_profile"), startup_file("fish", env)]
