"""Whole fake machines for the doctor tests, and the fake torch builds and hand-built Snapshots they share.

- Machine: one scenario (a fake root, a fake `nvidia-smi` printing recorded real outputs, an environment, a real
  interpreter) whose ``doctor()`` runs the CLI in-process; the `machine` and `bare_python` fixtures are in conftest.
- make_fake_torch: a small FAKE torch distribution for a CUDA build that cannot be installed here (it mimics
  exactly what cudaenv/_child/torch_probe.py calls, and applies CUDA_VISIBLE_DEVICES like CUDA does).
- make_probe_torch: the torch probe's fake (one GPU, or a broken CUDA, or a CUDA build without a driver).
- healthy(): a Snapshot of a healthy A100 machine, for the pure rules.
"""

import re
from pathlib import Path

from cudaenv.diagnose import SECTIONS
from cudaenv.model.record import replace
from cudaenv.model.snapshot import (
    ActiveToolkit,
    CudaSymlink,
    DeviceMapping,
    Driver,
    Gpu,
    Platform,
    Snapshot,
    ToolStatus,
    Torch,
    TorchDevice,
    Toolkit,
    VisibleDevices,
)


from builders import recorded

# ------------------------------------------------------------------ doctor scenarios
ARCH_CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
ARCH_CU126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
ARCH_CU121 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
ARCH_CU118 = ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
ARCH_CU128 = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]

A10G = [("NVIDIA A10G", (8, 6), 23028)]
GTX1080TI = [("NVIDIA GeForce GTX 1080 Ti", (6, 1), 11264)]
RTX2080TI_X4 = [("NVIDIA GeForce RTX 2080 Ti", (7, 5), 11264)] * 4
TITANV_5880 = [("NVIDIA TITAN V", (7, 0), 12288), ("NVIDIA RTX 5880 Ada Generation", (8, 9), 49140)]

SCENARIO_CUDA = '''\
"""A fake torch.cuda for cudaenv's tests: the GPUs below, numbered like CUDA does, CUDA_VISIBLE_DEVICES applied."""
import os
import warnings

_GPUS = %(gpus)r          # (name, capability, MiB) in PCI order
_ORDER = %(order)r         # CUDA's enumeration order (physical indices)
_ARCH = %(arch)r
_WARNING = %(warning)r     # a CUDA initialisation failure, as torch warns it


def _visible():
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(_ORDER)
    out = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry.isdigit() or int(entry) >= len(_GPUS) or int(entry) in out:
            break
        out.append(int(entry))
    return out


def is_available():
    if _WARNING:
        warnings.warn("CUDA initialization: " + _WARNING)
        return False
    return bool(_visible())


def device_count():
    return 0 if _WARNING else len(_visible())


def get_device_name(i):
    return _GPUS[_visible()[i]][0]


def get_device_capability(i):
    return _GPUS[_visible()[i]][1]


class _Props(object):
    def __init__(self, mib):
        self.total_memory = mib * 1024 * 1024


def get_device_properties(i):
    return _Props(_GPUS[_visible()[i]][2])


def get_arch_list():
    return list(_ARCH)
'''


def make_fake_torch(site: Path, version: str, cuda, gpus=(), arch=(), order=None, warning=None, init_raises=None):
    """A `torch` package + dist-info in ``site`` (the fake of a CUDA build that cannot be installed here)."""
    pkg = site / "torch"
    (pkg / "cuda").mkdir(parents=True)
    (pkg / "backends").mkdir()
    init = "from . import version, cuda, backends\n__version__ = version.__version__\n"
    if init_raises:
        init = "raise %s\n" % init_raises
    (pkg / "__init__.py").write_text(init)
    (pkg / "version.py").write_text("__version__ = %r\ncuda = %r\nhip = None\ngit_version = 'fake'\n" % (version, cuda))
    cuda_src = SCENARIO_CUDA % {"gpus": [tuple(g) for g in gpus], "order": list(order if order is not None else range(len(gpus))),
                            "arch": list(arch), "warning": warning}
    (pkg / "cuda" / "__init__.py").write_text(cuda_src + "\nfrom . import nccl\n")
    (pkg / "cuda" / "nccl.py").write_text("def version():\n    return (2, 27, 3)\n")
    (pkg / "backends" / "__init__.py").write_text("from . import cudnn\n")
    (pkg / "backends" / "cudnn.py").write_text("def version():\n    return 91002\n")
    dist = site / ("torch-%s.dist-info" % version)
    dist.mkdir()
    requires = "" if cuda is None else "Requires-Dist: nvidia-cudnn-cu%s==9.10.2.21\n" % str(cuda).split(".")[0]
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: %s\n%s\n" % (version, requires))
    (dist / "INSTALLER").write_text("pip\n")
    return site


