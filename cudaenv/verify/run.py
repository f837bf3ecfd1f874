"""Running ``cudaenv verify``: the device children, torchrun and the toolkit check, through ``host.run`` (each
with its own timeout, cut to the run's deadline), and :func:`run_verify`, the one call ``commands/verify.py`` makes.
"""

import os
import shlex
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cudaenv import _child  # the one child-script loader: _child.source
from cudaenv.model.record import Record
from cudaenv.host import Host
from cudaenv.host.files import read_regular, scratch_dir
from cudaenv.host.process import CommandResult
from cudaenv.verify.child import (
    DEFAULT_DEVICE_TIMEOUT,
    DEFAULT_DIST_TIMEOUT,
    _child_deadline,
    child_env,
    parse_device_output,
    plan_device_argv,
    plan_distributed_argv,
)
from cudaenv.verify.classify import (
    MACHINE_SECTIONS,
    NO_GPU_SYMPTOMS,
    _dist_problem,
    _no_gpu_problem,
    device_result,
    distributed_result,
    problem_from_report,
)
from cudaenv.verify.records import ChildReport, DevicesReport, DistributedReport, Problem, VerifyError, VerifyReport
from cudaenv.core.i18n import M


def machine_problem(host: Host, python: str, symptom: Optional[Problem] = None) -> Optional[Problem]:
    """Why no GPU can run anything on this machine, in the doctor's own words: its first environment or driver
    finding (container-no-gpu, no-driver, driver-not-loaded, ...), else "no GPU" when no driver answers and
    there is no /dev/nvidia* device; None when the machine has a usable GPU (then torch is to blame)."""
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.diagnose import diagnose

    snapshot = collect_snapshot(host, python=python, quick=True)
    if snapshot.gpus and snapshot.driver is not None:
        return None
    also = ()
    if symptom is not None:
        also = (M("torch: %s", symptom.message),)
    for f in diagnose(snapshot):
        if f.section in MACHINE_SECTIONS and f.severity in ("error", "warning"):
            message = M("nothing can run on a GPU here: %s", f.title)
            return Problem(f.id, message, VerifyError(f.id, M("nothing can run on a GPU here"), "setup", f.title, f.detail, also,
                                                      fix=tuple(f.fix)))
    if symptom is not None and symptom.id != "torch-cpu-only":
        return None  # a CUDA torch that sees no GPU already says that nvidia-smi and NVML see none either
    if snapshot.driver is None and not snapshot.platform.dev_nvidia:
        message = M("nothing can run on a GPU here: no NVIDIA driver answers (nvidia-smi, NVML) and there is no /dev/nvidia* "
                    "device")
        return Problem("no-gpu", message, VerifyError("no-gpu", message, "setup", M("no NVIDIA GPU on this machine"), None, also,
                                                      (M("cudaenv verify --cpu    (the same checks on the CPU)"),)))
    return None


def _child_timeout(host: Host, timeout: float) -> float:
    """``timeout``, cut to what is left of the run's deadline (``--timeout``)."""
    return host.deadline.clip(timeout) if host.deadline is not None else timeout


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
    source = _child.source("verify_device.py")
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
                problem = Problem(problem.id, problem.message + M("; nvidia-smi and NVML show no GPU either "
                                  "(cudaenv doctor tells whether the driver or the GPU is missing)"), problem.error)
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
    argv = plan_device_argv(python, _child.source("verify_device.py"), info=True, deadline=max(0.8 * timeout, timeout - 2))
    res = host.run(argv, timeout=timeout, env=child_env(host.env))
    return parse_device_output(res.stdout), res


def verify_distributed(host: Host, python: str, nproc: int, backend: str, timeout: float = DEFAULT_DIST_TIMEOUT,
                       nccl_debug: bool = False, hang_rank: Optional[int] = None,
                       hardware: Optional[Tuple[Sequence[Any], Sequence[Any]]] = None) -> DistributedReport:
    """Launch torchrun with verify_dist.py in the probed interpreter; every rank reports into a temp dir."""
    timeout = _child_timeout(host, timeout)
    deadline = max(5.0, timeout - 10.0) if timeout > 20 else max(min(2.0, timeout * 0.8), timeout * 0.6)
    gpus, mapping = hardware if hardware is not None else ((), ())
    if hardware is None and backend == "nccl":
        gpus, mapping = _hardware(host)
    with scratch_dir("cudaenv-verify-", {"verify_dist.py": _child.source("verify_dist.py")}) as tmp:
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


# ----------------------------------------------------------------------------- the command's one call
class Request(Record):
    """What ``cudaenv verify`` was asked (its options, already checked); the attribute names are the options'."""

    python: Optional[str] = None  # --python: None finds the interpreter as the doctor does
    device: Optional[str] = None  # --device LIST as given
    devices: Optional[List[int]] = None  # parse_devices_arg(device)
    cpu: bool = False
    distributed: bool = False
    nproc: Optional[int] = None
    backend: Optional[str] = None
    nccl_debug: bool = False
    toolkit: bool = False
    arch: Tuple[str, ...] = ()
    nvcc: Optional[str] = None
    device_timeout: float = DEFAULT_DEVICE_TIMEOUT
    size: int = 256
    bench: int = 2048
    hang_rank: Optional[int] = None


