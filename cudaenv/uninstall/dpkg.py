"""The dpkg database under the root: which packages are installed, and which own a toolkit's files.

``/var/lib/dpkg/status`` is a list of deb-control(5) stanzas separated by blank lines::

    Package: cuda-nvcc-12-4
    Status: install ok installed
    Architecture: amd64
    Version: 12.4.131-1
    Depends: cuda-cudart-dev-12-4, ...

``/var/lib/dpkg/info/NAME.list`` (``NAME:ARCH.list`` for ``Multi-Arch: same``) names every path the package
installed, one per line, directories included. Nothing here runs dpkg: the files are read through the Host,
so ``--root`` inspects an image. A broken or unreadable database gives a Note, never an exception.
"""

import posixpath
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from cudaenv.snapshot import Note

STATUS = "/var/lib/dpkg/status"
INFO = "/var/lib/dpkg/info"
ALTERNATIVES = ("/var/lib/dpkg/alternatives", "/var/lib/alternatives")


@dataclass(frozen=True)
class Package:
    name: str
    status: str = ""  # "install ok installed", "deinstall ok config-files", ...
    version: Optional[str] = None
    architecture: Optional[str] = None
    depends: Tuple[str, ...] = ()  # names only (versions and alternatives dropped)

    @property
    def state(self) -> str:
        """The last word of Status: installed | config-files | half-installed | not-installed | ..."""
        words = self.status.split()
        return words[-1] if words else "unknown"

    @property
    def present(self) -> bool:
        """Anything of it is still on disk (installed, or removed with its config files left)."""
        return self.state not in ("not-installed", "unknown")


def parse_status(text: str) -> Tuple[Dict[str, Package], List[str]]:
    """Parse a dpkg status file into {name: Package}; returns the problems seen (malformed stanzas).

    >>> pkgs, problems = parse_status("Package: a\\nStatus: install ok installed\\nVersion: 1\\n")
    >>> pkgs["a"].state
    'installed'
    """
    packages: Dict[str, Package] = {}
    problems: List[str] = []
    for number, stanza in enumerate(re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")), 1):
        if not stanza.strip():
            continue
        fields = _fields(stanza)
        name = fields.get("package")
        if not name:
            problems.append("stanza %d has no Package field" % number)
            continue
        depends = tuple(_dep_names(fields.get("depends", "") + "," + fields.get("pre-depends", "")))
        pkg = Package(name, fields.get("status", ""), fields.get("version"), fields.get("architecture"), depends)
        previous = packages.get(name)
        if previous is None or not previous.present:
            packages[name] = pkg
    return packages, problems


def _fields(stanza: str) -> Dict[str, str]:
    fields: Dict[str, str] = {}
    key = None
    for line in stanza.split("\n"):
        if not line:
            continue
        if line[0] in " \t":
            if key is not None:
                fields[key] += "\n" + line.strip()
            continue
        if ":" not in line:
            key = None
            continue
        key, _, value = line.partition(":")
        key = key.strip().lower()
        fields[key] = value.strip()
    return fields


def _dep_names(text: str) -> Iterable[str]:
    for clause in text.split(","):
        for alt in clause.split("|"):
            name = alt.strip().split(" ")[0].split("(")[0].split(":")[0].strip()
            if name:
                yield name


def parse_list(text: str) -> List[str]:
    """The paths of a ``.list`` file (``/.`` and blank lines dropped)."""
    return [line.rstrip("\r") for line in text.split("\n") if line.strip() and line.strip() != "/."]


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
    if not host.exists(STATUS):
        return None
    text = host.read_text(STATUS, limit=256 * 1024 * 1024)
    if text is None:
        notes.append(Note("uninstall", "%s exists but cannot be read: package ownership unknown" % STATUS))
        return None
    packages, problems = parse_status(text)
    if problems:
        notes.append(Note("uninstall", "%s looks damaged (%s); package ownership may be incomplete" % (STATUS, problems[0])))
    files: Dict[str, Tuple[str, ...]] = {}
    unreadable = []
    for entry in host.listdir(INFO):
        if not entry.endswith(".list"):
            continue
        name = entry[: -len(".list")].split(":")[0]
        if name in packages and not packages[name].present:
            continue
        listing = host.read_text(posixpath.join(INFO, entry), limit=64 * 1024 * 1024)
        if listing is None:
            unreadable.append(entry)
            continue
        files[name] = tuple(parse_list(listing)) + files.get(name, ())
    if unreadable:
        notes.append(Note("uninstall", "cannot read %d dpkg file list(s) in %s (first: %s)" % (len(unreadable), INFO, unreadable[0])))
    return DpkgDatabase(packages, files)


# ----------------------------------------------------------------- update-alternatives


def parse_alternatives(text: str) -> Tuple[Optional[str], Tuple[str, ...]]:
    """An update-alternatives admin file: (master link, alternative paths).

    Layout: mode, master link, slave (name, link) pairs, a blank line, then per alternative its path,
    its priority and one line per slave.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    if len(lines) < 2:
        return None, ()
    link = lines[1].strip() or None
    try:
        blank = lines.index("", 2)
    except ValueError:
        return link, ()
    slaves = (blank - 2) // 2
    paths: List[str] = []
    i = blank + 1
    while i < len(lines) and lines[i].strip():
        paths.append(lines[i].strip())
        i += 2 + slaves
    return link, tuple(paths)


@dataclass(frozen=True)
class Alternative:
    name: str  # "cuda", "cuda-12"
    admin_file: str  # /var/lib/dpkg/alternatives/cuda
    link: Optional[str]  # /usr/local/cuda
    paths: Tuple[str, ...]


def probe_alternatives(host, notes: List[Note], names_like: str = "cuda") -> Tuple[Alternative, ...]:
    """The update-alternatives groups whose name starts with ``names_like`` (cuda, cuda-12, ...)."""
    found = []
    for folder in ALTERNATIVES:
        for name in host.listdir(folder):
            if not name.startswith(names_like):
                continue
            admin = posixpath.join(folder, name)
            text = host.read_text(admin)
            if text is None:
                notes.append(Note("uninstall", "cannot read %s" % admin))
                continue
            link, paths = parse_alternatives(text)
            found.append(Alternative(name, admin, link, paths))
    return tuple(found)
