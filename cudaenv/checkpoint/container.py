"""The containers a checkpoint comes in, read bounded: never the tensor bytes.

* **torch zip** (``torch.save`` since 1.6): read as torch reads it (:func:`cudaenv.checkpoint.reading.read_torch_zip`):
  the central directory by miniz's rules (:func:`cudaenv.checkpoint.zipdir.read_central_directory`,
  ``data/checkpoint_zip_rules.txt``: the stated offset, names over their full bytes without regard to ASCII case, ZIP64 where its locator says), then
  ``<prefix>/data.pkl`` from its local header (CRC not checked, as torch does), the small records (``.format_version``,
  ``version`` or ``.data/version``, ``byteorder``, ``.storage_alignment``, ``.data/serialization_id``) and the size of
  every ``data/<key>`` record. The archive prefix is the first entry's folder; a repeated name whose entries differ
  is ambiguous (every candidate pickle is walked; the verdict is never safe).
* **TorchScript** (``torch.jit.save``): a torch zip with ``constants.pkl`` (torch's own test).
* **legacy** (``_use_new_zipfile_serialization=False``): five pickles (magic number, protocol, sys_info, the object,
  the storage keys), then per storage an int64 element count and the bytes; the layout is computed, not read.
* **legacy tar** (before torch 0.4; :mod:`cudaenv.checkpoint.legacytar`): any file whose first 512 bytes tarfile takes
  for a header (the ``ustar`` magic is not needed), walked member by member as ``legacy_load`` unpickles them.
* **safetensors**: the 8-byte little-endian header length and the JSON header, bounded.
* anything else is walked as a pickle from its first byte, because that is what torch.load does with it (a plain
  ``pickle.load`` when weights_only=False: whatever the pickle calls runs, whatever follows it).

The format is decided as torch decides it (``T:serialization.py:428-441``, ``_is_zipfile``): a zip only when the file
starts with a zip's local header (``PK\\x03\\x04``), never from an end-of-directory record found in its tail (a plain
pickle with those four bytes appended, a legacy file whose last tensor holds them). A zip that starts later, after
other bytes that are not a pickle, is read for what it holds and named as what torch will not load.
"""

from __future__ import annotations

import os
import struct

from cudaenv.checkpoint import pickle_vm
from cudaenv.checkpoint.reading import Container, _read_zip, _walk_at, read_torch_zip
from cudaenv.checkpoint.zipdir import BadZip, read_directory
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Optional

MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024  # the safetensors library's own cap
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C  # T:serialization.py:65 (MAGIC_NUMBER)
LEGACY_PROTOCOL = 1001  # T:serialization.py:66


def open_container(path: str, limits: Optional[pickle_vm.Limits] = None) -> Container:
    """Read ``path``'s container; OSError for an unreadable file, never another exception for any content."""
    from cudaenv.host.files import open_regular

    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        box = _read(fh, Container(path, size), limits, "file")
    return box


ZIP_MAGIC = b"PK\x03\x04"  # R-zip-start: T:serialization.py:438 (_is_zipfile: the file's first four bytes, nothing else)


def _dispatch(fh, head: bytes, box: Container, limits) -> None:
    if head[:4] == ZIP_MAGIC:
        read_torch_zip(fh, box, limits)
        return
    from cudaenv.checkpoint import legacytar  # (not on a zip's path: most checkpoints)

    if legacytar.tar_header(head):
        legacytar.read_tar(fh, box, limits)
    elif _looks_safetensors(head, box.size):
        _read_safetensors(fh, box)
    else:
        _read_pickles(fh, box, limits)


def _zip_after(fh, box: Container) -> Optional[int]:
    """Where a zip starts in a file that does not start with one (bytes in front of it), when its directory reads and
    has entries; None otherwise (the ``PK\\x05\\x06`` of a tail is not enough)."""
    try:
        fh.seek(0)
        directory = read_directory(fh)
    except (BadZip, ValueError, struct.error, EOFError, NotImplementedError, OSError):
        return None
    starts = [e.header_offset for e in directory if e.header_offset > 0]
    if not directory or len(starts) != len(directory):
        return None
    fh.seek(min(starts))
    return min(starts) if fh.read(4) == ZIP_MAGIC else None


def sniff_safetensors(path: str) -> bool:
    """Whether the file ``path`` starts as a safetensors file does (16 bytes read; OSError for an unreadable one)."""
    from cudaenv.host.files import open_regular

    with open_regular(path) as fh:
        return _looks_safetensors(fh.read(16), os.fstat(fh.fileno()).st_size)


def _looks_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 10:
        return False
    n = struct.unpack_from("<Q", head, 0)[0]
    return 2 <= n <= MAX_SAFETENSORS_HEADER and 8 + n <= size and head[8:9] == b"{"


