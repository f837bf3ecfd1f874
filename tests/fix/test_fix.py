"""`cudaenv fix`: plan, refusals, and the whole flow end to end against a local wheel index.

The end-to-end tests build tiny stand-in wheels (torch and torchvision with local tags and a
torch/version.py), serve them from a PEP 503 index on 127.0.0.1, and let `cudaenv fix` replace a real
CPU torch 2.13.0 in a fresh venv. pip inside only sees that index: --index-url plus PIP_CONFIG_FILE=/dev/null.
"""

import base64
import functools
import hashlib
import os
import subprocess
import sys
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cudaenv.host import Host
from cudaenv.fix.apply import run_install
from cudaenv.fix.plan import driver_steps, plan_choices
from cudaenv.recommend import recommend
from cudaenv.model.snapshot import Driver, Gpu, Platform, Snapshot, Torch

from builders import recorded

TITAN_QUERY = "smi-query-titanv-5880.txt"  # TITAN V (7.0) + RTX 5880 Ada (8.9), driver 570.86.15


# ------------------------------------------------------------------ pure parts
def _snap(**platform):
    return Snapshot(platform=Platform(system=platform.pop("system", "linux"), machine="x86_64", **platform),
                    driver=Driver(version="520.61.05"), gpus=(Gpu(0, name="NVIDIA GeForce RTX 2080 Ti", compute_capability="7.5"),),
                    torch=Torch(python="/venv/bin/python", installed=True, version="2.13.0+cpu", python_version="3.11.7"))


def test_driver_steps_per_platform():
    wsl = driver_steps(_snap(wsl=2).platform, "525.60.13")
    assert "never a Linux NVIDIA driver inside WSL" in wsl[0] and any("wsl --shutdown" in s for s in wsl)
    ubuntu = driver_steps(_snap(distro_id="ubuntu").platform, "525.60.13")
    assert "sudo ubuntu-drivers install nvidia:525" in ubuntu
    debian = driver_steps(_snap(distro_id="debian").platform, "580")
    assert any("nvidia-driver" in s for s in debian)
    win = driver_steps(_snap(system="windows").platform, "528.33")
    assert "at least 528.33" in win[0]
    wsl1 = driver_steps(_snap(wsl=1).platform, "525.60.13")
    assert "WSL1 cannot use the GPU" in wsl1[0] and any("wsl --set-version" in s for s in wsl1)
    assert not any("apt-get" in s or "ubuntu-drivers" in s for s in wsl + wsl1)  # never a driver inside WSL
    other = driver_steps(_snap(distro_id="fedora").platform, "580")
    assert "at least 580" in other[0] and "cuda-drivers" in other[0]


def test_plan_offers_recommended_then_driver_then_nothing():
    snap = _snap(distro_id="ubuntu")
    rec = recommend(snap)  # 520 driver: torch 2.13.0 does not fit; driver upgrade named
    assert not rec.ok
    choices = plan_choices(snap.platform, rec, [], [])
    assert [c.key for c in choices] == ["driver", "quit"]
    assert "525.60.13" in choices[0].title
    older = recommend(snap, torch_version="2.7.1")
    choices = plan_choices(snap.platform, older, [], [])
    assert choices[0].key == "install" and "recommended" in choices[0].title and "cu118" in choices[0].title
    assert [c.key for c in choices] == ["install", "quit"]
    # fell back from the wanted 2.13.0 to 2.7.1: the driver upgrade that gets 2.13.0 stays on offer
    choices = plan_choices(snap.platform, older, [], [], wanted=rec)
    assert [c.key for c in choices] == ["install", "driver", "quit"]
    assert choices[1].title == "Fix the driver instead (>= 525.60.13 for torch 2.13.0)"
    assert "sudo ubuntu-drivers install nvidia:525" in choices[1].steps


