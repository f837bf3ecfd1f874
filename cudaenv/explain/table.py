"""The error table, ``data/error_patterns.json``, as compiled rows, and the filling of a row's sentences.

Each row: ``id``, ``patterns`` (Python ``re``, case-insensitive), ``title``, ``explanation``, optional
``details``, ``advice``, ``context``, ``source``, ``check`` (a function of ``cudaenv.explain.checks`` that reads
the text once the patterns matched: more values, or None when the row does not fit after all). Named groups of the patterns fill ``{name}`` placeholders; a
sentence with a placeholder that has no value is left out. A row's position in the table is its priority among
rows that match on the same footing (:mod:`cudaenv.explain.rank` says what footing means).

Each pattern also has a *needle*: the longest literal run at its top level, lower-cased. A text without the
needle cannot match, so the search is skipped (a 1 MB log is classified in about a tenth of the time). A pattern
without one, an alternation such as ``(?P<is_rocm>HIP error|No HIP GPUs are available|...)``, has a *prefilter*
instead: one literal per alternative, and a text with none of them is skipped the same way.

A message re-typed by hand loses blanks (``Attempting todeserialize object``): :func:`tolerant` compiles each
pattern so that a blank the pattern has between two letters may be missing in the text. Only a blank between two
plain literal letters is made optional (never one next to a class, an escape or a quantifier), so the pattern
stays as linear as it was: the letter after the optional blank is fixed, there is nothing to backtrack over. The
needle is then looked for with its blanks removed, in the text with its blanks removed (``squeezed``).
"""

import re
from functools import lru_cache
from typing import Any, Dict, Mapping, Optional, Tuple

from cudaenv.model.record import Record, factory
from cudaenv.core.version import cuda_from_int

TABLE = "error_patterns"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class Row(Record):
    id: str
    patterns: Tuple["re.Pattern[str]", ...]
    title: str
    explanation: str
    details: Tuple[str, ...]
    advice: Tuple[str, ...]
    source: Optional[str]
    doctor_finding: bool = False
    context: Tuple[str, ...] = ()
    check: Optional[str] = None  # a cudaenv.explain.checks check that decides whether the row fits the text
    needles: Tuple[str, ...] = ()  # per pattern: a lower-case literal every match contains, blanks aside ("" when none is known)
    prefilter: Tuple[Tuple[str, ...], ...] = ()  # per pattern: lower-case literals one of which every match contains
    literals: Tuple[str, ...] = ()  # every pattern's (blanks removed): a text with none of them matches no pattern ("" : unknown)
    windows: Tuple[Optional[Tuple[str, int]], ...] = ()  # per pattern: where in a long text it is tried (window())
    extra: Dict[str, Any] = factory(dict)


def _parsed(pattern: str):
    try:
        from re import _parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore
    try:
        return list(sre_parse.parse(pattern, re.IGNORECASE))
    except Exception:  # noqa: BLE001 - the pattern compiled already; no needle is always safe
        return None


def _longest_run(items, least: int = 4) -> str:
    best, run = "", []
    for op, av in list(items) + [(None, None)]:
        if str(op) == "LITERAL":
            run.append(chr(av))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    if len(best) >= least and best.isascii():
        return best.lower()
    caseless = not best.isascii() and best.lower() == best.upper() == best.casefold()  # CJK: no case to fold
    return best if len(best) >= 2 and caseless else ""


def needle(pattern: str, items=None) -> str:
    """The longest run of literal characters at the top level of ``pattern`` (so in every match), lower-cased; ""
    when it has none of 4+ ASCII characters. A text without it cannot match, so the search is skipped. ``items``:
    the pattern already parsed (:func:`_parsed`), when the caller has it."""
    items = _parsed(pattern) if items is None else items
    return _longest_run(items) if items is not None else ""


def _any_of(items, depth: int = 0, least: int = 4) -> Tuple[str, ...]:
    """Literals one of which every match of ``items`` contains: the longest top-level run, else those of a group
    every match goes through, else one per alternative of a branch (each alternative must have one). ``least``: the
    fewest ASCII characters a literal has."""
    run = _longest_run(items, least)
    if run:
        return (run,)
    if depth > 8:
        return ()
    best: Tuple[str, ...] = ()
    for op, av in items:
        name = str(op)
        if name == "SUBPATTERN":  # every match goes through each group: the one with the longest shortest literal
            found = _any_of(av[-1], depth + 1, least)
            if found and (not best or min(map(len, found)) > min(map(len, best))):
                best = found
        elif name == "BRANCH":
            out = []
            for alt in av[1]:
                found = _any_of(alt, depth + 1, least)
                if not found:
                    break
                out.extend(found)
            else:
                return tuple(dict.fromkeys(out))
    return best


