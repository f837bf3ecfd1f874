"""`cudaenv install` from wheels: a real HTTP server on 127.0.0.1 serves small fake CUDA 13 wheels and a fake
`cuda-toolkit` meta wheel; a stand-in `pip` in the fake bin (a Python script run by the test interpreter) answers
`index versions`, `install --dry-run --report` (built from the meta wheel's METADATA and the served files' sha256)
and `download` (over HTTP). Behaviours switched by STANDIN_* variables: a failing download, a full disk, a slow
download (for SIGINT/SIGTERM and two installs at once), a served file whose hash differs from the index's."""

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from builders import RECORDED, TOOLS, interruptible, tools
from install_builders import COMPONENTS, RELEASES, Index, make_wheel, nothing_left, nothing_left_but, store

from cudaenv.parse.pip_output import parse_index_versions, parse_install_report
from cudaenv.toolkit.install import assemble, plan


@pytest.fixture
def index(tmp_path):
    idx = Index(tmp_path)
    yield idx
    idx.close()


# ------------------------------------------------------------------------------------------- the planner
def test_choose_release_uses_the_toolkit_spec_grammar():
    assert plan.choose_release("13", RELEASES) == "13.1.0"
    assert plan.choose_release("13.0", RELEASES) == "13.0.2"
    assert plan.choose_release("13.0.1", RELEASES) == "13.0.1"
    assert plan.choose_release("13.0", ["13.0.2", "13.0.3.0", "13.0.10"]) == "13.0.10"
    with pytest.raises(plan.PlanError) as err:
        plan.choose_release("13.9", RELEASES)
    assert "13.1.0" in err.value.hint
    with pytest.raises(plan.PlanError):
        plan.choose_release("13.0$(x)", RELEASES)
    # 13.1 never matches 13.10
    assert plan.choose_release("13.1", ["13.10.0", "13.1.0"]) == "13.1.0"


def test_component_pins_come_from_the_meta_metadata_not_a_pattern():
    requires = [
        "nvidia-cuda-nvcc==13.0.88.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == 'nvcc'",
        "nvidia-nvvm==13.0.88.*; sys_platform == 'linux' and extra == 'nvcc'",
        "nvidia-cuda-runtime==13.0.96.*; sys_platform == 'linux' and extra == 'cudart'",
        "nvidia-cuda-runtime==99.0.0; sys_platform == 'win32' and extra == 'cudart'",
        "nvidia-cuda-cccl==13.3.5.0.6.*; extra == 'cccl'",
        "nvidia-cuda-crt==13.0.88.*; extra == 'crt'",
        "nvidia-nvvm==13.0.88.*; extra == 'nvvm'",
        "nvidia-cublas==13.0.0.19.*; extra == 'cublas'",
        "not a requirement ;;;",
    ]
    pins = plan.component_pins(requires)
    assert pins["nvidia-cuda-runtime"] == ("==13.0.96.*", "cudart")  # Linux row, not Windows'
    assert pins["nvidia-cuda-cccl"] == ("==13.3.5.0.6.*", "cccl")  # cccl's own numbering
    assert pins["nvidia-nvvm"][1] == "nvvm"  # the extra named after it wins over nvcc's
    assert "nvidia-cublas" not in pins
    with pytest.raises(plan.PlanError):
        plan.component_pins(requires[:3])  # no crt/nvvm/cccl extra (a 12.x meta)


def test_twelve_and_older_get_the_plain_answer(cli, tmp_path):
    assert plan.needs_runfile("12.9.1") and plan.needs_runfile("11.8") and not plan.needs_runfile("13.0")
    r = cli("install", "12.4", env={"PATH": TOOLS, "CUDAENV_DATA_DIR": str(tmp_path / "d")})
    assert r.code == 1
    assert "no pip build of nvcc exists" in r.out and "--runfile FILE" in r.out and "--plan" in r.out
    assert "conda install -c nvidia cuda-toolkit=12.4" in r.out
    data = json.loads(cli("install", "12.4", "--json", env={"PATH": TOOLS}).out)
    assert data["schema_version"] == 1 and data["status"] == "no-wheels" and data["ok"] is False


