"""The host seam's process-wide state: the default timeout of a command, and the flags of the children that
:mod:`cudaenv.host.process` starts (read and written there and in :mod:`cudaenv.host.children`). Here, below both
and the :class:`~cudaenv.host.Host`, so that the end of a command that never ran a program (`use`, `list`) closes it
without loading the runner."""

from cudaenv.core import config as _config

DEFAULT_TIMEOUT = _config.setting("CUDAENV_TIMEOUT").default  # 5 s: the one default lives in config's table

CHILDREN = {"closing": False, "subreaper": None, "lock": None, "spawning": 0}
