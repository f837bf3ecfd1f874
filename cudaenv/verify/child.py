"""The child scripts of ``cudaenv verify`` (``cudaenv/_child/verify_device.py``, ``verify_dist.py``): their
environment and command lines (``plan_*``) and what they print, read back (``parse_*``). Pure: nothing runs here.
"""

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from cudaenv.core.i18n import N_, said_again
from cudaenv.verify.records import Check, ChildReport

MARKER = "CUDAENV_VERIFY "
DEFAULT_DEVICE_TIMEOUT = 120.0
DEFAULT_DIST_TIMEOUT = 120.0
NCCL_DEBUG_LINES = 400


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


# What the children (verify_device.py, verify_dist.py) say in their own words, through said() (cudaenv/_child/say.py):
# a check's detail, or an error they word themselves. Each is said again in the reader's language (:func:`_said`).
CHILD_SAYS = frozenset((
    N_("%d x %d fp32 host->device"),
    N_("%d x %d fp32 in CPU memory"),
    N_("max abs difference %.1e"),
    N_("relative error %.2e (limit %.0e)"),
    N_("%d bytes device->host"),
    N_("%d bytes copied"),
    N_("nothing to wait for on the CPU"),
    N_("not supported by this GPU"),
    N_("%d MiB free of %d MiB"),
    N_("timed matmul n=%d, %d MiB copy"),
    N_("no progress for %s s in stage %s (a hung kernel or a wedged GPU)"),
    N_("%s, world size %d"),
    N_("sum of ranks 1..%d = %g (got %g)"),
    N_("%d floats from rank 0"),
    N_("all %d ranks arrived"),
    N_("all-reduce of %d MiB: %.2f GB/s bus bandwidth"),
    N_("rank %s made no progress for %g s in stage %s"),
    N_("torchrun went away; leaving"),
    N_("rank %s was stopped by torchrun in stage %s (another rank failed first)"),
))


def _said(event: Mapping[str, Any], name: str) -> str:
    """The event's ``name`` field as text: a marked message when the child said it with a template of
    :data:`CHILD_SAYS` (and values that make the same English), its English as it is otherwise."""
    return said_again(str(event.get(name) or ""), event.get("said"), CHILD_SAYS)


def _error(event: Dict[str, Any]) -> Dict[str, Any]:
    """An error event with its message said again (:func:`_said`) when the child worded it itself."""
    if "said" in event and isinstance(event.get("message"), str):
        event["message"] = _said(event, "message")
    return event


def _check(event: Mapping[str, Any]) -> Check:
    try:
        seconds = float(event.get("seconds") or 0.0)
    except (TypeError, ValueError):
        seconds = 0.0
    return Check(str(event.get("name") or "?"), bool(event.get("ok")), seconds, _said(event, "detail"),
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
            errors.append(_error(event))
        elif kind == "done":
            done = bool(event.get("ok"))
    return ChildReport(info, device, tuple(checks), figure, memory, tuple(errors), done)



def _tail(text: str, lines: int = 20) -> str:
    kept = [line for line in (text or "").splitlines() if not line.startswith(MARKER)]
    return "\n".join(kept[-lines:])


def _child_deadline(timeout: float) -> float:
    """The child's own watchdog fires before the parent kills it, so that it can say which stage hung."""
    return max(1.0, timeout - 5.0) if timeout > 10 else timeout * 0.8


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
            folded["errors"].append(_error(event))
        elif kind == "done":
            folded["done"] = bool(event.get("ok"))
    return folded


def nccl_debug_lines(output: str, limit: int = NCCL_DEBUG_LINES) -> Tuple[str, ...]:
    lines = [line for line in (output or "").splitlines() if " NCCL " in line or "NCCL INFO" in line or "NCCL WARN" in line]
    return tuple(lines[:limit])