class Machine:
    """One scenario: a fake root, fake nvidia-smi, environment, interpreter; ``doctor()`` runs the CLI."""

    def __init__(self, fake_root, fake_bin, tmp_path, cli, python):
        self.root, self.bin, self.tmp, self.cli, self.python = fake_root, fake_bin, tmp_path, cli, python
        self.env = {"HOME": str(fake_root.path / "root")}
        self.path_in_root = []
        self.site = None
        self.package_site = None  # packages besides torch (Machine.packages)
        self.gpu_specs = ()  # (name, capability, MiB) of the fake GPUs, for a torch the model installs

    def smi(self, query=None, apps="", banner="", code=0, **kw):
        self.smi_outputs = dict(query=query, apps=apps, banner=banner, code=code, **kw)  # what `kill` changes
        table = {}
        if query is not None:
            table["--query-gpu"] = (query, code)
        table["--query-compute-apps"] = (apps, 0)
        self.bin.command("nvidia-smi", stdout=banner, exit_code=code if query is None else 0, by_args=table, **kw)
        self.root.file("dev/nvidia0", "")
        self.root.file("dev/nvidiactl", "")
        return self

    def torch(self, *args, **kwargs):
        self.site = make_fake_torch(self.tmp / "site", *args, **kwargs)
        self.env["PYTHONPATH"] = ":".join(str(p) for p in (self.site, self.package_site) if p)
        return self

    def packages(self, *specs):
        """Packages besides torch (``onnxruntime==1.23.2``), as pip installs them, in a site folder inside the fake root
        (the frameworks probe reads it through the root) that is on the interpreter's PYTHONPATH."""
        if self.package_site is None:
            self.package_site = self.root.dir("env/lib/python3.12/site-packages")
            self.env["PYTHONPATH"] = ":".join(p for p in (self.env.get("PYTHONPATH"), str(self.package_site)) if p)
        self.pip("install", specs)
        return self

    def toolkit(self, version, on_path=False, **kw):
        self.root.toolkit(version, **kw)
        if on_path:
            self.path_in_root.append("/usr/local/cuda-%s/bin" % ".".join(version.split(".")[:2]))
        return self

    # ---------------------------------------------------------- the convergence model: a fix applied to the machine
    def cudaenv_install(self, release="13.0.2"):
        """What `cudaenv install 13.0` leaves: a toolkit in the store (/data/toolkits/RELEASE) with its marker."""
        tk = self.root.toolkit(release, where="data/toolkits", name=release)
        (tk / ".cudaenv-install.json").write_text('{"installer": "cudaenv", "release": "%s"}\n' % release)
        self.env["CUDAENV_DATA_DIR"] = str(self.root.path / "data")
        return tk

    def run(self, *argv):
        """A cudaenv command on this machine (``--root`` the fake root), with the machine's environment; its PATH names
        the fake root's folders by their local paths, as a shell on that machine would (`use` rewrites that PATH)."""
        env = self.full_env()
        env["PATH"] = ":".join([str(self.root.path) + e for e in self.path_in_root] + [self.bin.env_path])
        return self.cli(*(list(argv) + ["--root", str(self.root.path)]), env=env)

    def apply_shell(self, text):
        """Apply what `cudaenv use --shell bash` printed (``export NAME='value'``, ``unset NAME``) to the environment;
        paths under the fake root become the machine's own paths again."""
        import shlex

        local = str(self.root.path)
        bins = set(self.bin.env_path.split(":"))
        for line in text.splitlines():
            words = shlex.split(line, comments=True)
            if len(words) == 2 and words[0] == "unset":
                self.env.pop(words[1], None)
                if words[1] == "PATH":
                    self.path_in_root = []
            elif len(words) == 2 and words[0] == "export" and "=" in words[1]:
                name, _, value = words[1].partition("=")
                value = value.replace(local, "")
                if name == "PATH":
                    self.path_in_root = [e for e in value.split(":") if e and e not in bins]
                else:
                    self.env[name] = value

    def apply_fix(self, line):
        """Apply one fix line of a finding to this machine, as the user would; returns False when the model does not
        know how (a command for the host, the user's code, a reboot)."""
        import shlex

        body = line.split("    # ")[0].strip()
        if body.startswith("source <(cudaenv use ") and body.endswith(")"):
            spec = body[len("source <(cudaenv use "):-1].split()
            r = self.run("use", *spec, "--shell", "bash")
            assert r.code == 0, (line, r.err)
            self.apply_shell(r.out)
            return True
        words = shlex.split(body) if body and not body.startswith("#") else []
        if words[:1] == ["sudo"]:
            words = words[1:]
        if len(words) == 2 and words[0] == "unset":
            self.apply_shell(body)
            return True
        if len(words) == 2 and words[0] == "export":
            self.apply_shell("export " + shlex.quote(words[1]))
            return True
        torch = next((w for w in words if w.startswith("torch==")), None)
        if "install" in words and torch and self.gpu_specs:
            self.install_torch(torch.split("==", 1)[1])
            return True
        if len(words) == 4 and words[:2] == ["ln", "-sfn"]:
            self.root.link(words[3].lstrip("/"), words[2])
            return True
        if words[:2] in (["apt-get", "install"], ["dnf", "install"]) and any(w.startswith("cuda-toolkit-") for w in words):
            # the distribution's package of NVIDIA's repository: /usr/local/cuda-X.Y (the model's release X.Y.0)
            package = next(w for w in words if w.startswith("cuda-toolkit-"))
            self.toolkit("%s.0" % ".".join(package[len("cuda-toolkit-"):].split("-")[:2]))
            return True
        if words[:2] == ["cudaenv", "install"] and len(words) == 3:
            self.cudaenv_install("%s.0" % words[2] if words[2].count(".") == 1 else words[2])
            return True
        if len(words) == 2 and words[0] == "kill" and words[1].isdigit():
            self.kill(int(words[1]))
            return True
        pip = _pip_words(words)
        if pip is not None and (self.package_site or self.site) is not None:
            return self.pip(*pip)
        return False

    def kill(self, pid):
        """The process ``pid`` ends: nvidia-smi no longer lists it, its GPU's memory in use drops by what it held (the
        model's arithmetic on the recorded figures), and /proc has no entry for it."""
        out = self.smi_outputs
        gone = [line for line in out["apps"].splitlines() if line.split(",", 1)[0].strip() == str(pid)]
        assert gone, pid
        fields = [f.strip() for f in gone[0].split(",")]
        mib, uuid = int(fields[-2]) if fields[-2].isdigit() else 0, fields[-1]
        apps = "".join(line + "\n" for line in out["apps"].splitlines() if line not in gone)
        query = []
        for line in out["query"].splitlines():
            cols = line.split(", ")
            if len(cols) > 6 and cols[6] == uuid:
                cols[5] = str(int(cols[5]) - mib)
            query.append(", ".join(cols))
        status = self.root.path / "proc" / str(pid)
        if status.exists():
            import shutil

            shutil.rmtree(status)
        self.smi(**dict(out, query="\n".join(query) + "\n", apps=apps))

    def pip(self, verb, names):
        """``pip install`` / ``pip uninstall -y`` of the packages besides torch (tests/framework_builders.py's layouts):
        an uninstall removes each one's dist-info and files, an install lays out the package as its index would give it
        (a ``-cudaNNx``/``-cuNN`` name is that CUDA's build, ``jax[cudaNN]`` brings the jax-cudaNN-plugin,
        ``tensorflow[and-cuda]`` the cuDNN 9 wheel (the cuDNN line of its METADATA, tests/recorded/wheel-tensorflow-2.21.0-METADATA-requires.txt)
        and the other wheels whose libraries TSL opens (framework_builders.TF_CUDA12_WHEELS)."""
        from framework_builders import ORT_BUILD_INFO, dist

        for spec in names:
            name, _, version = spec.partition("==")
            name = re.split(r"[<>=!~]", name, maxsplit=1)[0].strip()  # nvidia-cudnn-cu12>=9.8,<10: the model's default release
            extras = re.findall(r"\[([^\]]*)\]", name)
            name = re.sub(r"\[.*\]", "", name).lower()
            if verb == "uninstall":
                self.pip_remove(name)
                continue
            if name == "tensorflow" and "and-cuda" in extras:  # its and-cuda extra: the nvidia wheels, cuDNN 9 among them
                from framework_builders import TF_CUDA12_WHEELS, dist

                for wheel, files in TF_CUDA12_WHEELS.items():
                    self.pip_remove(wheel.split("==")[0])
                    dist(self.package_site, wheel.split("==")[0], wheel.split("==")[1], files={f: "" for f in files})
                self.pip("install", ["nvidia-cudnn-cu12"])
                if version and (self.package_site / ("tensorflow-%s.dist-info" % version)).is_dir():
                    continue  # that tensorflow is installed: pip keeps it and installs only what the extra adds
            self.pip_remove(name)
            version = version or PIP_VERSIONS.get(name, "1.0.0")
            site = self.package_site
            if name == "onnxruntime-gpu":
                dist(site, name, version, files={"onnxruntime/capi/build_and_package_info.py": ORT_BUILD_INFO % (version, "12.2")})
            elif name.startswith("nvidia-cudnn-cu"):  # the wheel's library, as the nvidia-cudnn-cuNN wheels lay it out
                dist(site, name, version, files={"nvidia/cudnn/lib/libcudnn.so.%s" % version.split(".", 1)[0]: ""})
            else:
                dist(site, name, version)
            for extra in extras:
                if name == "jax" and re.fullmatch(r"cuda\d+", extra):
                    self.pip_remove("jax-%s-plugin" % extra)
                    dist(site, "jax-%s-plugin" % extra, version)
                    if extra == "cuda12":  # the plugin's with-cuda extra: the nvidia wheels XLA opens, cuDNN 9 among them
                        from framework_builders import JAX_CUDA12_WHEELS

                        for wheel, files in JAX_CUDA12_WHEELS.items():
                            self.pip_remove(wheel.split("==")[0])
                            dist(site, wheel.split("==")[0], wheel.split("==")[1], files={f: "" for f in files})
                        self.pip("install", ["nvidia-cudnn-cu12"])
        return True

    def pip_remove(self, name):
        import shutil

        key = name.replace("-", "_").lower()
        sites = dict.fromkeys(s for s in (self.site, self.package_site) if s is not None)  # one folder may be both
        for site, info in [(s, i) for s in sites for i in s.glob("*.dist-info")]:
            if info.name[: -len(".dist-info")].rsplit("-", 1)[0].replace("-", "_").lower() != key:
                continue
            record = info / "RECORD"
            for line in (record.read_text().splitlines() if record.exists() else ()):
                path = site / line.split(",", 1)[0]
                if path.is_file() and info not in path.parents:
                    path.unlink()
            shutil.rmtree(info)

    def install_torch(self, version):
        """A pip install of ``torch==2.13.0+cu126`` (a reinstall too): that build (its arch list from
        data/torch_arch.json) replaces the interpreter's torch, whole (no file of the old one stays, and the fake has
        no shared library left that could miss a NEEDED one)."""
        import shutil

        from cudaenv.facts import torch as tf

        release, _, variant = version.partition("+")
        row = tf.arch_list_for(release, variant, "linux", "x86_64")
        arch = [a for a in tf.arch_list_of(*row)] if row else []
        site = self.site if self.site is not None else self.tmp / "site"
        for old in [site / "torch"] + list(site.glob("torch-*.dist-info")):
            if old.exists():
                shutil.rmtree(old)
        self.site = make_fake_torch(site, version, tf.variant_cuda(variant), self.gpu_specs, arch)
        self.env["PYTHONPATH"] = ":".join(dict.fromkeys(str(p) for p in (self.site, self.package_site) if p))

    def full_env(self):
        env = dict(self.env)
        env["PATH"] = ":".join(self.path_in_root + [self.bin.env_path])
        return env

    def doctor(self, *extra, fmt="--json"):
        env = dict(self.env)
        env["PATH"] = ":".join(self.path_in_root + [self.bin.env_path])
        env["CUDAENV_ROOT"] = str(self.root.path)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        args = ["doctor"] + ([fmt] if fmt else []) + ["--python", self.python] + list(extra)
        r = self.cli(*args, env=env)
        assert r.code in (0, 1), r
        return r

    def findings(self, *extra):
        r = self.doctor(*extra)
        data = r.json()
        for f in data["findings"]:
            filled_in(f)
        order = [SECTIONS.index(f["section"]) for f in data["findings"]]
        assert order == sorted(order), [f["id"] for f in data["findings"]]  # the expert's order
        return r.code, {f["id"]: f for f in data["findings"]}, data


