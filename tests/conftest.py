"""Shared fixtures: fake roots, fake commands on PATH, recorded outputs, and running the CLI.

Unit tests never touch the real machine's GPU state: a Host built here gets an environment whose PATH
holds only the fake commands (plus /usr/bin:/bin for the shell utilities the fakes use).
"""

import io
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, Mapping, Optional

import pytest

import cudaenv

RECORDED = Path(__file__).parent / "recorded"

# Test modules may `from conftest import recorded, FakeRoot` (the suite runs with --import-mode=importlib).
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))
SYSTEM_BIN = "/usr/bin:/bin"

# The package under test must be the installed one (data/ and shell/ are read from it), never ./cudaenv.
_SRC = Path(__file__).resolve().parent.parent / "cudaenv"
if Path(cudaenv.__file__).resolve().parent == _SRC:
    pytest.exit("cudaenv is imported from the source tree; run the suite through `nox` (it installs the package)", 2)


def recorded(name: str) -> str:
    """A recorded real output from tests/recorded/ (each file's first lines say where it came from)."""
    text = (RECORDED / name).read_text(encoding="utf-8")
    return strip_provenance(text)


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

        full_env: Dict[str, str] = {"PATH": path or SYSTEM_BIN, "HOME": str(self.path / "root")}
        full_env.update(env or {})
        return Host(root=self.path, env=full_env, system=system, timeout=timeout)


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
        return "%s:%s" % (self.path, SYSTEM_BIN)


@pytest.fixture(name="recorded")
def recorded_fixture():
    """The `recorded(name)` function as a fixture."""
    return recorded


@pytest.fixture
def fake_root(tmp_path) -> FakeRoot:
    root = tmp_path / "root"
    root.mkdir()
    return FakeRoot(root)


@pytest.fixture
def fake_bin(tmp_path) -> FakeBin:
    return FakeBin(tmp_path / "fakebin")


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)

    def __repr__(self) -> str:
        return "CliResult(code=%r, out=%r, err=%r)" % (self.code, self.out[-2000:], self.err[-2000:])


@pytest.fixture
def cli():
    """Run `cudaenv ARGS` in-process with a given environment; returns CliResult(code, out, err)."""
    from cudaenv.cli import main

    def run(*argv: str, env: Optional[Mapping[str, str]] = None) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), env=dict(env or {"PATH": SYSTEM_BIN}), out=out, err=err)
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def cli_subprocess():
    """Run the installed `cudaenv` console script as a real process."""

    def run(*argv: str, env: Optional[Mapping[str, str]] = None, timeout: float = 60, input: Optional[str] = None) -> CliResult:
        exe = str(Path(sys.executable).parent / "cudaenv")
        proc = subprocess.run(
            [exe, *argv], capture_output=True, text=True, env=dict(env or {"PATH": SYSTEM_BIN}), timeout=timeout, input=input
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run
