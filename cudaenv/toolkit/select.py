"""Which toolkit a spec names: the one grammar of ``use``, ``link``, ``uninstall`` (and ``--repoint``).

A spec is

* a version: ``12`` (every 12.x), ``12.1`` (every 12.1.x), ``12.1.105`` -- compared part by part, so ``12.1``
  never matches ``12.10``;
* a path: ``/usr/local/cuda-12.1`` (trailing ``/`` and ``..`` normalised; compared case-insensitively on
  Windows; also matched through links when the caller gives ``resolve``);
* ``system``: the toolkit ``/usr/local/cuda`` points at.

:func:`select_toolkits` applies a policy to the matches:

* :data:`NEWEST` (``use``, ``link``, ``--repoint``): the newest match; two toolkits with that same newest version
  are ambiguous (give the path). A release number (``version.json``: 13.0.2) and nvcc's component number (a
  toolkit with no version.json: 13.0.88) agree on major.minor only: at the same major.minor the release-numbered
  toolkit wins (:func:`newest_toolkits`), so ``use 13.0`` right after ``cudaenv install 13.0`` picks that install;
  ``use 13.0.88`` still names the other exactly;
* :data:`UNIQUE` (``uninstall``): exactly one match, or every match with ``every=True``; several are an error
  that lists them.

Pure and cheap (it is on the ``cudaenv use`` path): no I/O, no typing, no regular expression.
"""

from __future__ import annotations

import posixpath

from cudaenv.core.lazy import LazyModule
from cudaenv.core.version_strings import is_version, version_key

ntpath = LazyModule("ntpath")  # Windows paths only

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Callable, List, Optional, Sequence

    from cudaenv.model.toolkits import Toolkit

NEWEST = "newest"
UNIQUE = "unique"
LINK = "/usr/local/cuda"
RELEASE_SOURCES = ("version.json",)  # where a toolkit's version is its release number (cudaenv installs write one)



