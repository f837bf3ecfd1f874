"""A Windows model machine for the convergence harness (tests/diagnose/test_fixes_converge.py): a fake Windows root
(C:\\ under the test's folder) with a conda environment whose python.exe, Lib\\site-packages\\torch\\lib DLLs (real
PE bytes from tests/pe_builders.py where the resolver reads imports), frameworks' DLLs, a CUDA toolkit's bin folder
on PATH, and the environment a Windows python sees.

``findings()`` runs what the doctor runs for the Frameworks section on Windows: the collector's frameworks step
(cudaenv.probes.collect._frameworks: the frameworks probe, then the DLL resolver of probes/dlls.py through a Host
with system="windows" on this root), the pure rules (cudaenv.diagnose.diagnose) on a snapshot of this machine, and
the JSON codec of ``doctor --json``. What it cannot run here is given, not faked: no Windows python can run on this
machine, so the torch record is the one the torch probe's child reports for the torch this model installed (its
version, CUDA, interpreter and site-packages); the GPU and driver are healthy()'s A100 on driver 580.

``apply_fix(line)`` applies a finding's fix line as the user would: a pip install or uninstall of torch or a framework
(the wheel's files laid out as its index gives them: a Windows torch wheel ships its CUDA DLLs in torch\\lib), or
PowerShell's ``$env:NAME = 'value'``."""

import re
import shlex

from builders import recorded_runs
from machine import _pip_words
from pe_builders import build_pe

ENV = "C:\\Users\\me\\miniconda3\\envs\\gpu"
SITE = ENV + "\\Lib\\site-packages"
PYTHON = ENV + "\\python.exe"
PROGRAMS = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
SYSTEM32 = "C:\\Windows\\System32"

# what torch_cuda.dll of a CUDA 12 build imports (its import table; nvcuda.dll, the driver's, delay-loaded), and the
# CUDA DLLs a CUDA 12 torch wheel for Windows ships in torch\lib (TORCH-LOAD-DLL: torch adds that folder itself)
TORCH_IMPORTS = ["c10.dll", "c10_cuda.dll", "cudart64_12.dll", "cublas64_12.dll", "cublasLt64_12.dll", "cudnn64_9.dll",
                 "nvrtc64_120_0.dll", "cufft64_11.dll", "curand64_10.dll", "cusparse64_12.dll", "KERNEL32.dll"]
TORCH_BUNDLED = [d for d in TORCH_IMPORTS if d not in ("c10.dll", "c10_cuda.dll", "KERNEL32.dll")]
# a CUDA 12.4 toolkit's bin (CUDA-WIN-NAMES: cudart64_<major>, cufft64_11 for CUDA 12, nvrtc64_<major><minor>_0 with 120 for 12.x)
TOOLKIT_DLLS = ["cudart64_12.dll", "cublas64_12.dll", "cublasLt64_12.dll", "nvrtc64_120_0.dll", "cufft64_11.dll", "cusolver64_11.dll",
                "curand64_10.dll", "cusparse64_12.dll", "nvcc.exe"]
# CuPy's Windows wheels, recorded from the real ones (package -> (version, {section: text}))
CUPY_WHEELS = {p: (v, recorded_runs("%s-%s-win_amd64-wheel.txt" % (p, v)))
               for p, v in (("cupy-cuda11x", "13.6.0"), ("cupy-cuda12x", "14.2.0"), ("cupy-cuda13x", "14.2.0"))}
ORT_IMPORTS = ["onnxruntime_providers_shared.dll", "cudart64_12.dll", "cublas64_12.dll", "cublasLt64_12.dll", "cudnn64_9.dll",
               "cufft64_11.dll", "KERNEL32.dll"]


