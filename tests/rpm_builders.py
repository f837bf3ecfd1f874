"""rpm package headers and an rpm 4.16+ sqlite database, constructed (no real rpmdb is recorded here): the header
as rpm.org's "RPM file format" (Header section) and rpm's headerExport lay it out (two big-endian counts, 16-byte
index entries, the data store; no magic in the database), the database as rpm's sqlite backend creates it (a
``Packages`` table of ``hnum INTEGER PRIMARY KEY AUTOINCREMENT, blob BLOB NOT NULL`` and one index table per tag,
``Name`` among them, of ``key, hnum, idx``)."""

import sqlite3
import struct


def rpm_header(name, version=None, release=None, epoch=None, filler=0, magic=False):
    """A header blob with NAME, VERSION, RELEASE (strings) and EPOCH (int32); ``filler`` bytes of a HEADERI18NTABLE
    string first (tag 100) push the others further into the blob."""
    entries, store = [], b""

    def add(tag, kind, value):
        nonlocal store
        if kind == 4:
            store += b"\x00" * (-len(store) % 4)
            entries.append((tag, kind, len(store), 1))
            store += struct.pack(">i", value)
        else:
            entries.append((tag, kind, len(store), 1))
            store += value.encode() + b"\x00"

    if filler:
        add(100, 6, "C" * filler)
    add(1000, 6, name)
    if version is not None:
        add(1001, 6, version)
    if release is not None:
        add(1002, 6, release)
    if epoch is not None:
        add(1003, 4, epoch)
    head = struct.pack(">II", len(entries), len(store)) + b"".join(struct.pack(">iiii", *e) for e in entries) + store
    return (b"\x8e\xad\xe8\x01\x00\x00\x00\x00" + head) if magic else head


def rpmdb(path, headers, name_index=True):
    """An rpmdb.sqlite at ``path`` holding ``headers`` ((name, blob) pairs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path))
    db.execute("CREATE TABLE Packages (hnum INTEGER PRIMARY KEY AUTOINCREMENT, blob BLOB NOT NULL)")
    if name_index:
        db.execute("CREATE TABLE Name (key TEXT NOT NULL, hnum INTEGER NOT NULL, idx INTEGER NOT NULL)")
    for name, blob in headers:
        hnum = db.execute("INSERT INTO Packages (blob) VALUES (?)", (blob,)).lastrowid
        if name_index:
            db.execute("INSERT INTO Name VALUES (?, ?, 0)", (name, hnum))
    db.commit()
    db.close()
    return path
