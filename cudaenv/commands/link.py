"""`cudaenv link VERSION`: print (never run) the commands that repoint /usr/local/cuda, and what else still points elsewhere.

stdout: the commands, one per line, quoted for the shell (``cudaenv link 12.1 | sh`` is safe).
stderr: what the link does not change: ``/etc/ld.so.conf.d/cuda*.conf`` entries, ``CUDA_HOME`` and toolkit
paths in the shell startup files, and this shell's own variables. The work is :mod:`cudaenv.toolkit.service`'s
(the logic :mod:`cudaenv.toolkit.link`), the words :mod:`cudaenv.render.switch`'s.
"""

import argparse

from cudaenv.core.options import Positional, host_options

HELP = "print the commands that repoint /usr/local/cuda"
POSITIONAL = Positional("version", nargs=None, help="12, 12.1, 12.1.105, a toolkit path, or `system`")
OPTIONS = host_options(python=False)


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.render.switch import render_link_error, render_link_header, render_link_notes
    from cudaenv.toolkit.service import link

    from cudaenv.render.text import terminal_width

    outcome = link(ctx.host(args), args.version, ctx.env)
    if outcome.error is not None:
        ctx.err.write(render_link_error(outcome, terminal_width(ctx.env)))
        return outcome.exit_code
    ctx.err.write(render_link_header(outcome, terminal_width(ctx.env)))
    ctx.err.flush()
    ctx.out.write("".join(c + "\n" for c in outcome.report.plan.commands))
    ctx.out.flush()
    ctx.err.write(render_link_notes(outcome))
    return outcome.exit_code
