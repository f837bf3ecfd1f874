"""The root cause of a paste: every row of the error table that matches is a candidate, and the rules of
``data/explain_rules.json`` rank them the way an expert reads a traceback (issue 14 section 1).

A candidate is the row, the line it matched (the first occurrence that is not on a context line) and its
position. Ranked by, in this order:

1. a match on a *context* line (pip's progress, a traceback's source excerpt, a compiler's warning or note, a C++
   frame, a shell command, Python code) or inside *boilerplate* (the sentences torch appends to every CUDA error)
   comes after every other: they are never the error;
2. a match inside a *wrapper* message (``Could not load library X. Error: Y``, ``Error building extension``,
   ``Error(s) in loading state_dict for``) comes after a match in what it wraps (its ``inner`` group, or the
   lines around it): ``Error: libcuda.so: cannot open shared object file`` is the library really missing;
3. an *after-effect* (a ``kind: after`` row of the table) comes after its cause: one of its causes that matched
   earlier in the paste, or, for a row with ``order: any`` (a generic failure such as CUDA_ERROR_UNKNOWN, whose
   diagnosis XLA prints on the lines below it), one that matched anywhere in it;
4. the *section* of a chained traceback: the first raised error (above "During handling of the above exception"
   or "The above exception was the direct cause") is the cause of what follows;
5. the row's place in ``data/error_patterns.json`` (specific rows come first there);
6. the line.

Each candidate gets a confidence: ``low`` on a context line or in boilerplate; ``medium`` inside a wrapper, when
found only by gluing lines a terminal wrapped mid-word, or for a short match (under :data:`SHORT` characters) on
a line that does not report an error; ``high`` otherwise.

What each candidate matched, as pasted, is :mod:`cudaenv.explain.evidence`.
"""

import re
from bisect import bisect_right
from itertools import compress
from functools import lru_cache
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from cudaenv.explain import normalize as N
from cudaenv.explain import table as T
from cudaenv.explain.views import BIG, View

RULES = "explain_rules"
CONFIDENCE = ("high", "medium", "low")
SHORT = 20  # characters: a shorter match on a line that reports no error is only medium evidence
MAX_OCCURRENCES = 32  # matches of one pattern looked at for one that is not on a context line

_ERROR_LINE = re.compile(  # one word-boundary test gates the words: a case-insensitive branch has no fast first-letter check
    r"\A[\w.]{0,100}(?:Error|Exception|Warning|Exit|Interrupt|Failure|Fault)\b"
    r"|\b(?:(?:error|fatal|failed|failure|aborted)\b ?:|terminate called|what\(\):|command not found"
    r"|Segmentation fault|cannot open shared object file|(?:CUDA|NCCL) error\b|nvcc fatal\b|NVRM\b|Xid\b)"
    r"|: not found\b",
    re.IGNORECASE,
)


class Rule(NamedTuple):
    kind: str
    pattern: "re.Pattern[str]"
    needle: str
    name: str
    then_next: bool
    until: Optional["re.Pattern[str]"] = None  # context only before this (a prompt's command, not its output)
    any_of: Tuple[str, ...] = ()  # without a needle: literals one of which every match contains (T.prefilter, else
    # T.short_literals)


class Variant(NamedTuple):
    id: str
    name: str
    platform: Optional[str]
    value: Optional[str]
    value_pattern: Optional["re.Pattern[str]"]
    title: Optional[str]
    explanation: Optional[str]
    advice: Optional[Tuple[str, ...]]


class Rules(NamedTuple):
    chain: Tuple[Rule, ...]
    boilerplate: Tuple[Rule, ...]
    wrapper: Tuple[Rule, ...]
    context: Tuple[Rule, ...]
    platforms: Tuple[Tuple[str, Tuple[Rule, ...]], ...]
    variants: Tuple[Variant, ...]
    after: Dict[str, Tuple[str, ...]]  # id -> the ids it is an after-effect of (when one of them matched earlier)
    anywhere: Dict[str, Tuple[str, ...]] = {}  # id -> the ids that explain it wherever they are in the paste (an
    # after row with order "any": its message names no reason, and a library may print its diagnosis after it)


