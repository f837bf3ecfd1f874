"""A ``.po`` catalog read and compiled to the ``.mo`` that ``gettext`` loads: the build hook's msgfmt
(hatch_build.py compiles ``cudaenv/locale/*/LC_MESSAGES/cudaenv.po`` into the wheel), an editable checkout's (which
has no build step) and the parity test's reader. Stdlib only, no imports at module level.

What it reads: ``msgctxt``, ``msgid``, ``msgid_plural``, ``msgstr`` and ``msgstr[N]``, each followed by continued
``"..."`` lines, with C escapes; ``#`` comments (a ``#, fuzzy`` entry is read and marked, and never compiled, as GNU
msgfmt does); an entry whose ``msgstr`` is empty is untranslated and is not compiled either.
"""

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


class PoError(ValueError):
    """A line of the catalog that is not .po syntax (with its line number)."""


def _unquote(text, line_no):
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise PoError("line %d: a string in double quotes was expected" % line_no)
    out, i, body = [], 0, text[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise PoError("line %d: unknown escape \\%s" % (line_no, nxt))
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        if c == '"':
            raise PoError("line %d: an unescaped quote inside a string" % line_no)
        out.append(c)
        i += 1
    return "".join(out)


class PoEntry:
    """One message: ``msgid`` (and ``plural``, ``context``), its translations ``strs`` (one, or one per plural form),
    ``fuzzy``, and the line it starts on."""

    __slots__ = ("context", "msgid", "plural", "strs", "fuzzy", "line")

    def __init__(self, line):
        self.context, self.msgid, self.plural, self.strs, self.fuzzy, self.line = None, None, None, {}, False, line

    @property
    def translated(self):
        return not self.fuzzy and bool(self.strs) and all(self.strs.values())


def read_po(text):
    """The entries of a ``.po`` file's ``text``, in order (the header, ``msgid ""``, included)."""
    entries, cur, field, fuzzy = [], None, None, False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith("#,") and "fuzzy" in line[2:].replace(",", " ").split():
                fuzzy = True
            continue
        if line.startswith('"'):
            if cur is None or field is None:
                raise PoError("line %d: a continued string outside an entry" % n)
            _append(cur, field, _unquote(line, n))
            continue
        keyword, _, rest = line.partition(" ")
        if keyword in ("msgctxt", "msgid") and (cur is None or cur.strs or (keyword == "msgid" and cur.msgid is not None)):
            if cur is not None:
                entries.append(cur)
            cur, fuzzy_now = PoEntry(n), fuzzy
            cur.fuzzy, fuzzy = fuzzy_now, False
        if cur is None:
            raise PoError("line %d: %s before any msgid" % (n, keyword))
        if keyword == "msgctxt":
            field, cur.context = "context", _unquote(rest, n)
        elif keyword == "msgid":
            field, cur.msgid = "msgid", _unquote(rest, n)
        elif keyword == "msgid_plural":
            field, cur.plural = "plural", _unquote(rest, n)
        elif keyword == "msgstr":
            field, cur.strs[0] = 0, _unquote(rest, n)
        elif keyword.startswith("msgstr[") and keyword.endswith("]") and keyword[7:-1].isdigit():
            field = int(keyword[7:-1])
            cur.strs[field] = _unquote(rest, n)
        else:
            raise PoError("line %d: unknown keyword %r" % (n, keyword))
    if cur is not None:
        entries.append(cur)
    for e in entries:
        if e.msgid is None:
            raise PoError("line %d: an entry without msgid" % e.line)
    return entries


def _append(entry, field, text):
    if field == "context":
        entry.context += text
    elif field == "msgid":
        entry.msgid += text
    elif field == "plural":
        entry.plural += text
    else:
        entry.strs[field] += text


def compile_po(entries):
    """The ``.mo`` bytes (GNU format, little-endian, revision 0, no hash table) of the translated entries and the
    header: what ``gettext.GNUTranslations`` reads."""
    pairs = {}
    for e in entries:
        if not (e.translated or (e.msgid == "" and e.strs.get(0))):
            continue
        key = e.msgid if e.plural is None else e.msgid + "\0" + e.plural
        if e.context is not None:
            key = e.context + "\x04" + key
        value = e.strs[0] if e.plural is None else "\0".join(e.strs[i] for i in sorted(e.strs))
        pairs[key.encode("utf-8")] = value.encode("utf-8")
    keys = sorted(pairs)
    count = len(keys)
    ids_at = 28
    strs_at = ids_at + 8 * count
    data_at = strs_at + 8 * count
    ids, strs, blob = [], [], b""
    for k in keys:
        ids.append((len(k), data_at + len(blob)))
        blob += k + b"\0"
    for k in keys:
        v = pairs[k]
        strs.append((len(v), data_at + len(blob)))
        blob += v + b"\0"

    def u32(*values):
        return b"".join(v.to_bytes(4, "little") for v in values)

    head = u32(0x950412DE, 0, count, ids_at, strs_at, 0, data_at)
    return head + b"".join(u32(*p) for p in ids) + b"".join(u32(*p) for p in strs) + blob
