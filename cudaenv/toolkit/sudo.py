"""Whether a printed command that needs root starts with ``sudo``: the one rule of ``link`` and ``uninstall``.

``sudo`` is printed only when it is needed (the user is not root, or cannot write where the command writes) and
present (a ``sudo`` program on PATH): root in a container without sudo gets the bare command, and a user without
sudo gets the bare command and a note to run it as root. (The ``--script`` form decides the same at run time.)
"""

import os


def sudo_prefix(needed: bool, available: bool) -> str:
    """``"sudo "`` when root is needed and sudo is there; ``""`` otherwise (root already, or no sudo to use)."""
    return "sudo " if needed and available else ""


def has_sudo(host) -> bool:
    """A ``sudo`` on this machine's PATH (a host program: the commands run here, never inside ``--root``)."""
    return host.which("sudo") is not None


def is_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


NO_SUDO_NOTE = "sudo is not installed here: run the commands marked [root] as root"
