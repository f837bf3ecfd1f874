"""Reading simple-repository pages over HTTP: bounded in time and in size, errors in words.

``fetch_page(url, deadline)`` GETs one page (PEP 691 JSON preferred, PEP 503 HTML accepted) and returns its
text and content type, or raises :class:`FetchError` with one line a person can read ("name resolution
failed for mirror.example", "127.0.0.1:9 refused the connection", "timed out after 2 s").

Bounds, whatever the server does:

* time: one :class:`cudaenv.host.process.Deadline` for the whole run. The connect and each read wait at most what is left of it,
  and the body is read as it arrives (one ``recv`` at a time), so a server that trickles a byte a second
  is abandoned when the deadline passes;
* size: the body is decompressed here, never by urllib3, with ``zlib``'s ``max_length``: a gzip page that
  inflates to gigabytes stops at :data:`MAX_PAGE` bytes of text with a note (gzip members are followed
  one after the other, as gzip allows).

Shared by ``cudaenv torch refresh`` (:mod:`cudaenv.index.torch`) and, later, the toolkit installs.
"""

from typing import Any, Optional, Tuple
from urllib.parse import urlsplit

from cudaenv.core.i18n import M
from cudaenv.core.text import seconds_text
from cudaenv.host.process import Deadline

ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
MAX_PAGE = 64 * 1024 * 1024  # decoded bytes of one page (PyTorch's whole torch listing is a few MB)
CHUNK = 65536


class FetchError(Exception):
    """A page that could not be read; the message is one line in words. ``answered``: the server did answer (an HTTP
    error status, an encoding cudaenv does not read, a page too large), so it can be reached."""

    def __init__(self, message: str, answered: bool = False):
        super().__init__(message)
        self.message = message  # a marked message (cudaenv.core.i18n.M): str(exc) is its English
        self.answered = answered


def check_url(url: str) -> Optional[str]:
    """Why ``url`` cannot be an index base (None when it can): ``http(s)://host[:port]/...`` only."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for "host:abc"
    except ValueError as exc:
        return M("%s is not a URL (%s)", url, exc)
    if parts.scheme not in ("http", "https"):
        return M("%s is not an http:// or https:// URL", url)
    if not parts.hostname:
        return M("%s has no host name", url)
    del port
    return None


def unreachable(url: str, seconds: float = 3.0) -> Optional[str]:
    """Why ``url``'s server cannot be reached at all (name resolution, refused, timed out), or None when it answers
    (any HTTP status counts as an answer): `cudaenv fix` asks before it runs pip, which would retry for minutes."""
    try:
        fetch_page(url, Deadline(seconds), limit=1024 * 1024)
    except FetchError as exc:
        return None if exc.answered else str(exc)
    return None


def _host_of(url: str) -> str:
    try:
        parts = urlsplit(url)
        return parts.netloc or url
    except ValueError:
        return url


def _words(url: str, exc: BaseException, deadline: "Deadline") -> str:
    """A requests/urllib3/socket exception as one line in the user's language."""
    import socket

    chain = []
    seen: Any = exc
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        nxt = getattr(seen, "reason", None)
        if not isinstance(nxt, BaseException):
            nxt = seen.args[0] if seen.args and isinstance(seen.args[0], BaseException) else None
        seen = nxt if nxt is not None else (seen.__cause__ or seen.__context__)
    names = " ".join(type(e).__name__ for e in chain)
    text = " ".join(str(e) for e in chain)
    host = _host_of(url)
    if "NameResolution" in names or isinstance(exc, socket.gaierror) or any(isinstance(e, socket.gaierror) for e in chain) \
            or "Name or service not known" in text or "nodename nor servname" in text or "Temporary failure in name resolution" in text:
        return M("name resolution failed for %s", _hostname(url) or host)
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "Connection refused" in text:
        return M("%s refused the connection", host)
    if "SSL" in names or "certificate" in text.lower():
        return M("the TLS connection to %s failed (certificate or TLS problem)", host)
    if "Timeout" in names or any(isinstance(e, socket.timeout) for e in chain) or "timed out" in text:
        return M("%s timed out after %s", url, seconds_text(deadline.seconds))
    if any(isinstance(e, (ConnectionResetError, BrokenPipeError)) for e in chain) or "reset" in text.lower():
        return M("%s closed the connection mid-way", host)
    if "ProtocolError" in names or "IncompleteRead" in names or "ChunkedEncoding" in names:
        return M("%s broke off the page mid-way", host)
    return M("%s could not be read (%s)", url, type(exc).__name__)


def _hostname(url: str) -> Optional[str]:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


