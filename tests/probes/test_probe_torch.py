"""The torch probe: a child script in the user's Python, a static pass (no import) and a dynamic pass.

Fake torch distributions are real files in a temporary site-packages, put in front of a real
interpreter through a venv or PYTHONPATH; the `torch`-marked tests use the real CPU torch 2.13.0.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TOOLS
from cudaenv._child import torch_probe as child
from cudaenv.host import Host
from cudaenv.probes.python import Interpreter
from cudaenv.probes.torch import (
    dynamic_timeout,
    format_cudnn_version,
    probe_torch_dynamic,
    probe_torch_static,
)
from cudaenv.probes.torch_child import parse_child_output
from machine import PROBE_CUDA_BROKEN as FAKE_CUDA_BROKEN
from machine import PROBE_CUDA_NO_DRIVER as FAKE_CUDA_NO_DRIVER
from machine import make_probe_torch as make_fake_torch


def probe_torch(host, interpreter, notes):
    """Both passes one after the other, as the doctor runs them (collect runs them beside other probes)."""
    return probe_torch_dynamic(host, interpreter, probe_torch_static(host, interpreter, notes), notes)


PY37 = "/root/.pyenv/versions/3.7.16/bin/python"
PY39 = next((str(p) for p in sorted(Path("/root/.pyenv/versions").glob("3.9*/bin/python"))), "/nonexistent")


@pytest.fixture
def site(tmp_path):
    d = tmp_path / "lib" / "site-packages"
    d.mkdir(parents=True)
    return d


def host_with_path(site, **extra):
    env = {"PATH": TOOLS, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(extra)
    return Host(env=env, system="linux", timeout=20)


def me():
    return Interpreter(sys.executable, "--python")


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    base = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True, timeout=60)
    sp = next(base.glob("lib/python3*/site-packages"))
    make_fake_torch(sp)
    return base, sp


def test_static_pass_reads_a_fake_torch_in_a_real_venv(venv):
    base, sp = venv
    notes = []
    h = Host(env={"PATH": TOOLS}, system="linux", timeout=20)
    t = probe_torch_static(h, Interpreter(str(base / "bin" / "python"), "VIRTUAL_ENV"), notes)
    assert notes == []
    assert t.installed and t.version == "2.7.1+cu126" and t.cuda == "12.6" and t.hip is None
    assert t.requires == ('nvidia-cudnn-cu12==9.5.1.17; platform_system == "Linux"',)
    assert t.nvidia_packages == ("nvidia-cudnn-cu12==9.5.1.17",)
    assert t.installer == "uv"
    assert t.in_virtualenv and not t.externally_managed
    assert t.location == str(sp) and str(sp) in t.site_packages
    assert t.python_source == "VIRTUAL_ENV" and t.python_version == "%d.%d.%d" % sys.version_info[:3]
    assert t.platform_tag and t.platform_tag.startswith("linux")
    assert not t.dynamic and t.cuda_available is None


def test_static_pass_reports_torchs_companions(site):
    # The recommendation installs torchvision/torchaudio from the same index at matching versions: the static
    # pass reads which are installed, beside the nvidia-* distributions, in the same scan.
    make_fake_torch(site)
    for folder in ("torchvision-0.22.1+cu126.dist-info", "torchaudio-2.7.1+cu126.dist-info"):
        (site / folder).mkdir()
        (site / folder / "METADATA").write_text("Name: %s\n" % folder.split("-")[0])
    t = probe_torch_static(host_with_path(site), me(), [])
    assert t.companions == ("torchvision==0.22.1+cu126", "torchaudio==2.7.1+cu126")
    assert t.nvidia_packages == ("nvidia-cudnn-cu12==9.5.1.17",)


def test_torch_recommend_pins_the_installed_companions(site, cli):
    make_fake_torch(site, version="2.7.1+cpu", cuda="None")
    (site / "torchvision-0.22.1+cpu.dist-info").mkdir()
    env = {"PATH": TOOLS, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    res = cli("torch", "recommend", "--json", "--driver", "560.35.03", "--compute-capability", "6.1",
              "--python", sys.executable, env=env)
    data = res.json()
    assert data["variant"] == "cu126" and data["torch_version"] == "2.7.1"
    assert any("torchvision==0.22.1" in cmd for cmd in data["commands"]), data["commands"]


def test_static_pass_never_imports_torch(site):
    make_fake_torch(site, init="raise SystemExit('imported!')\n")
    notes = []
    t = probe_torch_static(host_with_path(site), me(), notes)
    assert t.installed and t.version == "2.7.1+cu126" and notes == []


def test_dynamic_pass_maps_devices_cudnn_and_nccl(site):
    make_fake_torch(site)
    notes = []
    t = probe_torch(host_with_path(site, CUDA_VISIBLE_DEVICES="1"), me(), notes)
    assert notes == []
    assert t.dynamic and t.cuda_available is True and t.device_count == 1
    assert t.devices[0].capability == "8.6" and t.devices[0].total_memory_mib == 24576
    # the child ran with the user's CUDA_VISIBLE_DEVICES, unchanged
    assert t.devices[0].name == "Fake GPU CVD=1"
    assert t.arch_list == ("sm_80", "sm_86", "sm_90")
    assert t.cudnn == "9.10.2" and t.nccl == "2.21.5"
    assert t.import_error is None and t.cuda_error is None


def test_cuda_initialization_warning_becomes_cuda_error(site):
    make_fake_torch(site, cuda_module=FAKE_CUDA_BROKEN, cudnn=8902)
    t = probe_torch(host_with_path(site), me(), [])
    assert t.dynamic and t.cuda_available is False and t.device_count == 0
    assert t.cuda_error.startswith("CUDA initialization: Unexpected error from cudaGetDeviceCount()")
    assert "Error 804" in t.cuda_error
    assert t.cudnn == "8.9.2"


def test_cuda_build_without_a_driver_reports_what_init_says(site):
    make_fake_torch(site, version="2.14.1+cu130", cuda="'13.0'", cuda_module=FAKE_CUDA_NO_DRIVER)
    t = probe_torch(host_with_path(site), me(), [])
    assert t.dynamic and t.cuda_available is False and t.device_count == 0
    assert t.cuda_error.startswith("RuntimeError: Found no NVIDIA driver on your system.")


def test_cpu_build_is_not_asked_to_initialise_cuda(site):
    cuda = FAKE_CUDA_NO_DRIVER.replace("Found no NVIDIA driver", "init must not be called on a CPU build")
    make_fake_torch(site, version="2.13.0+cpu", cuda="None", cuda_module=cuda)
    t = probe_torch(host_with_path(site), me(), [])
    assert t.dynamic and t.cuda_available is False and t.cuda_error is None


def test_the_collector_is_off_during_import_torch_then_frozen_and_back_on(site):
    # the import runs without the cyclic collector's passes (a tenth of a real torch's import), what it made is frozen
    # (else the collector's first pass after it scans them all), and what torch is then asked runs with it on
    init = ("import gc\nfrom . import version, cuda, backends\n__version__ = version.__version__\n"
            "if gc.isenabled():\n    raise ImportError('the collector ran during the import')\n")
    cuda = FAKE_CUDA_NO_DRIVER.replace("return False", "import gc\n    return gc.isenabled() and gc.get_freeze_count() > 0", 1)
    make_fake_torch(site, version="2.13.0+cpu", cuda="None", init=init, cuda_module=cuda)
    t = probe_torch(host_with_path(site), me(), [])
    assert t.import_error is None and t.dynamic and t.cuda_available is True


def test_a_collector_the_interpreter_turned_off_stays_off(site):
    (site / "sitecustomize.py").write_text("import gc\ngc.disable()\n")
    cuda = FAKE_CUDA_NO_DRIVER.replace("return False", "import gc\n    return gc.isenabled()", 1)
    make_fake_torch(site, version="2.13.0+cpu", cuda="None", cuda_module=cuda)
    t = probe_torch(host_with_path(site), me(), [])
    assert t.import_error is None and t.dynamic and t.cuda_available is False


def test_torch_whose_import_raises(site):
    make_fake_torch(site, init="raise OSError('libcudnn.so.9: cannot open shared object file: No such file or directory')\n")
    notes = []
    t = probe_torch(host_with_path(site), me(), notes)
    assert t.installed and t.version == "2.7.1+cu126" and not t.dynamic
    assert t.import_error == "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    assert any("import torch failed" in n.message and "libcudnn.so.9" in n.message for n in notes)


def test_doctor_finishes_when_import_torch_raises(site, cli):
    make_fake_torch(site, init="raise ImportError('broken torch')\n")
    env = {"PATH": TOOLS, "PYTHONPATH": str(site)}
    r = cli("doctor", "--json", "--python", sys.executable, env=env)
    assert r.code in (0, 1), r  # 1: the diagnosis reports the broken import as an error
    torch = r.json()["torch"]
    assert torch["installed"] is True and torch["import_error"] == "ImportError: broken torch"
    text = cli("doctor", "--python", sys.executable, env=env)
    assert text.code in (0, 1) and "ImportError: broken torch" in text.out


def test_no_torch_is_absent_not_an_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    notes = []
    t = probe_torch(host_with_path(empty), me(), notes)
    assert not t.installed and t.version is None and not t.dynamic and t.import_error is None
    assert t.python == sys.executable and t.python_version
    assert notes == []


def test_no_interpreter_is_reported_with_a_note():
    notes = []
    t = probe_torch(Host(env={}, system="linux"), None, notes)
    assert t.python is None and not t.installed
    assert notes and notes[0].probe == "torch" and "no Python interpreter" in notes[0].message


def test_a_torch_folder_without_version_py_is_not_torch(site):
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("raise SystemExit('must not be imported')\n")
    notes = []
    t = probe_torch(host_with_path(site), me(), notes)
    assert not t.installed and not t.dynamic
    assert any("without version.py" in n.message and str(site / "torch") in n.message for n in notes)


def test_a_torch_py_module_shadows_torch(site):
    (site / "torch.py").write_text("x = 1\n")
    notes = []
    t = probe_torch(host_with_path(site), me(), notes)
    assert not t.installed
    assert any("torch.py is a module named torch" in n.message for n in notes)
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language, tr

    set_language(CHINESE)  # the child says what it found as [kind, path]; the parent's marked note reads in Chinese
    try:
        said = [tr(n.message) for n in notes]
    finally:
        set_language(ENGLISH)
    assert "%s 是一个名为 torch 的模块，不是 torch 软件包；它会遮蔽任何已安装的 torch" % (site / "torch.py") in said, said


def test_a_static_childs_note_is_said_by_the_parent():
    from cudaenv.probes.torch import static_note

    assert static_note(["no-version", "/s/torch/version.py"]) == "/s/torch/version.py has no readable __version__"
    assert static_note(["folder-without-version", "/s/torch"]).parts  # a marked message
    assert static_note("an older child's sentence") == "an older child's sentence"  # anything else as it came
    assert static_note(["unknown-kind", "/x"]) == "['unknown-kind', '/x']"


def test_a_torch_py_in_the_current_directory_is_reported(site, tmp_path):
    make_fake_torch(site)
    work = tmp_path / "work"
    work.mkdir()
    (work / "torch.py").write_text("raise SystemExit('not this one')\n")
    notes = []
    h = host_with_path(site)
    old = os.getcwd()
    os.chdir(work)
    try:
        t = probe_torch_static(h, me(), notes)
    finally:
        os.chdir(old)
    assert t.installed and t.version == "2.7.1+cu126"  # the installation, not the stray file
    assert any(str(work / "torch.py") in n.message and "shadows" in n.message for n in notes)


def test_conda_meta_means_conda(tmp_path):
    base = tmp_path / "condaenv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True, timeout=60)
    sp = next(base.glob("lib/python3*/site-packages"))
    make_fake_torch(sp, installer=None, requires=(), nvidia=())
    (base / "conda-meta").mkdir()
    (base / "conda-meta" / "pytorch-2.7.1-py3.11_cuda12.6_cudnn9.5.1_0.json").write_text("{}")
    t = probe_torch_static(Host(env={"PATH": TOOLS}, timeout=20), Interpreter(str(base / "bin" / "python"), "CONDA_PREFIX"), [])
    assert t.installer == "conda" and t.requires == () and t.nvidia_packages == ()


def test_dynamic_timeout_is_reported(site):
    make_fake_torch(site, init="import time\ntime.sleep(30)\n")
    notes = []
    h = host_with_path(site, CUDAENV_TORCH_TIMEOUT="1")
    t = probe_torch(h, me(), notes)  # the import sleeps 30 s: a note that it timed out after 1 s is the bound
    assert t.installed and not t.dynamic and t.cuda_available is None
    assert any("dynamic pass" in n.message and "timed out after 1 s" in n.message and "CUDAENV_TORCH_TIMEOUT" in n.message for n in notes)


def test_dynamic_timeout_setting():
    assert dynamic_timeout(Host(env={}, timeout=5)) == 60
    assert dynamic_timeout(Host(env={}, timeout=90)) == 90
    assert dynamic_timeout(Host(env={"CUDAENV_TORCH_TIMEOUT": "7.5"}, timeout=5)) == 7.5
    from cudaenv.core.errors import UserError

    # issue 11: one parsing style for every setting; "soon" used to be ignored here, while CUDAENV_TIMEOUT=soon failed
    with pytest.raises(UserError, match="CUDAENV_TORCH_TIMEOUT=soon is not a number of seconds"):
        dynamic_timeout(Host(env={"CUDAENV_TORCH_TIMEOUT": "soon"}, timeout=5))


def test_an_interpreter_that_crashes_gives_a_note(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Fatal Python error: init_fs_encoding' >&2\nexit 1\n")
    fake.chmod(0o755)
    notes = []
    t = probe_torch(Host(env={"PATH": TOOLS}), Interpreter(str(fake), "--python"), notes)
    assert t.python == str(fake) and not t.installed
    assert len(notes) == 1 and "gave no answer (exit 1): Fatal Python error" in notes[0].message


@pytest.mark.parametrize("python", [PY37, PY39], ids=["py3.7", "py3.9"])
@pytest.mark.allow_run(PY37, PY39)  # this machine's old interpreters, on purpose (skipped where absent)
def test_old_interpreters_run_the_child(python, site):
    if not os.path.exists(python):
        pytest.skip("%s is not installed" % python)
    make_fake_torch(site)
    notes = []
    t = probe_torch(host_with_path(site), Interpreter(python, "--python"), notes)
    assert notes == []
    assert t.python_version.startswith(python.split("versions/")[1][:3])
    assert t.installed and t.version == "2.7.1+cu126" and t.cuda == "12.6" and t.installer == "uv"
    assert t.nvidia_packages == ("nvidia-cudnn-cu12==9.5.1.17",)
    assert t.dynamic and t.cudnn == "9.10.2" and t.devices[0].capability == "8.6"


def test_the_child_script_is_valid_python_3_7():
    if not os.path.exists(PY37):
        pytest.skip("no Python 3.7")
    src = Path(child.__file__).read_text()
    r = subprocess.run([PY37, "-c", "import ast, sys; ast.parse(sys.stdin.read())"], input=src, text=True, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    "value, text",
    [(91002, "9.10.2"), (90100, "9.1.0"), (8902, "8.9.2"), (8700, "8.7.0"), (7605, "7.6.5"), ("91002", "9.10.2"),
     (None, None), (0, None), (True, None)],
)
def test_cudnn_version_formats(value, text):
    assert format_cudnn_version(value) == text


def test_version_py_is_read_as_literals_only():
    text = "__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\nhip = os.system('rm -rf /')\ngit_version = 'abc'\nother = 1\n"
    assert child.parse_version_py(text) == {"__version__": "2.13.0+cpu", "cuda": None, "git_version": "abc"}


@settings(max_examples=200)
@given(st.text())
def test_parsers_take_any_text(text):
    child.parse_version_py(text)
    child.parse_metadata(text)
    assert parse_child_output(text) is None or isinstance(parse_child_output(text), dict)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200)
@given(_json_values)
def test_the_child_json_encoder_round_trips(value):
    assert json.loads(child.to_json(value)) == value


def test_version_py_variants():
    text = (
        "__version__ = \"2.5.1+cu124\"  # written by setup.py\n"
        "cuda: Optional[str] = '12.4'\n"
        "hip = None\n"
        "git_version = 'a' 'b'\n"  # implicit concatenation: the ast fallback
        "debug = False\n"
    )
    assert child.parse_version_py(text) == {"__version__": "2.5.1+cu124", "cuda": "12.4", "hip": None, "git_version": "ab", "debug": False}


def test_child_output_is_found_among_stray_lines():
    out = "torch says hi\nCUDAENV_TORCH_PROBE {\"installed\": true}\n"
    assert parse_child_output(out) == {"installed": True}
    assert parse_child_output("CUDAENV_TORCH_PROBE [1]") is None
    assert parse_child_output("CUDAENV_TORCH_PROBE {broken") is None


# ---------------------------------------------------------------- the real CPU torch 2.13.0 (nox -s torch)
def _real_torch():
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in the test interpreter")


@pytest.mark.torch
def test_real_torch_static_pass():
    _real_torch()
    notes = []
    t = probe_torch_static(Host(env=dict(os.environ)), me(), notes)
    assert t.installed and t.version == "2.13.0+cpu" and t.cuda is None and t.hip is None
    assert t.location and os.path.isdir(os.path.join(t.location, "torch"))
    assert t.installer in ("pip", "uv")


@pytest.mark.torch
def test_real_torch_dynamic_pass():
    _real_torch()
    notes = []
    t = probe_torch(Host(env=dict(os.environ)), me(), notes)
    assert t.dynamic and t.cuda_available is False and t.device_count == 0
    assert t.arch_list == () and t.devices == () and t.import_error is None
    assert t.cudnn is None and t.nccl is None


@pytest.mark.torch
def test_real_doctor_json_and_quick(cli_subprocess):
    _real_torch()
    env = {"PATH": TOOLS, "HOME": os.environ.get("HOME", "/root")}
    full = cli_subprocess("doctor", "--json", "--python", sys.executable, env=env)
    assert full.code in (0, 1), full
    t = full.json()["torch"]
    assert t["version"] == "2.13.0+cpu" and t["dynamic"] is True and t["cuda_available"] is False
    quick = cli_subprocess("doctor", "--json", "--quick", "--python", sys.executable, env=env)
    assert quick.code in (0, 1), quick
    q = quick.json()["torch"]
    assert q["version"] == "2.13.0+cpu" and q["dynamic"] is False and q["cuda_available"] is None
    # --quick never imports torch: no dynamic pass ran (its speed is bench/'s `doctor --quick` target)


def test_a_shim_is_run_once_then_the_real_interpreter(site, tmp_path):
    """pyenv-style shims: the static pass goes through the shim, the torch import runs the interpreter it found."""
    shims = tmp_path / "shims"
    shims.mkdir()
    log = tmp_path / "shim.log"
    shim = shims / "python3"
    shim.write_text('#!/bin/sh\necho run >> "%s"\nexec "%s" "$@"\n' % (log, sys.executable))
    shim.chmod(0o755)
    make_fake_torch(site)
    t = probe_torch(host_with_path(site), Interpreter(str(shim), "PATH"), [])
    assert t.python == str(shim) and t.executable == sys.executable
    assert t.dynamic and t.cudnn == "9.10.2"
    assert log.read_text() == "run\n"  # the shim ran for the static pass only


def pyenv_tree(tmp_path, versions=("3.11.7", "3.12.1")):
    """A pyenv root: the recorded shim (its PYENV_ROOT made this tree's), and versions/X/bin/python3 for each X."""
    from builders import recorded

    root = tmp_path / "pyenv"
    (root / "shims").mkdir(parents=True)
    shim = root / "shims" / "python3"
    shim.write_text(recorded("pyenv-2.6.30-shim-python3.sh").replace("/root/.pyenv", str(root)))
    shim.chmod(0o755)
    for version in versions:
        (root / "versions" / version / "bin").mkdir(parents=True)
        os.symlink(sys.executable, root / "versions" / version / "bin" / "python3")
    return root, str(shim)


def test_a_pyenv_shim_is_read_not_run(tmp_path, monkeypatch):
    """The interpreter a pyenv shim leads to, as pyenv finds it: PYENV_VERSION, else the nearest .python-version
    (PYENV_DIR, then the working directory, upwards), else PYENV_ROOT/version; None where only the shim can tell."""
    from cudaenv.probes.python import shim_target

    root, shim = pyenv_tree(tmp_path)
    project = tmp_path / "project" / "sub"
    project.mkdir(parents=True)
    monkeypatch.chdir(project)
    at = lambda v: str(root / "versions" / v / "bin" / "python3")  # noqa: E731
    host = Host(env={"PATH": TOOLS}, system="linux")
    assert shim_target(host, shim) is None  # no version file anywhere: `system`
    (root / "version").write_text("3.12.1\n")
    assert shim_target(host, shim) == at("3.12.1")
    (tmp_path / "project" / ".python-version").write_text("# pinned\n\n3.11.7 extra words\n3.12.1\n")
    assert shim_target(host, shim) == at("3.11.7")  # the nearest file up from the working directory
    assert shim_target(host.with_env(PYENV_VERSION="3.12.1:3.11.7"), shim) == at("3.12.1")
    assert shim_target(host.with_env(PYENV_DIR=str(root)), shim) == at("3.11.7")  # no file above PYENV_DIR: the cwd's
    for unsure in ("system", "3.9.0", "3.11", "../3.11.7", "python-3.11.7"):
        assert shim_target(host.with_env(PYENV_VERSION=unsure), shim) is None, unsure
    other = tmp_path / "asdf" / "shims"
    other.mkdir(parents=True)
    (other / "python3").write_text('#!/usr/bin/env bash\nexec asdf exec "python3" "$@"\n')
    assert shim_target(host, str(other / "python3")) is None  # not a pyenv shim
    assert shim_target(Host(root=str(tmp_path), env={}, system="linux"), shim) is None  # --root: never


def test_the_static_pass_runs_the_interpreter_a_pyenv_shim_leads_to(site, tmp_path, monkeypatch):
    """`doctor --quick` with python3 a pyenv shim: no bash and no `pyenv exec` before the child (the runner sees the
    version's interpreter); the record still names the shim, which is what the user runs."""
    root, shim = pyenv_tree(tmp_path)
    (root / "version").write_text("3.11.7\n")
    monkeypatch.chdir(tmp_path)
    make_fake_torch(site)
    ran = []
    host = host_with_path(site)
    real_run = host.run

    def run(argv, **kw):
        ran.append(argv[0])
        return real_run(argv, **kw)

    host.run = run
    t = probe_torch_static(host, Interpreter(shim, "PATH"), [])
    assert ran == [str(root / "versions" / "3.11.7" / "bin" / "python3")]
    assert t.python == shim and t.installed and t.executable == ran[0]
