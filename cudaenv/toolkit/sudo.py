"""Whether a printed command that needs root starts with ``sudo``: the one rule of ``link`` and ``uninstall``.

``sudo`` is printed only when it is needed (the user is not root, or cannot write where the command writes) and
present (a ``sudo`` program on PATH): root in a container without sudo gets the bare command, and a user without
sudo gets the bare command and a note to run it as root. (The ``--script`` form decides the same at run time.)
"""

import os
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor's start-up reads few of these
from cudaenv.core.i18n import N_

# a sudo that leads a command: at the start, after a pipe, a list operator, a subshell's or $(, or a "read: " in a comment
# (a Chinese comment's full-width colon too: "再查看：sudo dmesg")
_LEADING_SUDO = LazyPattern(r"(^|[;&|(]\s*|:\s+|\uff1a\s*)sudo\s+(?=[^\s-])")


def sudo_prefix(needed: bool, available: bool) -> str:
    """``"sudo "`` when root is needed and sudo is there; ``""`` otherwise (root already, or no sudo to use)."""
    return "sudo " if needed and available else ""


def without_sudo(line: str) -> str:
    """``line`` with every ``sudo`` that leads a command dropped, for a user who is root or has no sudo to use:
    ``sudo rmmod x && sudo modprobe x`` -> ``rmmod x && modprobe x``; ``printf ... | sudo tee F`` -> ``printf ... | tee F``.
    A marked line (cudaenv.core.i18n.M) stays marked: its translation loses its sudo the same way."""
    from cudaenv.core.i18n import edit

    return edit(line, _drop_sudo)


def _drop_sudo(text):
    return _LEADING_SUDO.sub(r"\1", text)


def sudo_printed(platform) -> bool:
    """Whether a command that needs root is printed with ``sudo`` on ``platform`` (a Snapshot's Platform): not where the
    doctor ran as root or no sudo is installed; yes where that is not known (``--root``, an older report)."""
    return not (getattr(platform, "root_user", None) or getattr(platform, "sudo", None) is False)


def has_sudo(host) -> bool:
    """A ``sudo`` on this machine's PATH (a host program: the commands run here, never inside ``--root``)."""
    return host.which("sudo") is not None


def is_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


NO_SUDO_NOTE = N_("sudo is not installed here: run the commands marked [root] as root")  # a note: M(NO_SUDO_NOTE)
