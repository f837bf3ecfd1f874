"""`cudaenv diff A.json B.json`: what changed between two doctor reports (``cudaenv doctor --json``), from one machine
over time (before and after a driver update) or from two machines: each fact of the doctor that differs, grouped as
the doctor groups them, and the findings that appeared or went. The comparison is the fleet summary's
(:mod:`cudaenv.fleet.compare`).

Output: text, ``--json`` / ``--format json``, ``--format markdown``. Exit 0 when nothing differs, 1 when something
does, 2 on usage errors (a file that is not a doctor report).
"""

import argparse

from cudaenv.core.options import Option, Positional
from cudaenv.core.i18n import M

HELP = "show what changed between two `cudaenv doctor --json` reports"
FORMATS = ("text", "json", "markdown")


POSITIONAL = (
    Positional("before", nargs=None, metavar="A.json", help="the earlier (or reference) report"),
    Positional("after", nargs=None, metavar="B.json", help="the later (or other machine's) report"),
)
OPTIONS = (
    Option("--format", choices=FORMATS, help="output format (default: text)"),
    Option("--json", help="same as --format json"),
)


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.core.errors import UserError
    from cudaenv.core.text import printable
    from cudaenv.fleet.summary import ReportFileError, diff_files

    if args.json and args.format not in (None, "json"):
        raise UserError(M("--json and --format %s disagree", args.format), hint=M("use one of them"))
    fmt = "json" if args.json else (args.format or "text")
    try:
        diff = diff_files(args.before, args.after, cwd=ctx.cwd)
    except ReportFileError as exc:
        raise UserError(M("%s: %s", printable(exc.path), printable(exc.why)),
                        hint=M("give two reports written by `cudaenv doctor --json`")) from None
    if fmt == "json":
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps(diff.to_dict()))
    elif fmt == "markdown":
        from cudaenv.render.diff import render_markdown

        ctx.out.write(render_markdown(diff))
    else:
        from cudaenv.render.diff import render_text
        from cudaenv.render.text import terminal_width

        ctx.out.write(render_text(diff, width=terminal_width(ctx.env), color=ctx.color))
    return 0 if diff.same else 1
