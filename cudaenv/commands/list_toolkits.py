"""`cudaenv list`: the CUDA toolkits installed here, which one is active, where /usr/local/cuda points.

Fast by design (at most 3x `python -c pass`): it reads files only (no nvcc run when a version file or
cuda.h tells the version), never starts the user's Python, and imports nothing heavy.
"""

from cudaenv.core.options import Option, host_options

HELP = "list the CUDA toolkits installed here"

# The one declaration of `list`'s options: argparse (core.options.declare) and the hot path's parser (cli.parse_simple).
OPTIONS = host_options(python=False) + (Option("--json", help="print the toolkits as JSON (schema_version 1)"),
                                         Option("--available", help="the CUDA releases `cudaenv install` can install "
                                                "(as `cudaenv install --list`)"))



def run(args, ctx) -> int:
    from cudaenv.probes.site_packages import env_site_packages
    from cudaenv.probes.toolkits import probe_toolkits
    from cudaenv.render import toolkits as render

    host = ctx.host(args)
    if getattr(args, "available", False):
        from cudaenv.commands.install import run_list

        return run_list(args, ctx, host)
    notes: list = []
    state = probe_toolkits(host, notes, site_packages=env_site_packages(host))
    if args.json:
        from cudaenv.render.json_out import dumps

        ctx.out.write(dumps(render.toolkits_to_json(state, notes)))
    else:
        from cudaenv.probes.toolkits.candidates import searched_places
        from cudaenv.render.text import terminal_width
        from cudaenv.toolkit.table import list_view

        places = searched_places(host.system) if not state.toolkits else ()
        ctx.out.write(render.render_toolkit_table(state, list_view(state), notes, system=host.system, places=places,
                                                  width=terminal_width(ctx.env)))
    return 0