def run_verify(host: Host, args: Request) -> VerifyReport:
    """Every check ``args`` asks for (the devices by default), each section in the report; ``ok`` when all passed.
    A :class:`cudaenv.core.errors.UserError` when there is no interpreter or an ``--arch`` / ``--nvcc`` is wrong."""
    devices_mode = bool(args.cpu or args.device) or not (args.distributed or args.toolkit)
    python = _interpreter(host, args.python) if (devices_mode or args.distributed) else None
    hardware = None if not args.cpu else ((), ())
    sections: Dict[str, Any] = {}
    ok = True
    if devices_mode:
        if hardware is None:
            hardware = _hardware(host)
        report = verify_devices(host, python, args.devices, cpu=args.cpu, timeout=args.device_timeout,
                                size=args.size, bench=args.bench, hardware=hardware)
        sections["devices"] = report
        ok = ok and report.ok
    if args.distributed:
        dist = _distributed(host, python, args, None if args.cpu else hardware)
        sections["distributed"] = dist
        ok = ok and dist.ok
    if args.toolkit:
        tk = _toolkit(host, args, None if args.cpu else hardware)
        sections["toolkit"] = tk
        ok = ok and tk.ok
    return VerifyReport(ok, **sections)


def _interpreter(host, explicit: Optional[str]) -> str:
    from cudaenv.core.errors import UserError
    from cudaenv.probes.python import find_interpreter

    found = find_interpreter(host, explicit)
    if found is None:
        raise UserError(M("no Python interpreter found to verify"), hint=M("give one with --python /path/to/python"))
    return found.path


def _distributed(host, python: str, args, hardware):
    backend = args.backend
    nproc = args.nproc
    if backend is None or nproc is None or backend == "nccl":
        report, res = probe_info(host, python, timeout=max(30.0, args.device_timeout / 2))
        problem = problem_from_report(report, python, res) if not report.info or report.errors else None
        count = int(report.info.get("device_count") or 0) if report.info.get("cuda_available") else 0
        if report.info.get("torch") is None:
            problem = problem or problem_from_report(report, python, res)
            return _dist_problem(python, backend or "nccl", nproc or 0, problem)
        if backend is None:
            backend = "nccl"
        if backend == "nccl" and not count:
            problem = _no_gpu_problem(report, python)
            if problem.id in NO_GPU_SYMPTOMS:
                problem = machine_problem(host, python, problem) or problem
            return _dist_problem(python, backend, nproc or 0, problem, M("NCCL needs GPUs; --backend gloo checks the process group on the CPU"))
        if nproc is None:
            nproc = count or 2
    if hardware is None and backend == "nccl":
        hardware = _hardware(host)
    return verify_distributed(host, python, nproc, backend, timeout=args.device_timeout, nccl_debug=args.nccl_debug,
                              hang_rank=args.hang_rank, hardware=hardware)


def _toolkit(host, args, hardware):
    from cudaenv.core.errors import UserError
    from cudaenv.core.version import sm_name
    from cudaenv.verify.toolkit_check import check_toolkit

    for cap in args.arch:
        if sm_name(cap) is None:
            raise UserError(M("--arch %s is not a compute capability", cap), hint=M("for example --arch 6.1 or --arch sm_90"))
    gpus, _ = hardware if hardware is not None else _hardware(host)
    caps: List[str] = list(args.arch) or [g.compute_capability for g in gpus if getattr(g, "compute_capability", None)]
    nvcc = None
    if args.nvcc:
        if not os.path.isfile(args.nvcc):
            raise UserError(M("--nvcc %s does not exist", args.nvcc), hint=M("give the path of an nvcc program"))
        nvcc = args.nvcc
    return check_toolkit(host, caps, gpu_present=bool(gpus), nvcc=nvcc)


def probe_facts(host, python_arg):
    """``cudaenv explain --probe``: what torch in the user's Python says of this machine (verify_device.py's ``info``),
    or why it could not say (``import_error``)."""
    from cudaenv.probes.python import find_interpreter

    interp = find_interpreter(host, python_arg)
    if interp is None:
        return {"python": None, "import_error": "no Python interpreter found"}
    report, res = probe_info(host, interp.path, timeout=max(30.0, host.timeout))
    facts = dict(report.info)
    if not facts:
        from cudaenv.verify.classify import problem_from_report

        problem = problem_from_report(report, interp.path, res)  # names a hang at `import torch` as such
        errors = report.errors
        message = errors[0].get("message") if errors else res.describe()
        if problem is not None and problem.id == "torch-import-hang":
            message = problem.message
        facts = {"python": interp.path, "import_error": message}
    return facts
