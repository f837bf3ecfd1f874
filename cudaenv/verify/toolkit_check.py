"""``cudaenv verify --toolkit``: compile a tiny CUDA program with the active nvcc for the GPUs' architectures.

It asks nvcc what it can target (``--list-gpu-code``), compiles one small kernel with ``-arch=sm_XY``
(one GPU architecture) or one ``-gencode`` per architecture, and runs the program when a GPU is
present; with no GPU it compiles for nvcc's default architecture and says that it could not run it.
nvcc's refusals ("Unsupported gpu architecture 'compute_61'" from CUDA 13 for a Pascal card) are
classified by :mod:`cudaenv.explain` like every other error.
"""

import json
import os
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cudaenv import _child  # the one child-script loader: _child.source
from cudaenv.model.record import Record
from cudaenv.core.text import seconds_text
from cudaenv.core.i18n import M
from cudaenv.host import Host
from cudaenv.host.files import scratch_dir
from cudaenv.parse.nvcc import parse_gpu_code_list, parse_nvcc_version
from cudaenv.core.version import sm_name

MARKER = "CUDAENV_TOOLKIT "
COMPILE_TIMEOUT = 300.0
RUN_TIMEOUT = 60.0



class Stage(Record):
    _json_lossy = True  # seconds rounded

    name: str  # nvcc | targets | compile | run
    ok: bool
    seconds: float = 0.0
    detail: str = ""

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        data["seconds"] = round(self.seconds, 3)


class ToolkitReport(Record):
    nvcc: Optional[str]  # as the inspected system names it
    version: Optional[str] = None
    archs: Tuple[str, ...] = ()  # requested: ("sm_61",); () = nvcc's default
    supported: Tuple[str, ...] = ()  # what `nvcc --list-gpu-code` says it can target
    unsupported: Tuple[str, ...] = ()  # requested but not in `supported`
    compiled: bool = False
    ran: Optional[bool] = None  # None: not run (no GPU)
    ok: bool = False
    stages: Tuple[Stage, ...] = ()
    devices: Tuple[Dict[str, Any], ...] = ()  # what the program reported per device
    error: Optional[Any] = None  # cudaenv.verify.VerifyError (read back as its JSON object)
    note: Optional[str] = None
    command: Tuple[str, ...] = ()


# ----------------------------------------------------------------------------- pure parts
def target_archs(capabilities: Sequence[str]) -> Tuple[str, ...]:
    out: List[str] = []
    for cap in capabilities:
        arch = sm_name(cap)
        if arch and arch not in out:
            out.append(arch)
    return tuple(out)


def plan_compile(nvcc: str, source: str, output: str, archs: Sequence[str]) -> List[str]:
    """``nvcc -arch=sm_XY`` for one architecture, one ``-gencode`` per architecture for several, none for the default."""
    argv = [nvcc, "-O2", "-o", output, source]
    if len(archs) == 1:
        argv.insert(1, "-arch=%s" % archs[0])
    else:
        for arch in archs:
            num = arch[3:]
            argv[1:1] = ["-gencode", "arch=compute_%s,code=%s" % (num, arch)]
    return argv


def parse_run_output(text: str) -> Tuple[Dict[str, Any], Tuple[Dict[str, Any], ...]]:
    """The program's JSON lines: (header {runtime, driver, count}, per-device records)."""
    header: Dict[str, Any] = {}
    devices: List[Dict[str, Any]] = []
    for line in (text or "").splitlines():
        if not line.startswith(MARKER):
            continue
        try:
            value = json.loads(line[len(MARKER):])
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        if "count" in value and "device" not in value:
            header = value
        else:
            devices.append(value)
    return header, tuple(devices)


# ----------------------------------------------------------------------------- finding nvcc
def find_nvcc(host: Host) -> Optional[str]:
    """The active nvcc (the toolkits probe's; else PATH inside the root, CUDA_HOME, /usr/local/cuda)."""
    from cudaenv.probes.toolkits import probe_toolkits

    active = probe_toolkits(host, [], install_methods=False).active_toolkit
    if active is not None and active.nvcc:
        return active.nvcc
    on_path = host.which_all_in_root("nvcc")
    if on_path:
        return on_path[0]
    exe = "nvcc.exe" if host.system == "windows" else "nvcc"
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = host.env.get(var)
        if home and host.is_file(host.join(home, "bin", exe)):
            return host.join(home, "bin", exe)
    default = "/usr/local/cuda/bin/nvcc"
    return default if host.system != "windows" and host.is_file(default) else None


