"""``cudaenv verify``: real work on every device, in the user's interpreter, and across processes.

The work itself happens in child scripts (``cudaenv/_child/verify_device.py`` one process per device,
``verify_dist.py`` one process per torchrun rank), never in cudaenv's own process. This module builds
their command lines (``plan_*``), reads what they printed (``parse_*``), turns it into results
(``*_result``) and classifies failures with :func:`cudaenv.explain.classify_error`, the same ids and
advice as ``cudaenv explain`` and the doctor. ``verify_devices`` / ``verify_distributed`` are the thin
parts that run the children through ``host.run``.
"""

import json
import os
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from cudaenv._child import source as child_source  # the one child-script loader
from cudaenv._record import Record, factory
from cudaenv.host import CommandResult, Host, fmt_seconds, read_regular, scratch_dir

MARKER = "CUDAENV_VERIFY "
DEFAULT_DEVICE_TIMEOUT = 120.0
DEFAULT_DIST_TIMEOUT = 120.0
NCCL_DEBUG_LINES = 400


# ----------------------------------------------------------------------------- results
class Check(Record):
    name: str
    ok: bool
    seconds: float = 0.0
    detail: str = ""
    skipped: bool = False



class VerifyError(Record):
    """Why a device (or rank, or the whole run) failed; ``id`` is an error_patterns id, or None if unrecognised."""

    id: Optional[str]
    message: str
    stage: Optional[str] = None
    title: Optional[str] = None
    explanation: Optional[str] = None
    details: Tuple[str, ...] = ()
    advice: Tuple[str, ...] = ()



class DeviceResult(Record):
    _json_omit = ("output_tail",)
    _json_lossy = True  # seconds rounded

    logical: Optional[int]  # cuda:N; None for --cpu
    physical: Optional[int] = None  # nvidia-smi index of the GPU behind cuda:N
    name: Optional[str] = None
    capability: Optional[str] = None
    ok: bool = False
    checks: Tuple[Check, ...] = ()
    tflops: Optional[float] = None
    gbps: Optional[float] = None
    memory_free_mib: Optional[int] = None
    memory_total_mib: Optional[int] = None
    uuid: Optional[str] = None
    seconds: float = 0.0
    error: Optional[VerifyError] = None
    output_tail: str = ""  # the child's stderr tail when it failed

    @property
    def device(self) -> str:
        return "cpu" if self.logical is None else "cuda:%d" % self.logical

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        """JSON order: ``device`` after ``logical``, ``uuid`` after ``capability``; seconds to the millisecond."""
        data["seconds"] = round(self.seconds, 3)
        order = ("logical", "device", "physical", "name", "capability", "uuid", "ok", "checks", "tflops", "gbps",
                 "memory_free_mib", "memory_total_mib", "seconds", "error")
        data["device"] = self.device
        _reorder(data, order)


class ChildReport(Record):
    """What one verify_device.py run printed."""

    info: Dict[str, Any] = factory(dict)
    device: Dict[str, Any] = factory(dict)
    checks: Tuple[Check, ...] = ()
    figure: Dict[str, Any] = factory(dict)
    memory: Dict[str, Any] = factory(dict)
    errors: Tuple[Dict[str, Any], ...] = ()
    done: Optional[bool] = None  # None: the child never said it finished


class Problem(Record):
    """Why there is nothing to verify on a GPU (no torch, a CPU build, no driver): ``id`` is the doctor's finding id."""

    id: Optional[str]
    message: str
    error: Optional[VerifyError] = None



class DevicesReport(Record):
    _json_lossy = True  # only torch and cuda of the child's info

    python: str
    info: Dict[str, Any] = factory(dict)
    results: Tuple[DeviceResult, ...] = ()
    problem: Optional[Problem] = None

    @property
    def ok(self) -> bool:
        return self.problem is None and bool(self.results) and all(r.ok for r in self.results)

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        """JSON: torch's version and CUDA from the child's info (not the whole info), ``devices`` for the results."""
        info = data.pop("info")
        data.update(torch=info.get("torch"), torch_cuda=info.get("cuda"), ok=self.ok, devices=data.pop("results"))
        _reorder(data, ("python", "torch", "torch_cuda", "ok", "devices", "problem"))

    @classmethod
    def _json_read(cls, data: Dict[str, Any]) -> Dict[str, Any]:
        """The inverse of :meth:`_json_adjust` (the rest of the child's info is not in the JSON)."""
        data = dict(data)
        info = {k: v for k, v in (("torch", data.pop("torch", None)), ("cuda", data.pop("torch_cuda", None))) if v is not None}
        data.update(info=info, results=data.pop("devices", ()))
        return data


