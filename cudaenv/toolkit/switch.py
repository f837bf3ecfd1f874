"""Which toolkit `cudaenv use` means, and the environment change that switches a shell to it.

Everything here is pure: it takes the toolkits found (:class:`cudaenv.model.snapshot.Toolkit`), the shell's
environment mapping and the platform, and returns an :class:`EnvChange` (variable -> value, or None to
unset). The shell classes in :mod:`cudaenv.shells` only write that change with their own quoting.

The switch is exact and reversible:

* ``CUDA_HOME`` and ``CUDA_PATH`` name the chosen toolkit; its ``bin`` goes first on ``PATH`` and (Linux)
  its library dir first on ``LD_LIBRARY_PATH``.
* Every entry that belongs to a known toolkit is removed first (the chosen one's too, so nothing
  accumulates): anything under a toolkit folder, under ``/usr/local/cuda`` and under ``/usr/local/cuda-N*``.
  Toolkits that live in a shared prefix (``/usr``, a conda env, pip wheels) are never cut out of PATH:
  only the entry cudaenv itself put in front is taken back.
* ``CUDAENV_ACTIVE`` remembers the toolkit cudaenv set. The first switch keeps the ``CUDA_HOME`` /
  ``CUDA_PATH`` that were there before in ``CUDAENV_SAVED_CUDA_HOME`` / ``CUDAENV_SAVED_CUDA_PATH``;
  ``--off`` puts them back (or unsets them when there were none).
* The ``.cuda-version`` auto-switch keeps ``CUDAENV_AUTO`` (the file it applied) and ``CUDAENV_AUTO_PREV``
  (the toolkit active before it, empty for none), so leaving the project switches back.
"""

from __future__ import annotations

import posixpath

from cudaenv.core.lazy import LazyModule
from cudaenv.model.record import Record, replace
from cudaenv.model.toolkits import Toolkit
from cudaenv.toolkit.select import LINK, SelectError, norm_path, select_toolkit, unique_toolkits
from cudaenv.core.version_strings import is_version, version_key
from cudaenv.core.text import printable

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

ACTIVE = "CUDAENV_ACTIVE"
SAVED_PREFIX = "CUDAENV_SAVED_"
AUTO = "CUDAENV_AUTO"
AUTO_PREV = "CUDAENV_AUTO_PREV"
HOME_VARS = ("CUDA_HOME", "CUDA_PATH")
LIB_VAR = "LD_LIBRARY_PATH"
VERSION_FILE = ".cuda-version"

# Toolkits found in these places share their folder with other software: never cut them out of PATH.
SHARED_METHODS = ("conda", "pip", "distro")
SHARED_POSIX = ("/", "/usr", "/usr/local", "/opt", "/usr/lib", "/bin", "/sbin", "/snap")



class EnvChange(Record):
    """What to do to a shell's environment: ``(name, value)`` pairs in order, value None = unset."""

    changes: Tuple[Tuple[str, Optional[str]], ...] = ()
    toolkit: Optional[Toolkit] = None  # the toolkit switched to (None for --off)
    message: str = ""  # the confirmation for stderr: "CUDA 12.1.105 at /usr/local/cuda-12.1"

    def as_dict(self) -> Dict[str, Optional[str]]:
        return dict(self.changes)

    def apply(self, env: Mapping[str, str]) -> Dict[str, str]:
        """The environment after the change (what the shell will have)."""
        new = dict(env)
        for name, value in self.changes:
            if value is None:
                new.pop(name, None)
            else:
                new[name] = value
        return new

    def __bool__(self) -> bool:
        return bool(self.changes)


