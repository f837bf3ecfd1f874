"""The torch index cache: one JSON file, written atomically, read as untrusted input.

``write_cache`` writes a temporary file beside the cache and renames it over the old one. ``load_cache``
reads at most :data:`MAX_CACHE` bytes of a regular file through ``host.read_regular_why`` (never a
FIFO, a device or a link to one), checks UTF-8, nesting and every field (``fetched_at`` must be a time),
and answers ``(data, note)``: a cache that is missing is ``(None, None)``; one that is corrupt, foreign, of another
cache layout (:data:`cudaenv.index.torch.CACHE_SCHEMA`: a newer or an older cudaenv wrote it) or older than the
bundled tables is ``(None, one note)``, and the caller goes on with the bundled tables (``cudaenv torch refresh``
writes a new cache over it).
"""

import json
import os
from typing import Mapping, Optional, Tuple

from cudaenv.index.torch import CacheVersionError, IndexData, iso_date
from cudaenv.parse.index_pages import json_depth_within
from cudaenv.core.i18n import M, Msg

CACHE_NAME = "torch-index.json"
MAX_CACHE = 16 * 1024 * 1024  # a cache of PyTorch's whole index is under 100 KB


def cache_file(env: Mapping[str, str]) -> str:
    from cudaenv.core.config import cache_dir

    return os.path.join(cache_dir(env), CACHE_NAME)


def write_cache(path: str, data: IndexData) -> str:
    """Atomic: a temporary file in the same folder, flushed, then ``os.replace`` over the old one. Private (0600):
    ``index_base`` can be a URL with a token in it."""
    from cudaenv.core.fs import PRIVATE, atomic_write_text

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    atomic_write_text(path, json.dumps(data.to_dict(), indent=1, sort_keys=True), mode=PRIVATE)
    return path


def _ignored(path: str, why: str) -> str:
    return M("the torch index cache %s %s; ignored (`cudaenv torch refresh` rebuilds it)", path, why)


def read_cache_bytes(path: str, limit: int = MAX_CACHE) -> Tuple[Optional[bytes], Optional[str]]:
    """(bytes, None), (None, None) when there is no cache, or (None, why) for anything but a small regular file.

    Through the Host's one bounded regular-file read: a FIFO, a device or a link to /dev/zero is refused unread."""
    from cudaenv.host.files import read_regular_why

    data, why = read_regular_why(path, limit + 1)
    if data is None:
        if why is None:
            return None, None
        return None, M("was not read (%s)", why[len(path) + 2:] if why.startswith(path + ": ") else why.replace(path + " ", ""))
    if len(data) > limit:
        return None, M("is over %d MiB", limit // (1024 * 1024))
    return data, None


def load_cache(path: str, base: str, bundled_date: str) -> Tuple[Optional[IndexData], Optional[str]]:
    """(data, note). A missing cache is (None, None); a corrupt, foreign or stale one is (None, why)."""
    raw, why = read_cache_bytes(path)
    if why:
        return None, _ignored(path, why)
    if raw is None:
        return None, None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, _ignored(path, M("is not UTF-8 text"))
    if not json_depth_within(text):
        return None, _ignored(path, M("is nested too deeply to be a cache"))
    try:
        data = IndexData.from_dict(json.loads(text))
    except CacheVersionError as exc:  # another cudaenv's layout: never half-read, rebuilt by the next refresh
        return None, _ignored(path, M("was %s", exc.message) if str(exc).startswith("written") else M("has %s", exc.message))
    except (ValueError, RecursionError, TypeError, AttributeError, KeyError) as exc:
        why = exc.args[0] if exc.args and isinstance(exc.args[0], Msg) and len(exc.args[0]) <= 60 else str(exc)[:60]
        return None, _ignored(path, M("is corrupt (%s)", why if isinstance(exc, ValueError) and "Expecting" not in str(exc)
                                      else M("not a cudaenv cache")))
    if data.index_base.rstrip("/") != base.rstrip("/"):
        return None, M("the torch index cache was read from %s, not %s; ignored", data.index_base[:200], base)
    if iso_date(data.fetched_at)[:10] < bundled_date:
        return None, M("the torch index cache (%s) is older than the bundled tables (%s); ignored", iso_date(data.fetched_at)[:10],
                       bundled_date)
    return data, None


def cache_age_days(data: IndexData, now: Optional[float] = None) -> float:
    import time

    return max(0.0, ((now if now is not None else time.time()) - data.fetched_at) / 86400.0)
