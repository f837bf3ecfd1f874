"""Python package versions by PEP 440, without packaging: ``packaging.version`` is a 1,200-line module that costs about
6 ms of a fresh interpreter, which `doctor --quick` paid to sort the facts tables' torch versions (issue 35).

The grammar is PEP 440's (its Appendix B: the regular expression of every version it permits, with the alternative
spellings and separators it normalizes); the order is its "Summary of permitted suffixes and relative ordering":
within a release, ``.devN`` < ``aN`` < ``bN`` < ``rcN`` < the release < ``.postN``, a dev release of a pre- or
post-release just before it, a local label after the public version it labels (numbers above words). Trailing zeros of
the release do not count (``2.6 == 2.6.0``). The attributes are ``packaging.version.Version``'s, which
tests/core/test_pep440.py compares this with on generated versions.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional, Tuple

# PEP 440, Appendix B (re.VERBOSE | re.IGNORECASE), matched whole with surrounding whitespace allowed
_PATTERN = r"""
    ^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<numbers>[0-9]+(?:\.[0-9]+)*)
    (?P<pre>[-_\.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_\.]?(?P<pre_n>[0-9]+)?)?
    (?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_\.]?(?P<post_l>post|rev|r)[-_\.]?(?P<post_n2>[0-9]+)?))?
    (?P<dev>[-_\.]?(?P<dev_l>dev)[-_\.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_\.][a-z0-9]+)*))?
    \s*$
"""
_COMPILED = []  # the pattern, compiled on the first version read (re stays off `cudaenv use`)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc", "rc": "rc"}


def _match(text: str):
    if not _COMPILED:
        import re

        _COMPILED.append(re.compile(_PATTERN, re.VERBOSE | re.IGNORECASE))
    return _COMPILED[0].match(text)


class InvalidVersion(ValueError):
    """Text that is no PEP 440 version."""


class Version:
    """A PEP 440 version: ``epoch``, ``release``, ``pre`` (``("rc", 1)``), ``post``, ``dev``, ``local``; ordered, equal
    and hashed by PEP 440 (``Version("2.6") == Version("2.6.0")``). :class:`InvalidVersion` for other text."""

    __slots__ = ("epoch", "release", "pre", "post", "dev", "_local", "_key")

    def __init__(self, text: str):
        parts = text.split(".")
        if all(part.isascii() and part.isdigit() for part in parts):  # a plain release ("2.13.0"), what the pattern
            self.epoch, self.release = 0, tuple(int(part) for part in parts)  # reads so, without compiling it (the
            self.pre = self.post = self.dev = self._local = None  # facts tables' torch versions are all such)
        else:
            self._read(text)
        release = self.release
        while len(release) > 1 and release[-1] == 0:
            release = release[:-1]
        if release == (0,):
            release = ()
        if self.pre is None and self.post is None and self.dev is not None:
            pre_key: tuple = (0,)  # 1.0.dev1 < 1.0a1
        else:
            pre_key = (2,) if self.pre is None else (1,) + self.pre
        self._key = (self.epoch, release, pre_key, (0,) if self.post is None else (1, self.post),
                     (2,) if self.dev is None else (1, self.dev),
                     (0,) if self._local is None else (1, tuple((1, p, "") if isinstance(p, int) else (0, 0, p) for p in self._local)))

    def _read(self, text: str) -> None:
        """The fields of any other version, by PEP 440's pattern."""
        m = _match(text)
        if m is None:
            raise InvalidVersion("not a PEP 440 version: %r" % (text,))
        self.epoch = int(m.group("epoch") or 0)
        self.release: Tuple[int, ...] = tuple(int(part) for part in m.group("numbers").split("."))
        pre = m.group("pre_l")
        self.pre: Optional[Tuple[str, int]] = (_PRE[pre.lower()], int(m.group("pre_n") or 0)) if pre else None
        if m.group("post_n1") is not None:
            self.post: Optional[int] = int(m.group("post_n1"))
        else:
            self.post = int(m.group("post_n2") or 0) if m.group("post_l") else None
        self.dev: Optional[int] = int(m.group("dev_n") or 0) if m.group("dev_l") else None
        local = m.group("local")
        self._local = tuple(int(p) if p.isdigit() else p.lower()
                            for p in local.replace("-", ".").replace("_", ".").split(".")) if local else None

    @property
    def local(self) -> Optional[str]:
        return ".".join(str(p) for p in self._local) if self._local is not None else None

    @property
    def base_version(self) -> str:
        return ("%d!" % self.epoch if self.epoch else "") + ".".join(str(p) for p in self.release)

    @property
    def public(self) -> str:
        text = self.base_version
        if self.pre is not None:
            text += "%s%d" % self.pre
        if self.post is not None:
            text += ".post%d" % self.post
        if self.dev is not None:
            text += ".dev%d" % self.dev
        return text

    def __str__(self) -> str:
        local = self.local
        return self.public + ("+" + local if local is not None else "")

    def __repr__(self) -> str:
        return "<Version(%r)>" % str(self)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return self._key == other._key if isinstance(other, Version) else NotImplemented

    def __ne__(self, other: object) -> bool:
        return self._key != other._key if isinstance(other, Version) else NotImplemented

    def __lt__(self, other: "Version") -> bool:
        return self._key < other._key if isinstance(other, Version) else NotImplemented

    def __le__(self, other: "Version") -> bool:
        return self._key <= other._key if isinstance(other, Version) else NotImplemented

    def __gt__(self, other: "Version") -> bool:
        return self._key > other._key if isinstance(other, Version) else NotImplemented

    def __ge__(self, other: "Version") -> bool:
        return self._key >= other._key if isinstance(other, Version) else NotImplemented