def _read_pickles(fh, box: Container, limits) -> None:
    """torch.load of a file that is not a zip: (not a tar) its pickles from byte 0, the legacy magic number first."""
    first, offset = _walk_at(fh, 0, box.size, limits)
    if not first.complete and not first.globals and not first.persids:  # nothing a pickle.load of it would call
        at = _zip_after(fh, box)
        box.leading = first
        if at is not None:
            _read_zip(fh, box, limits)
            if first.fails and first.end <= 1:  # junk in front: pickle stops at its first byte, nothing runs
                box.problem(M("%d bytes before the zip archive: torch.load reads a file as a zip only when it starts with "
                            "one (PK\\x03\\x04), so it reads this one as a pickle and fails at its first byte", at),
                            "bytes-before-zip", first=True)
            else:  # a pickle in front, which torch.load runs: never mended away by a rewrite
                box.problem(M("%d bytes before the zip archive, read by torch.load as a pickle (it never reads the zip): "
                            "that pickle is what loading runs", at), "leading-pickle", first=True)
            return
        if first.data[:1] not in _PICKLE_STARTS:
            box.format = "unknown"
            box.notes.append(M("neither a torch zip, a legacy torch file, TorchScript, safetensors nor a pickle"))
            return
    if first.complete and first.root == LEGACY_MAGIC:
        box.format = "torch-legacy"
        proto, offset = _walk_at(fh, offset, box.size, limits)
        box.markers["legacy_protocol"] = str(proto.root)
        if proto.root != LEGACY_PROTOCOL:
            box.problem(M("legacy protocol version %r, torch reads %d ('Invalid protocol version')", proto.root, LEGACY_PROTOCOL), "record-refused")
        info, offset = _walk_at(fh, offset, box.size, limits)
        little = _sdict_get(info.root, "little_endian")
        if little is not None:
            box.markers["byteorder"] = "little" if little else "big"
        sizes = _sdict_get(info.root, "type_sizes")
        if sizes is not None:
            box.markers["type_sizes"] = ",".join("%s=%s" % (k, v) for k, v in getattr(sizes, "pairs", ()))
        box.markers["protocol"] = str(first.protocol) if first.protocol is not None else "0-1"
        box.pickle, offset = _walk_at(fh, offset, box.size, limits)
        keys, offset = _walk_at(fh, offset, box.size, limits)
        # torch.load unpickles all five (with the weights_only unpickler when asked): a global, an opcode or a
        # damage in any of them counts as in the object pickle
        box.extra_pickles.update(((M("legacy magic number"), first), (M("legacy protocol"), proto),
                                  (M("legacy sys_info"), info), (M("legacy storage keys"), keys)))
        items = getattr(keys.root, "items", None)
        if keys.complete and items is not None:
            box.legacy_keys = [k for k in items if isinstance(k, str)]
            if len(box.legacy_keys) != len(items):  # torch looks each up among the storages: a KeyError
                box.problem(M("the legacy storage-key list holds keys that are not strings"), "record-missing")
            box.legacy_data_start = offset
        else:
            box.problems.append(M("the legacy storage-key list is missing or damaged"))
        return
    box.format = "pickle"
    box.pickle = first
    box.markers["protocol"] = str(first.protocol) if first.protocol is not None else "0-1"
    if first.complete and _zip_after(fh, box) is not None:
        box.notes.append(M("a zip archive follows the pickle: torch.load never reads it (a zip only at byte 0)"))


# the bytes a pickle usually starts with (PROTO, MARK, EMPTY_DICT, EMPTY_LIST, GLOBAL, STOP): a file that starts with
# another and whose walk stops at once, calling nothing, is not called a pickle
_PICKLE_STARTS = (b"\x80", b"(", b"}", b"]", b"c", b".")


def _sdict_get(obj, key):
    for k, v in getattr(obj, "pairs", ()):
        if k == key:
            return v
    return None


# ------------------------------------------------------------------ safetensors
def _read_safetensors(fh, box: Container) -> None:
    import json

    fh.seek(0)
    n = struct.unpack("<Q", fh.read(8))[0]
    raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        box.format = "unknown"
        box.notes.append(M("starts like safetensors but its header is not JSON: %s", str(exc)[:200]))
        return
    if not isinstance(header, dict):
        box.format = "unknown"
        box.notes.append(M("starts like safetensors but its header is not a JSON object"))
        return
    box.format = "safetensors"
    box.safetensors = header
    box.safetensors_data_start = 8 + n
    meta = header.get("__metadata__")
    if isinstance(meta, dict):
        for k, v in list(meta.items())[:20]:
            if isinstance(k, str) and isinstance(v, str):
                box.markers["metadata." + k[:60]] = v[:200]


class Window:
    """The bytes ``[start, start + length)`` of an open file as a file of their own (seek, tell, read): a
    ``torch.save`` archive inside a DCP ``.distcp`` file is read by the same readers as a file."""

    def __init__(self, fh, start: int, length: int):
        self.fh, self.start, self.length = fh, start, length
        self.pos = 0

    def seek(self, pos: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.length}[whence]
        self.pos = max(0, base + pos)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        left = max(0, self.length - self.pos)
        n = left if n is None or n < 0 else min(n, left)
        if n <= 0:
            return b""
        self.fh.seek(self.start + self.pos)
        data = self.fh.read(n)
        self.pos += len(data)
        return data


def read_embedded(fh, start: int, length: int, name: str, limits: Optional[pickle_vm.Limits] = None) -> Container:
    """The container of the bytes ``[start, start + length)`` of ``fh`` (named ``name`` in reports): a whole
    ``torch.save`` archive that another file carries, read as torch.load reads it from a stream."""
    return _read(Window(fh, start, length), Container(name, length), limits, "item")


def _read(fh, box: Container, limits, what: str) -> Container:
    """``box`` filled from ``fh`` (a file, or a window on one), by its first 512 bytes' format; anything the reading
    raises but an OSError ends as a note that says the ``what`` was not read to the end."""
    head = fh.read(512)
    try:
        _dispatch(fh, head, box, limits)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - a hostile container must end in a note, never a crash
        why = str(exc)[:200] or type(exc).__name__
        box.notes.append(M("the file could not be read to the end: %s", why) if what == "file" else
                         M("the item could not be read to the end: %s", why))
    return box
