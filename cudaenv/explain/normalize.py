"""A real paste as the patterns expect it, line for line (issue 14 section 3).

People paste through chat programs, forums and log collectors: markdown (``**``, code fences, ``> `` quotes),
ANSI colours, ``[rank0]:`` and logger prefixes (timestamps, ``ERROR    ``, glog's ``E0501 12:34:56.1 12 f.cpp:3]``,
loguru's ``| ERROR | mod:fn:3 -``, rich's right-hand ``file.py:12`` column), full-width punctuation (``：（）。``)
and curly quotes, doubled blanks, ``\\r`` from Windows logs and progress bars. :func:`normalize` undoes these and
keeps the line structure: line ``i`` of the result is line ``i`` of ``str.splitlines()`` of the paste, so the
evidence (``matched``) is always read back from what the user pasted.

:func:`joined` and :func:`glued` are the same lines as one line each: a message a terminal wrapped between two
words (joined with a blank) or in the middle of a word (``glued``: lines exactly as long as the longest line of
the paste, the terminal's width, continue the next without a blank).

Every pass is a regular expression anchored at a line start or a single-character class, so linear in the text
(``tests/test_regex_safety.py`` runs each on hostile input); nothing here raises for any string.

>>> normalize("> **RuntimeError：** CUDA error：out of memory\\r\\n[rank0]: 2024-05-01 12:00:01 ERROR   boom")
['RuntimeError: CUDA error: out of memory', 'boom']
"""

import re
from typing import List, Sequence

from cudaenv.core.lazy import LazyPattern
from cudaenv.parse.decorations import undecorate

# rich's traceback box, and the edges of CJK text: compiled when a paste is not ASCII (the CJK classes alone took a
# few ms to compile, at every start-up of explain)
_BOX = LazyPattern(r"(?m)^[ \t]{0,12}[\u2502\u2503\u2551]|[\u2502\u2503\u2551][ \t]{0,8}$")
_LEVELS = r"(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL|FATAL|TRACE|SUCCESS|NOTICE)"
_PREFIX = re.compile(
    r"(?m)^[ \t]{0,16}(?=[\[\d|A-Z])(?:"
    r"\[(?:rank|default|worker|proc|node)?\d{1,6}\]:?"  # torchrun's [rank0]: / [default0]:, [0]:
    r"|\[\d{1,5},\d{1,5}\]<std(?:out|err)>:"  # mpirun --tag-output
    r"|\d{1,5}:(?= )"  # srun --label
    r"|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]?(?:[ \t]{0,4}[|-](?= ))?"
    r"|\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?(?:[ \t]{0,4}[|-](?= ))?"
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,6}[ \t]{1,8}\d{1,10} [\w.-]{1,80}:\d{1,6}\]"  # glog
    r"|E(?=[ \t]{3})"  # pytest's error lines
    r"|\|?[ \t]{0,4}\[?" + _LEVELS + r"\]?(?:[ \t]{0,8}\|[ \t]{0,4}[\w.<>-]{1,80}(?::[\w.<>-]{1,80}){0,2}[ \t]{0,4}-(?= )"
    r"|[ \t]{0,8}\||:(?:[\w.-]{1,60}:)?|[ \t]{0,4}-(?= )|(?=[ \t]))"
    r")[ \t]{0,8}"
)
_LOGGER = re.compile(r"(?m)^[ \t]{0,16}[\w.]{1,60} - " + _LEVELS + r" - [ \t]{0,8}")  # logging's "name - LEVEL - "
_RICH_COLUMN = re.compile(r"(?m)(?<![ \t])[ \t]{2,}[\w.-]{1,80}\.py:\d{1,6}[ \t]{0,8}$")
_BLANKS = re.compile(r"[ \t\f\v\u00a0\u3000]{2,}")
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_EDGE = LazyPattern(r"(?<=[%s])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9.:)])(?=[%s])" % (_CJK, _CJK))


_PASSES = 3  # prefixes stack: "[rank0]: 2024-05-01 12:00:01,123 - train - ERROR - ..."


def lines_of(text: str) -> List[str]:
    """The paste's lines, split as Python splits them (``\\r``, ``\\r\\n`` and the Unicode separators too)."""
    return text.splitlines()


def normalize(text: str) -> List[str]:
    """The lines of ``text`` (as :func:`lines_of` splits them) with what pasting added taken away, each stripped."""
    raw = lines_of(text)
    if not raw:
        return []
    s = undecorate("\n".join(raw))  # colours, fences, bold, quotes, full-width: the one home, cudaenv.parse.decorations
    if not s.isascii():
        s = _BOX.sub("", s)
        if not s.isascii():
            s = _CJK_EDGE.sub(" ", s)
    for _ in range(_PASSES):
        s, n = _PREFIX.subn("", s)
        if " - " in s:
            s, more = _LOGGER.subn("", s)
            n += more
        if not n:
            break
    if ".py:" in s:
        s = _RICH_COLUMN.sub("", s)
    s = _BLANKS.sub(" ", s.replace("\t", " "))
    out = list(map(str.strip, s.split("\n")))
    if "`" in s:
        out = [line.strip("`").strip() if "`" in line else line for line in out]
    if len(out) != len(raw):  # a pass may never add or remove a line; if one did, keep the paste's own lines
        return [line.strip() for line in raw]
    return out


def joined(lines: Sequence[str]) -> str:
    """The non-empty ``lines`` as one line, a blank between each: a terminal's wrap between two words undone."""
    return " ".join(line for line in lines if line)


def wrap_width(raw: Sequence[str]) -> int:
    """The width a terminal wrapped ``raw`` at: the longest line, when it is at least 40 characters; 0 else."""
    longest = max(map(len, raw), default=0)
    return longest if longest >= 40 else 0


def glued(lines: Sequence[str], raw: Sequence[str]) -> str:
    """As :func:`joined`, but a line that is exactly the terminal's width (:func:`wrap_width` of the ``raw`` lines)
    continues the next one without a blank: a message wrapped in the middle of a word (``ver`` / ``sion``)."""
    width = wrap_width(raw)
    if not width:
        return ""
    parts: List[str] = []
    for i, line in enumerate(lines):
        if not line:
            continue
        if parts:
            prev = i - 1
            while prev >= 0 and not lines[prev]:
                prev -= 1
            parts.append("" if prev >= 0 and len(raw[prev]) == width and not raw[prev][-1:].isspace() else " ")
        parts.append(line)
    return "".join(parts)