def _reorder(data: Dict[str, Any], order: Sequence[str]) -> None:
    """Put ``data``'s keys in ``order`` (the documented JSON order), in place."""
    items = [(k, data.pop(k)) for k in order if k in data] + list(data.items())
    data.clear()
    data.update(items)


# ----------------------------------------------------------------------------- classification
def classify(message: str, extra: str = "", stage: Optional[str] = None, fallback: Optional[str] = None) -> VerifyError:
    """A VerifyError for ``message``, classified on the message first, then on ``extra`` (stderr, traceback)."""
    from cudaenv.explain import classify_error, describe

    match = classify_error(message) or (classify_error(extra) if extra else None)
    if match is None and fallback:
        match = describe(fallback)
    if match is None:
        return VerifyError(None, message, stage)
    return VerifyError(match.id, message, stage, match.title, match.explanation, match.details, match.advice)


def from_id(error_id: str, message: str, stage: Optional[str] = None, values: Optional[Mapping[str, str]] = None) -> VerifyError:
    """A VerifyError for a problem cudaenv found itself (no text to classify)."""
    from cudaenv.explain import describe

    match = describe(error_id, values)
    if match is None:
        return VerifyError(error_id, message, stage)
    return VerifyError(match.id, message, stage, match.title, match.explanation, match.details, match.advice)


# ----------------------------------------------------------------------------- the device child
def child_env(env: Mapping[str, str], nccl_debug: bool = False) -> Dict[str, str]:
    """The environment for a child: the user's, with CUDA_LAUNCH_BLOCKING=1 so errors point at their call."""
    out = dict(env)
    out["CUDA_LAUNCH_BLOCKING"] = "1"
    out["PYTHONUNBUFFERED"] = "1"
    out["PYTHONDONTWRITEBYTECODE"] = "1"
    out.setdefault("PYTHONIOENCODING", "utf-8")
    if nccl_debug:
        out["NCCL_DEBUG"] = "INFO"
    return out


def plan_device_argv(python: str, source: str, device: Optional[int] = None, cpu: bool = False, info: bool = False,
                     deadline: float = DEFAULT_DEVICE_TIMEOUT - 5, size: int = 256, bench: int = 2048) -> List[str]:
    argv = [python, "-c", source]
    if info:
        argv.append("--info")
    elif cpu:
        argv.append("--cpu")
    else:
        argv += ["--device", str(device or 0)]
    argv += ["--size", str(size), "--bench", str(bench), "--deadline", "%g" % max(1.0, deadline)]
    return argv


def _json_lines(text: str, marker: str = "") -> List[Dict[str, Any]]:
    events = []
    for line in (text or "").splitlines():
        if marker:
            pos = line.find(marker)
            if pos < 0:
                continue
            line = line[pos + len(marker):]
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _check(event: Mapping[str, Any]) -> Check:
    try:
        seconds = float(event.get("seconds") or 0.0)
    except (TypeError, ValueError):
        seconds = 0.0
    return Check(str(event.get("name") or "?"), bool(event.get("ok")), seconds, str(event.get("detail") or ""),
                 bool(event.get("skipped")))


def parse_device_output(stdout: str) -> ChildReport:
    """Read verify_device.py's JSON lines (other output, torch's own prints, is ignored)."""
    info: Dict[str, Any] = {}
    device: Dict[str, Any] = {}
    figure: Dict[str, Any] = {}
    memory: Dict[str, Any] = {}
    checks: List[Check] = []
    errors: List[Dict[str, Any]] = []
    done = None
    for event in _json_lines(stdout, MARKER):
        kind = event.pop("event", None)
        if kind == "info":
            info = event
        elif kind == "device":
            device = event
        elif kind == "check":
            checks.append(_check(event))
        elif kind == "figure":
            figure = event
        elif kind == "memory":
            memory = event
        elif kind == "error":
            errors.append(event)
        elif kind == "done":
            done = bool(event.get("ok"))
    return ChildReport(info, device, tuple(checks), figure, memory, tuple(errors), done)


