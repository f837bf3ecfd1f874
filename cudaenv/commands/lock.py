"""`cudaenv lock [FILE]`: write this machine's CUDA stack (what must hold on every machine of the project, and what
was merely seen) as a small versioned TOML file, default ``cuda-stack.toml``; ``-`` prints it. Check a machine
against it with ``cudaenv doctor --against FILE``. The work is in :mod:`cudaenv.stack`.

Exit 0 when written, 2 on usage errors (a bad ``--index-base``, an unwritable FILE).
"""

import argparse

from cudaenv.core.config import TORCH_INDEX
from cudaenv.core.options import Option, Positional, host_options
from cudaenv.core.i18n import M

HELP = "write this machine's CUDA stack (driver floor, GPU archs, torch build and index, toolkit, wheels) as TOML"


POSITIONAL = Positional("file", metavar="FILE", help="where to write (default: cuda-stack.toml; - prints it)")
OPTIONS = host_options() + (
    Option("--index-base", metavar="URL",
           help=M("wheel index base the torch build is pinned to, instead of %s", TORCH_INDEX)),
    Option("--snippets",
           help="also print what carries the choice into the project's files: a requirements file, uv's "
                "pyproject index pins, pixi's [system-requirements]"),
)


def run(args: argparse.Namespace, ctx) -> int:
    import os

    from cudaenv.core.errors import UserError
    from cudaenv.core.text import printable
    from cudaenv.render.stack import render_locked, render_snippets
    from cudaenv.render.text import terminal_width
    from cudaenv.stack.service import DEFAULT_FILE, lock_stack, write_stack

    stack, text = lock_stack(ctx.env, ctx.host(args), args.python, args.index_base)
    if args.file == "-":
        ctx.out.write(text + ("\n" + render_snippets(stack) if args.snippets else ""))
        return 0
    path = args.file or DEFAULT_FILE
    try:
        write_stack(os.path.join(ctx.cwd, path), text)
    except OSError as exc:
        raise UserError(M("cannot write %s (%s)", printable(path), printable(exc.strerror or exc)),
                        hint=M("give a FILE this user can write, or - to print it")) from None
    ctx.out.write(render_locked(stack, path, terminal_width(ctx.env)) + ("\n" + render_snippets(stack) if args.snippets else ""))
    return 0