# ----------------------------------------------------------------------------- running
def check_toolkit(host: Host, capabilities: Sequence[str] = (), gpu_present: bool = False, nvcc: Optional[str] = None,
                  compile_timeout: float = COMPILE_TIMEOUT, run_timeout: float = RUN_TIMEOUT) -> ToolkitReport:
    """Compile (and with a GPU, run) the test program; ``capabilities`` like ("6.1",) pick the targets."""
    from cudaenv.verify.classify import classify, from_id

    stages: List[Stage] = []
    nvcc = nvcc or find_nvcc(host)
    archs = target_archs(capabilities)
    if nvcc is None:
        err = from_id("nvcc-missing", "no nvcc found on PATH, in CUDA_HOME or at /usr/local/cuda/bin", "nvcc")
        return ToolkitReport(None, archs=archs, error=err, stages=(Stage("nvcc", False, 0.0, err.message),),
                             note="install a CUDA toolkit or put its bin folder on PATH (cudaenv use VERSION)")
    real = host.real(nvcc)
    exe = str(real) if real is not None else nvcc
    res = host.run([exe, "--version"], timeout=max(host.timeout, 15.0))
    version = parse_nvcc_version(res.stdout)
    stages.append(Stage("nvcc", res.ok and version is not None, res.seconds, M("%s: release %s", nvcc, version) if version else res.describe()))
    if not res.ok:
        err = classify(res.output or res.describe(), stage="nvcc")
        return ToolkitReport(nvcc, version, archs, stages=tuple(stages), error=err)
    listing = host.run([exe, "--list-gpu-code"], timeout=max(host.timeout, 15.0))
    supported = parse_gpu_code_list(listing.stdout) if listing.ok else ()
    unsupported = tuple(a for a in archs if supported and a.rstrip("abcdefghijklmnopqrstuvwxyz") not in supported and a not in supported)
    if supported:
        detail = M("nvcc %s targets %s .. %s", version, supported[0], supported[-1])
        if unsupported:
            detail += M("; not %s", ", ".join(unsupported))
        stages.append(Stage("targets", not unsupported, listing.seconds, detail))
    with scratch_dir("cudaenv-nvcc-", {"cudaenv_check.cu": _child.source("check.cu")}) as tmp:
        src = os.path.join(tmp, "cudaenv_check.cu")
        out = os.path.join(tmp, "cudaenv_check.exe" if host.system == "windows" else "cudaenv_check")
        argv = plan_compile(exe, src, out, archs)
        start = time.monotonic()
        comp = host.run(argv, timeout=compile_timeout, cwd=tmp)
        seconds = time.monotonic() - start
        shown = tuple([nvcc] + [a.replace(tmp + os.sep, "") for a in argv[1:]])
        target = ", ".join(archs) if archs else M("nvcc's default architecture")
        if not comp.ok or not os.path.exists(out):
            text = comp.output.strip() or comp.describe()
            err = classify(text, stage="compile")
            if unsupported and err.id is None:
                err = from_id("nvcc-arch-unsupported", text, "compile", {"arch": unsupported[0]})
            stages.append(Stage("compile", False, seconds, text.splitlines()[0] if text else comp.describe()))
            note = None
            if unsupported and supported:
                note = M("nvcc %s cannot compile for %s; it targets %s to %s", version, ", ".join(unsupported), supported[0], supported[-1])
            return ToolkitReport(nvcc, version, archs, supported, unsupported, False, None, False, tuple(stages), (), err, note, shown)
        stages.append(Stage("compile", True, seconds, M("compiled for %s", target)))
        if not gpu_present:
            note = M("compiled for %s, but there is no GPU here, so it could not run", target)
            return ToolkitReport(nvcc, version, archs, supported, unsupported, True, None, True, tuple(stages), (), None, note, shown)
        run = host.run([out], timeout=run_timeout, cwd=tmp)
    header, devices = parse_run_output(run.stdout)
    failed = [d for d in devices if not d.get("ok")]
    ok = run.ok and bool(devices) and not failed
    error = None
    if run.error == "timeout":
        error = classify(M("no progress for %s in stage %s", seconds_text(run.timeout), "run"), stage="run")
    elif failed:
        first = failed[0]
        message = first.get("error") or (M("%s wrong results", first.get("wrong"))) if first.get("error") or first.get("wrong") else M("device %s failed", first.get("device"))
        error = classify(message if isinstance(message, str) else str(message), stage=str(first.get("stage") or "run"))
        if error.id is None and first.get("wrong"):
            error = from_id("wrong-result", M("the compiled kernel gave a wrong result on device %s", first.get("device")), "run")
    elif not run.ok:
        error = classify(run.output or run.describe(), stage="run")
    detail = M("%d device(s) ran the kernel", len([d for d in devices if d.get("ok")])) if ok else (error.message if error else run.describe())
    stages.append(Stage("run", ok, run.seconds, detail))
    return ToolkitReport(nvcc, version, archs, supported, unsupported, True, ok, ok, tuple(stages), devices, error,
                         None if ok else M("compiled for %s, but running it failed", target), shown)