# ------------------------------------------------------------------------------------------ paths
class _Paths:
    """Path spelling for the target system: separators, comparison, joining."""

    def __init__(self, system: str):
        self.windows = system == "windows"
        self.sep = "\\" if self.windows else "/"
        self.pathsep = ";" if self.windows else ":"

    def norm(self, p: str) -> str:
        return norm_path(p, "windows" if self.windows else "linux")

    def under(self, entry: str, root: str) -> bool:
        """True when ``entry`` is ``root`` or lies below it (both normalised)."""
        if not entry or not root:
            return False
        return entry == root or entry.startswith(root.rstrip(self.sep) + self.sep)

    def join(self, *parts: str) -> str:
        return ntpath.join(*parts) if self.windows else posixpath.join(*parts)

    def isabs(self, p: str) -> bool:
        return ntpath.isabs(p) if self.windows else p.startswith("/")

    def depth(self, normed: str) -> int:
        if self.windows:
            return len([x for x in ntpath.splitdrive(normed)[1].split("\\") if x])
        return len([x for x in normed.split("/") if x])


def _get(env: Mapping[str, str], name: str, paths: _Paths) -> Optional[str]:
    if name in env:
        return env[name]
    if paths.windows:
        for key, value in env.items():
            if key.upper() == name.upper():
                return value
    return None


# ------------------------------------------------------------------------------------------ matching
def _unique(toolkits: Iterable[Toolkit], paths: _Paths) -> List[Toolkit]:
    return unique_toolkits(list(toolkits), "windows" if paths.windows else "linux")


def describe(toolkit: Toolkit) -> str:
    """``CUDA 12.1.105 at /usr/local/cuda-12.1``."""
    return "CUDA %s at %s" % (toolkit.version or "(unknown version)", printable(toolkit.path))


def completion_words(toolkits: Sequence[Toolkit]) -> List[str]:
    """What `cudaenv use <TAB>` offers: each version, its major.minor, and `system` where a link exists."""
    words: List[str] = []
    for t in sorted(toolkits, key=lambda t: version_key(t.version), reverse=True):
        key = version_key(t.version)
        for w in (".".join(map(str, key[:2])) if len(key) >= 2 else None, t.version):
            if w and w not in words and is_version(w):  # a version is a version: never shell code at a TAB
                words.append(w)
    if any(t.is_link_target for t in toolkits):
        words.append("system")
    return words


# ------------------------------------------------------------------------------------------ planning
def is_dedicated(toolkit: Toolkit, env: Mapping[str, str], system: str = "linux") -> bool:
    """True when the toolkit has its own folder, so every PATH entry below it belongs to it."""
    paths = _Paths(system)
    if toolkit.install_method in SHARED_METHODS or toolkit.source in ("conda", "pip"):
        return False
    return _dedicated_root(paths.norm(toolkit.path), env, paths)


def _dedicated_root(root: str, env: Mapping[str, str], paths: _Paths) -> bool:
    if not root or paths.depth(root) < 2:
        return False
    shared = set() if paths.windows else set(SHARED_POSIX)
    for name in ("HOME", "USERPROFILE", "CONDA_PREFIX", "VIRTUAL_ENV", "ProgramFiles", "SystemRoot"):
        value = _get(env, name, paths)
        if value:
            shared.add(paths.norm(value))
    return root not in shared


def _lib_entry(toolkit: Toolkit, paths: _Paths) -> Optional[str]:
    lib = toolkit.lib_dir
    if not lib:
        return None
    return lib if paths.isabs(lib) else paths.join(toolkit.path, lib)


def _bin_entry(toolkit: Toolkit, paths: _Paths) -> str:
    return paths.join(toolkit.path, "bin")


