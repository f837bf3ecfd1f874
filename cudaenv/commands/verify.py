"""`cudaenv verify`: prove it works with real work in your Python: every GPU, the CPU, torchrun, nvcc.

* default: one child process per visible GPU (or ``--device 0,2``): allocate, elementwise, matmul fp32 /
  fp16 / bf16 against the CPU, device->host copy, synchronize, TFLOP/s and GB/s, free memory.
* ``--cpu``: the same checks on the CPU (useful everywhere).
* ``--distributed``: torchrun with N ranks (nccl with GPUs, ``--backend gloo`` otherwise): all-reduce,
  broadcast, barrier, each rank's device and NCCL version.
* ``--toolkit``: compile a tiny CUDA program with the active nvcc for the GPUs' architectures, and run it.

Exit 0 when everything asked for passed, 1 when something failed or there is no GPU to verify, 2 on usage errors.
"""

import argparse
import json
from typing import Any, List, Optional

from cudaenv.render.text import paint, wrap, wrap_advice
from cudaenv.text import printable
from cudaenv.version import sm_name

HELP = "run real GPU work in your Python to prove it works"
WIDTH = 80


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.options import add_host_options

    add_host_options(parser)
    parser.add_argument("--device", metavar="LIST", help="devices to check: 0,2 or all (default: every visible GPU)")
    parser.add_argument("--cpu", action="store_true", help="run the same checks on the CPU")
    parser.add_argument("--distributed", action="store_true", help="launch torchrun and check all-reduce, broadcast, barrier")
    parser.add_argument("--nproc", type=int, metavar="N", help="ranks for --distributed (default: visible GPUs; 2 with gloo and no GPU)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), help="process group backend (default nccl, which needs GPUs; gloo runs on the CPU)")
    parser.add_argument("--nccl-debug", action="store_true", help="run the ranks with NCCL_DEBUG=INFO and attach its output")
    parser.add_argument("--toolkit", action="store_true", help="compile (and run) a tiny CUDA program with the active nvcc")
    parser.add_argument("--arch", action="append", default=[], metavar="CC",
                        help="with --toolkit: compile for this compute capability (6.1, sm_61; repeatable) instead of the GPUs'")
    parser.add_argument("--nvcc", metavar="PATH", help="with --toolkit: this nvcc instead of the active one")
    parser.add_argument("--device-timeout", type=float, default=120.0, metavar="SECONDS",
                        help="time allowed per device (and for the whole --distributed run; default 120)")
    parser.add_argument("--size", type=int, default=256, help=argparse.SUPPRESS)
    parser.add_argument("--bench", type=int, default=2048, help=argparse.SUPPRESS)
    parser.add_argument("--hang-rank", type=int, default=None, help=argparse.SUPPRESS)  # tests: a rank that never joins
    parser.add_argument("--json", action="store_true", help="machine-readable results")


def _interpreter(host, explicit: Optional[str]) -> str:
    from cudaenv.errors import UserError
    from cudaenv.probes.python import find_interpreter

    found = find_interpreter(host, explicit)
    if found is None:
        raise UserError("no Python interpreter found to verify", hint="give one with --python /path/to/python")
    return found.path


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.errors import UserError
    from cudaenv import verify as V

    if args.device_timeout <= 0:
        raise UserError("--device-timeout must be more than 0 seconds", hint="for example --device-timeout 300")
    if args.nproc is not None and args.nproc < 1:
        raise UserError("--nproc must be at least 1", hint="for example --nproc 2")
    try:
        devices = V.parse_devices_arg(args.device)
    except ValueError as exc:
        raise UserError("--device %s: %r is not a device number" % (args.device, str(exc)), hint="for example --device 0,2 or --device all") from None
    if args.cpu and args.device:
        raise UserError("--cpu and --device cannot be combined", hint="use one of them")
    host = ctx.host(args)
    if args.timeout is not None:
        host = host.with_deadline(args.timeout)  # --timeout bounds the whole run; each child gets what is left
    if args.toolkit and host.rooted and not args.nvcc:
        raise UserError("verify --toolkit compiles with the inspected root's nvcc, and cudaenv never runs a program found under --root",
                        hint="run `cudaenv verify --toolkit` inside the image (chroot, container), or give --nvcc PATH of a toolkit outside it")
    devices_mode = bool(args.cpu or args.device) or not (args.distributed or args.toolkit)
    python = _interpreter(host, args.python) if (devices_mode or args.distributed) else None
    hardware = None if not args.cpu else ((), ())
    sections = {}
    ok = True
    if devices_mode:
        if hardware is None:
            hardware = V._hardware(host)
        report = V.verify_devices(host, python, devices, cpu=args.cpu, timeout=args.device_timeout,
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
    if args.json:
        ctx.out.write(json.dumps(V.VerifyReport(ok, **sections).to_dict(), indent=2) + "\n")
    else:
        color = ctx.color
        parts = []
        if "devices" in sections:
            parts.append(render_devices(sections["devices"], color))
        if "distributed" in sections:
            parts.append(render_distributed(sections["distributed"], color))
        if "toolkit" in sections:
            parts.append(render_toolkit(sections["toolkit"], color))
        ctx.out.write("\n".join(parts))
    return 0 if ok else 1


def _distributed(host, python: str, args, hardware):
    from cudaenv import verify as V

    backend = args.backend
    nproc = args.nproc
    if backend is None or nproc is None or backend == "nccl":
        report, res = V.probe_info(host, python, timeout=max(30.0, args.device_timeout / 2))
        problem = V.problem_from_report(report, python, res) if not report.info or report.errors else None
        count = int(report.info.get("device_count") or 0) if report.info.get("cuda_available") else 0
        if report.info.get("torch") is None:
            problem = problem or V.problem_from_report(report, python, res)
            return _dist_problem(python, backend or "nccl", nproc or 0, problem)
        if backend is None:
            backend = "nccl"
        if backend == "nccl" and not count:
            problem = _no_gpu_problem(report, python)
            if problem.id in V.NO_GPU_SYMPTOMS:
                problem = V.machine_problem(host, python, problem) or problem
            return _dist_problem(python, backend, nproc or 0, problem, "NCCL needs GPUs; --backend gloo checks the process group on the CPU")
        if nproc is None:
            nproc = count or 2
    if hardware is None and backend == "nccl":
        hardware = V._hardware(host)
    return V.verify_distributed(host, python, nproc, backend, timeout=args.device_timeout, nccl_debug=args.nccl_debug,
                                hang_rank=args.hang_rank, hardware=hardware)


def _no_gpu_problem(report, python):
    from cudaenv import verify as V

    info = report.info
    if not (info.get("cuda") or info.get("hip")):
        err = V.classify("Torch not compiled with CUDA enabled")
        return V.Problem("torch-cpu-only", "torch %s in %s is a CPU-only build" % (info.get("torch"), python), err)
    warnings = [w for w in info.get("warnings") or [] if "CUDA" in w or "NVIDIA" in w]
    message = info.get("cuda_error") or "; ".join(warnings) or "No CUDA GPUs are available"
    err = V.classify(message, fallback="torch-cuda-unavailable")
    return V.Problem(err.id, "torch %s in %s sees no GPU: %s" % (info.get("torch"), python, message), err)


def _dist_problem(python, backend, nproc, problem, hint: str = ""):
    from cudaenv import verify as V

    error = problem.error if problem is not None else V.VerifyError(None, "torch could not be checked in %s" % python)
    message = problem.message if problem is not None else error.message
    if hint:
        message += " (%s)" % hint
    error = V.VerifyError(problem.id if problem else error.id, message, "setup", error.title, error.explanation, error.details, error.advice)
    return V.DistributedReport(python, backend, nproc, False, (), error)


def _toolkit(host, args, hardware):
    from cudaenv import verify as V
    from cudaenv.errors import UserError
    from cudaenv.toolkit_check import arch_from_capability, check_toolkit

    for cap in args.arch:
        if arch_from_capability(cap) is None:
            raise UserError("--arch %s is not a compute capability" % cap, hint="for example --arch 6.1 or --arch sm_90")
    gpus, _ = hardware if hardware is not None else V._hardware(host)
    caps: List[str] = list(args.arch) or [g.compute_capability for g in gpus if getattr(g, "compute_capability", None)]
    nvcc = None
    if args.nvcc:
        import os

        if not os.path.isfile(args.nvcc):
            raise UserError("--nvcc %s does not exist" % args.nvcc, hint="give the path of an nvcc program")
        nvcc = args.nvcc
    return check_toolkit(host, caps, gpu_present=bool(gpus), nvcc=nvcc)


# ----------------------------------------------------------------------------- rendering (pure)
def _mark(ok: Optional[bool], color: bool, skipped: bool = False) -> str:
    if skipped:
        text, code = "skipped", "warning"
    elif ok:
        text, code = "ok", "ok"
    else:
        text, code = "FAILED", "error"
    return paint(text, code, color)


def _wrap(text: str, indent: str) -> List[str]:
    return wrap(printable(text), indent, indent, WIDTH, newlines=False)  # error texts come from the child


def _wrap_item(text: str, first: str, rest: str) -> List[str]:
    return wrap_advice(printable(text), first, rest, WIDTH)  # between shell words only, like explain and the doctor


def render_error(error: Any, indent: str = "  ") -> List[str]:
    if error is None:
        return []
    head = "%serror %s: %s" % (indent, error.id or "(not recognised)", error.title or error.message)
    lines = _wrap(head, "")
    lines = [lines[0]] + ["%s  %s" % (indent, x) for x in lines[1:]]
    if error.title:
        first = next((x.strip() for x in error.message.splitlines() if x.strip()), "")
        lines += _wrap(first, indent + "  ")
    if error.explanation:
        lines += _wrap(error.explanation, indent + "  ")
    for detail in error.details:
        lines += _wrap(detail, indent + "  ")
    if error.advice:
        lines.append(indent + "  What to do:")
        for item in error.advice:
            lines += _wrap_item(item, indent + "    - ", indent + "      ")
    if error.id is None:
        lines += _wrap("cudaenv explain can help with the full message; paste it with: cudaenv explain -", indent + "  ")
    return lines


def _device_header(r) -> str:
    if r.logical is None:
        label = "CPU: %s" % (r.name or "CPU")
    else:
        label = r.device
        if r.physical is not None:
            label += " = GPU %d" % r.physical
        if r.name:
            label += ": %s" % r.name
        if r.capability:
            label += " (%s)" % (sm_name(r.capability) or "sm_" + r.capability.replace(".", ""))
    return printable(label)  # the GPU's name as the child read it


def render_devices(report, color: bool = False) -> str:
    lines: List[str] = []
    torch = report.info.get("torch")
    head = "cudaenv verify: %s" % report.python
    if torch:
        head += ", torch %s" % torch
    lines += _wrap(head, "")
    if report.problem is not None:
        p = report.problem
        lines.append("")
        lines += _wrap("%s: %s" % (_mark(False, color), p.message), "")
        if p.error is not None:
            lines += render_error(p.error)
        lines.append("")
        lines += _wrap("Nothing ran on a GPU (finding %s). `cudaenv verify --cpu` checks the CPU path; "
                       "`cudaenv doctor` explains the whole setup." % (p.id or "unknown"), "")
        return "\n".join(lines) + "\n"
    for r in report.results:
        lines.append("")
        header = _device_header(r)
        mark = _mark(r.ok, color)
        pad = max(1, WIDTH - len(header) - len(_mark(r.ok, False)))
        lines.append(header + " " * pad + mark)
        for c in r.checks:
            status = _mark(c.ok, color, c.skipped)
            plain = _mark(c.ok, False, c.skipped)
            row = "  %-13s %s%s %6.3f s  %s" % (c.name, status, " " * (8 - len(plain)), c.seconds, printable(c.detail))
            lines.append(row if len(row) <= WIDTH + (len(status) - len(plain)) else row[: WIDTH + (len(status) - len(plain)) - 3] + "...")
        figures = []
        if r.tflops is not None:
            figures.append("%.2f TFLOP/s fp32 matmul" % r.tflops)
        if r.gbps is not None:
            figures.append("%.1f GB/s %s" % (r.gbps, "memory copy" if r.logical is None else "device->host"))
        if r.memory_free_mib is not None and r.memory_total_mib:
            figures.append("%.1f of %.1f GiB free" % (r.memory_free_mib / 1024.0, r.memory_total_mib / 1024.0))
        if figures:
            lines += _wrap(", ".join(figures), "  ")
        if r.error is not None:
            lines += render_error(r.error)
            if r.output_tail:
                lines.append("  last output:")
                lines += ["    " + printable(x)[: WIDTH - 4] for x in r.output_tail.splitlines()[-8:]]
    good = sum(1 for r in report.results if r.ok)
    lines.append("")
    if report.ok:
        lines.append("all checks passed on %d device%s" % (good, "" if good == 1 else "s"))
    else:
        lines.append("%d of %d device%s passed" % (good, len(report.results), "" if len(report.results) == 1 else "s"))
    return "\n".join(lines) + "\n"


def render_distributed(report, color: bool = False) -> str:
    if report.ranks or report.nproc:
        lines = ["cudaenv verify --distributed: %d rank%s, backend %s" % (report.nproc, "" if report.nproc == 1 else "s", report.backend)]
    else:  # it could not start: no rank count to report
        lines = ["cudaenv verify --distributed: not run (backend %s)" % report.backend]
    if report.command:
        lines += _wrap(report.command, "  ")
    for r in report.ranks:
        where = r.device or "?"
        if r.physical is not None:
            where += " = GPU %d" % r.physical
        if r.name and r.name != "CPU":
            where += " (%s)" % r.name
        extra = []
        if r.nccl:
            extra.append("NCCL %s" % r.nccl)
        if r.busbw_gbps is not None:
            extra.append("%.2f GB/s all-reduce" % r.busbw_gbps)
        lines.append("  rank %d: %s %s%s" % (r.rank, where, _mark(r.ok, color), ("  " + ", ".join(extra)) if extra else ""))
        if r.error is not None:
            lines += _wrap("%s: %s" % (r.error.stage or "error", r.error.message), "    ")
        else:
            for c in r.checks:
                if not c.ok:
                    lines += _wrap("%s: %s" % (c.name, c.detail), "    ")
    if report.error is not None:
        lines += render_error(report.error)
    if report.output_tail and not report.ok:
        lines.append("  torchrun's last output:")
        lines += ["    " + printable(x)[: WIDTH - 4] for x in report.output_tail.splitlines()[-12:]]
    if report.nccl_debug:
        lines.append("  NCCL_DEBUG=INFO output:")
        lines += ["    " + x for x in report.nccl_debug]
    lines.append("")
    lines.append("distributed check %s" % ("passed" if report.ok else "FAILED"))
    return "\n".join(lines) + "\n"


def render_toolkit(report, color: bool = False) -> str:
    lines = ["cudaenv verify --toolkit: %s%s" % (report.nvcc or "no nvcc", (" (CUDA %s)" % report.version) if report.version else "")]
    for s in report.stages:
        lines.append("  %-8s %s%s %6.2f s  %s" % (s.name, _mark(s.ok, color), " " * (8 - len(_mark(s.ok, False))), s.seconds, printable(s.detail)))
    for d in report.devices:
        if d.get("ok"):
            lines.append("    device %s: %s (%s) ran the kernel" % (d.get("device"), d.get("name"), d.get("capability")))
    if report.note:
        lines += _wrap(report.note, "  ")
    if report.error is not None:
        lines += render_error(report.error)
    lines.append("")
    lines.append("toolkit check %s" % ("passed" if report.ok else "FAILED"))
    return "\n".join(lines) + "\n"
