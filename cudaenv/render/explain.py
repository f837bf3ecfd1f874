"""`cudaenv explain` as text: a classified error (id, title, what matched, why, this machine's context, what to do).

Everything that came from the paste or the probe (the matched text, the values filled into the explanation,
details and advice, an assertion's text, the probe's context lines) passes through
:func:`cudaenv.core.text.printable`. Lines fit ``width`` (80, or a narrower ``COLUMNS``).
"""

from typing import List, Optional, Sequence

from cudaenv.explain import MAX_TEXT, ErrorMatch, ProbeContext
from cudaenv.render.text import WIDTH, fit, wrap, wrap_advice, wrap_quoted
from cudaenv.render.width import width_of
from cudaenv.core.i18n import N_, t, tr
from cudaenv.core.text import printable

UNKNOWN_ADVICE = (
    N_("Paste the whole error: from 'Traceback (most recent call last)' down to the last line, plus any "
       "'UserWarning: CUDA initialization' lines printed before it."),
    N_("Include the machine's facts: cudaenv doctor --format markdown"),
    N_("Run real work on each GPU, which classifies what fails: cudaenv verify"),
    N_("Asynchronous CUDA errors point at the wrong line: rerun with CUDA_LAUNCH_BLOCKING=1 and paste that error"),
)


UNITS = (N_("characters"), N_("bytes"))  # what the size of a cut paste counts (cudaenv.explain.Paste.unit)


def _prose(text: str, indent: str, width: int) -> List[str]:
    """A paragraph, never broken inside a quoted phrase (`import torch`, `sudo make`)."""
    return wrap_quoted(printable(tr(text)), indent, indent, width)


def _advice(text: str, width: int) -> List[str]:
    """An advice item as lines that paste as they are: broken between words, never inside a quoted span or a path."""
    return wrap_advice(printable(tr(text)), "    - ", "      ", width)


def cut_note(size: int, stopped: bool = False, unit: str = "characters") -> str:
    """One line saying that only the head and tail of a long paste were searched."""
    return t("(the text is %s %s long%s: cudaenv searched its first and last %s)",
             "{:,}".format(size), t(unit), t(" or more (reading stopped there)") if stopped else "", "{:,}".format(MAX_TEXT // 2))


def cuda_names(count: int, limit: int, none: str = "") -> str:
    """``cuda:0, cuda:1, ...`` for ``count`` devices (at most ``limit``), or ``none`` without one: the names CUDA gives
    the GPUs it sees, here and in :mod:`cudaenv.render.pasted_context`."""
    return ", ".join("cuda:%d" % i for i in range(min(count, limit))) or none


def context_lines(ctx: Optional[ProbeContext]) -> List[str]:
    """Sentences about this machine that sharpen an explanation: what :func:`cudaenv.explain.probe_context` found in
    the probe's facts (None: no facts). Unescaped: :func:`render_match` escapes what it shows."""
    if ctx is None:
        return []
    where = ctx.python or t("this Python")
    if ctx.import_error:
        return [t("torch does not import in %s: %s", where, ctx.import_error)]
    lines: List[str] = []
    if ctx.device_count is not None:
        lines.append(t("Here torch sees %d GPU(s): %s.", ctx.device_count, cuda_names(ctx.device_count, 64, t("no GPU"))))
    if ctx.visible is not None:
        lines.append(t("CUDA_VISIBLE_DEVICES=%r in this environment.", ctx.visible))
    if ctx.missing_device is not None:
        lines.append(t("Use map_location=%r here (cuda:%s does not exist).", ctx.map_location, ctx.missing_device))
    if ctx.torch_version:
        lines.append(t("torch %s in %s (built for CUDA %s).", ctx.torch_version, where, ctx.torch_cuda or t("none: a CPU build")))
    if ctx.arch_list:
        lines.append(t("This torch has kernels for: %s.", " ".join(ctx.arch_list)))
    lines += [t("cuda:%d %s is %s.", *gpu) for gpu in ctx.gpus]
    return lines


CONFIDENCE_WORDS = {"high": N_("high"), "medium": N_("medium"), "low": N_("low")}  # how sure a match is (explain/rank.py)
# why a match ranks where it does: each (kind, value) note of explain/rank.py (NOTE_KINDS) as a sentence; a template
# with %s names the value (a context kind: pip, traceback-frame; a cause's id)
RANK_NOTES = {
    "context-line": N_("matched on a %s line, which is not an error itself"),
    "boilerplate": N_("matched in the boilerplate torch adds to every CUDA error"),
    "wrapper": N_("matched in a message that wraps another error"),
    "explained-after": N_("explained by %s, printed after it"),
    "follows": N_("follows the earlier %s, its cause"),
    "warning": N_("a warning, not the failure"),
    "chained": N_("raised while handling an earlier error (chained traceback)"),
    "glued": N_("found only by joining lines a terminal wrapped mid-word"),
    "fuzzy": N_("found with one word missing or mistyped"),
    "short": N_("a short match on a line that reports no error"),
}


def with_notes(match: ErrorMatch) -> ErrorMatch:
    """``match`` with its ranking notes (``why``) said in English in ``notes``, as the JSON writes them."""
    from cudaenv.model.record import replace

    return replace(match, notes=tuple(rank_note(n, english=True) for n in match.why)) if match.why else match


def rank_note(note: Sequence[str], english: bool = False) -> str:
    """One ranking note (``(kind, value)``, explain/rank.py) as a sentence in the reader's language; ``english``:
    in English whatever the language (the JSON's ``notes``)."""
    kind, value = note
    template = RANK_NOTES[kind]
    args = (value,) if "%s" in template else ()
    if english:
        return template % args if args else template
    return t(template, *args)


def render_match(match: ErrorMatch, width: int = WIDTH, context: Sequence[str] = (), others: Sequence[ErrorMatch] = ()) -> str:
    out = wrap("%s: %s" % (match.id, printable(tr(match.title))), "", "  ", width, newlines=False)
    if match.matched:
        head = "  " + t("matched: ")
        out.append(head + fit(printable(" ".join(match.matched.split())), width - width_of(head)))
    if match.confidence in ("medium", "low"):
        why = t("; ").join(rank_note(n) for n in match.why)
        out += wrap(t("confidence: %s%s", t(CONFIDENCE_WORDS.get(match.confidence, match.confidence)), t(" (%s)", why) if why else ""), "  ", "    ", width,
                    newlines=False)
    out.append("")
    out += _prose(match.explanation, "  ", width)
    for line in list(match.details) + list(context):
        out += _prose(line, "  ", width)
    if match.advice:
        out.append("")
        out.append("  " + t("What to do:"))
        for item in match.advice:
            out += _advice(item, width)
    rest = [m for m in others if m.id != match.id]
    if rest:
        out.append("")
        out += wrap(t("Also in this text: %s", ", ".join("%s (%s)" % (m.id, tr(m.title)) for m in rest)), "  ", "  ", width, newlines=False)
        out.append("  " + t("(cudaenv explain --all shows each)"))
    return "\n".join(out) + "\n"


def render_unknown(width: int = WIDTH) -> str:
    out = [t("cudaenv did not recognise this error."), "", "  " + t("What to paste:")]
    for item in UNKNOWN_ADVICE:
        out += _advice(t(item), width)
    return "\n".join(out) + "\n"
