"""Builders shared by the test modules: fake roots, fake commands, recorded outputs, the tools folder, the
refusing runner, and the fake install trees of the uninstall tests. Fixtures live in conftest.py; the doctor
scenarios (a whole fake machine, fake torch builds, hand-built Snapshots) live in machine.py.

Tests never see this machine's programs: a fake Host's PATH is the fake bin plus TOOLS, a folder of links to
the few real tools the fake commands use (never /usr/bin:/bin, where a contributor's driver puts nvidia-smi),
and every program a Host runs in a test goes through RefusingRunner (installed by conftest for every test).
"""

import atexit
import contextlib
import hashlib
import json
import os
import shlex
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

# The tests folder (test modules live in subfolders that mirror cudaenv's packages) and the checkout above it.
TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
RECORDED = Path(__file__).parent / "recorded"
# The working folder of a child interpreter the suite starts with ``-c``: -c puts the working folder first on sys.path
# (before PYTHONPATH and site-packages), so a child started in the checkout imports ./cudaenv, the source tree, and not
# the installed package under test (tests/project/test_suite_rules.py asks every such child for a cwd).
CHILD_CWD = os.path.abspath(os.sep)

# ------------------------------------------------------------------ the tools folder
# The real programs the fake commands use (grep tests/ for the bodies of the fakes: `/bin/cat`, `/bin/sleep`,
# `/bin/cp`, `/bin/chmod`, `touch`; echo and printf are sh builtins). A test that runs more (a real shell, the
# scripts cudaenv writes) asks tools("bash", ...) for a folder with those added.
BASE_TOOLS = ("sh", "cat", "sleep", "cp", "chmod", "touch")
# Where the real tools are looked up (not the process's PATH: that is what the isolation session poisons).
_SYSTEM_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin")
_TOOLS_BASE = Path(tempfile.mkdtemp(prefix="cudaenv-test-tools-"))
atexit.register(shutil.rmtree, str(_TOOLS_BASE), True)
_TOOL_FOLDERS: Dict[tuple, str] = {}


def real_tool(name: str) -> Optional[str]:
    """The machine's own ``name`` (an absolute path), or None."""
    return shutil.which(name, path=os.pathsep.join(_SYSTEM_DIRS))


def tools(*extra: str) -> str:
    """A folder of links to BASE_TOOLS plus ``extra`` (e.g. "zsh", "fish"): the only real programs on a test's PATH.

    A tool this machine lacks is left out (the test that needs it skips or fails on its own terms)."""
    names = tuple(sorted(set(BASE_TOOLS) | set(extra)))
    key = tuple(sorted(set(extra) - set(BASE_TOOLS)))
    if key not in _TOOL_FOLDERS:
        folder = _TOOLS_BASE / ("tools-" + "-".join(key) if key else "tools")
        folder.mkdir()
        for name in names:
            # python3 is the test interpreter (the scripts cudaenv writes run stdlib-only lines with it)
            found = os.path.realpath(sys.executable) if name == "python3" else real_tool(name)
            if found is not None:
                os.symlink(found, folder / name)
        _TOOL_FOLDERS[key] = str(folder)
    return _TOOL_FOLDERS[key]


# The PATH tail of every fake Host, `cli` call and console-script run (the fake bin goes in front).
TOOLS = tools()
# The same plus the real shells and what the tests' own shell lines call (env, grep, date, seq, mkdir), for the tests that
# run bash, zsh, fish or pwsh themselves.
SHELL_TOOLS = tools("bash", "zsh", "fish", "pwsh", "env", "grep", "date", "seq", "mkdir")
# What the scripts `cudaenv uninstall --script` writes call: bash, id, grep, readlink, rm, rmdir, ln, python3 (the
# line editor), and the stand-in runfile uninstaller's dirname.
UNINSTALL_SCRIPT_TOOLS = tools("bash", "id", "grep", "readlink", "rm", "rmdir", "ln", "python3", "dirname")

# ------------------------------------------------------------------ the refusing runner


