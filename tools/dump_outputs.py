"""Dump every command's output on a set of fake machines, one file per (machine, command), to compare two versions.

    .venv/bin/python tools/dump_outputs.py OUTDIR            # every machine and command
    .venv/bin/python tools/dump_outputs.py OUTDIR --only healthy

Run it before a refactoring that must not change what people read, and after; then ``diff -r BEFORE AFTER``: the
only differences should be the fixes meant. The machines are built with the test suite's builders
(tests/builders.py, tests/machine.py: fake roots, a fake ``nvidia-smi`` printing recorded real outputs, fake torch
builds, an interpreter without torch) under one temporary folder; every command runs in this process through
``cudaenv.cli.main`` with ``COLUMNS=80`` and no terminal. Each file holds the argv, the exit code, stdout and stderr,
with the temporary folder written ``<TMP>`` and the doctor's clock, host name and run times blanked, so that two
runs of the same code give the same files. tests/project/test_dump_outputs.py runs a few of these.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from builders import TOOLS, FakeBin, FakeRoot, recorded  # noqa: E402
from machine import (  # noqa: E402
    A10G,
    ARCH_CU118,
    ARCH_CU121,
    ARCH_CU126,
    ARCH_CU128,
    GTX1080TI,
    RTX2080TI_X4,
    TITANV_5880,
    Machine,
)

WIDTH = "80"
# the file a command writes, shown after its output
WRITES = {"uninstall-script.txt": "uninstall.sh", "use-write.txt": "switch.sh", "use-local.txt": ".cuda-version"}
UNROOTED = "unrooted:"  # a machine-free command run without CUDAENV_ROOT (the others get an empty fake root)
ERRORS = {
    "ordinal": "RuntimeError: CUDA error: invalid device ordinal",
    "arch": "err-gpu-arch-unsupported.txt",
    "cpu-only": "err-torch-cpu-only.txt",
    "unavailable": "err-torch-cuda-unavailable.txt",
    "oom": "err-cuda-oom.txt",
    "smi-paste": "smi-banner-550-single.txt",
    "unknown": "something else entirely went wrong here",
}


class Box(Machine):
    """One fake machine: a root, a bin folder on PATH, an environment, an interpreter (with a fake torch or none); the
    suite's scenario machine (tests/machine.py) with its own folder under ``base`` and the width the dumps use."""

    def __init__(self, base: Path, name: str, python: str):
        self.name, self.base = name, base / name
        root = FakeRoot(self.base / "root")
        root.path.mkdir(parents=True)
        super().__init__(root, FakeBin(self.base / "bin"), self.base, None, python)
        self.env.update({"COLUMNS": WIDTH, "PYTHONDONTWRITEBYTECODE": "1",
                         "CUDAENV_CACHE_DIR": str(self.base / "cache"), "CUDAENV_DATA_DIR": str(self.base / "data")})

    def full_env(self, rooted=True):
        env = super().full_env()
        if rooted:
            env["CUDAENV_ROOT"] = str(self.root.path)
        return env


def _pci_gpu(box, address="0000:01:00.0"):
    box.root.file("sys/bus/pci/devices/%s/vendor" % address, "0x10de\n")
    box.root.file("sys/bus/pci/devices/%s/class" % address, "0x030000\n")


