"""Text that came from outside (an image's files, a tool's output, a paste, a folder name) made safe to print,
and the one way a duration is written for people.

:func:`printable` is the one escaping function: every renderer passes strings it did not write itself through
it, so an escape sequence in an ``os-release`` ``PRETTY_NAME`` or a newline in a folder name is shown, never
obeyed by the terminal. :func:`seconds_text` writes every duration a person reads (a timeout in a probe's note, in
``CommandResult.describe``, in verify's errors, in the index client's and ``fix``'s lines): it lives here, not in
``render/``, because notes made below the renderers (host, probes, index) need it too. Stdlib only and cheap to
import: it sits on the ``cudaenv use`` path.
"""

from __future__ import annotations

# Characters a terminal acts on or that reorder text: C0/C1 controls, DEL, and the bidirectional overrides.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def _escape(c: str) -> str:
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, carried by surrogateescape
        return "\\x%02x" % (code - 0xDC00)
    if c == "\n":
        return "\\n"
    if c == "\t":
        return "\\t"
    if c == "\r":
        return "\\r"
    if code < 0x100:
        return "\\x%02x" % code
    if code < 0x10000:
        return "\\u%04x" % code
    return "\\U%08x" % code


def printable(text: object) -> str:
    """``text`` with every control character, bidi override and undecodable byte shown escaped (``\\x1b``)."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and not _BIDI.intersection(s):
        return s
    return "".join(c if (c.isprintable() or c == " ") and c not in _BIDI else _escape(c) for c in s)


# The characters shlex.quote leaves unquoted (its `[^\w@%+=:,./-]` with re.ASCII).
SHELL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def shell_quote(word: str) -> str:
    """``word`` as one POSIX shell word, exactly as :func:`shlex.quote` writes it (as it is when every character is
    safe, else single-quoted, a quote inside written ``'"'"'``), without shlex's import of re: `checkpoint
    inspect` names its file in the commands it prints, and re costs more than half its start-up budget."""
    if word and SHELL_SAFE.issuperset(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def seconds_text(value: float, unit: str = " s") -> str:
    """A duration as a person reads it: ``2 s``, ``0.5 s``, ``1.5 s``, ``12 s`` (for 12.3 s), never ``2.01819 s``:
    whole seconds from 10 s on, else at most two significant digits (``0.25 s``); at least ``0.01 s`` for a positive
    value, ``0 s`` for none. ``unit=""`` gives the figure alone, for a sentence of ``data/`` that writes the unit
    itself (``"{seconds} s"``)."""
    if value != value or value <= 0:  # NaN too
        return "0" + unit
    if value >= 10 or value == int(value):
        return ("%d" % round(value) if value < 1e9 else "%.3g" % value) + unit
    if value < 0.01:
        return "0.01" + unit
    return "%.2g" % value + unit
