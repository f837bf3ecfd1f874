"""`cudaenv doctor`: inspect this machine's CUDA setup and report it (``--json``: the snapshot contract)."""

import argparse

HELP = "inspect this machine's CUDA setup, say what is wrong and how to fix it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.cli import add_host_options

    add_host_options(parser)
    parser.add_argument("--json", action="store_true", help="print the snapshot as JSON (schema_version 1)")
    parser.add_argument("--quick", action="store_true", help="do not import torch (static torch facts only)")


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.collect import collect_snapshot

    host = ctx.host(args)
    snapshot = collect_snapshot(host, python=args.python, quick=args.quick)
    if args.json:
        from cudaenv.render.json_out import render_snapshot_json

        ctx.out.write(render_snapshot_json(snapshot))
    else:
        from cudaenv.render.facts import render_facts

        ctx.out.write(render_facts(snapshot))
    return 0
