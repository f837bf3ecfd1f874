"""A known message re-typed with one word missing or mistyped (issue 28): the last resort when no row matched.

A person who copies an error by hand drops a word (``all CUDA-capable devices are busy unavailable``) or mistypes
one (``Found no NVIDIA drvier on your system``). Each pattern that is plain text of at least :data:`MIN_WORDS`
words (a row without a check) is such a message; a line whose words are the phrase's with exactly one inner word
missing, or one word within two typing errors of the phrase's, is that message with a ``medium`` confidence. Only tried when
no row matched at all (a recognised paste never pays for it), only on lines that hold one of the phrase's two
longest words (every line is not tokenised), and only when the text holds all but one of its long words.
"""

import re
from bisect import bisect_right
from functools import lru_cache
from typing import List, NamedTuple, Optional, Sequence, Tuple

from cudaenv.explain import table as T

MIN_WORDS = 5
MIN_CHARS = 24
MAX_LINES = 64  # lines tried per phrase (the ones that hold its longest words)
_WORD = re.compile(r"[a-z0-9_]+(?:[-'][a-z0-9_]+)*")


class Phrase(NamedTuple):
    index: int  # the row's place in the table
    row: T.Row
    at: int  # the pattern's place in the row (compiled only when a line fits: T.Patterns)
    words: Tuple[str, ...]
    keys: Tuple[str, ...]  # its words of 4+ letters, longest first


def _literal(pattern: str) -> str:
    """``pattern`` as the plain text it matches when it is one (escapes undone, word boundaries and optional blanks
    dropped), lower-cased; "" when it has anything else (a group, a class, a repeat)."""
    text = pattern.replace("\\b", "").replace(" ?", " ")
    if re.search(r"[()\[\]{}*+?|^$]", re.sub(r"\\.", "", text)):
        return ""
    return re.sub(r"\\(.)", r"\1", text).lower()


@lru_cache(maxsize=1)
def phrases() -> Tuple[Phrase, ...]:
    """The phrases: patterns that are plain text, of rows without a check (a check's verdict is never bypassed)."""
    from cudaenv.core.resources import load_table

    raw_rows = {r["id"]: r["patterns"] for r in load_table(T.TABLE)["rows"]}
    out = []
    for index, row in enumerate(T.rows()):
        if row.check:
            continue
        for at, raw in enumerate(raw_rows.get(row.id, ())[:len(row.patterns)]):
            needle = _literal(raw)
            words = tuple(_WORD.findall(needle))
            keys = tuple(sorted(dict.fromkeys(w for w in words if len(w) >= 4), key=len, reverse=True))
            if len(words) >= MIN_WORDS and len(needle) >= MIN_CHARS and len(keys) >= 3:
                out.append(Phrase(index, row, at, words, keys))
    return tuple(out)


def _near(a: str, b: str) -> bool:
    """Within two edits (insert, delete, replace, or two letters swapped) and both of 4+ letters: a typo."""
    if len(a) < 4 or len(b) < 4 or abs(len(a) - len(b)) > 2 or a[0] != b[0]:
        return False
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1] <= 2


def _fits(tokens: Sequence[str], words: Sequence[str]) -> Optional[Tuple[int, int]]:
    """(first, last + 1) token of ``tokens`` that are ``words`` with one word missing or mistyped, else None."""
    n = len(words)
    for i in range(len(tokens)):
        window = tokens[i:i + n]
        if len(window) == n:  # one word mistyped
            bad = [j for j in range(n) if window[j] != words[j]]
            if len(bad) == 1 and _near(window[bad[0]], words[bad[0]]):
                return i, i + n
        short = tokens[i:i + n - 1]
        if len(short) == n - 1:  # one word missing inside (a missing first or last word is a phrase's fragment)
            for j in range(1, n - 1):
                if short == list(words[:j]) + list(words[j + 1:]):
                    return i, i + n - 1
    return None


def retyped(paste) -> List:
    """The rows whose phrase a line of ``paste`` holds with one word missing or mistyped (rank.Candidate, fuzzy)."""
    from cudaenv.explain.rank import Candidate

    view = paste.views[0]
    low = view.low if view.low is not None else view.text.lower()
    found, seen = [], set()
    for ph in phrases():
        if ph.index in seen or sum(1 for k in ph.keys if k in low) < len(ph.keys) - 1:
            continue
        for line in _lines_with(low, view, ph.keys[:2]):
            text = paste.norm[line]
            where = _fit_in(text, ph)
            if where is None:
                continue
            start, end = where
            offset = view.starts[bisect_right(view.lines, line) - 1] if view.starts else 0
            m = re.compile(re.escape(text[start:end])).search(view.text, offset + start)
            if m is not None:
                found.append(Candidate(ph.index, ph.row, view, m, ((ph.row.patterns[ph.at], m),), line, line, fuzzy=True))
                seen.add(ph.index)
                break
    return sorted(found, key=lambda c: c.index)


def _fit_in(text: str, ph: Phrase) -> Optional[Tuple[int, int]]:
    """Where in the line ``text`` (start, end) the phrase ``ph`` is, re-typed; None when it is not."""
    for at, part in _windows(text, ph):
        spans = [(m.start(), m.end()) for m in _WORD.finditer(part.lower())]
        hit = _fits([part.lower()[a:b] for a, b in spans], ph.words)
        if hit is not None:
            return at + spans[hit[0]][0], at + spans[hit[1] - 1][1]
    return None


def _windows(text: str, ph: Phrase) -> List[Tuple[int, str]]:
    """The parts of a line a re-typed ``ph`` can be in, as (offset, text): the whole line when it is short; else, for
    a long line (a log's one-line blob, a megabyte of one message repeated), a window around each of the first
    :data:`MAX_LINES` places that hold one of its two longest words, as long as the phrase twice each side (a
    re-typed phrase is near its longest words: the work is bounded by the phrase, not the line)."""
    span = 2 * (sum(len(w) + 1 for w in ph.words) + 16)
    if len(text) <= 4 * span:
        return [(0, text)]
    low, out, seen = text.lower(), [], set()
    for key in ph.keys[:2]:
        pos = low.find(key)
        while pos >= 0 and len(seen) < MAX_LINES:
            start = max(0, pos - span)
            cut = low.rfind(" ", max(0, start - span), start)  # (at a blank within reach: no word cut in two)
            start = cut + 1 if cut >= 0 else start
            if start not in seen:
                seen.add(start)
                end = pos + span
                cut = low.find(" ", end, end + span)
                out.append((start, text[start:cut if cut >= 0 else end]))
            pos = low.find(key, pos + span)
    return sorted(out)


def _lines_with(low: str, view, keys: Sequence[str]) -> List[int]:
    """The lines (at most MAX_LINES, in order) of ``view`` whose lower-cased text holds one of ``keys``."""
    lines = set()
    for key in keys:
        pos = low.find(key)
        while pos >= 0 and len(lines) < MAX_LINES:
            lines.add(view.line_of(pos))
            pos = low.find(key, pos + len(key))
    return sorted(lines)
