"""The dpkg database under the root: which packages are installed, and which own a toolkit's files.

The files are read by :mod:`cudaenv.probes.dpkg` (streamed through the Host) and parsed by
:mod:`cudaenv.parse.dpkg`; this module holds the database record the removal plan asks. A broken or unreadable
database gives a Note, never an exception.
"""

from collections.abc import Mapping as MappingABC
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from cudaenv.parse.dpkg import Package, parse_list_bytes
from cudaenv.probes.dpkg import probe_dpkg_list_bytes, probe_dpkg_status
from cudaenv.probes.package_db import DPKG_INFO
from cudaenv.model.snapshot import Note
from cudaenv.core.i18n import M


@dataclass(frozen=True)
class DpkgDatabase:
    packages: Mapping[str, Package]
    files: Mapping[str, Tuple[str, ...]]  # package name -> the paths its .list names

    def _holding(self, text: str):
        """(name, paths) of the packages whose lists may name ``text``: with the lists as bytes
        (:class:`ListFiles`), only those that hold its bytes are parsed."""
        files = self.files
        if isinstance(files, ListFiles):
            return ((name, files[name]) for name in files.holding(text))
        return files.items()

    def owners_under(self, prefix: str) -> Tuple[str, ...]:
        """Packages owning ``prefix`` itself or any path inside it (sorted, exact names)."""
        prefix = prefix.rstrip("/") or "/"
        found = []
        for name, paths in self._holding(prefix):
            if any(p == prefix or p.startswith(prefix + "/") for p in paths):
                found.append(name)
        return tuple(sorted(found))

    def owners_of(self, path: str) -> Tuple[str, ...]:
        return tuple(sorted(name for name, paths in self._holding(path) if path in paths))

    def owned_paths(self, names: Sequence[str]) -> frozenset:
        return frozenset(p for n in names for p in self.files.get(n, ()))

    def dependents(self, names: Sequence[str]) -> Tuple[str, ...]:
        """Installed packages that depend (directly or through each other) on ``names``: apt removes them too."""
        removing = set(names)
        changed = True
        while changed:
            changed = False
            for pkg in self.packages.values():
                if pkg.name in removing or pkg.state != "installed":
                    continue
                if any(dep in removing for dep in pkg.depends):
                    removing.add(pkg.name)
                    changed = True
        return tuple(sorted(removing - set(names)))

    def present(self, names: Iterable[str]) -> Tuple[Package, ...]:
        return tuple(self.packages[n] for n in sorted(set(names)) if n in self.packages and self.packages[n].present)


def probe_dpkg(host, notes: List[Note]) -> Optional[DpkgDatabase]:
    """The dpkg database under the root, or None where there is none (not a Debian-style system)."""
    packages = probe_dpkg_status(host, notes)
    if packages is None:
        return None
    raw, unreadable = probe_dpkg_list_bytes(host, lambda name: name not in packages or packages[name].present)
    if unreadable:
        notes.append(Note("uninstall", M("cannot read %d dpkg file list(s) in %s (first: %s)", len(unreadable), DPKG_INFO, unreadable[0])))
    return DpkgDatabase(packages, ListFiles(raw))


class ListFiles(MappingABC):
    """{package: the paths its ``.list`` files name}, kept as the files' bytes and parsed per package when asked
    (:attr:`parsed` counts those): `uninstall` asks about one toolkit's folder, and a system's thousand lists hold it
    in a few. :meth:`holding` is the byte search that comes first."""

    def __init__(self, raw: Mapping[str, Sequence[bytes]]):
        self._raw = raw
        self._parsed: Dict[str, Tuple[str, ...]] = {}

    @property
    def parsed(self) -> int:
        return len(self._parsed)

    def __getitem__(self, name: str) -> Tuple[str, ...]:
        if name not in self._parsed:
            self._parsed[name] = tuple(p for data in self._raw[name] for p in parse_list_bytes(data))
        return self._parsed[name]

    def __iter__(self):
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def holding(self, text: str) -> List[str]:
        """The packages whose lists hold the bytes of ``text`` (those that may name it; the others cannot)."""
        needle = text.encode("utf-8", "surrogateescape")
        return [name for name, blobs in self._raw.items() if any(needle in data for data in blobs)]
