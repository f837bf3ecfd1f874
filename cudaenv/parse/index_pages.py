"""Simple-repository pages and wheel file names, as values (pure: no I/O, never raises for any input).

A project page of a PEP 503 (HTML) or PEP 691 (JSON) index lists file names::

    <a href="/whl/cu126/torch-2.7.1%2Bcu126-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=...">torch-2.7.1+cu126-...whl</a>
    {"meta": {"api-version": "1.1"}, "name": "torch", "files": [{"filename": "torch-2.7.1+cu126-...whl", ...}]}

``parse_index_page(text, content_type)`` gives the file names (or a problem); ``parse_wheel_filename(name)``
splits a wheel name with ``packaging`` (``torch-2.7.1+cu126-cp311-cp311-manylinux_2_28_x86_64.whl`` ->
torch, 2.7.1, local cu126, Python 3.11, linux-x86_64). The HTML reader is linear in the page size (no regular
expression runs over the whole page), the JSON reader refuses nesting deeper than :data:`MAX_JSON_DEPTH`
before ``json`` sees it, and a name with absurd numbers (a 5000-digit Python tag) is no wheel at all.
"""

import html
import json
import re
from typing import List, Optional, Tuple
from urllib.parse import unquote, urlsplit

from cudaenv.core.i18n import M
from cudaenv.model.record import Record

MAX_JSON_DEPTH = 32  # a PEP 691 page nests 4 deep ({files: [{hashes: {}}]})
MAX_NAME = 400  # the longest torch wheel name is about 80 characters
MAX_DIGITS = 12  # per run of digits in a wheel name (versions, Python tags, glibc versions)
MAX_TAG = 8192  # one <a ...> start tag
_JSON_TOKENS = re.compile(r'["\\\[\]{}]')
_DIGITS = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_CP = re.compile(r"cp(\d)(\d{1,3})")


class IndexPage(Record):
    """The file names a page lists; ``problem`` says why none could be read (not JSON, broken, ...)."""

    files: Tuple[str, ...] = ()
    problem: Optional[str] = None
    format: Optional[str] = None  # "json" | "html"


class IndexLink(Record):
    """One file a page links to: its name, the link as written (relative or absolute), its sha256 where the page
    gives one (PEP 503's ``#sha256=`` fragment, PEP 691's ``hashes``)."""

    filename: str
    url: str
    sha256: Optional[str] = None


class IndexLinks(Record):
    links: Tuple[IndexLink, ...] = ()
    problem: Optional[str] = None
    format: Optional[str] = None  # "json" | "html"


class Wheel(Record):
    name: str  # normalized project name: "torch"
    version: str  # the public version: "2.7.1", "2.5.0.dev20240801"
    local: Optional[str]  # "cu126" | None
    pythons: Tuple[str, ...]  # ("3.11",), ("3.13t",) for free-threaded, ("any",) for py3
    platforms: Tuple[str, ...]  # ("linux-x86_64",); () when no platform cudaenv plans for
    release: bool = True  # no pre-, dev- or post-release part

    @property
    def platform(self) -> Optional[str]:
        return self.platforms[0] if self.platforms else None


# ------------------------------------------------------------------ wheel names
def parse_wheel_filename(filename: object) -> Optional[Wheel]:
    """A wheel file name (or a link to one, ``%2B``-quoted) split into its parts; None for anything else."""
    if not isinstance(filename, str) or len(filename) > 4 * MAX_NAME:
        return None
    name = unquote(filename.strip().split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1])
    if not name.endswith(".whl") or len(name) > MAX_NAME or _DIGITS.search(name):
        return None
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename as _parse
    from packaging.version import InvalidVersion

    try:
        dist, version, _build, tags = _parse(name)
    except (InvalidWheelFilename, InvalidVersion, ValueError):
        return None
    pythons: List[str] = []
    platforms: List[str] = []
    for tag in sorted(tags, key=str):
        py = _python_of(tag.interpreter, tag.abi)
        if py and py not in pythons:
            pythons.append(py)
        plat = platform_key_for_tag(tag.platform)
        if plat and plat not in platforms:
            platforms.append(plat)
    pythons.sort(key=python_sort_key)
    release = not (version.is_prerelease or version.is_postrelease or version.is_devrelease)
    return Wheel(str(dist), version.public, version.local, tuple(pythons), tuple(platforms), release)


def _python_of(interpreter: str, abi: str) -> Optional[str]:
    m = _CP.fullmatch(interpreter)
    if m:
        free = abi.startswith("cp") and abi.endswith("t")
        return "%s.%s%s" % (m.group(1), m.group(2), "t" if free else "")
    if interpreter.startswith("py"):
        return "any"
    return None


def python_sort_key(py: str) -> Tuple[int, ...]:
    """``"3.9"`` < ``"3.13"`` < ``"3.13t"``; ``"any"`` first."""
    nums = re.findall(r"\d{1,4}", py)
    return tuple(int(n) for n in nums) + ((1,) if py.endswith("t") else (0,))


