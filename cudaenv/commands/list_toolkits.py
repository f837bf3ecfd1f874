"""`cudaenv list`: the CUDA toolkits installed here, which one is active, where /usr/local/cuda points.

Fast by design (at most 3x `python -c pass`): it reads files only (no nvcc run when a version file or
cuda.h tells the version), never starts the user's Python, and imports nothing heavy.
"""

HELP = "list the CUDA toolkits installed here"

# Read by `cudaenv.cli.parse_simple` without argparse: option -> (dest, takes a value).
FAST_POSITIONAL = None
FAST_OPTIONS = {"--json": ("json", False), "--root": ("root", True), "--timeout": ("timeout", True)}


def add_arguments(parser) -> None:
    from cudaenv.cli import add_host_options

    add_host_options(parser, python=False)
    parser.add_argument("--json", action="store_true", help="print the toolkits as JSON (schema_version 1)")


def run(args, ctx) -> int:
    from cudaenv.probes.toolkits import env_site_packages, probe_toolkits
    from cudaenv.render import toolkits as render

    host = ctx.host(args)
    notes: list = []
    state = probe_toolkits(host, notes, site_packages=env_site_packages(host))
    if args.json:
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps(render.toolkits_to_json(state, notes)))
    else:
        ctx.out.write(render.render_toolkit_table(state, notes, system=host.system))
    return 0
