"""Shared reading of tool output, captured or pasted: text or bytes in, bounded lines out.

Pasted text comes quoted (``> `` or ``>>`` prefixes from mail and forums), indented, fenced in markdown
(```` ``` ````), with ``\\r\\n`` endings or undecodable bytes. :func:`lines` undoes all of that (the
decorations through :mod:`cudaenv.parse.decorations`, the one home explain's normalizer uses too) so the parsers
of ``parse/`` read a paste as they read the tool's own output, and bounds the work: at most ``MAX_LINES``
lines of at most ``MAX_LINE`` characters each (no real nvidia-smi or /proc line is longer than 200), so a
parser that is linear per line is linear in its input, whatever it is given.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Union

    Text = Union[str, bytes, None]  # what a parser reads: a tool's output as text or bytes, or nothing

MAX_LINES = 20000
MAX_LINE = 1000
MAX_TEXT = 8 * 1024 * 1024  # characters (or bytes) looked at: no tool output this reads comes near it
EXCERPT = 200  # characters of a foreign text that go into a note


def as_text(data: Text) -> str:
    """``data`` as text, at most ``MAX_TEXT`` of it: bytes are decoded as UTF-8 with undecodable bytes replaced;
    None is ``""``."""
    if data is None:
        return ""
    if isinstance(data, (bytes, bytearray)):
        return bytes(data[:MAX_TEXT]).decode("utf-8", "replace")
    return (data if isinstance(data, str) else str(data))[:MAX_TEXT]


def lines(data: Text, limit: int = MAX_LINES) -> List[str]:
    """The lines of ``data`` without a paste's quote marks and code fences (dropped), as
    :func:`cudaenv.parse.decorations.undecorate` reads them, stripped, each cut to ``MAX_LINE`` characters. A paste's
    other decorations (colours, full-width punctuation) are taken away before, by :func:`cudaenv.pasted.read_facts`."""
    from cudaenv.parse.decorations import undecorate

    out: List[str] = []
    for raw in undecorate("\n".join(as_text(data).splitlines()), keep_lines=False, marks_only=True).splitlines():
        if len(out) >= limit:
            break
        out.append(raw[: MAX_LINE * 2].strip()[:MAX_LINE])
    return out


def is_uint(text: str, max_digits: int = 18) -> bool:
    """True for 1..max_digits ASCII digits (``str.isdigit`` is also true for ``²`` and ``٣``, which ``int`` refuses)."""
    return 0 < len(text) <= max_digits and all("0" <= c <= "9" for c in text)


def excerpt(text: Optional[str], limit: int = EXCERPT) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters (with ``...``): what a note may quote."""
    first = ""
    for raw in as_text(text)[: limit * 50].splitlines():
        if raw.strip():
            first = raw.strip()
            break
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."


def __getattr__(name: str):
    """``Text`` (``Union[str, bytes, None]``) for a module that imports it at run time: typing is imported then, not
    by every parser that names it only in annotations."""
    if name == "Text":
        from typing import Union

        return Union[str, bytes, None]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
