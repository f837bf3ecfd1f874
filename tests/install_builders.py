"""The served index of the `cudaenv install` tests (toolkit/install/): small fake CUDA 13 wheels and a fake
`cuda-toolkit` meta wheel on a real HTTP server on 127.0.0.1, the stand-in `pip` (and `uv`) in a fake bin that answers
from the served files, and the checks that an install left nothing behind. Shared by test_install.py and
test_install_components.py (no test module imports another)."""

import functools
import hashlib
import json
import sys
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from builders import TOOLS

RELEASES = ["13.1.0", "13.0.2", "13.0.1", "12.9.1", "12.4.1"]
COMPONENTS = {  # project -> (version, extra, files below nvidia/cu13/)
    "nvidia-cuda-nvcc": ("13.0.88", "nvcc", {"bin/nvcc": "#!/bin/sh\necho nvcc\n", "bin/nvcc.profile": "TOP = $(_HERE_)/..\n",
                                              "bin/crt/link.stub": "stub"}),
    "nvidia-cuda-runtime": ("13.0.96", "cudart", {"lib/libcudart.so.13": "ELF-cudart", "lib/libcudart_static.a": "ar",
                                                   "include/cuda_runtime.h": "#pragma once\n",
                                                   "include/cuda.h": "#define CUDA_VERSION 13000\n"}),
    "nvidia-cuda-cccl": ("13.0.85", "cccl", {"include/cccl/thrust/version.h": "#define THRUST_VERSION 300000\n"}),
    "nvidia-cuda-crt": ("13.0.88", "crt", {"include/crt/host_config.h": "#pragma once\n"}),
    "nvidia-nvvm": ("13.0.88", "nvvm", {"nvvm/bin/cicc": "#!/bin/sh\n", "lib/libnvvm.so.4": "ELF-nvvm",
                                         "nvvm/libdevice/libdevice.10.bc": "BC"}),
}


def wheel_name(project, version, tag="py3-none-manylinux2014_x86_64"):
    return "%s-%s-%s.whl" % (project.replace("-", "_"), version, tag)