@lru_cache(maxsize=1)
def rules() -> Rules:
    from cudaenv.core.resources import load_table

    kinds: Dict[str, List[Rule]] = {"chain": [], "boilerplate": [], "wrapper": [], "context": []}
    platforms: Dict[str, List[Rule]] = {}
    variants: List[Variant] = []
    after: Dict[str, Tuple[str, ...]] = {}
    anywhere: Dict[str, Tuple[str, ...]] = {}
    for raw in load_table(RULES)["rows"]:
        kind = raw["kind"]
        if kind in kinds:
            rule = _rule(kind, raw["pattern"], raw.get("name", kind), raw.get("then") == "next")
            if raw.get("until"):
                rule = rule._replace(until=T.Lazy(raw["until"]))
            kinds[kind].append(rule)
        elif kind == "after":
            into = anywhere if raw.get("order") == "any" else after
            into[raw["id"]] = into.get(raw["id"], ()) + tuple(raw["causes"])
        elif kind == "platform":
            platforms.setdefault(raw["name"], []).extend(_rule(kind, p, raw["name"], False) for p in raw["patterns"])
        elif kind == "variant":
            vp = raw.get("value_pattern")
            variants.append(Variant(raw["id"], raw.get("name") or raw.get("platform") or raw["id"], raw.get("platform"),
                                    raw.get("value"), T.Lazy(vp) if vp else None, raw.get("title"),
                                    raw.get("explanation"), tuple(raw["advice"]) if "advice" in raw else None))
    return Rules(tuple(kinds["chain"]), tuple(kinds["boilerplate"]), tuple(kinds["wrapper"]), tuple(kinds["context"]),
                 tuple((k, tuple(v)) for k, v in platforms.items()), tuple(variants), after, anywhere)


def _rule(kind: str, pattern: str, name: str, then_next: bool) -> Rule:
    needle, any_of, short, _ = T.literals_of(pattern)  # compiled only when its literals are in the text (T.Lazy)
    return Rule(kind, T.Lazy(pattern), needle, name, then_next,
                any_of=() if needle else tuple(n for n in (any_of or short) if n))


# ------------------------------------------------------------------ the text, in three views (View: explain.views)
class Context(dict):
    """line -> (the context kind it is: pip, traceback-frame, ..., where on the line that part ends) or None: worked
    out for a line when first asked
    (only the lines a pattern matched on are ever asked about, so a paste of a million lines costs nothing here)."""

    __slots__ = ("norm",)

    def __init__(self, norm: Sequence[str]):
        super().__init__()
        self.norm = norm

    def __missing__(self, line: int) -> Optional[Tuple[str, int]]:
        kind = _context_kind(self.norm, line)
        self[line] = kind
        return kind


def _context_kind(norm: Sequence[str], line: int) -> Optional[Tuple[str, int]]:
    """(the context kind of ``line``, the column where the context part of the line ends) or None."""
    text = norm[line] if 0 <= line < len(norm) else ""
    found = rules().context
    low = T.lowered(text)
    for rule in found:
        m = rule.pattern.match(text) if _may_match(rule, low) else None
        if m:
            stop = rule.until.search(text, m.end()) if rule.until is not None else None
            return rule.name, stop.start() if stop else len(text) + 1
    prev = line - 1
    while prev >= 0 and not norm[prev]:
        prev -= 1
    if prev >= 0 and not _ERROR_LINE.search(text):
        low = T.lowered(norm[prev])
        for rule in found:
            if rule.then_next and _may_match(rule, low) and rule.pattern.match(norm[prev]):
                return rule.name + " source", len(text) + 1
    return None


def _may_match(rule: Rule, low: Optional[str]) -> bool:
    """Whether ``rule`` can match a text whose :func:`T.lowered` form is ``low``: its literals are in it (the look
    :meth:`View.finditer` makes, so that a rule is compiled only for a text that holds them; None: not pre-filtered)."""
    if low is None:
        return True
    if rule.needle and rule.needle not in low:
        return False
    return not rule.any_of or any(n in low for n in rule.any_of)


