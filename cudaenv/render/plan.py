"""Text and JSON of a removal plan and of ``--check`` residue. Pure: returns strings."""

from cudaenv.render.json_out import dumps
from typing import List, Sequence

from cudaenv.core.i18n import N_, t, tr
from cudaenv.render.text import WIDTH, wrap, wrap_command
from cudaenv.shells.posix import quote_exact
from cudaenv.core.text import printable
from cudaenv.toolkit.uninstall.records import Plan
from cudaenv.toolkit.uninstall.rcfiles import EDIT_LINES_CODE
from cudaenv.toolkit.uninstall.residue import Residue

_PROMPT = "     $ "
_EDITOR = "<line editor: its code is in --script/--json>"  # keeps FILE.cudaenv-backup, checks each line


def _cmd(argv: Sequence[str], sudo: bool) -> str:
    shown = " ".join(quote_exact(_EDITOR) if a == EDIT_LINES_CODE else quote_exact(a) for a in argv)
    return ("sudo " if sudo else "") + shown


def render_plan_text(plan: Plan, width: int = WIDTH) -> str:
    """The plan for a person: prose wrapped to ``width``; each command paste-safe, continued with `` \\`` only
    between shell words (render.text.wrap_command); ``sudo`` only where the plan says it is needed and present."""
    lines: List[str] = []
    if plan.targets:
        targets = t("; ").join(t("CUDA %s at %s (%s)", printable(tk.version or "?"), printable(tk.path),
                              printable(t("unknown") if tk.install_method == "unknown" else tk.install_method))
                            for tk in plan.targets)
        lines += wrap(t("Plan: remove %s", targets), "", "  ", width, long_words="keep")
    lines += wrap(t("cudaenv removes nothing itself: run these steps yourself, or write them as a script with --script FILE."),
                  "", "", width)
    for warning in plan.in_use:
        lines += [""] + wrap(t("IN USE: %s", printable(tr(warning))), "", "  ", width, long_words="keep")
    if not plan.steps:
        lines += ["", t("Nothing to remove.")]
    for n, step in enumerate(plan.steps, 1):
        tags = [tag for tag, on in ((N_("root"), step.needs_root), (N_("removes"), step.destructive)) if on]
        lines.append("")
        head = "%d. %s" % (n, ("[%s] " % t(", ").join(t(tag) for tag in tags)) if tags else "")
        lines += wrap(printable(tr(step.description)), head, "   ", width, long_words="keep")
        for d in step.details:
            lines += wrap(printable(tr(d)), "     ", "       ", width, long_words="keep")
        for argv in step.commands:
            cmd = wrap_command(_cmd(argv, step.needs_root and plan.sudo), " " * len(_PROMPT), width)
            lines += [_PROMPT + cmd[0][len(_PROMPT):]] + cmd[1:]
        if step.only_if is not None:
            lines += wrap(t("(only while %s)", printable(tr(step.only_if.describe()))), "     ", "      ", width, long_words="keep")
    if plan.choices:
        lines += ["", t("Choices:")]
        for c in plan.choices:
            lines += wrap(printable(tr(c)), "  ", "    ", width, long_words="keep")
    if plan.notes:
        lines += ["", t("Notes:")]
        for n in plan.notes:
            lines += wrap(printable(tr(n.message)), "  - ", "    ", width, long_words="keep")
    return "\n".join(lines) + "\n"


def render_script_written(path: str, width: int = WIDTH) -> str:
    """The line after the plan once ``--script FILE`` is written."""
    done = t("Wrote the plan to %s: read it, then run `bash %s` (asks before each step).", path, path)
    return "\n" + "\n".join(wrap(printable(done), "", "", width, long_words="keep")) + "\n"


def render_own_installs(installs) -> str:
    """The toolkits ``cudaenv install`` made that cudaenv is about to remove itself (before it asks)."""
    lines = [t("This removes (made by `cudaenv install`; nothing else is touched):")]
    for tk in installs:
        lines.append("  %s  %s" % (printable(tk.path), t("(CUDA %s, %d files)", printable(tk.version or "?"), tk.files)))
    return "\n".join(lines) + "\n"


def render_removed(outcome) -> str:
    """What cudaenv removed of its own installs, or that it removed nothing (the person said no)."""
    if outcome.declined:
        return t("Nothing removed.") + "\n"
    return "".join(t("Removed %s", printable(path)) + "\n" for path in outcome.removed)


def render_plan_json(plan: Plan) -> str:
    return dumps(plan.to_dict())


def render_residue_text(targets: Sequence[str], residue: Sequence[Residue], width: int = WIDTH) -> str:
    names = ", ".join(printable(x) for x in targets)
    if not residue:
        return "\n".join(wrap(t("Nothing is left of %s.", names), width=width, long_words="keep")) + "\n"
    lines = wrap(t("Still left of %s:", names), width=width, long_words="keep")
    for r in residue:
        lines += wrap("[%s] %s" % (r.kind, printable(tr(r.detail))), first="  - ", width=width, long_words="keep")
    lines += wrap(t("Run `cudaenv uninstall %s` again for a plan that removes it.", " ".join(quote_exact(x) for x in targets)),
                  width=width, long_words="keep")
    return "\n".join(lines) + "\n"


def render_residue_json(targets: Sequence[str], residue: Sequence[Residue]) -> str:
    from cudaenv.toolkit.uninstall.residue import ResidueReport

    return dumps(ResidueReport(tuple(targets), not residue, tuple(residue)).to_dict())