def test_report_parser_never_raises_and_reads_hashes():
    assert parse_install_report("") == () and parse_install_report("[1]") == () and parse_install_report("{" * 10000) == ()
    text = json.dumps({"install": [{"metadata": {"name": "x", "version": "1"}, "download_info": {
        "url": "https://h/p/x-1-py3-none-any.whl#sha256=ab", "archive_info": {"hashes": {"sha256": "A" * 64}}}}, {"bad": 1}]})
    (item,) = parse_install_report(text)
    assert item.filename == "x-1-py3-none-any.whl" and item.sha256 == "a" * 64
    assert parse_index_versions("x (1)\nAvailable versions: 13.0.2, 13.0.0rc1, 12.4.1\n") == ("13.0.2", "12.4.1")


# ------------------------------------------------------------------------------------------- the installer
def test_install_assembles_a_normal_toolkit_layout(index, cli, tmp_path, fake_root):
    data = fake_root.path / "data"  # inside the root `list --root` reads
    r = cli("install", "13.0", "--json", env=index.env(data))
    assert r.code == 0, r.err + r.out
    report = r.json()
    assert report["status"] == "installed" and report["release"] == "13.0.2" and report["schema_version"] == 1
    tk = data / "toolkits" / "13.0.2"
    assert report["path"] == str(tk)
    assert {c["name"]: c["version"] for c in report["components"]} == {p: v[0] for p, v in COMPONENTS.items()}
    assert os.readlink(tk / "lib64") == "lib"
    assert os.readlink(tk / "targets/x86_64-linux/include") == "../../include"
    assert os.readlink(tk / "targets/x86_64-linux/lib") == "../../lib"
    assert os.readlink(tk / "lib/libcudart.so") == "libcudart.so.13"
    assert os.readlink(tk / "lib/libnvvm.so") == "libnvvm.so.4"
    assert (tk / "targets/x86_64-linux/include/cccl/thrust/version.h").is_file()
    assert os.access(tk / "bin/nvcc", os.X_OK) and os.access(tk / "nvvm/bin/cicc", os.X_OK)
    assert not os.access(tk / "include/cuda.h", os.X_OK)
    assert not list(tk.glob("*.dist-info")) and not (tk / "__init__.py").exists()
    version = json.loads((tk / "version.json").read_text())
    assert version["cuda"]["version"] == "13.0.2" and version["cuda_nvcc"]["version"] == "13.0.88"
    assert version["cuda_cudart"]["version"] == "13.0.96" and version["libnvvm"]["version"] == "13.0.88"
    nothing_left_but(data, ["13.0.2"])
    # discovery: list finds it, install method cudaenv
    listed = cli("list", "--json", "--root", str(fake_root.path), env={"PATH": TOOLS, "CUDAENV_DATA_DIR": str(data)})
    (found,) = [t for t in listed.json()["toolkits"] if t["path"] == "/data/toolkits/13.0.2"]
    assert found["install_method"] == "cudaenv" and found["version"] == "13.0.2"
    use = cli("use", "13.0", "--root", str(fake_root.path), "--shell", "bash", env={"PATH": TOOLS, "CUDAENV_DATA_DIR": str(data)})
    assert use.code == 0 and "export CUDA_HOME='%s'" % tk in use.out
    # a second install says it is there; --reinstall does it again
    again = cli("install", "13.0", env=index.env(data))
    assert again.code == 0 and "already installed" in again.out
    assert sum("download" in line.split()[:1] for line in index.log.read_text().splitlines()) == 1
    re = cli("install", "13.0.2", "--reinstall", "--json", env=index.env(data))
    assert re.code == 0 and re.json()["status"] == "installed"
    nothing_left_but(data, ["13.0.2"])


STANDIN_CC = r"""#!%s
# A stand-in C compiler: `-E` prints cc's recorded preprocessing of cuda.h 13.0 (the per-thread variant when asked);
# `-shared ... -o OUT SRC` writes OUT as the source it was given. Every call is logged.
import os, sys
args = sys.argv[1:]
with open(os.environ["STANDIN_CC_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
if "-E" in args:
    ptds = "-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1" in args
    with open(os.environ["STANDIN_CC_RECORDED"] + ("ptds.txt" if ptds else "default.txt")) as fh:
        sys.stdout.write(fh.read())
elif "-shared" in args:
    with open(args[-1]) as src, open(args[args.index("-o") + 1], "w") as out:
        out.write(src.read())
"""


