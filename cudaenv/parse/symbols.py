"""C++ symbol names as the Itanium ABI mangles them (what g++ and clang write into a library's symbol table), read
just enough for the extension check: whether a name belongs to torch's namespaces (``c10``, ``at``, ``torch``,
``caffe2``), which C++ standard library ABI its ``std::string`` says (``_GLIBCXX_USE_CXX11_ABI``: ``__cxx11`` in the
name is the new ABI, the ``Ss`` abbreviation the old one), and a readable form of a plain nested name
(``_ZN3c106detail14torchCheckFailEPKcS2_jRKSs`` -> ``c10::detail::torchCheckFail(...)``). Pure, bounded, never raising.
"""

from __future__ import annotations

import re
from functools import lru_cache
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor's start-up reads few of these

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Iterable, Optional, Sequence, Tuple

MAX_NAME = 4096  # characters of a symbol name read, at most
_HEAD = LazyPattern(r"_Z(?:T[VIST])?(?:N[rVKRO]*)?")
_OLD_STRING = LazyPattern(r"(?:RK|PK|R|P|I|S\d*_|E)Ss")


DIGITS = "0123456789"


def _source_name(text: str, at: int) -> Optional[Tuple[str, int]]:
    """The ``<length><identifier>`` at ``at`` (``6detail``) and where it ends; None when there is none."""
    end = at
    while end < len(text) and end - at < 5 and text[end] in DIGITS:
        end += 1
    if end == at:
        return None
    size = int(text[at:end])
    if size < 1 or end + size > len(text):
        return None
    return text[end:end + size], end + size


@lru_cache(maxsize=16)
def _namespace_pattern(namespaces: Tuple[str, ...]):
    """``_Z`` + the optional special/nested prefix + one of ``namespaces`` as ``<length><name>`` (self-delimiting, so
    ``2at`` never matches ``23atom...``)."""
    names = "|".join("%d%s" % (len(n), re.escape(n)) for n in namespaces if n)
    return re.compile(_HEAD.pattern + "(?:%s)" % (names or "(?!)"))


@lru_cache(maxsize=16)
def namespace_selector(namespaces: Tuple[str, ...]):
    """:func:`in_namespaces` as a bytes pattern, for :func:`cudaenv.parse.elf_symbols.parse_elf_symbols`'s ``select``: it
    matches a symbol table's bytes at a name's start exactly where ``in_namespaces`` is true of the decoded name (the
    pattern is ASCII and cannot cross the name's NUL)."""
    return re.compile(_namespace_pattern(tuple(namespaces)).pattern.encode("ascii"))


def in_namespaces(name: str, namespaces: Sequence[str]) -> bool:
    """The mangled ``name`` lies in one of ``namespaces`` (its first source name is one of them)."""
    return isinstance(name, str) and _namespace_pattern(tuple(namespaces)).match(name) is not None


def string_abi(names: Iterable[str]) -> Optional[bool]:
    """True when a name spells ``std::string`` in the new C++11 ABI (``__cxx11``), False when one spells it in the old
    one (``Ss``) and none in the new, None when no name says."""
    if isinstance(names, (list, tuple)) and names:  # one search over the names joined, where that says the same
        try:
            text = "\0".join(names)
        except TypeError:  # a name that is no string: the loop below skips it
            text = None
        if text is not None and text.count("\0") == len(names) - 1 and max(map(len, names)) <= MAX_NAME:
            return _string_abi_joined(text)
    old = False
    for name in names:
        text = name[:MAX_NAME] if isinstance(name, str) else ""
        if "__cxx11" in text or "B5cxx11" in text:
            return True
        if not old and text.startswith("_Z") and _OLD_STRING.search(text):
            old = True
    return False if old else None


def _string_abi_joined(text: str) -> Optional[bool]:
    """:func:`string_abi` of the names joined by NUL (none holding a NUL, none longer than MAX_NAME): one search of
    the whole text instead of one per name; an old-ABI match counts only inside a name that starts with ``_Z``."""
    if "__cxx11" in text or "B5cxx11" in text:
        return True
    if "Ss" not in text:  # the old spelling's two letters are in every match: no search where they are absent
        return None
    for m in _OLD_STRING.finditer(text):
        start = text.rfind("\0", 0, m.start()) + 1
        if text.startswith("_Z", start):
            return False
    return None


def readable(name: str) -> str:
    """``_ZN2at6native5zerosEv`` -> ``at::native::zeros(...)`` for a plain nested or namespace-level function name;
    other names (vtables, templates, operators) as they are."""
    if not isinstance(name, str) or not name.startswith(("_ZN", "_ZNK")):
        return name
    text = name[:MAX_NAME]
    at = 4 if text.startswith("_ZNK") else 3
    parts = []
    while at < len(text) and text[at] in DIGITS:
        found = _source_name(text, at)
        if found is None:
            return name
        parts.append(found[0])
        at = found[1]
    if len(parts) < 2 or at >= len(text) or text[at] != "E":
        return name
    return "::".join(parts) + ("(...)" if at + 1 < len(text) else "")
