"""`cudaenv torch recommend`, `cudaenv torch refresh` and `cudaenv torch guard -- INSTALL...`.

recommend: probe this machine (static torch pass only: torch is never imported), fold in the what-if
flags, the cached live index data (never the network unless ``--refresh``) and print the decision.
refresh: read the live index (``--index-base`` / ``CUDAENV_TORCH_INDEX``) within ``--timeout`` seconds in
all, and cache what it learned. The work is in :mod:`cudaenv.recommend.service`.
guard: run an install (argument vector, no shell), stopping first when the dry run of pip, uv pip, conda, mamba or micromamba would replace torch, and say
when torch was replaced (:mod:`cudaenv.recommend.guard_service`).
"""

import argparse
from cudaenv.render.json_out import dumps
from typing import Any

from cudaenv.core.config import TORCH_INDEX
from cudaenv.core.errors import UserError
from cudaenv.core.options import Action, Option, Positional, host_options
from cudaenv.render.text import terminal_width
from cudaenv.core.i18n import M

HELP = "recommend the right torch build for this machine"
MIRROR_HELP = "a PyTorch wheel mirror for the install line: nju, aliyun, sjtu, official (data/torch_mirrors.json) or its URL"

ACTION_DEST = "torch_command"
ACTIONS = (
    Action("recommend", help="pick the torch wheel index for this machine and print the install command",
           description="Pick the torch wheel index for this machine (driver, every GPU, OS, Python, torch version).",
           options=host_options() + (
               Option("--torch", metavar="VERSION", help="torch release to plan for: 2.7.1, 2.7 or latest (default: the installed one)"),
               Option("--variant", metavar="NAME", help="ask about one variant (cu121, cpu, rocm6.3, ...)"),
               Option("--driver", metavar="VERSION", help="what if the driver were VERSION (env: CUDAENV_DRIVER_VERSION)"),
               Option("--compute-capability", metavar="X.Y", append=True,
                      help="what if the GPUs were these (repeatable: --compute-capability 6.1 --compute-capability 8.6)"),
               Option("--os", choices=("linux", "windows", "macos"), help="what if the OS were this"),
               Option("--machine", choices=("x86_64", "aarch64", "arm64"), help="what if the CPU architecture were this"),
               Option("--jetson", metavar="JETPACK", const="",
                      help="what if this were a Jetson board: its JetPack (6.2) or L4T (r36.4.3) release; bare: the newest JetPack the tables know"),
               Option("--python-version", metavar="X.Y", help="what if the Python were X.Y (--python 3.11 means the same)"),
               Option("--index-base", metavar="URL", help=M("wheel index base instead of %s (env: CUDAENV_TORCH_INDEX)", TORCH_INDEX)),
               Option("--mirror", metavar="NAME|URL", help=MIRROR_HELP),
               Option("--installer", choices=("pip", "uv", "conda", "pixi"),
                      help="the install line for this installer (default: the probed environment's: pixi, conda, uv; else the one that installed torch)"),
               Option("--refresh", help="read the live index first (otherwise only the cache and bundled tables)"),
               Option("--format", choices=("text", "json", "requirements", "pyproject"), default="text", help="output form"),
               Option("--json", help="same as --format json"),
           )),
    Action("mirror-check", help="check that a PyTorch wheel mirror serves the build this machine needs, itself, intact",
           description="Read the mirror's page for the build `torch recommend` picks here (simple index, else flat listing), "
                       "find the wheel for this Python and platform, see whether the mirror serves it itself, and compare "
                       "its sha256 with the official index's.",
           options=host_options() + (
               Option("--mirror", metavar="NAME", help="a mirror of data/torch_mirrors.json: nju, aliyun, sjtu, official"),
               Option("--torch", metavar="VERSION", help="torch release to look for (default: the installed one, as recommend)"),
               Option("--driver", metavar="VERSION", help="what if the driver were VERSION"),
               Option("--compute-capability", metavar="X.Y", append=True, help="what if the GPUs were these (repeatable)"),
               Option("--python-version", metavar="X.Y", help="what if the Python were X.Y"),
               Option("--machine", choices=("x86_64", "aarch64", "arm64"), help="what if the CPU architecture were this"),
               Option("--index-base", metavar="URL", help=M("the official index to compare with (default %s; env: CUDAENV_TORCH_INDEX)", TORCH_INDEX)),
               Option("--index-timeout", metavar="SECONDS", kind="float", help="the most each page may take (default 15, env: CUDAENV_INDEX_TIMEOUT)"),
               Option("--json", help="print the check as JSON"),
           ), positional=Positional("url", help="the mirror's index base (or give --mirror NAME)", metavar="URL")),
    Action("refresh", help="read the live torch index and cache which versions and variants exist",
           description="Read {base}/torch/ and {base}/VARIANT/torch/ and cache what exists (offline first).",
           options=(
               Option("--index-base", metavar="URL", help="wheel index base (env: CUDAENV_TORCH_INDEX)"),
               Option("--timeout", metavar="SECONDS", kind="float",
                      help="the most the whole refresh may take (default 15, env: CUDAENV_INDEX_TIMEOUT)"),
               Option("--json", help="print what was learned as JSON"),
           )),
    Action("guard", help="run an install and say when it replaces torch (pip, uv pip, conda, mamba, micromamba: before anything changes)",
           description="Run INSTALL (after --, any installer); a pip, uv pip, conda, mamba or micromamba install is dry-run first and stopped "
                       "when it would replace torch; after it runs, a replaced torch is named with the command that restores it (exit 3; 1: failed).",
           options=(Option("--python", metavar="PATH", help="the Python whose torch to guard (default: the one the install names)"),
                    Option("--allow-torch-change", help="run the install even when its dry run would replace torch")),
           positional=Positional("install", nargs="*", metavar="INSTALL", help="the install command line, after --")),
)