class _Inflater:
    """gzip/deflate decoded with a ceiling: never more than ``limit`` bytes out, members one after another."""

    def __init__(self, encoding: str, limit: int):
        import zlib

        self._zlib = zlib
        self.encoding = encoding
        self.limit = limit
        self.size = 0
        self._d = self._new()

    def _new(self):
        if self.encoding in ("gzip", "x-gzip"):
            return self._zlib.decompressobj(16 + self._zlib.MAX_WBITS)
        return self._zlib.decompressobj(32 + self._zlib.MAX_WBITS)  # deflate: zlib-wrapped (auto-detected)

    def feed(self, data: bytes) -> bytes:
        out = []
        while data:
            room = self.limit - self.size + 1
            if room <= 0:
                raise OverflowError
            piece = self._d.decompress(data, room)
            self.size += len(piece)
            out.append(piece)
            if self.size > self.limit:
                raise OverflowError
            if self._d.unconsumed_tail:
                data = self._d.unconsumed_tail
                continue
            if self._d.eof and self._d.unused_data:
                data = self._d.unused_data  # the next gzip member
                self._d = self._new()
                continue
            data = b""
        return b"".join(out)


def fetch_page(url: str, deadline: Deadline, session: Any = None, accept: str = ACCEPT, limit: int = MAX_PAGE) -> Tuple[str, str]:
    """GET one index page; (text, content type). Raises :class:`FetchError` (one line) on any failure."""
    import requests

    if deadline.expired:
        raise FetchError(M("%s not read: the %s the refresh may take had passed", url, seconds_text(deadline.seconds)))
    wait = max(0.05, deadline.remaining())
    getter = session.get if session is not None else requests.get
    headers = {"Accept": accept, "Accept-Encoding": "gzip, deflate"}
    try:
        resp = getter(url, headers=headers, timeout=(wait, wait), stream=True)
    except requests.exceptions.RequestException as exc:
        raise FetchError(_words(url, exc, deadline)) from None
    except Exception as exc:  # noqa: BLE001 - urllib3/socket errors requests did not wrap: a page that was not read
        raise FetchError(_words(url, exc, deadline)) from None
    try:
        if resp.status_code != 200:
            raise FetchError(M("%s answered HTTP %d", url, resp.status_code), answered=True)
        encoding = (resp.headers.get("Content-Encoding") or "identity").strip().lower()
        inflater = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            inflater = _Inflater(encoding, limit)
        elif encoding not in ("identity", ""):
            raise FetchError(M("%s answered in the %s encoding, which cudaenv does not read", url, encoding[:20]), answered=True)
        raw = resp.raw
        read1 = getattr(raw, "read1", None)  # urllib3 >= 2.3: whatever one recv brings
        body, size = [], 0
        while True:
            if deadline.expired:
                raise FetchError(M("%s took longer than %s in all; abandoned", url, seconds_text(deadline.seconds)))
            _shorten_wait(raw, deadline)
            chunk = read1(CHUNK, decode_content=False) if read1 else raw.read(CHUNK, decode_content=False)
            if not chunk:
                break
            if inflater is not None:
                try:
                    chunk = inflater.feed(chunk)
                except OverflowError:
                    raise FetchError(M("%s inflates to more than %d MiB; abandoned", url, limit // (1024 * 1024)), answered=True) from None
                except Exception:  # noqa: BLE001 - zlib.error: a broken gzip stream
                    raise FetchError(M("%s sent a broken %s stream", url, encoding)) from None
            size += len(chunk)
            if size > limit:
                raise FetchError(M("%s is larger than %d MiB; abandoned", url, limit // (1024 * 1024)), answered=True)
            body.append(chunk)
    except FetchError:
        raise
    except Exception as exc:  # noqa: BLE001 - urllib3's ReadTimeoutError/ProtocolError and socket errors mid-body
        if deadline.expired:
            raise FetchError(M("%s took longer than %s in all; abandoned", url, seconds_text(deadline.seconds))) from None
        raise FetchError(_words(url, exc, deadline)) from None
    finally:
        resp.close()
    ctype = resp.headers.get("Content-Type", "") or ""
    return b"".join(body).decode(_charset(resp.headers), "replace"), ctype


def _charset(headers: Any) -> str:
    import codecs

    from requests.utils import get_encoding_from_headers

    name = get_encoding_from_headers(headers) or "utf-8"
    try:
        codecs.lookup(name)
    except LookupError:
        return "utf-8"
    return name


def _shorten_wait(raw: Any, deadline: Deadline) -> None:
    """Make the socket's next read wait no longer than what is left of the deadline (best effort)."""
    try:
        fp = getattr(raw, "_fp", None)
        sock = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
        if sock is not None:
            sock.settimeout(max(0.05, deadline.remaining()))
    except (AttributeError, OSError, ValueError):
        pass


def redirect_of(url: str, deadline: Deadline) -> Optional[str]:
    """Where the server sends a GET of ``url`` instead (a 3xx answer's Location, made absolute), asked with HEAD and
    no redirect followed; None when it serves the file itself or cannot be asked within the deadline."""
    import requests
    from urllib.parse import urljoin

    if deadline.expired:
        return None
    wait = max(0.05, deadline.remaining())
    try:
        resp = requests.head(url, allow_redirects=False, timeout=(wait, wait))
    except Exception:  # noqa: BLE001 - any failure: no redirect seen
        return None
    location = resp.headers.get("Location") if 300 <= resp.status_code < 400 else None
    resp.close()
    return urljoin(url, location) if location else None