def parse_devices_arg(text: Optional[str]) -> Optional[List[int]]:
    """``--device 0,2`` -> [0, 2]; ``all`` or nothing -> None (every visible device). ValueError when malformed."""
    if text is None or text.strip().lower() in ("", "all"):
        return None
    out: List[int] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part.startswith("cuda:"):
            part = part[5:]
        if not part.isdigit():
            raise ValueError(part or text)
        if int(part) not in out:
            out.append(int(part))
    return out


def _norm_bus(bus: Optional[str]) -> Optional[str]:
    """'00000000:01:00.0' and '0000:01:00.0' -> '01:00.0' (domain dropped, lower case)."""
    if not bus:
        return None
    parts = bus.strip().lower().split(":")
    return ":".join(parts[-2:]) if len(parts) >= 2 else bus.lower()


def map_physical(logical: Optional[int], device: Mapping[str, Any], gpus: Sequence[Any] = (), mapping: Sequence[Any] = ()) -> Tuple[Optional[int], Any]:
    """The nvidia-smi GPU behind cuda:N: by UUID, else PCI bus id, else the CUDA_VISIBLE_DEVICES mapping."""
    if logical is None:
        return None, None
    uuid = (device.get("uuid") or "").lower()
    if uuid:
        for gpu in gpus:
            if (getattr(gpu, "uuid", None) or "").lower() == uuid or uuid in [m.lower() for m in getattr(gpu, "mig_uuids", ()) or ()]:
                return gpu.index, gpu
    bus = _norm_bus(device.get("pci_bus_id"))
    if bus:
        for gpu in gpus:
            if _norm_bus(getattr(gpu, "pci_bus_id", None)) == bus:
                return gpu.index, gpu
    for entry in mapping:
        if getattr(entry, "logical", None) == logical:
            for gpu in gpus:
                if gpu.index == entry.physical:
                    return entry.physical, gpu
            return entry.physical, None
    return None, None


def _tail(text: str, lines: int = 20) -> str:
    kept = [line for line in (text or "").splitlines() if not line.startswith(MARKER)]
    return "\n".join(kept[-lines:])


def device_result(logical: Optional[int], report: ChildReport, result: Optional[CommandResult] = None,
                  gpus: Sequence[Any] = (), mapping: Sequence[Any] = (), timeout: Optional[float] = None) -> DeviceResult:
    """One device's result from what its child printed and how the child ended."""
    physical, gpu = map_physical(logical, report.device, gpus, mapping)
    name = report.device.get("name") or (getattr(gpu, "name", None) if gpu is not None else None)
    capability = report.device.get("capability") or (getattr(gpu, "compute_capability", None) if gpu is not None else None)
    error: Optional[VerifyError] = None
    stderr = result.stderr if result is not None else ""
    label = "cpu" if logical is None else "cuda:%d" % logical
    if report.errors:
        first = report.errors[0]
        message = str(first.get("message") or first.get("type") or "error")
        if first.get("type") and first["type"] not in ("Timeout",) and not message.startswith(first["type"]):
            shown = "%s: %s" % (first["type"], message)
        else:
            shown = message
        error = classify(message, (first.get("traceback") or "") + "\n" + (stderr or ""), first.get("stage"))
        error = VerifyError(error.id, shown, first.get("stage"), error.title, error.explanation, error.details, error.advice)
    elif result is not None and result.error == "timeout":
        message = "no progress for %s s in stage %s" % (fmt_seconds(result.timeout), "import" if not report.info else "device")
        error = classify(message, stage="timeout")
    elif report.done is None:
        code = result.returncode if result is not None else None
        how = "exit status %s" % code if code is not None and code >= 0 else "signal %s" % (-code if code is not None else "?")
        message = "the check process for %s ended without a result (%s)" % (label, how)
        error = classify(message, stage="crash")
        extra = classify(stderr) if stderr else None
        if extra is not None and extra.id is not None:
            error = VerifyError(extra.id, message + ": " + (_tail(stderr, 1) or ""), "crash", extra.title, extra.explanation, extra.details, extra.advice)
    else:
        bad = [c for c in report.checks if not c.ok]
        if bad:
            message = "%s gave a wrong result: %s" % (bad[0].name, bad[0].detail)
            error = classify(message, stage=bad[0].name)
    ok = error is None and report.done is True and all(c.ok for c in report.checks)
    tail = _tail(stderr) if not ok else ""
    return DeviceResult(
        logical=logical, physical=physical, name=name, capability=capability, ok=ok, checks=report.checks,
        tflops=report.figure.get("tflops"), gbps=report.figure.get("gbps"),
        memory_free_mib=report.memory.get("free_mib"), memory_total_mib=report.memory.get("total_mib") or report.device.get("total_memory_mib"),
        uuid=report.device.get("uuid") or (getattr(gpu, "uuid", None) if gpu is not None else None),
        seconds=result.seconds if result is not None else 0.0, error=error, output_tail=tail,
    )