class SelectError(Exception):
    """No toolkit, or more than one, matches the spec. ``kind``: empty | not-a-spec | no-match | ambiguous."""

    def __init__(self, message: str, toolkits: Sequence[Toolkit] = (), candidates: Sequence[Toolkit] = (),
                 kind: str = "no-match", hint: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.toolkits = tuple(toolkits)
        self.candidates = tuple(candidates)
        self.kind = kind
        self.hint = hint

    def __str__(self) -> str:
        return self.message


def looks_like_path(spec: str) -> bool:
    """True when ``spec`` is a path rather than a version (``/x``, ``./x``, ``~/x``, ``a/b``, ``C:\\x``)."""
    return (spec.startswith(("/", ".", "~")) or "/" in spec or "\\" in spec
            or (len(spec) >= 2 and spec[1] == ":" and spec[0].isascii() and spec[0].isalpha()))


def norm_path(path: str, system: str = "linux") -> str:
    """A path as compared: normalised, no trailing separator (Windows: backslashes, lower case)."""
    if not path:
        return ""
    if system == "windows":
        n = ntpath.normpath(path.replace("/", "\\"))
        return n.rstrip("\\").lower() if len(n) > 3 else n.lower()
    n = posixpath.normpath(path)
    return "/" if n in ("/", "//") else n.rstrip("/")


def unique_toolkits(toolkits: Sequence[Toolkit], system: str = "linux") -> List[Toolkit]:
    """``toolkits`` without repeats of the same folder, in their order."""
    seen = set()
    out = []
    for t in toolkits:
        key = norm_path(t.path, system)
        if key and key not in seen:
            seen.add(key)
            out.append(t)
    return out


def names_version(spec: str, version: Optional[str]) -> bool:
    """True when the version spec ``spec`` names ``version``: part by part, so ``12`` names 12.4.131, ``12.1``
    names 12.1.105 and never 12.10."""
    key = version_key(spec)
    return version_key(version)[: len(key)] == key


def match_toolkits(toolkits: Sequence[Toolkit], spec: str, system: str = "linux",
                   resolve: Optional[Callable[[str], Optional[str]]] = None) -> List[Toolkit]:
    """Every toolkit ``spec`` names, in the given order (no policy applied). A spec that is no version, path or
    ``system`` raises :class:`SelectError` (kind ``not-a-spec``)."""
    spec = (spec or "").strip()
    if not spec:
        from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
        raise SelectError(M("no CUDA version given"), toolkits, kind="empty")
    if spec == "system":
        return [t for t in toolkits if t.is_link_target]
    if looks_like_path(spec):
        want = norm_path(spec, system)
        hits = [t for t in toolkits if norm_path(t.path, system) == want]
        if not hits and resolve is not None:
            real = resolve(want)
            if real is not None:
                hits = [t for t in toolkits if resolve(t.path) == real]
        return hits
    if not is_version(spec):
        from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
        raise SelectError(M("%r is not a CUDA version (give 12, 12.1, 12.1.105, a toolkit path or `system`)", spec),
                          toolkits, kind="not-a-spec")
    return [t for t in toolkits if names_version(spec, t.version)]


def select_toolkits(toolkits: Sequence[Toolkit], spec: str, policy: str = NEWEST, system: str = "linux",
                    every: bool = False, resolve: Optional[Callable[[str], Optional[str]]] = None) -> List[Toolkit]:
    """The toolkits ``spec`` names under ``policy`` (:data:`NEWEST`: one; :data:`UNIQUE`: one, or all with ``every``).

    Raises :class:`SelectError` when none match, or when the policy finds the match ambiguous.
    """
    toolkits = unique_toolkits(toolkits, system)
    spec = (spec or "").strip()
    matching = match_toolkits(toolkits, spec, system, resolve)
    if not matching:
        if spec == "system":
            from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
            raise SelectError(M("%s points at no installed toolkit", LINK), toolkits)
        if looks_like_path(spec):
            from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
            raise SelectError(M("no installed CUDA toolkit at %s", spec), toolkits)
        from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
        raise SelectError(M("no installed CUDA toolkit matches %s", spec), toolkits)
    if policy == UNIQUE:
        if len(matching) > 1 and not every:
            listing = ", ".join("%s (%s)" % (t.path, t.version or "?") for t in matching)
            from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
            raise SelectError(M("%s matches %d toolkits: %s", spec, len(matching), listing), toolkits, matching,
                              kind="ambiguous", hint=M("give the path, or --all to take every one"))
        return matching
    if spec == "system" and len(matching) > 1:
        from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
        raise SelectError(M("%s is ambiguous", LINK), toolkits, matching, kind="ambiguous")
    best = newest_toolkits(matching)
    if len(best) > 1:
        from cudaenv.core.i18n import M  # only where a message is said: a switch imports no mark
        raise SelectError(
            M("CUDA %s is ambiguous: %d toolkits have version %s; give the path instead", spec, len(best), best[0].version),
            toolkits, best, kind="ambiguous", hint=M("give the path instead"))
    return best


def numbering(toolkit: Toolkit) -> str:
    """``release`` when the version is the CUDA release (``version.json``: 13.0.2), else ``component`` (nvcc's own
    number, 13.0.88, read from nvcc, version.txt or a package): the two agree on major.minor only."""
    return "release" if getattr(toolkit, "version_source", None) in RELEASE_SOURCES else "component"


def newest_toolkits(matching: Sequence[Toolkit]) -> List[Toolkit]:
    """The newest of ``matching`` (several when they tie). Versions of one numbering compare part by part; a release
    number (13.0.2) and a component number (13.0.88) compare at major.minor only, and at the same major.minor the
    toolkit whose version names its release wins (the other's release is not known)."""
    if not matching:
        return []
    top = max(version_key(t.version)[:2] for t in matching)
    group = [t for t in matching if version_key(t.version)[:2] == top]
    if len({numbering(t) for t in group}) > 1:
        group = [t for t in group if numbering(t) == "release"]
    newest = max(version_key(t.version) for t in group)
    return [t for t in group if version_key(t.version) == newest]


def select_toolkit(toolkits: Sequence[Toolkit], spec: str, system: str = "linux",
                   resolve: Optional[Callable[[str], Optional[str]]] = None) -> Toolkit:
    """The one toolkit ``spec`` names, newest first (``use``, ``link``, ``--repoint``)."""
    return select_toolkits(toolkits, spec, NEWEST, system, resolve=resolve)[0]
