"""From what the verify children printed (and how they ended) to results: each failure classified with
:func:`cudaenv.explain.classify_error`, the same ids and advice as ``cudaenv explain`` and the doctor. Pure:
the runs themselves are :mod:`cudaenv.verify.run`.
"""

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from cudaenv.model.record import replace
from cudaenv.core.text import seconds_text
from cudaenv.core.i18n import M
from cudaenv.host.process import CommandResult
from cudaenv.verify.child import _tail, nccl_debug_lines, parse_rank_events
from cudaenv.verify.records import ChildReport, DeviceResult, DistributedReport, Problem, RankResult, VerifyError


def _message(event: Mapping[str, Any]) -> str:
    """A child's error event's message: the text as parsed (a marked message when the child worded it, see
    :func:`cudaenv.verify.child._said`), else its exception type, else "error"."""
    message = event.get("message")
    return message if isinstance(message, str) and message else str(message or event.get("type") or "error")


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
        message = _message(first)
        if first.get("type") and first["type"] not in ("Timeout",) and not message.startswith(first["type"]):
            shown = "%s: " % first["type"] + message  # a message the child worded stays marked; the type as it is
        else:
            shown = message
        error = classify(message, (first.get("traceback") or "") + "\n" + (stderr or ""), first.get("stage"))
        error = replace(error, message=shown, stage=first.get("stage"))
    elif result is not None and result.error == "timeout":
        message = M("no progress for %s in stage %s", seconds_text(result.timeout), "import" if not report.info else "device")
        error = classify(message, stage="timeout")
    elif report.done is None:
        code = result.returncode if result is not None else None
        how = M("exit status %s", code) if code is not None and code >= 0 else M("signal %s", -code if code is not None else "?")
        message = M("the check process for %s ended without a result (%s)", label, how)
        error = classify(message, stage="crash")
        extra = classify(stderr) if stderr else None
        if extra is not None and extra.id is not None:
            error = replace(extra, message=message + ": " + (_tail(stderr, 1) or ""), stage="crash")
    else:
        bad = [c for c in report.checks if not c.ok]
        if bad:
            message = M("%s gave a wrong result: %s", bad[0].name, bad[0].detail)
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
    first = report.errors[0] if report.errors else {}
    stage = first.get("stage")
    if stage == "import" and first.get("type") == "Timeout":
        return import_hang(python, result.timeout if result is not None else None)
    if stage == "import":
        message = str(first.get("message") or "")
        err = classify(message, first.get("traceback") or "", "import")
        if err.id == "torch-missing":
            return Problem("torch-missing", M("torch is not installed in %s", python), err)
        return Problem(err.id or "torch-import-error", M("torch does not import in %s: %s", python, message), err)
    if not info:
        if result is not None and result.error == "timeout":
            return import_hang(python, result.timeout)
        if result is not None and not result.ok:
            message = M("the check process for %s ended without a result (%s)", python, result.describe())
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
            return Problem("torch-cpu-only", M("torch %s in %s is a CPU-only build (torch.version.cuda is None): there is no GPU to verify", torch, python), err)
        return Problem(err.id, M("torch %s in %s (built for CUDA %s) cannot use a GPU here: %s", torch, python, info.get("cuda") or info.get("hip"), message), err)
    return None


def import_hang(python: str, seconds: Optional[float]) -> Problem:
    """The interpreter gave no answer while importing torch: named as that, never as a GPU hang."""
    shown = seconds_text(seconds, unit="") if seconds is not None else "?"
    message = M("importing torch in %s hung: no answer within %s s", python, shown)
    return Problem("torch-import-hang", message, from_id("torch-import-hang", message, "import", {"python": python, "seconds": shown}))


# What torch says when the machine has no GPU for it; the machine's own reason (the doctor's) comes first.
NO_GPU_SYMPTOMS = ("torch-cpu-only", "torch-cuda-unavailable")  # no-driver already is the machine's reason
MACHINE_SECTIONS = ("environment", "driver", "containers")


SECONDARY_TYPES = ("Terminated", "Orphaned")  # _child/verify_dist.py's events of a rank stopped from outside


