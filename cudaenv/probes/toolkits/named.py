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

from cudaenv.core.version_strings import MAX_DIGITS, MAX_PARTS, is_version, version_key
from cudaenv.probes.toolkits import DISTRO_ALIASES, ToolkitState, _Finder
from cudaenv.probes.toolkits.candidate import FolderListing
from cudaenv.probes.toolkits.candidates import candidate_folders

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Dict, Iterable, List, Optional, Sequence, Tuple

    from cudaenv.probes.toolkits.candidate import ToolkitCandidate


def name_version(name: str) -> Optional[Tuple[int, ...]]:
    """The version a toolkit folder's name says, as :func:`cudaenv.core.version.version_key` reads it: ``12.4``,
    ``12.4.131``, ``cuda-12.4``, ``CUDA12.4``, ``cuda_v12.4``, ``v12.4`` (major.minor at least, ASCII digits); None for
    any other name (``cuda``, ``12``, ``cuda-12.4.bak``). Plain string tests: it runs once for each folder of a tree."""
    rest = name
    if not ("0" <= name[:1] <= "9"):  # (a module tree's folders are named 12.4.131: no prefix to take off)
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
    and CUDAENV_ACTIVE), or None when only reading every toolkit can tell (see the module docstring).

    A ``CUDAENV_TOOLKITS`` folder comes as the names of its subfolders (:class:`FolderListing`): each name is read
    once, and a candidate (and its key, the folder's resolved path) is made only for the names this answer reads."""
    if host.system == "windows" or not is_version(spec):
        return None
    finder = _Finder(host, [], install_methods=False)
    nvccs = finder.nvccs = finder.nvccs_on_path()
    candidates = candidate_folders(host, [], site_packages, nvccs, unchecked=True)
    want = version_key(spec)
    keys: List[Optional[str]] = []  # each candidate's key; a listing's entry: its _Names
    named: Dict[str, tuple] = {}  # key -> the version key its name says (the newest, when several names say one)
    chosen = set()

    def propose(cand) -> Optional[str]:  # one candidate, as every place's is read
        if cand.key is not None and cand.key not in DISTRO_ALIASES:
            finder._keys.setdefault(cand.path, cand.key)
        key = finder.key(cand.path)
        said = name_version(cand.path[cand.path.rfind("/") + 1:]) if cand.method is None and cand.version is None else None
        if key is None:
            return None
        if said is None or cand.force:
            chosen.add(key)  # a folder whose name says nothing: always read
        elif said[: len(want)] == want[: len(said)]:  # (a name that says less, 12.4, may hold the spec 12.4.99)
            named[key] = max(named.get(key, ()), said)
        return key

    for cand in candidates:
        keys.append(_names(cand, finder, want, named, chosen, propose) if type(cand) is FolderListing else propose(cand))
    top = max((said[:2] for said in named.values()), default=None)
    expect = {key: said for key, said in named.items() if said[:2] == top}
    chosen.update(expect)
    owners = {key for key in keys if type(key) is str}
    listings = [key for key in keys if type(key) is _Names]
    for entry in paths:
        entry = posixpath.normpath(entry) if entry[:1] == "/" else ""
        while entry and entry != "/":
            if entry in owners or any(names.owns(entry) for names in listings):
                chosen.add(entry)
            entry = posixpath.dirname(entry)
    for cand, key in zip(candidates, keys):
        if type(key) is _Names:
            for one in key.chosen(chosen):
                if one.key is not None:  # a plain entry: its key is known, as each candidate's was (no resolve)
                    finder._keys.setdefault(one.path, one.key)
                finder.consider(one)
        elif key in chosen:
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


class _Names:
    """A :class:`FolderListing` as :func:`probe_toolkits_named` reads it. A *plain* entry (a real folder whose path no
    earlier place has proposed) has the key ``real_at + name`` and is read by its name alone, without a candidate; the
    others (links, a folder already proposed, a distribution's alias, a listing without a resolved path) are proposed
    one by one, as every place's candidates are."""

    __slots__ = ("listing", "plain", "proposed")

    def __init__(self, listing: FolderListing, plain: set, proposed: list):
        self.listing, self.plain, self.proposed = listing, plain, proposed  # proposed: [(name, candidate, key)]

    def owns(self, path: str) -> bool:
        """Whether ``path`` is the key of a plain entry."""
        real_at = self.listing.real_at
        return real_at is not None and path.startswith(real_at) and path[len(real_at):] in self.plain

    def chosen(self, chosen: set) -> List[ToolkitCandidate]:
        """The candidates of the entries whose keys are ``chosen``, in the listing's (sorted) order."""
        real_at = self.listing.real_at
        cut = len(real_at) if real_at is not None else 0
        picked = [(key[cut:], self.listing.candidate(key[cut:], False)) for key in chosen
                  if real_at is not None and key.startswith(real_at) and key[cut:] in self.plain]
        picked += [(name, cand) for name, cand, key in self.proposed if key is not None and key in chosen]
        picked.sort(key=lambda pair: pair[0])
        return [cand for _name, cand in picked]


def _names(listing: FolderListing, finder, want: tuple, named: dict, chosen: set, propose) -> _Names:
    """Read a listing's names: a plain entry's name that says nothing is chosen, one that may say ``want`` is named;
    the rest of the plain entries are kept as names (only a PATH entry below one makes it read)."""
    at, real_at = listing.at, listing.real_at
    if real_at is None:
        special = set()
    else:
        special = {path[len(at):] for path in finder._keys if path.startswith(at)}  # proposed before this listing
        special.update(alias[len(real_at):] for alias in DISTRO_ALIASES if alias.startswith(real_at))
    plain = set()
    proposed = []
    wl = len(want)
    for name, is_link in listing.names:
        if is_link or real_at is None or name in special:
            cand = listing.candidate(name, is_link)
            proposed.append((name, cand, propose(cand)))
            continue
        plain.add(name)
        said = name_version(name)
        if said is None:
            chosen.add(real_at + name)  # a folder whose name says nothing: always read
        elif said[:wl] == want[: len(said)]:
            key = real_at + name
            named[key] = max(named.get(key, ()), said)
    return _Names(listing, plain, proposed)
