"""`cudaenv use VERSION`: print shell code that switches this shell to a CUDA toolkit.

stdout carries only shell code (``source <(cudaenv use 12.1)``); every message goes to stderr. When nothing
matches, stdout stays empty and the exit code is 1, so sourcing the output is harmless.
This is the hot path of the shell hook: only the stdlib, host, snapshot, switch, shells and the toolkit
probe are imported.
"""

from __future__ import annotations

import os

from cudaenv.core.options import Option, Positional, host_options

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Optional

HELP = "print shell code that switches this shell to a CUDA toolkit"

# The one declaration of `use`'s arguments: argparse (core.options.declare) and the hot path's parser (cli.parse_simple).
POSITIONAL = Positional(
    "version",
    help="12 (newest 12.x), 12.1 (newest 12.1.x), 12.1.105, a toolkit path, or `system` (what /usr/local/cuda "
    "points at); default: the nearest .cuda-version",
)
OPTIONS = (
    Option("--shell", takes_value=True, help="bash, zsh, fish, pwsh, sh (default: CUDAENV_SHELL, else $SHELL)"),
    Option("--off", help="remove every toolkit from PATH/LD_LIBRARY_PATH and undo cudaenv's variables"),
    Option("--local", help="also write VERSION to .cuda-version in this directory"),
    Option("--write", metavar="FILE", help="write a standalone bash switch script to FILE instead (for machines without cudaenv)"),
    Option("-q", "--quiet", help="no confirmation on stderr"),
    Option("--auto", hidden=True),  # the .cuda-version hook
    Option("--complete", hidden=True),  # versions for tab completion
) + host_options(python=False)


def run(args, ctx) -> int:
    from cudaenv.toolkit import select, switch
    from cudaenv.toolkit.project import load_toolkits, spec_path, start_dir, version_file_spec, write_version_file
    from cudaenv.core.text import printable

    host = ctx.host(args)
    if args.complete:
        toolkits, _link, _chosen = load_toolkits(host)
        ctx.out.write("".join(w + "\n" for w in switch.completion_words(toolkits)))
        return 0
    misuse = "off-alone" if args.off and (args.version or args.local or args.write) else "local-alone" if args.local and not args.version else None
    if misuse:
        return _fail(ctx, _words(misuse))
    shell = None if args.write else _shell(args, ctx, host.system)
    if shell is None and not args.write:
        return 2
    from_file = args.auto or (args.version is None and not args.off)  # the hook, or `use` in a project: its .cuda-version
    found, spec = version_file_spec(start_dir(ctx.env, ctx.cwd), host, ctx.env) if from_file else (None, None)
    want = None if args.off or args.write else spec if from_file else args.version  # what load_toolkits may pick
    toolkits, link, chosen = load_toolkits(host, want)
    try:
        if args.auto:
            if found is not None and spec is None:
                ctx.err.write("cudaenv: %s\n" % _words("ignored", printable(found)))
                return 1
            change = switch.plan_auto(toolkits, ctx.env, (found, spec) if found else None, host.system, link, chosen)
        elif args.off:
            change = switch.plan_off(toolkits, ctx.env, host.system, link)
        else:
            if args.version is None:
                if found is None:
                    return _fail(ctx, _words("no-version"), toolkits, host.system)
                if spec is None:
                    return _fail(ctx, _words("names-none", printable(found)), toolkits, host.system)
            else:
                spec = spec_path(args.version, start_dir(ctx.env, ctx.cwd), host, ctx.env)
            toolkit = chosen if chosen is not None and spec == want else select.select_toolkit(toolkits, spec, host.system)  # one pick
            written = None
            if args.local:
                written = write_version_file(ctx.cwd, args.version)
                ctx.err.write("cudaenv: %s\n" % _words("wrote", printable(written), args.version))
            if args.write:
                return _write_script(args.write, toolkit, toolkits, link, host.system, ctx)
            if written:  # as if the hook had entered the project: leaving it switches back to what was active
                change = switch.plan_auto(toolkits, ctx.env, (written, spec), host.system, link, toolkit)
            else:
                change = switch.plan_switch(toolkit, toolkits, ctx.env, host.system, link)
    except select.SelectError as exc:
        if args.auto:
            ctx.err.write("cudaenv: .cuda-version: %s\n" % _words(exc.message))
            return 1
        return _fail(ctx, exc.message, toolkits, host.system, exc.candidates)
    _write_code(ctx.out, shell.render(change))
    if change.message and not args.quiet:  # English: the capability's words, no renderer and no catalog loaded
        ctx.err.write("%s\n" % (change.message if ctx.english else _words(change)))
        if ctx.is_tty and not args.auto:
            ctx.err.write("cudaenv: %s\n" % _words("shell-code", shell.name if shell.name != "sh" else "bash"))
    return 0


def _words(key, *args) -> str:  # `use`'s message (render.switch.use_message), imported only where one is said
    from cudaenv.render.switch import use_message
    return use_message(key, *args)


def _fail(ctx, message: str, toolkits=None, system: str = "linux", candidates=(), shell: bool = False) -> int:
    from cudaenv.render.switch import render_shell_error, render_use_error
    from cudaenv.render.text import terminal_width

    width = terminal_width(ctx.env)
    ctx.err.write(render_shell_error(message, width) if shell else render_use_error(message, toolkits, system, candidates, width))
    return 1


def _shell(args, ctx, system: str):
    from cudaenv.core import config
    from cudaenv.shells import UnknownShell, detect_shell

    asked = args.shell or config.value(ctx.env, "CUDAENV_SHELL") or system == "windows"
    if not asked:  # the parent process names the shell (the hooks say --shell: one module fewer on their path)
        from cudaenv.probes.parent import parent_process_name
    parent = None if asked else parent_process_name(ctx.env, system)
    try:
        return detect_shell(args.shell, ctx.env, system, parent)
    except UnknownShell as exc:
        _fail(ctx, exc.message, shell=True)
        return None


def _write_code(out, text: str) -> None:
    """Write shell code; paths that are not valid UTF-8 (os.environ's surrogates) go out as their bytes."""
    try:
        out.write(text)
    except UnicodeEncodeError:
        out.flush()
        out.buffer.write(text.encode("utf-8", "surrogateescape"))
    out.flush()


# --------------------------------------------------------------------------------- --write FILE
def _write_script(target: str, toolkit, toolkits, link: Optional[str], system: str, ctx) -> int:
    from cudaenv.render.switch import render_switch_script
    from cudaenv.toolkit.project import switch_script, write_switch_script

    if system == "windows":
        return _fail(ctx, _words("write-windows"))
    path = os.path.join(ctx.cwd, os.path.expanduser(target)) if not os.path.isabs(target) else target
    try:
        write_switch_script(path, render_switch_script(switch_script(toolkit, toolkits, link, ctx.env)))
    except OSError as exc:
        return _fail(ctx, _words("cannot-write", path, exc.strerror or exc))
    ctx.err.write("cudaenv: %s\n" % _words("wrote-script", path, toolkit))
    return 0