def build_machines(base: Path, python: str, only=None):
    """The fake machines, by name (each a scenario of tests/diagnose/test_diagnose_scenarios.py or close to one)."""
    made = {}

    def want(name):
        return only is None or name in only

    if want("healthy"):
        b = Box(base, "healthy", python)
        b.smi(query=recorded("diag-query-535-a10g.txt"), banner=recorded("diag-banner-535-a10g.txt"))
        b.torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("12.1.1", on_path=True)
        b.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
        b.root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
        made[b.name] = b
    if want("pascal"):  # a GTX 1080 Ti under a cu128 torch (no sm_61 kernels), two toolkits, a dangling link
        b = Box(base, "pascal", python)
        b.smi(query=recorded("diag-query-1080ti.txt"), banner=recorded("diag-banner-1080ti.txt"))
        b.torch("2.7.1+cu128", "12.8", GTX1080TI, ARCH_CU128)
        b.toolkit("11.8.0").toolkit("12.4.1", on_path=True)
        b.root.link("usr/local/cuda", "/usr/local/cuda-12.6")
        b.root.file("etc/ld.so.conf.d/cuda-11-8.conf", "/usr/local/cuda-11.8/lib64\n")
        b.root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
        made[b.name] = b
    if want("nodriver"):
        b = Box(base, "nodriver", python)
        _pci_gpu(b)
        b.root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
        b.toolkit("12.4.1")
        made[b.name] = b
    if want("visible"):  # four 2080 Ti, CUDA_VISIBLE_DEVICES=2,3, a cu118 torch
        b = Box(base, "visible", python)
        b.smi(query=recorded("smi-query-2080ti-x4.txt"))
        b.torch("2.7.1+cu118", "11.8", RTX2080TI_X4, ARCH_CU118)
        b.env["CUDA_VISIBLE_DEVICES"] = "2,3"
        made[b.name] = b
    if want("mixed"):  # a TITAN V beside an RTX 5880 Ada, in the order nvidia-smi and CUDA disagree on
        b = Box(base, "mixed", python)
        b.smi(query=recorded("smi-query-titanv-5880.txt"))
        b.torch("2.6.0+cu126", "12.6", TITANV_5880, ARCH_CU126, order=[1, 0])
        b.toolkit("12.6.3", on_path=True, cudnn="9.6.0")
        made[b.name] = b
    if want("wsl1"):
        b = Box(base, "wsl1", python)
        b.root.file("proc/version", recorded("proc-version-wsl1.txt"))
        b.root.file("proc/sys/kernel/osrelease", "4.4.0-18985-Microsoft\n")
        b.env["WSL_DISTRO_NAME"] = "Ubuntu-22.04"
        made[b.name] = b
    if want("bare"):  # nothing at all: no GPU, no toolkit, no torch
        made["bare"] = Box(base, "bare", python)
    return made


def commands_for(box: Box, scratch: Path):
    """(file name, argv, rooted, stdin text) for every command worth showing on ``box``."""
    py = ["--python", box.python]
    out = [
        ("doctor.txt", ["doctor"] + py, True),
        ("doctor-verbose.txt", ["doctor", "-v"] + py, True),
        ("doctor.json", ["doctor", "--json"] + py, True),
        ("doctor.md", ["doctor", "--format", "markdown"] + py, True),
        ("doctor-verbose.md", ["doctor", "--format", "markdown", "-v"] + py, True),
        ("doctor.prom", ["doctor", "--format", "prometheus"] + py, True),
        ("doctor-quick.txt", ["doctor", "--quick"] + py, True),
        ("list.txt", ["list"], True),
        ("list.json", ["list", "--json"], True),
        ("use-12.txt", ["use", "12", "--shell", "bash"], True),
        ("use-11.8-fish.txt", ["use", "11.8", "--shell", "fish"], True),
        ("use-off.txt", ["use", "--off", "--shell", "zsh"], True),
        ("use-none.txt", ["use", "--shell", "bash"], True),
        ("use-99.txt", ["use", "99.1", "--shell", "bash"], True),
        ("use-write.txt", ["use", "12", "--write", str(scratch / "switch.sh")], True),
        ("use-local.txt", ["use", "--local", "12", "--shell", "bash"], True),
        ("link-12.txt", ["link", "12"], True),
        ("link-system.txt", ["link", "system"], True),
        ("torch-recommend.txt", ["torch", "recommend"] + py, True),
        ("torch-recommend.json", ["torch", "recommend", "--json"] + py, True),
        ("torch-recommend-requirements.txt", ["torch", "recommend", "--format", "requirements"] + py, True),
        ("torch-recommend-pyproject.txt", ["torch", "recommend", "--format", "pyproject"] + py, True),
        ("fix-dry-run.txt", ["fix", "--dry-run"] + py, True),
        ("verify.txt", ["verify"] + py, True),
        ("verify.json", ["verify", "--json"] + py, True),
        ("uninstall-12.txt", ["uninstall", "12"], True),
        ("uninstall-12.json", ["uninstall", "12", "--json"], True),
        ("uninstall-all.txt", ["uninstall", "--all", "--driver"], True),
        ("uninstall-check.txt", ["uninstall", "12", "--check"], True),
        ("uninstall-check.json", ["uninstall", "12", "--check", "--json"], True),
        ("uninstall-script.txt", ["uninstall", "12", "--script", str(scratch / "uninstall.sh")], True),
        ("uninstall-repoint.txt", ["uninstall", "12.4", "--repoint", "11.8"], True),
        ("install-plan.txt", ["install", "12.4", "--plan"], True),
        ("install-plan.json", ["install", "12.4", "--plan", "--json"], True),
        ("doctor-against-not-a-stack.txt", ["doctor", "--against", _written(scratch / "not-a-stack.toml",
                                                                          "[tool.uv]\nx = 1\n")] + py, True),
        ("doctor-against-driver.txt", ["doctor", "--against", _written(scratch / "driver-floor.toml",
                                                                     'schema = 1\n[require]\ndriver_min = "999.1"\n')] + py, True),
    ]
    for key, source in ERRORS.items():
        text = source if " " in source else recorded(source)
        out.append(("explain-%s.txt" % key, ["explain", text], True))
        out.append(("explain-%s.json" % key, ["explain", "--json", text], True))
        out.append(("explain-%s-offline.txt" % key, ["explain", "--offline", "--all", text], True))
    return [(name, argv, rooted) for name, argv, rooted in out]


