"""`cudaenv uninstall`: the plan for fake roots that look like real installs (runfile, deb, conda, pip, Windows)."""

import os
from pathlib import Path

import pytest

import builders as trees  # the fake install trees
from builders import TOOLS
from cudaenv.model.snapshot import CudaSymlink, Toolkit
from cudaenv.parse.dpkg import parse_alternatives, parse_list, parse_status
from cudaenv.host.tree import count_files
from cudaenv.toolkit.uninstall.inspect import inspect_uninstall
from cudaenv.toolkit.uninstall.plan import plan_uninstall
from cudaenv.toolkit.uninstall.records import HostPath, Options
from cudaenv.toolkit.uninstall.targets import load_toolkits, select_targets


recorded = trees.recorded


def kinds(plan):
    return [s.kind for s in plan.steps]


def step(plan, kind):
    found = [s for s in plan.steps if s.kind == kind]
    assert found, "no %s step in %s" % (kind, kinds(plan))
    return found[0]


def allowed_paths(inspection):
    """The only paths a plan may name: the targets' own folders and the residue files found."""
    allowed = [t.toolkit.path for t in inspection.targets]
    allowed += [t.conda_prefix for t in inspection.targets if t.conda_prefix]
    allowed += [d for t in inspection.targets if t.pip for d in t.pip.dist_dirs]
    allowed += [t.pip.python for t in inspection.targets if t.pip and t.pip.python]
    if inspection.cuda_symlink is not None:
        allowed.append(inspection.cuda_symlink.path)
    allowed += [c.file for c in inspection.ldconf] + [l.file for l in inspection.rc_lines]
    allowed += [w.path for w in inspection.wrappers]
    if inspection.driver and inspection.driver.runfile_uninstaller:
        allowed.append(inspection.driver.runfile_uninstaller)
    return allowed


def assert_safe(plan, inspection):
    allowed = allowed_paths(inspection)
    for s in plan.steps:
        for argv in s.commands:
            for arg in argv:
                assert "*" not in arg or arg.startswith("import") or "\n" in arg, "glob in %r" % (argv,)
                if isinstance(arg, HostPath):
                    assert any(arg == a or arg.startswith(a.rstrip("/") + "/") for a in allowed), "%s is outside the plan's scope" % arg
            if argv[0] == "rm":
                assert "-rf" not in argv or not argv[-1].endswith("/")


def inspect(host, targets, toolkits=None, link=None, **kw):
    notes = []
    if toolkits is None or link is None:
        found, found_link = load_toolkits(host, notes)
        toolkits = found if toolkits is None else toolkits
        link = found_link if link is None else link
    return inspect_uninstall(host, targets, toolkits, link, notes, **kw)


@pytest.fixture
def mixed(fake_root):
    """runfile 11.8 + deb 12.4 (alternatives own /usr/local/cuda) + rc files + ld.so.conf.d."""
    trees.runfile_118(fake_root)
    trees.deb_124(fake_root, recorded)
    trees.alternatives_124(fake_root)
    trees.rc_files(fake_root)
    trees.ldconf_118(fake_root)
    return fake_root


T118 = Toolkit(version="11.8.89", path="/usr/local/cuda-11.8", source="/usr/local/cuda-*", install_method="runfile")
T124 = Toolkit(version="12.4.131", path="/usr/local/cuda-12.4", source="/usr/local/cuda-*", install_method="deb", is_link_target=True)


# ------------------------------------------------------------------------ runfile


def test_runfile_plan_order_and_residue(mixed):
    host = mixed.host()
    insp = inspect(host, [T118], toolkits=[T118, T124])
    plan = plan_uninstall(insp)
    assert kinds(plan) == [
        "runfile-uninstaller", "remove-folder", "remove-ldconf", "edit-ldconf", "edit-rc", "rc-by-hand", "edit-rc", "edit-rc", "ldconfig",
    ]
    assert plan.steps[0].commands == (("/usr/local/cuda-11.8/bin/cuda-uninstaller",),)
    assert plan.steps[0].needs_root and plan.steps[0].destructive
    folder = step(plan, "remove-folder")
    assert folder.commands == (("rm", "-rf", "--", "/usr/local/cuda-11.8"),)
    assert folder.after == ("s1",)
    assert "/usr/local/cuda-11.8/extras" in folder.details
    assert step(plan, "remove-ldconf").commands == (("rm", "--", "/etc/ld.so.conf.d/cuda-11-8.conf"),)
    mixed_conf = step(plan, "edit-ldconf").commands[0]
    assert mixed_conf[3:] == ("/etc/ld.so.conf.d/mixed.conf", "3", "remove", "/usr/local/cuda-11.8/extras/CUPTI/lib64", "")
    assert plan.steps[-1].commands == (("ldconfig",),)
    assert_safe(plan, insp)