def prefilter(pattern: str, items=None) -> Tuple[str, ...]:
    """Lower-case literals one of which every match of ``pattern`` contains (``(needle(pattern),)`` when it has a
    needle; one per alternative for ``(?P<is_rocm>HIP error|No HIP GPUs are available|...)``); () when none is
    known. A text with none of them cannot match, so the search is skipped. ``items``: as :func:`needle`'s."""
    items = _parsed(pattern) if items is None else items
    return _any_of(items) if items is not None else ()


def short_literals(pattern: str, items=None) -> Tuple[str, ...]:
    """As :func:`prefilter`, with literals of 2 and 3 ASCII characters too (``mps`` of ``\\bmps\\b``, one of
    ``pro``, ``max``, ... of ``\\bM[1-4] (?:Pro|Max)\\b``): a ranking rule without a longer literal is still looked for
    only in a text that holds one (a table row keeps :func:`prefilter`'s, which its other uses read)."""
    items = _parsed(pattern) if items is None else items
    return _any_of(items, least=2) if items is not None else ()


MAX_BEFORE = 200  # characters a match may have before its piece for the piece to say where to try the pattern


def window(pattern: str) -> Optional[Tuple[str, int]]:
    """``(piece, before)``: the longest part of the needle without a blank (lower-cased as the needle), which every
    match holds as it is even where :func:`tolerant` lets a blank go, and the most characters a match can have
    before it (the pattern's items before the needle, as ``re`` measures their width, plus the needle's own
    characters before the piece). A match starts at most ``before`` characters before a place of the piece, so a long
    text is searched only there (``rank._matches``). None when the pattern has no needle or a match can have more
    than :data:`MAX_BEFORE` characters before it."""
    try:
        from re import _parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore
    try:
        parsed = sre_parse.parse(pattern, re.IGNORECASE)
    except Exception:  # noqa: BLE001 - no window is always safe
        return None
    items = list(parsed)
    if not _longest_run(items):
        return None
    first, last, start = 0, 0, None  # the run _longest_run chose: the first of the longest
    for i, (op, _) in enumerate(items + [(None, None)]):
        if str(op) == "LITERAL":
            start = i if start is None else start
            continue
        if start is not None and i - start > last - first:
            first, last = start, i
        start = None
    run = "".join(chr(av) for _, av in items[first:last])
    words = run.split(" ")
    piece = max(words, key=len)  # the first of the longest
    if len(piece) < 3:
        return None
    before = sre_parse.SubPattern(parsed.state, items[:first]).getwidth()[1] + run.index(piece)
    if before > MAX_BEFORE:
        return None
    return (piece.lower() if run.isascii() else piece), before


def literals_of(pattern: str) -> Tuple[str, Tuple[str, ...], Tuple[str, ...], Optional[Tuple[str, int]]]:
    """``(needle(pattern), prefilter(pattern), short_literals(pattern), window(pattern))``, read from :mod:`cudaenv.explain.literals` (worked out when the
    tables were written) when it has ``pattern``, else worked out now: parsing every pattern of the tables was most of
    a short paste's time. The two answers are the same (tests/explain/test_explain_literals.py)."""
    from cudaenv.explain.literals import LITERALS

    found = LITERALS.get(pattern)
    if found is None:
        items = _parsed(pattern)
        found = (needle(pattern, items), prefilter(pattern, items), short_literals(pattern, items), window(pattern))
    return found


class Patterns:
    """A row's patterns, each compiled (:func:`tolerant`, case-insensitive) the first time it is asked for: a paste
    is first looked at through the literals (``Row.prefilter``, ``Row.needles``), so a short paste compiles only the
    few patterns whose literals it holds instead of the whole table's (about 280, most of explain's start-up)."""

    __slots__ = ("sources", "_compiled")

    def __init__(self, sources):
        self.sources = tuple(sources)
        self._compiled = [None] * len(self.sources)

    def __len__(self) -> int:
        return len(self.sources)

    def __getitem__(self, i: int) -> "re.Pattern[str]":
        found = self._compiled[i]
        if found is None:
            found = self._compiled[i] = re.compile(tolerant(self.sources[i]), re.IGNORECASE)
        return found

    def __iter__(self):
        return (self[i] for i in range(len(self.sources)))

    def __repr__(self) -> str:
        return "Patterns(%r)" % (self.sources,)


class Lazy:
    """One pattern (case-insensitive, as written) compiled the first time it is used, with the methods of
    ``re.Pattern`` that explain's ranking uses: the rules of ``data/explain_rules.json`` are looked at through their
    literals first (``rank.Rule.needle``), so a short paste compiles only the few whose literals it holds."""

    __slots__ = ("pattern", "_compiled")

    flags = re.IGNORECASE

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._compiled: Optional["re.Pattern[str]"] = None

    @property
    def compiled(self) -> "re.Pattern[str]":
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, re.IGNORECASE)
        return self._compiled

    @property
    def groupindex(self):
        return self.compiled.groupindex

    def match(self, text: str, *bounds):
        return self.compiled.match(text, *bounds)

    def search(self, text: str, *bounds):
        return self.compiled.search(text, *bounds)

    def finditer(self, text: str, *bounds):
        return self.compiled.finditer(text, *bounds)

    def __repr__(self) -> str:
        return "Lazy(%r)" % (self.pattern,)


