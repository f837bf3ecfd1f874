"""`cudaenv uninstall --script`: the generated bash script, RUN for real inside fake roots.

System tools (apt-get, update-alternatives, ldconfig, conda, a venv's python) are stubs that log their
arguments; every other file of the tree is hashed before and after, so the test sees exactly what went.
"""

import os
import subprocess

import pytest

from builders import TOOLS

import builders as trees  # the fake install trees


def make_script(cli, root, *args):
    script = root.path.parent / "plan.sh"
    env = {"PATH": TOOLS, "HOME": str(root.path / "root")}
    res = cli("uninstall", "--root", str(root.path), *args, "--script", str(script), env=env)
    assert res.code == 0, res
    check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr
    return script


def run_script(script, root, stubs, log, *args, stdin=None, env=None):
    full = {"PATH": stubs, "UNINSTALL_LOG": str(log), "SUDO": "", "HOME": "/nonexistent"}
    full.update(env or {})
    return subprocess.run(["bash", str(script), *args], input=stdin, capture_output=True, text=True, env=full, timeout=60)


def diff(before, after):
    gone = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed = sorted(k for k in before if k in after and before[k] != after[k])
    return gone, new, changed


@pytest.fixture
def world(fake_root, tmp_path):
    trees.runfile_118(fake_root)
    trees.deb_124(fake_root, trees.recorded)
    trees.alternatives_124(fake_root)
    trees.rc_files(fake_root)
    trees.ldconf_118(fake_root)
    log = tmp_path / "calls.log"
    stubs = trees.stub_bin(tmp_path / "stubs", log)
    return fake_root, log, stubs


def test_runfile_removal_runs_for_real(world, cli):
    root, log, stubs = world
    script = make_script(cli, root, "11.8")
    before = trees.snapshot_tree(root.path)
    res = run_script(script, root, stubs, log, "--yes")
    assert res.returncode == 0, res.stderr + res.stdout
    after = trees.snapshot_tree(root.path)
    gone, new, changed = diff(before, after)
    assert all(p.startswith("usr/local/cuda-11.8") for p in gone if p != "etc/ld.so.conf.d/cuda-11-8.conf")
    assert "usr/local/cuda-11.8" in gone and "etc/ld.so.conf.d/cuda-11-8.conf" in gone
    assert new == sorted(
        ["root/.bashrc.cudaenv-backup", "etc/environment.cudaenv-backup", "etc/profile.d/cuda.sh.cudaenv-backup",
         "etc/ld.so.conf.d/mixed.conf.cudaenv-backup"]
    )
    assert changed == sorted(["root/.bashrc", "etc/environment", "etc/profile.d/cuda.sh", "etc/ld.so.conf.d/mixed.conf"])
    assert (root / "root/.bashrc").read_text() == trees.RC_BASHRC.replace("export PATH=/usr/local/cuda-11.8/bin:$PATH\n", "")
    assert (root / "root/.bashrc.cudaenv-backup").read_text() == trees.RC_BASHRC
    assert (root / "etc/environment").read_text() == 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"\n'
    assert (root / "etc/ld.so.conf.d/mixed.conf").read_text() == "# local libs\n/opt/mylib/lib\n"
    assert (root / "root/.zshrc").read_text() == trees.RC_ZSHRC  # block lines are left for the user
    calls = trees.read_log(log)
    assert calls[0] == ("cuda-uninstaller", str(root / "usr/local/cuda-11.8"))
    assert calls[-1] == ("ldconfig",)
    assert len(calls) == 2
    assert "by hand" in res.stdout


def test_check_after_runfile_removal_is_half_clean(world, cli):
    root, log, stubs = world
    env = {"PATH": TOOLS, "HOME": str(root.path / "root")}
    res = cli("uninstall", "--root", str(root.path), "--check", "11.8", env=env)
    assert res.code == 1 and "[folder]" in res.out
    script = make_script(cli, root, "11.8")
    assert run_script(script, root, stubs, log, "--yes").returncode == 0
    res = cli("uninstall", "--root", str(root.path), "--check", "11.8", "--json", env=env)
    assert res.code == 1
    data = res.json()
    assert {r["kind"] for r in data["residue"]} == {"rc-line"}  # only the if-block lines in .zshrc remain
    assert {r["path"] for r in data["residue"]} == {"/root/.zshrc"}