def test_rc_lines_only_the_target_and_exactly_shown(mixed):
    insp = inspect(mixed.host(), [T118], toolkits=[T118, T124])
    by_file = {}
    for line in insp.rc_lines:
        by_file.setdefault(line.file, []).append((line.lineno, line.action))
    assert by_file["/root/.bashrc"] == [(3, "remove")]  # the 12.4 line and the unrelated ones stay
    assert by_file["/root/.zshrc"] == [(2, "hand"), (3, "hand")]  # cuda-11.80 is another toolkit; if-block lines by hand
    assert by_file["/etc/environment"] == [(1, "rewrite")]
    env = [l for l in insp.rc_lines if l.file == "/etc/environment"][0]
    assert env.new_text == 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"'
    assert "/root/.config/fish/config.fish" not in by_file
    plan = plan_uninstall(insp)
    bashrc = [s for s in plan.steps if s.kind == "edit-rc" and s.paths == ("/root/.bashrc",)][0]
    assert "/root/.bashrc:3: export PATH=/usr/local/cuda-11.8/bin:$PATH" in bashrc.details
    assert bashrc.needs_root is False  # under HOME
    assert bashrc.commands[0][3:] == ("/root/.bashrc", "3", "remove", "export PATH=/usr/local/cuda-11.8/bin:$PATH", "")


# ------------------------------------------------------------------------ deb


def test_deb_plan_names_exact_packages(mixed):
    insp = inspect(mixed.host(), [T124], toolkits=[T118, T124])
    plan = plan_uninstall(insp)
    apt = step(plan, "apt-remove")
    assert apt.commands == (("apt-get", "--purge", "remove", "cuda-cudart-12-4", "cuda-nvcc-12-4"),)
    assert any("cuda-toolkit-12-4" in d for d in apt.details)  # apt removes the meta package with them
    folder = step(plan, "remove-folder")
    assert folder.details == ("/usr/local/cuda-12.4/extras",)  # only what no package owns
    alt = step(plan, "alternatives-remove")
    assert alt.commands == (("update-alternatives", "--remove", "cuda", "/usr/local/cuda-12.4"),)
    assert "remove-link" not in kinds(plan)  # update-alternatives manages /usr/local/cuda
    assert kinds(plan).index("apt-remove") < kinds(plan).index("remove-folder") < kinds(plan).index("alternatives-remove")
    assert any("988_cuda-12.conf" in n.message and "cuda-toolkit-12-4-config-common" in n.message for n in plan.notes)
    assert [l.lineno for l in insp.rc_lines if l.file == "/root/.bashrc"] == [4]
    assert plan.in_use and "/usr/local/cuda link points at it" in plan.in_use[0]
    assert_safe(plan, insp)


def test_deb_found_by_dpkg_when_method_unknown(mixed):
    unknown = Toolkit(version="12.4", path="/usr/local/cuda-12.4", source="CUDA_HOME")
    insp = inspect(mixed.host(), [unknown], toolkits=[unknown])
    assert insp.targets[0].toolkit.install_method == "deb"
    assert insp.targets[0].packages == ("cuda-cudart-12-4", "cuda-nvcc-12-4")
    assert insp.targets[0].related_packages == ("cuda-toolkit-12-4",)  # named for 12.4, owns nothing there


def test_recorded_dpkg_files_parse():
    pkgs, problems = parse_status(recorded("dpkg-status-real"))
    assert problems == []
    assert pkgs["libc6"].state == "installed" and pkgs["libc6"].version == "2.36-9+deb12u14"
    assert "libgcc-s1" in pkgs["libc6"].depends and "passwd" in pkgs["adduser"].depends
    assert "/etc/ld.so.conf.d/x86_64-linux-gnu.conf" in parse_list(recorded("dpkg-list-libc6-amd64"))
    link, paths = parse_alternatives(recorded("dpkg-alternatives-awk"))
    assert link == "/usr/bin/awk" and paths == ("/usr/bin/mawk",)


def test_broken_dpkg_database_gives_notes(fake_root):
    fake_root.toolkit("12.4")
    fake_root.file("var/lib/dpkg/status", "Package: cuda-nvcc-12-4\nStatus: install ok installed\n\ngarbage without a name\n\x00\xff")
    fake_root.dir("var/lib/dpkg/info/cuda-nvcc-12-4.list")  # a folder where a file should be: unreadable
    insp = inspect(fake_root.host(), [Toolkit("12.4", "/usr/local/cuda-12.4", "x")], toolkits=[])
    messages = " ".join(n.message for n in insp.notes)
    assert "looks damaged" in messages and "cannot read 1 dpkg file list" in messages
    plan = plan_uninstall(insp)
    assert step(plan, "remove-folder")  # nothing owns it as far as can be read: the folder as a whole


