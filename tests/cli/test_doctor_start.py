"""`cudaenv doctor`'s start-up as counted work (issue 35): which modules `doctor --quick` imports, and that the doctor's
own imports are done while the torch children run, not after them. The timings are bench/run.py's."""

import json
import subprocess
import sys
from pathlib import Path

import cudaenv
from hypothesis import given
from hypothesis import strategies as st

# Each costs 1.5-8.5 ms of a fresh interpreter's CPU here (`python -c "import re, json, threading, X"` against the
# same without X): dataclasses with inspect (recommend's Machine), socket (the host name), platform (the machine's
# architecture), pathlib with urllib.parse (the report's root), argparse (the fast parser takes doctor's options);
# typing (about 2 ms: annotations are postponed and typing imported only under TYPE_CHECKING, the parsers' named tuples
# built by cudaenv.core.tuples, the codec's reading side imports it); the ctypes package (about 1.5 ms: the subreaper's
# prctl is built from its C module, cudaenv.host.children._libc_function).
QUICK_HEAVY = ("argparse", "dataclasses", "inspect", "socket", "platform", "pathlib", "urllib.parse", "tempfile", "shutil",
               "typing", "ctypes")

REPORT = ("import sys\nfrom cudaenv.cli import main\ncode = main(%r)\n"
          "sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in %r if m in sys.modules)) + '\\n')\nsys.exit(code)\n")


INSTALLED = Path(cudaenv.__file__).resolve().parent  # the package under test: the installed one (tests/conftest.py)
WHERE = "import sys\nimport cudaenv\nsys.stderr.write('CUDAENV_FROM %s\\n' % cudaenv.__file__)\n"  # the child's cudaenv


def _run(script: str, env: dict, cwd: Path, more_path: tuple = ()) -> subprocess.CompletedProcess:
    """``python -S -c script`` (-S: no site, whose .pth files may import anything) with PYTHONPATH naming the installed
    package (then ``more_path``), run in ``cwd``, a folder without a cudaenv: ``-c`` puts the working folder first on
    sys.path, before PYTHONPATH, so a child run from the checkout imported ./cudaenv, the source tree. The child says
    which cudaenv it imported; it must be the installed one."""
    env = dict(env, PYTHONPATH=":".join((str(INSTALLED.parent),) + tuple(more_path)))
    run = subprocess.run([sys.executable, "-S", "-c", WHERE + script], capture_output=True, text=True, env=env, timeout=120,
                         cwd=str(cwd))
    where = run.stderr.split("CUDAENV_FROM ", 1)[1].split("\n", 1)[0] if "CUDAENV_FROM " in run.stderr else None
    assert where is not None and Path(where).resolve().parent == INSTALLED, (where, INSTALLED, run.stderr[-2000:])
    return run


def test_doctor_quick_imports_nothing_heavy(fake_root, tmp_path):
    """`doctor --json --quick` in a fake root whose interpreter has no torch (the rules then recommend an install:
    recommend and the facts tables are read) imports none of QUICK_HEAVY, and still answers the whole report."""
    from builders import TOOLS

    argv = ["doctor", "--json", "--quick", "--python", sys.executable]
    run = _run(REPORT % (argv, QUICK_HEAVY), {"PATH": TOOLS, "HOME": str(tmp_path), "CUDAENV_ROOT": str(fake_root.path)}, tmp_path)
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    assert report["schema_version"] == 1 and report["root"] == str(fake_root.path)
    assert report["hostname"] is None or isinstance(report["hostname"], str)
    ids = [f["id"] for f in report["findings"]]
    assert "torch-missing" in ids, ids  # the recommend path ran (its Machine is no dataclass any more)
    assert run.stderr.rsplit("LOADED", 1)[1].split() == []


# what a machine without nvidia-smi or NVML, whose GPUs (none) are not sick, has no use for: the tools' parsers and the
# sick GPU's kernel log parser (about 7.5 M of `doctor --quick`'s 193.8 M instructions through a pyenv shim, callgrind),
# and ntpath (Windows paths only)
NO_GPU_TOOL = ("cudaenv.parse.nvidia_smi", "cudaenv.parse.nvml", "cudaenv.parse.kernel_log", "ntpath")


