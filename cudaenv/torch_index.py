"""Live torch index data, offline first: read the wheel index, learn what exists, cache it.

``refresh(base)`` reads ``{base}/torch/`` (every torch wheel of every variant, PEP 503 HTML or PEP 691 JSON)
and ``{base}/cuXYZ/torch/`` for each variant it found, parses the wheel file names
(``torch-2.7.1+cu126-cp311-cp311-manylinux_2_28_x86_64.whl`` -> version 2.7.1, local cu126, cp311,
linux-x86_64) and keeps, per variant, which versions exist for which platforms and Pythons.
The result is cached as JSON in ``platformdirs.user_cache_dir("cudaenv")`` (``CUDAENV_CACHE_DIR``
overrides it) with an atomic write. ``load_cache`` ignores a corrupt or stale cache with a note.

Parsing is pure (``parse_wheel_filename``, ``parse_index_page``, ``build_index_data``); only
``fetch_page``/``refresh`` touch the network, and only when asked, always with a timeout.
"""

import datetime as _dt
import json
import os
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit

from cudaenv import config as _config

DEFAULT_BASE = "https://download.pytorch.org/whl"
CACHE_NAME = "torch-index.json"
SCHEMA = 1
ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
DEFAULT_TIMEOUT = _config.setting("CUDAENV_INDEX_TIMEOUT").default  # the one default lives in config's table
_VARIANT_RE = re.compile(r"^(cu\d{2,3}|rocm\d+(?:\.\d+)*|xpu|cpu)$")


def index_base(env: Mapping[str, str], explicit: Optional[str] = None) -> str:
    """``--index-base``, else ``CUDAENV_TORCH_INDEX``, else https://download.pytorch.org/whl (no trailing slash)."""
    from cudaenv import config

    return (explicit or config.value(env, "CUDAENV_TORCH_INDEX") or DEFAULT_BASE).rstrip("/")


# ------------------------------------------------------------------ parsing (pure)
@dataclass(frozen=True)
class Wheel:
    name: str
    version: str  # public version "2.7.1"
    local: Optional[str]  # "cu126" | None
    python_tag: str  # "cp311"
    abi_tag: str  # "cp311" | "cp313t" | "none"
    platform_tag: str  # "manylinux_2_28_x86_64"

    @property
    def platform(self) -> Optional[str]:
        return platform_key_for_tag(self.platform_tag)

    @property
    def pythons(self) -> Tuple[str, ...]:
        """CPython versions this wheel installs on: ("3.11",), ("3.13t",) for free-threaded, ("any",) for py3."""
        found = []
        for tag in self.python_tag.split("."):
            m = re.fullmatch(r"cp(\d)(\d+)", tag)
            if m:
                free = self.abi_tag.endswith("t") and self.abi_tag.startswith("cp")
                found.append("%s.%s%s" % (m.group(1), m.group(2), "t" if free else ""))
            elif tag.startswith("py"):
                found.append("any")
        return tuple(found)


def parse_wheel_filename(filename: str) -> Optional[Wheel]:
    """A wheel file name split into its parts; None for anything that is not a wheel name."""
    name = unquote(filename.strip().split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1])
    if not name.endswith(".whl"):
        return None
    parts = name[:-4].split("-")
    if len(parts) not in (5, 6):
        return None
    dist, version = parts[0], parts[1]
    py, abi, plat = parts[-3], parts[-2], parts[-1]
    m = re.fullmatch(r"(\d+(?:\.\d+)*)((?:a|b|rc|\.dev|\.post)\d+)*(?:\+([A-Za-z0-9.]+))?", version)
    if not m or not dist or not py or not abi or not plat:
        return None
    public = version.split("+", 1)[0]
    return Wheel(dist.lower().replace("_", "-"), public, m.group(3), py, abi, plat)


