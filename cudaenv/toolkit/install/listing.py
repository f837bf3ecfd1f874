"""The ``cuda-toolkit`` releases on the package index (``cudaenv install --list``, ``cudaenv list --available``, and
the release an install spec names), split into those installable from wheels (13.x) and those that need a runfile or
a repository (12.x and older).

The releases are read with cudaenv's own index client (:mod:`cudaenv.index.client`: PEP 691 JSON or PEP 503 HTML,
one deadline, bounded pages) from ``{index}/cuda-toolkit/``, where the index is, in order: ``CUDAENV_PACKAGE_INDEX``,
``PIP_INDEX_URL``, the ``index-url`` of pip's configuration (``pip config list``), else pip's own default as pip
states it (cudaenv never names an index). They are cached in the user cache dir (``toolkit-releases.json``, written
atomically, read bounded as untrusted input). Offline first, like ``torch refresh``: a cache younger than
:data:`FRESH` seconds is used without a request; an older one is refreshed, and kept (with a note) when the index
cannot be read. Only when no index base can be found at all is ``pip index versions`` asked instead (a note says so).
"""

from __future__ import annotations

import json
import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

from cudaenv.core.i18n import M
from cudaenv.model.record import Record
from cudaenv.core.version import parse_version, version_key

CACHE_NAME = "toolkit-releases.json"
FRESH = 24 * 3600.0
MAX_CACHE = 1024 * 1024
PROJECT = "cuda-toolkit"
# pip's default index as pip itself states it (run with pip's own interpreter, through the Host)
PIP_DEFAULT = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"


def split_releases(releases: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(from wheels, runfile/repository), newest first; pure."""
    from cudaenv.toolkit.install.plan import needs_runfile

    good = sorted({v for v in releases if parse_version(v)}, key=version_key, reverse=True)
    return [v for v in good if not needs_runfile(v)], [v for v in good if needs_runfile(v)]


def releases_from_page(files: Sequence[str]) -> List[str]:
    """Pure: the ``cuda-toolkit`` versions among an index page's file names (wheels and sdists; pre-releases left out)."""
    from cudaenv.parse.index_pages import parse_wheel_filename

    found = set()
    for name in files:
        wheel = parse_wheel_filename(name) if name.endswith(".whl") else None
        if wheel is not None:
            if wheel.name == PROJECT and wheel.release and parse_version(wheel.version):
                found.add(wheel.version)
            continue
        for ext in (".tar.gz", ".zip"):
            stem = name[: -len(ext)] if name.endswith(ext) else None
            if stem and stem.replace("_", "-").lower().startswith(PROJECT + "-"):
                version = stem[len(PROJECT) + 1:]
                if parse_version(version):
                    found.add(version)
    return sorted(found, key=version_key, reverse=True)


def parse_pip_config(text: str) -> Optional[str]:
    """Pure: the ``index-url`` of ``pip config list``'s output (``global.index-url='https://...'``), or None."""
    best = None
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if not sep or not key.strip().endswith(".index-url"):
            continue
        value = value.strip().strip("'\"").split()[0] if value.strip().strip("'\"") else ""
        scope = key.strip().rsplit(".", 1)[0]
        if value and (best is None or scope in (":env:", "download", "install")):
            best = value
    return best


def _pip_python(host, pip: str) -> Optional[str]:
    """The interpreter pip's script starts (its ``#!`` line), read as a file, never run to find out."""
    text = host.read_text(pip, limit=512) or ""
    first = text.splitlines()[0] if text.startswith("#!") else ""
    parts = first[2:].split()
    if not parts:
        return None
    if os.path.basename(parts[0]) == "env" and len(parts) > 1:
        return host.which(parts[1])
    return parts[0] if os.path.isabs(parts[0]) and os.path.isfile(parts[0]) else None


def index_base(env, host, timeout: float) -> Tuple[Optional[str], str]:
    """(the index base, where it came from); (None, why) when no base could be found."""
    from cudaenv.core import config
    from cudaenv.index.client import check_url

    for name in ("CUDAENV_PACKAGE_INDEX", "PIP_INDEX_URL"):
        value = ((config.value(env, name) if name.startswith("CUDAENV_") else env.get(name)) or "").strip()
        if value:
            why = check_url(value)
            return (None, M("%s: %s", name, why)) if why else (value.rstrip("/"), name)
    pip = host.which("pip") or host.which("pip3")
    if pip is None:
        return None, M("pip is not on PATH, and CUDAENV_PACKAGE_INDEX is not set")
    result = host.run([pip, "config", "list"], timeout=min(timeout, 30.0))
    configured = parse_pip_config(result.stdout) if result.ok else None
    if configured and check_url(configured) is None:
        return configured.rstrip("/"), M("pip's configuration")
    python = _pip_python(host, pip)
    if python is None:
        return None, M("the interpreter of %s could not be read from its first line", pip)
    result = host.run([python, "-c", PIP_DEFAULT], timeout=min(timeout, 30.0))
    default = (result.stdout or "").strip().splitlines()[-1:] if result.ok else []
    if default and check_url(default[0]) is None:
        return default[0].rstrip("/"), M("pip's default index")
    return None, M("pip did not say its default index (%s)", result.describe())


def fetch_releases(base: str, timeout: float) -> List[str]:
    """The releases ``{base}/cuda-toolkit/`` lists (the index client; raises ``FetchError`` in words)."""
    from cudaenv.host.process import Deadline
    from cudaenv.index.client import FetchError, fetch_page
    from cudaenv.parse.index_pages import parse_index_page

    url = "%s/%s/" % (base.rstrip("/"), PROJECT)
    text, ctype = fetch_page(url, Deadline(timeout))
    page = parse_index_page(text, ctype)
    if page.problem:
        raise FetchError(M("%s is not an index page (%s)", url, page.problem))
    found = releases_from_page(page.files)
    if not found:
        raise FetchError(M("%s lists no %s release", url, PROJECT))
    return found


def read_cache(path: str) -> Tuple[Optional[Dict], Optional[str]]:
    from cudaenv.index.cache import read_cache_bytes

    raw, why = read_cache_bytes(path, MAX_CACHE)
    if why:
        return None, M("the release cache %s %s; ignored", path, why)
    if raw is None:
        return None, None
    try:
        data = json.loads(raw.decode("utf-8"))
        releases = [v for v in data["releases"] if isinstance(v, str) and parse_version(v)]
        fetched = float(data["fetched_at"])
        index = data.get("index") if isinstance(data.get("index"), str) else None
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError, AttributeError):
        return None, M("the release cache %s is corrupt; ignored", path)
    return {"releases": releases, "fetched_at": fetched, "index": index}, None


