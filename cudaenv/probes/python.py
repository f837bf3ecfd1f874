"""Which Python's torch to inspect: ``--python``, else the active venv, else the conda env, else PATH.

Interpreters are host programs: real paths on this machine, run with ``host.run``, never read inside
``--root`` (an image's Python cannot run here anyway).
"""

from __future__ import annotations

import os
import posixpath
from cudaenv.core.i18n import M
from cudaenv.model.record import Record

from cudaenv.core.errors import UserError
from cudaenv.core.lazy import LazyModule

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

SOURCES = ("--python", "VIRTUAL_ENV", "CONDA_PREFIX", "PATH")


class Interpreter(Record):
    path: str
    source: str  # --python | VIRTUAL_ENV | CONDA_PREFIX | PATH


def _runnable(path: str) -> bool:
    try:
        return os.path.isfile(path) and os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False


def env_interpreters(prefix: str, system: str, conda: Optional[bool] = None) -> Tuple[str, ...]:
    """Where a venv or conda prefix keeps its interpreter, in the order to take them (the first that exists).

    Linux and macOS: ``bin/python``, then ``bin/python3`` (venv and conda alike). Windows: ``Scripts\\python.exe`` (a
    venv), ``python.exe`` (a conda env); only that one when ``conda`` says which. The one rule of the doctor
    (``VIRTUAL_ENV``, ``CONDA_PREFIX``, ``--python DIR``) and of ``uninstall`` (the env a pip wheel is in).
    """
    if system == "windows":
        join = posixpath.join if "/" in prefix and "\\" not in prefix else ntpath.join  # keep the prefix's own separator
        venv, env = join(prefix, "Scripts", "python.exe"), join(prefix, "python.exe")
        return (env,) if conda else (venv,) if conda is False else (venv, env)
    return posixpath.join(prefix, "bin", "python"), posixpath.join(prefix, "bin", "python3")


def env_interpreter(prefix: str, system: str, conda: bool = False) -> str:
    """The interpreter inside a venv or conda prefix: bin/python, Scripts\\python.exe (venv) or python.exe (conda)."""
    return env_interpreters(prefix, system, conda)[0]


def _explicit(host, explicit: str) -> Interpreter:
    looks_like_path = os.sep in explicit or "/" in explicit or (host.system == "windows" and "\\" in explicit)
    if looks_like_path:
        if os.path.isdir(explicit):
            for candidate in env_interpreters(explicit, host.system, conda=False):
                if _runnable(candidate):
                    return Interpreter(os.path.abspath(candidate), "--python")
        if _runnable(explicit):
            return Interpreter(os.path.abspath(explicit), "--python")
    else:
        found = host.which(explicit)
        if found:
            return Interpreter(found, "--python")
    from cudaenv.core.i18n import M  # the error path only

    raise UserError(
        M("--python %s does not exist", explicit),
        hint=M("give the path of a Python interpreter (for example --python .venv/bin/python) or a name on PATH"),
    )


def find_interpreter(host, explicit: Optional[str] = None, notes: Optional[List] = None) -> Optional[Interpreter]:
    """The interpreter whose torch the doctor inspects, or None when there is none.

    Order: ``--python`` (a path, a venv folder, or a name on PATH; a missing one is a UserError), the
    active venv (``VIRTUAL_ENV``), the conda env (``CONDA_PREFIX``), then ``python3`` and ``python`` on PATH.
    A set ``VIRTUAL_ENV``/``CONDA_PREFIX`` without an interpreter adds a note (when ``notes`` is given).
    """
    if explicit:
        return _explicit(host, explicit)
    for variable, conda in (("VIRTUAL_ENV", False), ("CONDA_PREFIX", True)):
        prefix = host.env.get(variable)
        if not prefix:
            continue
        candidates = env_interpreters(prefix, host.system, conda=conda)
        found = next((c for c in candidates if _runnable(c)), None)
        if found is not None:
            return Interpreter(found, variable)
        if notes is not None:
            from cudaenv.model.snapshot import Note

            notes.append(Note("python", M("%s=%s has no interpreter at %s", variable, prefix, candidates[0])))
    for name in ("python3", "python"):
        found = host.which(name)
        if found:
            return Interpreter(found, "PATH")
    return None


def shim_target(host, path: str) -> Optional[str]:
    """The interpreter a pyenv shim (``~/.pyenv/shims/python3``: bash, then ``pyenv exec``, a dozen programs) would
    exec, found as pyenv finds it, without running it: the first version of ``PYENV_VERSION``, else of the nearest
    ``.python-version`` from ``PYENV_DIR`` and then the working directory up, else of ``PYENV_ROOT/version``, each the
    first word of a line (``#`` lines skipped), and its ``versions/NAME/bin/PROGRAM`` when that is a runnable file.
    None when only running the shim can tell (``system``, a name not installed as written, an odd name, no pyenv
    shim, ``--root``, Windows): the caller runs the shim."""
    folder, program = posixpath.split(path)
    if host.system == "windows" or host.rooted or posixpath.basename(folder) != "shims":
        return None
    text = host.read_text(path, limit=4096) or ""
    if 'libexec/pyenv" exec ' not in text:
        return None
    root = posixpath.dirname(folder)
    for line in text.splitlines():
        if line.startswith('export PYENV_ROOT="') and line.endswith('"'):
            root = line[len('export PYENV_ROOT="'):-1]
    versions = (host.env.get("PYENV_VERSION") or "").split(":")
    if not versions[0]:
        versions = _version_file_words(host, root)
    name = versions[0] if versions else "system"
    if not name or name in ("system", ".", "..") or "/" in name or "$" in name:
        return None
    found = posixpath.join(root, "versions", name, "bin", program)
    return found if _runnable(found) else None


def _version_file_words(host, root: str) -> List[str]:
    """The versions pyenv's ``version-file`` and ``version-file-read`` give (first word of each line), or []."""
    files = []
    for start in (host.env.get("PYENV_DIR") or "", os.getcwd()):
        current = start
        while current.startswith("/"):
            files.append(posixpath.join(current, ".python-version"))
            if current == "/":
                break
            current = posixpath.dirname(current)
    files.append(posixpath.join(root, "version"))
    for file in files:
        if host.is_file(file):
            text = host.read_text(file, limit=64 * 1024) or ""
            return [line.split()[0] for line in text.replace("\r", "\n").splitlines() if line.split() and not line.split()[0].startswith("#")]
    return []
