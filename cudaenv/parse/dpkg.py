"""The dpkg database's files: ``status``, ``info/NAME.list`` and update-alternatives admin files.

``/var/lib/dpkg/status`` is a list of deb-control(5) stanzas separated by blank lines::

    Package: cuda-nvcc-12-4
    Status: install ok installed
    Architecture: amd64
    Version: 12.4.131-1
    Depends: cuda-cudart-dev-12-4, ...

:func:`parse_status` reads it line by line from any iterable of lines, keeping only the fields cudaenv uses,
so a 300 MB database costs the packages, not the text. ``/var/lib/dpkg/info/NAME.list`` (``NAME:ARCH.list``
for ``Multi-Arch: same``) names every path the package installed, one per line (:func:`parse_list`). An
alternatives admin file (``/var/lib/dpkg/alternatives/cuda``) is read by :func:`parse_alternatives`.
Pure: no I/O, never an exception for any input.
"""

from __future__ import annotations

from cudaenv.model.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: `cudaenv list` reads the .list files and imports neither typing nor dataclasses
    from typing import Dict, Iterable, Iterator, List, Optional, Tuple

KEPT_FIELDS = ("package", "status", "version", "architecture", "depends", "pre-depends")
FIELD_LIMIT = 64 * 1024  # characters kept of one field (a Depends line is a few hundred)


class Package(Record):
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


def _lines(source) -> Iterator[str]:
    if isinstance(source, str):
        return iter(source.replace("\r\n", "\n").split("\n"))
    return (line.rstrip("\r\n") for line in source)


def iter_stanzas(source) -> Iterator[Dict[str, str]]:
    """The kept fields of each stanza (lower-case names), from a text or an iterable of lines."""
    fields: Dict[str, str] = {}
    key: Optional[str] = None
    seen = False
    for line in _lines(source):
        if not line.strip():
            if seen:
                yield fields
            fields, key, seen = {}, None, False
            continue
        seen = True
        if line[0] in " \t":
            if key is not None and len(fields[key]) < FIELD_LIMIT:
                fields[key] += "\n" + line.strip()
            continue
        name, colon, value = line.partition(":")
        name = name.strip().lower()
        if not colon:
            key = None
            continue
        key = name if name in KEPT_FIELDS else None
        if key is not None:
            fields[key] = value.strip()[:FIELD_LIMIT]
    if seen:
        yield fields


def parse_status(source) -> Tuple[Dict[str, Package], List[str]]:
    """A dpkg status file (its text, or its lines) as {name: Package}, and the problems seen (malformed stanzas).

    >>> pkgs, problems = parse_status("Package: a\\nStatus: install ok installed\\nVersion: 1\\n")
    >>> pkgs["a"].state
    'installed'
    """
    packages: Dict[str, Package] = {}
    problems: List[str] = []
    for number, fields in enumerate(iter_stanzas(source), 1):
        name = fields.get("package")
        if not name:
            if len(problems) < 5:
                problems.append("stanza %d has no Package field" % number)
            continue
        depends = tuple(_dep_names(fields.get("depends", "") + "," + fields.get("pre-depends", "")))
        pkg = Package(name, fields.get("status", ""), fields.get("version"), fields.get("architecture"), depends)
        previous = packages.get(name)
        if previous is None or not previous.present:
            packages[name] = pkg
    return packages, problems


def _dep_names(text: str) -> Iterable[str]:
    for clause in text.split(","):
        for alt in clause.split("|"):
            name = alt.strip().split(" ")[0].split("(")[0].split(":")[0].strip()
            if name:
                yield name


def parse_list(source) -> List[str]:
    """The paths of a ``.list`` file (its text or its lines; ``/.`` and blank lines dropped)."""
    return [line for line in _lines(source) if line.strip() and line.strip() != "/."]


def parse_list_bytes(data: bytes, max_line: int = 64 * 1024) -> List[str]:
    """:func:`parse_list` of a ``.list`` file's bytes, read as :meth:`cudaenv.host.Host.iter_lines` streams one: lines
    cut at ``max_line`` bytes, undecodable bytes kept as surrogates."""
    return parse_list(line[:max_line].decode("utf-8", "surrogateescape") for line in data.split(b"\n")) if data else []


def list_package_name(entry: str) -> Optional[str]:
    """``cuda-nvcc-12-4:amd64.list`` -> ``cuda-nvcc-12-4``; None for a name that is not a ``.list`` file."""
    if not isinstance(entry, str) or not entry.endswith(".list") or len(entry) <= 5:
        return None
    return entry[: -len(".list")].split(":")[0] or None


def parse_alternatives(text: str) -> Tuple[Optional[str], Tuple[str, ...]]:
    """An update-alternatives admin file: (master link, alternative paths).

    Layout: mode, master link, slave (name, link) pairs, a blank line, then per alternative its path,
    its priority and one line per slave::

        manual
        /usr/local/cuda

        /usr/local/cuda-12.4
        124
    """
    if not isinstance(text, str):
        return None, ()
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
