"""The one text helper of the human renderers: prose wrapping, paste-safe shell commands, fitting, width, colour.

Pure (``terminal_width`` and ``color_enabled`` read only the mapping they are given). Every text renderer wraps
through :func:`wrap`, lays a shell command out through :func:`wrap_command` (and prose naming commands, such as
advice, through :func:`wrap_advice`), elides a long word with :func:`fit`
and colours through :func:`paint`; no renderer keeps its own ``textwrap`` call or escape codes.

Width is display width (:mod:`cudaenv.render.width`): a Chinese character takes two terminal columns, and prose with
such characters (:func:`wrap`) may break between any two of them, never before a closing mark (``，。）``) nor after
an opening one, and never inside a word written in Latin letters, a path or a number. Text without a wide character
is measured and wrapped exactly as before (``len``), so English output does not change by a byte.

Not on the ``cudaenv use`` path: import it inside the functions that render (``textwrap`` only for text with tabs
or other whitespace it rewrites: :func:`wrap` does its greedy loop itself).
"""

from __future__ import annotations

from cudaenv.core.i18n import N_, t
from cudaenv.render.width import fit_wide, has_wide, wide_chunks, width_of

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds (it imports re): `cudaenv list` renders through here
    from typing import Dict, List, Mapping, Optional, Tuple

WIDTH = 80  # everything cudaenv prints fits 80 columns unless a narrower terminal asks for less
MIN_WIDTH = 40

# SGR codes by what they mark: a finding's severity or a check's mark, and two emphases.
COLORS: Dict[str, str] = {"ok": "32", "info": "36", "warning": "33", "error": "31", "bold": "1", "dim": "2"}


# ------------------------------------------------------------------ terminal
def terminal_width(env: Mapping[str, str], default: int = WIDTH, cap: int = WIDTH) -> int:
    """The width to render for: ``COLUMNS`` when it is a sane number, else ``default``; never over ``cap`` (output
    stays readable and within the documented 80 columns) nor under ``MIN_WIDTH`` (a fix must stay legible)."""
    raw = (env.get("COLUMNS") or "").strip()
    width = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 6 else default
    return max(MIN_WIDTH, min(width, cap))


def color_enabled(is_tty: bool, env: Mapping[str, str]) -> bool:
    """Colours only on a terminal, and never with ``NO_COLOR`` set (any value, https://no-color.org) or ``TERM=dumb``."""
    return bool(is_tty) and "NO_COLOR" not in env and env.get("TERM") != "dumb"


def paint(text: str, what: str, color: bool) -> str:
    """``text`` in the colour of ``what`` (a key of :data:`COLORS`) when ``color``; unchanged otherwise."""
    return "\033[%sm%s\033[0m" % (COLORS[what], text) if color and what in COLORS else text


# ------------------------------------------------------------------ prose
# what a finding's fix needs beyond this shell, by its kind (data/findings.json's fix_kind); a command needs nothing
FIX_NEEDS = {"host": N_("needs an administrator or the host"), "reboot": N_("needs a reboot"),
             "user-code": N_("changes your program or how you run it")}


def fix_heading(kind: Optional[str]) -> str:
    """``fix:``, or ``fix (needs a reboot):`` where the fix is not a command this shell can run alone (in the run's
    language)."""
    needs = FIX_NEEDS.get(kind or "")
    return t("fix (%s):", t(needs)) if needs else t("fix:")