# ------------------------------------------------------------------------ the /usr/local/cuda link


def test_plain_link_removed_or_repointed(fake_root):
    trees.runfile_118(fake_root)
    fake_root.toolkit("12.4")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.8")
    host = fake_root.host()
    toolkits, link = load_toolkits(host, [])
    targets = select_targets(host, "11.8", toolkits, False)
    assert [t.path for t in targets] == ["/usr/local/cuda-11.8"]
    insp = inspect(host, targets, toolkits, link)
    plan = plan_uninstall(insp)
    rm = step(plan, "remove-link")
    assert rm.commands == (("rm", "--", "/usr/local/cuda"),) and rm.only_if.kind == "link-to"
    assert any(c.startswith("--repoint 12.4") for c in plan.choices)
    assert kinds(plan).index("runfile-uninstaller") < kinds(plan).index("remove-link")
    plan2 = plan_uninstall(insp, Options(repoint="/usr/local/cuda-12.4"))
    assert step(plan2, "repoint-link").commands == (("ln", "-sfn", "--", "/usr/local/cuda-12.4", "/usr/local/cuda"),)
    assert "remove-link" not in kinds(plan2)
    assert_safe(plan2, insp)


def test_dangling_link_of_a_removed_toolkit(fake_root):
    """CUDA 11.3 was deleted by hand: its link, rc line and ld.so.conf.d file remain."""
    fake_root.toolkit("12.4")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.3")
    fake_root.file("root/.bashrc", "export PATH=/usr/local/cuda-11.3/bin:$PATH\nexport PATH=/usr/local/cuda-12.4/bin:$PATH\n")
    fake_root.file("etc/ld.so.conf.d/cuda-11-3.conf", "/usr/local/cuda-11.3/lib64\n")
    host = fake_root.host()
    toolkits, link = load_toolkits(host, [])
    assert link.dangling
    targets = select_targets(host, "11.3", toolkits, False)
    assert targets[0].path == "/usr/local/cuda-11.3" and targets[0].source == "residue"
    plan = plan_uninstall(inspect(host, targets, toolkits, link))
    assert kinds(plan) == ["remove-link", "remove-ldconf", "edit-rc", "ldconfig"]


def test_unrelated_dangling_link_is_only_noted(fake_root):
    trees.runfile_118(fake_root)
    fake_root.link("usr/local/cuda", "/usr/local/cuda-10.2")
    plan = plan_uninstall(inspect(fake_root.host(), [T118], toolkits=[T118]))
    assert "remove-link" not in kinds(plan)
    assert any("dangling" in n.message for n in plan.notes)


# ------------------------------------------------------------------------ conda, pip, Windows, rpm


def test_conda_env_plan(fake_root):
    prefix = trees.conda_env(fake_root)
    tk = Toolkit(version="12.1.105", path=prefix, source="conda", install_method="conda")
    insp = inspect(fake_root.host(), [tk], toolkits=[tk], link=CudaSymlink("/usr/local/cuda", None))
    plan = plan_uninstall(insp)
    assert kinds(plan) == ["conda-remove"]  # no rm -rf of an environment, no ldconfig
    assert plan.steps[0].commands == (("conda", "remove", "-p", prefix, "cuda-cudart", "cuda-nvcc", "libcublas"),)
    assert plan.steps[0].needs_root  # /opt/conda is not under HOME
    assert_safe(plan, insp)


def test_pip_venv_plan(fake_root, tmp_path):
    nvcc_dir = trees.pip_venv(fake_root, tmp_path / "log")
    tk = Toolkit(version="12.4.131", path=nvcc_dir, source="pip", install_method="pip")
    insp = inspect(fake_root.host(), [tk], toolkits=[tk], link=CudaSymlink("/usr/local/cuda", None))
    plan = plan_uninstall(insp)
    assert plan.steps[0].commands == (
        ("/root/venvs/old/bin/python3", "-m", "pip", "uninstall", "-y", "nvidia-cuda-nvcc-cu12", "nvidia-cudnn-cu12"),
    )
    assert not plan.steps[0].needs_root
    assert any("torch" in w for w in plan.in_use)
    plan2 = plan_uninstall(insp, Options(python="/usr/bin/python3.11"))
    assert plan2.steps[0].commands[0][0] == "/usr/bin/python3.11"
    assert_safe(plan, insp)