def test_the_install_builds_the_libcuda_stub_with_this_machines_compiler(index, cli, tmp_path):
    """Issue 17: `lib64/stubs/libcuda.so`, as the real toolkit has, so `-lcuda` links without a driver. No wheel
    ships it: it is built from the toolkit's own cuda.h (every CUresult entry point, the per-thread ones too)."""
    cc = index.bin / "cc"
    cc.write_text(STANDIN_CC % sys.executable)
    cc.chmod(0o755)
    data, log = tmp_path / "data", tmp_path / "cc.log"
    base = str(RECORDED / "cc-E-cuda-h-13.0-")
    r = cli("install", "13.0", "--json", env=index.env(data, STANDIN_CC_LOG=log, STANDIN_CC_RECORDED=base))
    assert r.code == 0, r.err + r.out
    assert not [w for w in r.json()["warnings"] if "libcuda" in w]
    source = (data / "toolkits/13.0.2/lib64/stubs/libcuda.so").read_text()
    assert "int cuInit(void) { return 34; }" in source  # CUDA_ERROR_STUB_LIBRARY, as cuda.h defines it
    assert "int cuLinkCreate_v2(void)" in source  # declared over two lines in cuda.h
    assert "int cuMemcpyHtoD_v2_ptds(void)" in source or "int cuMemcpy_ptds(void)" in source
    assert "cuCtxCreate(void)" not in source  # cuda.h's macro makes it a versioned name
    calls = log.read_text().splitlines()
    assert len(calls) == 3 and all(c.endswith("include/cuda.h") for c in calls[:2])
    assert "-Wl,-soname,libcuda.so.1" in calls[2] and "-fPIC" in calls[2]
    nothing_left_but(data, ["13.0.2"])


def test_without_a_compiler_the_install_says_that_lcuda_needs_a_driver(index, cli, tmp_path):
    data = tmp_path / "data"
    r = cli("install", "13.0", "--json", env=index.env(data))
    assert r.code == 0 and r.json()["status"] == "installed"
    (warning,) = [w for w in r.json()["warnings"] if "libcuda" in w]
    assert "no C compiler" in warning and "--reinstall" in warning
    assert not (data / "toolkits/13.0.2/lib/stubs").exists()


def test_hash_mismatch_installs_nothing(index, cli, tmp_path):
    other = make_wheel(index.www, "nvidia-cuda-crt", "13.0.88", {"include/crt/evil.h": "x"}, tag="py3-none-other")
    index.table["components"]["nvidia-cuda-crt"]["served"] = other.name
    index.write()
    data = tmp_path / "data"
    r = cli("install", "13.0", env=index.env(data))
    assert r.code == 1 and "sha256 mismatch" in r.err
    nothing_left(data)


@pytest.mark.parametrize("member, why", [
    ("nvidia/cu13/../../../evil", "climbs out"),
    ("/etc/evil", "absolute"),
])
def test_traversal_member_names_are_refused(index, cli, tmp_path, member, why):
    index.add("nvidia-cuda-crt", "13.0.88", {"include/crt/host_config.h": "x"}, extra_members=[(member, "boom")])
    index.write()
    data = tmp_path / "data"
    r = cli("install", "13.0", env=index.env(data))
    assert r.code == 1 and why in r.err, r.err
    nothing_left(data)
    assert not (tmp_path / "evil").exists()


def test_symlink_members_and_oversize_are_refused(tmp_path, monkeypatch):
    link = zipfile.ZipInfo("nvidia/cu13/lib/libx.so")
    link.external_attr = (0o120777 << 16)
    wheel = make_wheel(tmp_path, "nvidia-x", "1", {}, extra_members=[(link, "/etc/passwd")])
    dest = tmp_path / "tree"
    dest.mkdir()
    with pytest.raises(assemble.AssembleError, match="symlink"):
        assemble.unpack_wheel(str(wheel), str(dest), {}, [0])
    big = make_wheel(tmp_path, "nvidia-y", "1", {"lib/big.bin": "0" * 5000})
    monkeypatch.setattr(assemble, "MAX_MEMBER", 4000)
    with pytest.raises(assemble.AssembleError, match="bytes unpacked"):
        assemble.unpack_wheel(str(big), str(dest), {}, [0])
    assert not (dest / "lib" / "libx.so").exists()