def platform_key_for_tag(tag: str) -> Optional[str]:
    """``manylinux_2_28_x86_64`` -> ``linux-x86_64``; ``win_amd64`` -> ``windows-x86_64``; ``macosx_11_0_arm64`` -> ``macos-arm64``."""
    tag = tag.lower()
    first = tag.split(".")[0]
    if first.startswith(("manylinux", "linux", "musllinux")):
        if first.endswith("x86_64"):
            return "linux-x86_64"
        if first.endswith("aarch64"):
            return "linux-aarch64"
        return None
    if first == "win_amd64":
        return "windows-x86_64"
    if first == "win_arm64":
        return "windows-arm64"
    if first.startswith("macosx"):
        if first.endswith(("arm64", "universal2")):
            return "macos-arm64"
        if first.endswith("x86_64"):
            return "macos-x86_64"
    if first == "any":
        return "any"
    return None


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: List[str] = []
        self.texts: List[str] = []
        self._in_a = False
        self._text: List[str] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag.lower() == "a":
            self.hrefs.append(dict(attrs).get("href") or "")
            self._in_a, self._text = True, []

    def handle_data(self, data: str) -> None:
        if self._in_a:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag.lower() == "a" and self._in_a:
            self._in_a = False
            self.texts.append("".join(self._text).strip())


class PageError(ValueError):
    """An index page that is neither PEP 691 JSON nor PEP 503 HTML with links."""


def parse_index_page(text: str, content_type: str = "") -> List[str]:
    """The file names a simple-index project page lists (PEP 691 JSON or PEP 503 HTML)."""
    ctype = (content_type or "").lower()
    stripped = text.lstrip()
    if "json" in ctype or stripped.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise PageError("not valid JSON: %s" % exc)
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, list):
            raise PageError("JSON page without a 'files' list")
        return [str(f.get("filename") or "") for f in files if isinstance(f, dict) and f.get("filename")]
    if "<" not in text:
        raise PageError("neither JSON nor HTML")
    parser = _Links()
    try:
        parser.feed(text)
        parser.close()
    except Exception as exc:  # noqa: BLE001 - html.parser raises odd things on broken markup
        raise PageError("broken HTML: %s" % exc)
    names = []
    for href, label in zip(parser.hrefs, parser.texts + [""] * (len(parser.hrefs) - len(parser.texts))):
        candidate = label if label.endswith(".whl") else unquote(urlsplit(href).path.rsplit("/", 1)[-1])
        if candidate:
            names.append(candidate)
    return names


# ------------------------------------------------------------------ the learned data
@dataclass
class IndexData:
    """What the live index says: variant -> torch version -> platform -> Pythons ("any" for pure wheels)."""

    index_base: str
    fetched_at: float
    variants: Dict[str, Dict[str, Dict[str, List[str]]]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "index_base": self.index_base, "fetched_at": self.fetched_at,
                "fetched": _iso(self.fetched_at), "variants": self.variants, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: Any) -> "IndexData":
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError("unknown cache schema")
        variants = data["variants"]
        if not isinstance(variants, dict):
            raise ValueError("variants is not a mapping")
        for per_version in variants.values():
            for per_platform in per_version.values():
                for pythons in per_platform.values():
                    if not isinstance(pythons, list):
                        raise ValueError("malformed cache")
        return cls(str(data["index_base"]), float(data["fetched_at"]), variants, list(data.get("notes", [])))

    def torch_versions(self) -> Tuple[str, ...]:
        from cudaenv.facts.drivers import version_tuple

        seen = {v for per_version in self.variants.values() for v in per_version if _is_release(v)}
        return tuple(sorted(seen, key=version_tuple))

    def variants_for(self, torch_version: str, platform: str, python: Optional[str] = None) -> Tuple[str, ...]:
        """Variants with a wheel of this torch for the platform (and Python "3.11" when given)."""
        from cudaenv.facts.torch import variant_sort_key

        found = []
        for variant, per_version in self.variants.items():
            pythons = per_version.get(torch_version, {}).get(platform)
            if pythons is None:
                continue
            if python and pythons and python not in pythons and "any" not in pythons:
                continue
            found.append(variant)
        return tuple(sorted(found, key=variant_sort_key))

    def pythons_for(self, torch_version: str, platform: str, variant: str) -> Tuple[str, ...]:
        return tuple(self.variants.get(variant, {}).get(torch_version, {}).get(platform, ()))


def _is_release(version: str) -> bool:
    return bool(re.fullmatch(r"\d+(\.\d+)*", version))