def test_doctor_quick_without_gpu_tools_imports_no_parser_of_theirs(tmp_path):
    """Counted: `doctor --json --quick` where there is no nvidia-smi and no libnvidia-ml (the tools named missing in
    the report) imports none of NO_GPU_TOOL."""
    from builders import TOOLS

    argv = ["doctor", "--json", "--quick", "--python", sys.executable]
    root = tmp_path / "root"
    root.mkdir()
    run = _run(REPORT % (argv, NO_GPU_TOOL), {"PATH": TOOLS, "HOME": str(tmp_path), "CUDAENV_ROOT": str(root)}, tmp_path)
    assert run.returncode in (0, 1), run.stderr
    tools = {t["tool"]: t["status"] for t in json.loads(run.stdout)["tools"]}
    assert tools.get("nvidia-smi") == "missing" and tools.get("nvml") == "missing", tools
    assert run.stderr.rsplit("LOADED", 1)[1].split() == []


# put before main(): the modules loaded when the first child is spawned (the static torch child, on `doctor --quick`)
AT_SPAWN = ("import sys\nseen = []\n"
            "def _hook(event, args):\n"
            "    if event == 'subprocess.Popen' and not seen:\n"
            "        seen.append(sorted(sys.modules))\n"
            "sys.addaudithook(_hook)\n")
SPAWNED = "\nsys.stderr.write('AT_SPAWN ' + ' '.join(seen[0] if seen else ['none']) + '\\n')\n"


def test_the_quick_child_is_spawned_before_the_report_records_and_the_environment_read(tmp_path):
    """Counted: when `doctor --quick` spawns its static torch child (the first child), the report's records
    (model.reports, which cudaenv.diagnose's package names only for annotations), the rules and the environment read
    are not imported yet: their import time runs beside the child, which is the critical path."""
    from builders import TOOLS

    argv = ["doctor", "--json", "--quick", "--python", sys.executable]
    script = AT_SPAWN + (REPORT % (argv, ())).replace("sys.exit(code)", SPAWNED + "sys.exit(code)")
    run = _run(script, {"PATH": TOOLS, "HOME": str(tmp_path), "CUDAENV_ROOT": str(tmp_path)}, tmp_path)
    assert run.returncode in (0, 1), run.stderr
    loaded = run.stderr.rsplit("AT_SPAWN ", 1)[1].split()
    assert "cudaenv.probes.torch" in loaded and "subprocess" in loaded, loaded  # the spawn's own
    for name in ("cudaenv.model.reports", "cudaenv.probes.env", "cudaenv.diagnose.driver", "cudaenv.render.json_out"):
        assert name not in loaded, name


@given(st.text(alphabet="/.ab", max_size=12))
def test_a_path_reads_as_pathlib_writes_it(p):
    """The report's root is written as ``str(Path(root))`` was, without pathlib where that changes nothing."""
    from cudaenv.host.resolve import path_text

    assert path_text(p) == str(Path(p))


def test_the_real_roots_report_names_it_without_socket_or_platform(tmp_path):
    """The report's root, host name and machine on the real root: what pathlib, socket and platform answered."""
    import os
    import socket

    from cudaenv.host import Host

    host = Host("/", env={}, system="linux")
    assert host.root_text == "/" == str(host.root)
    assert Host(str(tmp_path) + "//", env={}, system="linux").root_text == str(Path(str(tmp_path)))
    assert host.hostname() == (socket.gethostname()[:255] or None)
    if hasattr(os, "uname"):
        from cudaenv.probes.platform import _this_machine
        import platform

        assert _this_machine() == platform.machine()


ADVICE = """
import json, sys
from cudaenv.model.snapshot import Driver, Gpu, Platform, Snapshot, Torch

linux = Platform(system="linux", machine="x86_64")
gpu = Gpu(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0")
snaps = [
    Snapshot(platform=linux, torch=Torch(python="/usr/bin/python3", installed=False, python_version="3.12.3")),
    Snapshot(platform=linux, driver=Driver(version="580.95.05", cuda_version="13.0", source="nvml"), gpus=(gpu,),
             torch=Torch(python="/usr/bin/python3", installed=True, version="2.13.0+cpu", dynamic=True,
                         cuda_available=False, python_version="3.12.3")),
]
from cudaenv.diagnose.service import %s as load
load()
before = set(sys.modules)
from cudaenv.diagnose import diagnose
from cudaenv.diagnose.view import build_view

ids = []
for s in snaps:
    ids.append([f.id for f in diagnose(s)])
    build_view(s)
print(json.dumps({"ids": ids, "new": sorted(set(sys.modules) - before)}))
"""


