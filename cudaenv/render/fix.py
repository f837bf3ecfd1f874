"""`cudaenv fix`'s text: the findings, the plan, the PEP 668 recipe, what the install did."""

from typing import Any, List, Sequence

from cudaenv.core.text import printable, seconds_text
from cudaenv.render.text import WIDTH, wrap, wrap_command


def render_findings(findings: Sequence[Any], width: int = WIDTH) -> str:
    out: List[str] = []
    for f in findings:
        out += [""] + wrap("[%s] %s" % (f.id, printable(f.title)), rest="  ", width=width, long_words="keep")
        out += wrap(printable(f.detail), first="  ", width=width, long_words="keep")
    return "\n".join(out) + "\n" if out else ""


def render_nothing_to_fix(state: str, python: str, width: int = WIDTH) -> str:
    return "\n".join(wrap("Nothing to fix: the doctor found no torch problem (%s in %s)." % (printable(state), printable(python)),
                          width=width, long_words="keep")) + "\n"


def render_plan(python: str, plan: Any, notes: Sequence[str], width: int = WIDTH) -> str:
    rec = plan.recommendation
    lines: List[str] = []
    for n in list(notes) + list(rec.notes):
        lines += wrap(printable(n), first="note: ", width=width, long_words="keep")
    lines += [""] + wrap("Plan for %s:" % printable(python), width=width, long_words="keep")
    for r in rec.reasons:
        lines += wrap(printable(r), first="  - ", width=width, long_words="keep")
    for i, choice in enumerate(plan.choices, 1):
        lines += wrap(printable(choice.title), first="  %d. " % i, width=width, long_words="keep")
        if choice.recommendation is not None:
            for cmd in choice.recommendation.commands:
                lines += wrap_command(cmd, "       ", width)
        for step in choice.steps:
            lines += wrap_command(step, "       ", width)
    return "\n".join(lines) + "\n"


def render_pep668(python: str, plan: Any) -> str:
    from cudaenv.recommend.install import quote, venv_recipe

    choice = plan.installable[0] if plan.installable else None
    rec = choice.recommendation if choice else None
    args = " ".join(rec.packages) if rec is not None and rec.packages else "torch"
    if rec is not None and rec.index_url:
        args += " --index-url %s" % rec.index_url
    steps = venv_recipe(quote(python, "linux"), args) + ["# then use ~/.venvs/torch/bin/python (or `source ~/.venvs/torch/bin/activate`)"]
    return ("\n%s is an externally managed system Python (PEP 668): cudaenv will not install into it.\n"
            "Make a virtual environment instead:\n%s" % (printable(python), "".join("  %s\n" % s for s in steps)))


def render_driver(steps: Sequence[str]) -> str:
    return "\nFix the driver:\n%sThen run `cudaenv fix` again.\n" % "".join("  %s\n" % s for s in steps)


def render_install(outcome: Any, python: str, installer: str) -> str:
    lines: List[str] = ["  | %s" % line for line in printable_lines(outcome.output)]
    t = outcome.after.torch if outcome.after is not None else None
    now = t.version if t is not None and t.installed else None
    old = outcome.before
    if outcome.unreachable:
        return ("\nThe index cannot be reached (%s): the install was not run and nothing was changed.\n"
                "Check the network or the index (--index-base, CUDAENV_TORCH_INDEX), then run `cudaenv fix` again.\n"
                % printable(outcome.unreachable))
    if not outcome.ok:
        if outcome.timed_out:
            lines.append("\nThe install was stopped after %s (CUDAENV_INSTALL_TIMEOUT)." % seconds_text(outcome.timeout))
        else:
            lines.append("\nThe install failed: %s exited with status %s after %s." % (
                outcome.argv[0] if installer != "uv" else "uv", outcome.code, seconds_text(outcome.seconds)))
        lines.append("torch in %s is now: %s (before: %s)." % (python, now or "not installed", old or "not installed"))
        if installer == "uv":
            lines.append("uv does not promise to restore the previous torch after a failure: check it before use.")
        elif outcome.timed_out:
            lines.append("pip was killed mid-way, so the environment may be half-installed: "
                         "run `%s -m pip install --force-reinstall %s` to repair it." % (python, "torch==%s" % old if old else "torch"))
        else:
            lines.append("pip resolves and downloads everything before it removes the old torch, and puts the old one back "
                         "when installing the new one fails; it cannot promise that for a process that is killed.")
        return "\n".join(lines) + "\n"
    head = "\nInstalled in %s. torch in %s: %s -> %s" % (seconds_text(outcome.seconds), python, old or "not installed", now or "not installed")
    if t is not None and t.installed:
        head += " (CUDA %s, cuda.is_available() = %s)" % (t.cuda or "none", t.cuda_available)
    lines.append(head)
    lines += ["still: [%s] %s" % (f.id, f.title) for f in outcome.remaining]
    if not outcome.remaining:
        lines.append("The doctor finds no torch problem now.")
    return "\n".join(lines) + "\n"


def printable_lines(text: str) -> List[str]:
    return [printable(line) for line in (text or "").splitlines()]
