"""The suite's own guard: tests see only fake programs, the tools folder and the test interpreter.

`nox -s isolation` runs the default suite with a GPU-printing nvidia-smi on the real PATH (and, as root in CI, in
/usr/bin); these tests check the two mechanisms that make it pass: the PATH a test gets, and the refusing runner.
"""

import os
import sys

import pytest

from builders import BASE_TOOLS, SHELL_TOOLS, TOOLS, RefusedProgram, tools
from cudaenv.host import Host


def test_the_default_path_is_only_the_tools_folder(fake_root, fake_bin):
    assert fake_root.host().env["PATH"] == TOOLS
    assert fake_bin.env_path == "%s:%s" % (fake_bin.path, TOOLS)
    for entry in (TOOLS, SHELL_TOOLS):
        assert not any(part in ("/usr/bin", "/bin", "/usr/local/bin", "/sbin", "/usr/sbin") for part in entry.split(":"))
    names = sorted(os.listdir(TOOLS))
    assert set(names) <= set(BASE_TOOLS) and "sh" in names and "nvidia-smi" not in names
    assert all(os.path.islink(os.path.join(TOOLS, n)) for n in names)


def test_extra_tools_get_their_own_folder(fake_root):
    with_zsh = tools("zsh")
    assert with_zsh != TOOLS and tools("zsh") == with_zsh  # one folder per set, made once
    assert "zsh" not in os.listdir(TOOLS)


def test_a_fake_command_runs(fake_root, fake_bin):
    fake_bin.command("nvidia-smi", stdout="fake table\n")
    result = Host(root=fake_root.path, env={"PATH": fake_bin.env_path}).run(["nvidia-smi"])
    assert result.ok and result.stdout == "fake table\n"


def test_a_tool_and_the_test_interpreter_run(fake_root):
    host = fake_root.host()
    assert host.run(["sh", "-c", "echo hi"]).stdout == "hi\n"
    assert host.run([sys.executable, "-c", "print(2 + 2)"]).stdout == "4\n"


@pytest.mark.parametrize("where", ["absolute", "path"])
def test_a_program_of_the_machine_is_refused_loudly(fake_root, refusing_runner, where):
    real_sh = "/bin/sh"
    argv, env = ([real_sh, "-c", "true"], {"PATH": TOOLS}) if where == "absolute" else (["sh", "-c", "true"], {"PATH": "/bin"})
    with pytest.raises(RefusedProgram, match="/bin/sh"):
        Host(root=fake_root.path, env=env).run(argv)
    assert len(refusing_runner.refused) == 1
    refusing_runner.refused.clear()  # seen: the teardown check would fail this test otherwise


def test_a_link_in_the_fake_root_to_a_real_program_is_refused(fake_root, refusing_runner):
    link = fake_root.link("usr/bin/nvidia-smi", "/bin/sh")  # on disk it leads out of the fake root
    with pytest.raises(RefusedProgram):
        fake_root.host().run([str(link)])
    refusing_runner.refused.clear()


def test_a_missing_program_is_missing_not_refused(fake_root, refusing_runner):
    result = fake_root.host().run(["nvidia-smi"])
    assert result.error == "missing" and refusing_runner.refused == []


def test_the_cli_fixture_runs_through_the_refusing_runner(cli, tmp_path, refusing_runner):
    # a real program named on the command line: the in-process CLI's Host must refuse it, whatever doctor makes of that
    cli("doctor", "--quick", "--json", "--python", "/bin/sh", env={"PATH": TOOLS, "CUDAENV_ROOT": str(tmp_path)})
    assert any("/bin/sh" in r for r in refusing_runner.refused), refusing_runner.refused
    refusing_runner.refused.clear()
