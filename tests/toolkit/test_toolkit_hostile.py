"""Issue 12 for the toolkit commands: an image under --root is read, never run; odd bytes and escape sequences in
toolkit paths never crash or reach the terminal; a huge dpkg database is streamed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.host import Host

from builders import TOOLS as BIN  # sh, cat, touch, ... only: never the machine's own programs
CUDAENV = str(Path(sys.executable).parent / "cudaenv")


# -------------------------------------------------------------- nothing inside --root is executed
def _trap_toolkit(fake_root, tmp_path, name="cuda-12.4"):
    """A toolkit in the image with no version file at all, whose nvcc leaves a marker when anything runs it."""
    marker = tmp_path / "NVCC-RAN"
    base = fake_root.dir("usr/local/%s" % name)
    fake_root.dir("usr/local/%s/lib64" % name)
    fake_root.executable("usr/local/%s/bin/nvcc" % name, "#!/bin/sh\ntouch %s\necho 'release 12.4'\n" % marker)
    return base, marker


@pytest.mark.parametrize(
    "argv",
    [
        ("list",),
        ("list", "--json"),
        ("use", "/usr/local/cuda-12.4", "--shell", "bash"),
        ("use", "--complete"),
        ("link", "/usr/local/cuda-12.4"),
        ("uninstall", "/usr/local/cuda-12.4"),
        ("uninstall", "/usr/local/cuda-12.4", "--json"),
        ("doctor", "--quick"),
        ("doctor", "--quick", "--json"),
        ("verify", "--toolkit"),
        ("verify", "--toolkit", "--json"),
    ],
)
def test_an_images_nvcc_is_never_run(cli, fake_root, tmp_path, argv):
    _base, marker = _trap_toolkit(fake_root, tmp_path)
    env = {"PATH": "/usr/local/cuda-12.4/bin:" + BIN, "HOME": str(tmp_path)}
    res = cli(*argv, "--root", str(fake_root.path), env=env)
    assert not marker.exists(), res
    assert "Traceback" not in res.err


def test_verify_toolkit_under_root_says_why_it_cannot_compile(cli, fake_root, tmp_path):
    _base, marker = _trap_toolkit(fake_root, tmp_path)
    res = cli("verify", "--toolkit", "--root", str(fake_root.path), env={"PATH": BIN, "HOME": str(tmp_path)})
    assert res.code == 2 and res.out == ""
    assert "cudaenv never runs a program found under --root" in res.err and "--nvcc PATH" in res.err
    assert not marker.exists()


def test_host_refuses_a_program_inside_the_root_even_by_its_real_path(fake_root, tmp_path):
    """The seam itself: whatever a caller passes (the image's path on this machine, or a link to it from outside),
    a program inside --root is a 'refused' result, never a process."""
    _base, marker = _trap_toolkit(fake_root, tmp_path)
    host = Host(root=str(fake_root.path), env={"PATH": BIN})
    inside = str(fake_root.path / "usr/local/cuda-12.4/bin/nvcc")
    outside = tmp_path / "nvcc-link"
    outside.symlink_to(inside)
    for program in (inside, str(outside)):
        res = host.run([program, "--version"], timeout=5)
        assert (res.error, res.returncode, res.ok) == ("refused", None, False)
        assert "never runs its programs" in res.describe()
    assert not marker.exists()
    assert Host(root=str(fake_root.path), env={"PATH": BIN}).run([sys.executable, "-c", "print(1)"], timeout=30).stdout.strip() == "1"


def test_the_note_says_only_running_nvcc_could_tell(cli, fake_root, tmp_path):
    _base, marker = _trap_toolkit(fake_root, tmp_path)
    res = cli("list", "--json", "--root", str(fake_root.path), env={"PATH": BIN})
    data = res.json()
    tk = next(t for t in data["toolkits"] if t["path"] == "/usr/local/cuda-12.4")
    assert tk["version"] is None
    notes = " ".join(n["message"] for n in data.get("notes", []))
    assert "only running that nvcc could tell (nothing inside --root is run)" in notes
    assert not marker.exists()


def test_the_version_is_read_from_the_nvcc_binary_instead(cli, fake_root, tmp_path):
    """The release string stored in nvcc's bytes tells the version without running it."""
    marker = tmp_path / "NVCC-RAN"
    fake_root.dir("usr/local/cuda-12.6/lib64")
    blob = b"\x7fELF" + os.urandom(3 * 1024 * 1024) + b"Cuda compilation tools, release 12.6, V12.6.85\n\0" + b"\0" * 4096
    nvcc = fake_root / "usr/local/cuda-12.6/bin/nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_bytes(blob)
    nvcc.chmod(0o755)
    res = cli("list", "--json", "--root", str(fake_root.path), env={"PATH": BIN})
    tk = next(t for t in res.json()["toolkits"] if t["path"] == "/usr/local/cuda-12.6")
    assert (tk["version"], tk["version_source"]) == ("12.6.85", "nvcc-file")
    assert not marker.exists()


def test_without_root_a_toolkit_nvcc_still_answers(fake_root, tmp_path):
    """On the machine itself (no --root), running the toolkit's own nvcc stays the last resort.

    A Host on the real ``/`` is what "no --root" means, so the probe is not run whole (it would search this
    machine's /usr/local, /opt, PATH and dpkg database, and a real /usr/local/cuda-12.4 could be the toolkit found):
    only the one toolkit folder of the test is considered and built, with the dpkg database and runfile table off.
    The same folder under --root is never run (test_the_note_says_only_running_nvcc_could_tell)."""
    from cudaenv.probes.toolkits.candidate import ToolkitCandidate
    from cudaenv.probes.toolkits import _Finder

    base, marker = _trap_toolkit(fake_root, tmp_path)
    host = Host(root="/", env={"PATH": BIN}, system="linux")
    assert not host.rooted
    finder = _Finder(host, [], install_methods=False)
    finder.consider(ToolkitCandidate(str(base), "CUDAENV_TOOLKITS", strict=True))
    (found,) = finder.found
    tk = finder.build(found)
    assert tk.path == os.path.realpath(str(base)) and marker.exists() and (tk.version, tk.version_source) == ("12.4", "nvcc")
    rooted = Host(root=str(fake_root.path), env={"PATH": BIN}, system="linux")
    marker.unlink()
    finder = _Finder(rooted, [], install_methods=False)
    finder.consider(ToolkitCandidate("/usr/local/cuda-12.4", "CUDAENV_TOOLKITS", strict=True))
    assert finder.build(finder.found[0]).version is None and not marker.exists()  # the same build under --root: not run


# -------------------------------------------------------------- odd bytes and escapes in paths
ODD = b"cuda-12.4-\xff\xfe"


def _odd_root(tmp_path):
    """An image whose toolkit folder name is not UTF-8, found through CUDA_HOME (given as the same bytes)."""
    root = tmp_path / "img"
    base = os.path.join(os.fsencode(str(root)), b"usr", b"local", ODD)
    os.makedirs(os.path.join(base, b"bin"))
    os.makedirs(os.path.join(base, b"lib64"))
    with open(os.path.join(base, b"version.json"), "w") as fh:
        json.dump({"cuda": {"name": "CUDA SDK", "version": "12.4.131"}}, fh)
    with open(os.path.join(base, b"bin", b"nvcc"), "w") as fh:
        fh.write("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    os.chmod(os.path.join(base, b"bin", b"nvcc"), 0o755)
    os.makedirs(os.path.join(os.fsencode(str(root)), b"var", b"lib", b"dpkg"))
    return root, b"/usr/local/" + ODD


def _run(argv, env, lang, cwd=None):
    full = {"PATH": BIN, "LANG": lang, "LC_ALL": lang, "HOME": "/nonexistent"}
    full.update(env)
    proc = subprocess.run([CUDAENV, *argv], capture_output=True, env={os.fsencode(k): os.fsencode(v) if isinstance(v, str) else v
                                                                      for k, v in full.items()}, timeout=60, cwd=cwd)
    return proc


@pytest.mark.parametrize("lang", ["en_US.UTF-8", "C.UTF-8"])
@pytest.mark.parametrize(
    "argv",
    [("list",), ("list", "--json"), ("doctor", "--quick"), ("doctor", "--quick", "--json"), ("link", "12.4"),
     ("uninstall", "12.4"), ("uninstall", "12.4", "--json")],
)
def test_non_utf8_toolkit_paths_never_crash(tmp_path, lang, argv):
    root, odd = _odd_root(tmp_path)
    proc = _run([*argv, "--root", str(root)], {"CUDA_HOME": odd}, lang)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in (0, 1), proc.stderr.decode("utf-8", "replace")
    if "--json" in argv:
        json.loads(proc.stdout)  # valid JSON, the path escaped or carried as text
    elif argv[0] == "list":
        assert b"cuda-12.4-\\xff\\xfe" in proc.stdout  # shown escaped, never the raw bytes
        assert b"\xff" not in proc.stdout


@pytest.mark.parametrize("lang", ["en_US.UTF-8", "C.UTF-8"])
def test_uninstall_script_names_the_exact_bytes(tmp_path, lang):
    root, odd = _odd_root(tmp_path)
    script = tmp_path / "plan.sh"
    proc = _run(["uninstall", "12.4", "--root", str(root), "--script", str(script)], {}, lang)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    body = script.read_bytes()
    assert b"$'" in body and b"\\xff\\xfe" in body  # the folder is named by its bytes, quoted for bash
    # and bash reads that quoting back to the very bytes
    line = next(l for l in body.split(b"\n") if b"\\xff\\xfe" in l and b"$'" in l)
    quoted = line[line.index(b"$'"):].split(b" ", 1)[0]
    echoed = subprocess.run(["bash", "-c", b"printf %s " + quoted], capture_output=True, timeout=10).stdout
    assert echoed.endswith(ODD)


def test_list_escapes_controls_in_folder_names(cli, fake_root):
    fake_root.toolkit("12.4.131", name="cuda-12.4\x1b]0;pwned\x07")
    fake_root.toolkit("12.1.105", name="cuda-12.1\nFAKE ROW\t")
    res = cli("list", "--root", str(fake_root.path), env={"PATH": BIN})
    assert res.code == 0, res
    assert "\x1b" not in res.out and "\x07" not in res.out and "\t" not in res.out
    assert "cuda-12.4\\x1b]0;pwned\\x07" in res.out
    assert "cuda-12.1\\nFAKE ROW\\t" in res.out
    assert not any(line.startswith("FAKE ROW") for line in res.out.splitlines())


def test_a_3000_digit_release_does_not_widen_list(cli, fake_root):
    base = fake_root.toolkit("12.4.131", version_json=False, cuda_h=False)
    (base / "bin" / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release %s.0, V%s.0.1'\n" % ("1" * 3000, "1" * 3000))
    res = cli("list", "--root", str(fake_root.path), env={"PATH": BIN})
    assert res.code == 0, res
    assert all(len(line) <= 80 for line in res.out.splitlines()), max(map(len, res.out.splitlines()))


# -------------------------------------------------------------- a huge dpkg database is streamed
def test_a_big_dpkg_status_is_streamed(tmp_path, fake_root):
    fake_root.toolkit("12.4.131", runfile=True)
    status = fake_root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    stanza = ("Package: pkg-%d\nStatus: install ok installed\nVersion: 1.0\nDescription: filler\n" + (" " + "x" * 120 + "\n") * 400 + "\n")
    with open(status, "w") as fh:
        for i in range(2200):  # about 107 MB
            fh.write(stanza % i)
    (fake_root / "var/lib/dpkg/info").mkdir()
    size = status.stat().st_size
    # VmHWM, not ru_maxrss: Linux keeps the forking parent's (pytest's) high-water mark in ru_maxrss across exec
    code = ("import io; from cudaenv.cli import main; rc = main(['uninstall', '12.4', '--json', '--root', %r], "
            "env={'PATH': %r}, out=io.StringIO(), err=io.StringIO()); "
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')][0])" % (str(fake_root.path), BIN))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    peak_kib = int(proc.stdout.strip().splitlines()[-1])
    assert size > 100 * 1024 * 1024
    assert peak_kib * 1024 < size * 0.6, "peak RSS %d MiB for a %d MiB status" % (peak_kib // 1024, size // 2 ** 20)


@pytest.mark.parametrize("place", ["usr/lib/wsl/lib/nvidia-smi", "usr/local/nvidia/bin/nvidia-smi", "usr/bin/nvidia-smi"])
def test_an_images_nvidia_smi_is_never_run(cli, fake_root, tmp_path, place):
    """The driver places the probe looks at (WSL, a GKE-style mount, PATH inside the image) are the image's files."""
    marker = tmp_path / "SMI-RAN"
    fake_root.executable(place, "#!/bin/sh\ntouch %s\necho '0, NVIDIA A100, 580.126.09, 8.0, 40960, 0, GPU-a, 0:10:1C.0'\n" % marker)
    res = cli("doctor", "--json", "--python", sys.executable, "--root", str(fake_root.path),
              env={"PATH": BIN, "HOME": str(tmp_path)})  # never this machine's /usr/bin (a GPU box's nvidia-smi)
    assert not marker.exists(), res
    assert "Traceback" not in res.err
    data = res.json()
    assert data["gpus"] == []  # nothing it could only have learnt by running the image's program
    smi = next(t for t in data["tools"] if t["tool"] == "nvidia-smi")
    if place == "usr/bin/nvidia-smi":  # not one of the driver places the probe looks at inside the root
        assert smi["status"] == "missing"
    else:  # the driver places the probe looks at inside the root: found, named, not run
        assert smi["status"] == "not run" and smi["path"].endswith(place)


def test_an_images_nvml_library_is_never_loaded(cli, fake_root, tmp_path):
    """Loading the image's libnvidia-ml.so.1 would run its code (constructors) in cudaenv's NVML child."""
    fake_root.file("usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "not an ELF file, and never opened as one")
    res = cli("doctor", "--json", "--python", sys.executable, "--root", str(fake_root.path), env={"PATH": BIN, "HOME": str(tmp_path)})
    nvml = next(t for t in res.json()["tools"] if t["tool"] == "nvml")
    assert nvml["status"] == "not run" and nvml["failure"] is None  # a load attempt would have said "failed"
    notes = " ".join(n["message"] for n in res.json()["notes"])
    assert "never run or loaded" in notes
