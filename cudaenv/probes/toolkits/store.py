"""Where ``cudaenv install`` puts toolkits, and how an install is recognised. On the ``cudaenv use`` path: stdlib only.

* ``CUDAENV_DATA_DIR`` (when set) or the user data dir (platformdirs' ``user_data_dir("cudaenv")``: on Linux
  ``$XDG_DATA_HOME/cudaenv`` or ``~/.local/share/cudaenv``), then ``toolkits/<release>/``;
* a finished install holds :data:`MARKER` (written last, before the rename): discovery lists a folder of the store
  only when it is there, and names the install method ``cudaenv``;
* a staging folder (``.13.0.2.tmp-*``) and the lock file (``.13.0.2.lock``) start with a dot: never listed.
"""

from __future__ import annotations

import os
import posixpath

MARKER = ".cudaenv-install.json"
STAGE_PREFIX = "."
METHOD = "cudaenv"


def data_dir(env, system: str = "linux") -> str:
    """cudaenv's data folder for ``env`` (``CUDAENV_DATA_DIR``, else platformdirs' user data dir)."""
    from cudaenv.core import config

    explicit = config.value(env, "CUDAENV_DATA_DIR")
    if explicit:
        return explicit
    if system not in ("windows", "darwin"):
        # platformdirs' Unix rule, written out so that `cudaenv use` does not import platformdirs (and pathlib)
        xdg = (env.get("XDG_DATA_HOME") or "").strip()
        if not xdg:
            home = env.get("HOME") or os.path.expanduser("~")
            xdg = posixpath.join(home, ".local", "share")
        return posixpath.join(xdg, "cudaenv")
    import platformdirs  # pragma: no cover - other systems

    return platformdirs.user_data_dir("cudaenv", appauthor=False)  # pragma: no cover


def toolkits_dir(env, system: str = "linux") -> str:
    return os.path.join(data_dir(env, system), "toolkits")


def is_cudaenv_install(host, path: str) -> bool:
    """True when ``path`` is a finished ``cudaenv install`` (its marker file is there)."""
    return host.is_file(host.join(path, MARKER))


def installed(host, system: str = "linux"):
    """The finished installs of the store as the inspected system names them (staging folders never)."""
    base = toolkits_dir(host.env, system)
    out = []
    for name in host.listdir(base):
        if name.startswith(STAGE_PREFIX):
            continue
        path = host.join(base, name)
        if host.is_dir(path) and is_cudaenv_install(host, path):
            out.append(path)
    return out
