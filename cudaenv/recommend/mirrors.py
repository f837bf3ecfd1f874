"""`cudaenv torch mirror-check`'s judgement (pure): does a mirror serve the wheel this machine needs, itself, intact?

The service (:mod:`cudaenv.recommend.mirror_check`) reads the mirror's page for the recommended build (its simple
index ``BASE/VARIANT/torch/``, else its flat listing ``BASE/VARIANT/``) and the official index's page; here the links
are judged: the wanted file (torch of that version and local tag, for this Python and platform) is listed or not
(and when not, whether the mirror lags: it lists only older builds), where its link points (the mirror itself, or back
upstream: PyTorch's pages carry absolute links since 2026-05, and a mirror that copied them sends every download to
the official index), and its sha256 against the official page's.
"""

from typing import Optional, Sequence, Tuple
from urllib.parse import urljoin, urlsplit

from cudaenv.core.version import pep440_key
from cudaenv.model.record import Record
from cudaenv.parse.index_pages import IndexLink, parse_wheel_filename

MIRROR_VERDICTS = ("ok", "unreachable", "timeout", "http-error", "not-an-index", "missing", "lagging", "upstream",
            "hash-mismatch")


class WheelWant(Record):
    torch_version: str  # "2.7.1"
    variant: str  # "cu126": the index folder
    local: Optional[str] = None  # the local tag the wheel carries ("cu126"), None where it carries none
    python: Optional[str] = None  # "3.11"; None: any
    platform: Optional[str] = None  # "linux-x86_64"


class SourceCheck(Record):
    """One page read: the mirror's or the official index's."""

    url: str  # the page read last
    layout: Optional[str] = None  # simple | flat | None (no index page read)
    problem: Optional[str] = None  # unreachable | timeout | http-error | not-an-index | None
    message: Optional[str] = None  # the reader's one line about the problem
    file: Optional[str] = None  # the wanted wheel's name, when listed
    file_url: Optional[str] = None  # its link, made absolute
    sha256: Optional[str] = None  # the page's hash of it
    newest: Optional[str] = None  # the newest torch the page lists for this local tag, Python and platform
    served_by: Optional[str] = None  # mirror | upstream | elsewhere
    redirect: Optional[str] = None  # where a HEAD of the file sends the download (a 3xx Location), when it does


class MirrorCheck(Record):
    """``cudaenv torch mirror-check --json``."""

    _json_envelope = True

    mirror: str  # its name in data/torch_mirrors.json, or the URL given
    base: str
    expected_layout: Optional[str]  # the table's (None for a URL)
    want: WheelWant
    source: SourceCheck
    official: Optional[SourceCheck] = None
    verdict: str = "ok"
    hash_match: Optional[bool] = None  # None: a hash is missing on one side, or the official page was not read
    commands: Tuple[str, ...] = ()  # pip's and uv's install lines for this mirror, in its layout
    snippet: Tuple[str, ...] = ()  # pixi's manifest lines for it

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def _fits(name: str, want: WheelWant) -> Optional[str]:
    """The wheel's torch version when it is a torch wheel of the wanted local tag, Python and platform, else None."""
    w = parse_wheel_filename(name)
    if w is None or w.name != "torch" or w.local != want.local or not w.release:
        return None
    if want.python and want.python not in w.pythons:
        return None
    if want.platform and want.platform not in w.platforms:
        return None
    return w.version


def find_wheel(links: Sequence[IndexLink], page_url: str, want: WheelWant) -> Tuple[Optional[IndexLink], Optional[str], Optional[str]]:
    """(the wanted file's link, its absolute URL, the newest version the page lists of that kind)."""
    found = None
    newest: Optional[str] = None
    for link in links:
        version = _fits(link.filename, want)
        if version is None:
            continue
        if newest is None or pep440_key(version) > pep440_key(newest):
            newest = version
        if version == want.torch_version and found is None:
            found = link
    return found, (urljoin(page_url, found.url.split("#", 1)[0]) if found is not None else None), newest


def served_by(file_url: str, mirror_base: str, official_base: str) -> str:
    """mirror | upstream | elsewhere: whose server the link sends the download to."""
    if file_url.startswith(official_base.rstrip("/") + "/") and not official_base.startswith(mirror_base.rstrip("/") + "/"):
        return "upstream"
    try:
        same = urlsplit(file_url).netloc == urlsplit(mirror_base).netloc
    except ValueError:
        same = False
    return "mirror" if same else "elsewhere"


def judge_mirror(mirror: SourceCheck, official: Optional[SourceCheck], want: WheelWant) -> Tuple[str, Optional[bool]]:
    """(verdict, hash match) of a mirror's page against the official one."""
    if mirror.problem:
        return mirror.problem, None
    if mirror.file is None:
        lags = mirror.newest is not None and pep440_key(mirror.newest) < pep440_key(want.torch_version)
        return ("lagging" if lags else "missing"), None
    if mirror.served_by == "upstream" or mirror.redirect is not None:
        return "upstream", None
    match = None
    if official is not None and official.sha256 and mirror.sha256:
        match = official.sha256 == mirror.sha256
    if match is False:
        return "hash-mismatch", False
    return "ok", match
