"""The dpkg database under the root: which packages are installed, and which own a toolkit's files.

The files are read by :mod:`cudaenv.probes.dpkg` (streamed through the Host) and parsed by
:mod:`cudaenv.parse.dpkg`; this module holds the database record the removal plan asks. A broken or unreadable
database gives a Note, never an exception.
"""

from dataclasses import dataclass
from typing import Iterable, List, Mapping, Optional, Sequence, Tuple

from cudaenv.parse.dpkg import Package
from cudaenv.probes.dpkg import probe_dpkg_lists, probe_dpkg_status
from cudaenv.probes.package_db import DPKG_INFO
from cudaenv.model.snapshot import Note
from cudaenv.core.i18n import M


@dataclass(frozen=True)
class DpkgDatabase:
    packages: Mapping[str, Package]
    files: Mapping[str, Tuple[str, ...]]  # package name -> the paths its .list names

    def owners_under(self, prefix: str) -> Tuple[str, ...]:
        """Packages owning ``prefix`` itself or any path inside it (sorted, exact names)."""
        prefix = prefix.rstrip("/") or "/"
        found = []
        for name, paths in self.files.items():
            if any(p == prefix or p.startswith(prefix + "/") for p in paths):
                found.append(name)
        return tuple(sorted(found))

    def owners_of(self, path: str) -> Tuple[str, ...]:
        return tuple(sorted(name for name, paths in self.files.items() if path in paths))

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
    files, unreadable = probe_dpkg_lists(host, lambda name: name not in packages or packages[name].present)
    if unreadable:
        notes.append(Note("uninstall", M("cannot read %d dpkg file list(s) in %s (first: %s)", len(unreadable), DPKG_INFO, unreadable[0])))
    return DpkgDatabase(packages, files)
