"""What the doctor read from files that do not change between runs, kept for the next run and keyed by each file's
identity: the torch extensions' verdicts (:mod:`cudaenv.probes.extensions`), whose ELF symbol tables cost most of
the Frameworks section (issue 35's bench row: the doctor with the frameworks against without them).

An entry is used only when every file it was computed from has the identity it had then: the same device, inode,
size, modification and status-change times in nanoseconds (:func:`identity`; the status-change time cannot be set
back by any tool, so a file rewritten in place, copied over with its times kept or replaced by another gets a new
one). An entry whose files changed in the last :data:`SETTLED_NS` is not stored: on a file system with coarse
times, a change in the same tick could keep its identity (git's "racily clean" rule).

The memo is cudaenv's own file, read as untrusted input like every other: a regular file only, at most
:data:`MAX_BYTES`, JSON whose every level is checked; anything else is an empty memo (never an error, never a
note: the doctor reads the files again). Written atomically, private to the user, only when an entry was added;
a memo that cannot be written is left as it was. Only the real machine's files are memoized (never under ``--root``).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, Optional, Sequence, Tuple

MEMO_FILE = "facts-memo.json"
SCHEMA = 1  # the layout of the file; another number (a newer or an older cudaenv) is an empty memo
MAX_BYTES = 1024 * 1024
MAX_ENTRIES = 4096  # the newest kept when there are more
SETTLED_NS = 2_000_000_000  # 2 s


def identity(path: str) -> Optional[Tuple[int, int, int, int, int]]:
    """(device, inode, size, mtime_ns, ctime_ns) of the regular file ``path`` (links followed); None for anything
    else or a file that cannot be read."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if st.st_mode & 0o170000 != 0o100000:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _keys(raw: Any) -> Optional[Tuple[Tuple[int, ...], ...]]:
    if not isinstance(raw, list) or not raw or len(raw) > 64:
        return None
    out = []
    for key in raw:
        if not isinstance(key, list) or len(key) != 5 or not all(type(n) is int and n >= 0 for n in key):
            return None
        out.append(tuple(key))
    return tuple(out)


def parse_memo(data: bytes) -> Dict[str, Tuple[Tuple[Tuple[int, ...], ...], Dict[str, Any]]]:
    """The entries of a memo file's bytes: name -> (the identities of its files, its value); {} for anything that is
    not a memo of this layout. Entries that are malformed are dropped one by one. Never raises."""
    import json

    if len(data) > MAX_BYTES:
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("entries"), dict):
        return {}
    out = {}
    for name, entry in doc["entries"].items():
        if len(out) >= MAX_ENTRIES:
            break
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), dict):
            continue
        keys = _keys(entry.get("files"))
        if keys is not None:
            out[name] = (keys, entry["value"])
    return out


class Memo:
    """The memo file at ``path`` (read on the first :meth:`get`), and what this run adds to it."""

    def __init__(self, path: str, now_ns: Optional[int] = None):
        self.path = path
        self._now_ns = now_ns
        self._entries: Optional[Dict[str, Tuple[Tuple[Tuple[int, ...], ...], Dict[str, Any]]]] = None
        self._added = False

    def _loaded(self):
        if self._entries is None:
            from cudaenv.host.files import read_regular

            data = read_regular(self.path, MAX_BYTES + 1)
            self._entries = parse_memo(data) if data else {}
        return self._entries

    def get(self, name: str, keys: Sequence[Optional[Tuple[int, ...]]]) -> Optional[Dict[str, Any]]:
        """The value stored under ``name`` for files of exactly these identities; None otherwise (or any of them
        None: a file that is not there or not regular is read again)."""
        if not keys or any(k is None for k in keys):
            return None
        hit = self._loaded().get(name)
        return hit[1] if hit is not None and hit[0] == tuple(keys) else None

    def put(self, name: str, keys: Sequence[Optional[Tuple[int, ...]]], value: Dict[str, Any]) -> bool:
        """Store ``value`` for files of these identities, unless one is None or changed less than
        :data:`SETTLED_NS` ago (its identity might not show a change made in the same tick). True when stored."""
        import time

        if not keys or any(k is None for k in keys):
            return False
        now = self._now_ns if self._now_ns is not None else time.time_ns()
        if any(max(k[3], k[4]) > now - SETTLED_NS for k in keys):  # type: ignore[index]
            return False
        entries = self._loaded()
        entries.pop(name, None)  # (re-added last: the newest are kept)
        entries[name] = (tuple(keys), value)  # type: ignore[arg-type]
        self._added = True
        return True

    def save(self) -> bool:
        """Write the memo when this run added to it (atomically, private to the user); True when written. A folder
        or file that cannot be written leaves things as they were."""
        if not self._added:
            return False
        import json

        from cudaenv.core.fs import PRIVATE, atomic_write_text

        entries = list(self._loaded().items())[-MAX_ENTRIES:]
        while True:  # the newest entries that fit in MAX_BYTES (a bigger file would be read as no memo at all)
            doc = {"schema": SCHEMA, "entries": {name: {"files": [list(k) for k in keys], "value": value}
                                                 for name, (keys, value) in entries}}
            text = json.dumps(doc, separators=(",", ":"))
            if len(text) <= MAX_BYTES or not entries:  # (ASCII: json.dumps escapes the rest)
                break
            entries = entries[len(entries) // 2 + 1:] if len(entries) > 1 else []
        try:
            os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
            atomic_write_text(self.path, text, mode=PRIVATE)
        except (OSError, ValueError):
            return False
        self._added = False
        return True


def open_memo(host) -> Optional[Memo]:
    """The doctor's memo on the real machine (``CUDAENV_CACHE_DIR``'s folder, else the user cache folder the
    environment names: XDG's on Linux); None under ``--root`` (an image's files are read as they are), where
    ``CUDAENV_NO_CACHE=1``, and where the environment names no cache folder (a Windows or macOS user without
    ``CUDAENV_CACHE_DIR``: the extension check runs on Linux only)."""
    from cudaenv.core import config

    if host.rooted or config.value(host.env, "CUDAENV_NO_CACHE") == "1":
        return None
    folder = config.cache_dir(host.env, fallback=False)  # (platformdirs costs more than the memo saves: not asked)
    return Memo(os.path.join(folder, MEMO_FILE)) if folder else None