def test_deb_removal_calls_apt_with_exact_names(world, cli):
    root, log, stubs = world
    script = make_script(cli, root, "/usr/local/cuda-12.4")
    before = trees.snapshot_tree(root.path)
    res = run_script(script, root, stubs, log, "--yes")
    assert res.returncode == 0, res.stderr
    calls = trees.read_log(log)
    assert calls == [
        ("apt-get", "--purge", "remove", "cuda-cudart-12-4", "cuda-nvcc-12-4"),
        ("update-alternatives", "--remove", "cuda", "/usr/local/cuda-12.4"),
        ("ldconfig",),
    ]
    gone, new, changed = diff(before, trees.snapshot_tree(root.path))
    assert all(p.startswith("usr/local/cuda-12.4") for p in gone) and "usr/local/cuda-12.4" in gone
    assert new == ["root/.bashrc.cudaenv-backup"] and changed == ["root/.bashrc"]
    assert "cuda-12.4" not in (root / "root/.bashrc").read_text() and "cuda-11.8" in (root / "root/.bashrc").read_text()
    assert (root / "etc/ld.so.conf.d/988_cuda-12.conf").exists()  # the package's file is apt's business


def test_answers_yes_skip_and_stop(world, cli):
    root, log, stubs = world
    script = make_script(cli, root, "11.8")
    before = trees.snapshot_tree(root.path)
    res = run_script(script, root, stubs, log, stdin="n\n")
    assert res.returncode == 1 and "stopped" in res.stderr
    assert trees.snapshot_tree(root.path) == before and trees.read_log(log) == []
    # skip the uninstaller: the folder step that needs it is skipped too; then yes to the rest
    res = run_script(script, root, stubs, log, stdin="s\n" + "y\n" * 10)
    assert res.returncode == 0, res.stderr
    assert "s2: skipped (s1 was skipped)" in res.stdout
    assert (root / "usr/local/cuda-11.8/bin/nvcc").exists()
    assert not (root / "etc/ld.so.conf.d/cuda-11-8.conf").exists()


def test_yes_pipe_answers_every_prompt(world, cli):
    root, log, stubs = world
    script = make_script(cli, root, "11.8")
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        full = {"PATH": stubs, "UNINSTALL_LOG": str(log), "SUDO": ""}
        res = subprocess.run(["bash", str(script)], stdin=yes.stdout, capture_output=True, text=True, env=full, timeout=60)
    finally:
        yes.kill()
        yes.wait()
    assert res.returncode == 0, res.stderr
    assert not (root / "usr/local/cuda-11.8").exists()


def test_a_step_that_fails_stops_the_script(world, cli, tmp_path):
    root, log, stubs = world
    script = make_script(cli, root, "11.8")
    edited = "# a line added since the plan was made\n" + trees.RC_BASHRC  # the target line moved down
    (root / "root/.bashrc").write_text(edited)
    res = run_script(script, root, stubs, log, "--yes")
    assert res.returncode != 0 and "no longer reads" in res.stderr
    assert ("ldconfig",) not in trees.read_log(log)  # nothing after the failure ran
    assert (root / "root/.bashrc").read_text() == edited
    assert not (root / "root/.bashrc.cudaenv-backup").exists()


def test_dangling_link_ghost_then_clean_check(fake_root, tmp_path, cli):
    fake_root.toolkit("12.4")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.3")
    fake_root.file("root/.bashrc", "export PATH=/usr/local/cuda-11.3/bin:$PATH\nexport PATH=/usr/local/cuda-12.4/bin:$PATH\n")
    log = tmp_path / "log"
    stubs = trees.stub_bin(tmp_path / "stubs", log)
    env = {"PATH": TOOLS, "HOME": str(fake_root.path / "root")}
    assert cli("uninstall", "--root", str(fake_root.path), "--check", "11.3", env=env).code == 1
    script = make_script(cli, fake_root, "11.3")
    before = trees.snapshot_tree(fake_root.path)
    assert run_script(script, fake_root, stubs, log, "--yes").returncode == 0
    gone, new, changed = diff(before, trees.snapshot_tree(fake_root.path))
    assert gone == ["usr/local/cuda"] and changed == ["root/.bashrc"] and new == ["root/.bashrc.cudaenv-backup"]
    assert (fake_root / "usr/local/cuda-12.4/bin/nvcc").exists()  # the link was removed, never followed
    res = cli("uninstall", "--root", str(fake_root.path), "--check", "11.3", env=env)
    assert res.code == 0 and "Nothing is left" in res.out
    # running the script twice: every step finds its residue gone and does nothing
    res = run_script(script, fake_root, stubs, log, "--yes")
    assert res.returncode == 0 and "nothing to do" in res.stdout


