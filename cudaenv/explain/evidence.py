"""What the user pasted that a candidate matched (``matched``) and the values of its named groups, read back from
the lines as pasted (:mod:`cudaenv.explain.rank` finds the candidates in the normalized lines).

When normalizing changed nothing on the matched lines the match itself is what was pasted; else the same pattern is
tried on those lines as pasted, and when only the normalized text matches, the original lines are shown (around
the match, when they are long).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Dict, Optional, Tuple

EVIDENCE = 300  # characters of an original line kept as the evidence around a match

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from cudaenv.explain.rank import Candidate, Paste
    from cudaenv.explain.views import View


def _as_pasted(paste: Paste, view: View, pattern: "re.Pattern[str]", m: "re.Match[str]") -> Tuple[Optional["re.Match[str]"], bool]:
    """The same pattern's match in the lines as pasted (``None`` when it matches only once normalized), and whether
    normalizing changed nothing on those lines (then ``m`` itself is what was pasted)."""
    first, last = view.line_of(m.start()), view.line_of(max(m.start(), m.end() - 1))
    lines = range(first, last + 1)
    if all(paste.raw[i].strip() == paste.norm[i] for i in lines):
        return m, True
    sep = "\n" if view.name == "lines" else " "
    return pattern.search(sep.join(paste.raw[i].strip() for i in lines)), False


def values(paste: Paste, c: Candidate) -> Dict[str, str]:
    """The named groups of every pattern that matched, as pasted where the pattern matches the pasted lines too
    (an assertion's text keeps its escape sequences: the renderer shows them escaped)."""
    out: Dict[str, str] = {}
    for pattern, m in c.found:
        pasted, _ = _as_pasted(paste, c.view, pattern, m)
        for key, value in (pasted or m).groupdict().items():
            if value is not None and key not in out:
                out[key] = value
    return out


def evidence(paste: Paste, c: Candidate) -> str:
    """The part of what the user pasted that matched: the match in the lines as pasted, else (a match only the
    normalized text has) those original lines, around the match when they are long."""
    pasted, _ = _as_pasted(paste, c.view, c.found[0][0], c.match)
    if pasted is not None:
        return pasted.group(0).strip()
    lines = range(c.first, c.last + 1)
    original = "\n".join(paste.raw[i].strip() for i in lines)
    if len(original) <= EVIDENCE:
        return original
    view = c.view
    line_start = view.starts[bisect_right(view.lines, c.first) - 1] if view.starts else 0
    norm_len = max(1, sum(len(paste.norm[i]) + 1 for i in lines))
    centre = int(len(original) * (c.match.start() - line_start) / norm_len)
    lo = max(0, min(centre - EVIDENCE // 3, len(original) - EVIDENCE))
    return original[lo:lo + EVIDENCE].strip()