def test_two_wheels_with_different_files_at_one_path_conflict(tmp_path):
    a = make_wheel(tmp_path, "nvidia-a", "1", {"include/x.h": "one"})
    b = make_wheel(tmp_path, "nvidia-b", "1", {"include/x.h": "two"})
    dest = tmp_path / "tree"
    dest.mkdir()
    seen = {}
    assemble.unpack_wheel(str(a), str(dest), seen, [0])
    with pytest.raises(assemble.AssembleError, match="different files"):
        assemble.unpack_wheel(str(b), str(dest), seen, [0])


def test_failing_download_leaves_nothing(index, cli, tmp_path):
    data = tmp_path / "data"
    r = cli("install", "13.0", env=index.env(data, STANDIN_FAIL="download"))
    assert r.code == 1 and "pip download failed" in r.err
    nothing_left(data)


def test_full_disk_leaves_nothing(index, cli, tmp_path):
    data = tmp_path / "data"
    r = cli("install", "13.0", env=index.env(data, STANDIN_FAIL="enospc"))
    assert r.code == 1 and "no space left on device" in r.err
    nothing_left(data)


def test_full_disk_while_unpacking_leaves_nothing(index, cli, tmp_path, monkeypatch):
    import errno

    real = assemble.fix_layout

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(assemble, "fix_layout", full)
    data = tmp_path / "data"
    r = cli("install", "13.0", env=index.env(data))
    assert r.code == 1 and "no space left on device" in r.err
    nothing_left(data)
    assert real is not full