# the version the model's pip installs where a command names none (the releases tests/framework_builders.py's readers know)
PIP_VERSIONS = {"onnxruntime": "1.23.2", "onnxruntime-gpu": "1.23.2", "jax": "0.8.1", "jaxlib": "0.8.1", "cupy-cuda12x": "13.6.0",
                "cupy-cuda13x": "14.0.0", "cupy-cuda11x": "13.6.0", "nvidia-cudnn-cu12": "9.10.2.21"}


def _pip_words(words):
    """(verb, requirement specs) of a ``python -m pip install|uninstall`` / ``uv pip ...`` line (options dropped), or None."""
    if "pip" not in words:
        return None
    rest = words[words.index("pip") + 1:]
    if not rest or rest[0] not in ("install", "uninstall"):
        return None
    specs, skip = [], False
    for w in rest[1:]:
        if skip:
            skip = False
        elif w in ("--index-url", "--extra-index-url", "--python", "-i"):
            skip = True
        elif not w.startswith("-"):
            specs.append(w)
    return rest[0], specs


PLACEHOLDER = re.compile(r"<(?!\()[^>]*>|\bPID\b|\bX\.Y\b|\bVERSION\b|\bDISTRO\b|\.\.\.\s*$")


def filled_in(f):
    """A fix names this machine's values: no <...>, PID, X.Y placeholders (a hint's your_script.py is the user's)."""
    for cmd in f["fix"]:
        body = cmd.split("    # ")[0] if not cmd.startswith("#") else ""
        hit = PLACEHOLDER.search(body)
        # `docker run --gpus all ...`: the user's image; wsl1's distribution name while WSL_DISTRO_NAME is unset
        assert hit is None or f["id"] in ("container-no-gpu", "wsl1-no-cuda"), (f["id"], cmd)


