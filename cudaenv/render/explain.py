"""`cudaenv explain` as text: a classified error (id, title, what matched, why, this machine's context, what to do).

Everything that came from the paste or the probe (the matched text, the values filled into the explanation,
details and advice, an assertion's text, the probe's context lines) passes through
:func:`cudaenv.text.printable`. Lines fit ``width`` (80, or a narrower ``COLUMNS``).
"""

from typing import List, Sequence

from cudaenv.explain import MAX_TEXT, ErrorMatch
from cudaenv.render.text import WIDTH, fit, wrap, wrap_advice
from cudaenv.text import printable

UNKNOWN_ADVICE = (
    "Paste the whole error: from 'Traceback (most recent call last)' down to the last line, plus any "
    "'UserWarning: CUDA initialization' lines printed before it.",
    "Include the machine's facts: cudaenv doctor --format markdown",
    "Run real work on each GPU, which classifies what fails: cudaenv verify",
    "Asynchronous CUDA errors point at the wrong line: rerun with CUDA_LAUNCH_BLOCKING=1 and paste that error",
)


def _prose(text: str, indent: str, width: int) -> List[str]:
    return wrap(printable(text), indent, indent, width, newlines=False)


def _advice(text: str, width: int) -> List[str]:
    """An advice item as lines that paste as they are: broken between words, never inside a quoted span or a path."""
    return wrap_advice(printable(text), "    - ", "      ", width)


def cut_note(size: int, stopped: bool = False, unit: str = "characters") -> str:
    """One line saying that only the head and tail of a long paste were searched."""
    return "(the text is %s %s long%s: cudaenv searched its first and last %s)" % (
        "{:,}".format(size), unit, " or more (reading stopped there)" if stopped else "", "{:,}".format(MAX_TEXT // 2))


def render_match(match: ErrorMatch, width: int = WIDTH, context: Sequence[str] = (), others: Sequence[ErrorMatch] = ()) -> str:
    out = wrap("%s: %s" % (match.id, printable(match.title)), "", "  ", width, newlines=False)
    if match.matched:
        out.append("  matched: %s" % fit(printable(" ".join(match.matched.split())), width - len("  matched: ")))
    if match.confidence in ("medium", "low"):
        why = "; ".join(match.notes)
        out += wrap("confidence: %s%s" % (match.confidence, " (%s)" % why if why else ""), "  ", "    ", width, newlines=False)
    out.append("")
    out += _prose(match.explanation, "  ", width)
    for line in list(match.details) + list(context):
        out += _prose(line, "  ", width)
    if match.advice:
        out.append("")
        out.append("  What to do:")
        for item in match.advice:
            out += _advice(item, width)
    rest = [m for m in others if m.id != match.id]
    if rest:
        out.append("")
        out += wrap("Also in this text: " + ", ".join("%s (%s)" % (m.id, m.title) for m in rest), "  ", "  ", width, newlines=False)
        out.append("  (cudaenv explain --all shows each)")
    return "\n".join(out) + "\n"


def render_unknown(width: int = WIDTH) -> str:
    out = ["cudaenv did not recognise this error.", "", "  What to paste:"]
    for item in UNKNOWN_ADVICE:
        out += _advice(item, width)
    return "\n".join(out) + "\n"