def _written(path: Path, text: str) -> str:
    """``path`` with ``text`` written in it (a file a command reads), as an argument."""
    path.write_text(text, encoding="utf-8")
    return str(path)


def machine_free_commands(scratch: Path):
    """Commands whose output does not depend on the machine: help pages, init, explain --list, check-installer,
    checkpoint, install --list."""
    out = []
    for name in ("doctor", "list", "use", "link", "init", "torch", "fix", "verify", "explain", "install", "uninstall",
                 "check-installer", "checkpoint", "fleet"):
        out.append(("help-%s.txt" % name, [name, "--help"]))
    out += [("help.txt", ["--help"]), ("help-torch-recommend.txt", ["torch", "recommend", "--help"]),
            ("help-torch-refresh.txt", ["torch", "refresh", "--help"]),
            ("help-checkpoint-inspect.txt", ["checkpoint", "inspect", "--help"]),
            ("help-checkpoint-fix.txt", ["checkpoint", "fix", "--help"]),
            ("help-fleet-summarize.txt", ["fleet", "summarize", "--help"])]
    for shell in ("bash", "zsh", "fish", "pwsh", "tcsh"):
        out.append(("init-%s.txt" % shell, ["init", shell]))
    rc = scratch / "home" / ".bashrc"
    out += [("init-install.txt", ["init", "bash", "--install", "--rc", str(rc)]),
            ("init-install-again.txt", ["init", "bash", "--install", "--rc", str(rc)])]
    out += [("explain-list.txt", ["explain", "--list"]), ("explain-list.json", ["explain", "--list", "--json"]),
            ("explain-nothing.txt", ["explain", ""]),
            ("install-list.txt", ["install", "--list"]), ("install-list.json", ["install", "--list", "--json"]),
            ("list-available.txt", ["list", "--available"])]
    header = scratch / "cuda_12.1.0_530.30.02_linux.run"
    header.write_text(recorded("makeself-2.4.5-header"), encoding="utf-8")
    page = scratch / "page.run"
    page.write_text("<html><body>Not Found</body></html>\n", encoding="utf-8")
    out += [("check-installer-header.txt", ["check-installer", str(header)]),
            ("check-installer-header.json", ["check-installer", "--json", str(header)]),
            ("check-installer-page.txt", ["check-installer", str(page)]),
            ("check-installer-missing.txt", ["check-installer", str(scratch / "missing.run")])]
    out += _checkpoints(scratch)
    out += [("torch-noaction.txt", ["torch"]), ("fleet-noaction.txt", ["fleet"])]
    # a toolkit `cudaenv install` made (its marker is what the store checks): uninstall removes it itself, after asking
    store = FakeRoot(scratch / "data" / "toolkits")
    store.path.mkdir(parents=True)
    store.toolkit("13.0.2", where="", name="13.0.2", lib="lib")
    store.file("13.0.2/.cudaenv-install.json", '{"installer": "cudaenv", "release": "13.0.2", "components": []}\n')
    # (not rooted: cudaenv removes only what it installed on the machine it runs on; "13.0.2" names the fake one)
    out += [(UNROOTED + "uninstall-cudaenv-install-no-tty.txt", ["uninstall", "13.0.2"]),
            (UNROOTED + "uninstall-cudaenv-install-yes.txt", ["uninstall", "13.0.2", "--yes"])]
    return out