def make_wheel(folder: Path, project, version, files, extra_members=(), tag="py3-none-manylinux2014_x86_64", root="nvidia/cu13/"):
    path = folder / wheel_name(project, version, tag)
    dist = "%s-%s.dist-info" % (project.replace("-", "_"), version)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("nvidia/__init__.py", "")
        for rel, text in files.items():
            zf.writestr(root + rel, text)
        for info, data in extra_members:
            zf.writestr(info, data)
        zf.writestr(dist + "/METADATA", "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (project, version))
        zf.writestr(dist + "/RECORD", "")
    return path


# the libraries of --components: pinned by the meta wheel's extras (cudnn: not an extra, the newest is taken)
LIBRARIES = {
    "nvidia-cublas": ("13.1.0.3", "cublas", {"lib/libcublas.so.13": "ELF-cublas", "include/cublas_v2.h": "#pragma once\n"}),
    "nvidia-nvtx": ("13.0.85", "nvtx", {"include/nvtx3/nvToolsExt.h": "#pragma once\n"}),
}


def make_meta(folder: Path, release="13.0.2", components=COMPONENTS):
    lines = ["Metadata-Version: 2.1", "Name: cuda-toolkit", "Version: %s" % release]
    for project, (version, extra, _files) in components.items():
        pin = ".".join(version.split(".")[:3]) + ".*"
        lines.append("Requires-Dist: %s==%s; (sys_platform == 'linux' or sys_platform == 'win32') and extra == '%s'" % (project, pin, extra))
        lines.append("Requires-Dist: %s==%s; sys_platform == 'linux' and extra == 'all'" % (project, pin))
    for project, (version, extra, _files) in LIBRARIES.items():
        lines.append("Requires-Dist: %s==%s.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == '%s'" % (project, version, extra))
    path = folder / ("cuda_toolkit-%s-py2.py3-none-any.whl" % release)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("cuda_toolkit-%s.dist-info/METADATA" % release, "\n".join(lines) + "\n")
    return path


STANDIN = r'''
import hashlib, json, os, sys, time, urllib.request, zipfile, io
base = os.environ["STANDIN_BASE"]
log = os.environ.get("STANDIN_LOG")
args = sys.argv[1:]
if log:
    with open(log, "a") as fh:
        fh.write(" ".join(args) + "\n")
def get(path):
    with urllib.request.urlopen(base + "/" + path, timeout=10) as r:
        return r.read()
table = json.loads(get("files.json"))
if args[:2] == ["index", "versions"]:
    print("%s (%s)" % (args[2], table["releases"][0]))
    print("Available versions: " + ", ".join(table["releases"]))
    sys.exit(0)
if args[:2] == ["install", "--dry-run"]:
    beside = os.environ.get("STANDIN_BESIDE")  # the resolve finishes only once the download has started beside it
    if beside and os.environ.get("STANDIN_FAIL") == "resolve" and os.environ.get("STANDIN_SLOW"):
        beside = os.environ["STANDIN_SLOW"]  # ... and fails only once the download sits in its slow first file
    if beside:
        for _ in range(400):
            if os.path.exists(beside):
                break
            time.sleep(0.05)
        else:
            print("stand-in pip: no download started while the dry run resolved", file=sys.stderr)
            sys.exit(1)
    if os.environ.get("STANDIN_FAIL") == "resolve":
        print("ERROR: ResolutionImpossible: the stand-in resolver found no solution", file=sys.stderr)
        sys.exit(1)
    report = args[args.index("--report") + 1]
    at = [i for i, a in enumerate(args) if a.startswith("cuda-toolkit[")][0]
    req, others = args[at], args[at + 1:]
    extras = req[req.index("[") + 1:req.index("]")].split(",")
    release = req.split("==")[1]
    meta_file = table["meta"][release]
    data = get(meta_file)
    text = zipfile.ZipFile(io.BytesIO(data)).read("cuda_toolkit-%s.dist-info/METADATA" % release).decode()
    requires = [l.split(": ", 1)[1] for l in text.splitlines() if l.startswith("Requires-Dist: ")]
    items = [{"metadata": {"name": "cuda-toolkit", "version": release, "requires_dist": requires},
              "download_info": {"url": base + "/" + meta_file, "archive_info": {"hashes": {"sha256": hashlib.sha256(data).hexdigest()}}},
              "requested_extras": extras}]
    for name, row in table["components"].items():
        if not (row.get("extra") in extras or name in others):
            continue
        items.append({"metadata": {"name": name, "version": row["version"]},
                      "download_info": {"url": base + "/" + row["file"], "archive_info": {"hashes": {"sha256": row["sha256"]}}}})
    with open(report, "w") as fh:
        json.dump({"version": "1", "install": items}, fh)
    sys.exit(0)
if args and args[0] == "download":
    if os.environ.get("STANDIN_FAIL") == "download":
        print("ERROR: Could not find a version that satisfies the requirement nvidia-cuda-nvcc==13.0.88", file=sys.stderr)
        sys.exit(1)
    if os.environ.get("STANDIN_BESIDE"):
        open(os.environ["STANDIN_BESIDE"], "a").close()
    dest = args[args.index("--dest") + 1]
    os.makedirs(dest, exist_ok=True)
    if "-r" in args:  # pinned files (with their hashes)
        names = [line.split("==")[0] for line in open(args[args.index("-r") + 1])]
    else:  # the requirement itself, resolved as the dry run resolves it (the meta wheel downloaded too)
        at = [i for i, a in enumerate(args) if a.startswith("cuda-toolkit[")][0]
        extras = args[at][args[at].index("[") + 1:args[at].index("]")].split(",")
        meta_file = table["meta"][args[at].split("==")[1]]
        with open(os.path.join(dest, meta_file.rsplit("/", 1)[-1]), "wb") as fh:
            fh.write(get(meta_file))
        names = [n for n, row in table["components"].items() if row.get("extra") in extras or n in args[at + 1:]]
    for name in names:
        row = table["components"][name]
        if os.environ.get("STANDIN_PROGRESS"):
            print("Collecting %s==%s" % (name, row["version"]))
            print("  Downloading %s (1.0 kB)" % row["file"])
            sys.stdout.write("     \x1b[32m----\x1b[0m 0.5/1.0 kB\r     \x1b[32m--------\x1b[0m 1.0/1.0 kB\n")
            sys.stdout.flush()
        with open(os.path.join(dest, row["file"]), "wb") as fh:
            fh.write(get(row.get("served", row["file"])))
        if os.environ.get("STANDIN_SLOW"):
            open(os.environ["STANDIN_SLOW"], "a").close()
            time.sleep(30)
        if os.environ.get("STANDIN_FAIL") == "enospc":
            print("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device", file=sys.stderr)
            sys.exit(1)
    if log and os.environ.get("STANDIN_BESIDE"):
        with open(log, "a") as fh:
            fh.write("finished download\n")
    sys.exit(0)
if args[:2] == ["pip", "install"] and os.path.basename(sys.argv[0]) == "uv":
    site = args[args.index("--target") + 1]
    reqs = args[args.index("-r") + 1]
    for line in open(reqs):
        row = table["components"][line.split("==")[0]]
        zf = zipfile.ZipFile(io.BytesIO(get(row["file"])))
        zf.extractall(site)
        for info in zf.infolist():  # uv keeps the exec bits
            if info.filename.startswith("nvidia/cudnn/"):
                continue
            if info.filename.startswith(("nvidia/cu13/bin/", "nvidia/cu13/nvvm/bin/")) and not info.is_dir():
                os.chmod(os.path.join(site, info.filename), 0o755)
    sys.exit(0)
print("stand-in pip: unexpected arguments %r" % args, file=sys.stderr)
sys.exit(2)
'''


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.paths.append(self.path)
        super().do_GET()


class Index:
    """The served folder (wheels, meta wheels, files.json) and the fake bin's stand-in pip."""

    def __init__(self, tmp: Path):
        self.www = tmp / "www"
        self.www.mkdir()
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.log = tmp / "pip.log"
        self.table = {"releases": RELEASES, "meta": {}, "components": {}}
        for project, (version, extra, files) in COMPONENTS.items():
            self.add(project, version, files, extra=extra)
        self.table["meta"]["13.0.2"] = make_meta(self.www).name
        handler = functools.partial(_Quiet, directory=str(self.www))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.paths = []  # every GET, in order
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        pip = self.bin / "pip"
        pip.write_text("#!%s\n%s" % (sys.executable, STANDIN))
        pip.chmod(0o755)
        self.uv = self.bin / "uv-standin"
        self.uv.write_text(pip.read_text())
        self.uv.chmod(0o755)
        self.write()

    def add(self, project, version, files, extra_members=(), extra=None, root="nvidia/cu13/"):
        path = make_wheel(self.www, project, version, files, extra_members, root=root)
        extra = extra or self.table["components"].get(project, {}).get("extra")
        self.table["components"][project] = {"version": version, "file": path.name, "extra": extra,
                                             "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        return path

    def write(self):
        (self.www / "files.json").write_text(json.dumps(self.table))
        # the simple index's cuda-toolkit page (PEP 503 HTML), which `install` and `install --list` read
        page = self.www / "simple" / "cuda-toolkit"
        page.mkdir(parents=True, exist_ok=True)
        links = "".join('<a href="../../files/cuda_toolkit-%s-py2.py3-none-any.whl#sha256=%s">cuda_toolkit-%s-py2.py3-none-any.whl</a>\n'
                        % (v, "0" * 64, v) for v in self.table["releases"])
        (page / "index.html").write_text("<!DOCTYPE html><html><body>\n%s</body></html>\n" % links)

    def page_reads(self):
        return sum(p.startswith("/simple/cuda-toolkit/") for p in self.httpd.paths)

    def env(self, data: Path, **extra):
        env = {"PATH": "%s:%s" % (self.bin, TOOLS), "STANDIN_BASE": self.base, "STANDIN_LOG": str(self.log),
               "CUDAENV_DATA_DIR": str(data), "HOME": str(data.parent), "CUDAENV_PACKAGE_INDEX": self.base + "/simple",
               "CUDAENV_CACHE_DIR": str(data.parent / "cache")}
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def store(data: Path):
    folder = data / "toolkits"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def nothing_left(data: Path):
    """Nothing discovery could list, no staging folder and no lock file (issue 27: a .lock stayed behind)."""
    left = store(data)
    assert left == [], left


def nothing_left_but(data, names):
    assert store(data) == names