def problem_from_report(report: ChildReport, python: str, result: Optional[CommandResult] = None) -> Optional[Problem]:
    """Why no GPU can be verified at all (no torch, a CPU build, no usable driver); None when GPUs are there."""
    info = report.info
    torch = info.get("torch")
    where = "in %s" % python
    first = report.errors[0] if report.errors else {}
    stage = first.get("stage")
    if stage == "import" and first.get("type") == "Timeout":
        return import_hang(python, result.timeout if result is not None else None)
    if stage == "import":
        message = str(first.get("message") or "")
        err = classify(message, first.get("traceback") or "", "import")
        if err.id == "torch-missing":
            return Problem("torch-missing", "torch is not installed %s" % where, err)
        return Problem(err.id or "torch-import-error", "torch does not import %s: %s" % (where, message), err)
    if not info:
        if result is not None and result.error == "timeout":
            return import_hang(python, result.timeout)
        if result is not None and not result.ok:
            message = "the check process for %s ended without a result (%s)" % (python, result.describe())
            err = classify(message, result.stderr, "start")
            return Problem(err.id, message, err)
        return None
    if stage == "select":
        message = str(first.get("message") or "")
        err = classify(message, "", "select", fallback="torch-cuda-unavailable")
        if err.id == "invalid-device-ordinal":
            return None
        if err.id == "torch-cpu-only" or not (info.get("cuda") or info.get("hip")):
            err = classify("Torch not compiled with CUDA enabled", stage="select")
            return Problem("torch-cpu-only", "torch %s %s is a CPU-only build (torch.version.cuda is None): there is no GPU to verify" % (torch, where), err)
        return Problem(err.id, "torch %s %s (built for CUDA %s) cannot use a GPU here: %s" % (torch, where, info.get("cuda") or info.get("hip"), message), err)
    return None


def import_hang(python: str, seconds: Optional[float]) -> Problem:
    """The interpreter gave no answer while importing torch: named as that, never as a GPU hang."""
    shown = fmt_seconds(seconds) if seconds is not None else "?"
    message = "importing torch in %s hung: no answer within %s s" % (python, shown)
    return Problem("torch-import-hang", message, from_id("torch-import-hang", message, "import", {"python": python, "seconds": shown}))


# What torch says when the machine has no GPU for it; the machine's own reason (the doctor's) comes first.
NO_GPU_SYMPTOMS = ("torch-cpu-only", "torch-cuda-unavailable")  # no-driver already is the machine's reason
MACHINE_SECTIONS = ("environment", "driver")