def _iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_index_data(
    index_base: str, root_files: Sequence[str], variant_files: Mapping[str, Sequence[str]], fetched_at: float, notes: Sequence[str] = ()
) -> IndexData:
    """Combine the root listing (variant from the local tag) and the per-variant pages (variant from the page)."""
    variants: Dict[str, Dict[str, Dict[str, List[str]]]] = {}

    def add(variant: str, wheel: Wheel) -> None:
        plat = wheel.platform
        if wheel.name != "torch" or plat is None or not _VARIANT_RE.match(variant):
            return
        pythons = variants.setdefault(variant, {}).setdefault(wheel.version, {}).setdefault(plat, [])
        for py in wheel.pythons:
            if py not in pythons:
                pythons.append(py)
                pythons.sort(key=_py_key)

    for name in root_files:  # the root listing counts for variants whose own page was read (or when none was)
        wheel = parse_wheel_filename(name)
        if wheel and wheel.local and (not variant_files or wheel.local in variant_files):
            add(wheel.local, wheel)
    for variant, names in variant_files.items():
        for name in names:
            wheel = parse_wheel_filename(name)
            if wheel and (wheel.local in (None, variant)):
                add(variant, wheel)
    return IndexData(index_base.rstrip("/"), fetched_at, variants, list(notes))


def _py_key(py: str) -> Tuple[int, ...]:
    nums = re.findall(r"\d+", py)
    return tuple(int(n) for n in nums) + ((1,) if py.endswith("t") else (0,))


def variants_in_listing(root_files: Iterable[str], min_version: Tuple[int, ...] = (2, 0)) -> List[str]:
    """The variants (local tags) with a torch >= ``min_version`` in the root listing."""
    from cudaenv.facts.drivers import version_tuple
    from cudaenv.facts.torch import variant_sort_key

    found = set()
    for name in root_files:
        wheel = parse_wheel_filename(name)
        if wheel and wheel.local and _VARIANT_RE.match(wheel.local) and version_tuple(wheel.version) >= min_version:
            found.add(wheel.local)
    return sorted(found, key=variant_sort_key)


# ------------------------------------------------------------------ network (only when asked)
class FetchError(Exception):
    pass


def _failure(url: str, exc: BaseException, timeout: float) -> str:
    import socket

    if isinstance(exc, socket.timeout) or "Timeout" in type(exc).__name__:
        return "%s timed out after %g s" % (url, timeout)
    return "%s could not be read: %s" % (url, type(exc).__name__)


def page_deadline(timeout: float) -> float:
    """The most one page may take in all: a server that trickles bytes resets a per-read timeout forever."""
    return max(60.0, 4.0 * timeout)


def fetch_page(url: str, timeout: float, session: Any = None, deadline: Optional[float] = None) -> Tuple[str, str]:
    """GET a simple-index page (JSON preferred); (text, content type). Raises FetchError with a one-line reason.

    ``timeout`` bounds the connect and each read; ``deadline`` (default ``page_deadline(timeout)``) bounds the
    whole body: it is read as it arrives and abandoned once the deadline has passed.
    """
    import requests
    from requests.utils import get_encoding_from_headers

    total = page_deadline(timeout) if deadline is None else deadline
    started = time.monotonic()
    getter = session.get if session is not None else requests.get
    try:
        resp = getter(url, headers={"Accept": ACCEPT}, timeout=(timeout, timeout), stream=True)
    except requests.exceptions.RequestException as exc:
        raise FetchError(_failure(url, exc, timeout)) from None
    try:
        if resp.status_code != 200:
            raise FetchError("%s answered HTTP %d" % (url, resp.status_code))
        read1 = getattr(resp.raw, "read1", None)  # urllib3 >= 2.3: whatever one recv brings
        chunks = iter(lambda: read1(65536, decode_content=True) or b"", b"") if read1 else resp.iter_content(8192)
        body = []
        for chunk in chunks:
            body.append(chunk)
            if time.monotonic() - started > total:
                raise FetchError("%s took longer than %g s in all; abandoned" % (url, total))
    except FetchError:
        raise
    except Exception as exc:  # requests', urllib3's (ReadTimeoutError, ProtocolError) and socket errors mid-body
        raise FetchError(_failure(url, exc, timeout)) from None
    finally:
        resp.close()
    ctype = resp.headers.get("Content-Type", "")
    return b"".join(body).decode(get_encoding_from_headers(resp.headers) or "utf-8", "replace"), ctype


@dataclass
class RefreshResult:
    data: Optional[IndexData]
    notes: List[str]
    pages_read: int = 0
    pages_failed: int = 0
    cache_file: Optional[str] = None


