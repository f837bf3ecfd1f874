"""`cudaenv explain`'s whole answer from the service's outcome (cudaenv.pasted.service): the text (the note of a
cut paste, the matches, this machine's context, the pasted facts), the JSON, and ``--list``. Pure."""

from cudaenv.render.explain import context_lines, cut_note, render_match, render_unknown, with_notes
from cudaenv.render.pasted import render_machine, render_pasted
from cudaenv.render.pasted_context import machine_context_lines
from cudaenv.render.json_out import dumps
from cudaenv.render.text import WIDTH


def render_catalog(catalog, as_json: bool = False, width: int = WIDTH) -> str:
    """``--list``: every error id with its title, the titles in a column wrapped to ``width`` (an id wider than its
    column puts its title on the next line), or the ErrorCatalog JSON."""
    if as_json:
        from cudaenv.explain import ErrorCatalog

        return dumps(ErrorCatalog(tuple(catalog)).to_dict())
    from cudaenv.core.i18n import t
    from cudaenv.render.text import wrap

    column = max(12, min(33, width - 40))  # 80 columns: the id column of 33 it always had
    out = []
    for entry in catalog:
        if len(entry.id) < column:
            out += wrap(t(entry.title), entry.id.ljust(column), " " * column, width, newlines=False)
        else:
            out.append(entry.id)
            out += wrap(t(entry.title), " " * column, " " * column, width, newlines=False)  # a title of data/error_patterns.json
    return "".join(line + "\n" for line in out)


def render_explain_json(outcome) -> str:
    """``--json``: the ExplainReport, its ``context`` the sentences of the text, ``context_data`` the same as data."""
    from cudaenv.explain import ExplainReport

    matches = [with_notes(m) for m in outcome.matches]  # the ranking notes, in English
    context = (tuple(context_lines(outcome.contexts[0])) if matches else ()) + machine_context_lines(outcome.machine)
    paste = outcome.paste
    report = ExplainReport(bool(matches), matches[0] if matches else None, tuple(matches[1:]), context,
                           outcome.json_facts(), {"size": paste.size, "stopped": paste.stopped} if outcome.cut else None,
                           outcome.context_data(), tuple(outcome.findings))
    return dumps(report.to_dict())


def render_explain_text(outcome, width: int = WIDTH, every: bool = False) -> str:
    """The first match (``every``: each one) with its context, then this machine's context and the pasted facts."""
    paste = outcome.paste
    note = cut_note(paste.size, paste.stopped, paste.unit) + "\n" if outcome.cut else ""
    here = machine_context_lines(outcome.machine)
    tail = "".join("\n" + b for b in (render_machine(here, width), render_pasted(outcome.pasted, outcome.findings, width)) if b)
    matches = outcome.matches
    if not matches:
        return note + (tail.lstrip("\n") if outcome.pasted is not None else render_unknown(width) + tail)
    shown = matches if every else matches[:1]
    blocks = [render_match(m, width, context_lines(outcome.contexts[i]), matches if (i == 0 and not every) else ())
              for i, m in enumerate(shown)]
    return note + "\n".join(blocks) + tail