def test_stream_times_out_and_kills(tmp_path):
    host = Host("/", dict(os.environ))
    code, timed_out, output, _ = run_install(host, [sys.executable, "-c", "import time; print('hi', flush=True); time.sleep(30)"], 1.0)
    assert timed_out and code is None  # the child sleeps 30 s: only the 1 s timeout ends it without an exit code
    assert "hi" in output


# ------------------------------------------------------------------ stand-in wheels and the index
TORCH_INIT = '''
from torch import version
from torch.version import __version__
from torch import cuda, backends
'''
TORCH_VERSION = "__version__ = '{version}'\ngit_version = 'stand-in'\ncuda = {cuda!r}\nhip = None\ndebug = False\n"
TORCH_CUDA = '''
_GPUS = [("NVIDIA TITAN V", (7, 0)), ("NVIDIA RTX 5880 Ada Generation", (8, 9))]
def is_available():
    return {available}
def device_count():
    return len(_GPUS) if {available} else 0
def get_device_name(i):
    return _GPUS[i][0]
def get_device_capability(i):
    return _GPUS[i][1]
def get_device_properties(i):
    return None
def get_arch_list():
    return {arch!r}
'''
BACKENDS = "class cudnn:\n    @staticmethod\n    def version():\n        return None\n"


def make_wheel(folder: Path, name: str, version: str, files: dict) -> Path:
    """A pure-Python wheel written with zipfile (METADATA, WHEEL, RECORD with hashes)."""
    dist = "%s-%s.dist-info" % (name, version)
    entries = dict(files)
    entries[dist + "/METADATA"] = "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: stand-in for tests\n" % (name, version)
    entries[dist + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: cudaenv-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, text in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(text.encode())))
    record.append(dist + "/RECORD,,")
    entries[dist + "/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / ("%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in entries.items():
            zf.writestr(path, text)
    return wheel


def stand_in_torch(folder: Path, version: str, cuda):
    arch = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"] if cuda else []
    return make_wheel(folder, "torch", version, {
        "torch/__init__.py": TORCH_INIT,
        "torch/version.py": TORCH_VERSION.format(version=version, cuda=cuda),
        "torch/cuda/__init__.py": TORCH_CUDA.format(available=bool(cuda), arch=arch),
        "torch/backends/__init__.py": BACKENDS,
    })


def stand_in_torchvision(folder: Path, version: str):
    return make_wheel(folder, "torchvision", version, {"torchvision/__init__.py": "__version__ = %r\n" % version})


def build_index(root: Path, wheels: dict) -> None:
    """root/whl/VARIANT/PROJECT/index.html (PEP 503) linking to root/whl/VARIANT/FILE."""
    for variant, files in wheels.items():
        vdir = root / "whl" / variant
        for project in sorted({f.name.split("-")[0] for f in files}):
            pdir = vdir / project
            pdir.mkdir(parents=True, exist_ok=True)
            links = "".join('<a href="../%s">%s</a><br/>\n' % (f.name.replace("+", "%2B"), f.name)
                            for f in files if f.name.startswith(project + "-"))
            (pdir / "index.html").write_text("<!DOCTYPE html><html><body>\n%s</body></html>\n" % links)


@pytest.fixture
def wheel_index(tmp_path):
    www = tmp_path / "www"
    for variant in ("cu126", "cpu"):
        (www / "whl" / variant).mkdir(parents=True)
    cu = www / "whl" / "cu126"
    cpu = www / "whl" / "cpu"
    build_index(www, {
        "cu126": [stand_in_torch(cu, "2.13.0+cu126", "12.6"), stand_in_torchvision(cu, "0.28.0+cu126"),
                  stand_in_torch(cu, "2.14.1+cu126", "12.6"), stand_in_torchvision(cu, "0.29.1+cu126")],
        "cpu": [stand_in_torchvision(cpu, "0.28.0+cpu")],
    })
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d/whl" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def clean_env(extra):
    """The machine's environment minus every PIP_* setting, with pip's config files off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "CONDA", "CUDAENV_", "PYTHON"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def make_venv(path: Path, with_torch: bool, index: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    py = path / "bin" / "python"
    if with_torch:
        # the real CPU torch 2.13.0, from this machine's local wheels (its normal pip configuration)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "torch==2.13.0"], check=True, timeout=600,
                       env={k: v for k, v in os.environ.items() if k not in ("PIP_CONFIG_FILE",)})
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "torchvision==0.28.0+cpu", "--index-url", index + "/cpu"],
                       check=True, timeout=120, env=clean_env({}))
    return py


def _fix_env(fake_bin, tmp_path):
    fake_bin.command("nvidia-smi", recorded("smi-banner-550-single.txt"), by_args={"--query-gpu": (recorded(TITAN_QUERY), 0)})
    return clean_env({"PATH": fake_bin.env_path, "HOME": str(tmp_path / "home"), "CUDAENV_CACHE_DIR": str(tmp_path / "cache"),
                      "CUDAENV_INSTALL_TIMEOUT": "300"})


def _installed(py):
    out = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('torch'), m.version('torchvision'))"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.split()


@pytest.mark.torch
@pytest.mark.slow
def test_fix_replaces_a_real_cpu_torch(tmp_path, fake_root, fake_bin, wheel_index, cli_subprocess):
    py = make_venv(tmp_path / "venv", True, wheel_index)
    assert _installed(py) == ["2.13.0+cpu", "0.28.0+cpu"]
    env = _fix_env(fake_bin, tmp_path)
    common = ["--root", str(fake_root.path), "--python", str(py)]
    # --dry-run: the plan, nothing changed
    res = cli_subprocess("fix", "--dry-run", *common, "--index-base", wheel_index, env=env, timeout=300)
    assert res.code == 0, res
    assert "[torch-cpu-only]" in res.out and "torch==2.13.0+cu126 torchvision==0.28.0+cu126" in res.out
    assert "--index-url %s/cu126" % wheel_index in res.out
    assert _installed(py) == ["2.13.0+cpu", "0.28.0+cpu"]
    # no terminal and no --yes: the plan and exit 1
    res = cli_subprocess("fix", *common, "--index-base", wheel_index, env=env, timeout=300)
    assert res.code == 1 and "No terminal" in res.out, res
    # an index without the wheels: pip fails before it removes anything, and the output says so
    empty = wheel_index.rsplit("/", 1)[0] + "/nowhere"
    res = cli_subprocess("fix", "--yes", *common, "--index-base", empty, env=env, timeout=600)
    assert res.code == 1, res
    assert "The install failed" in res.out and "torch in %s is now: 2.13.0+cpu (before: 2.13.0+cpu)" % py in res.out
    assert _installed(py) == ["2.13.0+cpu", "0.28.0+cpu"]
    # --yes: installs from the local index, streams pip's output, probes again
    res = cli_subprocess("fix", "--yes", "--no-verify", *common, "--index-base", wheel_index, env=env, timeout=600)
    assert res.code == 0, res
    assert "  | " in res.out and "Successfully installed" in res.out
    assert "2.13.0+cpu -> 2.13.0+cu126" in res.out and "cuda.is_available() = True" in res.out
    assert "The doctor finds no torch problem now." in res.out
    assert _installed(py) == ["2.13.0+cu126", "0.28.0+cu126"]
    res = cli_subprocess("fix", *common, env=env, timeout=300)
    assert res.code == 0 and "Nothing to fix" in res.out, res


@pytest.mark.allow_run("/usr/bin/python3")  # this machine's system Python, on purpose
def test_fix_refuses_an_externally_managed_python(tmp_path, fake_root, fake_bin, cli):
    """This machine's /usr/bin/python3 is a Debian system Python with EXTERNALLY-MANAGED (PEP 668) and no torch."""
    system_python = "/usr/bin/python3"
    import glob

    if not os.path.exists(system_python) or not glob.glob("/usr/lib/python3*/EXTERNALLY-MANAGED"):
        pytest.skip("no externally managed system Python here")
    env = _fix_env(fake_bin, tmp_path)
    res = cli("fix", "--yes", "--root", str(fake_root.path), "--python", system_python, env=env)
    if "[torch-missing]" not in res.out and "[torch-cpu-only]" not in res.out:
        pytest.skip("the system Python has a working torch here")
    assert res.code == 1, res
    assert "externally managed system Python (PEP 668)" in res.out and "-m venv ~/.venvs/torch" in res.out
    assert "Running" not in res.out  # nothing was run


@pytest.mark.slow
def test_fix_interactive_through_a_pty(tmp_path, fake_root, fake_bin, wheel_index):
    """torch-missing in a fresh venv: choose the recommendation (the newest torch, 2.14.1) with Enter, confirm, watch it
    install, then verify runs.

    The stand-in torch cannot run kernels, so `cudaenv verify` fails and so does the fix's exit status: that is the point
    of running it (is_available() alone would say True)."""
    pexpect = pytest.importorskip("pexpect")
    py = make_venv(tmp_path / "venv", False, wheel_index)
    env = _fix_env(fake_bin, tmp_path)
    env["TERM"] = "xterm"
    exe = str(Path(sys.executable).parent / "cudaenv")
    child = pexpect.spawn(exe, ["fix", "--root", str(fake_root.path), "--python", str(py), "--index-base", wheel_index],
                          env=env, encoding="utf-8", timeout=120, dimensions=(40, 160))
    try:
        child.expect(r"\[torch-missing\]")
        child.expect("What should cudaenv do")
        child.expect("Install torch 2.14.1 cu126 \\(recommended\\)")
        child.send("\r")
        child.expect(r"Run: .*torch==2.14.1")
        child.send("y")
        child.expect("Successfully installed torch-2.14.1")
        child.expect("not installed -> 2.14.1\\+cu126")
        child.expect("The doctor finds no torch problem now.")
        child.expect("Running the GPU check: cudaenv verify --python")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 1
    out = subprocess.run([str(py), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "2.14.1+cu126"


@pytest.mark.slow
def test_fix_interactive_choose_the_driver_through_a_pty(tmp_path, fake_root, fake_bin):
    """Driver 520 on Ubuntu, no torch: torch 2.14.1 needs driver >= 525.60.13, so the plan offers torch 2.7.1 cu118
    first and the driver upgrade second. Choosing the driver prints the Ubuntu steps and installs nothing."""
    pexpect = pytest.importorskip("pexpect")
    fake_root.file("etc/os-release", 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    py = tmp_path / "venv" / "bin" / "python"
    fake_bin.command("nvidia-smi", recorded("smi-banner-550-single.txt"), by_args={"--query-gpu": (recorded("smi-query-2080ti-x4.txt"), 0)})
    env = clean_env({"PATH": fake_bin.env_path, "HOME": str(tmp_path / "home"), "CUDAENV_CACHE_DIR": str(tmp_path / "cache"),
                     "TERM": "xterm"})
    exe = str(Path(sys.executable).parent / "cudaenv")
    child = pexpect.spawn(exe, ["fix", "--root", str(fake_root.path), "--python", str(py), "--index-base", "http://127.0.0.1:9/whl"],
                          env=env, encoding="utf-8", timeout=60, dimensions=(40, 160))
    try:
        child.expect(r"\[torch-missing\]")
        child.expect("What should cudaenv do")
        child.expect("Fix the driver instead \\(>= 525.60.13 for torch 2.14.1\\)")
        child.send("\x1b[B")  # down arrow: from the recommended install to the driver
        child.send("\r")
        child.expect("Fix the driver:")
        child.expect("sudo ubuntu-drivers install nvidia:525")
        child.expect("Then run `cudaenv fix` again.")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "Running" not in child.before
    assert not list((tmp_path / "venv").glob("lib/python*/site-packages/torch"))
