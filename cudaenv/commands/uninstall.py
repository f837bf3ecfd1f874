"""`cudaenv uninstall VERSION|PATH`: print a precise removal plan (never executed by cudaenv itself)."""

import os
import stat

from cudaenv.core.options import add_host_options
from cudaenv.core.errors import UserError
from cudaenv.core.text import printable

HELP = "plan the removal of a CUDA toolkit, leaving nothing behind"


def add_arguments(parser) -> None:
    parser.add_argument("spec", nargs="?", metavar="VERSION|PATH", help="the toolkit to remove: 11.8, or its folder")
    parser.add_argument("--all", action="store_true", help="every toolkit matching VERSION (every toolkit without one)")
    parser.add_argument("--driver", action="store_true", help="also plan the removal of the NVIDIA driver")
    parser.add_argument("--json", action="store_true", help="print the plan (or --check result) as JSON")
    parser.add_argument("--script", metavar="FILE", help="write the plan as a bash script that asks before each step")
    parser.add_argument("--check", action="store_true", help="after removal: report what is still left (exit 1 if anything)")
    parser.add_argument("--yes", action="store_true", help="a toolkit `cudaenv install` made: remove it without asking")
    link = parser.add_mutually_exclusive_group()
    link.add_argument("--repoint", metavar="VERSION|PATH", help="point /usr/local/cuda at this toolkit instead of removing the link")
    link.add_argument("--remove-link", action="store_true", help="remove /usr/local/cuda (also when it dangles elsewhere)")
    add_host_options(parser)


def _site_packages(host, python):
    from cudaenv.probes.site_packages import probe_site_packages

    if not python:
        return ()
    if not os.path.exists(python):
        raise UserError("--python %s does not exist" % python, hint="give the interpreter of the environment holding the nvidia-* wheels")
    dirs, why = probe_site_packages(host, python, timeout=max(host.timeout, 10.0))
    if why is not None:
        raise UserError("--python %s could not be run: %s" % (python, why))
    return dirs


def run(args, ctx) -> int:
    from cudaenv.render.plan import render_plan_json, render_plan_text, render_residue_json, render_residue_text
    from cudaenv.toolkit.uninstall.inspect import inspect_uninstall
    from cudaenv.toolkit.uninstall.plan import plan_uninstall
    from cudaenv.toolkit.uninstall.records import Options
    from cudaenv.toolkit.uninstall.residue import find_residue
    from cudaenv.toolkit.uninstall.targets import load_toolkits, repoint_target, select_targets

    host = ctx.host(args)
    notes = []
    toolkits, link = load_toolkits(host, notes, site_packages=_site_packages(host, args.python))
    targets = select_targets(host, args.spec, toolkits, args.all, notes)
    active = next((t.path for t in toolkits if t.active), None)
    inspection = inspect_uninstall(
        host, targets, toolkits, link, notes, driver=args.driver, python=args.python, active_path=active
    )
    names = [t.path for t in targets]
    if targets and all(t.install_method == "cudaenv" for t in targets) and not host.rooted and not (args.check or args.script or args.json):
        return _remove_cudaenv_installs(ctx, host, targets, args.yes)
    if args.check:
        residue = find_residue(inspection)
        from cudaenv.render.text import terminal_width

        ctx.out.write(render_residue_json(names, residue) if args.json else render_residue_text(names, residue, terminal_width(ctx.env)))
        return 1 if residue else 0
    repoint = repoint_target(args.repoint, toolkits, targets, host.system) if args.repoint else None
    plan = plan_uninstall(inspection, Options(driver=args.driver, repoint=repoint, remove_link=args.remove_link, python=args.python))
    ghosts = [t for t in targets if t.source == "residue"]
    if ghosts and not plan.steps:
        found = ", ".join("%s (%s)" % (t.version or "?", t.path) for t in toolkits) or "none"
        raise UserError("no CUDA %s toolkit was found here, and nothing of it is left" % args.spec, hint="toolkits found: %s" % found)
    if args.script:
        if plan.system == "windows":
            raise UserError("--script writes a bash script; on Windows follow the printed steps", hint="drop --script")
        from cudaenv.toolkit.uninstall.script import render_script

        try:
            with open(args.script, "w", encoding="utf-8") as fh:
                fh.write(render_script(plan))
            os.chmod(args.script, os.stat(args.script).st_mode | stat.S_IXUSR)
        except OSError as exc:
            raise UserError("cannot write %s: %s" % (args.script, exc.strerror or exc))
    if args.json:
        ctx.out.write(render_plan_json(plan))
    else:
        from cudaenv.render.text import terminal_width, wrap

        width = terminal_width(ctx.env)
        ctx.out.write(render_plan_text(plan, width))
        if args.script:
            done = "Wrote the plan to %s: read it, then run `bash %s` (asks before each step)." % (args.script, args.script)
            ctx.out.write("\n" + "\n".join(wrap(printable(done), "", "", width, long_words="keep")) + "\n")
    return 0


def _remove_cudaenv_installs(ctx, host, targets, yes: bool) -> int:
    """Toolkits `cudaenv install` made: cudaenv owns their folders, so it removes them itself (after asking; no sudo)."""
    import sys

    from cudaenv.toolkit.install.apply import remove_install
    from cudaenv.probes.toolkits.store import is_cudaenv_install
    from cudaenv.host.tree import count_files

    lines = ["This removes (made by `cudaenv install`; nothing else is touched):"]
    for t in targets:
        files = count_files(host, t.path)
        lines.append("  %s  (CUDA %s, %d files)" % (printable(t.path), printable(t.version or "?"), files))
    ctx.out.write("\n".join(lines) + "\n")
    if not yes:
        stdin = ctx.stdin if ctx.stdin is not None else sys.stdin
        if stdin is None or not stdin.isatty():
            raise UserError("not removed: no terminal to ask on", hint="give --yes to remove it without asking")
        ctx.out.write("Remove? [y/N] ")
        ctx.out.flush()
        if stdin.readline().strip().lower() not in ("y", "yes"):
            ctx.out.write("Nothing removed.\n")
            return 1
    for t in targets:
        path = host.local(t.path)
        if not is_cudaenv_install(host, t.path):
            raise UserError("%s is no longer a cudaenv install; not removed" % printable(t.path))
        try:
            remove_install(path)
        except OSError as exc:
            raise UserError("could not remove %s: %s" % (printable(t.path), printable(exc.strerror or exc)), exit_code=1)
        ctx.out.write("Removed %s\n" % printable(t.path))
    return 0
