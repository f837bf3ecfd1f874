"""`cudaenv checkpoint inspect FILE` and `cudaenv checkpoint fix FILE -o OUT`: a PyTorch checkpoint's format, saved
devices, key prefixes and weights_only verdict, read without running it (no torch, no import of anything it names),
and a rewrite that loads on this machine.

inspect exits 0 when torch.load(weights_only=True) would load the file here as it is, 1 when it would not (another
device, a refused global, an inconsistency), 3 when the verdict is unsafe (a global or a call outside torch's
weights_only allowlist: torch.load(weights_only=False) would import or run it), 4 when it is inconclusive (the walk
stopped, a bound was hit, the archive is ambiguous: nothing short of a complete walk is called safe), 2 on usage
errors.
fix exits 0 when OUT was written and its own verdict calls it safe and loadable, 1 when it could not be written
(or --trust wrote one that still needs weights_only=False), 2 when it refused or on usage errors.
"""

from __future__ import annotations

from cudaenv.core.errors import UserError
from cudaenv.core.options import Action, Option, Positional, host_options
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # inspect's start-up is a benchmark target (2x `python -c pass`): no argparse, typing or json
    import argparse
    from typing import Any

HELP = "inspect a PyTorch checkpoint without loading it, or rewrite it to load here"

# The one declaration of `checkpoint`'s actions: argparse (cudaenv.core.options.declare) and the fast parser
# (cli.parse_simple, through FAST_ACTIONS) read it. FILE is required: the fast parser hands a missing one to argparse.
INSPECT_POSITIONAL = Positional("file")
INSPECT_OPTIONS = host_options(python=False) + (Option("--json", help="print the report as JSON (with every tensor)"),)
FIX_POSITIONAL = Positional("file")
FIX_OPTIONS = host_options() + (
    Option("-o", "--output", metavar="OUT", help="where to write the result"),
    Option("--in-place", help="replace FILE (a backup FILE.bak is kept)"),
    Option("--to", choices=("pt", "safetensors"),
           help="the format of OUT: a torch.save file or safetensors (default: from OUT's suffix, .safetensors or else pt)"),
    Option("--map-location", metavar="DEV", help="cpu, cuda:N or auto (the first visible GPU, else cpu)"),
    Option("--strip-prefix", metavar="P", append=True, default=(), help="remove P from keys that start with it (repeatable)"),
    Option("--add-prefix", metavar="P", help="put P in front of every key"),
    Option("--extract", metavar="KEY", help="keep only this top-level entry (e.g. state_dict)"),
    Option("--trust", help="for a file outside the weights_only allowlist: load it with torch in your Python (runs its code)"),
    Option("--json", help="print the before/after report as JSON"),
)
ACTION_DEST = "checkpoint_command"
ACTIONS = (
    Action("inspect", help="format, devices, prefixes, weights_only verdict (never runs the file)",
           description="Read a checkpoint's pickle and zip directory (never its tensor bytes, never its code); PATH is a "
                       "file, or a checkpoint folder (DCP, DeepSpeed ZeRO, sharded safetensors or .bin) or its index file.",
           options=INSPECT_OPTIONS, positional=Positional(INSPECT_POSITIONAL.dest, nargs=None, metavar="PATH")),
    Action("fix", help="write a copy that loads here: devices, key prefixes, one entry",
           description="Rewrite a checkpoint: storage locations, key prefixes (and _metadata), one entry; or consolidate "
                       "a checkpoint folder into one file; as a torch.save file or safetensors (--to).",
           options=FIX_OPTIONS, positional=Positional(FIX_POSITIONAL.dest, nargs=None, metavar="FILE")),
)
FAST_ACTIONS = {"inspect": (INSPECT_OPTIONS, INSPECT_POSITIONAL)}  # action -> (options, required positional)


def run(args: argparse.Namespace, ctx: Any) -> int:
    action = getattr(args, "checkpoint_command", None)
    if action == "inspect":
        return run_inspect(args, ctx)
    if action == "fix":
        return run_fix(args, ctx)
    raise UserError(M("say what to do: `cudaenv checkpoint inspect FILE` or `cudaenv checkpoint fix FILE -o OUT`"),
                    hint=M("see `cudaenv checkpoint --help`"))


def run_inspect(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.checkpoint.service import inspect_service
    from cudaenv.render.checkpoint import render_inspect
    from cudaenv.render.text import terminal_width

    result = inspect_service(ctx.host(args), args.file, with_tensors=args.json)
    from cudaenv.checkpoint.report import FolderReport

    render = render_inspect
    if isinstance(result.report, FolderReport):  # a checkpoint folder (issue 32)
        from cudaenv.render.checkpoint_folder import render_folder as render
    ctx.out.write(_json(result.report) if args.json else render(result.report, terminal_width(ctx.env)))
    return result.exit_code


def run_fix(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.checkpoint.service import fix_service, is_folder_target
    from cudaenv.render.checkpoint import render_fix, render_trust_warning
    from cudaenv.render.text import terminal_width

    if args.trust:
        ctx.err.write(render_trust_warning(folder=is_folder_target(args.file)))
    result = fix_service(ctx.host(args), args.file, args.output, in_place=args.in_place,
                            map_location=args.map_location, strip=args.strip_prefix, add=args.add_prefix,
                            extract=args.extract, trust=args.trust, python=getattr(args, "python", None),
                            timeout=getattr(args, "timeout", None), to=args.to)
    ctx.out.write(_json(result.report) if args.json else render_fix(result.report, terminal_width(ctx.env)))
    return result.exit_code


def _json(report) -> str:
    from cudaenv.render.json_out import dumps

    return dumps(report.to_dict())