class RefusedProgram(AssertionError):
    """A test's Host was asked to run a program of the real machine."""


def _inside(path: str, folder: str) -> bool:
    folder = folder.rstrip(os.sep) or os.sep
    return path == folder or path.startswith(folder + os.sep)


def locate_program(program: str, env: Mapping[str, str], cwd: Optional[str] = None) -> Optional[str]:
    """The file ``subprocess`` would execute for ``program`` with ``env`` (None when there is none: "missing")."""
    if os.sep in program:
        path = program if os.path.isabs(program) else os.path.join(cwd or os.getcwd(), program)
        return path if os.path.exists(path) else None
    for entry in os.get_exec_path(dict(env)):  # as subprocess does: PATH of env, os.defpath when it has none
        candidate = os.path.join(entry or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class RefusingRunner:
    """A Host runner that runs only the test's own programs, loudly refusing the rest.

    Allowed: anything in a tools() folder (links to the real tools, by design), files under ``temp`` (the fake
    bin, the fake root, fake interpreters; a link there must lead back under ``temp`` or to the test
    interpreter), the test interpreter itself and its virtual environment's bin/, and ``extra`` (a test's
    `allow_run` marker, for the old interpreters the compatibility tests name). Each refusal raises and is kept in
    ``refused`` so that conftest fails the test even where cudaenv catches the error.
    """

    def __init__(self, real, temp: Iterable[str], extra: Iterable[str] = ()):
        self.real = real
        self.temp = [os.path.realpath(t) for t in temp]
        self.extra = {os.path.abspath(e) for e in extra}
        self.refused: List[str] = []
        self.started: List[tuple] = []
        exe = os.path.abspath(sys.executable)
        self.interpreters = {exe, os.path.realpath(exe)}
        self.venv_bin = os.path.dirname(exe) if sys.prefix != sys.base_prefix else None

    def allows(self, path: str) -> bool:
        a = os.path.normpath(os.path.abspath(path))
        r = os.path.realpath(path)
        if _inside(a, str(_TOOLS_BASE)) or _inside(os.path.realpath(a), os.path.realpath(str(_TOOLS_BASE))):
            return True
        if a in self.extra or a == os.path.abspath(sys.executable):
            return True
        if self.venv_bin and _inside(a, self.venv_bin):
            return True
        if any(_inside(r, t) for t in self.temp):
            return True
        # a venv made from the test interpreter inside the temp folder (its python links to the base interpreter)
        return any(_inside(os.path.realpath(os.path.dirname(a)), t) for t in self.temp) and r in self.interpreters

    def _check(self, argv, env, cwd=None) -> None:
        program = str(argv[0]) if argv else ""
        found = locate_program(program, env, cwd) if program else None
        if found is not None and not self.allows(found):
            message = "a test ran %s (%s), a program of this machine: give the test a fake (FakeBin) or a tools() entry" % (
                program, found)
            self.refused.append(message)
            raise RefusedProgram(message)

    def __call__(self, argv, timeout, env, cwd=None, **streaming):
        self._check(argv, env, cwd)
        return self.real(argv, timeout, env, cwd, **streaming)  # on_output: `cudaenv install`'s progress passthrough

    def start(self, argv, timeout, env, **streaming):
        """Host.start's runner form (the real start_process: spawned now, read by ``result()``), guarded the same way;
        ``started`` keeps each argv in the order they were started."""
        from cudaenv.host.process import start_process

        self._check(argv, env)
        self.started.append(tuple(argv))
        return start_process(argv, timeout, env, **streaming)  # until: the doctor's torch child


def interruptible() -> None:
    """``preexec_fn`` for a child a test will Ctrl-C: SIGINT back to its default, as at a terminal. A suite started in
    the background (``cmd &`` without job control) inherits SIGINT ignored, and Python then never turns it into
    KeyboardInterrupt: cudaenv rightly keeps an ignored SIGINT ignored, as it keeps SIGHUP under nohup."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def umask(mask: int):
    """The process umask set to ``mask`` for the block (set back after): a file-mode test sees the mode it chose."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def recorded(name: str) -> str:
    """A recorded real output from tests/recorded/ (each file's first lines say where it came from)."""
    text = (RECORDED / name).read_text(encoding="utf-8")
    return strip_provenance(text)


def recorded_runs(name: str) -> dict:
    """A recorded file holding several runs, each after a ``=== ARGS`` line (not the program's own): ARGS -> output."""
    runs, key = {}, None
    for line in recorded(name).splitlines():
        if line.startswith("=== "):
            key = line[4:]
            runs[key] = []
        elif key is not None:
            runs[key].append(line)
    return {k: "\n".join(v) + "\n" for k, v in runs.items()}


def strip_provenance(text: str) -> str:
    """Recorded files start with `# source: ...` lines and a `# ---` line; the output follows."""
    if text.startswith("# source:"):
        marker = "\n# ---\n"
        if marker in text:
            return text.split(marker, 1)[1]
    return text


class FakeRoot:
    """A tmp_path tree standing for `/`."""

    def __init__(self, path: Path):
        self.path = path

    def __truediv__(self, rel: str) -> Path:
        return self.path / rel.lstrip("/")

    def file(self, rel: str, text: str = "", mode: Optional[int] = None) -> Path:
        p = self / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        if mode is not None:
            p.chmod(mode)
        return p

    def dir(self, rel: str) -> Path:
        p = self / rel
        p.mkdir(parents=True, exist_ok=True)
        return p

    def link(self, rel: str, target: str) -> Path:
        p = self / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink() or p.exists():
            p.unlink()
        os.symlink(target, p)
        return p

    def executable(self, rel: str, script: str) -> Path:
        return self.file(rel, script, mode=0o755)

    def toolkit(
        self,
        version: str,
        where: str = "usr/local",
        name: Optional[str] = None,
        version_json: bool = True,
        version_txt: bool = False,
        cuda_h: bool = True,
        nvcc: bool = True,
        lib: str = "lib64",
        runfile: bool = False,
        cudnn: Optional[str] = None,
    ) -> Path:
        """A toolkit tree: bin/nvcc (prints its version), version.json or version.txt, include/cuda.h, lib64/."""
        parts = (version.split(".") + ["0", "0"])[:3]
        major, minor = parts[0], parts[1]
        folder = name or ("cuda-%s.%s" % (major, minor))
        base = "%s/%s" % (where.strip("/"), folder)
        self.dir(base + "/" + lib)
        self.file(base + "/" + lib + "/libcudart.so.%s" % major, "")
        if version_json:
            self.file(base + "/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}, indent=2))
        if version_txt:
            self.file(base + "/version.txt", "CUDA Version %s\n" % version)
        if cuda_h:
            self.file(base + "/include/cuda.h", "#define CUDA_VERSION %d%02d0\n" % (int(major), int(minor)) if int(major) >= 10 else "")
        if nvcc:
            self.executable(base + "/bin/nvcc", fake_nvcc_script(version))
        if runfile:
            self.executable(base + "/bin/cuda-uninstaller", "#!/bin/sh\nexit 0\n")
        if cudnn:
            self.file(base + "/include/cudnn_version.h", cudnn_header(cudnn))
        return self.path / base

    def host(self, env: Optional[Mapping[str, str]] = None, system: str = "linux", timeout: float = 5.0, path: str = ""):
        from cudaenv.host import Host

        full_env: Dict[str, str] = {"PATH": path or TOOLS, "HOME": str(self.path / "root")}
        full_env.update(env or {})
        # the fake root is the test's machine: its stand-in programs run (the CLI's --root never runs any)
        return Host(root=self.path, env=full_env, system=system, timeout=timeout, root_is_this_machine=True)


def fake_nvcc_script(version: str) -> str:
    mm = ".".join(version.split(".")[:2])
    return (
        "#!/bin/sh\n"
        "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
        "echo 'Copyright (c) 2005-2024 NVIDIA Corporation'\n"
        "echo 'Built on Tue_Feb_27_16:19:38_PST_2024'\n"
        "echo 'Cuda compilation tools, release %s, V%s'\n"
        "echo 'Build cuda_%s.r%s/compiler.33961263_0'\n" % (mm, version, mm, mm)
    )


def cudnn_header(version: str) -> str:
    major, minor, patch = (version.split(".") + ["0", "0"])[:3]
    scale = "10000" if int(major) >= 9 else "1000"
    return (
        "#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n"
        "#define CUDNN_MAJOR %s\n#define CUDNN_MINOR %s\n#define CUDNN_PATCHLEVEL %s\n\n"
        "#define CUDNN_VERSION (CUDNN_MAJOR * %s + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n#endif\n"
        % (major, minor, patch, scale)
    )


class FakeBin:
    """A folder of fake commands for PATH. Each prints a recorded output, by the arguments it gets."""

    def __init__(self, path: Path):
        self.path = path
        self.path.mkdir(parents=True, exist_ok=True)
        self._n = 0

    def command(
        self,
        name: str,
        stdout: str = "",
        exit_code: int = 0,
        stderr: str = "",
        sleep: Optional[float] = None,
        by_args: Optional[Mapping[str, tuple]] = None,
    ) -> Path:
        """A fake `name`. ``by_args`` maps a substring of "$*" to (stdout, exit_code[, stderr]) tried first, in order."""
        lines = ["#!/bin/sh"]
        if sleep is not None:
            lines.append("/bin/sleep %s" % sleep)
        lines.append('args="$*"')
        for pattern, outcome in (by_args or {}).items():
            out, code = outcome[0], outcome[1]
            err = outcome[2] if len(outcome) > 2 else ""
            lines.append('case "$args" in *%s*)' % shlex.quote(pattern))
            lines.append("  /bin/cat %s" % shlex.quote(str(self._store(out))))
            if err:
                lines.append("  /bin/cat %s >&2" % shlex.quote(str(self._store(err))))
            lines.append("  exit %d;;" % code)
            lines.append("esac")
        lines.append("/bin/cat %s" % shlex.quote(str(self._store(stdout))))
        if stderr:
            lines.append("/bin/cat %s >&2" % shlex.quote(str(self._store(stderr))))
        lines.append("exit %d" % exit_code)
        p = self.path / name
        p.write_text("\n".join(lines) + "\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return p

    def _store(self, text: str) -> Path:
        self._n += 1
        p = self.path / (".out%d" % self._n)
        p.write_text(text, encoding="utf-8")
        return p

    @property
    def env_path(self) -> str:
        return "%s:%s" % (self.path, TOOLS)


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)

    def __repr__(self) -> str:
        return "CliResult(code=%r, out=%r, err=%r)" % (self.code, self.out[-2000:], self.err[-2000:])


# ------------------------------------------------------------------ uninstall trees
# Fake roots that look like real CUDA installs, for the uninstall tests.
# The dpkg status stanzas for the CUDA packages follow the layout of a real status file (see
# tests/recorded/dpkg-status-real, recorded on a Debian 12 machine): they are BUILT here in that format, with
# the package names NVIDIA's repository uses (cuda-nvcc-12-4, cuda-cudart-12-4, cuda-toolkit-12-4, seen in
# apt output in NVIDIA/nvidia-container-toolkit#883 for 12-8), not recorded from a machine with CUDA debs.

WEIRD = "/opt/we ird'q\"$HOME`echo pwned`;x/cuda-11.8"

RUNFILE_UNINSTALLER = """#!/bin/sh
# stands for NVIDIA's cuda-uninstaller: removes what it installed and leaves the rest, like the real one
d=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$d/lib64" "$d/include" "$d/version.json" "$d/bin/nvcc"
printf 'cuda-uninstaller\\t%s\\n' "$d" >> "$UNINSTALL_LOG"
rm -f "$0"
"""


def stanza(name, version, depends="", status="install ok installed", arch="amd64"):
    text = (
        "Package: %s\nStatus: %s\nPriority: optional\nSection: devel\nInstalled-Size: 100\n"
        "Maintainer: cudatools <cudatools@nvidia.com>\nArchitecture: %s\nVersion: %s\n" % (name, status, arch, version)
    )
    if depends:
        text += "Depends: %s\n" % depends
    return text + "Description: CUDA %s\n %s package\n" % (name, name)


def real_stanzas(recorded):
    return recorded("dpkg-status-real").strip() + "\n"


def runfile_118(root, where="usr/local", name=None):
    base = root.toolkit("11.8.89", where=where, name=name, runfile=False)
    (base / "bin" / "cuda-uninstaller").write_text(RUNFILE_UNINSTALLER)
    (base / "bin" / "cuda-uninstaller").chmod(0o755)
    root.file(str(base.relative_to(root.path)) + "/extras/demo_suite/README", "left behind by the uninstaller\n")
    return base


def deb_124(root, recorded):
    base = root.toolkit("12.4.131")
    root.file("usr/local/cuda-12.4/nvvm/bin/cicc", "x")
    root.file("usr/local/cuda-12.4/extras/mine.txt", "a file the user put there\n")
    status = real_stanzas(recorded) + "\n"
    status += stanza("cuda-nvcc-12-4", "12.4.131-1") + "\n"
    status += stanza("cuda-cudart-12-4", "12.4.127-1") + "\n"
    status += stanza("cuda-toolkit-12-4", "12.4.1-1", "cuda-nvcc-12-4 (>= 12.4.131), cuda-cudart-12-4") + "\n"
    status += stanza("cuda-toolkit-12-4-config-common", "12.4.127-1") + "\n"
    status += stanza("cuda-nvcc-12-1", "12.1.105-1", status="deinstall ok config-files") + "\n"
    status += stanza("nvidia-driver-550", "550.54.15-0ubuntu1") + "\n"
    status += stanza("libnvidia-compute-550", "550.54.15-0ubuntu1") + "\n"
    root.file("var/lib/dpkg/status", status)
    lists = {
        "cuda-nvcc-12-4": ["/usr", "/usr/local", "/usr/local/cuda-12.4", "/usr/local/cuda-12.4/bin", "/usr/local/cuda-12.4/bin/nvcc",
                           "/usr/local/cuda-12.4/nvvm", "/usr/local/cuda-12.4/nvvm/bin", "/usr/local/cuda-12.4/nvvm/bin/cicc",
                           "/usr/local/cuda-12.4/include", "/usr/local/cuda-12.4/include/cuda.h", "/usr/local/cuda-12.4/version.json"],
        "cuda-cudart-12-4:amd64": ["/usr/local/cuda-12.4", "/usr/local/cuda-12.4/lib64", "/usr/local/cuda-12.4/lib64/libcudart.so.12",
                                   "/usr/share/doc/cuda-cudart-12-4/copyright"],
        "cuda-toolkit-12-4": ["/usr/share/doc/cuda-toolkit-12-4"],
        "cuda-toolkit-12-4-config-common": ["/etc/ld.so.conf.d/988_cuda-12.conf"],
        "nvidia-driver-550": ["/usr/share/doc/nvidia-driver-550"],
    }
    root.dir("var/lib/dpkg/info")
    for name, paths in lists.items():
        root.file("var/lib/dpkg/info/%s.list" % name, "/.\n" + "\n".join(paths) + "\n")
    root.file("var/lib/dpkg/info/libc6:amd64.list", recorded("dpkg-list-libc6-amd64"))
    root.file("etc/ld.so.conf.d/988_cuda-12.conf", "/usr/local/cuda-12.4/targets/x86_64-linux/lib\n")
    return base


def alternatives_124(root):
    root.file("var/lib/dpkg/alternatives/cuda", "auto\n/usr/local/cuda\n\n/usr/local/cuda-12.4\n124\n")
    root.link("etc/alternatives/cuda", "/usr/local/cuda-12.4")
    root.link("usr/local/cuda", "/etc/alternatives/cuda")


RC_BASHRC = """# ~/.bashrc
alias ll='ls -l'
export PATH=/usr/local/cuda-11.8/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export EDITOR=vim
"""
RC_ZSHRC = """export PATH=/usr/local/cuda-11.80/bin:$PATH
if [ -d /usr/local/cuda-11.8 ]; then
  export CUDA_HOME=/usr/local/cuda-11.8
fi
"""
RC_ENVIRONMENT = 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/cuda-11.8/bin"\n'


def rc_files(root):
    root.file("root/.bashrc", RC_BASHRC)
    root.file("root/.zshrc", RC_ZSHRC)
    root.file("etc/environment", RC_ENVIRONMENT)
    root.file("etc/profile.d/cuda.sh", "export PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    root.file("root/.config/fish/config.fish", "set -gx PATH /opt/other/bin $PATH\n")


def ldconf_118(root):
    root.file("etc/ld.so.conf.d/cuda-11-8.conf", "/usr/local/cuda-11.8/lib64\n")
    root.file("etc/ld.so.conf.d/mixed.conf", "# local libs\n/opt/mylib/lib\n/usr/local/cuda-11.8/extras/CUPTI/lib64\n")
    root.file("etc/ld.so.conf.d/x86_64-linux-gnu.conf", "/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n")


def conda_env(root, prefix="opt/conda/envs/cu121"):
    import json

    root.executable(prefix + "/bin/nvcc", "#!/bin/sh\necho 'Cuda compilation tools, release 12.1, V12.1.105'\n")
    root.file(prefix + "/lib/libcudart.so.12", "")
    for name, ver in (("cuda-nvcc", "12.1.105"), ("cuda-cudart", "12.1.105"), ("libcublas", "12.1.3.1"), ("python", "3.11.8"), ("numpy", "1.26.4")):
        root.file("%s/conda-meta/%s-%s-0.json" % (prefix, name, ver), json.dumps({"name": name, "version": ver, "files": []}))
    return "/" + prefix


def pip_venv(root, log, prefix="root/venvs/old"):
    site = prefix + "/lib/python3.11/site-packages"
    root.file(site + "/nvidia/cuda_nvcc/bin/nvcc", "")
    for dist, ver in (("nvidia_cuda_nvcc_cu12", "12.4.131"), ("nvidia_cudnn_cu12", "9.1.0.70")):
        name = dist.replace("_", "-")
        root.file("%s/%s-%s.dist-info/METADATA" % (site, dist, ver), "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, ver))
    root.file(site + "/torch/version.py", "__version__ = '2.3.0+cu121'\n")
    root.file(site + "/torch-2.3.0.dist-info/METADATA", "Name: torch\nVersion: 2.3.0\n")
    root.executable(prefix + "/bin/python3", "#!/bin/sh\nprintf 'python3' >> %s\nfor a in \"$@\"; do printf '\\t%%s' \"$a\" >> %s; done\nprintf '\\n' >> %s\n" % (log, log, log))
    return "/" + site + "/nvidia/cuda_nvcc"


def stub_bin(folder: Path, log: Path, names=("apt-get", "dnf", "update-alternatives", "ldconfig", "conda", "nvidia-uninstall")) -> str:
    """Commands that only log their arguments (tab-separated, one call per line)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        p = folder / name
        p.write_text("#!/bin/sh\nprintf '%%s' %s >> \"$UNINSTALL_LOG\"\nfor a in \"$@\"; do printf '\\t%%s' \"$a\" >> \"$UNINSTALL_LOG\"; done\nprintf '\\n' >> \"$UNINSTALL_LOG\"\n" % name)
        p.chmod(0o755)
    return "%s:%s" % (folder, UNINSTALL_SCRIPT_TOOLS)


def snapshot_tree(root: Path) -> Dict[str, str]:
    """path (relative) -> hash of the content, or 'link:TARGET', or 'dir'."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def read_log(log: Path):
    if not log.exists():
        return []
    return [tuple(line.split("\t")) for line in log.read_text().splitlines()]


# ------------------------------------------------------------------ linear work, counted (never timed)
def calls_to(monkeypatch, owner, name: str, arg: int = 1) -> list:
    """``owner.name`` (a module's function) replaced for the test by one that records its argument ``arg`` on each
    call (the folder a listing read, the path a reader opened) before calling the real one: the list, for counted-work
    assertions."""
    real = getattr(owner, name)
    seen: list = []

    def counting(*args, **kwargs):
        seen.append(args[arg] if len(args) > arg else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return seen


class CountingText(str):
    """A text that counts the characters its own str methods go over (``find`` from an offset to the hit or the end,
    ``split``, a slice's length, ``in``, ...): the work inside one C call that a step count cannot see. A scan from each
    occurrence to the end of the text (``text.find("}", at)`` in a loop) is quadratic here though each is one call.
    What is derived from it (a slice, a line) is a plain str again, and a regex search of it counts as one step."""

    scanned = 0

    def _span(self, start, end):
        s, e, _ = slice(start, end).indices(len(self))
        return s, max(s, e)

    def find(self, sub, start=None, end=None):
        s, e = self._span(start, end)
        r = str.find(self, sub, s, e)
        CountingText.scanned += (r + len(sub) - s) if r >= 0 else (e - s)
        return r

    def rfind(self, sub, start=None, end=None):
        s, e = self._span(start, end)
        r = str.rfind(self, sub, s, e)
        CountingText.scanned += (e - r) if r >= 0 else (e - s)
        return r

    def index(self, sub, start=None, end=None):
        r = self.find(sub, start, end)
        if r < 0:
            raise ValueError("substring not found")
        return r

    def rindex(self, sub, start=None, end=None):
        r = self.rfind(sub, start, end)
        if r < 0:
            raise ValueError("substring not found")
        return r

    def count(self, sub, start=None, end=None):
        s, e = self._span(start, end)
        CountingText.scanned += e - s
        return str.count(self, sub, s, e)

    def __contains__(self, sub):
        return self.find(sub) >= 0

    def __getitem__(self, key):
        out = str.__getitem__(self, key)
        CountingText.scanned += len(out)
        return out

    def __iter__(self):
        CountingText.scanned += len(self)
        return str.__iter__(self)


def _whole(name):
    def method(self, *args, **kwargs):
        CountingText.scanned += len(self)
        return getattr(str, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in ("split", "rsplit", "splitlines", "partition", "rpartition", "replace", "strip", "lstrip", "rstrip", "lower",
              "upper", "casefold", "encode", "expandtabs", "translate", "isascii", "isdigit", "isspace", "__eq__", "__hash__"):
    setattr(CountingText, _name, _whole(_name))


def count_work(work: Callable[[str], object], text: str) -> Tuple[int, int]:
    """(steps, characters) of ``work(text)``, counted: every line of Python it runs and every call it makes (to Python
    or to C: a regex search, ``str.split``, ...) in this thread, and every character the text's own str methods go over
    (``CountingText``; bytes are passed as they are). The counts do not depend on the machine or its load."""
    import sys

    steps = 0

    def trace(frame, event, arg):
        nonlocal steps
        steps += 1
        return trace

    def profile(frame, event, arg):
        nonlocal steps
        if event == "c_call":
            steps += 1

    given = CountingText(text) if isinstance(text, str) else text
    CountingText.scanned = 0
    old_trace, old_profile = sys.gettrace(), sys.getprofile()
    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        work(given)
    finally:
        sys.settrace(old_trace)
        sys.setprofile(old_profile)
    return steps, CountingText.scanned


def count_steps(work: Callable[[str], object], text: str) -> int:
    """``count_work``'s steps and characters together: one figure of the work done."""
    return sum(count_work(work, text))


def assert_bounded(work: Callable[[str], object], small: str, big: str, passes: int = 2, slack: int = 50) -> None:
    """``work`` stops at a bound of its own: on ``big`` it runs no more Python than on ``small`` (a few steps of slack)
    and goes over at most ``passes`` times the extra characters (a split or a lower() of the whole text, in C)."""
    work(small)  # lazy patterns compile on first use: not counted
    (s_small, c_small), (s_big, c_big) = count_work(work, small), count_work(work, big)
    assert s_big <= s_small + slack, "%d steps on %d characters, %d on %d: the work is not bounded" % (
        s_small, len(small), s_big, len(big))
    assert c_big <= c_small + passes * (len(big) - len(small)), "%d characters gone over for %d, %d for %d" % (
        c_small, len(small), c_big, len(big))


def assert_linear(work: Callable[[str], object], unit: str, head: str = "", tail: str = "", size: int = 20_000,
                  slack: float = 1.25) -> None:
    """``work`` does linear work on ``head`` + ``unit`` repeated + ``tail``: the steps it takes (``count_steps``) on four times
    the text are at most ``slack`` x four times the steps on the text (plus a few hundred for fixed costs). A
    quadratic loop takes sixteen times the steps. Counted on about ``size`` characters, then four times that.

    What it counts is what Python runs and what the text's own str methods go over (``count_work``): work inside one
    regex search, however much it backtracks, is one step. Each pattern's own linearity is
    tests/project/test_regex_safety.py's, and the seconds on megabyte inputs are bench/run.py's (``--only hostile``)."""
    n = max(4, size // max(1, len(unit)))
    small, large = head + unit * n + tail, head + unit * (4 * n) + tail
    work(small)  # the first run compiles lazy patterns and fills caches: fixed costs, not counted
    a, b = count_steps(work, small), count_steps(work, large)
    assert b <= slack * 4 * a + 500, "%d steps for %d characters, %d for %d (%.1f x for 4 x the text): not linear" % (
        a, len(small), b, len(large), b / max(a, 1))


# ----------------------------------------------------------------------------- reading the package's own code
# The structural tests (tests/project/test_layers.py, test_one_home_*.py and the one-home checks beside the code they
# guard) read the installed package's modules as text and syntax trees; these are their one reader.
def docgen():
    """tools/docgen.py, the generator of docs/reference/ (a tool of the repository, not a module of the wheel)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cudaenv_docgen", str(REPO / "tools" / "docgen.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def package_modules() -> Dict[str, str]:
    """Dotted module name -> file path of every module of the installed cudaenv package, in a stable order."""
    import cudaenv

    package = os.path.dirname(cudaenv.__file__)
    out: Dict[str, str] = {}
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(package))[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def package_sources():
    """(path relative to the package with / separators, source text) of every module of the installed package."""
    import cudaenv

    package = os.path.dirname(cudaenv.__file__)
    for path in package_modules().values():
        with open(path, encoding="utf-8") as fh:
            yield os.path.relpath(path, package).replace(os.sep, "/"), fh.read()


def docstring_ids(tree) -> set:
    """The ids of the docstring constants of a module, its classes and functions (prose, not code), in ``tree``."""
    import ast

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def code_constants(tree):
    """The str and bytes constants of the code in ``tree`` (ast nodes: ``.value``, ``.lineno``), docstrings left out."""
    import ast

    docs = docstring_ids(tree)
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)) and id(n) not in docs]


def python_waiting_for(folder, mark):
    """``folder/bin/python3``: a script that waits (up to 10 s) until ``mark`` exists, then runs this interpreter with
    its arguments (exit 3 when ``mark`` never came): a child that can answer only once something beside it has run."""
    python = Path(folder) / "bin" / "python3"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text("#!/bin/sh\ni=0\nwhile [ ! -e %s ] && [ $i -lt 200 ]; do /bin/sleep 0.05; i=$((i+1)); done\n"
                      "[ -e %s ] || exit 3\nexec %s \"$@\"\n" % (mark, mark, sys.executable))
    python.chmod(0o755)
    return python