def _checkpoints(scratch: Path):
    import checkpoint_builders as cb

    ok = scratch / "model.pt"
    ok.write_bytes(cb.torch_zip(cb.cnn(prefix="module.")))
    gpu = scratch / "gpu.pt"
    gpu.write_bytes(cb.torch_zip(cb.cnn(location="cuda:1")))
    st = scratch / "model.safetensors"
    st.write_bytes(cb.safetensors_file({"w": ("F32", (2, 2), 16)}))
    out = []
    for label, path in (("prefix", ok), ("gpu", gpu), ("safetensors", st)):
        out.append(("checkpoint-inspect-%s.txt" % label, ["checkpoint", "inspect", str(path)]))
        out.append(("checkpoint-inspect-%s.json" % label, ["checkpoint", "inspect", "--json", str(path)]))
    out += [("checkpoint-fix-strip.txt", ["checkpoint", "fix", str(ok), "--strip-prefix", "module.", "-o", str(scratch / "out.pt")]),
            ("checkpoint-fix-map.json", ["checkpoint", "fix", str(gpu), "--map-location", "cpu", "--json", "-o", str(scratch / "out2.pt")])]
    return out


def run_cli(argv, env, cwd, stdin_text=""):
    """(exit code, stdout, stderr) of ``cudaenv ARGV`` in this process, like the suite's `cli` fixture."""
    from cudaenv.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_stdin, saved_cwd = sys.stdin, os.getcwd()
    sys.stdin = io.StringIO(stdin_text)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):  # argparse prints --help to sys.stdout itself
            try:
                code = main(list(argv), env=env, out=out, err=err)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
    return code, out.getvalue(), err.getvalue()


_CLOCK = re.compile(r'("generated_at": )"[^"]*"')
_HOSTNAME = re.compile(r'("hostname": )"[^"]*"')
_PROM_HOST = re.compile(r'hostname="[^"]*"')
_PROM_CLOCK = re.compile(r"(cudaenv_report_timestamp_seconds) \d+")
_JSON_SECONDS = re.compile(r'("seconds": )[0-9.e-]+')
_RUN_SECONDS = re.compile(r"(\bok, )\d+\.\d+ s\b")


def normalize(text: str, base: Path) -> str:
    """The temporary folders as ``<TMP>`` and ``<TOOLS>``; the doctor's clock, host name and run times blanked."""
    text = text.replace(str(base), "<TMP>").replace(str(Path(TOOLS).parent), "<TOOLS>")
    text = _CLOCK.sub(r'\1"<CLOCK>"', text)
    text = _HOSTNAME.sub(r'\1"<HOST>"', text)
    text = _PROM_CLOCK.sub(r"\1 <CLOCK>", _PROM_HOST.sub('hostname="<HOST>"', text))
    return _RUN_SECONDS.sub(r"\1<N> s", _JSON_SECONDS.sub(r"\g<1>0", text))


