"""The dpkg database under the root, read through the Host (nothing runs dpkg, so ``--root`` inspects an image).

``status`` and the ``info/*.list`` files are streamed line by line (:meth:`cudaenv.host.Host.iter_lines`): an
image with a 300 MB status costs the packages kept, not the file. The parsing is :mod:`cudaenv.parse.dpkg`.
"""

from __future__ import annotations

import posixpath

from cudaenv.host.files import read_plain_files
from cudaenv.parse.dpkg import Package, list_package_name, parse_alternatives, parse_list, parse_status
from cudaenv.probes.package_db import ALTERNATIVES, DPKG_INFO, DPKG_STATUS
from cudaenv.model.record import Record
from cudaenv.model.toolkits import Note

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: `cudaenv list` reads the .list files and imports neither typing nor dataclasses
    from typing import Callable, Dict, List, Optional, Tuple

STATUS_LIMIT = 1024 * 1024 * 1024  # bytes of status streamed (a real one is a few MB)
LIST_LIMIT = 64 * 1024 * 1024


def probe_dpkg_status(host, notes: List[Note], probe: str = "uninstall") -> Optional[Dict[str, Package]]:
    """The packages in the dpkg status file under the root; None where there is none (not a Debian-style system)."""
    if not host.exists(DPKG_STATUS):
        return None
    if not host.is_file(DPKG_STATUS):
        from cudaenv.core.i18n import M
        notes.append(Note(probe, M("%s is not a regular file: package ownership unknown", DPKG_STATUS)))
        return None
    packages, problems = parse_status(host.iter_lines(DPKG_STATUS, limit=STATUS_LIMIT))
    if not packages and not problems and host.read_bytes(DPKG_STATUS, limit=1) is None:
        from cudaenv.core.i18n import M
        notes.append(Note(probe, M("%s exists but cannot be read: package ownership unknown", DPKG_STATUS)))
        return None
    if problems:
        from cudaenv.core.i18n import M
        notes.append(Note(probe, M("%s looks damaged (%s); package ownership may be incomplete", DPKG_STATUS, problems[0])))
    return packages


def probe_dpkg_lists(host, wanted: Callable[[str], bool]) -> Tuple[Dict[str, Tuple[str, ...]], List[str]]:
    """{package: the paths its ``info/NAME.list`` names} for the packages ``wanted(name)`` keeps, and the names of
    the list files that could not be read. The one reader of ``/var/lib/dpkg/info/*.list``."""
    files: Dict[str, Tuple[str, ...]] = {}
    unreadable: List[str] = []
    for entry in host.listdir(DPKG_INFO):
        name = list_package_name(entry)
        if name is None or not wanted(name):
            continue
        path = posixpath.join(DPKG_INFO, entry)
        if not host.is_file(path):
            unreadable.append(entry)
            continue
        files[name] = tuple(parse_list(host.iter_lines(path, limit=LIST_LIMIT))) + files.get(name, ())
    return files, unreadable


def probe_dpkg_list_bytes(host, wanted: Callable[[str], bool]) -> Tuple[Dict[str, List[bytes]], List[str]]:
    """:func:`probe_dpkg_lists` unparsed: {package: its ``info/*.list`` files' bytes} (a package with a list per
    architecture has several, in the order their paths join), and the names of the list files that could not be
    read. The database is searched as bytes first (:class:`cudaenv.toolkit.uninstall.dpkg.DpkgDatabase`): only the
    lists that hold a path asked about are parsed."""
    files: Dict[str, List[bytes]] = {}
    unreadable: List[str] = []

    def keep(entry: str) -> bool:
        name = list_package_name(entry)
        return name is not None and wanted(name)

    real = host.resolve(DPKG_INFO)  # the folder once; its plain files by name
    for entry, kind, data in read_plain_files(host.local(real), keep, LIST_LIMIT) if real is not None else ():
        if kind == "link":  # followed inside the root
            path = posixpath.join(DPKG_INFO, entry)
            data = (host.read_bytes(path, LIST_LIMIT) or b"") if host.is_file(path) else None
        if data is None:
            unreadable.append(entry)
            continue
        files.setdefault(list_package_name(entry), []).insert(0, data)
    return files, unreadable


class Alternative(Record):
    name: str  # "cuda", "cuda-12"
    admin_file: str  # /var/lib/dpkg/alternatives/cuda
    link: Optional[str]  # /usr/local/cuda
    paths: Tuple[str, ...]


def read_alternative(host, name: str) -> Optional[Alternative]:
    """The update-alternatives group ``name`` (its admin file in the first folder that has it), or None."""
    for folder in ALTERNATIVES:
        admin = posixpath.join(folder, name)
        text = host.read_text(admin, limit=1024 * 1024)
        if text is not None:
            link, paths = parse_alternatives(text)
            return Alternative(name, admin, link, paths)
    return None


def probe_alternatives(host, notes: List[Note], names_like: str = "cuda", probe: str = "uninstall") -> Tuple[Alternative, ...]:
    """The update-alternatives groups whose name starts with ``names_like`` (cuda, cuda-12, ...)."""
    found = []
    for folder in ALTERNATIVES:
        for name in host.listdir(folder):
            if not name.startswith(names_like):
                continue
            admin = posixpath.join(folder, name)
            text = host.read_text(admin, limit=1024 * 1024)
            if text is None:
                from cudaenv.core.i18n import M
                notes.append(Note(probe, M("cannot read %s", admin)))
                continue
            link, paths = parse_alternatives(text)
            found.append(Alternative(name, admin, link, paths))
    return tuple(found)