def a10g_535(m):
    m.gpu_specs = A10G
    return m.smi(query=recorded("diag-query-535-a10g.txt"), banner=recorded("diag-banner-535-a10g.txt"))



# ------------------------------------------------------------------ the torch probe's fake torch
PROBE_CUDA = '''
import os, warnings
class _Props:
    total_memory = 24 * 1024 ** 3
def is_available():
    return True
def device_count():
    return 1
def get_device_name(i):
    return "Fake GPU CVD=%s" % os.environ.get("CUDA_VISIBLE_DEVICES")
def get_device_capability(i):
    return (8, 6)
def get_device_properties(i):
    return _Props()
def get_arch_list():
    return ["sm_80", "sm_86", "sm_90"]
class nccl:
    @staticmethod
    def version():
        return (2, 21, 5)
'''

PROBE_CUDA_BROKEN = '''
import warnings
def is_available():
    warnings.warn("CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
                  "before calling NumCudaDevices() that might have already set an error? Error 804: forward "
                  "compatibility was attempted on non supported HW")
    return False
def device_count():
    return 0
def get_arch_list():
    return []
'''

# A CUDA build on a machine without a driver, as the real torch 2.14.1+cu130 behaves here
# (tests/recorded/verify-cu130-no-driver.txt): is_available() is False with no warning; init() says why.
PROBE_CUDA_NO_DRIVER = '''
def is_available():
    return False
def device_count():
    return 0
def get_arch_list():
    return ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
def init():
    raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed "
                       "a driver from http://www.nvidia.com/Download/index.aspx")
'''


