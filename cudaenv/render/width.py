"""Display width: the columns a text takes on a terminal, and Chinese line breaking, for :mod:`cudaenv.render.text`.

A character that ``unicodedata.east_asian_width`` calls wide (W) or fullwidth (F) takes two columns, every other one
takes one. The stdlib's table rather than ``wcwidth`` (which questionary brings in through prompt_toolkit): no
dependency of cudaenv's own, and the same answer for the CJK ideographs and punctuation cudaenv writes; ``wcwidth``'s
zero-width combining marks are counted one column here, so that a text without a wide character measures exactly its
``len`` and English output is unchanged. ``unicodedata`` is imported only for a text that is not ASCII.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List


def _wide(c: str) -> bool:
    import unicodedata

    return unicodedata.east_asian_width(c) in "WF"


def width_of(text: str) -> int:
    """The columns ``text`` takes on a terminal: one per character, two for an East Asian wide or fullwidth one
    (``unicodedata.east_asian_width``: the stdlib's table, so no dependency; a combining mark still counts one, so
    text without a wide character measures its ``len`` exactly)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) >= 0x1100 and _wide(c))


def has_wide(text: str) -> bool:
    """Whether ``text`` holds a character that takes two columns."""
    return not text.isascii() and any(ord(c) >= 0x1100 and _wide(c) for c in text)


def pad(text: str, columns: int) -> str:
    """``text`` followed by blanks up to ``columns`` display columns (``"%-*s"`` that counts a wide character as two)."""
    return text + " " * max(0, columns - width_of(text))


# Chinese line breaking (GB/T 15834 and the W3C's clreq): no line starts with a closing mark, none ends with an
# opening one.
_NO_START = frozenset("，。、；：？！）》」』】〕〉”’…—～%·")
_NO_END = frozenset("（《「『【〔〈“‘")


def wide_chunks(text: str) -> List[str]:
    """The pieces of ``text`` a line may break between: runs of blanks, each wide character (with the closing marks
    after it and the opening marks before it), and each run of other characters (a word, a path, a number)."""
    chunks: List[str] = []
    cur = ""
    kind = ""  # "space", "word", "wide"
    opening = ""
    for c in text:
        k = "space" if c == " " else "wide" if ord(c) >= 0x1100 and _wide(c) else "word"
        if c in _NO_START and (opening or cur or chunks):
            if opening:
                opening += c
            else:
                cur += c
            continue
        if c in _NO_END:
            if cur:
                chunks.append(cur)
            cur, kind = "", ""
            opening += c
            continue
        if k == kind and k != "wide" and not opening:
            cur += c
            continue
        if cur:
            chunks.append(cur)
        cur, kind = opening + c, k
        opening = ""
    if cur or opening:
        chunks.append(cur + opening)
    return chunks


def fit_wide(text: str, room: int) -> str:
    """:func:`cudaenv.render.text.fit` for a text with wide characters: at most ``room`` columns, the middle elided."""
    if width_of(text) <= room:
        return text
    keep = max(room - 3, 0)
    head, tail = "", ""
    for c in text:
        if width_of(head + c) > keep - keep // 2:
            break
        head += c
    for c in reversed(text):
        if width_of(tail + c) > keep // 2:
            break
        tail = c + tail
    return head + "..." + tail if room > 3 else head
