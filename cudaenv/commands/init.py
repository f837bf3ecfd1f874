"""`cudaenv init SHELL`: print the shell hook (``eval "$(cudaenv init bash)"``); ``--install`` adds it to the rc file.

The hook comes from the shell's template in ``shell/`` with values inserted through that shell's quoting.
``--install`` appends one marked block that loads the hook, once: it backs the rc file up first and writes
it atomically (a temp file in the same folder, then ``os.replace``). Without ``--install`` nothing is written.
"""

import argparse
import os
import time
from typing import Mapping, Optional, Tuple

HELP = "print the shell hook for your rc file"
BEGIN = "# >>> cudaenv init >>>"
END = "# <<< cudaenv init <<<"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", nargs="?", help="bash, zsh, fish or pwsh (default: CUDAENV_SHELL, else $SHELL)")
    parser.add_argument("--install", action="store_true", help="append the hook to your rc file (once, after a backup)")
    parser.add_argument("--rc", metavar="FILE", help="the rc file for --install (default: ~/.bashrc, ~/.zshrc, fish config.fish, $PROFILE)")


def run(args: argparse.Namespace, ctx) -> int:
    from cudaenv.core.errors import UserError
    from cudaenv.host import current_system
    from cudaenv.shells import HOOK_SHELLS, UnknownShell, detect_shell

    from cudaenv.core import config

    system = config.value(ctx.env, "CUDAENV_SYSTEM") or current_system()
    try:
        shell = detect_shell(args.shell, ctx.env, system)
    except UnknownShell as exc:
        raise UserError(exc.message, hint="cudaenv init bash|zsh|fish|pwsh") from None
    if shell.name not in HOOK_SHELLS:
        raise UserError("no hook for %s" % shell.name, hint="cudaenv init bash|zsh|fish|pwsh")
    if not args.install:
        ctx.out.write(render_hook(shell))
        return 0
    rc = args.rc or shell.rc_file(ctx.env, system)
    rc = _expand(rc, ctx.env)
    try:
        status, backup = install_hook(rc, shell.hook_line, "cudaenv init %s --install" % shell.name)
    except OSError as exc:
        raise UserError("cannot update %s: %s" % (rc, exc.strerror or exc), hint="give another file with --rc FILE") from None
    if status == "present":
        ctx.err.write("cudaenv: the hook is already in %s; nothing changed\n" % rc)
    else:
        ctx.err.write("cudaenv: added the hook to %s%s\n" % (rc, " (backup: %s)" % backup if backup else ""))
        ctx.err.write("cudaenv: open a new shell, or run: %s\n" % shell.hook_line)
    return 0


def render_hook(shell) -> str:
    """The hook for ``shell``: its template with the version and the subcommand list filled in."""
    from cudaenv import __version__
    from cudaenv.commands import COMMANDS
    from cudaenv.core.resources import read_shell_template

    return shell.render_template(read_shell_template(shell.template), {"VERSION": __version__, "COMMANDS": " ".join(COMMANDS)})


def _expand(path: str, env: Mapping[str, str]) -> str:
    if path.startswith("~"):
        home = env.get("HOME") or env.get("USERPROFILE")
        if home and (path == "~" or path[1] in "/\\"):
            path = home + path[1:]
    return path


def render_block(hook_line: str, how: str) -> str:
    return "%s\n# added by `%s`; delete this block to remove it\n%s\n%s\n" % (BEGIN, how, hook_line, END)


def install_hook(rc: str, hook_line: str, how: str) -> Tuple[str, Optional[str]]:
    """Append the marked block to ``rc`` unless it is there: ("present", None) or ("added", backup path or None)."""
    real = os.path.realpath(rc)  # an rc file linked from a dotfiles repo is edited where it lives
    from cudaenv.host.files import open_regular

    try:
        with open_regular(real) as fh:  # an rc "file" that is a FIFO is refused (OSError), never waited on
            old: Optional[str] = fh.read().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        old = None
    if old is not None and BEGIN in old:
        return "present", None
    folder = os.path.dirname(real) or "."
    os.makedirs(folder, exist_ok=True)
    backup = None
    mode = 0o644
    if old is not None:
        mode = os.stat(real).st_mode & 0o7777
        backup = real + ".cudaenv-backup"
        if os.path.lexists(backup):
            backup = "%s.cudaenv-backup-%s" % (real, time.strftime("%Y%m%d-%H%M%S"))
        _atomic_write(backup, old, mode)
    text = (old or "")
    if text and not text.endswith("\n"):
        text += "\n"
    if text:
        text += "\n"
    text += render_block(hook_line, how)
    _atomic_write(real, text, mode)
    return "added", backup


def _atomic_write(path: str, text: str, mode: int) -> None:
    from cudaenv.core.fs import atomic_write_text

    atomic_write_text(path, text, mode=mode, errors="surrogateescape")