class Paste(NamedTuple):
    raw: List[str]  # the lines as pasted
    norm: List[str]  # the same lines normalized
    views: Tuple[View, ...]  # "lines", then "joined" and "glued" when they differ
    context: Context  # line -> (the context kind it is, where it ends on the line), or None


def read(text: str) -> Paste:
    raw = N.lines_of(text)
    norm = N.normalize(text)
    views = [View("lines", range(len(norm)), norm, "\n")]
    idx = list(compress(range(len(norm)), norm))
    if len(idx) > 1:
        pieces = list(filter(None, norm))
        joined = View("joined", idx, pieces, " ")
        joined._within, views[0]._outer = views[0], joined
        views.append(joined)
        width = N.wrap_width(raw)
        if width:
            seps = ["" if len(raw[i]) == width and not raw[i][-1:].isspace() else " " for i in idx[:-1]]
            if "" in seps:
                glued = View("glued", idx, pieces, seps)
                glued._has, glued._squeezed = joined._has, joined._squeezed  # the same text once blanks are gone
                views.append(glued)
    context = Context(norm)
    return Paste(raw, norm, tuple(views), context)


# ------------------------------------------------------------------ candidates
class Candidate(NamedTuple):
    index: int  # the row's place in the table
    row: T.Row
    view: View
    match: "re.Match[str]"  # the row's first pattern that matched, at its chosen occurrence
    found: Tuple[Tuple["re.Pattern[str]", "re.Match[str]"], ...]  # every pattern that matched, with its match
    first: int  # the lines the match covers
    last: int
    extra: Tuple[Tuple[str, str], ...] = ()  # the values the row's check added
    fuzzy: bool = False  # found with one word missing or mistyped (cudaenv.explain.fuzzy)


def _context_at(view: View, context: Context, offset: int) -> Optional[str]:
    """The context kind at ``offset`` of ``view``: its line's, when the offset lies in the context part of the line."""
    i = max(bisect_right(view.starts, offset) - 1, 0)
    line = view.lines[i] if view.lines else 0
    found = context[line]
    if found is None:
        return None
    kind, stop = found
    return kind if offset - (view.starts[i] if view.starts else 0) < stop else None


def _matches(pattern: "re.Pattern[str]", view: View, window: Optional[Tuple[str, int]] = None):
    """``pattern.finditer(view.text)``; in a long text with a ``window`` (T.window: a piece every match holds and the
    most characters before it) the pattern is tried only at the places a match can start, up to ``before``
    characters before each place of the piece (a 1 MB log with one out-of-memory line is tried there, not scanned
    three times by a pattern without a fast first character). The same matches in the same order: each match holds
    a place of the piece at most ``before`` after its start, and the places are taken in order."""
    text, low = view.text, view.low
    if window is None or low is None or len(text) <= BIG:
        yield from pattern.finditer(text)
        return
    piece, before = window
    if low.count(piece) * (before + 1) > len(text) // 16:  # many places: one scan is cheaper
        yield from pattern.finditer(text)
        return
    pos = 0  # where the next match may start (finditer's position)
    at = low.find(piece)
    while at >= 0:
        for start in range(max(pos, at - before), at + 1):
            m = pattern.match(text, start)
            if m is not None:
                yield m
                pos = m.end() if m.end() > start else start + 1
                break
        else:
            pos = at + 1
        at = low.find(piece, max(pos, at + 1))


def _occurrence(pattern: "re.Pattern[str]", view: View, context: Context,
                window: Optional[Tuple[str, int]] = None) -> Optional["re.Match[str]"]:
    """The first match of ``pattern`` in ``view`` that is not on a context line (else the first match)."""
    first = None
    for n, m in enumerate(_matches(pattern, view, window)):
        if first is None:
            first = m
        if _context_at(view, context, m.start()) is None:
            return m
        if n + 1 >= MAX_OCCURRENCES:
            break
    return first


