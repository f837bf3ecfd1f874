"""The services of `cudaenv link` and `cudaenv init`: what they read and write of the machine.

:func:`link`: the toolkit a spec names on the inspected system, and the plan that repoints /usr/local/cuda at it
(:func:`cudaenv.toolkit.link.plan_link_for`); the words are :mod:`cudaenv.render.switch`'s.

:func:`init` picks the shell (``SHELL`` argument, ``CUDAENV_SHELL``, ``$SHELL``), reads its hook template from
``shell/``, and with ``install`` appends one marked block that loads the hook, once: it backs the rc file up first
and writes it atomically (a temp file in the same folder, then ``os.replace``). The hook and the block are worded by
:mod:`cudaenv.render.init`; the command passes the block's renderer in.
"""

import os
import time
from typing import Callable, Mapping, Optional, Tuple

from cudaenv.core.errors import UserError
from cudaenv.core.i18n import M


class LinkOutcome:
    """``report`` (the plan and its notes) for ``toolkit``; or, when the spec names no single toolkit,
    ``error`` (the selection's message) and the ``toolkits`` found. ``root``: the inspected folder (``--root``),
    None for this machine."""

    __slots__ = ("toolkit", "report", "error", "toolkits", "system", "root")

    def __init__(self, toolkit=None, report=None, error: Optional[str] = None, toolkits=(), system: str = "linux",
                 root: Optional[str] = None):
        self.toolkit, self.report, self.error, self.toolkits = toolkit, report, error, tuple(toolkits)
        self.system, self.root = system, root

    @property
    def exit_code(self) -> int:
        return 1 if self.error is not None or not self.report.plan.ok else 0


def link(host, spec: str, env: Mapping[str, str]) -> LinkOutcome:
    """Plan pointing /usr/local/cuda at the toolkit ``spec`` names (``~`` is the user's home)."""
    from cudaenv.probes.toolkits import probe_toolkits
    from cudaenv.toolkit.link import plan_link_for
    from cudaenv.toolkit.select import SelectError, select_toolkit

    if host.system == "windows":
        raise UserError(M("Windows has no /usr/local/cuda link"), hint=M("switch with `cudaenv use VERSION --shell pwsh` (it sets CUDA_PATH)"))
    if spec.startswith("~") and env.get("HOME"):
        spec = env["HOME"] + spec[1:]
    state = probe_toolkits(host, [])
    root = (host.local("/").rstrip("/") or "/") if host.rooted else None
    try:
        toolkit = select_toolkit(state.toolkits, spec, host.system)
    except SelectError as exc:
        return LinkOutcome(error=exc.message, toolkits=state.toolkits, system=host.system, root=root)
    return LinkOutcome(toolkit, plan_link_for(host, toolkit, env), system=host.system, root=root)


BEGIN = "# >>> cudaenv init >>>"  # the markers of the block --install appends (and finds again)
END = "# <<< cudaenv init <<<"


class InitOutcome:
    """``kind``: "hook" (print ``template`` for ``shell``), "present" (the block was already in ``rc``) or "added"
    (appended to ``rc``; ``backup``: the copy made first, None for a new file)."""

    __slots__ = ("kind", "shell", "template", "rc", "backup")

    def __init__(self, kind: str, shell, template: str = "", rc: Optional[str] = None, backup: Optional[str] = None):
        self.kind, self.shell, self.template, self.rc, self.backup = kind, shell, template, rc, backup

    @property
    def exit_code(self) -> int:
        return 0


def init(env: Mapping[str, str], shell_name: Optional[str], install: bool, rc: Optional[str],
         block: Callable[[str, str], str]) -> InitOutcome:
    """The hook for the shell asked for (or found), or with ``install`` the rc file edited; ``block(hook_line, how)``
    is the text appended (render.init.render_block)."""
    from cudaenv.core import config
    from cudaenv.core.resources import read_shell_template
    from cudaenv.host import current_system
    from cudaenv.shells import HOOK_SHELLS, UnknownShell, detect_shell

    system = config.value(env, "CUDAENV_SYSTEM") or current_system()
    try:
        shell = detect_shell(shell_name, env, system)
    except UnknownShell as exc:
        raise UserError(exc.message, hint=M("cudaenv init bash|zsh|fish|pwsh")) from None
    if shell.name not in HOOK_SHELLS:
        raise UserError(M("no hook for %s", shell.name), hint=M("cudaenv init bash|zsh|fish|pwsh"))
    if not install:
        return InitOutcome("hook", shell, read_shell_template(shell.template))
    path = _expand(rc or shell.rc_file(env, system), env)
    try:
        status, backup = install_hook(path, block(shell.hook_line, "cudaenv init %s --install" % shell.name))
    except OSError as exc:
        raise UserError(M("cannot update %s: %s", path, exc.strerror or exc), hint=M("give another file with --rc FILE")) from None
    return InitOutcome(status, shell, rc=path, backup=backup)


def _expand(path: str, env: Mapping[str, str]) -> str:
    if path.startswith("~"):
        home = env.get("HOME") or env.get("USERPROFILE")
        if home and (path == "~" or path[1] in "/\\"):
            path = home + path[1:]
    return path


def install_hook(rc: str, block: str) -> Tuple[str, Optional[str]]:
    """Append ``block`` to ``rc`` unless the marked block is there: ("present", None) or ("added", backup or None)."""
    from cudaenv.core.fs import atomic_write_text
    from cudaenv.host.files import open_regular

    real = os.path.realpath(rc)  # an rc file linked from a dotfiles repo is edited where it lives
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
        atomic_write_text(backup, old, mode=mode, errors="surrogateescape")
    text = (old or "")
    if text and not text.endswith("\n"):
        text += "\n"
    if text:
        text += "\n"
    atomic_write_text(real, text + block, mode=mode, errors="surrogateescape")
    return "added", backup
