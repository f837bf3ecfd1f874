"""`cudaenv check-installer FILE`: check a downloaded CUDA .run installer without running it.

Exit 0: intact (sizes right, a declared checksum matches); 1: bad (cut, corrupt, a web page, not an installer);
3: not verified (nothing wrong found, but the header declares no checksum to compare with); 2: usage (a missing
file, a folder, a FIFO or device, an unreadable file).
"""

from cudaenv.render.json_out import dumps
import os

from cudaenv.core.errors import UserError
from cudaenv.core.options import Option, Positional
from cudaenv.core.i18n import M

HELP = "check a downloaded CUDA .run installer without running it"


POSITIONAL = Positional("file", nargs=None, metavar="FILE", help="the downloaded installer, e.g. cuda_12.1.0_530.30.02_linux.run")
OPTIONS = (Option("--json", help="print the report as JSON"),)


def run(args, ctx) -> int:
    from cudaenv.toolkit.installer_check import check_installer
    from cudaenv.render.installer import render_report
    from cudaenv.render.text import terminal_width
    from cudaenv.core.text import printable

    path = args.file
    if not os.path.exists(path):
        raise UserError(M("%s does not exist", printable(path)), hint=M("give the path of the downloaded .run file"))
    if os.path.isdir(path):
        raise UserError(M("%s is a folder, not an installer", printable(path)))
    try:
        report = check_installer(path, ctx.host(args))
    except OSError as exc:
        raise UserError(M("cannot read %s: %s", printable(path), printable(exc.strerror or exc)))
    ctx.out.write(dumps(report.to_dict()) if args.json else render_report(report, terminal_width(ctx.env)))
    return report.exit_code
