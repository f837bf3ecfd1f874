"""`cudaenv fix`: a guided fix for a torch that cannot use the GPU.

Runs the doctor; for each fixable torch finding it shows the diagnosis and offers the recommended build, the
other builds that fit, or "fix the driver instead" (:mod:`cudaenv.fix.plan`). It confirms, runs the
install through the Host (:mod:`cudaenv.fix.apply`), probes again and runs `cudaenv verify`.
``--yes`` takes the recommendation, ``--dry-run`` only prints the plan; with no terminal and no ``--yes`` it
prints the plan and exits 1. An externally managed system Python (PEP 668) gets the venv recipe instead.
"""

import argparse
import sys
from typing import Any, Optional, Sequence

from cudaenv.core.config import TORCH_INDEX
from cudaenv.core.errors import UserError

HELP = "guided fix for a CPU-only or wrong-CUDA torch"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.core.options import add_host_options

    add_host_options(parser)
    parser.add_argument("--yes", "-y", action="store_true", help="take the recommendation without asking")
    parser.add_argument("--dry-run", action="store_true", help="only print the plan")
    parser.add_argument("--torch", metavar="VERSION", help="install this torch release instead of the installed one (2.7.1, 2.7, latest)")
    parser.add_argument("--index-base", metavar="URL", help="wheel index base instead of %s (env: CUDAENV_TORCH_INDEX)" % TORCH_INDEX)
    parser.add_argument("--refresh", action="store_true", help="read the live index before deciding")
    parser.add_argument("--no-verify", action="store_true", help="do not run `cudaenv verify` after the install")


def run(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.diagnose import diagnose
    from cudaenv.recommend import service
    from cudaenv.facts.findings import is_fixable
    from cudaenv.fix.plan import plan_fix
    from cudaenv.render import fix as render

    interpreter, what_if = service.split_python(args.python)
    if what_if:
        raise UserError("`cudaenv fix --python` needs an interpreter, not a version", hint="for example --python .venv/bin/python")
    base = service.index_base(ctx.env, args.index_base)
    host = ctx.host(args)
    out = ctx.out
    from cudaenv.render.text import terminal_width

    width = terminal_width(ctx.env)
    out.write("Probing this machine...\n")
    out.flush()
    snapshot = collect_snapshot(host, python=interpreter, quick=False)
    fixable = [f for f in diagnose(snapshot) if is_fixable(f.id)]
    torch = snapshot.torch
    if not fixable:
        state = "torch %s" % torch.version if torch is not None and torch.installed else "no torch"
        out.write(render.render_nothing_to_fix(state, getattr(torch, "python", None) or "?", width))
        return 0
    out.write(render.render_findings(fixable, width))
    if torch is None or not torch.python:
        raise UserError("no Python interpreter to fix", hint="give one with --python PATH")

    index_data, notes, _ = service.load_index_data(ctx.env, base, args.refresh, service.index_timeout(ctx.env))
    options = service.Options(torch=args.torch, index_base=args.index_base)
    plan = plan_fix(service.request_for(options, ctx.env, host, snapshot, None), fixable, index_data, snapshot.platform)
    out.write(render.render_plan(torch.python, plan, notes, width))
    installable = plan.installable
    if torch.externally_managed and not torch.in_virtualenv:
        out.write(render.render_pep668(torch.python, plan))
        return 1
    if args.dry_run:
        out.write("\n--dry-run: nothing was changed.\n")
        return 0 if installable else 1
    if args.yes:
        if not installable:
            out.write("\nNo torch build fits this machine; nothing was installed. See the plan above.\n")
            return 1
        choice = installable[0]
    elif not _interactive(ctx):
        out.write("\nNo terminal to ask on: run `cudaenv fix --yes` to apply the recommendation, or --dry-run.\n")
        return 1
    else:
        choice = _ask(plan.choices)
        if choice is None or choice.key == "quit":
            out.write("Nothing was changed.\n")
            return 0 if choice is not None else 130
        if choice.key == "driver":
            out.write(render.render_driver(choice.steps))
            return 0
        if not _confirm("Run: %s ?" % " && ".join(choice.recommendation.commands)):
            out.write("Nothing was changed.\n")
            return 0
    return _apply(args, ctx, host, snapshot, choice.recommendation)


def _apply(args: argparse.Namespace, ctx: Any, host: Any, before: Any, rec: Any) -> int:
    from cudaenv.core.text import seconds_text
    from cudaenv.fix.apply import apply_install, run_verify
    from cudaenv.render.fix import printable_lines, render_install

    out = ctx.out
    python = before.torch.python

    def started(argv: Sequence[str], timeout: float) -> None:
        out.write("\nRunning (timeout %s): %s\n" % (seconds_text(timeout), " ".join(argv)))
        out.flush()

    outcome = apply_install(host, ctx.env, before, rec, started)
    out.write(render_install(outcome, python, rec.installer))
    if not outcome.ok:
        return 1
    verify_code: Optional[int] = 0
    if not args.no_verify:
        out.write("\nRunning the GPU check: cudaenv verify --python %s\n" % python)
        out.flush()
        verify_code, timed_out, output = run_verify(host, ctx.env, python)
        out.write("".join("  | %s\n" % line for line in printable_lines(output)))
        if timed_out:
            out.write("cudaenv verify timed out.\n")
    return 1 if any(f.severity == "error" for f in outcome.remaining) or verify_code else 0


def _interactive(ctx: Any) -> bool:
    stdin = ctx.stdin if ctx.stdin is not None else sys.stdin
    try:
        return bool(stdin.isatty()) and ctx.is_tty
    except (AttributeError, ValueError):
        return False


def _ask(choices: Sequence[Any]) -> Any:
    import questionary

    answer = questionary.select(
        "What should cudaenv do?", choices=[questionary.Choice(c.title, value=i) for i, c in enumerate(choices)]
    ).ask()
    return None if answer is None else choices[answer]


def _confirm(message: str) -> bool:
    import questionary

    return bool(questionary.confirm(message, default=True).ask())
