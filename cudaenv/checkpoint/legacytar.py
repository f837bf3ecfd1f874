"""Legacy tar checkpoints (torch before 0.4), read as torch 2.13's ``legacy_load`` reads them
(T:serialization.py:1722-1798, 1869-1883). Part of :mod:`cudaenv.checkpoint.container`."""

from __future__ import annotations

import struct

from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.reading import MAX_PICKLE, Container, _walk_at
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Tuple


def tar_header(head: bytes) -> bool:
    """Whether tarfile takes the first 512 bytes for a header (its checksum, as ``TarInfo.frombuf`` checks it; the
    ``ustar`` magic is not needed): then torch.load of a file that is not a zip goes the legacy tar way first
    (T:serialization.py:1869-1883: ``legacy_load``, back to the pickle at byte 0 only on a tarfile.TarError)."""
    if len(head) < 512 or head.count(0) == 512:
        return False
    field = head[148:156]
    try:
        if field[:1] in (b"\x80", b"\xff"):
            return False  # a base-256 checksum: never one of the sums below
        text = field.split(b"\x00", 1)[0].decode("ascii").strip()
        chksum = int(text or "0", 8)
    except (UnicodeDecodeError, ValueError):
        return False
    unsigned = 256 + sum(head[:148]) + sum(head[156:512])
    signed = 256 + sum(b - 256 if b > 127 else b for b in head[:148]) + sum(b - 256 if b > 127 else b for b in head[156:512])
    return chksum in (unsigned, signed)


TAR_MEMBERS = ("storages", "tensors", "pickle")  # what legacy_load unpickles, in its order (T:serialization.py:1722-1798)


def read_tar(fh, box: Container, limits) -> None:
    """A legacy tar checkpoint, walked as ``legacy_load`` reads it: ``storages`` (a count, then per storage a pickle
    (key, location, storage class), an int64 element count and the bytes, then the views pickle), ``tensors`` (a
    count, then per tensor a pickle and its sizes), ``pickle`` (the object). Every pickle is judged (weights_only=False
    runs each); the pickle at byte 0 too, which torch reads when tarfile fails on the archive."""
    import tarfile

    box.format = "torch-legacy-tar"
    box.notes.append(M("a tar archive: torch before 0.4 wrote checkpoints this way; weights_only refuses it"))
    first, _ = _walk_at(fh, 0, box.size, limits)
    box.leading = first
    try:
        fh.seek(0)
        tar = tarfile.open(fileobj=fh, mode="r:", format=tarfile.PAX_FORMAT)
        members = {m.name: m for m in tar.getmembers()}  # the last of a name, as getmember
    except (tarfile.TarError, EOFError, ValueError, UnicodeError) as exc:
        box.notes.append(M("tarfile cannot read it (%s): torch.load reads the pickle at byte 0 instead", str(exc)[:120]))
        box.format = "pickle" if first.complete else "unknown"
        box.pickle = first if first.complete else None
        box.leading = None if first.complete else first
        return
    f = None
    for name in TAR_MEMBERS:
        m = members.get(name)
        where = M("legacy tar member %s", name)
        if m is None:
            box.problem(M("the tar archive has no %s member: torch.load fails there ('filename not found')", name), "record-missing")
            return
        if not m.isreg() or m.sparse is not None:
            box.ambiguous.append((where, M("not a regular file (a link, a directory, a device or sparse): what torch "
                                         "extracts and unpickles from it is not in the archive")))
            return
        start, end = m.offset_data, m.offset_data + m.size
        if end > box.size:
            box.ambiguous.append((where, M("it runs past the end of the file: tarfile raises, and torch falls back to the "
                                         "pickle at byte 0 after what it already ran")))
        if name == "pickle":
            res, _ = _walk_member(fh, start, end, limits)
            box.pickle = res
            box.markers["protocol"] = str(res.protocol) if res.protocol is not None else "0-1"
            return
        if f is None:
            from cudaenv.checkpoint.tables import facts

            f = facts()
        if not _walk_tar_sequence(fh, box, name, start, end, limits, f):
            return


def _walk_member(fh, offset: int, end: int, limits) -> Tuple[pickle_vm.WalkResult, int]:
    """The pickle at ``offset`` inside a tar member that ends at ``end`` (read at most to there)."""
    fh.seek(offset)
    raw = fh.read(max(0, min(end - offset, MAX_PICKLE)))
    res = pickle_vm.walk(raw, 0, limits)
    if not res.complete and res.ran_out and offset + len(raw) < end:
        res.fails = False
        res.notes.append(M("the pickle at byte %d is longer than the %d bytes read", offset, len(raw)))
    return res, offset + res.end


def _walk_tar_sequence(fh, box: Container, name: str, at: int, end: int, limits, f) -> bool:
    """The pickles of the ``storages`` or ``tensors`` member, in torch's order; False where the walk cannot go on
    (said in ``box``)."""
    where = M("legacy tar member %s", name)
    count, at = _walk_member(fh, at, end, limits)
    box.extra_pickles[M("%s, count", where)] = count
    if not count.complete:
        return False
    n = count.root
    if type(n) is not int or n < 0:
        box.notes.append(M("%s does not start with a count: torch.load fails there", where))
        return False
    for i in range(n):
        if at >= end:
            box.notes.append(M("%s ends after %d of %d entries: torch.load fails there", where, i, n))
            return False
        res, at = _walk_member(fh, at, end, limits)
        box.extra_pickles[M("%s, entry %d", where, i)] = res
        if not res.complete:
            return False
        fh.seek(at)
        if name == "storages":
            args = res.root
            storage_type = args[2] if type(args) is tuple and len(args) == 3 else None
            itemsize = f.storage_dtype.get(getattr(storage_type, "name", None), (None, None))[1]
            raw = fh.read(8)
            if not itemsize or len(raw) < 8:
                box.ambiguous.append((where, M("entry %d: cudaenv cannot tell the size of its data, so not where the "
                                             "next pickle starts", i)))
                return False
            size = struct.unpack("<q", raw)[0]
            if size < 0:  # (it would send the walk back before the entry: the next pickle is not there)
                box.ambiguous.append((where, M("entry %d: its data size is %d, below zero: cudaenv cannot tell what "
                                             "torch reads next", i, size)))
                return False
            at += 8 + size * itemsize
            if at > end:  # torch reads that many bytes of the member and fails short of them
                box.notes.append(M("%s: entry %d's data runs past the member's end: torch.load fails there", where, i))
                return False
        else:
            raw = fh.read(4)
            if len(raw) < 4:
                return False
            ndim = struct.unpack("<i", raw)[0]
            if ndim < 0:
                box.notes.append(M("%s: a tensor with %d dimensions: torch.load fails there", where, ndim))
                return False
            at += 8 + 16 * ndim + 8
    if name == "storages":
        res, at = _walk_member(fh, at, end, limits)
        box.extra_pickles[M("%s, views", where)] = res
        return res.complete
    return True