_QUANTIFIER = "*+?{"


def tolerant(pattern: str) -> str:
    """``pattern`` where a literal blank between two literal letters (or digits) may be missing: ``to deserialize``
    becomes ``to ?deserialize``. A blank inside a class, after an escape, before a quantified letter or next to
    anything that is not a plain letter stays as it is."""
    out = []
    i, n = 0, len(pattern)
    in_class = False
    prev_plain = False  # the token before is one plain literal letter or digit, outside a class
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            prev_plain = False
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            prev_plain = False
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            if pattern[i:i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i:i + 1] == "]":  # a "]" first in a class is a literal
                out.append("]")
                i += 1
            prev_plain = False
            continue
        if ch == " " and prev_plain and i + 1 < n and pattern[i + 1].isascii() and pattern[i + 1].isalnum() \
                and pattern[i + 2:i + 3] not in tuple(_QUANTIFIER) and pattern[i + 1:i + 2] != "":
            out.append(" ?")
            i += 1
            prev_plain = False
            continue
        out.append(ch)
        prev_plain = ch.isascii() and ch.isalnum() and pattern[i + 1:i + 2] not in tuple(_QUANTIFIER)
        i += 1
    return "".join(out)


def squeezed(text: Optional[str]) -> Optional[str]:
    """``text`` without its blanks (what a needle of a :func:`tolerant` pattern is looked for in)."""
    return text.replace(" ", "") if text is not None else None


@lru_cache(maxsize=1)
def rows() -> Tuple[Row, ...]:
    from cudaenv.core.resources import load_table

    out = []
    for raw in load_table(TABLE)["rows"]:
        known = [literals_of(p) for p in raw["patterns"]]  # (needle, prefilter): no pattern is parsed or compiled here
        filters = tuple(tuple(dict.fromkeys(squeezed(n) for n in found[1])) for found in known)
        literals = () if not all(filters) else tuple(dict.fromkeys(n for f in filters for n in f))
        out.append(
            Row(
                id=raw["id"],
                patterns=Patterns(raw["patterns"]),
                needles=tuple(found[0] for found in known),
                windows=tuple(found[3] for found in known),
                prefilter=filters,
                literals=literals,
                title=raw["title"],
                explanation=raw["explanation"],
                details=tuple(raw.get("details", ())),
                advice=tuple(raw.get("advice", ())),
                source=raw.get("source"),
                doctor_finding=bool(raw.get("doctor_finding", False)),
                context=tuple(raw.get("context", ())),
                check=raw.get("check"),
            )
        )
    return tuple(out)


def derive(values: Mapping[str, str]) -> Dict[str, str]:
    """Values computed from the groups: ``driver_cuda_int`` 11040 -> ``driver_cuda`` 11.4."""
    out = dict(values)
    for key, value in values.items():
        if key.endswith("_cuda_int") and cuda_from_int(value):
            out[key[: -len("_int")]] = cuda_from_int(value)
    return out


def fill(template: str, values: Mapping[str, str]) -> Optional[str]:
    """``template`` with ``{name}`` filled in, as a marked message (cudaenv.core.i18n: the English text, which keeps
    its template); None when a placeholder has no value."""
    missing = []

    def sub(m: "re.Match[str]") -> str:
        if m.group(1) in values:
            return values[m.group(1)]
        missing.append(m.group(1))
        return m.group(0)

    result = _PLACEHOLDER.sub(sub, template)
    if missing:
        return None
    from cudaenv.core.i18n import filled_message

    return filled_message(template, result, values)  # a renderer may say it in the reader's language


def filled(templates, values: Mapping[str, str]) -> Tuple[str, ...]:
    """The sentences of ``templates`` whose placeholders all have a value, filled."""
    return tuple(s for s in (fill(t, values) for t in templates) if s)


_FOLD = {0x130: "i", 0x131: "i", 0x17F: "s"}  # what re.IGNORECASE matches with an ASCII letter and lower() does not


def lowered(text: Optional[str]) -> Optional[str]:
    """``text`` lower-cased for the literal pre-filter, as long as ``text`` (one character for one: offsets hold):
    an ASCII letter's every re.IGNORECASE equal lower-cases to it once the three that do not (dotted and dotless I,
    long s) are mapped, and every literal that is not ASCII is of a script without case (tests/explain check both
    over all of Unicode and the table). A Chinese paste is pre-filtered too: without it, every pattern scanned it."""
    if text is None:
        return None
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()