class _Stripper:
    """Removes every known toolkit's entries from a PATH-like list."""

    def __init__(self, toolkits: Sequence[Toolkit], env: Mapping[str, str], paths: _Paths, link: Optional[str]):
        self.paths = paths
        self.roots: List[str] = []
        for t in toolkits:
            if is_dedicated(t, env, "windows" if paths.windows else "linux"):
                self.roots.append(paths.norm(t.path))
        self.link = paths.norm(link) if link and not paths.windows else None
        if self.link:
            self.roots.append(self.link)
        # The entries cudaenv put in front for a toolkit in a shared prefix (conda env, /usr): only those go.
        self.front: List[str] = []
        active = _get(env, ACTIVE, paths)
        if active:
            normed = paths.norm(active)
            known = [t for t in toolkits if paths.norm(t.path) == normed]
            dedicated = is_dedicated(known[0], env, "windows" if paths.windows else "linux") if known else _dedicated_root(normed, env, paths)
            if dedicated:
                self.roots.append(normed)
            else:
                t = known[0] if known else Toolkit(version=None, path=active, source="CUDAENV_ACTIVE", lib_dir="lib64")
                self.front = [paths.norm(_bin_entry(t, paths))] + [paths.norm(x) for x in (_lib_entry(t, paths), paths.join(t.path, "lib")) if x]

    def owned(self, entry: str) -> bool:
        normed = self.paths.norm(entry)
        if any(self.paths.under(normed, root) for root in self.roots):
            return True
        if self.link and normed.startswith(self.link + "-"):
            rest = normed[len(self.link) + 1 :]
            return "0" <= rest[:1] <= "9"  # /usr/local/cuda-11.3/... left behind by an old install
        return False

    def strip(self, value: Optional[str]) -> List[str]:
        if not value:
            return []
        entries = value.split(self.paths.pathsep)
        if entries and self.front and self.paths.norm(entries[0]) in self.front:
            entries = entries[1:]
        return [e for e in entries if not self.owned(e)]


def _diff(env: Mapping[str, str], desired: Sequence[Tuple[str, Optional[str]]], paths: _Paths) -> Tuple[Tuple[str, Optional[str]], ...]:
    out = []
    for name, value in desired:
        current = _get(env, name, paths)
        if value is None:
            if current is not None:
                out.append((name, None))
        elif current != value:
            out.append((name, value))
    return tuple(out)


def plan_switch(
    toolkit: Toolkit,
    toolkits: Sequence[Toolkit],
    env: Mapping[str, str],
    system: str = "linux",
    link: Optional[str] = LINK,
    keep_auto: bool = False,
) -> EnvChange:
    """The change that makes ``toolkit`` the shell's toolkit (see the module docstring)."""
    paths = _Paths(system)
    if paths.pathsep in toolkit.path:
        from cudaenv.core.i18n import M  # the error path only

        raise SelectError(M("%s contains %r, which PATH cannot hold; move or link the toolkit elsewhere", printable(toolkit.path),
                            paths.pathsep))
    stripper = _Stripper(list(toolkits) + [toolkit], env, paths, link)
    desired: List[Tuple[str, Optional[str]]] = []
    if _get(env, ACTIVE, paths) is None:
        for name in HOME_VARS:
            before = _get(env, name, paths)
            if before is not None:
                desired.append((SAVED_PREFIX + name, before))
    for name in HOME_VARS:
        desired.append((name, toolkit.path))
    desired.append(("PATH", paths.pathsep.join([_bin_entry(toolkit, paths)] + stripper.strip(_get(env, "PATH", paths)))))
    if not paths.windows:
        lib = _lib_entry(toolkit, paths)
        rest = stripper.strip(_get(env, LIB_VAR, paths))
        libs = ([lib] if lib else []) + rest
        desired.append((LIB_VAR, paths.pathsep.join(libs) if libs else None))
    desired.append((ACTIVE, toolkit.path))
    if not keep_auto:
        desired += [(AUTO, None), (AUTO_PREV, None)]
    return EnvChange(_diff(env, desired, paths), toolkit, describe(toolkit))


def plan_use(
    toolkits: Sequence[Toolkit],
    spec: str,
    env: Mapping[str, str],
    system: str = "linux",
    link: Optional[str] = LINK,
) -> EnvChange:
    """``cudaenv use SPEC``: find the toolkit, then :func:`plan_switch`. Raises :class:`SelectError`."""
    return plan_switch(select_toolkit(toolkits, spec, system), toolkits, env, system, link)


