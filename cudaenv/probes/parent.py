"""The name of the process that ran cudaenv (``fish``): how `cudaenv use` tells a fish caller that kept
``SHELL=/bin/bash`` (see :func:`cudaenv.shells.detect_shell`). On ``cudaenv use``'s path: stdlib only."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, Optional


def parent_process_name(env: Mapping[str, str], system: str) -> Optional[str]:
    """The name of the process that ran cudaenv (``/proc/PPID/comm``: ``fish``), read through a Host of this machine
    (never inside ``--root``: the caller runs here); None where there is no /proc. ``detect_shell``'s ``parent``."""
    from cudaenv.host import Host

    text = Host(root="/", env=env, system=system).read_text("/proc/%d/comm" % os.getppid(), limit=64)
    return text.strip() or None if text else None
