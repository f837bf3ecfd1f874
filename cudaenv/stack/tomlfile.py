"""The stack file's TOML: a tiny writer and the reader of what it writes (pure).

The writer knows the few shapes a stack file holds: top-level keys, then tables (``[require]``), each with string,
integer, boolean and array-of-string values, in the order given, strings as TOML basic strings (``"`` and ``\\``
escaped, control characters as ``\\uXXXX``). The reader is :mod:`tomllib` where Python has it (3.11+) and
:func:`parse_toml` otherwise: that subset (comments, blank lines, ``[table]`` headers, ``key = value`` with bare
keys, basic and literal strings, integers, booleans, one-line arrays of those). A file outside the subset is a
:class:`TomlError` with the line, never a wrong value; tests check the two readers agree on every file the writer
makes.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Sequence, Tuple

from cudaenv.core.i18n import M

_BARE = re.compile(r"\A[A-Za-z0-9_-]+\Z")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_UNESCAPE = {'"': '"', "\\": "\\", "b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}


class TomlError(ValueError):
    """Not TOML this reader reads (the message names the line)."""


def _string(text: str) -> str:
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append("\\u%04X" % ord(c))
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return "%d" % value
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(M("a stack file holds strings, integers, booleans and arrays, not %s", type(value).__name__))


def _key(key: str) -> str:
    return key if _BARE.match(key) else _string(key)


def toml_text(top: Sequence[Tuple[str, Any]], tables: Sequence[Tuple[str, Sequence[Tuple[str, Any]]]],
              header: Sequence[str] = ()) -> str:
    """The TOML of ``top`` (key, value) pairs then each ``(table name, its pairs)``; ``header``: comment lines first.
    A None value is left out (TOML has no null)."""
    lines = ["# " + h if h else "#" for h in header]
    lines += ["%s = %s" % (_key(k), _value(v)) for k, v in top if v is not None]
    for name, pairs in tables:
        lines += ["", "[%s]" % _key(name)]
        lines += ["%s = %s" % (_key(k), _value(v)) for k, v in pairs if v is not None]
    return "\n".join(lines) + "\n"


def loads(text: str) -> Dict[str, Any]:
    """The TOML document ``text`` as a dict: :mod:`tomllib` where there is one, else :func:`parse_toml`."""
    try:
        import tomllib
    except ImportError:  # Python 3.9 and 3.10
        return parse_toml(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(str(exc)) from None


def parse_toml(text: str) -> Dict[str, Any]:
    """The subset of TOML the stack file uses (module docstring), read in one pass: each line by positions, never
    re-sliced per value (linear in the text)."""
    doc: Dict[str, Any] = {}
    table = doc
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            name, at = _read_key(line, 1, number)
            at = _skip(line, at)
            if not line.startswith("]", at) or not _comment_only(line, at + 1):
                raise TomlError(M("line %d: a table header is [name]", number))
            if name in doc:
                raise TomlError(M("line %d: table [%s] defined twice", number, name))
            table = doc[name] = {}
            continue
        key, at = _read_key(line, 0, number)
        at = _skip(line, at)
        if not line.startswith("=", at):
            raise TomlError(M("line %d: expected key = value", number))
        value, at = _read_value(line, _skip(line, at + 1), number)
        if not _comment_only(line, at):
            raise TomlError(M("line %d: text after the value", number))
        if key in table:
            raise TomlError(M("line %d: key %s defined twice", number, key))
        table[key] = value
    return doc


_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BOOL = re.compile(r"(true|false)(?![A-Za-z0-9_-])")
_INT = re.compile(r"[+-]?(0|[1-9](_?[0-9])*)(?![0-9A-Za-z_.:-])")
_SPACE = re.compile(r"[ \t]*")
_PLAIN = re.compile(r'[^"\\\x00-\x08\x0a-\x1f\x7f]*')  # the run of a basic string that needs no care


def _skip(line: str, at: int) -> int:
    return _SPACE.match(line, at).end()


def _comment_only(line: str, at: int) -> bool:
    at = _skip(line, at)
    return at >= len(line) or line[at] == "#"


def _read_key(line: str, at: int, number: int) -> Tuple[str, int]:
    at = _skip(line, at)
    if line.startswith('"', at):
        return _read_basic(line, at, number)
    if line.startswith("'", at):
        return _read_literal(line, at, number)
    m = _KEY.match(line, at)
    if not m:
        raise TomlError(M("line %d: expected a key", number))
    return m.group(0), m.end()


def _read_basic(line: str, at: int, number: int) -> Tuple[str, int]:
    out: List[str] = []
    i = at + 1
    while i < len(line):
        m = _PLAIN.match(line, i)
        out.append(m.group(0))
        i = m.end()
        if i >= len(line):
            break
        c = line[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            nxt = line[i + 1:i + 2]
            if nxt in _UNESCAPE:
                out.append(_UNESCAPE[nxt])
                i += 2
                continue
            if nxt in ("u", "U"):
                size = 4 if nxt == "u" else 8
                digits = line[i + 2:i + 2 + size]
                if len(digits) != size or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    raise TomlError(M("line %d: a bad \\%s escape", number, nxt))
                code = int(digits, 16)
                if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                    raise TomlError(M("line %d: \\%s%s is no character", number, nxt, digits))
                out.append(chr(code))
                i += 2 + size
                continue
            raise TomlError(M("line %d: a bad escape", number))
        raise TomlError(M("line %d: a control character in a string", number))
    raise TomlError(M("line %d: a string that does not end", number))


def _read_literal(line: str, at: int, number: int) -> Tuple[str, int]:
    end = line.find("'", at + 1)
    if end < 0:
        raise TomlError(M("line %d: a string that does not end", number))
    body = line[at + 1:end]
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in body):
        raise TomlError(M("line %d: a control character in a string", number))
    return body, end + 1


def _read_value(line: str, at: int, number: int) -> Tuple[Any, int]:
    if line.startswith('"', at):
        if line.startswith('"""', at):
            raise TomlError(M("line %d: multi-line strings are not read here", number))
        return _read_basic(line, at, number)
    if line.startswith("'", at):
        if line.startswith("'''", at):
            raise TomlError(M("line %d: multi-line strings are not read here", number))
        return _read_literal(line, at, number)
    if line.startswith("[", at):
        items: List[Any] = []
        at = _skip(line, at + 1)
        while True:
            if line.startswith("]", at):
                return items, at + 1
            if line.startswith("[", at):
                raise TomlError(M("line %d: nested arrays are not read here", number))
            value, at = _read_value(line, at, number)
            items.append(value)
            at = _skip(line, at)
            if line.startswith(",", at):
                at = _skip(line, at + 1)
            elif not line.startswith("]", at):
                raise TomlError(M("line %d: an array is [a, b] on one line", number))
    m = _BOOL.match(line, at)
    if m:
        return m.group(1) == "true", m.end()
    m = _INT.match(line, at)
    if m:
        return int(m.group(0).replace("_", "")), m.end()
    raise TomlError(M("line %d: a value this reader does not read (strings, integers, booleans, arrays)", number))
