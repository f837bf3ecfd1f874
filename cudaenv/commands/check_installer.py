"""`cudaenv check-installer FILE`: check a downloaded CUDA .run installer without running it."""

import json
import os

from cudaenv.errors import UserError

HELP = "check a downloaded CUDA .run installer without running it"


def add_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="the downloaded installer, e.g. cuda_12.1.0_530.30.02_linux.run")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args, ctx) -> int:
    from cudaenv.installer_check import check_installer, render_report

    path = args.file
    if not os.path.exists(path):
        raise UserError("%s does not exist" % path, hint="give the path of the downloaded .run file")
    if os.path.isdir(path):
        raise UserError("%s is a folder, not an installer" % path)
    try:
        report = check_installer(path)
    except OSError as exc:
        raise UserError("cannot read %s: %s" % (path, exc.strerror or exc))
    ctx.out.write(json.dumps(report.to_dict(), indent=2) + "\n" if args.json else render_report(report))
    return 0 if report.ok else 1
