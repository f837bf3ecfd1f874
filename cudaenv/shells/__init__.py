"""Shell code for each shell: the :class:`Shell` interface, ``get_shell(name)`` and ``detect_shell(...)`` (direnv-style,
one file per shell), and the rule for a user's start-up files (:mod:`cudaenv.shells.startup`). Pure: it imports only
``core`` and sits below the Host, so every capability (the doctor's stale-path grep, toolkit's link and uninstall)
can use it; the name of the calling process is read by :mod:`cudaenv.probes.parent`.

The environment change is computed once in :mod:`cudaenv.toolkit.switch`; a :class:`Shell` only writes it with its
own quoting. bash, zsh and other POSIX shells share :mod:`posix`; fish and PowerShell have their own.
"""

from __future__ import annotations

import posixpath

from cudaenv.core.lazy import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing (and re) stay off the fast path
    import re
    from typing import Mapping, Optional

# ------------------------------------------------------------------ the Shell interface (each shell's module subclasses it)
PLACEHOLDER = LazyPattern(r"__CUDAENV_([A-Z_]+)__")


class UnknownShell(ValueError):
    def __init__(self, name: str, detected: bool = False):
        from cudaenv.core.i18n import M  # (only on this error's path: `use` imports no mark otherwise)

        self.name = name
        if detected:
            msg = M("cannot tell which shell this is (SHELL=%s)", name or "unset")
        else:
            msg = M("unknown shell %r", name)
        super().__init__(msg)
        self.message = msg


class Shell:
    """One shell's syntax. Subclasses set ``name``, ``template`` and implement quote/export/unset."""

    name = ""
    template = ""  # the hook template in shell/ (cudaenv.bash, ...)
    hook_line = ""  # the line `init --install` writes into the rc file

    def quote(self, value: str) -> str:
        raise NotImplementedError

    def export(self, name: str, value: str) -> str:
        raise NotImplementedError

    def unset(self, name: str) -> str:
        raise NotImplementedError

    def epilogue(self, changed: Mapping[str, object]) -> str:
        """Extra code after the assignments (bash: forget hashed command locations)."""
        return ""

    def check_name(self, name: str) -> str:
        if not (name.isascii() and name.isidentifier()):  # [A-Za-z_][A-Za-z0-9_]*, without compiling NAME
            raise ValueError("not a variable name: %r" % name)
        return name

    def render(self, change) -> str:
        """The code for a whole :class:`cudaenv.toolkit.switch.EnvChange` (empty when nothing changes)."""
        lines = []
        for name, value in change.changes:
            self.check_name(name)
            lines.append(self.unset(name) if value is None else self.export(name, value))
        tail = self.epilogue(change.as_dict())
        if tail:
            lines.append(tail)
        return "".join(line + "\n" for line in lines)

    def render_template(self, text: str, values: Mapping[str, str], raw: Optional[Mapping[str, str]] = None) -> str:
        """Fill ``__CUDAENV_NAME__`` placeholders in one pass: ``values`` quoted, ``raw`` (already code) as is."""
        raw = raw or {}

        def fill(match: "re.Match[str]") -> str:
            key = match.group(1)
            if key in raw:
                return raw[key]
            if key in values:
                return self.quote(values[key])
            return match.group(0)

        return PLACEHOLDER.sub(fill, text)

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        """The rc file `cudaenv init SHELL --install` appends the hook line to."""
        raise NotImplementedError


# ------------------------------------------------------------------ which shell
# name -> (module, class); every name a user may give (or $SHELL may end in).
SHELLS = {
    "bash": ("cudaenv.shells.posix", "Bash"),
    "zsh": ("cudaenv.shells.posix", "Zsh"),
    "sh": ("cudaenv.shells.posix", "Posix"),
    "dash": ("cudaenv.shells.posix", "Posix"),
    "ksh": ("cudaenv.shells.posix", "Posix"),
    "fish": ("cudaenv.shells.fish", "Fish"),
    "pwsh": ("cudaenv.shells.pwsh", "Pwsh"),
    "powershell": ("cudaenv.shells.pwsh", "Pwsh"),
}
HOOK_SHELLS = ("bash", "zsh", "fish", "pwsh")


def get_shell(name: str) -> Shell:
    """The :class:`Shell` for ``bash``, ``zsh``, ``fish``, ``pwsh`` (``powershell``), ``sh``; raises UnknownShell."""

    key = _clean(name)
    if key not in SHELLS:
        raise UnknownShell(name)
    module_name, class_name = SHELLS[key]
    return getattr(__import__(module_name, fromlist=[class_name]), class_name)()


def _clean(name: str) -> str:
    base = posixpath.basename((name or "").strip().replace("\\", "/")).lower()  # a Windows path too (C:\Program Files\PowerShell\7\pwsh.exe)
    base = base.lstrip("-")  # login shells: "-bash"
    if base.endswith(".exe"):
        base = base[:-4]
    return base


def detect_shell(explicit: Optional[str], env: Mapping[str, str], system: str, parent: Optional[str] = None) -> Shell:
    """``--shell``, else ``CUDAENV_SHELL``, else fish when the caller is fish, else the basename of ``$SHELL``, else
    PowerShell on Windows.

    The caller is fish when ``FISH_VERSION`` is in the environment or ``parent`` (the name of the process that ran
    cudaenv, :func:`cudaenv.probes.parent.parent_process_name`) is ``fish``: fish started from a bash login keeps ``SHELL=/bin/bash``, and
    ``cudaenv use 13.0 | source`` must still get fish code. Only fish overrides ``$SHELL`` this way: a bash or zsh
    parent is also what ``$(...)`` in a script looks like, where ``$SHELL`` is the better guess.
    """
    from cudaenv.core import config

    for candidate in (explicit, config.value(env, "CUDAENV_SHELL")):
        if candidate:
            return get_shell(candidate)
    if env.get("FISH_VERSION") or (parent is not None and _clean(parent) == "fish"):
        return get_shell("fish")
    shell = env.get("SHELL")
    if shell:
        try:
            return get_shell(shell)
        except UnknownShell:
            pass
    if system == "windows":
        return get_shell("pwsh")
    raise UnknownShell(shell or "", detected=True)


__all__ = ["Shell", "UnknownShell", "get_shell", "detect_shell", "SHELLS", "HOOK_SHELLS"]
