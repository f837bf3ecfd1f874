"""`cudaenv install VERSION`: a CUDA toolkit side by side, without root (CUDA 13 from NVIDIA's wheels).

Exit 0: installed, or already there; 1: the install failed (nothing left behind) or the release cannot be
installed from wheels (the answer names what can); 2: usage. ``--plan`` prints commands and never runs them.
"""

from cudaenv.errors import UserError
from cudaenv.options import Option, Positional, add_options
from cudaenv.text import printable

HELP = "install a CUDA toolkit side by side, without root"

POSITIONAL = Positional("spec", help="the CUDA release: 13 (the newest 13.x), 13.0 or 13.0.2")
OPTIONS = (
    Option("--prefix", metavar="DIR", help="install into DIR/<release> instead of the user data dir (CUDAENV_DATA_DIR)"),
    Option("--installer", choices=("pip", "uv"), metavar="{pip,uv}", help="what downloads the wheels (default pip; uv must be on PATH)"),
    Option("--reinstall", help="install again even when the release is already installed"),
    Option("--plan", help="12.x and older: print the system-wide, toolkit-only install commands for this distribution (never run)"),
    Option("--runfile", metavar="FILE", help="12.x and older: install NVIDIA's downloaded runfile, toolkit only, without root"),
    Option("--list", help="list the releases installable from wheels and those that need a runfile or a repository"),
    Option("--json", help="print the result as JSON (schema_version 1)"),
    Option("--timeout", metavar="SECONDS", kind="seconds", help="seconds each pip/uv step may take (default CUDAENV_INSTALL_TIMEOUT, 1800)"),
)


def add_arguments(parser) -> None:
    add_options(parser, OPTIONS, POSITIONAL)


def _progress(ctx, args):
    if args.json or not ctx.err_is_tty:
        return lambda line: None

    def say(line):
        ctx.err.write("cudaenv: %s\n" % printable(line))
        ctx.err.flush()

    return say


def _emit(ctx, args, report, text_lines) -> None:
    if args.json:
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps(report.to_dict()))
    else:
        ctx.out.write("".join(printable(line) + "\n" for line in text_lines))


def run(args, ctx) -> int:
    import os
    import time

    from cudaenv import config
    from cudaenv.probes import toolkit_store as store
    from cudaenv.toolkit.install import plan

    host = ctx.host(args)
    if args.list:
        from cudaenv.toolkit.install.listing import run_list

        return run_list(args, ctx, host)
    if not args.spec:
        raise UserError("no CUDA version given", hint="cudaenv install 13 (or 13.0, 13.0.2); cudaenv install --list")
    spec = args.spec.strip()
    from cudaenv.version import parse_version

    if parse_version(spec) is None:
        raise UserError("%r is not a CUDA version" % printable(spec[:40]), hint="give 13, 13.0 or 13.0.2")
    if plan.needs_runfile(spec) or args.plan or args.runfile:
        from cudaenv.toolkit.install.system import run_system

        return run_system(args, ctx, host, spec, _emit)
    timeout = config.seconds(ctx.env, "CUDAENV_INSTALL_TIMEOUT", explicit=args.timeout)
    base = os.path.abspath(args.prefix) if args.prefix else store.toolkits_dir(ctx.env, host.system)
    from cudaenv.toolkit.install import apply

    progress = _progress(ctx, args)
    start = time.monotonic()
    pip = apply.find_installer(host, "pip" if args.installer != "uv" else "uv")
    if args.installer == "uv":
        pip = apply.find_installer(host, "pip")
    progress("looking up cuda-toolkit releases")
    try:
        release = plan.choose_release(spec, apply.releases(host, pip, min(timeout, 120.0)))
    except plan.PlanError as exc:
        raise UserError(exc.message, exc.hint, exit_code=1) from None
    if plan.needs_runfile(release):
        from cudaenv.toolkit.install.system import run_system

        return run_system(args, ctx, host, release, _emit)
    warnings = tuple(_machine_warnings(host, release))
    for w in warnings:
        progress("warning: " + w)
    from cudaenv import __version__

    outcome = apply.install_from_wheels(host, release, base, args.installer or "pip", args.reinstall, progress, timeout, __version__)
    seconds = round(time.monotonic() - start, 1)
    report = plan.InstallReport(True, outcome.status, spec, outcome.release, outcome.path, "cudaenv", args.installer or "pip",
                                outcome.components, outcome.download_bytes, outcome.files, seconds, (), warnings)
    if outcome.status == "already-installed":
        lines = ["CUDA %s is already installed in %s (give --reinstall to install it again)." % (release, outcome.path)]
    else:
        lines = ["Installed CUDA %s in %s (%d files, %.1f MB downloaded, %s s)." % (
            release, outcome.path, outcome.files, outcome.download_bytes / 1e6, seconds)]
        lines += ["  %s %s" % (c.name, c.version) for c in outcome.components]
    lines += ["warning: %s" % w for w in warnings]
    lines.append("Use it in this shell: source <(cudaenv use %s)   (rc files are not touched)" % release)
    _emit(ctx, args, report, lines)
    return 0


def _machine_warnings(host, release):
    """A driver older than the release's minimum, or a GPU it cannot build for: warnings naming what would work."""
    from cudaenv.toolkit.install.precheck import machine_warnings

    return machine_warnings(host, release)
