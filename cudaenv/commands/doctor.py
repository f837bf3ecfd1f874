"""`cudaenv doctor`: inspect this machine's CUDA setup, say what is wrong and give the exact fix.

Output: the checklist (text), ``--json`` / ``--format json`` (the snapshot contract plus ``findings``, the
``hostname`` and ``generated_at``), ``--format markdown`` (a paste-ready report) or ``--format prometheus`` (the
node_exporter textfile-collector format); ``--output DIR/`` writes DIR/<hostname>.json (.prom, .md, .txt) atomically
instead of printing, ``--output FILE`` that file (one report per node of a cluster: docs/commands/fleet.md); ``--verbose`` adds every fact the probes saw (render.facts) to
the text and markdown reports. Exit 0 when no finding is an error, 1 when one is (``--strict``:
also on warnings), 2 on usage errors.
"""

import argparse

HELP = "inspect this machine's CUDA setup, say what is wrong and how to fix it"
FORMATS = ("text", "json", "markdown", "prometheus")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.core.options import add_host_options

    add_host_options(parser)
    parser.add_argument("--format", choices=FORMATS, default=None, help="output format (default: text)")
    parser.add_argument("--json", action="store_true", help="same as --format json: the snapshot (schema_version 1) with findings")
    parser.add_argument("--quick", action="store_true", help="do not import torch (static torch facts only)")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too (CI pipelines, cluster health checks)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print every fact the probes saw (GPU UUIDs and bus ids, each toolkit and cuDNN header, torch's arch list)")
    parser.add_argument("--output", metavar="PATH",
                        help="write the report to PATH instead of stdout, atomically; PATH/ (or an existing folder): "
                             "PATH/<hostname>.json (.prom, .md, .txt by --format)")
    parser.add_argument("--against", metavar="FILE",
                        help="check this machine against a stack file written by `cudaenv lock`: each difference with "
                             "the command that converges it; exit 1 on a difference")


def _format(args) -> str:
    from cudaenv.core.errors import UserError

    if args.json and args.format not in (None, "json"):
        raise UserError("--json and --format %s disagree" % args.format, hint="use one of them")
    return "json" if args.json else (args.format or "text")


def run(args: argparse.Namespace, ctx) -> int:
    import os

    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.diagnose import diagnose, exit_code
    from cudaenv.diagnose.view import build_view
    from cudaenv.render.spinner import Spinner

    fmt = _format(args)
    host = ctx.host(args)
    with Spinner(ctx.err, enabled=ctx.err_is_tty) as spinner:
        snapshot = collect_snapshot(host, python=args.python, quick=args.quick, progress=spinner)
        findings = diagnose(snapshot)
    against = _against(args, ctx, snapshot)
    hostname = host.hostname()
    if fmt in ("json", "prometheus"):
        import time

        from cudaenv.model.reports import DoctorReport

        report = DoctorReport(snapshot, hostname=hostname, findings=tuple(findings), against=against,
                              generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        if fmt == "json":
            from cudaenv.render.json_out import dumps

            text = dumps(report.to_dict())
        else:
            from cudaenv.render.prometheus import render_prometheus

            text = render_prometheus(report)
    elif fmt == "markdown":
        from cudaenv.render.markdown import render_markdown

        text = render_markdown(snapshot, findings, verbose=args.verbose, view=build_view(snapshot))
        if against is not None:
            from cudaenv.render.stack import render_against_markdown

            text += render_against_markdown(against)
    else:
        from cudaenv.render.report import render_report

        from cudaenv.render.text import terminal_width

        color = ctx.color and not args.output
        width = terminal_width(ctx.env) if not args.output else 80  # a file keeps the documented 80 columns
        text = render_report(snapshot, findings, color=color, verbose=args.verbose, view=build_view(snapshot), width=width)
        if against is not None:
            from cudaenv.render.stack import render_against_text

            text += render_against_text(against, color=color)
    if args.output:
        _write(os.path.join(ctx.cwd, args.output), hostname, fmt, text)
    else:
        ctx.out.write(text)
    return max(exit_code(findings, strict=args.strict), 1 if against is not None and against.differences else 0)


def _against(args, ctx, snapshot):
    """``--against FILE``: the machine checked against the stack file (None without the option)."""
    if not args.against:
        return None
    from cudaenv.core.errors import UserError
    from cudaenv.core.text import printable
    from cudaenv.diagnose.view import build_view
    from cudaenv.stack.lock import StackFileError
    from cudaenv.stack.service import check_against

    try:
        return check_against(args.against, snapshot, build_view(snapshot), cwd=ctx.cwd)
    except StackFileError as exc:
        raise UserError("--against %s: %s" % (printable(args.against), printable(exc)),
                        hint="give a stack file written by `cudaenv lock`") from None


def _write(output: str, hostname, fmt: str, text: str) -> None:
    """``--output``: the report written atomically (a summary running meanwhile never reads half of it), readable by
    the site's other users like any file this user writes (umask), the folder made when missing."""
    import os

    from cudaenv.core.fs import atomic_write_text, usual_mode
    from cudaenv.core.errors import UserError
    from cudaenv.fleet.files import output_path
    from cudaenv.core.text import printable

    path, folder = output_path(output, hostname, fmt)
    try:
        if folder:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        atomic_write_text(path, text, mode=usual_mode())
    except OSError as exc:
        raise UserError("cannot write %s (%s)" % (printable(path), printable(exc.strerror or exc)),
                        hint="give --output a folder (ending in /) or a file this user can write") from None