def make_probe_torch(site, version="2.7.1+cu126", cuda="'12.6'", init="", cuda_module=PROBE_CUDA, cudnn=91002,
                    installer="uv", requires=('nvidia-cudnn-cu12==9.5.1.17; platform_system == "Linux"',),
                    nvidia=(("nvidia_cudnn_cu12", "9.5.1.17"),)):
    site = Path(site)
    pkg = site / "torch"
    (pkg / "backends").mkdir(parents=True)
    (pkg / "version.py").write_text(
        "from typing import Optional\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        "__version__ = '%s'\ndebug = False\ncuda: Optional[str] = %s\ngit_version = 'e2d141dbde55c2a4370fac5165b0561b6af4798b'\n"
        "hip: Optional[str] = None\n" % (version, cuda)
    )
    (pkg / "__init__.py").write_text(
        init or "print('torch writes on stdout too')\nfrom . import version, cuda, backends\n__version__ = version.__version__\n"
    )
    (pkg / "cuda.py").write_text(cuda_module)
    (pkg / "backends" / "__init__.py").write_text("from . import cudnn\n")
    (pkg / "backends" / "cudnn.py").write_text("def version():\n    return %r\n" % (cudnn,))
    dist = site / ("torch-%s.dist-info" % version)
    dist.mkdir()
    meta = ["Metadata-Version: 2.1", "Name: torch", "Version: %s" % version, "Requires-Dist: filelock"]
    meta += ["Requires-Dist: %s" % r for r in requires]
    (dist / "METADATA").write_text("\n".join(meta) + "\n\nThe long description\nRequires-Dist: not-a-header\n")
    if installer is not None:
        (dist / "INSTALLER").write_text(installer + "\n")
    for name, ver in nvidia:
        d = site / ("%s-%s.dist-info" % (name, ver))
        d.mkdir()
        (d / "METADATA").write_text("Name: %s\nVersion: %s\n" % (name.replace("_", "-"), ver))
    return pkg