def test_the_doctor_imports_its_rules_and_advice_beside_the_torch_child(tmp_path):
    """What the doctor imports while `import torch` runs in its child (``beside``) is every module the rules, the advice
    they give (a missing torch, a CPU-only one on a GPU machine) and the facts view need: none is left to import after
    the child has answered. `--quick`'s (whose child is short) leaves the advice to the rule that asks."""
    run = _run(ADVICE % "_load_rules_and_advice", {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, tmp_path)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert "torch-missing" in got["ids"][0] and "torch-cpu-only" in got["ids"][1], got["ids"]
    assert got["new"] == [], got["new"]
    quick = _run(ADVICE % "_load_rules", {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, tmp_path)
    assert quick.returncode == 0, quick.stderr
    left = json.loads(quick.stdout)["new"]
    assert "cudaenv.recommend.decide" in left and not any(m.startswith("cudaenv.diagnose.") for m in left), left


def test_the_toolkits_are_read_while_the_static_torch_child_runs(fake_root, tmp_path, monkeypatch):
    """The toolkit probe starts with the hardware chain, not after the static torch pass: shown by a rendezvous. The
    interpreter is a wrapper that waits (up to 10 s) for the mark the toolkit probe leaves when it starts; the probe
    then reads the static pass's site-packages, which it waits for. One after the other, the static pass would wait
    in vain and fail (no torch), and the probe would see no site-packages."""
    from cudaenv.probes import toolkits
    from cudaenv.probes.collect import collect_snapshot
    from builders import python_waiting_for
    from machine import make_probe_torch

    mark = tmp_path / "toolkits-started"
    seen = []

    def probe(host, notes, site_packages=(), install_methods=True):
        mark.touch()
        seen.extend(site_packages)
        return None

    monkeypatch.setattr(toolkits, "probe_toolkits", probe)
    python = python_waiting_for(tmp_path, mark)
    site = tmp_path / "site-packages"
    site.mkdir()
    make_probe_torch(site)
    snap = collect_snapshot(fake_root.host(env={"PYTHONPATH": str(site)}, timeout=30), python=str(python), quick=True)
    assert snap.torch.installed, snap.notes
    assert str(site) in seen and tuple(seen) == tuple(snap.torch.site_packages), seen


LAZY = ("cudaenv.parse.container_config", "cudaenv.parse.lspci", "cudaenv.parse.pyenvs", "cudaenv.parse.cudnn",
        "cudaenv.parse.symbols", "cudaenv.probes.cudnn", "cudaenv.diagnose.inside", "cudaenv.toolkit.sudo",
        "cudaenv.parse.nvidia_smi")


def test_the_doctors_parsers_compile_no_pattern_on_import(tmp_path):
    """The modules every doctor imports whose patterns read only what a machine may not have (container engines' files,
    lspci, pixi/uv files, cuDNN headers, C++ symbols, sudo in fixes, nvidia-smi's output): importing them compiles no
    pattern (37 of the 62 compiles `doctor --quick` made; each compiles on its first use)."""
    code = ("import re, sys\nfrom cudaenv.core.lazy import LazyPattern\nmods = %r\nfor m in mods:\n    __import__(m)\n"
            "out = []\nfor m in mods:\n    for name, v in vars(sys.modules[m]).items():\n"
            "        if isinstance(v, re.Pattern) or (isinstance(v, LazyPattern) and v._compiled is not None):\n"
            "            out.append(m + '.' + name)\n"
            "print(sum(isinstance(v, LazyPattern) for m in mods for v in vars(sys.modules[m]).values()), out)\n" % (LAZY,))
    run = _run(code, {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["37", "[]"], run.stdout


def test_doctor_quick_with_torch_installed_imports_nothing_heavy(tmp_path):
    """The same where the interpreter has torch (a fake CUDA build on PYTHONPATH): the torch-installed path (the loader
    cache, the distro facts, the install repos) imports none of QUICK_HEAVY either (typing came back through
    parse.ldcache there)."""
    from builders import TOOLS
    from machine import make_fake_torch

    site = tmp_path / "site"
    make_fake_torch(site, "2.8.0+cu128", "12.8")
    argv = ["doctor", "--json", "--quick", "--python", sys.executable]
    run = _run(REPORT % (argv, QUICK_HEAVY), {"PATH": TOOLS, "HOME": str(tmp_path)}, tmp_path, (str(site),))
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    assert report["torch"]["installed"] is True and report["torch"]["version"] == "2.8.0+cu128", report["torch"]
    assert run.stderr.rsplit("LOADED", 1)[1].split() == []
