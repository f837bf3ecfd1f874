"""`cudaenv link VERSION`: print (never run) the commands that repoint /usr/local/cuda, and what else still points elsewhere.

stdout: the commands, one per line, quoted for the shell (``cudaenv link 12.1 | sh`` is safe).
stderr: what the link does not change: ``/etc/ld.so.conf.d/cuda*.conf`` entries, ``CUDA_HOME`` and toolkit
paths in the shell startup files, and this shell's own variables. The logic is :mod:`cudaenv.toolkit.link`.
"""

import argparse

from cudaenv.core.text import printable

HELP = "print the commands that repoint /usr/local/cuda"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.core.options import add_host_options

    parser.add_argument("version", help="12, 12.1, 12.1.105, a toolkit path, or `system`")
    add_host_options(parser, python=False)


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.core.errors import UserError
    from cudaenv.probes.toolkits import probe_toolkits
    from cudaenv.render.switch import render_installed
    from cudaenv.toolkit import switch
    from cudaenv.toolkit.link import plan_link_for
    from cudaenv.toolkit.select import LINK
    from cudaenv.toolkit.select import SelectError, select_toolkit

    host = ctx.host(args)
    if host.system == "windows":
        raise UserError("Windows has no /usr/local/cuda link", hint="switch with `cudaenv use VERSION --shell pwsh` (it sets CUDA_PATH)")
    state = probe_toolkits(host, [])
    try:
        toolkit = select_toolkit(state.toolkits, _spec(args.version, ctx), host.system)
    except SelectError as exc:
        ctx.err.write("cudaenv: error: %s\n%s\n" % (exc.message, render_installed(state.toolkits, host.system)))
        return 1
    report = plan_link_for(host, toolkit, ctx.env)
    if report.plan.commands:
        where = LINK if not host.rooted else "%s inside %s" % (LINK, printable(host.local("/").rstrip("/") or "/"))
        from cudaenv.render.text import terminal_width, wrap

        said = wrap("cudaenv: to point %s at %s, run:" % (where, switch.describe(toolkit)), rest="  ",
                    width=terminal_width(ctx.env), long_words="keep")
        ctx.err.write("\n".join(said) + "\n")
        ctx.err.flush()
    ctx.out.write("".join(c + "\n" for c in report.plan.commands))
    ctx.out.flush()
    for note in report.notes:
        ctx.err.write(printable(note) + "\n")
    return 0 if report.plan.ok else 1


def _spec(spec: str, ctx) -> str:
    if spec.startswith("~") and ctx.env.get("HOME"):
        spec = ctx.env["HOME"] + spec[1:]
    return spec
