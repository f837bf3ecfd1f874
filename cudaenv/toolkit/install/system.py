"""CUDA 12.x and older, which no wheel can install: the plain answer, ``--plan`` and ``--runfile``."""

from __future__ import annotations

from cudaenv.errors import UserError


def run_system(args, ctx, host, spec: str, emit) -> int:
    from cudaenv.toolkit.install import plan

    if args.runfile:
        from cudaenv.toolkit.install.runfile import run_runfile

        return run_runfile(args, ctx, host, spec, emit)
    if args.plan:
        from cudaenv.toolkit.install.repos import run_plan

        return run_plan(args, ctx, host, spec, emit)
    if not plan.needs_runfile(spec):
        raise UserError("--plan and --runfile are for CUDA 12.x and older", hint="cudaenv install %s installs it from wheels" % spec)
    text, alternatives = plan.no_wheel_answer(spec)
    report = plan.InstallReport(False, "no-wheels", spec, message=text, commands=alternatives)
    emit(ctx, args, report, [text, "What works instead:"] + ["  " + a for a in alternatives])
    return 1