def distributed_result(python: str, backend: str, nproc: int, rank_texts: Mapping[int, str], result: CommandResult,
                       timeout: float, command: str = "", gpus: Sequence[Any] = (), mapping: Sequence[Any] = (),
                       nccl_debug: bool = False) -> DistributedReport:
    output = result.output
    ranks: List[RankResult] = []
    secondary = set()  # ranks that only stopped because another failed: the child's Terminated / Orphaned events
    for rank in range(nproc):
        text = rank_texts.get(rank)
        if text is None:
            ranks.append(RankResult(rank, error=VerifyError(None, M("rank %d did not start or wrote nothing", rank), "start")))
            continue
        folded = parse_rank_events(text)
        info, start = folded["info"], folded["start"]
        error = None
        if folded["errors"]:
            first = folded["errors"][0]
            if first.get("type") in SECONDARY_TYPES:
                secondary.add(rank)
            message = _message(first)
            err = classify(message, (first.get("traceback") or "") + "\n" + output, first.get("stage"))
            shown = message if first.get("type") in (None, "Timeout", "Orphaned") or message.startswith(str(first.get("type"))) else "%s: " % first["type"] + message
            error = replace(err, message=shown, stage=first.get("stage"))
        elif folded["done"] is None:
            error = VerifyError(None, M("rank %d ended without a result", rank), "crash")
        else:
            bad = [c for c in folded["checks"] if not c.ok]
            if bad:
                error = classify(M("%s gave a wrong result: %s", bad[0].name, bad[0].detail), stage=bad[0].name)
        local = start.get("local_rank")
        physical = None
        if info.get("device", "cpu") != "cpu" and local is not None:
            physical, _ = map_physical(int(local), info, gpus, mapping)
        ranks.append(RankResult(rank, local, info.get("device"), physical, info.get("device_name"), info.get("nccl"),
                                error is None and folded["done"] is True, tuple(folded["checks"]),
                                folded["figure"].get("busbw_gbps"), error))
    overall: Optional[VerifyError] = None
    rank_errors = [r.error for r in ranks if r.error is not None and r.error.stage != "start"]
    primary = [r.error for r in ranks if r.error is not None and r.error.stage != "start" and r.rank not in secondary]
    if result.error == "timeout":
        overall = from_id("dist-timeout", M("the ranks did not finish within %s; all were stopped", seconds_text(timeout)), "timeout")
    elif result.error is not None:
        overall = VerifyError(None, result.describe(), "launch")
    elif not result.ok and not rank_errors:
        overall = classify(M("torchrun exited with status %s", result.returncode), output, "launch")
    ok = result.ok and all(r.ok for r in ranks)
    if not ok and overall is None:
        chosen = (primary or rank_errors or [None])[0]
        if chosen is not None:
            overall = chosen
        else:
            overall = classify(M("torchrun exited with status %s", result.returncode), output, "launch")
    return DistributedReport(python, backend, nproc, ok, tuple(ranks), overall, command, result.seconds,
                             _tail(output, 30), nccl_debug_lines(output) if nccl_debug else ())


def _no_gpu_problem(report, python):
    info = report.info
    if not (info.get("cuda") or info.get("hip")):
        err = classify("Torch not compiled with CUDA enabled")
        return Problem("torch-cpu-only", M("torch %s in %s is a CPU-only build", info.get("torch"), python), err)
    warnings = [w for w in info.get("warnings") or [] if "CUDA" in w or "NVIDIA" in w]
    message = info.get("cuda_error") or "; ".join(warnings) or "No CUDA GPUs are available"
    err = classify(message, fallback="torch-cuda-unavailable")
    return Problem(err.id, M("torch %s in %s sees no GPU: %s", info.get("torch"), python, message), err)


def _dist_problem(python, backend, nproc, problem, hint: str = ""):
    error = problem.error if problem is not None else VerifyError(None, M("torch could not be checked in %s", python))
    message = problem.message if problem is not None else error.message
    if hint:
        message += M(" (%s)", hint)
    error = replace(error, id=problem.id if problem else error.id, message=message, stage="setup")
    return DistributedReport(python, backend, nproc, False, (), error)