def record(argv, code, out, err, base: Path) -> str:
    shown = " ".join(a if len(a) < 60 and "\n" not in a else "<%d chars>" % len(a) for a in argv)
    return normalize("$ cudaenv %s\n[exit %s]\n--- stdout\n%s--- stderr\n%s" % (shown, code, out, err), base)


def bare_interpreter(base: Path) -> str:
    """A venv without pip made from this interpreter: a real Python with no torch (the suite's `bare_python`)."""
    venv = base / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120,
                   env={**os.environ, "PATH": TOOLS})
    return str(venv / "bin" / "python")


def dump(outdir: Path, base: Path, only=None, python=None, extra_env=None) -> list:
    """Write every (machine, command) file under ``outdir``; returns the paths written. ``extra_env`` is added to
    every command's environment (``LANG=zh_CN.UTF-8``: the outputs in Chinese)."""
    extra_env = dict(extra_env or {})
    os.environ["COLUMNS"] = WIDTH  # argparse's help reads the process environment
    python = python or bare_interpreter(base)
    written = []
    machines = build_machines(base, python, only)
    fleet = base / "fleet"
    fleet.mkdir(exist_ok=True)
    for name, box in machines.items():
        scratch = box.base / "scratch"
        scratch.mkdir()
        for fname, argv, rooted in commands_for(box, scratch):
            code, out, err = run_cli(argv, dict(box.full_env(rooted), **extra_env), str(scratch))
            text = record(argv, code, out, err, base)
            written_file = WRITES.get(fname)
            if written_file and (scratch / written_file).exists():
                text += "--- %s\n%s" % (written_file, normalize((scratch / written_file).read_text(), base))
            if fname == "doctor.json" and code in (0, 1):
                (fleet / ("%s.json" % name)).write_text(out)
            written.append(_write(outdir / name / fname, text))
    if only is None or "any" in only:
        scratch = base / "any"
        (scratch / "home").mkdir(parents=True)
        (scratch / "root").mkdir()
        env = {"HOME": str(scratch / "home"), "COLUMNS": WIDTH, "PATH": TOOLS, "SHELL": "/bin/bash",
               "CUDAENV_CACHE_DIR": str(scratch / "cache"), "CUDAENV_DATA_DIR": str(scratch / "data"), **extra_env}
        rooted = dict(env, CUDAENV_ROOT=str(scratch / "root"))
        for fname, argv in machine_free_commands(scratch):
            unrooted = fname.startswith(UNROOTED)
            fname = fname[len(UNROOTED):] if unrooted else fname
            code, out, err = run_cli(argv, env if unrooted else rooted, str(scratch))
            text = record(argv, code, out, err, base)
            if fname.startswith("init-install"):
                text += "--- .bashrc\n%s" % normalize((scratch / "home" / ".bashrc").read_text(), base)
            written.append(_write(outdir / "any" / fname, text))
        if any(fleet.iterdir()):
            for fname, extra in (("fleet.txt", []), ("fleet-all.txt", ["--all"]), ("fleet.json", ["--json"]),
                                 ("fleet.md", ["--format", "markdown"]), ("fleet.html", ["--format", "html"]),
                                 ("fleet-baseline.txt", ["--baseline", str(next(iter(sorted(fleet.iterdir()))))])):
                argv = ["fleet", "summarize", str(fleet)] + extra
                code, out, err = run_cli(argv, rooted, str(scratch))
                written.append(_write(outdir / "fleet" / fname, record(argv, code, out, err, base)))
    return written


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return path


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--only", action="append", help="a machine name (healthy, pascal, ..., any); repeatable")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="add to every command's environment (LANG=zh_CN.UTF-8: the outputs in Chinese); repeatable")
    args = parser.parse_args(argv)
    outdir = Path(args.outdir)
    if outdir.exists():
        shutil.rmtree(outdir)
    base = Path(tempfile.mkdtemp(prefix="cudaenv-dump-"))
    try:
        written = dump(outdir, base, only=set(args.only) if args.only else None,
                       extra_env=dict(item.split("=", 1) for item in args.env))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("wrote %d files under %s" % (len(written), outdir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
