"""`cudaenv uninstall VERSION|PATH`: print a precise removal plan (never executed by cudaenv itself).

The routing (plan, ``--check``, or a toolkit ``cudaenv install`` made, which cudaenv removes itself after asking) is
:mod:`cudaenv.toolkit.uninstall.service`'s; the words are :mod:`cudaenv.render.plan`'s.
"""

from cudaenv.core.errors import UserError
from cudaenv.core.options import Option, Positional, host_options
from cudaenv.core.i18n import M

HELP = "plan the removal of a CUDA toolkit, leaving nothing behind"


POSITIONAL = Positional("spec", metavar="VERSION|PATH", help="the toolkit to remove: 11.8, or its folder")
OPTIONS = (
    Option("--all", help="every toolkit matching VERSION (every toolkit without one)"),
    Option("--driver", help="also plan the removal of the NVIDIA driver"),
    Option("--json", help="print the plan (or --check result) as JSON"),
    Option("--script", metavar="FILE", help="write the plan as a bash script that asks before each step"),
    Option("--check", help="after removal: report what is still left (exit 1 if anything)"),
    Option("--yes", help="a toolkit `cudaenv install` made: remove it without asking"),
    Option("--repoint", metavar="VERSION|PATH", exclusive="link",
           help="point /usr/local/cuda at this toolkit instead of removing the link"),
    Option("--remove-link", exclusive="link", help="remove /usr/local/cuda (also when it dangles elsewhere)"),
) + host_options()


def run(args, ctx) -> int:
    from cudaenv.toolkit.uninstall.service import Request, uninstall

    request = Request(spec=args.spec, everything=args.all, driver=args.driver, check=args.check, script=args.script,
                      json=args.json, yes=args.yes, repoint=args.repoint, remove_link=args.remove_link, python=args.python)
    outcome = uninstall(ctx.host(args), request, lambda installs: _confirm(ctx, installs, args.yes))
    if outcome.kind == "own":
        from cudaenv.render.plan import render_removed

        ctx.out.write(render_removed(outcome))
    elif outcome.kind == "residue":
        from cudaenv.render.plan import render_residue_json, render_residue_text

        from cudaenv.render.text import terminal_width

        if args.json:
            ctx.out.write(render_residue_json(outcome.names, outcome.residue))
        else:
            ctx.out.write(render_residue_text(outcome.names, outcome.residue, terminal_width(ctx.env)))
    else:
        _show_plan(args, ctx, outcome.plan)
    return outcome.exit_code


def _show_plan(args, ctx, plan) -> None:
    from cudaenv.render.plan import render_plan_json, render_plan_text, render_script_written

    if args.script:
        from cudaenv.render.uninstall_script import render_script
        from cudaenv.toolkit.uninstall.service import write_script

        write_script(args.script, render_script(plan))
    if args.json:
        ctx.out.write(render_plan_json(plan))
        return
    from cudaenv.render.text import terminal_width

    width = terminal_width(ctx.env)
    ctx.out.write(render_plan_text(plan, width))
    if args.script:
        ctx.out.write(render_script_written(args.script, width))


def _confirm(ctx, installs, yes: bool) -> bool:
    """Show the toolkits cudaenv made and ask before removing them (``--yes``: without asking)."""
    from cudaenv.commands._prompt import can_ask, yes_no
    from cudaenv.render.plan import render_own_installs

    ctx.out.write(render_own_installs(installs))
    if yes:
        return True
    if not can_ask(ctx):
        raise UserError(M("not removed: no terminal to ask on"), hint=M("give --yes to remove it without asking"))
    return yes_no(ctx, "Remove?")
