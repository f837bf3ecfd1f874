"""What pasting adds to a text and what :func:`undecorate` takes away: the one home of it (issue 25: explain's
normalizer and the readers of pasted tool outputs each had their own). Pure; linear in the text; never raises.

Decorations: ANSI colours (and an SGR sequence whose ESC a forum dropped, ``[1;31m``), Markdown code fences
(```` ``` ```` and ``~~~`` lines), ``**`` bold, ``>`` quote marks of mail and forums (any depth), full-width
punctuation and letters (``：（）。``), curly quotes and guillemets, no-break and ideographic blanks, zero-width
characters. ``undecorate`` keeps the line structure (a fence becomes an empty line) unless told to drop fences.

>>> undecorate("> **RuntimeError\\uff1a** CUDA error\\uff1aout of memory\\n```\\n\\x1b[31mboom\\x1b[0m")
'RuntimeError:  CUDA error: out of memory\\n\\nboom'
"""

from cudaenv.core.lazy import LazyPattern  # compiled on first use: most tool outputs hold none of the marks (issue 35)

ANSI = LazyPattern(r"\x1b\[[0-?]{0,32}[ -/]{0,8}[@-~]|\x1b\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)?|\x1b[()][0-9A-Za-z]|\x1b[@-_]?")
BARE_SGR = LazyPattern(r"\[(?:\d{1,3};){0,6}\d{1,3}m")  # an SGR sequence whose ESC a forum dropped: "[1;31m"
FENCE = LazyPattern(r"(?m)^[ \t]{0,12}(?:`{3,}|~{3,})[\w+.-]{0,40}[ \t]{0,8}$")
FENCE_LINE = LazyPattern(r"(?m)^[ \t]{0,12}(?:`{3,}|~{3,})[\w+.-]{0,40}[ \t]{0,8}(?:\n|$)")
QUOTE = LazyPattern(r"(?m)^[ \t]{0,12}(?:>[ \t]?){1,12}")

STOP = "\ue000"  # an ideographic full stop, until it is known whether a sentence or a name (torch。cuda) goes on
_STOP_SENTENCE = LazyPattern("\ue000(?=[A-Z\\s]|$)")


def _table():
    table = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}  # full-width ASCII: "（）＝" -> "()="
    table.update({0xFF1A: ": ", 0xFF0C: ", ", 0xFF1B: "; ", 0xFF01: "! ", 0xFF1F: "? ",  # a blank after, as typed in ASCII
                  0x3000: " ", 0x00A0: " ", 0x3002: STOP, 0xFF61: STOP, 0x3001: ", ", 0xFF64: ", ",
                  0x2018: "'", 0x2019: "'", 0x201A: "'", 0x201B: "'", 0x2032: "'",
                  0x201C: '"', 0x201D: '"', 0x201E: '"', 0x201F: '"', 0x2033: '"', 0x00AB: '"', 0x00BB: '"',
                  0x300C: '"', 0x300D: '"', 0x300E: '"', 0x300F: '"', 0x3010: "[", 0x3011: "]",
                  0x2013: "-", 0x2014: "-", 0x2212: "-", 0x2026: "...",
                  0x200B: None, 0x200C: None, 0x200D: None, 0x2060: None, 0xFEFF: None, 0x00AD: None})
    return table


TRANSLATE = _table()


def unwide(s: str) -> str:
    """``s`` with full-width punctuation, curly quotes and odd blanks as typed in ASCII; an ideographic full stop is
    ``. `` before a sentence (``memory。Tried``) and ``.`` inside a name (``torch。cuda``)."""
    if s.isascii():
        return s
    s = s.translate(TRANSLATE)
    if STOP in s:
        s = _STOP_SENTENCE.sub(". ", s).replace(STOP, ".")
    return s


def undecorate(text: str, keep_lines: bool = True, marks_only: bool = False) -> str:
    """``text`` without the decorations of a paste (the module's list); line ``i`` of the result is line ``i`` of the
    text (a fence line is left empty) unless ``keep_lines`` is False (then fence lines are dropped). ``marks_only``:
    only the fences and quote marks, for output a program printed here (its escape sequences are shown escaped
    where it is printed, never silently dropped)."""
    s = text
    if not marks_only:
        if "\x1b" in s:
            s = ANSI.sub("", s)
        if "m" in s and "[" in s:
            s = BARE_SGR.sub("", s)
        s = unwide(s)
    if "```" in s or "~~~" in s:
        s = (FENCE if keep_lines else FENCE_LINE).sub("", s)
    if "**" in s and not marks_only:
        s = s.replace("**", "")
    if ">" in s:
        s = QUOTE.sub("", s)
    return s
