"""`cudaenv fix`: a guided fix for a torch that cannot use the GPU.

Runs the doctor; for each fixable torch finding it shows the diagnosis and offers the recommended build, the
other builds that fit, or "fix the driver instead" (:mod:`cudaenv.fix.plan`). It confirms, runs the
install through the Host (:mod:`cudaenv.fix.apply`), probes again and runs `cudaenv verify`.
``--yes`` takes the recommendation, ``--dry-run`` only prints the plan; with no terminal and no ``--yes`` it
prints the plan and exits 1. An externally managed system Python (PEP 668) gets the venv recipe instead.
"""

import argparse
from typing import Any, Optional, Sequence

from cudaenv.commands import _prompt as prompt

from cudaenv.core.config import TORCH_INDEX
from cudaenv.core.errors import UserError
from cudaenv.core.options import Option, host_options
from cudaenv.core.i18n import M

HELP = "guided fix for a CPU-only or wrong-CUDA torch"
OPTIONS = host_options() + (
    Option("--yes", "-y", dest="yes", help="take the recommendation without asking"),
    Option("--dry-run", help="only print the plan"),
    Option("--torch", metavar="VERSION", help="install this torch release instead of the installed one (2.7.1, 2.7, latest)"),
    Option("--index-base", metavar="URL", help=M("wheel index base instead of %s (env: CUDAENV_TORCH_INDEX)", TORCH_INDEX)),
    Option("--mirror", metavar="NAME|URL", help="install from this PyTorch wheel mirror: nju, aliyun, sjtu (data/torch_mirrors.json) or its URL"),
    Option("--refresh", help="read the live index before deciding"),
    Option("--no-verify", help="do not run `cudaenv verify` after the install"),
)


def run(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.diagnose import diagnose
    from cudaenv.recommend import service
    from cudaenv.facts.findings import is_fixable
    from cudaenv.fix.plan import pep668_recipe, plan_fix
    from cudaenv.render import fix as render

    interpreter, what_if = service.split_python(args.python)
    if what_if:
        raise UserError(M("`cudaenv fix --python` needs an interpreter, not a version"), hint=M("for example --python .venv/bin/python"))
    mirror = service.mirror_for(args.mirror)
    base = mirror.base if mirror is not None else service.index_base(ctx.env, args.index_base)
    host = ctx.host(args)
    out = ctx.out
    from cudaenv.render.text import terminal_width

    width = terminal_width(ctx.env)
    out.write(render.PROBING)
    out.flush()
    snapshot = collect_snapshot(host, python=interpreter, quick=False)
    fixable = [f for f in diagnose(snapshot) if is_fixable(f.id)]
    torch = snapshot.torch
    if not fixable:
        out.write(render.render_nothing_to_fix(torch, width))
        return 0
    out.write(render.render_findings(fixable, width))
    if torch is None or not torch.python:
        raise UserError(M("no Python interpreter to fix"), hint=M("give one with --python PATH"))

    index_data, notes, _ = service.load_index_data(ctx.env, base, args.refresh, service.index_timeout(ctx.env))
    options = service.Options(torch=args.torch, index_base=args.index_base, mirror=args.mirror)
    plan = plan_fix(service.request_for(options, ctx.env, host, snapshot, None), fixable, index_data, snapshot.platform)
    out.write(render.render_plan(torch.python, plan, notes, width))
    installable = plan.installable
    if torch.externally_managed and not torch.in_virtualenv:
        out.write(render.render_pep668(torch.python, pep668_recipe(torch.python, plan)))
        return 1
    if args.dry_run:
        out.write(render.DRY_RUN)
        return 0 if installable else 1
    if args.yes:
        if not installable:
            out.write(render.NO_BUILD)
            return 1
        choice = installable[0]
    elif not prompt.can_ask(ctx, menu=True):
        out.write(render.NO_TERMINAL)
        return 1
    else:
        picked = prompt.select(render.QUESTION, [c.title for c in plan.choices])
        choice = None if picked is None else plan.choices[picked]
        if choice is None or choice.key == "quit":
            out.write(render.UNCHANGED)
            return 0 if choice is not None else 130
        if choice.key == "driver":
            out.write(render.render_driver(choice.steps))
            return 0
        if not prompt.confirm(render.render_confirm(choice.recommendation)):
            out.write(render.UNCHANGED)
            return 0
    return _apply(args, ctx, host, snapshot, choice.recommendation)


def _apply(args: argparse.Namespace, ctx: Any, host: Any, before: Any, rec: Any) -> int:
    from cudaenv.fix.apply import apply_install, run_verify
    from cudaenv.render.fix import render_install, render_running, render_verify_output, render_verify_start

    out = ctx.out
    python = before.torch.python

    def started(argv: Sequence[str], timeout: float) -> None:
        out.write(render_running(argv, timeout))
        out.flush()

    outcome = apply_install(host, ctx.env, before, rec, started)
    out.write(render_install(outcome, python, rec.installer))
    if not outcome.ok:
        return 1
    verify_code: Optional[int] = 0
    if not args.no_verify:
        out.write(render_verify_start(python))
        out.flush()
        verify_code, timed_out, output = run_verify(host, ctx.env, python)
        out.write(render_verify_output(output, timed_out))
    return 1 if any(f.severity == "error" for f in outcome.remaining) or verify_code else 0