def machine_problem(host: Host, python: str, symptom: Optional[Problem] = None) -> Optional[Problem]:
    """Why no GPU can run anything on this machine, in the doctor's own words: its first environment or driver
    finding (container-no-gpu, no-driver, driver-not-loaded, ...), else "no GPU" when no driver answers and
    there is no /dev/nvidia* device; None when the machine has a usable GPU (then torch is to blame)."""
    from cudaenv.collect import collect_snapshot
    from cudaenv.diagnose import diagnose

    snapshot = collect_snapshot(host, python=python, quick=True)
    if snapshot.gpus and snapshot.driver is not None:
        return None
    also = ()
    if symptom is not None:
        also = ("torch: %s" % symptom.message,)
    for f in diagnose(snapshot):
        if f.section in MACHINE_SECTIONS and f.severity in ("error", "warning"):
            message = "nothing can run on a GPU here: %s" % f.title
            return Problem(f.id, message, VerifyError(f.id, "nothing can run on a GPU here", "setup", f.title, f.detail, also, tuple(f.fix)))
    if symptom is not None and symptom.id != "torch-cpu-only":
        return None  # a CUDA torch that sees no GPU already says that nvidia-smi and NVML see none either
    if snapshot.driver is None and not snapshot.platform.dev_nvidia:
        message = "nothing can run on a GPU here: no NVIDIA driver answers (nvidia-smi, NVML) and there is no /dev/nvidia* device"
        return Problem("no-gpu", message, VerifyError("no-gpu", message, "setup", "no NVIDIA GPU on this machine", None, also,
                                                      ("cudaenv verify --cpu    (the same checks on the CPU)",)))
    return None


def _child_timeout(host: Host, timeout: float) -> float:
    """``timeout``, cut to what is left of the run's deadline (``--timeout``)."""
    return host.deadline.clip(timeout) if host.deadline is not None else timeout


def _child_deadline(timeout: float) -> float:
    """The child's own watchdog fires before the parent kills it, so that it can say which stage hung."""
    return max(1.0, timeout - 5.0) if timeout > 10 else timeout * 0.8


# ----------------------------------------------------------------------------- running the device checks
def _hardware(host: Host) -> Tuple[Tuple[Any, ...], Tuple[Any, ...]]:
    """The GPUs nvidia-smi / NVML see and the CUDA_VISIBLE_DEVICES mapping (for naming cuda:N); () when none.
    The probes never raise: what they could not learn is a note, and an empty answer here."""
    from cudaenv.probes.nvidia import probe_nvidia
    from cudaenv.probes.visibility import probe_visibility

    gpus = tuple(probe_nvidia(host, []).gpus)
    return gpus, tuple(probe_visibility(host, gpus).mapping)


def verify_devices(host: Host, python: str, devices: Optional[List[int]] = None, cpu: bool = False,
                   timeout: float = DEFAULT_DEVICE_TIMEOUT, size: int = 256, bench: int = 2048,
                   hardware: Optional[Tuple[Sequence[Any], Sequence[Any]]] = None) -> DevicesReport:
    """Run verify_device.py once per device (each in its own process, with its own timeout)."""
    source = child_source("verify_device.py")
    env = child_env(host.env)

    def run_one(logical: Optional[int]) -> Tuple[ChildReport, CommandResult]:
        allowed = _child_timeout(host, timeout)
        argv = plan_device_argv(python, source, device=logical, cpu=logical is None, deadline=_child_deadline(allowed),
                                size=size, bench=bench)
        res = host.run(argv, timeout=allowed, env=env)
        return parse_device_output(res.stdout), res

    if cpu:
        report, res = run_one(None)
        if not report.info:
            problem = problem_from_report(report, python, res)
            if problem is not None:
                return DevicesReport(python, report.info, (), problem)
        return DevicesReport(python, report.info, (device_result(None, report, res, timeout=timeout),), None)
    gpus, mapping = hardware if hardware is not None else _hardware(host)
    order = list(devices) if devices else [0]
    first_report, first_res = run_one(order[0])
    problem = problem_from_report(first_report, python, first_res)
    if problem is not None:
        if problem.id in NO_GPU_SYMPTOMS and not gpus:
            machine = machine_problem(host, python, problem)
            if machine is not None:
                problem = machine
            elif problem.id == "torch-cuda-unavailable":
                problem = Problem(problem.id, problem.message + "; nvidia-smi and NVML show no GPU either "
                                  "(cudaenv doctor tells whether the driver or the GPU is missing)", problem.error)
        return DevicesReport(python, first_report.info, (), problem)
    results = [device_result(order[0], first_report, first_res, gpus, mapping, timeout)]
    info = first_report.info
    if not devices:
        count = int(info.get("device_count") or 0)
        order = list(range(count))
    for logical in order[1:]:
        report, res = run_one(logical)
        results.append(device_result(logical, report, res, gpus, mapping, timeout))
    return DevicesReport(python, info, tuple(results), None)


