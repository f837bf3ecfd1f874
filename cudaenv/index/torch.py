"""What PyTorch's wheel index says exists: ``refresh(base)`` reads it, :class:`IndexData` holds it.

``refresh`` reads ``{base}/torch/`` (every torch wheel of every variant) and ``{base}/VARIANT/torch/`` for
each variant it names, splits the wheel names (:mod:`cudaenv.parse.index_pages`) and keeps, per variant,
which torch versions exist for which platforms and Pythons. The whole run has one deadline (``timeout``
seconds), never raises, and returns no data when no page listed a single torch wheel.
"""

import datetime as _dt
import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from cudaenv.core import config as _config
from cudaenv.host.process import Deadline
from cudaenv.index.client import FetchError, fetch_page
from cudaenv.core.i18n import M
from cudaenv.parse.index_pages import Wheel, parse_index_page, parse_wheel_filename, python_sort_key

# The version of the cache file's own layout (its "schema" key). The cache is no command output: it is not part of
# the JSON contract (cudaenv.model, schema_version) and never goes through its codec, which reads a newer minor "as
# far as it understands". A cache of any other version (newer or older) is not read at all: it is ignored with a
# note and `cudaenv torch refresh` writes a new one (refetching costs a few seconds; a half-understood cache could
# hide wheels that exist). Raise it whenever the layout changes.
CACHE_SCHEMA = 1
INDEX_TIMEOUT = _config.setting("CUDAENV_INDEX_TIMEOUT").default  # the one default lives in config's table
LATEST_TIME = 4102444800.0  # 2100-01-01: a fetched_at beyond it is not a time
MAX_VARIANTS = 200
MAX_VERSIONS = 2000


def index_base(env: Mapping[str, str], explicit: Optional[str] = None) -> str:
    """``--index-base``, else ``CUDAENV_TORCH_INDEX``, else its default, PyTorch's index (no trailing slash)."""
    from cudaenv.core import config

    return (explicit or config.value(env, "CUDAENV_TORCH_INDEX") or _config.TORCH_INDEX).strip().rstrip("/")


def variant_ok(variant: Any) -> bool:
    """``cu126``, ``rocm6.2.4``, ``xpu``, ``cpu`` (what a local tag or a folder of the index may be)."""
    import re

    return isinstance(variant, str) and len(variant) <= 24 and bool(re.fullmatch(r"cu\d{2,3}|rocm\d{1,3}(?:\.\d{1,3}){0,3}|xpu|cpu", variant))