def fit(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters: the middle of a longer one becomes ``...`` (a path keeps both ends)."""
    if len(text) <= room and (text.isascii() or width_of(text) <= room):
        return text
    if not text.isascii() and has_wide(text):
        return fit_wide(text, room)
    if room <= 3:
        return text[:room]
    keep = room - 3
    return text[: keep // 2] + "..." + text[len(text) - (keep - keep // 2):]


def wrap(text: object, first: str = "", rest: Optional[str] = None, width: int = WIDTH, newlines: bool = True,
         long_words: str = "break") -> List[str]:
    """Prose as lines of at most ``width``: the first begins with ``first``, the others with ``rest`` (default: as
    wide as ``first`` in spaces). Never breaks at a hyphen (ids and flags stay whole).

    ``newlines``: a newline in ``text`` starts a new line (else it is a space). ``long_words``: a word longer than a
    line is ``"break"``-ed across lines, ``"fit"``-ted (its middle elided, for paths in a table) or ``"keep"``-t whole.
    Always at least one line (``first`` without its trailing blanks for an empty text).
    """
    if rest is None:
        rest = " " * width_of(first)
    s = str(text)
    paras = s.split("\n") if newlines else [s]
    out: List[str] = []
    wide = has_wide(s) or has_wide(first) or has_wide(rest)
    for i, para in enumerate(paras):
        lead = first if i == 0 else rest
        if wide and width > 0:
            para = para.replace("\n", " ").replace("\t", " ").replace("\r", " ").replace("\x0b", " ").replace("\x0c", " ")
            chunks = wide_chunks(para)
            if long_words == "fit":
                room = width - width_of(rest)
                chunks = [fit_wide(c, room) if width_of(c) > room else c for c in chunks]
            out += [line.rstrip() for line in _greedy(chunks, width, lead, rest, long_words == "break", width_of)] or [lead.rstrip()]
            continue
        if long_words == "fit":
            room = width - len(rest)
            para = " ".join(fit(w, room) if len(w) > room else w for w in para.split(" "))
        if width > 0 and not any(c in para for c in _REWRITTEN):
            lines = _greedy(_space_chunks(para), width, lead, rest, long_words == "break", len)
        else:
            import textwrap

            lines = textwrap.wrap(para, width=width, initial_indent=lead, subsequent_indent=rest,
                                  break_long_words=long_words == "break", break_on_hyphens=False)
        out += [line.rstrip() for line in lines] or [lead.rstrip()]
    return out


def wrap_labelled(text: str, label: str, rest: str, width: int = WIDTH) -> List[str]:
    """``label`` then ``text`` wrapped with words kept whole (``cudaenv: error: /a/path: no such file``); where the
    first word does not fit after the label (a long path), the label stands alone and the text starts the next line."""
    head = text.lstrip(" ").split(" ", 1)[0]
    if has_wide(head):  # Chinese breaks between characters: the first piece that cannot be cut (a path and its "：")
        head = wide_chunks(head)[0]
    if width_of(label) + width_of(head) > width and len(rest) < width_of(label):
        return [label.rstrip()] + wrap(text.lstrip(" "), rest, rest, width, long_words="keep")
    return wrap(text, label, rest, width, long_words="keep")


_REWRITTEN = "\t\n\x0b\x0c\r"  # the whitespace textwrap turns into spaces (and tabs it expands) before it splits


def _space_chunks(text: str) -> List[str]:
    """The words and the runs of spaces of ``text``, in order (``re.split("( +)", text)`` less its empty strings),
    without re: a report's lines wrap on `checkpoint inspect`'s path, whose start-up budget re alone would halve."""
    chunks: List[str] = []
    spaces = -1  # the spaces since the last word: one fewer than the pieces since it
    for piece in text.split(" "):
        spaces += 1
        if piece:
            if spaces:
                chunks.append(" " * spaces)
            chunks.append(piece)
            spaces = 0
    if spaces > 0:
        chunks.append(" " * spaces)
    return chunks


def _greedy(chunks: List[str], width: int, first: str, rest: str, break_long: bool, measure) -> List[str]:
    """The greedy loop of :func:`wrap`: ``chunks`` (words and runs of spaces, or for text with wide characters the
    pieces of :func:`cudaenv.render.width.wide_chunks`) as lines of at most ``width`` columns by ``measure``.

    With ``measure=len`` and :func:`_space_chunks` it is ``textwrap.wrap(text, width, initial_indent=first,
    subsequent_indent=rest, break_long_words=break_long, break_on_hyphens=False)`` for a text without the whitespace
    textwrap rewrites, without importing textwrap (its patterns cost more than rendering a report;
    tests/render/test_render_text.py checks the two agree); with ``measure=width_of`` a wide character counts two."""
    chunks = chunks[::-1]
    lines: List[str] = []
    while chunks:
        indent = rest if lines else first
        room = width - measure(indent)
        if lines and chunks[-1].strip() == "":
            del chunks[-1]  # a line after the first does not start with whitespace
        line: List[str] = []
        used = 0
        while chunks and used + measure(chunks[-1]) <= room:
            used += measure(chunks[-1])
            line.append(chunks.pop())
        if chunks and measure(chunks[-1]) > room:  # a word longer than a line
            if break_long:
                big, left = chunks[-1], 1 if room < 1 else room - used
                cut = cols = 0  # the characters of big that fit in what is left of the line (one at least on an empty line)
                while cut < len(big) and cols + measure(big[cut]) <= left:
                    cols += measure(big[cut])
                    cut += 1
                cut = max(cut, 0 if line else 1)
                line.append(big[:cut])
                chunks[-1] = big[cut:]
                if not chunks[-1]:
                    del chunks[-1]
            elif not line:
                line.append(chunks.pop())
        if line and line[-1].strip() == "":
            del line[-1]
        if line:
            lines.append(indent + "".join(line))
    return lines


# ------------------------------------------------------------------ shell commands
def shell_words(line: str) -> Tuple[List[str], str]:
    """(words, comment) of one shell line: quotes and backslashes keep a word whole; an unquoted ``#`` starting a
    word begins the comment (returned without the ``#``). Unbalanced quotes leave the rest as one word."""
    words: List[str] = []
    cur, quote, i = "", None, 0
    while i < len(line):
        ch = line[i]
        if quote:
            cur += ch
            if ch == "\\" and quote == '"' and i + 1 < len(line):
                cur += line[i + 1]
                i += 1
            elif ch == quote:
                quote = None
        elif ch == "\\" and i + 1 < len(line):
            cur += line[i : i + 2]
            i += 1
        elif ch in "'\"":
            cur += ch
            quote = ch
        elif ch in " \t":
            if cur:
                words.append(cur)
                cur = ""
        elif ch == "#" and not cur:
            return words, line[i + 1 :].strip()
        else:
            cur += ch
        i += 1
    if cur:
        words.append(cur)
    return words, ""


def wrap_command(item: str, indent: str, width: int = WIDTH) -> List[str]:
    """One fix item (a shell command, or ``# words``) as lines that paste into a shell as they are.

    A trailing comment (``    # why``, or an inline ``  # why``) goes above its command when the two do not fit on
    one line; a long command continues with `` \\`` between words, never inside a quoted word, a path or a comment;
    a single word longer than the line (a long path) is kept whole on a line of its own: breaking it would break the
    command, and the other words still fit.
    """
    if item.startswith("#"):
        return wrap(item[1:].strip(), indent + "# ", indent + "# ", width)
    out: List[str] = []
    for raw in item.split("\n"):
        ws = raw[: len(raw) - len(raw.lstrip())]
        words, comment = shell_words(raw)
        code = " ".join(words)
        if not words:
            out += wrap(comment, indent + ws + "# ", indent + ws + "# ", width) if comment else [indent + ws]
            continue
        if comment and width_of(indent + ws + code + "  # " + comment) <= width:
            out.append(indent + ws + code + "  # " + comment)
            continue
        if comment:
            out += wrap(comment, indent + ws + "# ", indent + ws + "# ", width)
        lines, cur, more = [], indent + ws + words[0], indent + ws + "    "
        for n, w in enumerate(words[1:], 2):
            end = "" if n == len(words) else " \\"
            if width_of(cur + " " + w + end) <= width:
                cur += " " + w
            else:  # a word too long for any line gets a line of its own: only that line sticks out
                lines.append(cur + " \\")
                cur = more + w
        out += lines + [cur]
    return out


_GLUE = "\u00a0"  # stands for a blank inside a quoted span while wrapping (printable() escapes a real one)
_QUOTES = "\"'`"
_OPENS_AFTER = " \t=(:"  # a quote opens a span only at the start of a word (not the apostrophe of "torch's")
_CLOSES_BEFORE = " \t),.;:|"
MAX_SPAN = 300


def _glue_quoted(text: str) -> str:
    """``text`` with the blanks inside each quoted span (``"import torch; print(x)"``, ``'nvidia|nouveau'``, a
    backticked command) made unbreakable, so wrapping happens between shell words only."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in _QUOTES and (i == 0 or text[i - 1] in _OPENS_AFTER):
            j = i + 1
            end = -1
            while j < n and j - i <= MAX_SPAN:
                k = text.find(c, j, i + MAX_SPAN + 1)
                if k < 0:
                    break
                if k + 1 == n or text[k + 1] in _CLOSES_BEFORE or text.startswith("'s", k + 1):  # `cmd`'s
                    end = k
                    break
                j = k + 1
            if end > 0:
                out.append(text[i:end + 1].replace(" ", _GLUE))
                i = end + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


# The words a long advice tail starts with when it is a command to paste (a shorter tail is kept whole anyway).
_COMMAND_WORDS = frozenset(("cudaenv", "sudo", "python", "python3", "pip", "nvidia-smi", "docker", "podman", "env", "export",
                            "ldconfig", "torchrun", "nvcc", "sh", "wget", "curl", "apt-get", "dnf"))


def _top_level(text: str, needle: str, start: int = 0) -> int:
    """Where ``needle`` first occurs in ``text`` from ``start`` outside parentheses, brackets and braces; -1 if not.
    (A bracket closes only one that is open; a needle starting with one is never found.) From one bracket to the
    next, by str.find: an advice text is read a character at a time otherwise, several times over."""
    depth = 0
    i = start
    while True:
        hit = text.find(needle, i)
        if hit < 0:
            return -1
        found = [k for k in (text.find(c, i) for c in "([{)]}") if k >= 0]
        bracket = min(found) if found else -1
        if depth == 0 and (bracket < 0 or hit < bracket):
            return hit
        if bracket < 0:
            return -1  # inside a bracket that never closes
        depth = depth + 1 if text[bracket] in "([{" else max(0, depth - 1)
        i = bracket + 1


def advice_command(text: str) -> Tuple[int, int, bool]:
    r"""Where the command of an advice item is, as ``(start, end, sure)``: the text after its last top-level ``": "``
    (or full-width ``"："``, in Chinese; or all of it), up to a note set off by three blanks or more, or by two before a parenthesis
    (``nvidia-smi    (on the host: ...)``). ``sure``: it
    is written as a command (such a note follows it, or it chains with ``&&``/``|`` or starts with a program), so
    a command longer than a line still pastes (`` \`` continuations); otherwise it is kept whole only when it
    fits on a line, and wrapped as prose when it does not."""
    start, i = 0, _top_level(text, ": ")
    while i >= 0:
        start = i + 2
        i = _top_level(text, ": ", start)
    if not text.isascii():  # a Chinese sentence ends its lead-in with a full-width colon, with no blank after it
        i = _top_level(text, "\uff1a", start)
        while i >= 0:
            start = i + 1
            i = _top_level(text, "\uff1a", start)
    notes = [i for i in (_top_level(text, "  (", start), _top_level(text, "   ", start)) if i >= 0]
    noted = bool(notes)  # a note set off by blanks: the text before it is written as a command
    aside = _top_level(text, "\uff08", start) if not text.isascii() else -1  # "cudaenv torch recommend（或 cudaenv fix）"
    if aside >= 0 and text[start:aside].split(" ", 1)[0] in _COMMAND_WORDS:
        notes.append(aside)  # a Chinese aside after a command ends it (it says nothing of the command)
    note = min(notes) if notes else -1
    end = note if note >= 0 else len(text)
    while end > start and text[end - 1] == " ":
        end -= 1
    cmd = text[start:end]
    words = cmd.split(" ")
    if words[0] in _COMMAND_WORDS:
        end = start + _command_end(cmd)  # "cudaenv verify runs a matmul ...": the command is "cudaenv verify"
        while end > start + 1 and text[end - 1] in ",;":
            end -= 1  # "... --plan, or --runfile FILE": the comma is the sentence's
        cmd = text[start:end]
    sure = noted or any(_top_level(cmd, op) >= 0 for op in (" && ", " | ", " || ")) or words[0] in _COMMAND_WORDS
    return start, end, sure


# words that start prose after a command (never an argument a command of the advice table takes)
_PROSE = frozenset(("and", "or", "the", "a", "an", "to", "if", "then", "which", "that", "when", "where", "whether", "for",
                    "with", "shows", "lists", "runs", "prints", "tells", "names", "is", "are", "it", "its", "says"))


def _possessive(word: str) -> bool:
    """``machine's``, ``NVIDIA's``, ``toolkits'``: an apostrophe that ends a word's letters is English, never a shell
    quote (one there would open a quoted span the command never closes)."""
    w = word.rstrip(".,;:)")
    return len(w) > 2 and w[-3].isalpha() and (w.endswith("'s") or w.endswith("s'"))


def _word_at(text: str, k: int) -> str:
    start = text.rfind(" ", 0, k) + 1
    end = text.find(" ", k)
    return text[start:end if end >= 0 else len(text)]


def _command_end(cmd: str) -> int:
    """Where a command that starts an advice item ends: before the first word, outside quotes, that starts prose
    (:data:`_PROSE`) or a parenthesis, or before the lower-case words that lead up to a possessive (``--probe "..."
    adds this machine's count``: prose from ``adds`` on; never the command's first two words); the whole text when
    none of them is there. Prose after a command is wrapped as prose, never continued with `` \\``."""
    quote = ""
    i = 0
    plain: List[int] = []  # where the words start that are lower-case letters only, since the last other word
    for k, ch in enumerate(cmd):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`" and not (ch == "'" and _possessive(_word_at(cmd, k))):
            quote = ch
        elif ch == " " and k > 0:
            word = cmd[k + 1:].split(" ", 1)[0]
            i += 1
            if i >= 1 and (word in _PROSE or word.startswith("(") or has_wide(word)) and k > len(cmd.split(" ", 1)[0]):
                return k  # (a word in Chinese is prose too)
            if i >= 2 and _possessive(word):
                return plain[0] if plain else k
            plain = plain + [k] if word.isalpha() and word.islower() and i >= 2 else []
    return len(cmd)


def wrap_quoted(text: str, first: str = "", rest: Optional[str] = None, width: int = WIDTH) -> List[str]:
    """Prose (already escaped) whose quoted spans (a backticked `import torch`, a "message") each stay on one line:
    wrapped between the other words; plain :func:`wrap` where a span is longer than a line."""
    rest = first if rest is None else rest
    lines = [line.replace(_GLUE, " ") for line in wrap(_glue_quoted(text), first, rest, width, newlines=False, long_words="keep")]
    if any(width_of(line) > width for line in lines):
        return wrap(text, first, rest, width, newlines=False)
    return lines


def wrap_advice(text: str, first: str, rest: str, width: int = WIDTH) -> List[str]:
    r"""An advice item (prose that names commands: ``Check it: python -c "import torch; print(x)"``) as lines that
    paste as they are, like :func:`wrap_command`'s: never broken inside a quoted span (``"..."``, ``'...'``, a
    backticked command) or a word (a path, a URL, ``--flag=value``); the command the item gives
    (:func:`advice_command`) starts a line of its own when it does not fit on the current one, and one longer than a
    line continues with `` \`` between shell words. ``text`` is already escaped (:func:`cudaenv.core.text.printable`)."""
    start, end, sure = advice_command(text)
    cmd = text[start:end]
    room = width - width_of(rest)
    if start == 0 and end == len(text) and not sure:
        cmd = ""  # a sentence, not a command
    if not cmd or (width_of(cmd) > room and not sure):
        lines = wrap(_glue_quoted(text), first, rest, width, newlines=False, long_words="keep")
        return [line.replace(_GLUE, " ") for line in lines]
    head, tail = text[:start].rstrip(" "), text[end:].strip(" ")
    lines = wrap(_glue_quoted(head), first, rest, width, newlines=False, long_words="keep") if head else []
    lines = [line.replace(_GLUE, " ") for line in lines]
    joint = "" if head.endswith("\uff1a") else " "  # no blank after a full-width colon
    if lines and width_of(lines[-1]) + len(joint) + width_of(cmd) <= width:
        lines[-1] += joint + cmd
    elif width_of(cmd) <= room or not lines and width_of(first) + width_of(cmd) <= width:
        lines.append((rest if lines else first) + cmd)
    else:
        cont = wrap_command(cmd, rest, width)
        if not lines:
            cont[0] = first + cont[0][len(rest):]
        lines += cont
    if tail and text[end:end + 1] in ("\uff08", ",", ";"):  # a Chinese aside, or the sentence's comma: it stays attached
        more = wrap(_glue_quoted(tail), lines[-1], rest, width, newlines=False, long_words="keep")
        lines[-1:] = [line.replace(_GLUE, " ") for line in more]
    elif tail:
        gap = "    " if width_of(lines[-1]) + 4 + tail.find(" ") <= width else ""
        more = wrap(_glue_quoted(tail), lines[-1] + gap if gap else rest, rest, width, newlines=False, long_words="keep")
        lines[-1:] = [line.replace(_GLUE, " ") for line in more] if gap else lines[-1:] + [line.replace(_GLUE, " ") for line in more]
    return lines


# ------------------------------------------------------------------ Markdown (strings from outside)
_MD_ALWAYS = frozenset("`*|<>")  # code spans, emphasis, table cells, HTML
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def backtick_run(text: str) -> int:
    """The longest run of backticks in ``text`` (a fence must be longer)."""
    longest = run = 0
    for c in text:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    return longest


def md_text(text: object) -> str:
    """A string from outside (a GPU name, a distro, a version) as Markdown text that shows as written: escaped for
    the terminal (:func:`cudaenv.core.text.printable`), on one line, and backslash-escaped where Markdown or HTML would act
    on it: ``` ` * | < > ``` always, ``_`` at a word's edge (``sm_90`` stays as is), ``]`` before ``( [ :`` (a link),
    ``~~``, and a backslash before punctuation (``\\x1b`` from printable stays as is)."""
    from cudaenv.core.text import printable

    s = printable(str(text).replace("\n", " "))
    out = []
    for i, c in enumerate(s):
        before = s[i - 1] if i else " "
        after = s[i + 1] if i + 1 < len(s) else " "
        if (c in _MD_ALWAYS or (c == "_" and not (before.isalnum() and after.isalnum()))
                or (c == "]" and after in "([:") or (c == "~" and "~" in (before, after))
                or (c == "\\" and after in _ASCII_PUNCT)):
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def md_code(text: object) -> str:
    """A string from outside (a path, a value) as one Markdown code span that holds it whatever it contains: the
    fence is one backtick longer than any run inside it; ``|`` is escaped (GFM reads it as a cell border even there)."""
    from cudaenv.core.text import printable

    s = printable(str(text).replace("\n", " "))
    fence = "`" * (backtick_run(s) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ") and s.strip()) else ""
    return fence + pad + s.replace("|", "\\|") + pad + fence


def md_inline(text: object) -> str:
    """Text cudaenv composed around outside values (a finding's title or detail, which may use `code` itself):
    escaped for the terminal, on one line, HTML made inert (``<`` and ``>`` as entities) and ``|`` escaped."""
    from cudaenv.core.text import printable

    s = printable(str(text).replace("\n", " "))
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
