"""The one rule for a user's shell start-up files, given the environment (``HOME``, ``ZDOTDIR``, ``XDG_CONFIG_HOME``).

Used by ``cudaenv init --install`` (the file each shell's hook line goes into: :func:`startup_file`), by ``cudaenv
uninstall`` and ``cudaenv link`` (the files searched for lines naming a toolkit: :func:`startup_files`) and by the
doctor's stale ``LD_LIBRARY_PATH`` grep (the same files as shell words: :func:`startup_words`)::

    startup_file("zsh", {"HOME": "/home/u", "ZDOTDIR": "/home/u/.config/zsh"}) -> "/home/u/.config/zsh/.zshrc"
    startup_file("fish", {"HOME": "/home/u", "XDG_CONFIG_HOME": "/xdg"}) -> "/xdg/fish/config.fish"

zsh reads its files from ``$ZDOTDIR`` when that is set, else from ``$HOME`` (zsh(1), STARTUP/SHUTDOWN FILES); fish
reads ``$XDG_CONFIG_HOME/fish/config.fish``, else ``~/.config/fish/config.fish`` (fish docs, "Configuration files").
Stdlib only (posixpath): it sits on the ``cudaenv init`` path.
"""

from __future__ import annotations

import posixpath

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the fast path
    from typing import List, Mapping, Optional, Tuple

# (shell, file, the variable naming the folder it is in (None: HOME), that folder below HOME when the variable is unset)
FILES = (
    ("bash", ".bashrc", None, ""),
    ("zsh", ".zshrc", "ZDOTDIR", ""),
    ("sh", ".profile", None, ""),
    ("bash-login", ".bash_profile", None, ""),
    ("fish", "fish/config.fish", "XDG_CONFIG_HOME", ".config"),
)
VARIABLES = tuple(sorted({row[2] for row in FILES if row[2]}))  # the environment variables that move a file


def _folder(home: str, variable: Optional[str], below: str, env: Mapping[str, str]) -> str:
    value = env.get(variable) if variable else None
    if value:
        return value
    return posixpath.join(home, below) if below else home


def config_home(env: Mapping[str, str]) -> str:
    """``$XDG_CONFIG_HOME``, else ``~/.config`` (fish's and PowerShell's folder on Linux and macOS)."""
    return _folder(env.get("HOME") or "~", "XDG_CONFIG_HOME", ".config", env)


def startup_file(shell: str, env: Mapping[str, str]) -> str:
    """The start-up file ``shell`` (``bash``, ``zsh``, ``sh``, ``fish``) reads for this environment (``~`` without HOME)."""
    home = env.get("HOME") or "~"
    for name, file, variable, below in FILES:
        if name == shell:
            return posixpath.join(_folder(home, variable, below, env), file)
    raise KeyError(shell)


def startup_files(home: str, env: Optional[Mapping[str, str]] = None) -> Tuple[str, ...]:
    """Every start-up file of a user whose home is ``home``: where ``env`` (that user's environment) moves a file
    (``ZDOTDIR``, ``XDG_CONFIG_HOME``), both the moved file and the one in its usual place, since the variable may be
    set only in some of the user's shells (``ZDOTDIR`` is often set in ``~/.zshenv``)."""
    out: List[str] = []
    for _, file, variable, below in FILES:
        for folder in (_folder(home, variable, below, env or {}), _folder(home, None, below, {})):
            path = posixpath.join(folder, file)
            if path not in out:
                out.append(path)
    return tuple(out)


def startup_words() -> Tuple[str, ...]:
    """The start-up files as words of a POSIX shell command line, as the user's own shell resolves them
    (``~/.bashrc``, ``${ZDOTDIR:-~}/.zshrc``, ``${XDG_CONFIG_HOME:-~/.config}/fish/config.fish``)."""
    out: List[str] = []
    for _, file, variable, below in FILES:
        default = posixpath.join("~", below) if below else "~"
        folder = "${%s:-%s}" % (variable, default) if variable else default
        out.append(posixpath.join(folder, file))
    return tuple(out)