class WindowsMachine:
    """One Windows scenario on a fake root; ``findings()`` and ``apply_fix()`` as tests/machine.Machine has them."""

    def __init__(self, fake_root):
        self.root = fake_root
        self.env = {"SystemRoot": "C:\\Windows", "CONDA_PREFIX": ENV}
        self.path = [ENV, ENV + "\\Library\\bin", ENV + "\\Scripts", SYSTEM32, "C:\\Windows"]
        self.torch_version = None
        self.import_order = ()  # the program's imports as `doctor --import-order` states them; () not stated
        self.put(PYTHON)
        self.put(SYSTEM32 + "\\nvcuda.dll")  # the driver's
        self.put(SYSTEM32 + "\\kernel32.dll")

    # ---------------------------------------------------------- the machine's files
    def local(self, path):
        """Where the Windows path ``path`` lives in the fake root (C:\\x -> ROOT/C/x, as Host maps it)."""
        drive, rest = path.split(":", 1)
        return self.root.path.joinpath(drive, *[p for p in rest.split("\\") if p])

    def put(self, path, data=b"MZ"):
        target = self.local(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return target

    def dist(self, name, version, files):
        """A wheel's dist-info in site-packages with its RECORD (what pip uninstall removes): ``files`` relative to it."""
        info = "%s-%s.dist-info" % (name.replace("-", "_"), version)
        self.put("%s\\%s\\METADATA" % (SITE, info), ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n\n" % (name, version)).encode())
        self.put("%s\\%s\\INSTALLER" % (SITE, info), b"pip\n")
        record = "".join("%s,,\n" % f.replace("\\", "/") for f in list(files) + ["%s/METADATA" % info, "%s/RECORD" % info])
        self.put("%s\\%s\\RECORD" % (SITE, info), record.encode())

    # ---------------------------------------------------------- what is installed
    def torch(self, version="2.8.0+cu128", bundled=tuple(TORCH_BUNDLED), imports=tuple(TORCH_IMPORTS)):
        """A CUDA build of torch whose torch\\lib ships ``bundled`` (a wheel from the PyTorch index ships them all);
        ``imports``: torch_cuda.dll's import table (a CUDA 12 build's by default)."""
        self.pip_remove("torch")
        files = ["torch\\__init__.py", "torch\\lib\\torch_cuda.dll", "torch\\lib\\c10.dll", "torch\\lib\\c10_cuda.dll"]
        files += ["torch\\lib\\" + d for d in bundled]
        for f in files:
            self.put(SITE + "\\" + f, build_pe(list(imports), ["nvcuda.dll"]) if f.endswith("torch_cuda.dll") else b"MZ")
        self.dist("torch", version, files)
        self.torch_version = version
        return self

    def toolkit(self, version="12.4.131", on_path=True, dlls=tuple(TOOLKIT_DLLS)):
        """NVIDIA's Windows installer's toolkit: PROGRAMS\\vX.Y (bin, version.json), CUDA_PATH and CUDA_PATH_VX_Y set,
        its bin on PATH."""
        import json

        release = ".".join(version.split(".")[:2])
        home = "%s\\v%s" % (PROGRAMS, release)
        for d in dlls:
            self.put(home + "\\bin\\" + d)
        self.put(home + "\\version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}).encode())
        self.env["CUDA_PATH"] = home
        self.env["CUDA_PATH_V%s" % release.replace(".", "_")] = home
        if on_path:
            self.path.insert(0, home + "\\bin")
        return self

    def onnxruntime_gpu(self, version="1.23.2"):
        files = ["onnxruntime\\__init__.py", "onnxruntime\\capi\\onnxruntime_providers_cuda.dll",
                 "onnxruntime\\capi\\onnxruntime_providers_shared.dll"]
        for f in files:
            self.put(SITE + "\\" + f, build_pe(ORT_IMPORTS) if f.endswith("_cuda.dll") else b"MZ")
        self.dist("onnxruntime-gpu", version, files)
        return self

    def cupy(self, package="cupy-cuda12x", config=None):
        """A CuPy wheel for Windows as the package index serves it (tests/recorded/<package>-<version>-win_amd64-wheel.txt:
        every .pyd and .dll file its RECORD lists, rebuilt by build_pe with that file's real import and delay-load
        tables, and its real cupy\\.data\\_wheel.json): the CUDA runtime linked in statically, the CUDA libraries
        imported by cupy_backends\\cuda\\libs\\*, cupy\\cuda\\cufft and cupy\\cuda\\jitify. ``config``: a _wheel.json
        to write instead (constructed: the test says from what). Returns the machine; ``cupy_version`` is the wheel's."""
        import json

        version, sections = CUPY_WHEELS[package]
        files = ["cupy\\__init__.py", "cupy\\.data\\_wheel.json"]
        self.put(SITE + "\\cupy\\__init__.py")
        text = sections["_wheel.json"] if config is None else json.dumps(config)
        self.put(SITE + "\\cupy\\.data\\_wheel.json", text.encode())
        for line in sections["modules"].splitlines():
            head, _, delay = line.partition("|")
            path, *imports = head.split()
            files.append(path.replace("/", "\\"))
            self.put(SITE + "\\" + files[-1], build_pe(imports, delay.split()))
        self.dist(package, version, files)
        self.cupy_version = version
        return self

    def paddle(self, version="2.6.2", cuda="11.8", cudnn="8.9.7"):
        """paddlepaddle-gpu: libpaddle.pyd (it loads cuDNN and cuBLAS by name at run time) and its version file."""
        files = ["paddle\\__init__.py", "paddle\\base\\libpaddle.pyd", "paddle\\version\\__init__.py"]
        self.put(SITE + "\\paddle\\__init__.py")
        self.put(SITE + "\\paddle\\base\\libpaddle.pyd", build_pe(["python312.dll", "KERNEL32.dll"]))
        self.put(SITE + "\\paddle\\version\\__init__.py",
                 ("full_version = '%s'\ncuda_version = '%s'\ncudnn_version = '%s'\n" % (version, cuda, cudnn)).encode())
        self.dist("paddlepaddle-gpu", version, files)
        return self

    def tensorflow(self, version="2.10.1"):
        """TensorFlow's last GPU build for native Windows, from the real wheel (tests/recorded/
        wheel-tensorflow-2.10.1-win_amd64.txt): its build_info line (CUDA 64_112, cuDNN 64_8) after the module's import
        line, and _pywrap_tensorflow_internal.pyd rebuilt by build_pe with the real import table (no CUDA DLL: TSL opens
        them by name at run time)."""
        run = recorded_runs("wheel-tensorflow-2.10.1-win_amd64.txt")
        imports = [line.split(": ", 1)[1] for line in run["imports"].splitlines() if line.startswith("DLL Name: ")]
        files = ["tensorflow\\__init__.py", "tensorflow\\python\\_pywrap_tensorflow_internal.pyd",
                 "tensorflow\\python\\platform\\build_info.py"]
        self.put(SITE + "\\" + files[0])
        self.put(SITE + "\\" + files[1], build_pe(imports))
        self.put(SITE + "\\" + files[2], ("import collections\n\n" + run["build_info.py"]).encode())
        self.dist("tensorflow", version, files)
        return self

    # ---------------------------------------------------------- the doctor
    def host(self):
        return self.root.host(system="windows", env=self.full_env(), path=";".join(self.path))

    def full_env(self):
        return dict(self.env, PATH=";".join(self.path))

    def snapshot(self):
        from cudaenv.model.record import replace
        from cudaenv.model.snapshot import Platform, Torch
        from cudaenv.probes.collect import _frameworks
        from cudaenv.probes.toolkits import probe_toolkits

        from machine import cuda_torch, healthy

        version = self.torch_version
        if version:
            cuda = re.search(r"\+cu(\d+)(\d)$", version)
            torch = cuda_torch(version=version, cuda="%s.%s" % cuda.groups() if cuda else None, python=PYTHON, location=SITE,
                               site_packages=(SITE,))
        else:
            torch = Torch(python=PYTHON, installed=False, site_packages=(SITE,))
        host = self.host()
        found, libraries, _ = _frameworks(host, [], torch, tuple(self.import_order))
        toolkits = probe_toolkits(host, [], site_packages=())
        h = healthy()
        return replace(h, platform=Platform(system="windows", machine="AMD64"), toolkits=toolkits.toolkits, cuda_symlink=None,
                       active_toolkit=toolkits.active_toolkit,
                       torch=torch, frameworks=found, libraries=libraries, env=tuple(sorted(self.full_env().items())),
                       import_order=tuple(self.import_order))

    def findings(self):
        """(exit code, {id: the finding as `doctor --json` writes it}, the report's JSON) for this machine."""
        import json

        from cudaenv.diagnose import SECTIONS, diagnose, exit_code
        from cudaenv.model.codec import to_jsonable
        from cudaenv.model.reports import DoctorReport

        from machine import filled_in

        s = self.snapshot()
        found = diagnose(s)
        data = json.loads(json.dumps(to_jsonable(DoctorReport(s, findings=found))))
        for f in data["findings"]:
            filled_in(f)
        order = [SECTIONS.index(f["section"]) for f in data["findings"]]
        assert order == sorted(order), [f["id"] for f in data["findings"]]
        return exit_code(found), {f["id"]: f for f in data["findings"]}, data

    # ---------------------------------------------------------- a fix applied
    def apply_fix(self, line):
        body = line.split("    # ")[0].strip()
        if not body or body.startswith("#"):
            return False
        one = r"\$env:(\w+) = '((?:[^']|'')*)'"
        if re.fullmatch(r"%s(?:; %s)*" % (one, one), body):  # one or more assignments, PowerShell's `;` between
            for name, raw in re.findall(one, body):
                value = raw.replace("''", "'")
                if name.upper() == "PATH":
                    self.path = [p for p in value.split(";") if p]
                else:
                    self.env[name] = value
            return True
        words = shlex.split(body)
        pip = _pip_words(words)  # the Linux model's reading of a pip line: one home
        if pip is None or not pip[1]:
            return False
        verb, specs = pip
        for spec in specs:
            name, _, version = spec.partition("==")
            name = re.sub(r"\[.*\]", "", name).lower()
            if verb == "uninstall":
                self.pip_remove(name)
            elif name == "torch":
                self.torch(version or self.torch_version or "2.8.0+cu128")
            elif name.startswith("cupy-cuda"):
                self.pip_remove(name)
                self.cupy(name)
            elif name == "onnxruntime-gpu":
                self.pip_remove(name)
                self.onnxruntime_gpu(version or "1.23.2")
            else:
                return False
        return True

    def apply_user_code(self, line):
        """A fix whose step is the user's program (fix_kind user-code), applied as the user would: the program now
        imports in the order the line says and the doctor is told so (`doctor --import-order A,B`). "# import A before
        B ..." puts A first; "... call onnxruntime.preload_dlls() before the first session ..." puts that call before
        the session (after import onnxruntime). False for a line that changes no program."""
        body = line.lstrip("# ")
        order = re.match(r"import (\S+) before (\S+) in every program", body)
        if order:
            self.import_order = order.groups()
            return True
        if "onnxruntime.preload_dlls() before the first session" in body:
            self.import_order = ("onnxruntime", "onnxruntime.preload_dlls")
            return True
        return False

    def pip_remove(self, name):
        import shutil

        key = name.replace("-", "_").lower()
        site = self.local(SITE)
        for info in list(site.glob("*.dist-info")) if site.is_dir() else []:
            if info.name[: -len(".dist-info")].rsplit("-", 1)[0].lower() != key:
                continue
            for line in (info / "RECORD").read_text().splitlines():
                path = site / line.split(",", 1)[0]
                if path.is_file() and info not in path.parents:
                    path.unlink()
            shutil.rmtree(info)
            if key == "torch":
                self.torch_version = None


def reg_query_values(text):
    """{value name: data} of the string values (REG_SZ, REG_EXPAND_SZ) in a recorded `reg query KEY` output (reg.exe
    writes the key's full name, then each value indented as NAME, TYPE and DATA separated by four spaces): what
    cudaenv.host.registry.read_values returns for that key on the machine it was recorded on."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("    "):
            continue
        parts = line.strip().split("    ")
        if len(parts) == 3 and parts[1] in ("REG_SZ", "REG_EXPAND_SZ"):
            out[parts[0]] = parts[2]
    return out
