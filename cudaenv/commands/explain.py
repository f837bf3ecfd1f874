"""`cudaenv explain`: what a pasted CUDA / torch / NCCL / nvcc error means, and what to do about it.

``cudaenv explain "RuntimeError: CUDA error: invalid device ordinal"``, ``cudaenv explain -`` (or no
argument with text piped in) reads a whole traceback from stdin, ``--file F`` reads a log file. Any size and
any encoding (undecodable bytes are replaced); a text over a million characters is searched in its head and
tail, and the output says so. Pasted tool outputs (nvidia-smi, collect_env, nvcc, deviceQuery, ...) fill
``facts`` and get the doctor's ``findings`` (:mod:`cudaenv.pasted`). Unless ``--offline``, what this machine says
about the error is added cheaply, without importing torch (:mod:`cudaenv.pasted.context`); ``--probe`` also
imports torch in your Python (``--python``, same rules as the doctor) to add its facts (device count,
CUDA_VISIBLE_DEVICES, torch build, arch list). Exit 0 when the error (or a tool output) was recognised, 1 when
not, 2 on usage errors.
"""

import argparse
from cudaenv.render.json_out import dumps
import sys

HELP = "explain a pasted CUDA/torch error message"
NO_TEXT_HINT = 'cudaenv explain "the error message", or pipe a log: cudaenv explain - < log.txt'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.core.options import add_host_options

    add_host_options(parser)
    parser.add_argument("text", nargs="*", help="the error text; '-' or nothing (with text piped in) reads stdin")
    parser.add_argument("--file", metavar="F", help="read the text from a file (a log of any size or encoding)")
    parser.add_argument("--json", action="store_true", help="machine-readable: {recognised, match, others, context}")
    parser.add_argument("--all", action="store_true", help="explain every recognised problem in the text, not only the first")
    parser.add_argument("--probe", action="store_true", help="also ask torch in your Python about this machine (imports torch)")
    parser.add_argument("--list", action="store_true", help="list every error id cudaenv knows")
    parser.add_argument("--offline", action="store_true",
                        help="read nothing of this machine: the answer is a function of the text alone")


def _read(args, ctx):
    """The Paste to explain: --file, stdin (as bytes when it has them), or the arguments."""
    from cudaenv.host.files import open_regular
    from cudaenv.core.errors import UserError
    from cudaenv.explain import Paste, read_paste
    from cudaenv.core.text import printable

    if args.file:
        try:
            with open_regular(args.file) as fh:
                return read_paste(fh)
        except OSError as exc:
            raise UserError("cannot read %s: %s" % (printable(args.file), printable(exc.strerror or exc)))
    parts = list(args.text)
    if parts and parts != ["-"]:
        text = " ".join(parts)
        return Paste(text, len(text), False, False)
    stdin = ctx.stdin if ctx.stdin is not None else sys.stdin
    try:
        interactive = stdin is None or stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not parts and interactive:
        raise UserError("no error text given", hint=NO_TEXT_HINT)
    return read_paste(getattr(stdin, "buffer", stdin)) if stdin is not None else Paste("", 0, False, False)


def _probe(host, python_arg):
    from cudaenv.probes.python import find_interpreter
    from cudaenv.verify import probe_info

    interp = find_interpreter(host, python_arg)
    if interp is None:
        return {"python": None, "import_error": "no Python interpreter found"}
    report, res = probe_info(host, interp.path, timeout=max(30.0, host.timeout))
    facts = dict(report.info)
    if not facts:
        from cudaenv.verify import problem_from_report

        problem = problem_from_report(report, interp.path, res)  # names a hang at `import torch` as such
        errors = report.errors
        message = errors[0].get("message") if errors else res.describe()
        if problem is not None and problem.id == "torch-import-hang":
            message = problem.message
        facts = {"python": interp.path, "import_error": message}
    return facts


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.core.errors import UserError
    from cudaenv.explain import classify_all, describe, is_cut, known_ids, probe_context
    from cudaenv.render.explain import context_lines, cut_note, render_match, render_unknown
    from cudaenv.render.text import terminal_width

    if args.list:
        if args.json:
            from cudaenv.explain import ErrorCatalog

            ctx.out.write(dumps(ErrorCatalog(tuple(describe(i) for i in known_ids())).to_dict()))
        else:
            for error_id in known_ids():
                ctx.out.write("%-32s %s\n" % (error_id, describe(error_id).title))
        return 0
    if args.offline and args.probe:
        raise UserError("--offline and --probe contradict each other", hint="--probe reads this machine (it imports torch); drop one")
    paste = _read(args, ctx)
    if not paste.text.strip():
        raise UserError("no error text given", hint=NO_TEXT_HINT)
    facts, machine = None, ()
    if args.probe:
        from cudaenv.explain.service import probe_machine

        host = ctx.host(args)
        facts, machine = _probe(host.with_deadline(args.timeout) if args.timeout is not None else host, args.python), probe_machine(host)
    matches = classify_all(paste.text, machine)
    cut = paste.cut or is_cut(len(paste.text))
    pasted, findings, here = _pasted(args, ctx, paste.text, matches)  # issue 14 sec. 4-5: cudaenv.pasted
    if args.json:
        from cudaenv.explain import ExplainReport

        context = (tuple(context_lines(probe_context(matches[0], facts))) if matches else ()) + here
        merged = dict(pasted.to_dict(), **facts) if pasted is not None and facts else (pasted.to_dict() if pasted is not None else facts)
        report = ExplainReport(bool(matches), matches[0] if matches else None, tuple(matches[1:]), context, merged,
                               {"size": paste.size, "stopped": paste.stopped} if cut else None, tuple(findings))
        ctx.out.write(dumps(report.to_dict()))
        return 0 if matches or pasted is not None else 1
    width = terminal_width(ctx.env)
    note = cut_note(paste.size, paste.stopped, paste.unit) + "\n" if cut else ""
    from cudaenv.render.pasted import render_machine, render_pasted

    tail = "".join("\n" + b for b in (render_machine(here, width), render_pasted(pasted, findings, width)) if b)
    if not matches:
        ctx.out.write(note + (tail.lstrip("\n") if pasted is not None else render_unknown(width) + tail))
        return 0 if pasted is not None else 1
    shown = matches if args.all else matches[:1]
    blocks = [render_match(m, width, context_lines(probe_context(m, facts)), matches if (i == 0 and not args.all) else ()) for i, m in enumerate(shown)]
    ctx.out.write(note + "\n".join(blocks) + tail)
    return 0


def _pasted(args, ctx, text, matches):
    """(pasted facts, the doctor's findings on them, this machine's context lines): :mod:`cudaenv.pasted`."""
    from cudaenv.pasted import paste_findings, read_facts

    pasted = read_facts(text)
    here = ()
    if not args.offline:
        from cudaenv.pasted.context import machine_context, wanted
        from cudaenv.render.pasted_context import machine_context_lines

        if wanted(text, [m.id for m in matches]):
            host = ctx.host(args)
            here = machine_context_lines(machine_context(host.with_deadline(args.timeout) if args.timeout is not None else host,
                                                         text, [m.id for m in matches], args.python, {m.id: dict(m.values) for m in matches}))
    return pasted, paste_findings(pasted), here