# ------------------------------------------------------------------ hand-built Snapshots
PY = "/opt/venv/bin/python"
A100 = Gpu(index=0, name="NVIDIA A100-SXM4-80GB", uuid="GPU-1111aaaa-0000-0000-0000-000000000000", pci_bus_id="00000000:07:00.0",
           memory_total_mib=81920, memory_used_mib=1024, compute_capability="8.0")


def gpu(i, name="NVIDIA A100-SXM4-80GB", cc="8.0", used=1024, total=81920):
    return Gpu(index=i, name=name, uuid="GPU-%d111aaaa-0000-0000-0000-00000000000%d" % (i, i), memory_total_mib=total,
               memory_used_mib=used, compute_capability=cc)


def all_visible(gpus):
    return VisibleDevices(mapping=tuple(DeviceMapping(g.index, g.index, g.uuid) for g in gpus))


def cuda_torch(version="2.13.0+cu130", cuda="13.0", count=1, arch=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"), **kw):
    base = dict(python=PY, installed=True, version=version, cuda=cuda, dynamic=True, cuda_available=True, device_count=count,
                arch_list=tuple(arch), devices=tuple(TorchDevice(name="NVIDIA A100-SXM4-80GB", capability="8.0") for _ in range(count)),
                installer="pip")
    base.update(kw)
    return Torch(**base)


def healthy(**changes):
    """One A100, driver 580.95.05 (CUDA 13.0), torch 2.13.0+cu130 that works, toolkit 13.0 active and linked."""
    tk = Toolkit(version="13.0.2", path="/usr/local/cuda-13.0", source="/usr/local/cuda-*", active=True, on_path=True,
                 is_link_target=True, nvcc="/usr/local/cuda-13.0/bin/nvcc")
    s = Snapshot(
        platform=Platform(system="linux", distro="Ubuntu 24.04.1 LTS", distro_id="ubuntu", distro_version="24.04",
                          kernel="6.8.0-45-generic", machine="x86_64", dev_nvidia=("/dev/nvidia0", "/dev/nvidiactl"),
                          pci_nvidia_devices=("0000:07:00.0",)),
        driver=Driver(version="580.95.05", cuda_version="13.0", kernel_module="open", kernel_module_version="580.95.05", source="nvml"),
        gpus=(A100,),
        visible_devices=all_visible((A100,)),
        toolkits=(tk,),
        cuda_symlink=CudaSymlink(path="/usr/local/cuda", target="/usr/local/cuda-13.0", resolved="/usr/local/cuda-13.0"),
        active_toolkit=ActiveToolkit(path="/usr/local/cuda-13.0", nvcc="/usr/local/cuda-13.0/bin/nvcc", version="13.0.2",
                                     nvcc_on_path=("/usr/local/cuda-13.0/bin/nvcc",)),
        torch=cuda_torch(count=1),
        tools=(ToolStatus("nvml", "libnvidia-ml.so.1"), ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi")),
    )
    return replace(s, **changes) if changes else s