def _candidate(index: int, row: T.Row, view: View, context: Context) -> Optional[Candidate]:
    found = []
    has = view.has if len(view.text) > BIG else (view.squeezed or "").__contains__  # a short text: a plain look
    if view.low is not None and row.literals and not any(map(has, row.literals)):
        return None  # no pattern of the row has a literal in the text
    for i in range(len(row.patterns)):
        if view.low is not None:  # the pattern's literals (blanks aside: T.tolerant) are not in the text: it cannot match
            if i < len(row.prefilter):
                if row.prefilter[i] and not any(map(has, row.prefilter[i])):
                    continue
            elif i < len(row.needles) and row.needles[i] and not has(T.squeezed(row.needles[i])):
                continue
        pattern = row.patterns[i]  # compiled only now (T.Patterns): its literals are in the text
        m = _occurrence(pattern, view, context, row.windows[i] if i < len(row.windows) else None)
        if m is not None:
            found.append((pattern, m))
    if not found:
        return None
    primary = found[0][1]
    return Candidate(index, row, view, primary, tuple(found), view.line_of(primary.start()),
                     view.line_of(max(primary.start(), primary.end() - 1)))


def candidates(paste: Paste) -> List[Candidate]:
    """Every row that matches, once: in the lines view, else across joined lines, else across glued ones (a row
    whose check rejects the text in one view is tried in the next, as a row that did not match). A row that matched
    only by a pattern without values (``NVRM: API mismatch``) is tried in the next views too, and a view where more
    of its patterns match wins: a message a kernel log wrapped over lines gives its versions there."""
    found = []
    shown: List[Tuple[str, ...]] = []  # the platforms the paste shows, read once, when a row's check first needs them
    for index, row in enumerate(T.rows()):
        best: Optional[Candidate] = None
        for view in paste.views:
            if best is not None and not _lacks_values(row, best):
                break
            c = _candidate(index, row, view, paste.context)
            if c is not None and row.check:  # the patterns matched; the row's check reads the text and decides
                from cudaenv.explain.checks import run_check

                groups: Dict[str, str] = {}
                for _, m in c.found:
                    for key, value in m.groupdict().items():
                        if value is not None:
                            groups.setdefault(key, value)
                if not shown:
                    shown.append(platforms(paste))
                wheels = [name for name in shown[0] if name in WHEEL_PLATFORMS]
                values = T.derive(groups)
                if wheels:  # the wheels a capability check names (an input of the check, never a value shown)
                    values["wheel_platform"] = wheels[0]
                extra = run_check(row.check, values, view.text)
                c = None if extra is None else c._replace(extra=tuple(sorted(extra.items())))
            if c is not None and (best is None or len(c.found) > len(best.found)):
                best = c
        if best is not None:
            found.append(best)
    return found


def _lacks_values(row: T.Row, c: Candidate) -> bool:
    """Whether a pattern of ``row`` with named groups did not match in ``c`` (another view may give its values)."""
    matched = {id(p) for p, _ in c.found}
    return any(p.groupindex and id(p) not in matched for p in row.patterns)


# ------------------------------------------------------------------ ranking
# Why a candidate ranks where it does: (kind, value) pairs, said by cudaenv.render.explain (RANK_NOTES); the value is
# the context kind for "context-line", the cause's id for "explained-after" and "follows", else "".
NOTE_KINDS = ("context-line", "boilerplate", "wrapper", "explained-after", "follows", "warning", "chained", "glued",
              "fuzzy", "short")


class Ranked(NamedTuple):
    candidate: Candidate
    key: Tuple[int, ...]
    confidence: str
    notes: Tuple[Tuple[str, str], ...]  # (kind of NOTE_KINDS, value)


def _inside(spans, start: int, end: int) -> bool:
    for s, e, i0, i1 in spans:
        if s > start:
            break
        if end <= e and not (i0 >= 0 and start < i1 and end > i0):
            return True
    return False


