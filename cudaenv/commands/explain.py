"""`cudaenv explain`: what a pasted CUDA / torch / NCCL / nvcc error means, and what to do about it.

``cudaenv explain "RuntimeError: CUDA error: invalid device ordinal"``, ``cudaenv explain -`` (or no
argument with text piped in) reads a whole traceback from stdin. Pure and instant by default; ``--probe``
also imports torch in your Python (``--python``, same rules as the doctor) to add this machine's facts
(device count, CUDA_VISIBLE_DEVICES, torch build, arch list). Exit 0 when the error was recognised,
1 when not, 2 on usage errors.
"""

import argparse
import json
import sys

HELP = "explain a pasted CUDA/torch error message"
WIDTH = 80


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.cli import add_host_options

    add_host_options(parser)
    parser.add_argument("text", nargs="*", help="the error text; '-' or nothing (with text piped in) reads stdin")
    parser.add_argument("--json", action="store_true", help="machine-readable: {recognised, match, others, context}")
    parser.add_argument("--all", action="store_true", help="explain every recognised problem in the text, not only the first")
    parser.add_argument("--probe", action="store_true", help="also ask torch in your Python about this machine (imports torch)")
    parser.add_argument("--list", action="store_true", help="list every error id cudaenv knows")


def _read_text(args, ctx) -> str:
    from cudaenv.errors import UserError

    parts = list(args.text)
    stdin = ctx.stdin if ctx.stdin is not None else sys.stdin
    if parts == ["-"] or not parts:
        interactive = False
        try:
            interactive = stdin is None or stdin.isatty()
        except (AttributeError, ValueError):
            interactive = False
        if not parts and interactive:
            raise UserError("no error text given", hint='cudaenv explain "the error message", or pipe a log: cudaenv explain - < log.txt')
        try:
            return stdin.read(4 * 1024 * 1024) if stdin is not None else ""
        except (OSError, ValueError):
            return ""
    return " ".join(parts)


def _probe(host, python_arg):
    from cudaenv.probes.python import find_interpreter
    from cudaenv.verify import probe_info

    interp = find_interpreter(host, python_arg)
    if interp is None:
        return {"python": None, "import_error": "no Python interpreter found"}
    report, res = probe_info(host, interp.path, timeout=max(30.0, host.timeout))
    facts = dict(report.info)
    if not facts:
        errors = report.errors
        facts = {"python": interp.path, "import_error": (errors[0].get("message") if errors else res.describe())}
    return facts


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.explain import classify_all, context_lines, known_ids, render_match, render_unknown, describe

    if args.list:
        if args.json:
            ctx.out.write(json.dumps([describe(i).to_dict() for i in known_ids()], indent=2) + "\n")
        else:
            for error_id in known_ids():
                ctx.out.write("%-32s %s\n" % (error_id, describe(error_id).title))
        return 0
    text = _read_text(args, ctx)
    if not text.strip():
        from cudaenv.errors import UserError

        raise UserError("no error text given", hint='cudaenv explain "the error message", or pipe a log: cudaenv explain - < log.txt')
    matches = classify_all(text)
    facts = None
    if args.probe:
        facts = _probe(ctx.host(args), args.python)
    if args.json:
        from cudaenv.explain import ExplainReport

        report = ExplainReport(bool(matches), matches[0] if matches else None, tuple(matches[1:]),
                               tuple(context_lines(matches[0], facts)) if matches else (), facts)
        ctx.out.write(json.dumps(report.to_dict(), indent=2) + "\n")
        return 0 if matches else 1
    if not matches:
        ctx.out.write(render_unknown(WIDTH))
        return 1
    shown = matches if args.all else matches[:1]
    blocks = []
    for i, match in enumerate(shown):
        others = matches if (i == 0 and not args.all) else ()
        blocks.append(render_match(match, WIDTH, context_lines(match, facts), others))
    ctx.out.write("\n".join(blocks))
    return 0
