"""Text and JSON of a removal plan and of ``--check`` residue. Pure: returns strings."""

import json
from cudaenv.shells.posix import quote_exact
from cudaenv.text import printable
from typing import Sequence

from cudaenv.toolkit.uninstall.plan import Plan
from cudaenv.toolkit.uninstall.rcfiles import EDIT_LINES_CODE
from cudaenv.toolkit.uninstall.residue import Residue

_EDITOR = "<line editor: keeps FILE.cudaenv-backup, checks each line; full code in --script/--json>"


def _cmd(argv: Sequence[str], root: bool) -> str:
    shown = " ".join(quote_exact(_EDITOR) if a == EDIT_LINES_CODE else quote_exact(a) for a in argv)
    return ("sudo " if root else "") + shown


def render_plan_text(plan: Plan) -> str:
    lines = []
    if plan.targets:
        lines.append("Plan: remove " + "; ".join("CUDA %s at %s (%s)" % (printable(t.version or "?"), printable(t.path), printable(t.install_method)) for t in plan.targets))
    lines.append("cudaenv removes nothing itself: run these steps yourself, or write them as a script with --script FILE.")
    for warning in plan.in_use:
        lines += ["", "IN USE: " + printable(warning)]
    if not plan.steps:
        lines += ["", "Nothing to remove."]
    for n, step in enumerate(plan.steps, 1):
        tags = [t for t, on in (("root", step.needs_root), ("removes", step.destructive)) if on]
        lines.append("")
        lines.append("%d. %s%s" % (n, ("[%s] " % ", ".join(tags)) if tags else "", printable(step.description)))
        for d in step.details:
            lines.append("     " + printable(d))
        for argv in step.commands:
            lines.append("     $ " + _cmd(argv, step.needs_root))
        if step.only_if is not None:
            lines.append("     (only while %s)" % printable(step.only_if.describe()))
    if plan.choices:
        lines += ["", "Choices:"] + ["  " + printable(c) for c in plan.choices]
    if plan.notes:
        lines += ["", "Notes:"] + ["  - %s" % printable(n.message) for n in plan.notes]
    return "\n".join(lines) + "\n"


def render_plan_json(plan: Plan) -> str:
    return json.dumps(plan.to_dict(), indent=2) + "\n"


def render_residue_text(targets: Sequence[str], residue: Sequence[Residue]) -> str:
    if not residue:
        return "Nothing is left of %s.\n" % ", ".join(printable(t) for t in targets)
    lines = ["Still left of %s:" % ", ".join(printable(t) for t in targets)]
    lines += ["  - [%s] %s" % (r.kind, printable(r.detail)) for r in residue]
    lines.append("Run `cudaenv uninstall %s` again for a plan that removes it." % " ".join(quote_exact(t) for t in targets))
    return "\n".join(lines) + "\n"


def render_residue_json(targets: Sequence[str], residue: Sequence[Residue]) -> str:
    from cudaenv.toolkit.uninstall.residue import ResidueReport

    return json.dumps(ResidueReport(tuple(targets), not residue, tuple(residue)).to_dict(), indent=2) + "\n"
