"""The paste as the patterns read it: one :class:`View` per way of reading the normalized lines (each line on its
own, all joined by a blank: a message a terminal wrapped between words, or glued where a terminal wrapped inside a
word), with the literal look-ups the pre-filter makes (:mod:`cudaenv.explain.rank` builds them in ``read``)."""

from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add
from typing import Any, Dict, List, Optional, Sequence

from cudaenv.explain import table as T

BIG = 20_000  # characters: a text this long remembers which literals it holds (View.has); a shorter one looks each time


class View:
    """One way of reading the normalized lines: ``text`` made of pieces (one line each), ``starts`` where each
    piece begins in it, ``lines`` the line each piece is."""

    __slots__ = ("name", "text", "lines", "low", "_squeezed", "_pieces", "_seps", "_starts", "_spans", "_has", "_within",
                 "_outer")

    def __init__(self, name: str, lines: Sequence[int], pieces: Sequence[str], seps):
        """``seps``: the one separator between all pieces (a string), or one per gap (a list)."""
        self.name = name
        if isinstance(seps, str):
            self.text = seps.join(pieces)
        else:
            parts = [""] * (2 * len(pieces) - 1) if pieces else []
            parts[::2] = pieces
            parts[1::2] = seps
            self.text = "".join(parts)
        self.lines = lines
        self.low = T.lowered(self.text)
        self._squeezed: Optional[str] = None
        self._pieces, self._seps, self._starts = pieces, seps, None
        self._spans: Dict[str, Any] = {}
        self._has: Dict[str, bool] = {}  # literal -> whether ``squeezed`` contains it (shared by views of one squeezed text)
        self._within: Optional["View"] = None  # a view whose squeezed text is inside this one's, line by line
        self._outer: Optional["View"] = None  # a view whose squeezed text holds this one's lines, each whole

    @property
    def starts(self) -> List[int]:
        """Where each piece begins in ``text`` (made when first needed, in C-level passes)."""
        if self._starts is None:
            lens = list(map(len, self._pieces[:-1]))
            gaps = repeat(len(self._seps)) if isinstance(self._seps, str) else map(len, self._seps)
            self._starts = [0] + list(accumulate(map(add, lens, gaps))) if self._pieces else []
        return self._starts

    @property
    def squeezed(self) -> Optional[str]:
        """``low`` without its blanks: where a row's needle is looked for (a re-typed message may lack a blank)."""
        if self._squeezed is None and self.low is not None:
            self._squeezed = T.squeezed(self.low)
        return self._squeezed

    def has(self, literal: str) -> bool:
        """Whether the squeezed text contains ``literal`` (a pattern's literal, blanks removed), each literal looked
        for once: a literal without a line break is in the lines view only if it is in the joined one (the same lines,
        joined by what squeezes away), so the lines view looks only for what the joined view holds (most literals are
        in neither: one pass over the text each instead of two); the joined and glued views squeeze to the same
        text."""
        found = self._has.get(literal)
        if found is None:
            if "\n" in literal:
                found = bool(self._within is not None and self._within.has(literal)) or literal in self.squeezed
            elif self._outer is not None and not self._outer.has(literal):
                found = False
            else:
                found = literal in self.squeezed
            self._has[literal] = found
        return found

    def line_of(self, offset: int) -> int:
        i = bisect_right(self.starts, offset) - 1
        return self.lines[max(i, 0)] if self.lines else 0

    def finditer(self, rule):  # a rank.Rule
        if self.low is not None:
            if rule.needle and rule.needle not in self.low:
                return ()
            if rule.any_of and not any(n in self.low for n in rule.any_of):
                return ()
        return rule.pattern.finditer(self.text)

    def spans(self, kind: str, found: Sequence[Any]):  # rank.Rule
        """(start, end, inner_start, inner_end) of every match of the rules of one kind, cached."""
        if kind not in self._spans:
            out = []
            for rule in found:
                for m in self.finditer(rule):
                    inner = m.span("inner") if "inner" in rule.pattern.groupindex and m.group("inner") is not None else (-1, -1)
                    out.append((m.start(), m.end()) + inner)
            out.sort()
            self._spans[kind] = out
        return self._spans[kind]
