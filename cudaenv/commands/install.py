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

    from cudaenv import __version__, config
    from cudaenv.probes import toolkit_store as store
    from cudaenv.toolkit.install import plan
    from cudaenv.version import parse_version

    host = ctx.host(args)
    timeout = config.seconds(ctx.env, "CUDAENV_INSTALL_TIMEOUT", explicit=args.timeout)
    if args.list:
        return _list(args, ctx, host, min(timeout, 120.0))
    if not args.spec:
        raise UserError("no CUDA version given", hint="cudaenv install 13 (or 13.0, 13.0.2); cudaenv install --list")
    spec = args.spec.strip()
    if parse_version(spec) is None:
        raise UserError("%r is not a CUDA version" % printable(spec[:40]), hint="give 13, 13.0 or 13.0.2")
    base = os.path.abspath(args.prefix) if args.prefix else store.toolkits_dir(ctx.env, host.system)
    if args.runfile:
        return _runfile(args, ctx, host, spec, base, timeout, __version__)
    if args.plan:
        return _plan(args, ctx, host, spec)
    if plan.needs_runfile(spec):
        return _no_wheels(args, ctx, spec)
    from cudaenv.toolkit.install import apply

    progress = _progress(ctx, args)
    start = time.monotonic()
    pip = apply.find_installer(host, "pip")
    if args.installer == "uv":
        apply.find_installer(host, "uv")
    progress("looking up cuda-toolkit releases")
    try:
        release = plan.choose_release(spec, apply.releases(host, pip, min(timeout, 120.0)))
    except plan.PlanError as exc:
        raise UserError(exc.message, exc.hint, exit_code=1) from None
    if plan.needs_runfile(release):
        return _no_wheels(args, ctx, release)
    warnings = tuple(_machine_warnings(host, release))
    for w in warnings:
        progress("warning: " + w)
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


def _no_wheels(args, ctx, spec) -> int:
    from cudaenv.toolkit.install import plan

    text, alternatives = plan.no_wheel_answer(spec)
    report = plan.InstallReport(False, "no-wheels", spec, message=text, commands=alternatives)
    _emit(ctx, args, report, [text, "What works instead:"] + ["  " + a for a in alternatives])
    return 1


def _plan(args, ctx, host, spec) -> int:
    from cudaenv.probes.platform import probe_platform
    from cudaenv.toolkit.install import plan
    from cudaenv.toolkit.install.repos import plan_commands

    if not plan.needs_runfile(spec):
        raise UserError("--plan is for CUDA 12.x and older", hint="cudaenv install %s installs it from wheels, without root" % spec)
    platform = probe_platform(host, [])
    commands, source = plan_commands(spec, platform.distro_id, platform.distro_version, platform.wsl, platform.machine or host.machine)
    where = "WSL2 " if platform.wsl == 2 else ""
    title = "CUDA %s toolkit, system-wide, without a driver, on %s%s (cudaenv runs none of this):" % (
        spec, where, platform.distro or platform.distro_id or "this system")
    report = plan.InstallReport(True, "planned", spec, spec, installer="repository", commands=commands, message=title)
    _emit(ctx, args, report, [title] + ["  " + c for c in commands] + ["Source: " + source])
    return 0


def _runfile(args, ctx, host, spec, base, timeout, version) -> int:
    import os
    import time

    from cudaenv.toolkit.install import plan
    from cudaenv.toolkit.install.runfile import install_runfile

    start = time.monotonic()
    path = os.path.abspath(args.runfile)
    outcome = install_runfile(host, path, spec, base, args.reinstall, timeout, version)
    report = plan.InstallReport(True, outcome.status, spec, outcome.release, outcome.path, installer="runfile",
                                seconds=round(time.monotonic() - start, 1))
    if outcome.status == "already-installed":
        lines = ["CUDA %s is already installed in %s (give --reinstall to install it again)." % (outcome.release, outcome.path)]
    else:
        lines = ["Installed CUDA %s from %s in %s (toolkit only, no driver)." % (outcome.release, path, outcome.path)]
    lines.append("Use it in this shell: source <(cudaenv use %s)" % outcome.release)
    _emit(ctx, args, report, lines)
    return 0


def _list(args, ctx, host, timeout) -> int:
    from cudaenv.toolkit.install.listing import releases_cached, split_releases

    releases, source, path, notes = releases_cached(ctx.env, host, timeout)
    wheels, runfile = split_releases(releases)
    if args.json:
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps({"schema_version": 1, "wheels": wheels, "runfile_or_repository": runfile, "source": source,
                             "cache_file": path, "notes": notes}))
        return 0
    lines = ["From wheels (cudaenv install VERSION, no root):", "  " + (", ".join(wheels) or "none"),
             "Need NVIDIA's runfile or a repository (cudaenv install VERSION --runfile FILE | --plan):",
             "  " + (", ".join(runfile) or "none")]
    lines += ["note: " + n for n in notes]
    ctx.out.write("".join(printable(line) + "\n" for line in lines))
    return 0


def _machine_warnings(host, release):
    """A driver older than the release's minimum, or a GPU it cannot build for: warnings naming what would work."""
    from cudaenv.toolkit.install.precheck import machine_warnings

    return machine_warnings(host, release)
