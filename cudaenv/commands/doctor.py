"""`cudaenv doctor`: inspect this machine's CUDA setup, say what is wrong and give the exact fix.

Output: the checklist (text), ``--json`` / ``--format json`` (the snapshot contract plus ``findings``), or
``--format markdown`` (a paste-ready report); ``--verbose`` adds every fact the probes saw (render.facts) to
the text and markdown reports. Exit 0 when no finding is an error, 1 when one is (``--strict``:
also on warnings), 2 on usage errors.
"""

import argparse

HELP = "inspect this machine's CUDA setup, say what is wrong and how to fix it"
FORMATS = ("text", "json", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.options import add_host_options

    add_host_options(parser)
    parser.add_argument("--format", choices=FORMATS, default=None, help="output format (default: text)")
    parser.add_argument("--json", action="store_true", help="same as --format json: the snapshot (schema_version 1) with findings")
    parser.add_argument("--quick", action="store_true", help="do not import torch (static torch facts only)")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too (CI pipelines, cluster health checks)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print every fact the probes saw (GPU UUIDs and bus ids, each toolkit and cuDNN header, torch's arch list)")


def _format(args) -> str:
    from cudaenv.errors import UserError

    if args.json and args.format not in (None, "json"):
        raise UserError("--json and --format %s disagree" % args.format, hint="use one of them")
    return "json" if args.json else (args.format or "text")


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.collect import collect_snapshot
    from cudaenv.diagnose import diagnose, exit_code
    from cudaenv.diagnose.view import build_view
    from cudaenv.render.spinner import Spinner

    fmt = _format(args)
    host = ctx.host(args)
    with Spinner(ctx.err, enabled=ctx.err_is_tty) as spinner:
        snapshot = collect_snapshot(host, python=args.python, quick=args.quick, progress=spinner)
        findings = diagnose(snapshot)
    if fmt == "json":
        from cudaenv.model.reports import DoctorReport
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps(DoctorReport(snapshot, tuple(findings)).to_dict()))
    elif fmt == "markdown":
        from cudaenv.render.markdown import render_markdown

        ctx.out.write(render_markdown(snapshot, findings, verbose=args.verbose, view=build_view(snapshot)))
    else:
        from cudaenv.render.report import render_report

        ctx.out.write(render_report(snapshot, findings, color=ctx.color, verbose=args.verbose, view=build_view(snapshot)))
    return exit_code(findings, strict=args.strict)