def test_windows_plan_names_apps_entries(fake_root):
    from cudaenv.host import Host

    fake_root.dir("C/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.1/bin")
    host = Host(root=fake_root.path, env={"PATH": ""}, system="windows")
    tk = Toolkit("12.1", "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.1", "CUDA_PATH", install_method="windows-installer")
    plan = plan_uninstall(inspect_uninstall(host, [tk], [tk], None, []))
    win = step(plan, "windows-uninstall")
    assert '"NVIDIA CUDA Development 12.1"' in win.details and "MsiExec" in win.description
    assert all(not s.commands for s in plan.steps)


def test_rpm_without_rpm_tool_is_a_note(fake_root):
    fake_root.toolkit("12.4")
    fake_root.file("var/lib/rpm/rpmdb.sqlite", "x")
    tk = Toolkit("12.4", "/usr/local/cuda-12.4", "x", install_method="rpm")
    plan = plan_uninstall(inspect(fake_root.host(path="/nonexistent"), [tk], toolkits=[tk]))
    assert "rpm-unknown" in kinds(plan)
    assert any("rpm is not installed here" in n.message for n in plan.notes)


# ------------------------------------------------------------------------ driver


def test_driver_apt_and_wsl(mixed):
    plan = plan_uninstall(inspect(mixed.host(), [T118], toolkits=[T118, T124], driver=True), Options(driver=True))
    drv = step(plan, "driver-apt-remove")
    assert drv.commands == (("apt-get", "--purge", "remove", "libnvidia-compute-550", "nvidia-driver-550"),)
    assert kinds(plan)[-1] == "ldconfig" and kinds(plan).index("driver-apt-remove") < len(plan.steps) - 1
    mixed.executable("usr/bin/nvidia-uninstall", "#!/bin/sh\n")
    plan = plan_uninstall(inspect(mixed.host(), [T118], toolkits=[T118, T124], driver=True), Options(driver=True))
    assert step(plan, "driver-runfile-uninstall").commands == (("/usr/bin/nvidia-uninstall",),)
    assert "driver-apt-remove" in kinds(plan)
    mixed.file("proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    mixed.file("proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2\n")
    mixed.dir("proc/sys/fs/binfmt_misc/WSLInterop")
    plan = plan_uninstall(inspect(mixed.host(), [T118], toolkits=[T118, T124], driver=True), Options(driver=True))
    wsl = step(plan, "driver-wsl")
    assert not wsl.commands and "Windows" in wsl.description
    assert "driver-apt-remove" not in kinds(plan)


# ------------------------------------------------------------------------ CLI


def test_cli_text_and_json(mixed, cli):
    env = {"PATH": TOOLS, "HOME": str(mixed.path / "root")}
    res = cli("uninstall", "--root", str(mixed.path), "/usr/local/cuda-11.8", env=env)
    assert res.code == 0, res
    assert "cuda-uninstaller" in res.out and "rm -rf -- /usr/local/cuda-11.8" in res.out
    res = cli("uninstall", "--root", str(mixed.path), "/usr/local/cuda-12.4", "--json", env=env)
    data = res.json()
    cmds = [c for s in data["steps"] for c in s["commands"]]
    assert ["apt-get", "--purge", "remove", "cuda-cudart-12-4", "cuda-nvcc-12-4"] in cmds
    assert data["targets"][0]["path"] == "/usr/local/cuda-12.4"


def test_cli_errors(mixed, cli):
    env = {"PATH": TOOLS, "HOME": str(mixed.path / "root")}
    res = cli("uninstall", "--root", str(mixed.path), "9.0", env=env)
    assert res.code == 2 and "nothing of it is left" in res.err
    res = cli("uninstall", "--root", str(mixed.path), env=env)
    assert res.code == 2 and "say which toolkit" in res.err
    res = cli("uninstall", "--root", str(mixed.path), "/usr/local/cuda-11.8", "--repoint", "7.5", env=env)
    assert res.code == 2 and "--repoint 7.5" in res.err
    res = cli("uninstall", "--root", str(mixed.path), "cuda; rm -rf /", env=env)
    assert res.code == 2 and "not an absolute path" in res.err
    res = cli("uninstall", "--root", str(mixed.path), "/usr/local", env=env)
    assert res.code == 2 and "system folder" in res.err
    res = cli("uninstall", "--root", str(mixed.path), "/etc", env=env)
    assert res.code == 2 and "system folder" in res.err
    res = cli("uninstall", "--root", str(mixed.path), "/var/lib/dpkg", env=env)
    assert res.code == 2 and "does not look like a CUDA toolkit" in res.err
    res = cli("uninstall", "--root", str(mixed.path), "/opt/nothing here", env=env)
    assert res.code == 2 and "nothing of it is left" in " ".join(res.err.split())  # wrapped to 80 columns


def test_ambiguous_version_needs_all(fake_root):
    fake_root.toolkit("12.1")
    fake_root.toolkit("12.4")
    host = fake_root.host()
    toolkits, _ = load_toolkits(host, [])
    from cudaenv.core.errors import UserError

    with pytest.raises(UserError):
        select_targets(host, "12", toolkits, False)
    assert len(select_targets(host, "12", toolkits, True)) == 2


# ------------------------------------------------------------------------ wrappers on PATH and sudo


def test_wrappers_on_path(fake_root):
    """Seen on a real machine: /usr/local/bin/nvcc is `exec /usr/local/cuda-13.0/bin/nvcc "$@"`."""
    trees.runfile_118(fake_root)
    fake_root.executable("usr/local/bin/nvcc", '#!/bin/sh\nexec /usr/local/cuda-11.8/bin/nvcc "$@"\n')
    fake_root.executable("usr/local/bin/mynvcc", '#!/bin/sh\necho building\n/usr/local/cuda-11.8/bin/nvcc "$@"\n')
    fake_root.executable("usr/local/bin/other", '#!/bin/sh\nexec /usr/local/cuda-11.80/bin/nvcc "$@"\n')
    fake_root.link("usr/local/bin/ptxas", "../cuda-11.8/bin/ptxas")
    fake_root.link("usr/local/bin/gcc-12", "/usr/bin/gcc-12")
    insp = inspect(fake_root.host(), [T118], toolkits=[T118])
    plan = plan_uninstall(insp)
    rm = step(plan, "remove-wrappers")
    assert rm.commands == (("rm", "-f", "--", "/usr/local/bin/nvcc", "/usr/local/bin/ptxas"),)
    assert step(plan, "wrappers-by-hand").paths == ("/usr/local/bin/mynvcc",)
    assert_safe(plan, insp)


def test_sudo_user_home_is_searched(fake_root):
    trees.runfile_118(fake_root)
    fake_root.file("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nann:x:1000:1000:Ann:/home/ann:/bin/zsh\n")
    fake_root.file("home/ann/.zshrc", "export PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    insp = inspect(fake_root.host(env={"SUDO_USER": "ann"}), [T118], toolkits=[T118])
    assert [l.file for l in insp.rc_lines] == ["/home/ann/.zshrc"]


@pytest.mark.real_machine
@pytest.mark.skipif(not Path("/usr/local/cuda-13.0/bin/nvcc").exists(), reason="this machine's CUDA 13.0 toolkit is absent")
def test_real_machine_plan_for_13_0(cli):
    """This machine: /usr/local/cuda-13.0 built from wheels (no uninstaller, no package), the link, nvcc wrappers."""
    res = cli("uninstall", "13.0", "--json", env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent"})
    assert res.code == 0, res
    data = res.json()
    assert data["targets"][0]["path"] == "/usr/local/cuda-13.0"
    cmds = [c for s in data["steps"] for c in s["commands"]]
    assert ["rm", "-rf", "--", "/usr/local/cuda-13.0"] in cmds
    if os.path.islink("/usr/local/cuda") and os.readlink("/usr/local/cuda") == "/usr/local/cuda-13.0":
        assert ["rm", "--", "/usr/local/cuda"] in cmds
    wrappers = [c for c in cmds if c[:3] == ["rm", "-f", "--"]]
    if Path("/usr/local/bin/nvcc").exists() and "cuda-13.0" in Path("/usr/local/bin/nvcc").read_text():
        assert wrappers and "/usr/local/bin/nvcc" in wrappers[0]
    assert data["in_use"]
    assert Path("/usr/local/cuda-13.0/bin/nvcc").exists()  # planning removed nothing


# ------------------------------------------------------------------------ parsers: any text in, no exception out

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cudaenv.toolkit.uninstall.rpm import parse_qf  # noqa: E402


@settings(max_examples=300)
@given(st.text())
def test_dpkg_parsers_any_text(text):
    pkgs, problems = parse_status(text)
    assert all(p.name for p in pkgs.values())
    parse_list(text)
    parse_alternatives(text)
    assert all(" " not in n for n in parse_qf(text))


def test_parse_qf():
    out = "cuda-nvcc-12-4\nfile /usr/local/cuda-12.4/extras/x is not owned by any package\ncuda-cudart-12-4\ncuda-nvcc-12-4\n"
    assert parse_qf(out) == ("cuda-cudart-12-4", "cuda-nvcc-12-4")


# ------------------------------------------------------------------------ review additions: old .pl uninstaller, rpm with rpm


def test_old_perl_uninstaller_of_a_runfile_install(fake_root):
    """Before CUDA 10.1 the runfile left bin/uninstall_cuda_X.Y.pl: run it with perl, then remove what it leaves."""
    base = fake_root.toolkit("9.0.176", version_json=False, version_txt=True)
    fake_root.file("usr/local/cuda-9.0/bin/uninstall_cuda_9.0.pl", "#!/usr/bin/perl\n")
    fake_root.file("usr/local/cuda-9.0/bin/uninstall_cuda_toolkit_9.0.log", "")  # not an uninstaller: not matched
    host = fake_root.host()
    toolkits, link = load_toolkits(host, [])
    targets = select_targets(host, "9.0", toolkits, False)
    inspection = inspect(host, targets, toolkits, link)
    plan = plan_uninstall(inspection)
    tool = step(plan, "runfile-uninstaller")
    assert tool.commands == (("perl", "/usr/local/cuda-9.0/bin/uninstall_cuda_9.0.pl"),)
    assert tool.needs_root and tool.destructive
    assert kinds(plan).index("runfile-uninstaller") < kinds(plan).index("remove-folder")
    assert inspection.targets[0].toolkit.install_method == "runfile"
    assert base.is_dir()  # planning removes nothing
    assert_safe(plan, inspection)


def test_rpm_install_names_exact_packages_from_rpm(fake_root, fake_bin):
    fake_root.toolkit("12.4")
    fake_root.file("var/lib/rpm/rpmdb.sqlite", "x")
    log = fake_root.path.parent / "rpm-args.txt"
    fake_bin.command("rpm", "")
    (fake_bin.path / "rpm").write_text(
        "#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\n"
        "printf 'cuda-nvcc-12-4\\ncuda-cudart-12-4\\ncuda-nvcc-12-4\\nfile /usr/local/cuda-12.4/x is not owned by any package\\n'\n" % log
    )
    tk = Toolkit("12.4", "/usr/local/cuda-12.4", "x", install_method="rpm")
    host = fake_root.host(path=fake_bin.env_path)
    plan = plan_uninstall(inspect(host, [tk], toolkits=[tk]))
    dnf = step(plan, "dnf-remove")
    assert dnf.commands == (("dnf", "remove", "cuda-cudart-12-4", "cuda-nvcc-12-4"),)
    assert dnf.needs_root and "rpm-unknown" not in kinds(plan)
    args = log.read_text().splitlines()
    assert args[:2] == ["--root", str(fake_root.path)] and "-qf" in args
    assert "/usr/local/cuda-12.4/bin/nvcc" in args  # inspected-system paths, read by rpm under --root


def test_driver_on_an_rpm_system_names_exact_packages(fake_root, fake_bin):
    fake_root.toolkit("12.4")
    fake_root.file("var/lib/rpm/rpmdb.sqlite", "x")
    fake_bin.command("rpm", "", by_args={"-qa": (
        "bash\nkmod-nvidia-latest-dkms\nnvidia-driver\nnvidia-driver-cuda\nnvidia-settings\ncuda-drivers\ncuda-nvcc-12-4\n", 0)})
    tk = Toolkit("12.4", "/usr/local/cuda-12.4", "x", install_method="rpm")
    host = fake_root.host(path=fake_bin.env_path)
    plan = plan_uninstall(inspect(host, [tk], toolkits=[tk], driver=True), Options(driver=True))
    drv = step(plan, "driver-dnf-remove")
    assert drv.commands == (("dnf", "remove", "cuda-drivers", "kmod-nvidia-latest-dkms", "nvidia-driver", "nvidia-driver-cuda"),)
    assert drv.needs_root and drv.destructive
    without_rpm = plan_uninstall(inspect(fake_root.host(path="/nonexistent"), [tk], toolkits=[tk], driver=True), Options(driver=True))
    assert "driver-dnf-remove" not in kinds(without_rpm)
    assert any("rpm -qa" in n.message for n in without_rpm.notes)


def test_driver_on_windows_is_the_apps_entry(fake_root):
    from cudaenv.host import Host

    fake_root.dir("C/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.1/bin")
    host = Host(root=fake_root.path, env={"PATH": ""}, system="windows")
    tk = Toolkit("12.1", "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.1", "CUDA_PATH", install_method="windows-installer")
    plan = plan_uninstall(inspect_uninstall(host, [tk], [tk], None, [], driver=True), Options(driver=True))
    drv = step(plan, "driver-windows")
    assert "NVIDIA Graphics Driver" in drv.description and not drv.commands and drv.needs_root
    assert kinds(plan).index("windows-uninstall") < kinds(plan).index("driver-windows")


def test_the_toolkit_on_path_is_called_out_before_any_step(mixed, cli, tmp_path):
    env = {"PATH": "/usr/local/cuda-11.8/bin:/usr/bin:/bin", "HOME": str(mixed.path / "root")}
    res = cli("uninstall", "--root", str(mixed.path), "11.8", env=env)
    assert res.code == 0, res
    lines = res.out.splitlines()
    warn = next(i for i, line in enumerate(lines) if line.startswith("IN USE:"))
    first_step = next(i for i, line in enumerate(lines) if line.startswith("1. "))
    assert warn < first_step
    block = lines[warn]  # the warning, wrapped to 80 columns (its continuation lines are indented)
    for line in lines[warn + 1 :]:
        if not line.startswith("  "):
            break
        block += " " + line.strip()
    assert "active toolkit" in block or "on PATH" in block
    assert "cudaenv use 12.4" in block
    script = tmp_path / "plan.sh"
    assert cli("uninstall", "--root", str(mixed.path), "11.8", "--script", str(script), env=env).code == 0
    text = script.read_text()
    assert "IN USE" in text and text.index("IN USE") < text.index("# --- s1:")


# ------------------------------------------------------------------ issue 13: sudo, and 80 columns
def _sudo_bin(tmp_path):
    fake = tmp_path / "sudobin"
    fake.mkdir()
    (fake / "sudo").write_text("#!/bin/sh\nexit 1\n")
    (fake / "sudo").chmod(0o755)
    return "%s:%s" % (fake, TOOLS)


def test_sudo_only_when_needed_and_present(mixed, tmp_path):
    from cudaenv.render.plan import render_plan_text

    host = mixed.host(path=TOOLS)
    target = select_targets(host, "11.8", load_toolkits(host, [])[0], False)
    as_root = plan_uninstall(inspect(host, target, root_user=True), Options())
    assert " sudo " not in render_plan_text(as_root) and "$ sudo" not in render_plan_text(as_root)
    user_no_sudo = plan_uninstall(inspect(host, target, root_user=False), Options())
    text = render_plan_text(user_no_sudo)
    assert "$ sudo" not in text and "sudo is not installed here" in text
    with_sudo = mixed.host(path=_sudo_bin(tmp_path))
    user = plan_uninstall(inspect(with_sudo, target, root_user=False), Options())
    text = render_plan_text(user)
    assert "$ sudo rm -rf -- /usr/local/cuda-11.8" in text and "sudo is not installed" not in text


def _commands(text):
    """Each printed command, its continuation lines joined back (what a paste runs)."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("     $ "):
            cur = line[len("     $ "):]
        elif cur is not None and line.startswith("         "):
            cur = cur[:-2] + " " + line.strip()
        else:
            cur = None
            continue
        if not cur.endswith(" \\"):
            out.append(cur)
            cur = None
    return out


@pytest.mark.parametrize("columns", [None, "60"])
def test_uninstall_fits_the_terminal_and_commands_stay_paste_safe(mixed, cli, columns):
    import shlex

    long_dir = "usr/local/cuda-11.8/" + "/".join(["a-rather-long-folder-name"] * 2)
    mixed.file(long_dir + "/x.txt", "")
    env = {"PATH": TOOLS, "HOME": str(mixed.path / "root")}
    if columns:
        env["COLUMNS"] = columns
    width = int(columns or 80)
    res = cli("uninstall", "--root", str(mixed.path), "11.8", "--driver", env=env)
    assert res.code == 0, res
    for line in res.out.splitlines():
        words = line.split()
        assert len(line) <= width or len(words) <= 2, line  # only an unbreakable word (a long path) may stick out
    json_cmds = [" ".join(shlex.quote(a) for a in c) for s in cli("uninstall", "--root", str(mixed.path), "11.8", "--driver", "--json",
                                                              env=env).json()["steps"] for c in s["commands"]]
    printed = _commands(res.out)
    assert printed and all(shlex.split(p) for p in printed)
    assert {tuple(shlex.split(p)) for p in printed if "<line editor" not in p} <= {tuple(shlex.split(c)) for c in json_cmds}


def test_count_files_reads_through_the_root(fake_root):
    """What `cudaenv uninstall` shows before removing a `cudaenv install` folder: its files, under --root's tree."""
    fake_root.file("opt/cudaenv/12.4/bin/nvcc", "x")
    fake_root.file("opt/cudaenv/12.4/lib64/libcudart.so.12", "x")
    fake_root.file("opt/other/nvcc", "x")
    assert count_files(fake_root.host(), "/opt/cudaenv/12.4") == 2
    assert count_files(fake_root.host(), "/opt/cudaenv/11.8") == 0


def test_a_bare_major_is_its_x_0_folder_and_packages(fake_root):
    """`cudaenv uninstall 12` with no 12.x toolkit left: the residue is where a 12.0 install lives (/usr/local/cuda-12.0;
    /usr/local/cuda-12 is only ever the deb packages' alternatives link) and the cuda-*-12-0 packages still installed."""
    status = trees.stanza("cuda-cudart-12-0", "12.0.146-1") + "\n" + trees.stanza("cuda-cudart-12-4", "12.4.127-1") + "\n"
    fake_root.file("var/lib/dpkg/status", status)
    fake_root.dir("var/lib/dpkg/info")
    host = fake_root.host()
    toolkits, link = load_toolkits(host, [])
    targets = select_targets(host, "12", toolkits, False)
    assert [(t.path, t.source) for t in targets] == [("/usr/local/cuda-12.0", "residue")]
    assert inspect(host, targets, toolkits, link).targets[0].related_packages == ("cuda-cudart-12-0",)


def test_package_suffix_is_the_version_readers_major_minor():
    from cudaenv.toolkit.install.repos import package, package_suffix

    assert [package_suffix(v) for v in ("12.4.1", "12", "11.8", "x")] == ["-12-4", "-12-0", "-11-8", None]
    assert package("12.4.131") == "cuda-toolkit-12-4"


def test_in_use_reasons_come_from_flags_not_sentences():
    """Each reason once, in order, from the records' flags: the active toolkit (the doctor's, also when the record was
    not marked), PATH, CUDA_HOME, the link. No rule reads another rule's sentence."""
    from cudaenv.toolkit.uninstall.facts import Inspection, TargetFacts

    tk = Toolkit(version="12.4", path="/usr/local/cuda-12.4", source="CUDA_HOME", on_path=True, is_cuda_home=True)
    other = Toolkit(version="12.1", path="/usr/local/cuda-12.1", source="/usr/local")
    facts = TargetFacts(toolkit=tk, present=True, active=True, link_points_here=True)
    plan = plan_uninstall(Inspection(system="linux", targets=(facts,), toolkits=(tk, other)))
    assert plan.in_use == (
        "CUDA 12.4 at /usr/local/cuda-12.4 is in use: it is the active toolkit (the nvcc a build uses now); its bin folder "
        "is on PATH; CUDA_HOME/CUDA_PATH points at it; the /usr/local/cuda link points at it. Switch first, e.g. "
        "`cudaenv use 12.1`.",
    )
    idle = plan_uninstall(Inspection(system="linux", targets=(TargetFacts(toolkit=other, present=True),), toolkits=(tk, other)))
    assert idle.in_use == ()


def test_the_doctors_active_toolkit_is_a_flag(fake_root):
    trees.runfile_118(fake_root)
    host = fake_root.host()
    toolkits, link = load_toolkits(host, [])
    targets = select_targets(host, "11.8", toolkits, False)
    insp = inspect(host, targets, toolkits, link, active_path="/usr/local/cuda-11.8/")
    assert insp.targets[0].active
    assert "active toolkit" in plan_uninstall(insp).in_use[0]
    assert not inspect(host, targets, toolkits, link, active_path="/usr/local/cuda-12.4").targets[0].active


def test_pip_wheels_in_a_windows_venv_use_its_scripts_python(fake_root):
    """PREFIX\\Lib\\site-packages is two folders below the venv (not three, as lib/pythonX.Y/site-packages is)."""
    from cudaenv.host import Host

    site = "C/Users/me/venv/Lib/site-packages"
    fake_root.file(site + "/nvidia/cuda_nvcc/bin/nvcc.exe", "")
    fake_root.file(site + "/nvidia_cuda_nvcc_cu12-12.4.131.dist-info/METADATA", "Name: nvidia-cuda-nvcc-cu12\nVersion: 12.4.131\n")
    fake_root.file("C/Users/me/venv/Scripts/python.exe", "")
    fake_root.file("C/Users/me/Scripts/python.exe", "")  # one level too high: another environment's
    host = Host(root=fake_root.path, env={"PATH": ""}, system="windows")
    tk = Toolkit("12.4.131", "C:\\Users\\me\\venv\\Lib\\site-packages\\nvidia\\cuda_nvcc", "pip", install_method="pip")
    insp = inspect(host, [tk], toolkits=[tk], link=CudaSymlink("/usr/local/cuda", None))
    assert insp.targets[0].pip.python == "C:/Users/me/venv/Scripts/python.exe"
    assert plan_uninstall(insp).steps[0].commands == (
        ("C:/Users/me/venv/Scripts/python.exe", "-m", "pip", "uninstall", "-y", "nvidia-cuda-nvcc-cu12"),
    )