def _read_live(env, host, timeout: float) -> Tuple[List[str], str, List[str]]:
    """(releases, the index read, notes): the index client, or pip when no index base is known."""
    from cudaenv.toolkit.install import apply

    base, how = index_base(env, host, timeout)
    if base is not None:
        from cudaenv.index.client import FetchError

        try:
            return fetch_releases(base, timeout), base, []
        except FetchError as exc:
            raise apply.InstallError(M("the package index could not be read: %s", exc.message),
                                     hint=M("set CUDAENV_PACKAGE_INDEX to an index that answers, or try again")) from None
    notes = [M("no package index base was found (%s); asked `pip index versions`", how)]
    return list(apply.releases(host, apply.find_installer(host, "pip"), timeout)), "pip", notes


class ReleaseList(Record):
    """``cudaenv install --list --json``: the releases, split, and where they were read."""

    _json_envelope = True

    wheels: Tuple[str, ...] = ()
    runfile_or_repository: Tuple[str, ...] = ()
    source: str = "index"  # cache | index | pip
    index: Optional[str] = None  # the index base the releases were read from
    cache_file: Optional[str] = None
    fetched_at: Optional[float] = None
    notes: Tuple[str, ...] = ()

    @property
    def releases(self) -> Tuple[str, ...]:
        return self.wheels + self.runfile_or_repository


def _listed(releases, source, index, path, fetched, notes) -> ReleaseList:
    wheels, runfile = split_releases(releases)
    return ReleaseList(tuple(wheels), tuple(runfile), source, index, path, fetched, tuple(notes))


def releases_cached(env, host, timeout: float, refresh: bool = False) -> ReleaseList:
    """The fresh cache (unless ``refresh``), else the index (then cached), else a stale cache with a note."""
    from cudaenv.core.fs import PRIVATE, atomic_write_text
    from cudaenv.core.config import cache_dir

    path = os.path.join(cache_dir(env), CACHE_NAME)
    cached, note = read_cache(path)
    notes = [note] if note else []
    if cached is not None and not refresh and time.time() - cached["fetched_at"] < FRESH:
        return _listed(cached["releases"], "cache", cached["index"], path, cached["fetched_at"], notes)
    try:
        releases, index, more = _read_live(env, host, timeout)
    except Exception as exc:  # noqa: BLE001 - UserError/InstallError: fall back to a stale cache
        if cached is None:
            raise
        why = exc.message if isinstance(getattr(exc, "message", None), str) else str(exc)  # a marked message stays one
        notes.append(M("%s; using the cache of %s", why, time.strftime("%Y-%m-%d", time.gmtime(cached["fetched_at"]))))
        return _listed(cached["releases"], "cache", cached["index"], path, cached["fetched_at"], notes)
    notes += more
    now = time.time()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # private: the index URL can carry a token (PIP_INDEX_URL=https://user:token@host/simple)
        atomic_write_text(path, json.dumps({"releases": releases, "fetched_at": now, "index": index}), mode=PRIVATE)
    except OSError as exc:
        notes.append(M("could not write the release cache %s: %s", path, exc.strerror or exc))
    return _listed(releases, "pip" if index == "pip" else "index", None if index == "pip" else index, path, now, notes)
