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

from cudaenv.core.options import Option, Positional, host_options

HELP = "explain a pasted CUDA/torch error message"
RUNS_CHILDREN = True  # read by the fast parser's path (cli): argparse stays off a paste's start-up (issue 35)
POSITIONAL = Positional("text", nargs="*", help="the error text; '-' or nothing (with text piped in) reads stdin")
OPTIONS = host_options() + (
    Option("--file", metavar="F", help="read the text from a file (a log of any size or encoding)"),
    Option("--json", help="machine-readable: {recognised, match, others, context}"),
    Option("--all", help="explain every recognised problem in the text, not only the first"),
    Option("--probe", help="also ask torch in your Python about this machine (imports torch)"),
    Option("--list", help="list every error id cudaenv knows"),
    Option("--offline", help="read nothing of this machine: the answer is a function of the text alone"),
)


def run(args, ctx) -> int:  # args: the fast parser's namespace or argparse's
    from cudaenv.pasted.service import ExplainRequest, explain
    from cudaenv.render.explain_report import render_catalog, render_explain_json, render_explain_text
    from cudaenv.render.text import terminal_width

    request = ExplainRequest(text=args.text, file=args.file, stdin=ctx.stdin, catalog=args.list, probe=args.probe,
                             offline=args.offline, python=args.python, timeout=args.timeout)
    outcome = explain(lambda: ctx.host(args), request, _probe_facts)
    if outcome.catalog is not None:
        ctx.out.write(render_catalog(outcome.catalog, args.json, terminal_width(ctx.env)))
    elif args.json:
        ctx.out.write(render_explain_json(outcome))
    else:
        ctx.out.write(render_explain_text(outcome, terminal_width(ctx.env), every=args.all))
    return outcome.exit_code


def _probe_facts(host, python):
    """``--probe``'s facts: cudaenv.verify is imported only then (a paste without --probe does not pay for it)."""
    from cudaenv.verify import probe_facts

    return probe_facts(host, python)
