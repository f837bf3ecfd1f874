"""Speed and memory targets, as ratios against baselines measured in the same run (``nox -s bench``).

Run with the interpreter that has cudaenv and torch==2.13.0 installed::

    python bench/run.py [--runs 7] [--json FILE]

Each command runs N times as a child process; its wall time and peak RSS come from ``os.wait4`` in a
small launcher (a fork of the bench process itself would inflate the peak RSS).
The medians are compared:

====================================  ===================================  ==========
measured                              against                              target
====================================  ===================================  ==========
``cudaenv doctor --json --python PY``  ``PY -m torch.utils.collect_env``    <= 0.8 x
``cudaenv doctor --json --quick``      ``PY -m torch.utils.collect_env``    <= 0.1 x
``cudaenv doctor --json --python PY``  ``PY -c 'import os, torch;            <= 1.05 x
                                       torch.cuda.is_available();
                                       os._exit(0)'`` (the torch floor)
``cudaenv doctor --json --python PY``  each torch-importing peer's main      <= 0.75 x
                                       check (``env-doctor check``,
                                       ``cuda-doctor diagnose``,
                                       ``gpu-doctor --check``, ``ai-infradr``)
``doctor --json --quick`` beside the   the same without them                <= 1.3 x
frameworks (every package of
data/frameworks.json installed)
``doctor --json --quick`` with PY in   the same with PY linked from a       <= 1.2 x
a conda env of 5,000 conda-meta        folder that is no environment
records and a 20,000-line history
``doctor --quick --root`` of a GPU     the same root without them           <= 1.2 x
container host (Docker, containerd,
CRI-O, Podman, CDI, the toolkit)
``cudaenv list``                       ``PY -c pass``                       <= 1.8 x
``cudaenv use 12.4`` (fake tree)       ``PY -c pass``                       <= 1.4 x wall, <= 1.5 x peak RSS
``cudaenv use 12.4`` (1,000 toolkits)  ``PY -c pass``                       <= 2 x wall
``doctor --json --quick``, python3 a   ``PY -c pass``                       <= 5 x
pyenv shim (no ``--python``)
``install 13.0`` (cached wheels, a    ``pip install --target`` of the      <= 1.3 x
served local index)                    same wheels from the same index
``uninstall 12.4 --script --root R``   ``dpkg --admindir R/var/lib/dpkg     <= 1.5 x
(879 dpkg lists; SKIP without dpkg)    -S '/usr/local/cuda-12.4/*'``
``check-installer`` of an all-zero    ``md5sum`` of the same file          <= 1.1 x
1 GiB download (sparse; SKIP without
md5sum)
``explain --file`` (a 2-line paste)    ``PY -c pass``                       <= 6 x
``explain --file`` (a 10 MB log)       ``PY -c pass``                       <= 15 x
``checkpoint inspect`` (1.5 GiB file)  ``PY -c pass``                       <= 2 x wall
``checkpoint inspect`` (1.5 GiB file)  ``torch.load(map_location="cpu")``   <= 0.05 x wall
``checkpoint inspect`` (1.5 GiB file)  (absolute)                           <= 50 MiB peak RSS
``checkpoint inspect`` (20,000 tensors) (absolute)                          <= 0.5 s wall
``checkpoint inspect FOLDER`` (8 .bin  each shard's ``inspect_file``,      <= 1.3 x wall
shards, 20,000 tensors)                in the same process
``fleet summarize`` (10,000 reports)   (absolute)                           <= 3 s wall, <= 300 MiB peak RSS
``fleet summarize`` (100,000 reports)  (absolute)                           <= 30 s wall, <= 300 MiB peak RSS
``fleet summarize`` (100,000 reports)  a Python that json.loads each file   <= 1.2 x wall
``explain --file`` (50 MB paste)       (absolute)                           <= 2 s wall
``explain`` hostile inputs, the worst  (absolute)                           <= 2 s (each pattern's, 100 KB)
``explain`` 1 MB literal runs, worst   (absolute)                           <= 2 s (each pattern's literal x 1 MB)
tool-output parsers, 1 MB hostile runs (absolute)                           <= 5 s (the worst input; ``--only hostile``)
====================================  ===================================  ==========

The fleet's reports are one real ``cudaenv doctor --json --quick`` report of this machine, written N times with
the host name and time changed (every file different) and drift planted (2% of the nodes an older driver, 0.5% a CPU torch with an error finding,
0.5% one GPU fewer), into the run's temporary folder (deleted at the end); the 100,000-report case runs
``--runs`` rounds too, at most 3 (``--only fleet`` runs only these and needs no torch, as ``--only explain`` does).

The checkpoints are written without torch by ``tests/checkpoint_builders.py`` (the pickle torch 2.13 writes; the
1.5 GiB file's 24 storage records are streamed as zeros) into the run's temporary folder, and deleted at the end.
The torch.load baseline is a whole ``PY -c 'import torch; torch.load(FILE, map_location="cpu")'`` process.

The frameworks' site-packages (``--only quick`` runs both doctors, without torch) holds every package of
``data/frameworks.json`` as pip lays it out, written by ``tests/framework_builders.py`` (TensorFlow's RECORD with
20,000 lines, as the real one has, and its build-info file), and, where there is a C compiler, a torch whose
libc10.so/libtorch_cpu.so export 4,000 names with each torch extension package shipping a module that needs 800 of
them (the extension check's symbol lookups), on ``PYTHONPATH``, in the run's temporary folder. The doctor keeps what
it read from those modules in its memo (``facts-memo.json`` in ``CUDAENV_CACHE_DIR``, here the run's temporary folder),
keyed by each file's identity, as it does on a user's machine from the second doctor on; the same doctor with the
memo off (``CUDAENV_NO_CACHE=1``: the first doctor after an install) is measured beside it and printed, not a target.

The install case (issue 35) serves a constructed index from 127.0.0.1 (``wheel_index``: the five component wheels of
tests/install_builders.py, whole wheels with WHEEL and RECORD, and their ``cuda-toolkit`` meta wheel, each link with
its sha256) to both commands, with pip's cache, cudaenv's data and cache folders in the run's temporary folder; after
the warm-up round the wheels are in pip's cache and the release list in cudaenv's. The uninstall case is a constructed
root (``dpkg_root``: a deb CUDA 12.4 of four packages beside 875 others of 150 paths each, like this machine's 878
lists of 130,000 lines); nothing of this machine's package database is read.

The pyenv shim (issue 35) is this machine's own pyenv's ``shims/python3`` when it has one (``$PYENV_ROOT`` or
``~/.pyenv``), else a constructed pyenv root whose shim (pyenv 2.6's) leads to PY through a stand-in ``pyenv exec``;
the 1,000 toolkits are a module tree named for their versions (``many_toolkits``).

The peers (issue 35) are each one's own command, found beside PY or in ``--peers DIR`` (install them with
torch==2.13.0 into a throwaway venv, never into cudaenv's: ``--peers VENV/bin``); one that is not there is a SKIP.
They run as they are: on a machine without a network, ``env-doctor check`` waits on its online lookups (tens of
seconds here), so its ratio says nothing there. The peers import their venv's own torch: the same floor is measured with
that venv's ``python`` (when ``--peers`` has one) and printed against PY's, not a target. A torch on a slower file
system or with more packages beside it imports slower (its ``import torch`` stats and reads about 1,000 files), and the
doctor-to-peer ratios carry that difference.

Also measured, without a target: ``PY -c 'import re'``, the floor under every ``cudaenv ...`` ratio to ``PY -c pass``
when ``bin/cudaenv`` is pip's generated console script (it imports re for its ``sys.argv[0]`` rewrite before cudaenv's
first line runs); the run prints that ratio.

Prints one line per target with PASS/FAIL and exits 1 when a target fails.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent


# A small launcher that starts the measured command and reports its wall time and peak RSS. Peak RSS from
# wait4 counts the memory a child had *before* exec, and a fork of this bench process is already bigger
# than `python -c pass`: so the fork happens in a bare `python -I -S` (a few MiB, less than any command
# measured here), never in this process.
SPAWNER = r"""
import os, sys, time
argv = sys.argv[1:]
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
sys.stdout.write("%r %r %r" % (wall, usage.ru_maxrss, code))
"""


def measure(argv: Sequence[str], env: Dict[str, str], cwd: str) -> Dict[str, float]:
    """One run of ``argv``: wall seconds and peak RSS (MiB) of the child, measured by SPAWNER."""
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", SPAWNER, *argv],
        stdin=subprocess.DEVNULL, capture_output=True, env=env, cwd=cwd, timeout=600,
    )
    try:
        wall_text, rss_text, code_text = proc.stdout.decode().split()
        wall, rss_kib, code = float(wall_text), int(rss_text), int(code_text)
    except ValueError:
        raise SystemExit("bench: could not measure %s:\n%s" % (" ".join(argv), proc.stderr.decode("utf-8", "replace")[-2000:]))
    if code != 0:
        # doctor exits 1 when it finds an error (no driver here); anything else is a broken run
        # fleet: the planted drift; a peer may say so the way the doctor does; check-installer: the all-zero file is BAD
        if not (code == 1 and ("doctor" in argv or "fleet" in argv or "check-installer" in argv or os.path.basename(argv[0]) in PEERS)):
            err = proc.stderr.decode("utf-8", "replace")
            raise SystemExit("bench: %s exited with %s:\n%s" % (" ".join(argv), code, err[-2000:]))
    return {"wall": wall, "rss_mib": rss_kib / 1024.0}


def medians(commands: Dict[str, Sequence[str]], envs: Dict[str, Dict[str, str]], cwd: str, runs: int) -> Dict[str, Dict[str, float]]:
    """Median wall time and peak RSS of each command over ``runs`` rounds.

    The rounds interleave the commands (A B C, A B C, ...) so that a change in machine load affects the
    baselines and the measured commands alike; one warm-up round first fills the file cache.
    """
    samples: Dict[str, List[Dict[str, float]]] = {name: [] for name in commands}
    for round_no in range(runs + 1):
        for name, argv in commands.items():
            sample = measure(argv, envs[name], cwd)
            if round_no:
                samples[name].append(sample)
    return {
        name: {
            "wall": statistics.median(s["wall"] for s in got),
            "rss_mib": statistics.median(s["rss_mib"] for s in got),
            "runs": runs,
        }
        for name, got in samples.items()
    }


def fake_toolkits(base: Path) -> Path:
    """A folder of two toolkits, like an HPC site's /sw/cuda (for `cudaenv use` through CUDAENV_TOOLKITS)."""
    for version in ("12.4.131", "12.1.105"):
        mm = ".".join(version.split(".")[:2])
        root = base / mm
        (root / "bin").mkdir(parents=True)
        (root / "lib64").mkdir()
        (root / "include").mkdir()
        (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
        (root / "include" / "cuda.h").write_text("#define CUDA_VERSION %d%02d0\n" % tuple(int(x) for x in mm.split(".")))
        nvcc = root / "bin" / "nvcc"
        nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release %s, V%s'\n" % (mm, version))
        nvcc.chmod(0o755)
    return base


def many_toolkits(base: Path, count: int = 1000) -> Path:
    """A module tree of ``count`` toolkits named for their versions (``10.0.100`` ... ``13.9.124``: 25 patch releases of
    each of 40 major.minor), each with bin/, lib64/ and version.json: a shared cluster's /sw/cuda."""
    for i in range(count):
        version = "%d.%d.%d" % (10 + i % 4, (i // 4) % 10, 100 + i // 40)
        root = base / version
        (root / "bin").mkdir(parents=True)
        (root / "lib64").mkdir()
        (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
    return base


def _wheel(folder: Path, project: str, version: str, files: Dict[str, str], metadata=(), tag: str = "py3-none-manylinux2014_x86_64") -> Path:
    """A whole wheel as real pip installs it (WHEEL, METADATA, RECORD), its files ``files``."""
    import base64
    import hashlib
    import zipfile

    dist = "%s-%s.dist-info" % (project.replace("-", "_"), version)
    members = dict(files)
    members[dist + "/METADATA"] = "\n".join(["Metadata-Version: 2.1", "Name: %s" % project, "Version: %s" % version, *metadata]) + "\n"
    members[dist + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: cudaenv-bench\nRoot-Is-Purelib: false\nTag: %s\n" % tag
    record = []
    for name, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(text.encode())))
    record.append(dist + "/RECORD,,")
    members[dist + "/RECORD"] = "\n".join(record) + "\n"
    path = folder / ("%s-%s-%s.whl" % (project.replace("-", "_"), version, tag))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in members.items():
            info = zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if "/bin/" in name else 0o644) << 16
            zf.writestr(info, text)
    return path


def wheel_index(base: Path, release: str = "13.0.2") -> Path:
    """A package index (PEP 503 pages, each link with its sha256) of the five CUDA 13.0 component wheels of
    tests/install_builders.py (nvcc, cudart, cccl, crt, nvvm: their files) and their ``cuda-toolkit`` meta wheel,
    constructed, served from 127.0.0.1 by the run: `cudaenv install 13.0` and `pip install --target` read the same."""
    import hashlib

    sys.path.insert(0, str(HERE.parent / "tests"))
    from install_builders import COMPONENTS

    files = base / "files"
    files.mkdir(parents=True)
    made = []
    meta = ["Requires-Python: >=3"]
    for project, (version, extra, content) in COMPONENTS.items():
        made.append((project, _wheel(files, project, version, dict({"nvidia/__init__.py": ""}, **{"nvidia/cu13/" + k: v for k, v in content.items()}))))
        meta += ["Provides-Extra: %s" % extra,
                 "Requires-Dist: %s==%s.*; sys_platform == 'linux' and extra == '%s'" % (project, version, extra)]
    made.append(("cuda-toolkit", _wheel(files, "cuda-toolkit", release, {}, meta, tag="py2.py3-none-any")))
    for project, path in made:
        page = base / "simple" / project
        page.mkdir(parents=True)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        (page / "index.html").write_text('<!DOCTYPE html><html><body><a href="../../files/%s#sha256=%s">%s</a></body></html>\n'
                                         % (path.name, digest, path.name))
    return base


def serve(folder: Path):
    """An HTTP server of ``folder`` on 127.0.0.1 in a thread of this process: (its base URL, the server)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return "http://127.0.0.1:%d" % httpd.server_address[1], httpd


def dpkg_root(base: Path, packages: int = 875, lines: int = 150) -> Path:
    """A root (``--root``) with a deb-installed CUDA 12.4 toolkit in /usr/local/cuda-12.4 and a dpkg database of its
    four packages and ``packages`` others of ``lines`` paths each (a desktop's 878 lists of 130,000 lines, as this
    machine has), constructed: the lists `uninstall` reads and `dpkg --admindir ROOT/var/lib/dpkg -S` searches."""
    info = base / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    stanza = ("Package: %s\nStatus: install ok installed\nArchitecture: amd64\nMaintainer: constructed <bench@example.invalid>\n"
              "Version: %s\nDescription: constructed for the bench\n")
    status = []
    top = "/usr/local/cuda-12.4"
    cuda = {"cuda-nvcc-12-4": ["bin/nvcc", "bin/nvcc.profile"], "cuda-cudart-12-4": ["lib64/libcudart.so.12", "lib64/libcudart.so.12.4.127"],
            "cuda-cudart-dev-12-4": ["include/cuda_runtime.h", "include/cuda.h", "lib64/libcudart.so"],
            "cuda-toolkit-12-4-config-common": ["version.json"]}
    for name, rels in cuda.items():
        dirs = sorted({top + "/" + r.rsplit("/", 1)[0] for r in rels if "/" in r})
        (info / (name + ".list")).write_text("\n".join(["/.", "/usr", "/usr/local", top] + dirs + [top + "/" + r for r in rels]) + "\n")
        status.append(stanza % (name, "12.4.127-1"))
        for rel in rels:
            f = base / top.lstrip("/") / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}) if rel == "version.json" else "")
    for i in range(packages):
        name = "lib%s%d" % ("abcdefgh"[i % 8], i)
        paths = ["/.", "/usr", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/share/doc/" + name]
        paths += ["/usr/lib/x86_64-linux-gnu/%s/module%03d.so" % (name, j) for j in range(lines // 2)]
        paths += ["/usr/share/%s/data/file%03d.txt" % (name, j) for j in range(lines - lines // 2 - 5)]
        (info / (name + ".list")).write_text("\n".join(paths) + "\n")
        status.append(stanza % (name, "1.%d-1" % i))
    (base / "var/lib/dpkg/status").write_text("\n".join(status))
    for folder in ("updates", "triggers", "alternatives"):
        (base / "var/lib/dpkg" / folder).mkdir()
    (base / "var/lib/dpkg/available").write_text("")
    return base


PYENV_SHIM = """#!/usr/bin/env bash
set -e
[ -n "$PYENV_DEBUG" ] && set -x

program="${0##*/}"

export PYENV_ROOT="%(root)s"
exec "%(root)s/libexec/pyenv" exec "$program" "$@"
"""

# A stand-in for `pyenv exec` (constructed; the real one is libexec/pyenv-exec, which runs pyenv-version-name,
# pyenv-which and their hooks: a dozen more programs): read the version as pyenv does, put its bin first, exec.
PYENV_EXEC = """#!/usr/bin/env bash
set -e
shift
program="$1"; shift
version="${PYENV_VERSION:-$(head -n 1 "$PYENV_ROOT/version")}"
export PATH="$PYENV_ROOT/versions/$version/bin:$PATH"
exec "$PYENV_ROOT/versions/$version/bin/$program" "$@"
"""


def pyenv_shims(base: Path, python: str) -> str:
    """The folder of python3's pyenv shim: this machine's own pyenv's (``$PYENV_ROOT`` or ``~/.pyenv``) when it has
    one, else a constructed pyenv root in ``base`` whose shim (pyenv 2.6's, tests/recorded/pyenv-2.6.30-shim-python3.sh)
    leads to ``python`` through a stand-in `pyenv exec` (PYENV_EXEC)."""
    own = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    if os.access(os.path.join(own, "shims", "python3"), os.X_OK) and os.path.isfile(os.path.join(own, "libexec", "pyenv")):
        return os.path.join(own, "shims")
    root = base / "pyenv"
    for rel, text in (("shims/python3", PYENV_SHIM % {"root": root}), ("libexec/pyenv", PYENV_EXEC)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        (root / rel).chmod(0o755)
    (root / "versions" / "bench" / "bin").mkdir(parents=True)
    os.symlink(python, root / "versions" / "bench" / "bin" / "python3")
    (root / "version").write_text("bench\n")
    return str(root / "shims")


def _builders():
    sys.path.insert(0, str(HERE.parent / "tests"))
    import checkpoint_builders

    return checkpoint_builders


def frameworks_site(base: Path) -> Path:
    """A site-packages folder holding every package of data/frameworks.json (TensorFlow's RECORD 20,000 lines)."""
    import json

    sys.path.insert(0, str(HERE.parent / "tests"))
    import framework_builders as fb

    site = base / "lib" / "python3.12" / "site-packages"
    rows = json.loads((HERE.parent / "data" / "frameworks.json").read_text())["rows"]
    modules = torch_with_extensions(site, base / "build")
    for row in rows:
        if row.get("kind") != "package":
            continue
        if row["package"] == "tensorflow":
            folder = fb.tensorflow(site)
            record = folder / "RECORD"
            record.write_text(record.read_text() + "".join("tensorflow/include/x/h%05d.h,sha256=x,100\n" % i for i in range(20_000)))
        elif row.get("torch_extension") and modules:
            fb.dist(site, row["package"], "1.0.0+cu128", requires=["torch"], binary={row["package"].replace("-", "_") + "/_C.so": modules})
        else:
            fb.dist(site, row["package"], "1.0.0+cu128")
    return site


def torch_with_extensions(site: Path, build: Path) -> bytes:
    """torch 2.8.0+cu128 in ``site`` whose torch/lib libc10.so and libtorch_cpu.so (built by the machine's C compiler)
    export 4,000 C++-mangled names, and the bytes of an extension module that needs 800 of them (each torch_extension
    package of data/frameworks.json ships one): the extension check's lookups, counted in the ratio. b"" without cc."""
    import shutil

    if not (shutil.which("cc") or shutil.which("gcc")):
        return b""
    import elf_builders as eb
    from machine import make_fake_torch

    make_fake_torch(site, "2.8.0+cu128", "12.8")
    names = ["_ZN2at6native%dop%dEv" % (len("op%d" % i), i) for i in range(4000)]
    lib = site / "torch" / "lib"
    c10 = eb.build_library(lib, "libc10.so", soname="libc10.so", code=eb.exporting(names[:2000]))
    cpu = eb.build_library(lib, "libtorch_cpu.so", soname="libtorch_cpu.so", code=eb.exporting(names[2000:]))
    module = eb.build_library(build, "_C.so", links=[c10, cpu], code=eb.needing(names[::5]))
    return module.read_bytes()


def conda_env(base: Path, python: str, meta_too: bool = True) -> str:
    """A conda env as conda leaves a big one: 5,000 conda-meta records (a few CUDA packages among them), a 20,000-line
    history; its bin/python links to ``python`` (the doctor's env probe reads it through that path). Without
    ``meta_too``: the same link in a folder that is no environment (the baseline: the same interpreter, started alike)."""
    if not meta_too:
        (base / "bin").mkdir(parents=True)
        os.symlink(python, base / "bin" / "python")
        return str(base / "bin" / "python")
    meta = base / "conda-meta"
    meta.mkdir(parents=True)
    for i in range(5000):
        (meta / ("pkg%04d-1.0.%d-h%07d_0.json" % (i, i % 7, i))).write_text("{}")
    for name in ("cuda-version-12.6-h7480c83_3", "pytorch-2.7.1-cuda126_generic_py312_h1234_200"):
        (meta / (name + ".json")).write_text("{}")
    block = "==> 2026-03-02 10:14:07 <==\n# cmd: /opt/conda/bin/conda install x\n# conda version: 24.11.3\n+conda-forge/linux-64::x-1-0\n"
    (meta / "history").write_text(block * 5000)
    (base / "bin").mkdir()
    os.symlink(python, base / "bin" / "python")
    return str(base / "bin" / "python")


def container_root(base: Path, engines: bool) -> Path:
    """A root for ``doctor --quick --root``: with ``engines``, a GPU container host as the Containers section reads it
    (Docker's, containerd's and CRI-O's configs, a CDI spec, Podman's containers.conf, the toolkit's dpkg packages,
    /dev/char links, cgroup v2; the recorded real files of tests/recorded), else the same root without them. The
    engines are found by their config files (a program under the root is never run)."""
    def recorded(name: str) -> str:
        return (HERE.parent / "tests" / "recorded" / name).read_text().split("# ---\n", 1)[1]

    root = base / ("host" if engines else "bare")
    for folder in ("etc", "dev/char", "sys/fs/cgroup", "var/lib/dpkg"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "sys/fs/cgroup/cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    status = "".join("Package: %s\nStatus: install ok installed\nVersion: 1.17.8-1\n\n" % n
                     for n in ("libc6", "bash", "coreutils"))
    if engines:
        files = {"etc/docker/daemon.json": recorded("docker-daemon-nvidia-runtime-args.json"),
                 "etc/containerd/config.toml": recorded("containerd-config-cdi-no-nvidia.toml"),
                 "etc/crio/crio.conf.d/99-nvidia.toml": recorded("crio-conf-nvidia-ctk.toml"),
                 "etc/cdi/nvidia.yaml": recorded("cdi-nvidia-575-one-gpu.yaml"),
                 "etc/containers/containers.conf": recorded("podman-containers-conf-cdi.conf")}
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        os.symlink("../nvidia0", root / "dev/char/195:0")
        status += "".join("Package: %s\nStatus: install ok installed\nVersion: 1.17.8-1\n\n" % n
                          for n in ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container1"))
    (root / "var/lib/dpkg/status").write_text(status)
    return root


def big_checkpoint(path: Path, count: int = 24, numel: int = 16 * 1024 * 1024) -> Path:
    """A torch zip state_dict of ``count`` float32 tensors of ``numel`` elements (24 x 64 MiB = 1.5 GiB), on cpu;
    the records are streamed, never held in memory."""
    import zipfile

    cb = _builders()
    items = [("layers.%d.weight" % i, cb.Tensor(cb.Storage(str(i), numel), (4096, numel // 4096))) for i in range(count)]
    sd = cb.state_dict(items, [""] + ["layers.%d" % i for i in range(count)])
    chunk = bytes(1 << 24)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr("big/data.pkl", cb.dumps(sd))
        zf.writestr("big/.format_version", b"1")
        zf.writestr("big/.storage_alignment", b"64")
        zf.writestr("big/byteorder", b"little")
        for i in range(count):
            with zf.open("big/data/%d" % i, "w", force_zip64=True) as fh:
                for _ in range(numel * 4 // len(chunk)):
                    fh.write(chunk)
        zf.writestr("big/version", b"3\n")
    return path


def many_tensors_checkpoint(path: Path, count: int = 20_000) -> Path:
    """A torch zip state_dict of ``count`` small tensors (4 float32 each), each its own storage."""
    cb = _builders()
    items = [("blocks.%d.w" % i, cb.Tensor(cb.Storage(str(i), 4), (4,))) for i in range(count)]
    path.write_bytes(cb.torch_zip(cb.state_dict(items, [""] + ["blocks.%d" % i for i in range(count)]), prefix="many"))
    return path


def fleet_reports(folder: Path, count: int, cudaenv: str, env: Dict[str, str]) -> Path:
    """``count`` doctor reports in ``folder``: this machine's real report with the host name changed, and drift
    planted every 50th (an older driver), 200th (a CPU torch, an error) and 199th node (one GPU fewer)."""
    folder.mkdir(parents=True)
    real = subprocess.run([cudaenv, "doctor", "--json", "--quick"], capture_output=True, text=True, env=env, timeout=120)
    base = json.loads(real.stdout)
    base["gpus"] = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-%08d-0000-0000-0000-000000000000" % i,
                     "memory_total_mib": 81559, "compute_capability": "9.0"} for i in range(8)]
    base["driver"] = {"version": "580.95.05", "cuda_version": "13.0", "source": "nvml"}

    def variant(**changes) -> str:
        data = dict(base, **changes)
        data["hostname"] = "@@HOST@@"
        data["generated_at"] = "@@TIME@@"
        return json.dumps(data, indent=2)

    plain = variant()
    old = variant(driver={"version": "535.247.01", "cuda_version": "12.2", "source": "nvml"})
    cpu = variant(torch={"python": "/usr/bin/python3", "installed": True, "version": "2.13.0+cpu"},
                  findings=base.get("findings", []) + [{"id": "torch-cpu-only", "severity": "error", "title": "t", "detail": "d"}])
    short = variant(gpus=base["gpus"][:7])
    for i in range(count):
        text = old if i % 50 == 7 else cpu if i % 200 == 11 else short if i % 199 == 5 else plain
        name = "node%06d" % i
        stamp = "2026-12-04T%02d:%02d:%02dZ" % (i // 3600 % 24, i // 60 % 60, i % 60)  # each node its own time too
        (folder / (name + ".json")).write_text(text.replace("@@HOST@@", name).replace("@@TIME@@", stamp))
    return folder


# `cudaenv explain` (issue 14): a 50 MB paste through the CLI, and every pattern's hostile inputs through
# classify_all (each input alone: the worst one is the figure). The inputs are the regex-safety test's kind, 100 KB:
# a pattern's literal runs repeated, each followed by a long run, its needle glued to progress-bar noise, and lines.
EXPLAIN_HOSTILE = r"""
import json, re, sys, time
try:
    from re import _parser as sp
except ImportError:
    import sre_parse as sp
from cudaenv.explain import classify_all, normalize
from cudaenv.core.resources import load_table

def literals(p):
    out, run = [], []
    for op, av in list(sp.parse(p, re.IGNORECASE)) + [(None, None)]:
        if str(op) == "LITERAL":
            run.append(chr(av))
            continue
        if len(run) >= 3:
            out.append("".join(run))
        run = []
    return out or ["x"]

pats = [p for r in load_table("error_patterns")["rows"] for p in r["patterns"]]
pats += [x for r in load_table("explain_rules")["rows"] for x in ([r["pattern"]] if "pattern" in r else r.get("patterns", []))]
pats += [v.pattern for v in vars(normalize).values() if isinstance(v, re.Pattern)]
size = 100_000
worst, which, count = 0.0, "", 0
for p in pats:
    for lit in literals(p)[:3]:
        for text in (lit * (size // len(lit) + 1), (lit + " ") * (size // (len(lit) + 1) + 1), lit + "a" * size,
                     lit + " " * size, (lit + "\n") * (size // (len(lit) + 1) + 1), ("[rank0]: \x1b[31m" + lit) * (size // (len(lit) + 14) + 1)):
            start = time.perf_counter()
            classify_all(text)
            took = time.perf_counter() - start
            count += 1
            if took > worst:
                worst, which = took, "%r x %d" % (text[:40], len(text))
for text in ("\n" * size * 10, "x\n" * size * 5, "[" * size * 10, "\uff1a" * size * 10):
    start = time.perf_counter()
    classify_all(text)
    took = time.perf_counter() - start
    count += 1
    if took > worst:
        worst, which = took, "%r x %d" % (text[:40], len(text))
# 1 MB of one literal repeated ("NCCL error" x 100,000): a window after a literal ("NCCL error[^\\n]{0,160}?...")
# rescans itself from every occurrence, so this is where a pattern's cost per character shows
big = 1_000_000
worst_1m, which_1m, seen = 0.0, "", set()
for p in pats:
    for lit in literals(p)[:1]:
        for text in (lit * (big // len(lit) + 1), (lit + " ") * (big // (len(lit) + 1) + 1)):
            if text[:64] in seen:
                continue
            seen.add(text[:64])
            start = time.perf_counter()
            classify_all(text)
            took = time.perf_counter() - start
            if took > worst_1m:
                worst_1m, which_1m = took, "%r x %d" % (text[:40], len(text))
print(json.dumps({"patterns": len(pats), "inputs": count, "worst_s": worst, "worst": which,
                  "inputs_1m": len(seen), "worst_1m_s": worst_1m, "worst_1m": which_1m}))
"""


def explain_figures(python: str, cudaenv: str, work: str, env: Dict[str, str]) -> Dict[str, float]:
    """The explain figures: ``cudaenv explain --file`` of a 50 MB log (wall, the best of 3, its error on the last
    line), and the worst single hostile input of every pattern through ``classify_all`` (seconds)."""
    import time

    paste = Path(work) / "paste-50M.log"
    line = b"2024-05-01 12:00:01,123 - train - INFO - [rank0]: step 17 loss 0.2512 \x1b[32mok\x1b[0m 45%|####  |\r\n"
    with paste.open("wb") as fh:
        for _ in range(50 * 1024 * 1024 // (len(line) * 1024)):
            fh.write(line * 1024)
        fh.write(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    walls = []
    try:
        for _ in range(3):
            start = time.perf_counter()
            r = subprocess.run([cudaenv, "explain", "--file", str(paste)], capture_output=True, text=True, env=env, timeout=300)
            walls.append(time.perf_counter() - start)
            if "\ncuda-oom:" not in r.stdout:  # after the line that says only the head and tail were searched
                raise SystemExit("bench: explain did not find the OOM at the end of the 50 MB paste: %s" % r.stdout[:200])
    finally:
        paste.unlink()
    hostile = subprocess.run([python, "-c", EXPLAIN_HOSTILE], capture_output=True, text=True, env=env, timeout=1200)
    data = json.loads(hostile.stdout)
    print("explain: 50 MB paste %.3f s (best of 3); %d hostile inputs of %d patterns, worst %.3f s on %s; "
          "%d of 1 MB (a literal repeated), worst %.3f s on %s"
          % (min(walls), data["inputs"], data["patterns"], data["worst_s"], data["worst"], data["inputs_1m"],
             data["worst_1m_s"], data["worst_1m"]))
    return {"explain 50M": min(walls), "explain hostile": data["worst_s"], "explain hostile 1M": data["worst_1m_s"]}


# The tool-output parsers on megabyte hostile runs (issue 25: the seconds the unit tests no longer time; they count
# steps instead, tests/builders.assert_linear): each parser family on 1 MB of each unit, on one line and in lines.
PARSERS_HOSTILE = r"""
import json, time
from cudaenv.parse import cudnn, dpkg, index_pages, ldconf, nvcc, nvidia_smi, proc, toolkit_files
from cudaenv.pasted import read_facts

def smi(t):
    nvidia_smi.parse_banner(t); nvidia_smi.parse_query_csv(t); nvidia_smi.parse_apps_csv(t)
def procs(t):
    proc.parse_proc_driver_version(t); proc.parse_os_release(t); proc.parse_cgroup_container(t)
def toolkit(t):
    nvcc.parse_nvcc_version(t); toolkit_files.parse_version_json(t); toolkit_files.parse_cuda_h(t)
    cudnn.parse_cudnn_header(t); dpkg.parse_status(t); ldconf.parse_ld_so_conf(t)
def pages(t):
    index_pages.parse_index_page(t, "text/html"); index_pages.parse_index_page(t, "application/vnd.pypi.simple.v1+json")

UNITS = {
    "nvidia-smi": (smi, [" ", "|", "0 ", "| 0 ", "1" * 50 + "MiB", "(UUID: ", "GPU-", "NVIDIA-SMI ", "CUDA Version: ", "Driver Version: "]),
    "/proc": (procs, ["NVRM version: ", "# R35 (", "0", " ", "=", "'", "\\"]),
    "toolkit files": (toolkit, ["release ", "9", '"cuda": {', "1.", "#define CUDA_VERSION ", "include ", "["]),
    "index pages": (pages, ["<a", "<a href=x>", "<a href='", "</a", "\\", '"']),
    "pasted": (read_facts, ["9" * 60, " " * 60, "GPU 0: " + "a" * 50, "| " * 40, ":" * 60]),
}
size = 1_000_000
worst, which, count = 0.0, "", 0
for family, (work, units) in UNITS.items():
    for unit in units:
        for text in (unit * (size // len(unit)), (unit * 200 + "\n") * (size // (len(unit) * 200 + 1))):
            start = time.perf_counter()
            work(text)
            took = time.perf_counter() - start
            count += 1
            if took > worst:
                worst, which = took, "%s on %r x %d" % (family, text[:30], len(text))
print(json.dumps({"inputs": count, "worst_s": worst, "worst": which}))
"""


def parser_figures(python: str, env: Dict[str, str]) -> Dict[str, float]:
    """The worst single 1 MB hostile input of the tool-output parsers (seconds)."""
    r = subprocess.run([python, "-c", PARSERS_HOSTILE], capture_output=True, text=True, env=env, timeout=1200)
    if r.returncode != 0:
        raise SystemExit("bench: the parser figures failed: %s" % r.stderr[-2000:])
    data = json.loads(r.stdout)
    print("parsers: %d hostile inputs of 1 MB, worst %.3f s on %s" % (data["inputs"], data["worst_s"], data["worst"]))
    return {"parsers hostile": data["worst_s"]}


# issue 32: inspecting a checkpoint folder costs about what inspecting its files one by one costs (in one process,
# the best of 5 each, interleaved: the folder's own work is the listing, the index and the merge of the reports)
FOLDER_RATIO = r"""
import json, os, sys, time
from cudaenv.checkpoint.analyze import inspect_file
from cudaenv.checkpoint.folder import inspect_folder
folder = sys.argv[1]
shards = sorted(n for n in os.listdir(folder) if n.endswith((".bin", ".safetensors")))
def timed(work):
    t = time.perf_counter(); work(); return time.perf_counter() - t
ones, wholes = [], []
for _ in range(5):  # the two interleaved, round by round: a change of the machine's load falls on both alike
    ones.append(timed(lambda: [inspect_file(os.path.join(folder, n), None, with_tensors=False) for n in shards]))
    wholes.append(timed(lambda: inspect_folder(folder)))
one, whole = min(ones), min(wholes)
print(json.dumps({"shards": len(shards), "files_s": one, "folder_s": whole}))
"""


def folder_figures(python: str, work: str, env: Dict[str, str], count: int = 8, per_shard: int = 2_500) -> Dict[str, float]:
    """``inspect_folder`` over ``inspect_file`` of each shard, in one process (seconds and their ratio), for ``count``
    .bin shards (``per_shard`` small tensors each, an index naming them) and for a DCP folder in the safetensors format
    of ``count`` ranks (each shard ``per_shard`` row chunks with their DCP_SHARDING_INFO, as torch 2.13's
    HuggingFaceStorageWriter writes them: the join of the chunks is the folder's own work)."""
    cb = _builders()
    out: Dict[str, float] = {}
    for kind in ("bin", "dcp-safetensors"):
        folder = Path(work) / ("shards-" + kind)
        folder.mkdir()
        wmap = {}
        for s in range(count):
            if kind == "bin":
                name = "pytorch_model-%05d-of-%05d.bin" % (s + 1, count)
                items = [("module.blocks.%d.w" % (s * per_shard + i), cb.Tensor(cb.Storage(str(i), 4), (4,))) for i in range(per_shard)]
                (folder / name).write_bytes(cb.torch_zip(cb.state_dict(items), prefix=name[:-4]))
                wmap.update((k, name) for k, _ in items)
            else:
                name = "shard-%05d-model-00001-of-00001.safetensors" % (s + 1)
                keys = ["module.blocks.%d.w" % i for i in range(per_shard)]
                info = json.dumps({k: {"saved_offsets": [4 * s, 0]} for k in keys})
                (folder / name).write_bytes(cb.safetensors_file({k: ("F32", (4, 4), 64) for k in keys},
                                                                {"DCP_SHARDING_INFO": info, "DCP_VERSION": "1.0", "format": "pt"}))
        if wmap:
            (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": wmap}))
        try:
            r = subprocess.run([python, "-c", FOLDER_RATIO, str(folder)], capture_output=True, text=True, env=env, timeout=1200)
        finally:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
        if r.returncode != 0:
            raise SystemExit("bench: the folder figures failed: %s" % r.stderr[-2000:])
        data = json.loads(r.stdout)
        print("checkpoint folder (%s): %d shards, the files one by one %.3f s, the folder %.3f s" % (
            kind, data["shards"], data["files_s"], data["folder_s"]))
        out["checkpoint folder / its files" if kind == "bin" else "dcp safetensors folder / its files"] = (
            data["folder_s"] / data["files_s"])
    return out


ZERO_PAYLOAD = 1 << 30  # the all-zero download check-installer and md5sum read (the issue measured 4 GiB: the ratio is per byte)
CONSOLE_FLOOR = "python -c 'import re'"
TORCH_FLOOR = "torch import floor"  # import torch; torch.cuda.is_available(); os._exit(0), in PY
PEERS_FLOOR = "torch import floor (the peers' python)"  # the same, in --peers DIR's python: their torch
# The torch-importing peers (issue 35) and their main check, each installed beside PY or in --peers DIR with torch==2.13.0
PEERS = {"env-doctor": ["check"], "cuda-doctor": ["diagnose"], "gpu-doctor": ["--check"], "ai-infradr": []}
FLEET_FLOOR = ("import json, os, sys\nfor name in sorted(os.listdir(sys.argv[1])):\n"
               "    with open(os.path.join(sys.argv[1], name), 'rb') as fh:\n        json.load(fh)\n")


def _console_imports_re(script: str) -> bool:
    """True when the installed ``cudaenv`` is a Python script that imports re itself (pip's console-script template)."""
    with open(script, "rb") as fh:
        head = fh.read(4096)
    return head.startswith(b"#!") and b"\nimport re\n" in head


def has_command(cudaenv: str, name: str, env: Dict[str, str]) -> bool:
    """True when this cudaenv has the subcommand (a missing module answers 'not available', exit 2)."""
    r = subprocess.run([cudaenv, name, "--help"], capture_output=True, text=True, env=env, timeout=60)
    return r.returncode == 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (median; default 7)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--peers", metavar="DIR", help="the folder of the peers' commands (%s; default: beside PY); "
                        "a peer not there is skipped" % ", ".join(PEERS))
    parser.add_argument("--only", metavar="WORDS", help="only the commands whose name has one of these comma-separated "
                        "words (and the python -c pass baseline), e.g. --only checkpoint,torch.load")
    args = parser.parse_args(argv)

    python = sys.executable
    cudaenv = str(Path(python).parent / "cudaenv")
    if not os.path.exists(cudaenv):
        raise SystemExit("bench: no cudaenv next to %s; install it first (nox -s bench does)" % python)
    import importlib.util

    fleet_only = bool(args.only) and all(any(k in w for k in ("fleet", "explain", "hostile", "quick", "install", "dpkg", "use", "list"))
                                         for w in args.only.split(",") if w)  # no torch needed
    if importlib.util.find_spec("torch") is None and not fleet_only:
        raise SystemExit("bench: torch is not installed in %s (pip install torch==2.13.0)" % python)

    env = dict(os.environ)
    env.pop("CUDAENV_ROOT", None)
    env.pop("PYTHONPATH", None)
    work = tempfile.mkdtemp(prefix="cudaenv-bench-")
    runs = max(1, args.runs)

    use_env = dict(env)
    use_env.update({"CUDAENV_TOOLKITS": str(fake_toolkits(Path(work) / "sw" / "cuda")), "SHELL": "/bin/bash"})
    commands: Dict[str, Sequence[str]] = {
        "python -c pass": [python, "-c", "pass"],
        # not a target: what pip's generated console script does before cudaenv's first line (`import re`, for its
        # sys.argv[0] rewrite), the floor under every `cudaenv ...` ratio to `python -c pass`
        CONSOLE_FLOOR: [python, "-c", "import re"],
        "collect_env": [python, "-m", "torch.utils.collect_env"],
        "doctor --json": [cudaenv, "doctor", "--json", "--python", python],
        "doctor --json --quick": [cudaenv, "doctor", "--json", "--quick", "--python", python],
        "doctor --json --quick (frameworks)": [cudaenv, "doctor", "--json", "--quick", "--python", python],
        "doctor --json --quick (conda env)": [cudaenv, "doctor", "--json", "--quick", "--python",
                                             conda_env(Path(work) / "conda" / "envs" / "big", python)],
        "doctor --json --quick (linked python)": [cudaenv, "doctor", "--json", "--quick", "--python",
                                                  conda_env(Path(work) / "conda" / "plain", python, meta_too=False)],
        "list": [cudaenv, "list"],
    }
    for label, engines in (("doctor --quick --root (container host)", True), ("doctor --quick --root (no engine)", False)):
        root = container_root(Path(work) / "containers", engines)
        commands[label] = [cudaenv, "doctor", "--json", "--quick", "--python", python, "--root", str(root)]
    envs = {name: env for name in commands}
    envs["doctor --json --quick (frameworks)"] = dict(env, PYTHONPATH=str(frameworks_site(Path(work) / "fw")),
                                                      CUDAENV_CACHE_DIR=os.path.join(work, "memo"))
    commands["doctor --json --quick (frameworks, no memo)"] = commands["doctor --json --quick (frameworks)"]
    envs["doctor --json --quick (frameworks, no memo)"] = dict(envs["doctor --json --quick (frameworks)"], CUDAENV_NO_CACHE="1")
    if has_command(cudaenv, "use", env):
        commands["use 12.4"] = [cudaenv, "use", "12.4", "--shell", "bash"]
        envs["use 12.4"] = use_env
        commands["use 12.4 (1,000 toolkits)"] = [cudaenv, "use", "12.4", "--shell", "bash"]
        envs["use 12.4 (1,000 toolkits)"] = dict(use_env, CUDAENV_TOOLKITS=str(many_toolkits(Path(work) / "sw1000")))
    # python3 a pyenv shim, no --python (the doctor finds python3 on PATH): issue 35
    shim_env = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_VERSION")}
    shim_env["PATH"] = pyenv_shims(Path(work), python) + os.pathsep + env.get("PATH", "")
    commands["doctor --json --quick (python3 a pyenv shim)"] = [cudaenv, "doctor", "--json", "--quick"]
    envs["doctor --json --quick (python3 a pyenv shim)"] = shim_env
    # issue 35: the doctor against what its torch child cannot avoid, and against the peers that import torch
    commands[TORCH_FLOOR] = [python, "-c", "import os, torch; torch.cuda.is_available(); os._exit(0)"]
    envs[TORCH_FLOOR] = env
    for peer, peer_args in PEERS.items():
        exe = os.path.join(args.peers or os.path.dirname(python), peer)
        if os.access(exe, os.X_OK):
            commands["peer " + peer] = [exe, *peer_args]
            envs["peer " + peer] = env
    peers_python = os.path.join(args.peers, "python") if args.peers else None
    if peers_python and os.access(peers_python, os.X_OK) and any(n.startswith("peer ") for n in commands):
        commands[PEERS_FLOOR] = [peers_python, *commands[TORCH_FLOOR][1:]]
        envs[PEERS_FLOOR] = env
    if has_command(cudaenv, "explain", env):
        two, ten = Path(work) / "paste-2-lines.txt", Path(work) / "paste-10M.log"
        two.write_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                       "CUDA kernel errors might be asynchronously reported at some other API call\n")
        line = b"2024-05-01 12:00:01,123 - train - INFO - [rank0]: step 17 loss 0.2512 \x1b[32mok\x1b[0m 45%|####  |\r\n"
        with ten.open("wb") as fh:
            for _ in range(10 * 1024 * 1024 // (len(line) * 1024)):
                fh.write(line * 1024)
            fh.write(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
        commands["explain (2-line paste)"] = [cudaenv, "explain", "--file", str(two)]
        commands["explain (10 MB log)"] = [cudaenv, "explain", "--file", str(ten)]
        envs["explain (2-line paste)"] = envs["explain (10 MB log)"] = env
    big = many = tiny = None
    if has_command(cudaenv, "checkpoint", env):
        big = big_checkpoint(Path(work) / "big.pt")
        many = many_tensors_checkpoint(Path(work) / "many.pt")
        commands["checkpoint inspect 1.5G"] = [cudaenv, "checkpoint", "inspect", str(big)]
        commands["torch.load 1.5G"] = [python, "-c", "import sys, torch; torch.load(sys.argv[1], map_location='cpu')", str(big)]
        commands["checkpoint inspect 20k"] = [cudaenv, "checkpoint", "inspect", str(many)]
        tiny = Path(work) / "tiny.pt"
        tiny.write_bytes(_builders().torch_zip(_builders().cnn()))
        commands["checkpoint inspect tiny"] = [cudaenv, "checkpoint", "inspect", str(tiny)]  # the fixed cost
        for name in ("checkpoint inspect 1.5G", "torch.load 1.5G", "checkpoint inspect 20k", "checkpoint inspect tiny"):
            envs[name] = env
    wanted = [w for w in (args.only or "").split(",") if w]
    httpd = None
    if has_command(cudaenv, "install", env) and (not wanted or any(w in "install 13.0 (cached wheels) pip install --target" for w in wanted)):
        # issue 35: one install from wheels against pip installing the same wheels, both from a served local index
        # (after the warm-up round every wheel is in pip's cache, and cudaenv's release list in its own)
        url, httpd = serve(wheel_index(Path(work) / "index"))
        pip = str(Path(python).parent / "pip")
        install_env = {k: v for k, v in env.items() if not k.startswith(("PIP_", "UV_", "CUDAENV_"))}
        install_env.update({"PIP_INDEX_URL": url + "/simple", "CUDAENV_PACKAGE_INDEX": url + "/simple", "PIP_CONFIG_FILE": os.devnull,
                            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_CACHE_DIR": os.path.join(work, "pip-cache"),
                            "CUDAENV_DATA_DIR": os.path.join(work, "store"), "CUDAENV_CACHE_DIR": os.path.join(work, "cache"),
                            "PATH": str(Path(python).parent) + os.pathsep + env.get("PATH", "")})
        commands["install 13.0 (cached wheels)"] = [cudaenv, "install", "13.0", "--reinstall"]
        commands["pip install --target"] = [pip, "install", "--quiet", "--target", os.path.join(work, "target"), "--upgrade",
                                            "cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==13.0.2"]
        envs["install 13.0 (cached wheels)"] = envs["pip install --target"] = install_env
    dpkg = shutil.which("dpkg")
    if dpkg and has_command(cudaenv, "uninstall", env) and (not wanted or any(w in "uninstall 12.4 --script dpkg -S" for w in wanted)):
        # issue 35: the removal plan of a deb toolkit against dpkg's own search of the same lists (none of this machine's)
        root = dpkg_root(Path(work) / "dpkg-root")
        commands["uninstall 12.4 --script"] = [cudaenv, "uninstall", "12.4", "--root", str(root), "--script", os.path.join(work, "plan.sh")]
        commands["dpkg -S"] = [dpkg, "--admindir=%s" % (root / "var/lib/dpkg"), "-S", "/usr/local/cuda-12.4/*"]
        envs["uninstall 12.4 --script"] = envs["dpkg -S"] = env
    md5sum = shutil.which("md5sum")
    if md5sum and has_command(cudaenv, "check-installer", env) and (not wanted or any(w in "check-installer md5sum" for w in wanted)):
        # issue 35: a download that came down as zeros (a preallocated file never written) against md5sum of it
        zeros = Path(work) / "zeros" / "cuda_12.4.0_550.54.14_linux.run"
        zeros.parent.mkdir(parents=True, exist_ok=True)
        with open(zeros, "wb") as fh:
            fh.truncate(ZERO_PAYLOAD)  # sparse: read as zeros, costs no disk
        commands["check-installer (all-zero payload)"] = [cudaenv, "check-installer", str(zeros)]
        commands["md5sum of check-installer's all-zero payload"] = [md5sum, str(zeros)]
        envs["check-installer (all-zero payload)"] = envs["md5sum of check-installer's all-zero payload"] = env
    if wanted:
        commands = {k: v for k, v in commands.items() if k in ("python -c pass", CONSOLE_FLOOR) or any(w in k for w in wanted)}
    fleet: Dict[str, Sequence[str]] = {}
    if has_command(cudaenv, "fleet", env) and (not args.only or "fleet" in args.only):
        for label, count in (("fleet summarize 10k", 10_000), ("fleet summarize 100k", 100_000)):
            folder = fleet_reports(Path(work) / label.split()[-1], count, cudaenv, env)
            fleet[label] = [cudaenv, "fleet", "summarize", str(folder)]
    explain: Dict[str, float] = {}
    try:
        if not args.only or "explain" in args.only:
            explain = explain_figures(python, cudaenv, work, env)
        if not args.only or "hostile" in args.only:
            explain.update(parser_figures(python, env))
        if has_command(cudaenv, "checkpoint", env) and (not args.only or "folder" in args.only):
            explain.update(folder_figures(python, work, env))
        figures = medians(commands, envs, work, runs)
        if fleet:
            figures.update(medians({"fleet summarize 10k": fleet["fleet summarize 10k"]}, {"fleet summarize 10k": env}, work, runs))
            # the floor (issue 35): a Python that json.loads every report file of the folder, in the same rounds
            floor = [python, "-c", FLEET_FLOOR, fleet["fleet summarize 100k"][-1]]
            figures.update(medians({"fleet summarize 100k": fleet["fleet summarize 100k"], "json.load 100k": floor},
                                   {"fleet summarize 100k": env, "json.load 100k": env}, work, min(runs, 3)))
    finally:
        for f in (big, many, tiny):
            if f is not None:
                f.unlink()
        for label in fleet:
            shutil.rmtree(os.path.join(work, label.split()[-1]), ignore_errors=True)
        shutil.rmtree(os.path.join(work, "fw"), ignore_errors=True)  # the frameworks' site-packages
        shutil.rmtree(os.path.join(work, "sw1000"), ignore_errors=True)  # the 1,000 toolkits
        for name in ("paste-2-lines.txt", "paste-10M.log"):
            if os.path.exists(os.path.join(work, name)):
                os.unlink(os.path.join(work, name))
        shutil.rmtree(os.path.join(work, "conda"), ignore_errors=True)  # the conda env
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        for name in ("index", "store", "cache", "pip-cache", "target", "dpkg-root"):  # install's and uninstall's
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)

    def ratio(a: str, b: str, key: str = "wall") -> Optional[float]:
        if a not in figures or b not in figures:
            return None
        return figures[a][key] / figures[b][key]

    checks = [
        ("doctor --json / collect_env", ratio("doctor --json", "collect_env"), 0.8),
        ("doctor --json --quick / collect_env", ratio("doctor --json --quick", "collect_env"), 0.1),
        ("doctor --json / the torch import floor", ratio("doctor --json", TORCH_FLOOR), 1.05),
    ] + [
        ("doctor --json / %s %s" % (peer, " ".join(PEERS[peer])), ratio("doctor --json", "peer " + peer), 0.75) for peer in PEERS
    ] + [
        ("doctor --quick with the frameworks / without", ratio("doctor --json --quick (frameworks)", "doctor --json --quick"), 1.3),
        ("doctor --quick in a big conda env / without", ratio("doctor --json --quick (conda env)", "doctor --json --quick (linked python)"), 1.2),
        ("doctor --quick on a container host / without", ratio("doctor --quick --root (container host)", "doctor --quick --root (no engine)"), 1.2),
        ("list / python -c pass", ratio("list", "python -c pass"), 1.8),
        ("use / python -c pass (wall)", ratio("use 12.4", "python -c pass"), 1.4),
        ("use, 1,000 toolkits / python -c pass", ratio("use 12.4 (1,000 toolkits)", "python -c pass"), 2.0),
        ("doctor --quick, python3 a pyenv shim / pass", ratio("doctor --json --quick (python3 a pyenv shim)", "python -c pass"), 5.0),
        ("install 13.0 / pip install --target, wheels", ratio("install 13.0 (cached wheels)", "pip install --target"), 1.3),
        ("uninstall --script / dpkg -S, same lists", ratio("uninstall 12.4 --script", "dpkg -S"), 1.5),
        ("check-installer, all-zero payload / md5sum", ratio("check-installer (all-zero payload)", "md5sum of check-installer's all-zero payload"), 1.1),
        ("explain, 2-line paste / python -c pass", ratio("explain (2-line paste)", "python -c pass"), 6.0),
        ("explain, 10 MB log / python -c pass", ratio("explain (10 MB log)", "python -c pass"), 15.0),
        ("use / python -c pass (peak RSS)", ratio("use 12.4", "python -c pass", "rss_mib"), 1.5),
        ("checkpoint inspect 1.5G / python -c pass", ratio("checkpoint inspect 1.5G", "python -c pass"), 2.0),
        ("checkpoint inspect 1.5G / torch.load", ratio("checkpoint inspect 1.5G", "torch.load 1.5G"), 0.05),
        ("checkpoint inspect 1.5G peak RSS (MiB)", figures.get("checkpoint inspect 1.5G", {}).get("rss_mib"), 50.0),
        ("checkpoint inspect 20k tensors (s)", figures.get("checkpoint inspect 20k", {}).get("wall"), 0.5),
        ("checkpoint folder of 8 shards / its files one by one", explain.get("checkpoint folder / its files"), 1.3),
        ("DCP safetensors folder of 8 ranks / its files one by one", explain.get("dcp safetensors folder / its files"), 1.3),
        ("fleet summarize 10k reports (s)", figures.get("fleet summarize 10k", {}).get("wall"), 3.0),
        ("fleet summarize 10k peak RSS (MiB)", figures.get("fleet summarize 10k", {}).get("rss_mib"), 300.0),
        ("fleet summarize 100k reports (s)", figures.get("fleet summarize 100k", {}).get("wall"), 30.0),
        ("fleet summarize 100k / json.load of each file", ratio("fleet summarize 100k", "json.load 100k"), 1.2),
        ("fleet summarize 100k peak RSS (MiB)", figures.get("fleet summarize 100k", {}).get("rss_mib"), 300.0),
        ("explain 50 MB paste (s)", explain.get("explain 50M"), 2.0),
        ("explain worst hostile input (s)", explain.get("explain hostile"), 2.0),
        ("explain worst 1 MB literal run (s)", explain.get("explain hostile 1M"), 2.0),
        ("parsers worst 1 MB hostile input (s)", explain.get("parsers hostile"), 5.0),
    ]

    print("cudaenv bench: %s, median of %d interleaved runs each (after one warm-up round)" % (python, runs))
    print()
    print("%-46s %10s %12s" % ("command", "wall (s)", "peak RSS MiB"))
    for name, fig in figures.items():
        print("%-46s %10.3f %12.1f" % (name, fig["wall"], fig["rss_mib"]))
    floor = ratio(CONSOLE_FLOOR, "python -c pass")
    if floor is not None and os.path.isfile(cudaenv) and _console_imports_re(cudaenv):
        print()
        print("%s: %.3f x python -c pass: bin/cudaenv is pip's generated script, which imports re before cudaenv starts"
              % (CONSOLE_FLOOR, floor))
    peers_floor = ratio(PEERS_FLOOR, TORCH_FLOOR)
    if peers_floor is not None:
        print()
        print("the peers' torch import floor: %.3f x PY's (each doctor / peer ratio carries it; not a target)" % peers_floor)
    cold = ratio("doctor --json --quick (frameworks, no memo)", "doctor --json --quick")
    if cold is not None:
        print()
        print("doctor --quick with the frameworks, memo off: %.3f x without (the first doctor after an install; not a target)" % cold)
    print()
    failed = False
    results = []
    for label, value, target in checks:
        if value is None:
            print("%-46s %8s   target <= %-4g SKIP (not measured: not in this cudaenv, or --only)" % (label, "-", target))
            results.append({"check": label, "ratio": None, "target": target, "status": "SKIP"})
            continue
        ok = value <= target
        failed = failed or not ok
        print("%-46s %8.3f   target <= %-4g %s" % (label, value, target, "PASS" if ok else "FAIL"))
        results.append({"check": label, "ratio": round(value, 4), "target": target, "status": "PASS" if ok else "FAIL"})
    if args.json:
        Path(args.json).write_text(json.dumps({"python": python, "runs": runs, "figures": figures, "checks": results}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