def plan_off(toolkits: Sequence[Toolkit], env: Mapping[str, str], system: str = "linux", link: Optional[str] = LINK) -> EnvChange:
    """``cudaenv use --off``: every toolkit entry out of PATH / LD_LIBRARY_PATH, cudaenv's variables undone."""
    paths = _Paths(system)
    stripper = _Stripper(toolkits, env, paths, link)
    desired: List[Tuple[str, Optional[str]]] = []
    path = _get(env, "PATH", paths)
    if path is not None:
        desired.append(("PATH", paths.pathsep.join(stripper.strip(path))))
    if not paths.windows:
        libs = stripper.strip(_get(env, LIB_VAR, paths))
        desired.append((LIB_VAR, paths.pathsep.join(libs) if libs else None))
    if _get(env, ACTIVE, paths) is not None:
        for name in HOME_VARS:
            desired.append((name, _get(env, SAVED_PREFIX + name, paths)))
            desired.append((SAVED_PREFIX + name, None))
        desired.append((ACTIVE, None))
    desired += [(AUTO, None), (AUTO_PREV, None)]
    changes = _diff(env, desired, paths)
    message = "CUDA toolkit entries removed from this shell" if changes else "no CUDA toolkit entries in this shell; nothing to undo"
    return EnvChange(changes, None, message)


def parse_version_file(text: str) -> Optional[str]:
    """The spec in a ``.cuda-version`` file: its first line that is not empty, a ``#`` comment or a ``key=value``
    setting; else the value of a ``cuda=`` setting.

    Other tools write the same file with settings of their own after the version (zocrit/cudup's ``cudup local``
    reads a ``cudnn=`` line, src/commands/local.rs): a setting is never taken for a toolkit spec, and unknown keys are
    ignored, as cudup ignores them."""
    keyed = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if eq and _is_key(key.strip()):
            if key.strip().lower() == "cuda" and keyed is None and value.strip():
                keyed = value.strip()
            continue
        return line
    return keyed


def _is_key(word: str) -> bool:
    """``cudnn``, ``cuda``, ``nccl_version``: a setting's name (ASCII letters, digits, ``_``, ``-``; a letter first),
    never a path or a version."""
    return bool(word) and word.isascii() and word[0].isalpha() and all(c.isalnum() or c in "_-" for c in word)


def plan_auto(
    toolkits: Sequence[Toolkit],
    env: Mapping[str, str],
    found: Optional[Tuple[str, str]],
    system: str = "linux",
    link: Optional[str] = LINK,
    toolkit: Optional[Toolkit] = None,
) -> EnvChange:
    """The hook's switch: ``found`` = (``.cuda-version`` path, its spec) for the current dir, or None.

    Entering a project switches and remembers what was active before; leaving switches back to it. ``toolkit``: the
    one of ``toolkits`` that ``found``'s spec names, when the caller has picked it already (else it is picked here).
    """
    paths = _Paths(system)
    if found is not None:
        file, spec = found
        if toolkit is None:
            toolkit = select_toolkit(toolkits, spec, system)
        change = plan_switch(toolkit, toolkits, env, system, link, keep_auto=True)
        extra: List[Tuple[str, Optional[str]]] = [(AUTO, file)]
        if _get(env, AUTO, paths) is None:
            extra.append((AUTO_PREV, _get(env, ACTIVE, paths) or ""))
        return replace(change, changes=change.changes + _diff(env, extra, paths))
    if _get(env, AUTO, paths) is None:
        return EnvChange((), None, "")
    prev = _get(env, AUTO_PREV, paths) or ""
    if prev:
        for t in toolkits:
            if paths.norm(t.path) == paths.norm(prev):
                return plan_switch(t, toolkits, env, system, link)
    return plan_off(toolkits, env, system, link)