def run(args: argparse.Namespace, ctx: Any) -> int:
    action = getattr(args, "torch_command", None)
    if action == "recommend":
        return run_recommend(args, ctx)
    if action == "refresh":
        return run_refresh(args, ctx)
    if action == "guard":
        return run_guard(args, ctx)
    if action == "mirror-check":
        return run_mirror_check(args, ctx)
    raise UserError(M("say what to do: `cudaenv torch recommend`, `refresh`, `guard` or `mirror-check`"), hint=M("see `cudaenv torch --help`"))


def run_guard(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.recommend.guard_service import guard_install
    from cudaenv.render.guard import render_guard

    outcome = guard_install(ctx.env, ctx.host(args), args.python, list(args.install or ()), args.allow_torch_change,
                            lambda chunk: ctx.out.write(chunk.decode("utf-8", "replace")))  # the installer's output, as it comes
    ctx.out.write(render_guard(outcome))
    return outcome.exit_code


def run_recommend(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.recommend import service
    from cudaenv.render import recommend as render

    options = service.Options(
        python=args.python, python_version=args.python_version, torch=args.torch, variant=args.variant, driver=args.driver,
        compute_capabilities=tuple(args.compute_capability or ()), os=args.os, machine=args.machine, jetson=args.jetson,
        index_base=args.index_base, refresh=args.refresh, installer=args.installer, mirror=args.mirror)
    rec = service.recommend_for(ctx.env, lambda: ctx.host(args), options)
    fmt = "json" if args.json else args.format
    if fmt == "json":
        ctx.out.write(dumps(rec.to_dict()))
    elif fmt == "requirements":
        ctx.out.write(render.render_requirements(rec))
    elif fmt == "pyproject":
        ctx.out.write(render.render_pyproject(rec))
    else:
        ctx.out.write(render.render_text(rec, terminal_width(ctx.env)))
    if fmt in ("requirements", "pyproject"):
        for note in rec.notes:
            ctx.err.write("note: %s\n" % note)
    return 0 if rec.ok else 1


def run_mirror_check(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.recommend import service
    from cudaenv.recommend.mirror_check import check_mirror
    from cudaenv.render.mirror import render_mirror_check

    options = service.Options(python=args.python, python_version=args.python_version, torch=args.torch, driver=args.driver,
                              compute_capabilities=tuple(args.compute_capability or ()), index_base=args.index_base,
                              mirror=args.mirror, machine=args.machine)
    check = check_mirror(ctx.env, lambda: ctx.host(args), options, args.url, args.index_timeout)
    ctx.out.write(dumps(check.to_dict()) if args.json else render_mirror_check(check, terminal_width(ctx.env)))
    return 0 if check.ok else 1


def run_refresh(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.recommend import service
    from cudaenv.render import recommend as render
    outcome = service.refresh_cache(ctx.env, args.index_base, args.timeout)
    if args.json:
        ctx.out.write(dumps(outcome.report().to_dict()))
        return 0 if outcome.ok else 1
    if not outcome.ok:
        ctx.err.write("".join(line + "\n" for line in render.render_refresh_failure(outcome, terminal_width(ctx.env))))
        return 1
    ctx.out.write("\n".join(render.render_refresh(outcome, terminal_width(ctx.env))) + "\n")
    return 0