def platform_key_for_tag(tag: str) -> Optional[str]:
    """``manylinux_2_28_x86_64`` -> ``linux-x86_64``; ``win_amd64`` -> ``windows-x86_64``; ``macosx_11_0_arm64`` -> ``macos-arm64``."""
    first = (tag or "").lower().split(".")[0]
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


# ------------------------------------------------------------------ pages
def parse_index_page(text: object, content_type: str = "") -> IndexPage:
    """The file names a simple-index project page lists (PEP 691 JSON or PEP 503 HTML)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        return IndexPage(problem=M("not text"))
    ctype = (content_type or "").lower() if isinstance(content_type, str) else ""
    if "json" in ctype or text.lstrip().startswith("{"):
        return _json_page(text)
    if "<" not in text:
        return IndexPage(problem=M("neither JSON nor HTML"))
    return IndexPage(tuple(_html_files(text)), None, "html")


def parse_index_links(text: object, content_type: str = "") -> IndexLinks:
    """The files a simple-index project page or a flat listing links to, with where each link points and its sha256."""
    page = parse_index_page(text, content_type)
    if page.problem is not None:
        return IndexLinks((), page.problem, page.format)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if page.format == "json":
        data = json.loads(text)
        links = []
        for f in data["files"]:
            if not (isinstance(f, dict) and isinstance(f.get("filename"), str) and f["filename"]):
                continue
            url = f.get("url") if isinstance(f.get("url"), str) else f["filename"]
            hashes = f.get("hashes") if isinstance(f.get("hashes"), dict) else {}
            links.append(IndexLink(f["filename"], url, _hex(hashes.get("sha256"))))
        return IndexLinks(tuple(links), None, "json")
    return IndexLinks(tuple(IndexLink(name, href, _hex(_fragment_sha256(href))) for name, href in _html_anchors(text)), None, "html")


def _fragment_sha256(href: str) -> Optional[str]:
    _, _, fragment = href.partition("#")
    return fragment[len("sha256="):] if fragment.startswith("sha256=") else None


def _hex(value: object) -> Optional[str]:
    if not isinstance(value, str) or len(value) != 64:
        return None
    low = value.lower()
    return low if all(c in "0123456789abcdef" for c in low) else None


def json_depth_within(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when JSON ``text`` nests at most ``limit`` arrays/objects deep (strings skipped; linear time)."""
    if text.count("[") + text.count("{") <= limit:
        return True  # too few openings to nest deeper (the common case, in C speed)
    depth = 0
    in_string = False
    skip = -1
    for m in _JSON_TOKENS.finditer(text):
        i = m.start()
        if i == skip:
            continue
        ch = text[i]
        if in_string:
            if ch == "\\":
                skip = i + 1
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _json_page(text: str) -> IndexPage:
    if not json_depth_within(text):
        return IndexPage(problem=M("JSON nested deeper than %d levels; not an index page", MAX_JSON_DEPTH), format="json")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return IndexPage(problem=M("not valid JSON: %s", _short(exc)), format="json")
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        return IndexPage(problem=M("JSON page without a 'files' list"), format="json")
    names = tuple(f["filename"] for f in files if isinstance(f, dict) and isinstance(f.get("filename"), str) and f["filename"])
    return IndexPage(names, None, "json")


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 80 else text[:77] + "..."


def _html_files(text: str) -> List[str]:
    """Every ``<a>`` of the page: its text when that is a wheel name, else the last part of its href."""
    return [name for name, _ in _html_anchors(text)]


def _html_anchors(text: str) -> List[Tuple[str, str]]:
    """(name, href) of every ``<a>`` of the page: its text when that is a wheel name, else the last part of its href.

    Every search moves forward and each ``</a`` found is remembered, so any input is read in linear time.
    """
    low = text.lower()
    names: List[Tuple[str, str]] = []
    pos = 0
    n = len(text)
    close = -2  # the next "</a" at or after pos (-1: none left, -2: not searched yet)
    while pos < n:
        start = low.find("<a", pos)
        if start < 0:
            break
        after = start + 2
        if after < n and not (low[after].isspace() or low[after] in ">/"):
            pos = after  # <abbr>, <area>, ...
            continue
        end = low.find(">", after)
        if end < 0:
            break
        pos = end + 1
        if close != -1 and close < pos:
            close = low.find("</a", pos)
        nxt = low.find("<a", pos, close) if close >= 0 else -1
        label = text[pos:close] if close >= 0 and nxt < 0 else ""
        tag = text[after:end]
        if len(tag) > MAX_TAG:
            continue
        m = _HREF.search(tag)
        href = html.unescape(next((g for g in m.groups() if g is not None), "")) if m else ""
        label = html.unescape(label).strip() if len(label) <= MAX_NAME else ""
        if label.endswith(".whl"):
            candidate = label
        else:
            try:
                candidate = unquote(urlsplit(href).path.rsplit("/", 1)[-1])
            except ValueError:  # an href urlsplit refuses ("http://[")
                candidate = ""
        if candidate:
            names.append((candidate, href))
    return names
