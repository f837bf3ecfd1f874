"""`cudaenv use VERSION` on a tree of many toolkits (a cluster's module tree of a thousand): the folders whose names say
a version (``12.4``, ``cuda-12.4.131``) are matched by name first, and only the toolkits that can be the answer, or
that own an entry of PATH or LD_LIBRARY_PATH the switch takes out, are read. On ``cudaenv use``'s hot path.

What it trusts: a folder named for a version holds that version, until it is read. The folders of the newest
major.minor the spec names by name are read, each with every other place that finds the same folder; every folder
whose name says no version is read (the /usr/local/cuda link, CUDA_HOME, PATH's nvcc, conda, pip). When a folder read
does not hold the version its name says (or holds no toolkit), the answer is None and the caller reads every toolkit
(:func:`cudaenv.probes.toolkits.probe_toolkits`), as it does for a spec that is not a version.
"""

from __future__ import annotations

import posixpath

from cudaenv.core.version import MAX_DIGITS, MAX_PARTS, is_version, version_key
from cudaenv.probes.toolkits import DISTRO_ALIASES, ToolkitState, _Finder
from cudaenv.probes.toolkits.candidates import candidate_folders

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Dict, Iterable, List, Optional, Sequence, Tuple


def name_version(name: str) -> Optional[Tuple[int, ...]]:
    """The version a toolkit folder's name says, as :func:`cudaenv.core.version.version_key` reads it: ``12.4``,
    ``12.4.131``, ``cuda-12.4``, ``CUDA12.4``, ``cuda_v12.4``, ``v12.4`` (major.minor at least, ASCII digits); None for
    any other name (``cuda``, ``12``, ``cuda-12.4.bak``). Plain string tests: it runs once for each folder of a tree."""
    rest = name[4:] if name[:4] in ("cuda", "CUDA") else name
    rest = rest[1:] if rest[:1] in ("-", "_") else rest
    rest = rest[1:] if rest[:1] in ("v", "V") else rest
    parts = rest.split(".")
    if not 2 <= len(parts) <= MAX_PARTS or not rest.isascii():
        return None
    for part in parts:
        if not part.isdigit() or len(part) > MAX_DIGITS:
            return None
    return tuple(map(int, parts))


def probe_toolkits_named(host, spec: str, paths: Iterable[str], site_packages: Sequence[str] = ()) -> Optional[ToolkitState]:
    """The toolkits `cudaenv use SPEC` needs (the state :func:`cudaenv.probes.toolkits.probe_toolkits` gives, less the
    toolkits that can neither be SPEC's answer nor own one of ``paths``: the shell's PATH and LD_LIBRARY_PATH entries
    and CUDAENV_ACTIVE), or None when only reading every toolkit can tell (see the module docstring)."""
    if host.system == "windows" or not is_version(spec):
        return None
    finder = _Finder(host, [], install_methods=False)
    nvccs = finder.nvccs = finder.nvccs_on_path()
    candidates = candidate_folders(host, [], site_packages, nvccs, unchecked=True)
    want = version_key(spec)
    keys: List[Optional[str]] = []
    named: Dict[str, tuple] = {}  # key -> the version key its name says (the newest, when several names say one)
    chosen = set()
    for cand in candidates:
        if cand.key is not None and cand.key not in DISTRO_ALIASES:
            finder._keys.setdefault(cand.path, cand.key)
        key = finder.key(cand.path)
        keys.append(key)
        said = name_version(cand.path[cand.path.rfind("/") + 1:]) if cand.method is None and cand.version is None else None
        if key is None:
            continue
        if said is None or cand.force:
            chosen.add(key)  # a folder whose name says nothing: always read
        elif said[: len(want)] == want[: len(said)]:  # (a name that says less, 12.4, may hold the spec 12.4.99)
            named[key] = max(named.get(key, ()), said)
    top = max((said[:2] for said in named.values()), default=None)
    expect = {key: said for key, said in named.items() if said[:2] == top}
    chosen.update(expect)
    owners = {key for key in keys if key is not None}
    for entry in paths:
        entry = posixpath.normpath(entry) if entry[:1] == "/" else ""
        while entry and entry != "/":
            if entry in owners:
                chosen.add(entry)
            entry = posixpath.dirname(entry)
    for cand, key in zip(candidates, keys):
        if key in chosen:
            finder.consider(cand)
    toolkits = [finder.build(found) for found in finder.found]
    built = {found.key: tk for found, tk in zip(finder.found, toolkits)}
    held = False
    for key, said in expect.items():
        tk = built.get(key)
        if tk is not None and version_key(tk.version)[: len(said)] != said:
            return None  # named for a version it does not hold: every toolkit must be read
        held = held or tk is not None
    if expect and not held:
        return None  # none of the newest names holds a toolkit: the answer may be named older
    return finder.state(toolkits)
