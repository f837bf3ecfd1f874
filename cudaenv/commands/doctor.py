"""`cudaenv doctor`: inspect this machine's CUDA setup, say what is wrong and give the exact fix.

Output: the checklist (text), ``--json`` / ``--format json`` (the snapshot contract plus ``findings``, the
``hostname`` and ``generated_at``), ``--format markdown`` (a paste-ready report) or ``--format prometheus`` (the
node_exporter textfile-collector format); ``--output DIR/`` writes DIR/<hostname>.json (.prom, .md, .txt) atomically
instead of printing, ``--output FILE`` that file; ``--frameworks`` the Frameworks section alone (its findings in
every format, the text's other sections left out), ``--import`` with each framework imported in a child (one report per node of a cluster: docs/commands/fleet.md); ``--verbose`` adds every fact the probes saw (render.facts) to
the text and markdown reports. Exit 0 when no finding is an error, 1 when one is (``--strict``:
also on warnings), 2 on usage errors.
"""

from cudaenv.core.options import Option, host_options
from cudaenv.core.i18n import M, edit

RUNS_CHILDREN = True  # read by the fast parser's path (cli): argparse stays off `doctor`'s start-up
HELP = "inspect this machine's CUDA setup, say what is wrong and how to fix it"
FORMATS = ("text", "json", "markdown", "prometheus")
OPTIONS = host_options() + (
    Option("--format", choices=FORMATS, help="output format (default: text)"),
    Option("--json", help="same as --format json: the snapshot (schema_version 1) with findings"),
    Option("--quick", help="do not import torch (static torch facts only)"),
    Option("--strict", help="exit 1 on warnings too (CI pipelines, cluster health checks)"),
    Option("--frameworks",
           help="the Frameworks section alone (TensorFlow, JAX, ONNX Runtime, CuPy, PaddlePaddle, vLLM, torch "
                "extensions, and the CUDA libraries they load): only its checks and findings, and the exit code from "
                "them; read from their files, never imported (add --import for that)"),
    Option("--import", dest="import_frameworks",
           help="also import each CUDA framework found in its own child of the probed Python, with a timeout: its "
                "import error, and whether its own device check sees a GPU (`doctor --frameworks --import`: that "
                "section alone)"),
    Option("--import-order", metavar="MODULES",
           help="Windows: the modules your program imports, in that order, comma-separated (torch,onnxruntime; "
                "onnxruntime.preload_dlls where it calls that): the CUDA DLLs each framework gets are worked out for "
                "that order instead of the usual one (torch first)"),
    Option("-v", "--verbose",
           help="also print every fact the probes saw (GPU UUIDs and bus ids, each toolkit and cuDNN header, torch's arch list)"),
    Option("--output", metavar="PATH",
           help="write the report to PATH instead of stdout, atomically; PATH/ (or an existing folder): "
                "PATH/<hostname>.json (.prom, .md, .txt by --format)"),
    Option("--image", metavar="REF",
           help="also check a container image against this machine's driver before running it: a `docker save` "
                "tarball, an OCI layout folder or `docker image inspect` JSON (read from disk, never pulled or run)"),
    Option("--against", metavar="FILE",
           help="check this machine against a stack file written by `cudaenv lock`: each difference with "
                "the command that converges it; exit 1 on a difference"),
)


def _format(args) -> str:
    from cudaenv.core.errors import UserError

    if args.json and args.format not in (None, "json"):
        raise UserError(M("--json and --format %s disagree", args.format), hint=M("use one of them"))
    return "json" if args.json else (args.format or "text")


def run(args, ctx) -> int:
    import os

    from cudaenv.diagnose.service import doctor
    from cudaenv.render.spinner import Spinner

    fmt = _format(args)
    with Spinner(ctx.err, enabled=ctx.err_is_tty) as spinner:
        outcome = doctor(ctx.host(args), python=args.python, quick=args.quick, strict=args.strict, progress=spinner,
                         image=args.image, cwd=ctx.cwd, import_frameworks=args.import_frameworks,
                         sections=("frameworks",) if args.frameworks else None,
                         import_order=tuple(m.strip() for m in (args.import_order or "").split(",") if m.strip()))
    outcome.against = _against(args, ctx, outcome)
    if fmt == "json":
        from cudaenv.render.json_out import dumps

        text = dumps(outcome.report().to_dict())
    elif fmt == "prometheus":
        from cudaenv.render.prometheus import render_prometheus

        text = render_prometheus(outcome.report())
    elif fmt == "markdown":
        from cudaenv.render.markdown import render_markdown

        text = render_markdown(outcome.snapshot, outcome.findings, outcome.view, verbose=args.verbose)
        if outcome.against is not None:
            from cudaenv.render.stack import render_against_markdown

            text += render_against_markdown(outcome.against)
    else:
        from cudaenv.render.report import render_report

        from cudaenv.render.text import terminal_width

        color = ctx.color and not args.output
        width = terminal_width(ctx.env) if not args.output else 80  # a file keeps the documented 80 columns
        text = render_report(outcome.snapshot, outcome.findings, outcome.view, color=color, verbose=args.verbose, width=width,
                             sections=outcome.sections)
        if outcome.against is not None:
            from cudaenv.render.stack import render_against_text

            text += render_against_text(outcome.against, width=width, color=color)
    if args.output:
        _write(os.path.join(ctx.cwd, args.output), outcome.hostname, fmt, text)
    else:
        ctx.out.write(text)
    return outcome.exit_code


def _against(args, ctx, outcome):
    """``--against FILE``: the machine checked against the stack file (None without the option)."""
    if not args.against:
        return None
    from cudaenv.core.errors import UserError
    from cudaenv.core.text import printable
    from cudaenv.stack.lock import StackFileError
    from cudaenv.stack.service import check_against

    try:
        return check_against(args.against, outcome.snapshot, outcome.view, cwd=ctx.cwd)
    except StackFileError as exc:
        raise UserError(M("--against %s: %s", printable(args.against), edit(exc.args[0] if exc.args else str(exc), printable)),
                        hint=M("give a stack file written by `cudaenv lock`")) from None


def _write(output: str, hostname, fmt: str, text: str) -> None:
    """``--output``: the report written atomically (a summary running meanwhile never reads half of it), readable by
    the site's other users like any file this user writes (umask), the folder made when missing."""
    import os

    from cudaenv.core.errors import UserError
    from cudaenv.core.fs import atomic_write_text, usual_mode
    from cudaenv.core.text import printable
    from cudaenv.fleet.files import output_path

    path, folder = output_path(output, hostname, fmt)
    try:
        if folder:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        atomic_write_text(path, text, mode=usual_mode())
    except OSError as exc:
        raise UserError(M("cannot write %s (%s)", printable(path), printable(exc.strerror or exc)),
                        hint=M("give --output a folder (ending in /) or a file this user can write")) from None
