"""`cudaenv fleet summarize DIR|FILES...`: many nodes' doctor reports (``cudaenv doctor --json --output DIR/`` run on
each node by Slurm, pdsh, Ansible or Kubernetes: docs/commands/fleet.md) summarized: the configurations and their
node counts, the majority (or ``--baseline FILE``), every node that deviates and in what, the nodes with errors,
the reports that could not be read (never fatal). The work is in :mod:`cudaenv.fleet.summary`.

Output: text (80 columns; ``--all`` lists every node), ``--json`` / ``--format json``, ``--format markdown``,
``--format html`` (one self-contained file). Exit 1 when a node has an error finding or deviates, when no
report could be read, or (``--image REF``) when the image cannot be read or a node's driver is too old for it; 0 otherwise; 2 on usage errors (no file named, an unreadable ``--baseline``).
"""

import argparse

from cudaenv.core.options import Action, Option, Positional
from cudaenv.core.i18n import M

HELP = "summarize many nodes' doctor reports: configurations, drift, failing nodes"
FORMATS = ("text", "json", "markdown", "html")
ACTION_DEST = "fleet_command"
ACTIONS = (
    Action("summarize", help="summarize a folder (or files) of `cudaenv doctor --json` reports",
           description="Group the nodes' reports by driver, driver CUDA, GPUs, toolkits, torch and "
                       "cuDNN and by finding id; show the majority, the deviating and failing nodes.",
           positional=Positional("paths", nargs="+", metavar="DIR|FILE", help="a folder of reports (its *.json) or report files"),
           options=(
               Option("--baseline", metavar="FILE", help="compare every node with this known-good report instead of the majority"),
               Option("--all", dest="all_nodes", help="list every node (text and Markdown)"),
               Option("--image", metavar="REF",
                      help="also name the nodes whose driver is too old for this container image (a `docker save` "
                           "tarball, an OCI layout folder or `docker image inspect` JSON, read from disk)"),
               Option("--format", choices=FORMATS, help="output format (default: text)"),
               Option("--json", help="same as --format json"),
           )),
)


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.core.errors import UserError
    from cudaenv.core.text import printable

    if getattr(args, "fleet_command", None) != "summarize":
        raise UserError(M("say what to do: `cudaenv fleet summarize DIR`"), hint=M("see `cudaenv fleet --help`"))
    if args.json and args.format not in (None, "json"):
        raise UserError(M("--json and --format %s disagree", args.format), hint=M("use one of them"))
    fmt = "json" if args.json else (args.format or "text")
    from cudaenv.fleet.files import report_paths
    from cudaenv.fleet.summary import BaselineError, summarize

    paths, baseline = list(args.paths), args.baseline  # as given: the unreadable list names them so
    try:
        summary = summarize(report_paths(paths), baseline_file=baseline, image=args.image, cwd=ctx.cwd)
    except BaselineError as exc:
        raise UserError(M("--baseline %s: %s", printable(args.baseline), printable(exc.args[0] if exc.args else exc)),
                        hint=M("give a report written by `cudaenv doctor --json` on a known-good node")) from None
    if not summary.nodes and not summary.unreadable:
        raise UserError(M("no reports found in %s", ", ".join(printable(p) for p in args.paths)),
                        hint=M("a folder holds NODE.json files written by `cudaenv doctor --json --output DIR/`"))
    if fmt == "json":
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps(summary.to_dict()))
    elif fmt == "markdown":
        from cudaenv.render.fleet import render_markdown

        ctx.out.write(render_markdown(summary, all_nodes=args.all_nodes))
    elif fmt == "html":
        from cudaenv.render.fleet import render_html

        ctx.out.write(render_html(summary))
    else:
        from cudaenv.render.fleet import render_text
        from cudaenv.render.text import terminal_width

        ctx.out.write(render_text(summary, all_nodes=args.all_nodes, width=terminal_width(ctx.env), color=ctx.color))
    return 0 if summary.ok else 1