def test_interrupt_mid_assembly_leaves_nothing(index, cli, tmp_path, monkeypatch):
    def ctrl_c(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(assemble, "fix_layout", ctrl_c)  # Ctrl-C arriving after the unpacking, before the rename
    data = tmp_path / "data"
    r = cli("install", "13.0", env=index.env(data))
    assert r.code == 130
    nothing_left(data)


def _spawn(env):
    exe = str(Path(sys.executable).parent / "cudaenv")
    return subprocess.Popen([exe, "install", "13.0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)


def _wait_for(path: Path, seconds=30):
    for _ in range(int(seconds / 0.05)):  # a bounded wait: only keeps a broken stand-in from hanging the test
        if path.exists():
            return
        time.sleep(0.05)
    assert path.exists(), "the stand-in pip never started downloading"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_download_leaves_nothing(index, tmp_path, sig):
    data = tmp_path / "data"
    started = tmp_path / "downloading"
    proc = _spawn(index.env(data, STANDIN_SLOW=started))
    try:
        _wait_for(started)
        assert any(n.startswith(".13.0.2.tmp-") for n in store(data))  # the staging folder exists mid-download
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (130, 143, -sig), (proc.returncode, err)
    nothing_left(data)


def test_a_later_install_removes_what_a_killed_one_left(index, cli, tmp_path):
    # issue 27: a SIGKILLed install leaves .13.0.2.tmp-* (up to 256 MB) and its lock; nothing removed them
    data = tmp_path / "data"
    left = data / "toolkits" / ".13.0.2.tmp-killed"
    (left / "wheels").mkdir(parents=True)
    (left / "wheels" / "part.whl").write_bytes(b"x" * 1000)
    (data / "toolkits" / ".13.0.2.lock").write_text("")
    (data / "toolkits" / ".12.8.1.rm-killed").mkdir()  # a killed removal too
    assert cli("install", "13.0", env=index.env(data)).code == 0
    nothing_left_but(data, ["13.0.2"])


def test_a_live_installs_staging_folder_is_never_removed(tmp_path):
    import fcntl

    from cudaenv.toolkit.install.apply import clean_stale

    base = tmp_path / "toolkits"
    (base / ".13.0.2.tmp-live").mkdir(parents=True)
    (base / ".12.9.1.tmp-dead").mkdir()
    fd = os.open(str(base / ".13.0.2.lock"), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # an install of 13.0.2 is running
        assert clean_stale(str(base)) == [".12.9.1.tmp-dead"]
        assert (base / ".13.0.2.tmp-live").is_dir()
    finally:
        os.close(fd)


def test_two_installs_at_once_one_waits_then_a_third_finds_it_installed(index, tmp_path):
    data = tmp_path / "data"
    started = tmp_path / "downloading"
    env = index.env(data, STANDIN_SLOW=started)
    first = _spawn(env)
    try:
        _wait_for(started)
        env2 = dict(env)
        env2.pop("STANDIN_SLOW")
        second = _spawn(env2)
        time.sleep(1.0)
        assert second.poll() is None  # it waits on the lock
        first.send_signal(signal.SIGINT)  # the first is interrupted: the second then installs it
        first.communicate(timeout=30)
        out, err = second.communicate(timeout=60)
    finally:
        for p in (first,):
            if p.poll() is None:
                p.kill()
    assert second.returncode == 0, err
    assert "Installed CUDA 13.0.2" in out
    nothing_left_but(data, ["13.0.2"])
    # a third install finds it installed and downloads nothing
    again = _spawn({k: v for k, v in env.items() if k != "STANDIN_SLOW"})
    out2, _ = again.communicate(timeout=60)
    assert "already installed" in out2
    downloads = [l for l in index.log.read_text().splitlines() if l.startswith("download")]
    assert len(downloads) == 2  # the interrupted one and the one that finished; the third found it installed


def test_uninstall_removes_a_cudaenv_install_after_asking(index, cli, tmp_path):
    data = tmp_path / "data"
    assert cli("install", "13.0", env=index.env(data)).code == 0
    env = {"PATH": TOOLS, "CUDAENV_DATA_DIR": str(data), "HOME": str(tmp_path)}
    tk = data / "toolkits" / "13.0.2"
    asked = cli("uninstall", "13.0.2", env=env)  # no terminal: nothing removed without --yes
    assert asked.code == 2 and "--yes" in asked.err and str(tk) in asked.out and tk.is_dir()
    gone = cli("uninstall", "13.0.2", "--yes", env=env)
    assert gone.code == 0 and "Removed %s" % tk in gone.out, gone.err
    nothing_left(data)
    assert "13.0.2" not in cli("list", env=env).out


# ------------------------------------------------------------------------------------------- 12.x: --plan and --runfile
from cudaenv.toolkit.install import repos  # noqa: E402


@pytest.mark.parametrize("distro, version, wsl, expected", [
    ("debian", "12", None, ["wget https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb",
                            "sudo dpkg -i cuda-keyring_1.1-1_all.deb", "sudo apt-get update",
                            "sudo apt-get install cuda-toolkit-12-4    # the toolkit only: not `cuda`, which also installs a driver"]),
    ("ubuntu", "22.04", None, ["wget https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb"]),
    ("rocky", "9.4", None, ["sudo dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/cuda-rhel9.repo",
                            "sudo dnf clean expire-cache",
                            "sudo dnf install cuda-toolkit-12-4    # the toolkit only: not `cuda`, which also installs a driver"]),
    ("rhel", "8.10", None, ["sudo dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/rhel8/x86_64/cuda-rhel8.repo"]),
    ("sles", "15.5", None, ["sudo zypper addrepo https://developer.download.nvidia.com/compute/cuda/repos/sles15/x86_64/cuda-sles15.repo",
                            "sudo zypper --gpg-auto-import-keys refresh",
                            "sudo zypper install cuda-toolkit-12-4    # the toolkit only: not `cuda`, which also installs a driver"]),
    ("ubuntu", "22.04", 2, ["# WSL2: the driver is the Windows one; the WSL-Ubuntu repository holds no driver. Never install `cuda`, "
                            "`cuda-drivers` or a Linux NVIDIA driver here.",
                            "wget https://developer.download.nvidia.com/compute/cuda/repos/wsl-ubuntu/x86_64/cuda-keyring_1.1-1_all.deb",
                            "sudo dpkg -i cuda-keyring_1.1-1_all.deb", "sudo apt-get update", "sudo apt-get install cuda-toolkit-12-4"]),
])
def test_plan_commands_per_distribution(distro, version, wsl, expected):
    commands, source = repos.plan_commands("12.4", distro, version, wsl, "x86_64")
    assert list(commands[: len(expected)]) == expected
    assert commands[-1].startswith("conda install -c nvidia cuda-toolkit=12.4")
    assert "docs.nvidia.com" in source
    installs = [c for c in commands if " install " in c and not c.startswith("#")]
    assert all("cuda-toolkit-12-4" in c or c.startswith("conda") for c in installs)
    assert not any(c.split("#")[0].split()[-1] in ("cuda", "cuda-drivers", "cuda-12-4") for c in installs)


def test_plan_on_a_wsl2_ubuntu_root(cli, fake_root, recorded):
    fake_root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
    fake_root.file("proc/version", recorded("proc-version-wsl2.txt"))
    fake_root.file("proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    r = cli("install", "12.4", "--plan", env={"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path)})
    assert r.code == 0, r.err
    assert "WSL2 Ubuntu 22.04.4 LTS" in r.out and "repos/wsl-ubuntu/x86_64" in r.out and "apt-get install cuda-toolkit-12-4" in r.out
    assert "ubuntu2204" not in r.out


def test_plan_is_for_twelve_and_older(cli):
    r = cli("install", "13.0", "--plan", env={"PATH": TOOLS})
    assert r.code == 2 and "12.x and older" in r.err


MAKESELF = __import__("shutil").which("makeself") or __import__("shutil").which("makeself.sh")
# what a makeself header calls when it runs
RUN_TOOLS = tools("dirname", "basename", "tar", "gzip", "md5sum", "sha256sum", "cksum", "head", "tail", "dd", "mkdir", "rm",
                  "wc", "mktemp", "df", "sed", "awk", "expr", "cut", "pwd", "id", "tr", "ls", "grep", "uname", "find", "sleep")


def _runfile(tmp_path, version="12.4.1", log=None):
    """A makeself archive standing in for NVIDIA's runfile: NVIDIA's header passes installer flags through (Debian's
    makeself stops at an unknown flag), so that one header line is changed to pass them, keeping the line count."""
    src = tmp_path / "runsrc"
    src.mkdir()
    (src / "cuda-installer").write_text("""#!/bin/sh
printf '%%s\\n' "$@" > %s
for a in "$@"; do case "$a" in --toolkitpath=*) tk="${a#--toolkitpath=}";; esac; done
[ -n "$tk" ] || exit 3
/bin/mkdir -p "$tk/bin" "$tk/lib64" "$tk/include" || exit 4
printf '#!/bin/sh\\necho nvcc\\n' > "$tk/bin/nvcc"; /bin/chmod +x "$tk/bin/nvcc"
printf '{"cuda" : {"name" : "CUDA SDK", "version" : "%s"}}\\n' > "$tk/version.json"
printf '#define CUDA_VERSION 12040\\n' > "$tk/include/cuda.h"
""" % (log, version))
    (src / "cuda-installer").chmod(0o755)
    out = tmp_path / ("cuda_%s_550.54.15_linux.run" % version)
    res = subprocess.run([MAKESELF, "--quiet", str(src), str(out), "CUDA Toolkit %s" % version, "./cuda-installer"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    text = out.read_bytes()
    patched = text.replace(b'\techo Unrecognized flag : "$1" >&2\n', b"\tbreak\n", 1)
    assert patched != text
    out.write_bytes(patched)
    return out


@pytest.mark.skipif(MAKESELF is None, reason="makeself is not installed")
def test_runfile_installs_the_toolkit_only_into_the_data_dir(cli, tmp_path):
    log = tmp_path / "args.txt"
    runfile = _runfile(tmp_path, log=log)
    data = tmp_path / "data"
    env = {"PATH": RUN_TOOLS, "CUDAENV_DATA_DIR": str(data), "HOME": str(tmp_path)}
    r = cli("install", "12.4", "--runfile", str(runfile), "--json", env=env)
    assert r.code == 0, r.err
    args = log.read_text().split("\n")
    assert "--silent" in args and "--toolkit" in args
    assert not any(a.startswith("--driver") for a in args)
    (toolkitpath,) = [a.split("=", 1)[1] for a in args if a.startswith("--toolkitpath=")]
    assert toolkitpath.startswith(str(data / "toolkits" / ".12.4.1.tmp-"))  # staged inside the data dir
    (tmpdir,) = [a.split("=", 1)[1] for a in args if a.startswith("--tmpdir=")]
    assert tmpdir.startswith(str(data / "toolkits" / ".12.4.1.tmp-"))  # the installer's scratch folder too
    assert "--no-man-page" in args and "--override" in args and "--no-opengl-libs" not in args
    tk = data / "toolkits" / "12.4.1"
    assert r.json()["path"] == str(tk) and (tk / "bin/nvcc").is_file() and (tk / ".cudaenv-install.json").is_file()
    nothing_left_but(data, ["12.4.1"])


@pytest.mark.skipif(MAKESELF is None, reason="makeself is not installed")
def test_a_damaged_runfile_is_refused_unrun(cli, tmp_path):
    log = tmp_path / "args.txt"
    runfile = _runfile(tmp_path, log=log)
    runfile.write_bytes(runfile.read_bytes()[:-200])  # a cut download
    data = tmp_path / "data"
    r = cli("install", "12.4", "--runfile", str(runfile), env={"PATH": RUN_TOOLS, "CUDAENV_DATA_DIR": str(data)})
    assert r.code == 1 and "check-installer" in r.err + r.out
    assert not log.exists()
    nothing_left(data)


def test_list_splits_wheels_from_runfile_releases_and_caches(index, cli, tmp_path):
    cache = tmp_path / "cache"
    env = index.env(tmp_path / "data", CUDAENV_CACHE_DIR=cache)
    r = cli("install", "--list", "--json", env=env)
    assert r.code == 0, r.err
    data = r.json()
    assert data["wheels"] == ["13.1.0", "13.0.2", "13.0.1"] and data["runfile_or_repository"] == ["12.9.1", "12.4.1"]
    assert data["source"] == "index" and (cache / "toolkit-releases.json").is_file()
    # offline first: the fresh cache answers without pip
    index.table["releases"] = ["13.2.0"]
    index.write()
    again = cli("install", "--list", env=env)
    assert again.code == 0 and "13.1.0, 13.0.2, 13.0.1" in again.out and "13.2.0" not in again.out
    assert index.page_reads() == 1  # the index page was read once; the second --list was the cache's
    assert not index.log.exists()  # the index client read it: pip was never run


def test_driver_older_than_the_release_minimum_is_a_warning():
    from cudaenv.toolkit.install.precheck import driver_warnings

    (warning,) = driver_warnings("550.54.15", "13.0.2")
    assert "550.54.15 is older than 580" in warning and "CUDA 12." in warning
    assert driver_warnings("580.65.06", "13.0.2") == [] and driver_warnings(None, "13.0.2") == []


def test_a_gpu_the_release_cannot_build_for_is_a_warning():
    from cudaenv.model.snapshot import Gpu
    from cudaenv.toolkit.install.precheck import gpu_warnings, oldest_cc

    assert oldest_cc("13.0.2") == "7.5" and oldest_cc("12.9.1") == "5.0"
    gpus = [Gpu(0, "Tesla V100-SXM2-16GB", compute_capability="7.0"), Gpu(1, "NVIDIA A100", compute_capability="8.0")]
    (warning,) = gpu_warnings(gpus, "13.0.2")
    assert warning.startswith("GPU 0 (Tesla V100-SXM2-16GB, sm_70): CUDA 13.0 builds nothing for it") and "sm_75" in warning
    assert "12.9" in warning and gpu_warnings(gpus[1:], "13.0.2") == []


def test_installer_uv_gives_the_same_layout(index, cli, tmp_path):
    data = tmp_path / "data"
    assert cli("install", "13.0", "--installer", "uv", env=index.env(data)).code == 2  # no uv on PATH: said, not guessed
    index.uv.rename(index.bin / "uv")
    r = cli("install", "13.0", "--installer", "uv", "--json", env=index.env(data))
    assert r.code == 0, r.err
    assert r.json()["installer"] == "uv"
    tk = data / "toolkits" / "13.0.2"
    assert os.readlink(tk / "lib/libcudart.so") == "libcudart.so.13" and os.access(tk / "bin/nvcc", os.X_OK)
    assert not (tk / "__init__.py").exists() and json.loads((tk / "version.json").read_text())["cuda"]["version"] == "13.0.2"
    log = index.log.read_text().splitlines()
    assert any(l.startswith("pip install --no-deps --require-hashes --target") for l in log)
    assert not any(l.startswith("download") for l in log)
    nothing_left_but(data, ["13.0.2"])


def test_a_failed_swap_keeps_the_installed_toolkit(tmp_path, monkeypatch):
    from cudaenv.toolkit.install import apply

    target, tree, old = tmp_path / "13.0.2", tmp_path / "tree", tmp_path / "old"
    target.mkdir()
    (target / "keep").write_text("x")
    tree.mkdir()
    real = os.rename

    def rename(a, b):
        if str(a) == str(tree):
            raise KeyboardInterrupt
        return real(a, b)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(KeyboardInterrupt):
        apply.swap_into_place(str(tree), str(target), str(old))
    assert (target / "keep").read_text() == "x" and not old.exists()


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200)
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1")), st.none(), st.integers()))
def test_pip_output_parsers_never_raise(text):
    versions = parse_index_versions(text)
    assert isinstance(versions, tuple) and all(isinstance(v, str) for v in versions)
    assert isinstance(parse_install_report(text), tuple)


@settings(max_examples=100)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(
                        ["install", "metadata", "download_info", "name", "version", "url", "archive_info", "hashes",
                         "sha256", "requires_dist", "requested_extras"]), kids, max_size=5), max_leaves=30))
