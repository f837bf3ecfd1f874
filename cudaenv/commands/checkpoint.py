"""`cudaenv checkpoint inspect FILE` and `cudaenv checkpoint fix FILE -o OUT`: a PyTorch checkpoint's format, saved
devices, key prefixes and weights_only verdict, read without running it (no torch, no import of anything it names),
and a rewrite that loads on this machine.

inspect exits 0 when torch.load(weights_only=True) would load the file here as it is, 1 when it would not (another
device, a refused global, an inconsistency), 3 when the verdict is unsafe (a global or a call outside torch's
weights_only allowlist: torch.load(weights_only=False) would import or run it), 4 when it is inconclusive (the walk
stopped, a bound was hit, the archive is ambiguous: nothing short of a complete walk is called safe), 2 on usage
errors.
fix exits 0 when OUT was written, 2 when it refused (an unsafe file without --trust) or on usage errors.
"""

from __future__ import annotations

from cudaenv.core.errors import UserError
from cudaenv.core.options import Option, Positional, add_options, host_options

TYPE_CHECKING = False
if TYPE_CHECKING:  # inspect's start-up is a benchmark target (2x `python -c pass`): no argparse, typing or json
    import argparse
    from typing import Any

HELP = "inspect a PyTorch checkpoint without loading it, or rewrite it to load here"

# The one declaration of `checkpoint inspect`'s arguments: argparse (add_arguments) and the fast parser
# (cli.parse_simple, through FAST_ACTIONS) read it. FILE is required: the fast parser hands a missing one to argparse.
INSPECT_POSITIONAL = Positional("file")
INSPECT_OPTIONS = host_options(python=False) + (Option("--json", help="print the report as JSON (with every tensor)"),)
FAST_ACTIONS = {"inspect": (INSPECT_OPTIONS, INSPECT_POSITIONAL)}  # action -> (options, required positional)
ACTION_DEST = "checkpoint_command"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.core.options import add_host_options

    sub = parser.add_subparsers(dest=ACTION_DEST, metavar="ACTION", parser_class=type(parser))
    ins = sub.add_parser("inspect", help="format, devices, prefixes, weights_only verdict (never runs the file)",
                         description="Read a checkpoint's pickle and zip directory (never its tensor bytes, never its code).")
    ins.add_argument(INSPECT_POSITIONAL.dest, metavar="FILE")
    add_options(ins, INSPECT_OPTIONS)
    fix = sub.add_parser("fix", help="write a copy that loads here: devices, key prefixes, one entry",
                         description="Rewrite a checkpoint: storage locations, key prefixes (and _metadata), one entry.")
    add_host_options(fix)
    fix.add_argument("file", metavar="FILE")
    fix.add_argument("-o", "--output", metavar="OUT", help="where to write the result")
    fix.add_argument("--in-place", action="store_true", help="replace FILE (a backup FILE.bak is kept)")
    fix.add_argument("--map-location", metavar="DEV", help="cpu, cuda:N or auto (the first visible GPU, else cpu)")
    fix.add_argument("--strip-prefix", metavar="P", action="append", default=[], help="remove P from keys that start with it (repeatable)")
    fix.add_argument("--add-prefix", metavar="P", help="put P in front of every key")
    fix.add_argument("--extract", metavar="KEY", help="keep only this top-level entry (e.g. state_dict)")
    fix.add_argument("--trust", action="store_true", help="for a file outside the weights_only allowlist: load it with torch in your Python (runs its code)")
    fix.add_argument("--json", action="store_true", help="print the before/after report as JSON")


def _check_file(path: str) -> None:
    import os

    from cudaenv.core.text import printable

    if not os.path.exists(path):
        raise UserError("%s does not exist" % printable(path), hint="give the path of the checkpoint file")
    if os.path.isdir(path):
        raise UserError("%s is a folder, not a checkpoint file" % printable(path),
                        hint="a sharded checkpoint is a folder of files: inspect one of them")


def run(args: argparse.Namespace, ctx: Any) -> int:
    action = getattr(args, "checkpoint_command", None)
    if action == "inspect":
        return run_inspect(args, ctx)
    if action == "fix":
        return run_fix(args, ctx)
    raise UserError("say what to do: `cudaenv checkpoint inspect FILE` or `cudaenv checkpoint fix FILE -o OUT`",
                    hint="see `cudaenv checkpoint --help`")


def run_inspect(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.checkpoint.advice import probe_visible_gpus
    from cudaenv.checkpoint.analyze import inspect_file
    from cudaenv.render.checkpoint import render_inspect
    from cudaenv.render.text import terminal_width
    from cudaenv.core.text import printable

    _check_file(args.file)
    visible = probe_visible_gpus(ctx.host(args))
    try:
        report = inspect_file(args.file, visible, with_tensors=args.json)
    except OSError as exc:
        raise UserError("cannot read %s: %s" % (printable(args.file), printable(exc.strerror or exc)))
    ctx.out.write(_json(report) if args.json else render_inspect(report, terminal_width(ctx.env)))
    from cudaenv.checkpoint.verdict import inspect_exit_code

    return inspect_exit_code(report)


def run_fix(args: argparse.Namespace, ctx: Any) -> int:
    import os

    from cudaenv.checkpoint.advice import probe_visible_gpus, target_device
    from cudaenv.checkpoint.fix import DEVICE, Options, fix_checkpoint
    from cudaenv.render.checkpoint import render_fix
    from cudaenv.render.text import terminal_width
    from cudaenv.core.text import printable

    path = args.file
    _check_file(path)
    if args.in_place and args.output:
        raise UserError("give -o OUT or --in-place, not both")
    if not args.in_place and not args.output:
        raise UserError("say where to write the result: -o OUT (or --in-place, which keeps FILE.bak)")
    out = path if args.in_place else args.output
    if not args.in_place and os.path.exists(out) and os.path.samefile(out, path):
        raise UserError("OUT is FILE: fix never overwrites its input unless --in-place", hint="give another -o path")
    if os.path.isdir(out):
        raise UserError("%s is a folder" % printable(out), hint="give a file path: -o %s/fixed.pt" % printable(out))
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise UserError("the folder of %s does not exist" % printable(out))
    if not (args.map_location or args.strip_prefix or args.add_prefix or args.extract is not None):
        raise UserError("nothing to change", hint="--map-location cpu|cuda:N|auto, --strip-prefix module., "
                                                  "--add-prefix P, --extract state_dict")
    for p in args.strip_prefix + ([args.add_prefix] if args.add_prefix is not None else []):
        if not p:
            raise UserError("an empty prefix", hint="for example --strip-prefix module.")
    host = ctx.host(args)
    visible = probe_visible_gpus(host)
    target = None
    if args.map_location:
        target = target_device(args.map_location, visible)
        if not DEVICE.match(target):
            raise UserError("--map-location %s is not a device" % printable(args.map_location), hint="cpu, cuda:0 or auto")
    if args.trust:
        ctx.err.write("warning: --trust: if the file is not safe to rewrite without torch, torch loads it in your Python "
                      "with weights_only=False, which runs any code it carries\n")
    opts = Options(target, args.strip_prefix, args.add_prefix, args.extract)
    report = fix_checkpoint(host, path, out, opts, visible, in_place=args.in_place, trust=args.trust,
                            python=getattr(args, "python", None), timeout=getattr(args, "timeout", None))
    ctx.out.write(_json(report) if args.json else render_fix(report, terminal_width(ctx.env)))
    return 0


def _json(report) -> str:
    from cudaenv.render.json_out import dumps

    return dumps(report.to_dict())

