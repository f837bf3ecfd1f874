"""`cudaenv init SHELL`: print the shell hook (``eval "$(cudaenv init bash)"``); ``--install`` adds it to the rc file.

The hook comes from the shell's template in ``shell/`` with values inserted through that shell's quoting.
``--install`` appends one marked block that loads the hook, once, after a backup, atomically
(:mod:`cudaenv.toolkit.service`). Without ``--install`` nothing is written. The words are :mod:`cudaenv.render.init`'s.
"""

import argparse

from cudaenv.core.options import Option, Positional

HELP = "print the shell hook for your rc file"
POSITIONAL = Positional("shell", help="bash, zsh, fish or pwsh (default: CUDAENV_SHELL, else $SHELL)")
OPTIONS = (
    Option("--install", help="append the hook to your rc file (once, after a backup)"),
    Option("--rc", metavar="FILE", help="the rc file for --install (default: ~/.bashrc, ~/.zshrc, fish config.fish, $PROFILE)"),
)


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv import __version__
    from cudaenv.commands import COMMANDS
    from cudaenv.render.init import render_block, render_hook, render_hook_installed
    from cudaenv.toolkit.service import init

    outcome = init(ctx.env, args.shell, args.install, args.rc, render_block)
    if outcome.kind == "hook":
        ctx.out.write(render_hook(outcome.shell, outcome.template, __version__, COMMANDS))
    else:
        ctx.err.write(render_hook_installed(outcome))
    return outcome.exit_code