def test_repoint_link(fake_root, tmp_path, cli):
    trees.runfile_118(fake_root)
    fake_root.toolkit("12.4")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.8")
    log = tmp_path / "log"
    stubs = trees.stub_bin(tmp_path / "stubs", log)
    script = make_script(cli, fake_root, "11.8", "--repoint", "12.4")
    assert run_script(script, fake_root, stubs, log, "--yes").returncode == 0
    assert os.readlink(fake_root / "usr/local/cuda") == "/usr/local/cuda-12.4"


@pytest.mark.parametrize("weird", [trees.WEIRD, "/opt/new\nline/cuda-11.8", "/opt/-rf *?[a]/cuda-11.8"])
def test_folder_names_that_break_quoting(fake_root, tmp_path, cli, weird):
    trees.runfile_118(fake_root, where=os.path.dirname(weird).lstrip("/"), name=os.path.basename(weird))
    # (a quoted PATH line spells such a name with shell escapes, so only a literal mention can be matched)
    fake_root.file("root/.bashrc", "# keep me\n# installed to %s/bin\n" % weird if "\n" not in weird else "# keep me\n")
    sibling = fake_root.file(os.path.dirname(weird).lstrip("/") + "/cuda-11.8.keep/file", "not a target\n")
    log = tmp_path / "log"
    stubs = trees.stub_bin(tmp_path / "stubs", log)
    script = make_script(cli, fake_root, weird)
    before = trees.snapshot_tree(fake_root.path)
    res = run_script(script, fake_root, stubs, log, "--yes", env={"HOME": "/x"})
    assert res.returncode == 0, res.stderr
    assert "\npwned" not in res.stdout + res.stderr and not list(fake_root.path.rglob("pwned"))
    gone, new, changed = diff(before, trees.snapshot_tree(fake_root.path))
    rel = weird.lstrip("/")
    assert gone and all(p == rel or p.startswith(rel + "/") for p in gone)
    assert sibling.exists()
    assert log.read_text().startswith("cuda-uninstaller\t%s\n" % (str(fake_root.path) + weird))
    assert changed == ([] if "\n" in weird else ["root/.bashrc"]) and (fake_root / "root/.bashrc").read_text() == "# keep me\n"


def test_conda_and_pip_scripts(fake_root, tmp_path, cli):
    prefix = trees.conda_env(fake_root)
    log = tmp_path / "log"
    nvcc_dir = trees.pip_venv(fake_root, log)
    stubs = trees.stub_bin(tmp_path / "stubs", log)
    for target in (prefix, nvcc_dir):
        script = make_script(cli, fake_root, target)
        before = trees.snapshot_tree(fake_root.path)
        assert run_script(script, fake_root, stubs, log, "--yes").returncode == 0
        assert trees.snapshot_tree(fake_root.path) == before  # the stubs remove nothing; no rm -rf of an environment
    calls = trees.read_log(log)
    assert calls == [
        ("conda", "remove", "-p", str(fake_root.path) + prefix, "cuda-cudart", "cuda-nvcc", "libcublas"),
        ("python3", "-m", "pip", "uninstall", "-y", "nvidia-cuda-nvcc-cu12", "nvidia-cudnn-cu12"),
    ]


def test_script_text_is_commented_and_safe(world, cli):
    root, _log, _stubs = world
    text = make_script(cli, root, "11.8").read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
    assert "# --- s1: Run CUDA 11.8.89 at /usr/local/cuda-11.8's own uninstaller" in text
    assert "rm -rf -- /usr/local/cuda-11.8/" not in text and "rm -rf /" not in text
    assert "read -r -p" in text and "CUDAENV_YES" in text


@pytest.mark.parametrize("spec", ["13.0.3.0", "13.0.9"])
def test_check_of_a_release_that_is_gone_never_targets_another_toolkit(fake_root, cli, spec):
    # issue 27: after a clean removal of the cudaenv install 13.0.3.0 (or for 13.0.9, which never existed here),
    # --check looked at /usr/local/cuda-13.0 (the system's 13.0.88) and told the user to remove it
    fake_root.toolkit("13.0.88")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-13.0")
    fake_root.dir("data/toolkits")
    env = {"PATH": TOOLS, "HOME": str(fake_root.path / "root"), "CUDAENV_DATA_DIR": "/data"}
    res = cli("uninstall", "--root", str(fake_root.path), "--check", spec, env=env)
    assert res.code == 0 and "/usr/local/cuda-13.0" not in res.out, res.out
    assert (fake_root / "usr/local/cuda-13.0/bin/nvcc").exists()