def _where(c: Candidate) -> Tuple[int, int]:
    """(line, offset in the line's view) of a candidate's match: which of two came first in the paste."""
    starts = c.view.starts
    offset = c.match.start()
    return c.first, offset - starts[max(bisect_right(starts, offset) - 1, 0)] if starts else offset


def _after_effect(c: Candidate, found: Sequence[Candidate], causes: Mapping[str, Tuple[str, ...]],
                  anywhere: Mapping[str, Tuple[str, ...]] = {}) -> Optional[Tuple[str, bool]]:
    """(the id a candidate ``c`` follows from, whether it was printed after ``c``): one of its causes (``kind:
    after``) that matched before it, or one of the causes of an ``order: any`` row wherever it matched (a generic
    failure, CUDA_ERROR_UNKNOWN, whose diagnosis the library prints on the next lines: XLA's cuda_diagnostics)."""
    wanted = causes.get(c.row.id, ())
    either = anywhere.get(c.row.id, ())
    if not wanted and not either:
        return None
    here = _where(c)
    later = None
    for other in found:
        if other.row.id in wanted or other.row.id in either:
            before = _where(other) <= here
            if before:
                return other.row.id, False
            if other.row.id in either and later is None:
                later = other.row.id
    return (later, True) if later else None


def rank(paste: Paste, found: Sequence[Candidate]) -> List[Ranked]:
    r = rules()
    out = []
    for c in found:
        view, start, end = c.view, c.match.start(), c.match.end()
        notes: List[Tuple[str, str]] = []
        kind = _context_at(view, paste.context, start)
        boiler = _inside(view.spans("boilerplate", r.boilerplate), start, end)
        wrappers = view.spans("wrapper", r.wrapper)
        wrapped = not boiler and all(_inside(wrappers, m.start(), m.end()) for _, m in c.found)  # nothing outside it
        chain = view.spans("chain", r.chain)
        section = sum(1 for s in chain if s[0] < start)
        low = kind is not None or boiler
        if kind is not None:
            notes.append(("context-line", kind))
        if boiler:
            notes.append(("boilerplate", ""))
        if wrapped:
            notes.append(("wrapper", ""))
        cause = None if low else _after_effect(c, [o for o in found if _context_at(o.view, paste.context, o.match.start()) is None],
                                               r.after, r.anywhere)
        if cause and cause[1]:
            notes.append(("explained-after", cause[0]))
        elif cause:
            notes.append(("follows", cause[0]))
        warning = any(m.groupdict().get("is_warning") for _, m in c.found)
        if warning:
            notes.append(("warning", ""))
        if section:
            notes.append(("chained", ""))
        if view.name == "glued":
            notes.append(("glued", ""))
        if c.fuzzy:
            notes.append(("fuzzy", ""))
        short = len(" ".join(c.match.group(0).split())) < SHORT and not any(
            _ERROR_LINE.search(paste.norm[i]) for i in range(c.first, c.last + 1))
        if short and not low:
            notes.append(("short", ""))
        confidence = "low" if low else "medium" if (wrapped or warning or short or c.fuzzy or view.name == "glued") else "high"
        key = (1 if low else 0, 1 if wrapped else 0, 1 if warning else 0, 1 if cause else 0, section, c.index, c.first)
        out.append(Ranked(c, key, confidence, tuple(notes)))
    out.sort(key=lambda x: x.key)
    return out


# ------------------------------------------------------------------ the platforms a paste shows (explain.fit chooses by them)
WHEEL_PLATFORMS = ("linux-aarch64", "windows-x86_64")  # platform rows that name a torch wheel platform, not x86 Linux


def platforms(paste: Paste) -> Tuple[str, ...]:
    """The platforms the paste shows (``macos``, ``rocm``, ``cpu-on-purpose``, ...), in the table's order."""
    view = paste.views[0]
    return tuple(name for name, found in rules().platforms if any(next(iter(view.finditer(rule)), None) for rule in found))