def probe_info(host: Host, python: str, timeout: float = 60.0) -> Tuple[ChildReport, CommandResult]:
    """verify_device.py --info: torch version, CUDA build, device count, arch list (imports torch in the child)."""
    timeout = _child_timeout(host, timeout)
    argv = plan_device_argv(python, child_source("verify_device.py"), info=True, deadline=max(0.8 * timeout, timeout - 2))
    res = host.run(argv, timeout=timeout, env=child_env(host.env))
    return parse_device_output(res.stdout), res


# ----------------------------------------------------------------------------- distributed
class RankResult(Record):
    rank: int
    local_rank: Optional[int] = None
    device: Optional[str] = None
    physical: Optional[int] = None
    name: Optional[str] = None
    nccl: Optional[str] = None
    ok: bool = False
    checks: Tuple[Check, ...] = ()
    busbw_gbps: Optional[float] = None
    error: Optional[VerifyError] = None



class DistributedReport(Record):
    _json_lossy = True  # seconds rounded, the output tail of a run that passed

    python: str
    backend: str
    nproc: int
    ok: bool = False
    ranks: Tuple[RankResult, ...] = ()
    error: Optional[VerifyError] = None
    command: str = ""
    seconds: float = 0.0
    output_tail: str = ""
    nccl_debug: Tuple[str, ...] = ()

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        """JSON: seconds to the millisecond; the output tail only when the run failed."""
        data["seconds"] = round(self.seconds, 3)
        data["output_tail"] = self.output_tail if not self.ok else ""


class VerifyReport(Record):
    """``cudaenv verify --json``: ``ok``, then one section per check that ran."""

    _json_envelope = True
    _json_skip_none = ("devices", "distributed", "toolkit")

    ok: bool
    devices: Optional[DevicesReport] = None
    distributed: Optional[DistributedReport] = None
    toolkit: Optional[Any] = None  # cudaenv.toolkit_check.ToolkitReport


def plan_distributed_argv(python: str, script: str, nproc: int, backend: str, results_dir: str, deadline: float,
                          hang_rank: Optional[int] = None) -> List[str]:
    """``python -m torch.distributed.run --standalone --nproc_per_node N verify_dist.py ...``."""
    argv = [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc), script,
            "--backend", backend, "--results", results_dir, "--deadline", "%g" % deadline]
    if hang_rank is not None:
        argv += ["--hang-rank", str(hang_rank)]
    return argv


def parse_rank_events(text: str) -> Dict[str, Any]:
    """One rank's JSON lines, folded: {"start", "info", "checks", "figure", "errors", "done"}."""
    folded: Dict[str, Any] = {"start": {}, "info": {}, "checks": [], "figure": {}, "errors": [], "done": None}
    for event in _json_lines(text):
        kind = event.pop("event", None)
        if kind in ("start", "info", "figure"):
            folded[kind] = event
        elif kind == "check":
            folded["checks"].append(_check(event))
        elif kind == "error":
            folded["errors"].append(event)
        elif kind == "done":
            folded["done"] = bool(event.get("ok"))
    return folded


def nccl_debug_lines(output: str, limit: int = NCCL_DEBUG_LINES) -> Tuple[str, ...]:
    lines = [line for line in (output or "").splitlines() if " NCCL " in line or "NCCL INFO" in line or "NCCL WARN" in line]
    return tuple(lines[:limit])