def test_install_report_parser_takes_any_json_shape(value):
    items = parse_install_report(json.dumps({"install": [value]}))
    assert all(item.name and item.version and item.url for item in items)


@pytest.mark.skipif(MAKESELF is None, reason="makeself is not installed")
def test_a_runfile_of_another_release_than_the_spec_is_refused_unrun(cli, tmp_path):
    """The runfile's release is matched against the spec with the toolkit selector's grammar
    (cudaenv.toolkit.select.names_version): 12.1 does not name the 12.4.1 inside it."""
    log = tmp_path / "args.txt"
    runfile = _runfile(tmp_path, log=log)
    data = tmp_path / "data"
    r = cli("install", "12.1", "--runfile", str(runfile), env={"PATH": RUN_TOOLS, "CUDAENV_DATA_DIR": str(data)})
    assert r.code != 0 and "holds CUDA 12.4.1, not 12.1" in r.err + r.out
    assert not log.exists()


@pytest.mark.parametrize("root, sudo, prefixed", [(True, False, False), (True, True, False), (False, True, True),
                                                  (False, False, False)])
def test_plan_prints_sudo_only_where_it_is_needed_and_present(cli, tmp_path, monkeypatch, root, sudo, prefixed):
    # issue 27: `install --plan` printed sudo for root on a machine without sudo
    from cudaenv.model.snapshot import Platform
    from cudaenv.probes import platform as probe
    from cudaenv.toolkit import sudo as sudo_rule

    monkeypatch.setattr(probe, "probe_platform", lambda host, notes: Platform(
        system="linux", distro="Ubuntu 22.04.4 LTS", distro_id="ubuntu", distro_version="22.04", machine="x86_64"))
    monkeypatch.setattr(sudo_rule, "is_root", lambda: root)
    path = TOOLS
    if sudo:
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "sudo").write_text("#!/bin/sh\nexit 0\n")
        (fake / "sudo").chmod(0o755)
        path = "%s:%s" % (fake, TOOLS)
    r = cli("install", "12.4", "--plan", env={"PATH": path})
    assert r.code == 0, r.err
    assert ("sudo apt-get install cuda-toolkit-12-4" in r.out) == prefixed, r.out
    assert "apt-get install cuda-toolkit-12-4" in r.out and ("sudo" in r.out) == prefixed
