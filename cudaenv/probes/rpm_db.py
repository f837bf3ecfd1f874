"""Installed rpm packages read from the rpm database under the root, without running rpm (so ``--root`` inspects an
image): the sqlite database of rpm 4.16+ (``rpmdb.sqlite``: RHEL 9, Fedora 33+, openSUSE), opened read-only and
immutable (no lock taken, no journal written, nothing changed), its ``Name`` index asked for the wanted names only, each
header read bounded (:func:`cudaenv.parse.rpm.parse_rpm_header`). The older Berkeley DB ``Packages`` and SUSE's
``Packages.db`` (ndb) are not read: a note says their versions are unknown.
"""

from typing import Dict, Iterable, List, Optional

from cudaenv.model.snapshot import Note
from cudaenv.parse.rpm import parse_rpm_header
from cudaenv.probes.package_db import RPM_DB_DIRS

SQLITE = "rpmdb.sqlite"
OTHER_FORMATS = ("Packages", "Packages.db")  # Berkeley DB (rpm < 4.16), ndb (SUSE)
HEADER_BYTES = 256 * 1024  # of each header blob: NAME, VERSION and RELEASE lie in its first kilobytes
SCAN_ROWS = 100_000  # headers scanned where the Name index is missing


def probe_rpm_packages(host, names: Iterable[str], notes: List[Note], probe: str = "containers") -> Optional[Dict[str, str]]:
    """{name: "version-release"} (``epoch:`` first when set) of the installed packages among ``names``; None where
    there is no rpm database, or it is one this reader does not read (a note says so)."""
    wanted = tuple(dict.fromkeys(names))
    for folder in RPM_DB_DIRS:
        path = folder + "/" + SQLITE
        if host.is_file(path):
            real = host.real(path)
            if real is None:
                continue
            return _read_sqlite(str(real), path, wanted, notes, probe)
    for folder in RPM_DB_DIRS:
        for other in OTHER_FORMATS:
            if host.is_file(folder + "/" + other):
                from cudaenv.core.i18n import M
                notes.append(Note(probe, M("%s/%s is an rpm database cudaenv does not read (Berkeley DB or ndb): the "
                                         "versions of rpm packages are unknown (`rpm -q NAME` says)", folder, other)))
                return None
    return None


def _read_sqlite(real: str, shown: str, wanted, notes: List[Note], probe: str) -> Optional[Dict[str, str]]:
    import sqlite3
    from urllib.parse import quote

    out: Dict[str, str] = {}
    try:
        db = sqlite3.connect("file:%s?mode=ro&immutable=1" % quote(real), uri=True, timeout=1)
    except (sqlite3.Error, OSError) as exc:
        from cudaenv.core.i18n import M
        notes.append(Note(probe, M("%s cannot be opened (%s): rpm package versions unknown", shown, exc)))
        return None
    try:
        db.execute("PRAGMA query_only = 1")
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' LIMIT 1000")}
        if "Packages" not in tables:
            from cudaenv.core.i18n import M
            notes.append(Note(probe, M("%s has no Packages table: rpm package versions unknown", shown)))
            return None
        if "Name" in tables:
            rows = (r for name in wanted for r in db.execute(
                "SELECT substr(p.blob, 1, ?) FROM Name n JOIN Packages p ON p.hnum = n.hnum WHERE n.key = ? LIMIT 16",
                (HEADER_BYTES, name)))
        else:
            rows = db.execute("SELECT substr(blob, 1, ?) FROM Packages LIMIT ?", (HEADER_BYTES, SCAN_ROWS))
        for (blob,) in rows:
            header = parse_rpm_header(blob)
            if header is not None and header[0] in wanted:
                name, version, release, epoch = header
                out[name] = "%s%s%s" % ("%d:" % epoch if epoch else "", version or "?", "-" + release if release else "")
    except sqlite3.Error as exc:
        from cudaenv.core.i18n import M
        notes.append(Note(probe, M("%s cannot be read (%s): rpm package versions unknown", shown, exc)))
        return None
    finally:
        db.close()
    return out
