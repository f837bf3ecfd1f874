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

from cudaenv.core.options import Option, host_options
from cudaenv.core.i18n import M

HELP = "run real GPU work in your Python to prove it works"


OPTIONS = host_options() + (
    Option("--device", metavar="LIST", help="devices to check: 0,2 or all (default: every visible GPU)"),
    Option("--cpu", help="run the same checks on the CPU"),
    Option("--distributed", help="launch torchrun and check all-reduce, broadcast, barrier"),
    Option("--nproc", kind="int", metavar="N", help="ranks for --distributed (default: visible GPUs; 2 with gloo and no GPU)"),
    Option("--backend", choices=("nccl", "gloo"), help="process group backend (default nccl, which needs GPUs; gloo runs on the CPU)"),
    Option("--nccl-debug", help="run the ranks with NCCL_DEBUG=INFO and attach its output"),
    Option("--toolkit", help="compile (and run) a tiny CUDA program with the active nvcc"),
    Option("--arch", append=True, default=(), metavar="CC",
           help="with --toolkit: compile for this compute capability (6.1, sm_61; repeatable) instead of the GPUs'"),
    Option("--nvcc", metavar="PATH", help="with --toolkit: this nvcc instead of the active one"),
    Option("--device-timeout", kind="float", default=120.0, metavar="SECONDS",
           help="time allowed per device (and for the whole --distributed run; default 120)"),
    Option("--size", kind="int", default=256, hidden=True),
    Option("--bench", kind="int", default=2048, hidden=True),
    Option("--hang-rank", kind="int", hidden=True),  # tests: a rank that never joins
    Option("--json", help="machine-readable results"),
)


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.core.errors import UserError
    from cudaenv.render.text import terminal_width
    from cudaenv.render.verify import render_json, render_text
    from cudaenv.verify import Request, parse_devices_arg, run_verify

    if args.device_timeout <= 0:
        raise UserError(M("--device-timeout must be more than 0 seconds"), hint=M("for example --device-timeout 300"))
    if args.nproc is not None and args.nproc < 1:
        raise UserError(M("--nproc must be at least 1"), hint=M("for example --nproc 2"))
    try:
        devices = parse_devices_arg(args.device)
    except ValueError as exc:
        raise UserError(M("--device %s: %r is not a device number", args.device, str(exc)), hint=M("for example --device 0,2 or --device all")) from None
    if args.cpu and args.device:
        raise UserError(M("--cpu and --device cannot be combined"), hint=M("use one of them"))
    host = ctx.host(args)
    if args.timeout is not None:
        host = host.with_deadline(args.timeout)  # --timeout bounds the whole run; each child gets what is left
    if args.toolkit and host.rooted and not args.nvcc:
        raise UserError(M("verify --toolkit compiles with the inspected root's nvcc, and cudaenv never runs a program found under --root"),
                        hint=M("run `cudaenv verify --toolkit` inside the image (chroot, container), or give --nvcc PATH of a toolkit outside it"))
    report = run_verify(host, Request(
        python=args.python, device=args.device, devices=devices, cpu=args.cpu, distributed=args.distributed,
        nproc=args.nproc, backend=args.backend, nccl_debug=args.nccl_debug, toolkit=args.toolkit, arch=tuple(args.arch),
        nvcc=args.nvcc, device_timeout=args.device_timeout, size=args.size, bench=args.bench, hang_rank=args.hang_rank,
    ))
    ctx.out.write(render_json(report) if args.json else render_text(report, ctx.color, terminal_width(ctx.env)))
    return 0 if report.ok else 1