def distributed_result(python: str, backend: str, nproc: int, rank_texts: Mapping[int, str], result: CommandResult,
                       timeout: float, command: str = "", gpus: Sequence[Any] = (), mapping: Sequence[Any] = (),
                       nccl_debug: bool = False) -> DistributedReport:
    output = result.output
    ranks: List[RankResult] = []
    for rank in range(nproc):
        text = rank_texts.get(rank)
        if text is None:
            ranks.append(RankResult(rank, error=VerifyError(None, "rank %d did not start or wrote nothing" % rank, "start")))
            continue
        folded = parse_rank_events(text)
        info, start = folded["info"], folded["start"]
        error = None
        if folded["errors"]:
            first = folded["errors"][0]
            message = str(first.get("message") or first.get("type") or "error")
            err = classify(message, (first.get("traceback") or "") + "\n" + output, first.get("stage"))
            shown = message if first.get("type") in (None, "Timeout", "Orphaned") or message.startswith(str(first.get("type"))) else "%s: %s" % (first["type"], message)
            error = VerifyError(err.id, shown, first.get("stage"), err.title, err.explanation, err.details, err.advice)
        elif folded["done"] is None:
            error = VerifyError(None, "rank %d ended without a result" % rank, "crash")
        else:
            bad = [c for c in folded["checks"] if not c.ok]
            if bad:
                error = classify("%s gave a wrong result: %s" % (bad[0].name, bad[0].detail), stage=bad[0].name)
        local = start.get("local_rank")
        physical = None
        if info.get("device", "cpu") != "cpu" and local is not None:
            physical, _ = map_physical(int(local), info, gpus, mapping)
        ranks.append(RankResult(rank, local, info.get("device"), physical, info.get("device_name"), info.get("nccl"),
                                error is None and folded["done"] is True, tuple(folded["checks"]),
                                folded["figure"].get("busbw_gbps"), error))
    overall: Optional[VerifyError] = None
    secondary = ("Terminated", "Orphaned")
    rank_errors = [r.error for r in ranks if r.error is not None and r.error.stage != "start"]
    primary = [e for e in rank_errors if not e.message.startswith(secondary) and "was stopped by torchrun" not in e.message]
    if result.error == "timeout":
        overall = from_id("dist-timeout", "the ranks did not finish within %s s; all were stopped" % fmt_seconds(timeout), "timeout")
    elif result.error is not None:
        overall = VerifyError(None, result.describe(), "launch")
    elif not result.ok and not rank_errors:
        overall = classify("torchrun exited with status %s" % result.returncode, output, "launch")
    ok = result.ok and all(r.ok for r in ranks)
    if not ok and overall is None:
        chosen = (primary or rank_errors or [None])[0]
        if chosen is not None:
            overall = chosen
        else:
            overall = classify("torchrun exited with status %s" % result.returncode, output, "launch")
    return DistributedReport(python, backend, nproc, ok, tuple(ranks), overall, command, result.seconds,
                             _tail(output, 30), nccl_debug_lines(output) if nccl_debug else ())


def verify_distributed(host: Host, python: str, nproc: int, backend: str, timeout: float = DEFAULT_DIST_TIMEOUT,
                       nccl_debug: bool = False, hang_rank: Optional[int] = None,
                       hardware: Optional[Tuple[Sequence[Any], Sequence[Any]]] = None) -> DistributedReport:
    """Launch torchrun with verify_dist.py in the probed interpreter; every rank reports into a temp dir."""
    timeout = _child_timeout(host, timeout)
    deadline = max(5.0, timeout - 10.0) if timeout > 20 else max(min(2.0, timeout * 0.8), timeout * 0.6)
    gpus, mapping = hardware if hardware is not None else ((), ())
    if hardware is None and backend == "nccl":
        gpus, mapping = _hardware(host)
    with scratch_dir("cudaenv-verify-", {"verify_dist.py": child_source("verify_dist.py")}) as tmp:
        script = os.path.join(tmp, "verify_dist.py")
        results_dir = os.path.join(tmp, "results")
        os.makedirs(results_dir)
        argv = plan_distributed_argv(python, script, nproc, backend, results_dir, deadline, hang_rank)
        env = child_env(host.env, nccl_debug)
        env.setdefault("OMP_NUM_THREADS", "1")
        result = host.run(argv, timeout=timeout, env=env, cwd=tmp)
        texts: Dict[int, str] = {}
        for name in os.listdir(results_dir):
            if name.startswith("rank-") and name.endswith(".jsonl"):
                data = read_regular(os.path.join(results_dir, name))
                if data is not None and name[5:-6].isdigit():
                    texts[int(name[5:-6])] = data.decode("utf-8", errors="replace")
    shown = " ".join(shlex.quote(a) for a in argv[:6]) + " verify_dist.py --backend %s" % backend
    return distributed_result(python, backend, nproc, texts, result, timeout, shown, gpus, mapping, nccl_debug)
