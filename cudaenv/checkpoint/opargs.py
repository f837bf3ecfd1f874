"""The arguments of pickle opcodes as pickle's C unpickler reads them (for :mod:`cudaenv.checkpoint.careful`): the
length-prefixed strings and bytes, the text arguments of protocol 0 (INT, LONG, PUT, GET, STRING)."""

from __future__ import annotations

from cudaenv.checkpoint.nodes import ShortBytes

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Tuple


# Length-prefixed strings and bytes: opcode -> (bytes of the length field, its struct format (None: one byte), kind,
# codec). One table, so that every such opcode skips its length field and reads its kind the same way.
COUNTED = {
    0x58: (4, "<I", "str", "utf-8"),  # X BINUNICODE
    0x8C: (1, None, "str", "utf-8"),  # SHORT_BINUNICODE
    0x8D: (8, "<Q", "str", "utf-8"),  # BINUNICODE8
    0x55: (1, None, "short", "bytes"),  # U SHORT_BINSTRING
    0x54: (4, "<i", "short", "bytes"),  # T BINSTRING
    0x43: (1, None, "bytes", "bytes"),  # C SHORT_BINBYTES
    0x42: (4, "<I", "bytes", "bytes"),  # B BINBYTES
    0x8E: (8, "<Q", "bytes", "bytes"),  # BINBYTES8
    0x96: (8, "<Q", "bytes", "bytes"),  # BYTEARRAY8
}

_INTS = {0x4B: (1, "<B"), 0x4D: (2, "<H"), 0x4A: (4, "<i")}  # BININT1, BININT2, BININT: width, struct format
_CONSTANTS = {0x29: (), 0x89: False, 0x88: True, 0x4E: None}  # EMPTY_TUPLE, NEWFALSE, NEWTRUE, NONE


def _decode_line_str(raw: bytes) -> Any:
    """The argument of protocol-0 ``STRING`` (a Python string literal), kept as bytes, never ``eval``-ed."""
    if len(raw) >= 2 and raw[:1] == raw[-1:] and raw[:1] in (b"'", b'"'):
        raw = raw[1:-1]
    try:
        import codecs

        return ShortBytes(codecs.escape_decode(raw)[0])
    except Exception:  # noqa: BLE001 - a malformed literal is just bytes
        return ShortBytes(raw)


UNSURE = "is one cudaenv cannot be sure how pickle reads"
_MAX_DIGITS = 4300  # CPython's default int digit limit (sys.int_info.default_max_str_digits), settable per process


def c_int(raw: bytes, base: int, strtol: bool = False) -> Tuple[Any, str]:
    """The integer pickle's C unpickler reads from a text argument (INT and LONG: ``strtol`` then
    ``PyLong_FromString`` with base 0; PUT and GET: ``PyLong_FromString`` with base 10), as ``(value, "")``; ``(None,
    why)`` when pickle raises there, or ``(None, UNSURE)`` where it depends on the interpreter (the digit limit, C's
    octal ``010``). The line is a C string: it ends at a NUL byte."""
    text = raw.split(b"\0", 1)[0]
    if strtol and not text and raw:  # INT: strtol of an empty C string ends at its NUL, which pickle accepts: 0
        return 0, ""
    try:
        return int(text, base), ""
    except ValueError:
        pass
    body = text.strip().lstrip(b"+-").replace(b"_", b"")
    if body.isdigit() and len(body) > _MAX_DIGITS - 100:  # over the digit limit here, maybe not in the loading process
        return None, UNSURE
    if base == 0 and body.isdigit():  # '010': strtol reads it as octal 8, int(x, 0) refuses it
        return None, UNSURE
    return None, "is not a number: pickle stops there"
