"""``cudaenv install --list``: the ``cuda-toolkit`` releases on the package index, split into those installable from
wheels (13.x) and those that need a runfile or a repository (12.x and older).

The releases come from ``pip index versions cuda-toolkit`` (pip's own index configuration, proxy and certificates:
cudaenv never names an index), cached in the user cache dir (``toolkit-releases.json``, written atomically, read
bounded as untrusted input). Offline first: a cache younger than :data:`FRESH` seconds is used without asking pip;
an older one is refreshed, and kept (with a note) when pip cannot answer."""

from __future__ import annotations

import json
import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

from cudaenv.version import parse_version, version_key

CACHE_NAME = "toolkit-releases.json"
FRESH = 24 * 3600.0
MAX_CACHE = 1024 * 1024


def split_releases(releases: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(from wheels, runfile/repository), newest first; pure."""
    from cudaenv.toolkit.install.plan import needs_runfile

    good = sorted({v for v in releases if parse_version(v)}, key=version_key, reverse=True)
    return [v for v in good if not needs_runfile(v)], [v for v in good if needs_runfile(v)]


def read_cache(path: str) -> Tuple[Optional[Dict], Optional[str]]:
    from cudaenv.index.cache import read_cache_bytes

    raw, why = read_cache_bytes(path, MAX_CACHE)
    if why:
        return None, "the release cache %s %s; ignored" % (path, why)
    if raw is None:
        return None, None
    try:
        data = json.loads(raw.decode("utf-8"))
        releases = [v for v in data["releases"] if isinstance(v, str) and parse_version(v)]
        fetched = float(data["fetched_at"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError):
        return None, "the release cache %s is corrupt; ignored" % path
    return {"releases": releases, "fetched_at": fetched}, None


def releases_cached(env, host, timeout: float) -> Tuple[List[str], str, str, List[str]]:
    """(releases, "cache" | "index", the cache file, notes): the fresh cache, else pip (then cached), else a stale cache."""
    from cudaenv._fs import atomic_write_text
    from cudaenv.index.cache import cache_dir
    from cudaenv.toolkit.install import apply

    path = os.path.join(cache_dir(env), CACHE_NAME)
    cached, note = read_cache(path)
    notes = [note] if note else []
    if cached is not None and time.time() - cached["fetched_at"] < FRESH:
        return cached["releases"], "cache", path, notes
    try:
        releases = list(apply.releases(host, apply.find_installer(host, "pip"), timeout))
    except Exception as exc:  # noqa: BLE001 - UserError/InstallError: fall back to a stale cache
        if cached is None:
            raise
        notes.append("the package index could not be read (%s); using the cache of %s" % (
            str(exc), time.strftime("%Y-%m-%d", time.gmtime(cached["fetched_at"]))))
        return cached["releases"], "cache", path, notes
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write_text(path, json.dumps({"releases": releases, "fetched_at": time.time()}))
    except OSError as exc:
        notes.append("could not write the release cache %s: %s" % (path, exc.strerror or exc))
    return releases, "index", path, notes
