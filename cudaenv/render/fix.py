"""`cudaenv fix`'s text: the findings, the plan, the PEP 668 recipe, what the install did."""

from typing import Any, List, Sequence

from cudaenv.core.i18n import N_, t, tr
from cudaenv.core.text import printable, seconds_text
from cudaenv.render.text import WIDTH, wrap, wrap_command


_TEXTS = {  # the command's fixed lines, said in the reader's language when the command reads them (__getattr__)
    "PROBING": N_("Probing this machine...\n"),
    "DRY_RUN": N_("\n--dry-run: nothing was changed.\n"),
    "NO_BUILD": N_("\nNo torch build fits this machine; nothing was installed. See the plan above.\n"),
    "NO_TERMINAL": N_("\nNo terminal to ask on: run `cudaenv fix --yes` to apply the recommendation, or --dry-run.\n"),
    "UNCHANGED": N_("Nothing was changed.\n"),
    "QUESTION": N_("What should cudaenv do?"),
}


def __getattr__(name: str) -> str:
    """``PROBING``, ``DRY_RUN``, ... (the keys of ``_TEXTS``) in the language chosen for this run."""
    if name in _TEXTS:
        return t(_TEXTS[name])
    raise AttributeError(name)


def render_nothing_to_fix(torch: Any, width: int = WIDTH) -> str:
    """The doctor found no torch problem: which torch (or none) in which Python."""
    state = "torch %s" % torch.version if torch is not None and torch.installed else t("no torch")
    python = getattr(torch, "python", None) or "?"
    return "\n".join(wrap(t("Nothing to fix: the doctor found no torch problem (%s in %s).", printable(state), printable(python)),
                          width=width, long_words="keep")) + "\n"


def render_confirm(rec: Any) -> str:
    """The yes/no question before the install runs."""
    return t("Run: %s ?", " && ".join(rec.commands))


def render_running(argv: Sequence[str], timeout: float) -> str:
    return t("\nRunning (timeout %s): %s\n", seconds_text(timeout), " ".join(argv))


def render_verify_start(python: str) -> str:
    return t("\nRunning the GPU check: cudaenv verify --python %s\n", python)


def render_verify_output(output: str, timed_out: bool) -> str:
    """`cudaenv verify`'s output, each line escaped and marked, and whether it timed out."""
    return "".join("  | %s\n" % line for line in printable_lines(output)) + (t("cudaenv verify timed out.\n") if timed_out else "")


def render_findings(findings: Sequence[Any], width: int = WIDTH) -> str:
    out: List[str] = []
    for f in findings:
        out += [""] + wrap("[%s] %s" % (f.id, printable(tr(f.title))), rest="  ", width=width, long_words="keep")
        out += wrap(printable(tr(f.detail)), first="  ", width=width, long_words="keep")
    return "\n".join(out) + "\n" if out else ""


def render_plan(python: str, plan: Any, notes: Sequence[str], width: int = WIDTH) -> str:
    rec = plan.recommendation
    lines: List[str] = []
    for n in list(notes) + list(rec.notes):
        lines += wrap(printable(tr(n)), first=t("note: "), width=width, long_words="keep")
    lines += [""] + wrap(t("Plan for %s:", printable(python)), width=width, long_words="keep")
    for r in rec.reasons:
        lines += wrap(printable(tr(r)), first="  - ", width=width, long_words="keep")
    for i, choice in enumerate(plan.choices, 1):
        lines += wrap(printable(tr(choice.title)), first="  %d. " % i, width=width, long_words="keep")
        if choice.recommendation is not None:
            for cmd in choice.recommendation.commands:
                lines += wrap_command(cmd, "       ", width)
        for step in choice.steps:
            lines += wrap_command(tr(step), "       ", width)
    return "\n".join(lines) + "\n"


def render_pep668(python: str, recipe: Sequence[str]) -> str:
    """The venv recipe (fix.plan.pep668_recipe) beside an externally managed system Python."""
    steps = list(recipe) + [t("# then use ~/.venvs/torch/bin/python (or `source ~/.venvs/torch/bin/activate`)")]
    return t("\n%s is an externally managed system Python (PEP 668): cudaenv will not install into it.\n"
             "Make a virtual environment instead:\n%s", printable(python), "".join("  %s\n" % s for s in steps))


def render_driver(steps: Sequence[str]) -> str:
    return t("\nFix the driver:\n%sThen run `cudaenv fix` again.\n", "".join("  %s\n" % tr(s) for s in steps))


def render_install(outcome: Any, python: str, installer: str) -> str:
    lines: List[str] = ["  | %s" % line for line in printable_lines(outcome.output)]
    after = outcome.after.torch if outcome.after is not None else None
    now = after.version if after is not None and after.installed else None
    old = outcome.before
    if outcome.unreachable:
        return t("\nThe index cannot be reached (%s): the install was not run and nothing was changed.\n"
                 "Check the network or the index (--index-base, CUDAENV_TORCH_INDEX), then run `cudaenv fix` again.\n",
                 printable(outcome.unreachable))
    if not outcome.ok:
        if outcome.timed_out:
            lines.append(t("\nThe install was stopped after %s (CUDAENV_INSTALL_TIMEOUT).", seconds_text(outcome.timeout)))
        else:
            lines.append(t("\nThe install failed: %s exited with status %s after %s.",
                           outcome.argv[0] if installer not in ("uv", "conda", "pixi") else installer, outcome.code,
                           seconds_text(outcome.seconds)))
        lines.append(t("torch in %s is now: %s (before: %s).", python, now or t("not installed"), old or t("not installed")))
        if installer == "uv":
            lines.append(t("uv does not promise to restore the previous torch after a failure: check it before use."))
        elif installer in ("conda", "pixi"):
            lines.append(t("%s may have changed part of the environment before it stopped: check it with `cudaenv doctor` "
                           "before use.", installer))
        elif outcome.timed_out:
            lines.append(t("pip was killed mid-way, so the environment may be half-installed: "
                           "run `%s -m pip install --force-reinstall %s` to repair it.", python,
                           "torch==%s" % old if old else "torch"))
        else:
            lines.append(t("pip resolves and downloads everything before it removes the old torch, and puts the old one "
                           "back when installing the new one fails; it cannot promise that for a process that is killed."))
        return "\n".join(lines) + "\n"
    head = t("\nInstalled in %s. torch in %s: %s -> %s", seconds_text(outcome.seconds), python, old or t("not installed"),
             now or t("not installed"))
    if after is not None and after.installed:
        head += t(" (CUDA %s, cuda.is_available() = %s)", after.cuda or t("none"), after.cuda_available)
    lines.append(head)
    lines += [t("still: [%s] %s", f.id, f.title) for f in outcome.remaining]
    if not outcome.remaining:
        lines.append(t("The doctor finds no torch problem now."))
    return "\n".join(lines) + "\n"


def printable_lines(text: str) -> List[str]:
    return [printable(line) for line in (text or "").splitlines()]