def refresh(
    base: str,
    timeout: float = DEFAULT_TIMEOUT,
    extra_variants: Sequence[str] = (),
    workers: int = 8,
    clock: Any = time.time,
    deadline: Optional[float] = None,
) -> RefreshResult:
    """Read the root listing and every variant page it names (plus ``extra_variants``); never raises.

    ``timeout`` bounds the connect and each read, ``deadline`` each page in all (``page_deadline(timeout)``).
    """
    from concurrent.futures import ThreadPoolExecutor

    import requests

    base = base.rstrip("/")
    notes: List[str] = []
    read = failed = 0
    root_files: List[str] = []
    session = requests.Session()
    try:
        text, ctype = fetch_page(base + "/torch/", timeout, session, deadline)
        root_files = parse_index_page(text, ctype)
        read += 1
    except (FetchError, PageError) as exc:
        failed += 1
        notes.append("root listing: %s" % exc)
    # the root listing names every variant; without it (a mirror may not have one) try the bundled ones
    wanted = variants_in_listing(root_files) if root_files else list(extra_variants)

    def one(variant: str) -> Tuple[str, Optional[List[str]], Optional[str]]:
        try:
            text, ctype = fetch_page("%s/%s/torch/" % (base, variant), timeout, deadline=deadline)
            return variant, parse_index_page(text, ctype), None
        except (FetchError, PageError) as exc:
            return variant, None, "%s: %s" % (variant, exc)

    variant_files: Dict[str, List[str]] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for variant, files, problem in pool.map(one, wanted):
            if files is None:
                failed += 1
                notes.append(problem or variant)
            else:
                read += 1
                variant_files[variant] = files
    session.close()
    if read == 0:
        return RefreshResult(None, notes + ["nothing could be read from %s" % base], read, failed)
    return RefreshResult(build_index_data(base, root_files, variant_files, clock(), notes), notes, read, failed)


# ------------------------------------------------------------------ the cache
def cache_dir(env: Mapping[str, str]) -> str:
    from cudaenv import config

    explicit = config.value(env, "CUDAENV_CACHE_DIR")
    if explicit:
        return explicit
    import platformdirs

    return platformdirs.user_cache_dir("cudaenv", appauthor=False)


def cache_file(env: Mapping[str, str]) -> str:
    return os.path.join(cache_dir(env), CACHE_NAME)


def write_cache(path: str, data: IndexData) -> str:
    """Atomic: a temporary file in the same folder, flushed, then ``os.replace`` over the old one."""
    from cudaenv._fs import atomic_write_text

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    atomic_write_text(path, json.dumps(data.to_dict(), indent=1, sort_keys=True))
    return path


CACHE_LIMIT = 32 * 1024 * 1024  # the cache cudaenv writes is about 100 KB


def load_cache(path: str, base: str, bundled_date: str) -> Tuple[Optional[IndexData], Optional[str]]:
    """(data, note). A missing cache is (None, None); a corrupt, foreign or stale one is (None, why)."""
    from cudaenv.host import read_regular_why

    data, why = read_regular_why(path, CACHE_LIMIT + 1)  # a FIFO, a device or /dev/zero is refused, not read
    if data is None:
        return None, (None if why is None else "the torch index cache: %s; using the bundled tables" % why)
    if len(data) > CACHE_LIMIT:
        return None, "the torch index cache %s is over %d MB; ignored (`cudaenv torch refresh` rebuilds it)" % (path, CACHE_LIMIT >> 20)
    raw = data.decode("utf-8", errors="replace")
    try:
        data = IndexData.from_dict(json.loads(raw))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, "the torch index cache %s is corrupt; ignored (`cudaenv torch refresh` rebuilds it)" % path
    if data.index_base.rstrip("/") != base.rstrip("/"):
        return None, "the torch index cache was read from %s, not %s; ignored" % (data.index_base, base)
    if _iso(data.fetched_at)[:10] < bundled_date:
        return None, "the torch index cache (%s) is older than the bundled tables (%s); ignored" % (_iso(data.fetched_at)[:10], bundled_date)
    return data, None


def cache_age_days(data: IndexData, now: Optional[float] = None) -> float:
    return max(0.0, ((now if now is not None else time.time()) - data.fetched_at) / 86400.0)
