"""`cudaenv install VERSION`: a CUDA toolkit side by side, without root (CUDA 13 from NVIDIA's wheels).

Arguments -> one service call (:mod:`cudaenv.toolkit.install.service`) -> one renderer (:mod:`cudaenv.render.install`)
-> the exit code. Exit 0: installed, already there, or planned; 1: the install failed (nothing left behind), the
machine check stopped it (``--force`` installs anyway), or the release cannot be installed from wheels (the answer
names what can); 2: usage. ``--plan`` prints commands and never runs them.

On a terminal (stderr is one, and no ``--json``) each step is a line on stderr, and pip's own download output is
passed through as it arrives (escaped, bounded).
"""

from cudaenv.core.options import Option, Positional
from cudaenv.core.i18n import M

HELP = "install a CUDA toolkit side by side, without root"

POSITIONAL = Positional("spec", help="the CUDA release: 13 (the newest 13.x), 13.0 or 13.0.2")
OPTIONS = (
    Option("--prefix", metavar="DIR", help="install into DIR/<release> instead of the user data dir (CUDAENV_DATA_DIR)"),
    Option("--installer", choices=("pip", "uv"), metavar="{pip,uv}", help="what downloads the wheels (default pip; uv must be on PATH)"),
    Option("--components", metavar="LIST", help="also install these libraries at the release's pins, comma-separated: "
           "cublas,cufft,curand,cusolver,cusparse,nvrtc,nvjitlink,cupti,nvtx, and cudnn (the newest for the CUDA major)"),
    Option("--reinstall", help="install again even when the release is already installed"),
    Option("--force", help="install even when this machine's driver or GPUs cannot run what the release builds "
           "(the warnings still print)"),
    Option("--plan", help="12.x and older: print the system-wide, toolkit-only install commands for this distribution (never run)"),
    Option("--runfile", metavar="FILE", help="12.x and older: install NVIDIA's downloaded runfile, toolkit only, without root"),
    Option("--list", help="list the releases installable from wheels and those that need a runfile or a repository"),
    Option("--json", help="print the result as JSON (schema_version 1)"),
    Option("--timeout", metavar="SECONDS", kind="seconds", help="seconds each pip/uv step may take (default CUDAENV_INSTALL_TIMEOUT, 1800)"),
)



def _terminal(ctx, args):
    """(a line per step, pip's output passed through) for a terminal; nothing for --json or a pipe."""
    if args.json or not ctx.err_is_tty:
        return (lambda line: None), None
    from cudaenv.core.i18n import tr
    from cudaenv.render.install import PassThrough
    from cudaenv.core.text import printable

    def say(line):
        ctx.err.write("cudaenv: %s\n" % printable(tr(line)))
        ctx.err.flush()

    return say, PassThrough(ctx.err)


def _print(ctx, args, report, lines) -> None:
    if args.json:
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps(report.to_dict()))
    else:
        ctx.out.write("".join(line + "\n" for line in lines))


def run(args, ctx) -> int:
    from cudaenv import __version__
    from cudaenv.core import config
    from cudaenv.core.errors import UserError
    from cudaenv.render import install as render
    from cudaenv.toolkit.install import service

    host = ctx.host(args)
    timeout = config.seconds(ctx.env, "CUDAENV_INSTALL_TIMEOUT", explicit=args.timeout)
    if args.list:
        return run_list(args, ctx, host)
    if args.force and (args.plan or args.runfile):
        raise UserError(M("--force is for installs from wheels"), hint=M("--plan runs nothing; a runfile checks its own machine"))
    request = service.InstallRequest(args.spec, args.prefix, args.installer, bool(args.reinstall), bool(args.plan),
                                     args.runfile, args.components, bool(args.force), timeout)
    progress, passthrough = _terminal(ctx, args)
    try:
        report = service.install(request, host, ctx.env, __version__, progress, passthrough)
    finally:
        if passthrough is not None:
            passthrough.close()
    from cudaenv.render.text import terminal_width

    _print(ctx, args, report, render.render_install(report, terminal_width(ctx.env)))
    return 0 if report.ok else 1


def run_list(args, ctx, host) -> int:
    """``cudaenv install --list`` and ``cudaenv list --available``."""
    from cudaenv.core import config
    from cudaenv.render import install as render
    from cudaenv.toolkit.install import service

    listed = service.available(ctx.env, host, config.seconds(ctx.env, "CUDAENV_INSTALL_TIMEOUT", explicit=getattr(args, "timeout", None)))
    from cudaenv.render.text import terminal_width

    _print(ctx, args, listed, render.render_releases(listed, terminal_width(ctx.env)))
    return 0