class CacheVersionError(ValueError):
    """A cache written with another :data:`CACHE_SCHEMA` (by a newer or an older cudaenv): never read, rebuilt.
    ``message``: the marked message (str(exc) is its English)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def check_cache_schema(value: Any) -> None:
    """Nothing when ``value`` is :data:`CACHE_SCHEMA`; else :class:`CacheVersionError` saying which cache it is."""
    if isinstance(value, int) and not isinstance(value, bool) and value == CACHE_SCHEMA:
        return
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1000:
        raise CacheVersionError(M("written by a newer cudaenv (cache schema %d; this one reads %d)", value, CACHE_SCHEMA)
                                if value > CACHE_SCHEMA else
                                M("written by an older cudaenv (cache schema %d; this one reads %d)", value, CACHE_SCHEMA))
    raise CacheVersionError(M("no cache schema this cudaenv knows (it reads %d)", CACHE_SCHEMA))


@dataclass
class IndexData:
    """What the live index says: variant -> torch version -> platform -> Pythons ("any" for pure wheels)."""

    index_base: str
    fetched_at: float
    variants: Dict[str, Dict[str, Dict[str, List[str]]]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": CACHE_SCHEMA, "index_base": self.index_base, "fetched_at": self.fetched_at,
                "fetched": iso_date(self.fetched_at), "variants": self.variants, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: Any) -> "IndexData":
        """Checked field by field; ValueError says what is wrong (a cache is untrusted input), and
        :class:`CacheVersionError` when the cache has another :data:`CACHE_SCHEMA`."""
        if not isinstance(data, dict):
            raise ValueError(M("not a cache object"))
        check_cache_schema(data.get("schema"))
        base, fetched, variants = data.get("index_base"), data.get("fetched_at"), data.get("variants")
        if not isinstance(base, str) or not base:
            raise ValueError(M("no index_base"))
        if isinstance(fetched, bool) or not isinstance(fetched, (int, float)) or not math.isfinite(fetched) \
                or not 0 <= fetched <= LATEST_TIME:
            raise ValueError(M("fetched_at is not a time"))
        if not isinstance(variants, dict) or len(variants) > MAX_VARIANTS:
            raise ValueError(M("variants is not a mapping"))
        for variant, per_version in variants.items():
            if not variant_ok(variant) or not isinstance(per_version, dict) or len(per_version) > MAX_VERSIONS:
                raise ValueError(M("malformed variant"))
            for version, per_platform in per_version.items():
                if not isinstance(version, str) or len(version) > 40 or not isinstance(per_platform, dict):
                    raise ValueError(M("malformed version"))
                for plat, pythons in per_platform.items():
                    if not isinstance(plat, str) or not isinstance(pythons, list) or not all(isinstance(p, str) and len(p) < 12 for p in pythons):
                        raise ValueError(M("malformed cache"))
        notes = data.get("notes", [])
        notes = [n for n in notes if isinstance(n, str)][:20] if isinstance(notes, list) else []
        return cls(base, float(fetched), variants, notes)

    def torch_versions(self) -> Tuple[str, ...]:
        from cudaenv.core.version import pep440_key

        seen = {v for per_version in self.variants.values() for v in per_version if _is_release(v)}
        return tuple(sorted(seen, key=pep440_key))

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
    """A final release written canonically (``2.7.1``; not ``2.8.0rc1``, ``2.8.0.dev20250528``, ``2.7.1.post1``, ``v2.7``)."""
    from cudaenv.core.version import pep440

    parsed = pep440(version)
    return parsed is not None and not (parsed.pre or parsed.dev or parsed.post or parsed.local or parsed.epoch) \
        and str(parsed) == version and len(parsed.release) <= 5


def iso_date(ts: float) -> str:
    """``2026-12-03T00:20:00Z``; ``?`` for a number that is no time."""
    try:
        return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return "?"


def build_index_data(index_base: str, root_files: Sequence[str], variant_files: Mapping[str, Sequence[str]], fetched_at: float,
                     notes: Sequence[str] = ()) -> IndexData:
    """Combine the root listing (variant from the local tag) and the per-variant pages (variant from the page)."""
    variants: Dict[str, Dict[str, Dict[str, List[str]]]] = {}

    def add(variant: str, wheel: Wheel) -> None:
        if wheel.name != "torch" or not variant_ok(variant):
            return
        for plat in wheel.platforms:
            pythons = variants.setdefault(variant, {}).setdefault(wheel.version, {}).setdefault(plat, [])
            for py in wheel.pythons:
                if py not in pythons:
                    pythons.append(py)
                    pythons.sort(key=python_sort_key)

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


def variants_in_listing(root_files: Iterable[str], min_version: Tuple[int, ...] = (2, 0)) -> List[str]:
    """The variants (local tags) with a torch >= ``min_version`` in the root listing."""
    from cudaenv.core.version import version_key
    from cudaenv.facts.torch import variant_sort_key

    found = set()
    for name in root_files:
        wheel = parse_wheel_filename(name)
        if wheel and wheel.name == "torch" and wheel.local and variant_ok(wheel.local) and version_key(wheel.version) >= min_version:
            found.add(wheel.local)
    return sorted(found, key=variant_sort_key)


@dataclass
class RefreshResult:
    data: Optional[IndexData]
    notes: List[str]
    pages_read: int = 0
    pages_failed: int = 0
    cache_file: Optional[str] = None
    reachable: bool = False  # some page answered (even when it listed nothing useful)


def refresh(base: str, timeout: float = INDEX_TIMEOUT, extra_variants: Sequence[str] = (), workers: int = 8,
            clock: Any = time.time, deadline: Optional[float] = None) -> RefreshResult:
    """Read the root listing and every variant page it names (plus ``extra_variants`` without one); never raises.

    ``timeout`` (or ``deadline`` when given) is what the whole run may take: every connect and read waits at
    most what is left of it.
    """
    from concurrent.futures import ThreadPoolExecutor

    import requests

    base = base.rstrip("/")
    budget = Deadline(deadline if deadline is not None else timeout)
    notes: List[str] = []
    read = failed = 0
    root_files: List[str] = []
    reachable = False
    session = requests.Session()
    try:
        try:
            text, ctype = fetch_page(base + "/torch/", budget, session)
            reachable = True
            page = parse_index_page(text, ctype)
            if page.problem:
                failed += 1
                notes.append(M("root listing: %s", page.problem))
            else:
                root_files = list(page.files)
                read += 1
        except FetchError as exc:
            failed += 1
            notes.append(M("root listing: %s", exc.message))
        # the root listing names every variant; without it (a mirror may not have one) try the bundled ones
        wanted = [v for v in (variants_in_listing(root_files) if root_files else list(extra_variants)) if variant_ok(v)]

        def one(variant: str) -> Tuple[str, Optional[List[str]], Optional[str], bool]:
            try:
                text, ctype = fetch_page("%s/%s/torch/" % (base, variant), budget)  # no shared session across threads
            except FetchError as exc:
                return variant, None, variant + ": " + exc.message, False
            page = parse_index_page(text, ctype)
            if page.problem:
                return variant, None, variant + ": " + page.problem, True
            return variant, list(page.files), None, True

        variant_files: Dict[str, List[str]] = {}
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for variant, files, problem, answered in pool.map(one, wanted):
                reachable = reachable or answered
                if files is None:
                    failed += 1
                    notes.append(problem or variant)
                else:
                    read += 1
                    variant_files[variant] = files
    finally:
        session.close()
    if read == 0:
        return RefreshResult(None, notes + [M("nothing could be read from %s", base)], read, failed, reachable=reachable)
    data = build_index_data(base, root_files, variant_files, clock(), notes)
    if not data.variants:
        return RefreshResult(None, notes + [M("%d page(s) from %s list no torch wheels", read, base)], read, failed, reachable=True)
    return RefreshResult(data, notes, read, failed, reachable=True)
