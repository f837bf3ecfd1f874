"""A removal Plan as a commented bash script (`cudaenv uninstall --script`). Pure: returns the text.

The script stops at the first failure (``set -euo pipefail``), asks before each step that removes or
changes something (``y`` runs it, ``s`` skips it and every step that needs it, anything else stops;
``--yes`` or ``CUDAENV_YES=1`` answers yes), skips a step whose residue is already gone, and reads every
path of the inspected system through ``$ROOT`` (``CUDAENV_SCRIPT_ROOT``; defaults to the ``--root`` the
plan was made with, empty for ``/``), so a plan made with ``--root DIR`` acts on DIR.
"""

from typing import List, Sequence

from cudaenv.shells.posix import quote_exact
from cudaenv.core.text import printable
from cudaenv.toolkit.uninstall.records import Guard, HostPath, Plan, Step
from cudaenv.toolkit.uninstall.rcfiles import EDIT_LINES_CODE

_PRELUDE = r"""set -euo pipefail

ROOT=${CUDAENV_SCRIPT_ROOT-%(root)s}
YES=${CUDAENV_YES:-0}
for arg in "$@"; do
  case "$arg" in
    -y|--yes) YES=1 ;;
    *) echo "usage: bash $0 [--yes]" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO=${SUDO-sudo}; fi
skipped=" "

# The line editor used for shell startup files and ld.so.conf.d: it keeps FILE.cudaenv-backup, checks that
# each line still reads exactly as shown (else it changes nothing and fails), and edits the file in place.
EDIT_LINES=$(cat <<'CUDAENV_EDIT_LINES'
%(edit)s
CUDAENV_EDIT_LINES
)

ask() {
  if [ "$YES" = 1 ]; then return 0; fi
  local answer
  if ! read -r -p "$1 [y = yes / s = skip / anything else = stop] " answer; then
    echo "no answer (no terminal?): stopping here; run with --yes to answer yes to every step" >&2
    exit 1
  fi
  case "$answer" in
    y|Y|yes|YES) return 0 ;;
    s|S|skip) return 1 ;;
    *) echo "stopped: nothing after this step was run" >&2; exit 1 ;;
  esac
}

was_skipped() {
  case "$skipped" in *" $1 "*) return 0 ;; esac
  return 1
}
"""


def _comment(text: str) -> str:
    return "# " + printable(text)  # newlines, escapes and undecodable bytes shown, never raw


def _arg(arg: str) -> str:
    if arg == EDIT_LINES_CODE:
        return '"$EDIT_LINES"'
    if isinstance(arg, HostPath):
        return '"$ROOT"' + quote_exact(arg)
    return quote_exact(arg)


def _display(argv: Sequence[str]) -> str:
    return " ".join("\"$EDIT_LINES\"" if a == EDIT_LINES_CODE else quote_exact(a) for a in argv)


def _guard(g: Guard) -> str:
    p = _arg(HostPath(g.path))
    if g.kind == "exists":
        return "{ [ -e %s ] || [ -L %s ]; }" % (p, p)
    if g.kind == "link-to":
        return '{ [ -L %s ] && [ "$(readlink -- %s)" = %s ]; }' % (p, p, quote_exact(g.value or ""))
    return "grep -qxF -- %s %s 2>/dev/null" % (quote_exact(g.value or ""), p)


def _echo(text: str) -> str:
    return "echo %s" % quote_exact(printable(text))


def _step(step: Step) -> List[str]:
    out = ["", _comment("--- %s: %s" % (step.id, step.description))]
    flags = [f for f, on in (("needs root", step.needs_root), ("removes or changes files", step.destructive)) if on]
    if flags:
        out.append(_comment("(%s)" % ", ".join(flags)))
    out.extend(_comment("  " + d) for d in step.details)
    for argv in step.commands:
        out.append(_comment("  $ %s%s" % ("sudo " if step.needs_root else "", _display(argv))))
    if not step.commands:
        out.append(_echo("%s: by hand: %s" % (step.id, step.description)))
        out.extend(_echo("    " + d) for d in step.details)
        return out
    branches = []
    for dep in step.after:
        branches.append(('was_skipped %s' % dep, ['%s; skipped="$skipped %s "' % (_echo("%s: skipped (%s was skipped)" % (step.id, dep)), step.id)]))
    if step.only_if is not None:
        branches.append(("! %s" % _guard(step.only_if), [_echo("%s: nothing to do: no longer true that %s" % (step.id, step.only_if.describe()))]))
    body = []
    for argv in step.commands:
        sudo = "$SUDO " if step.needs_root else ""
        body.append(_echo("+ %s%s" % ("sudo " if step.needs_root else "", _display(argv))) + " >&2")
        body.append(sudo + " ".join(_arg(a) for a in argv))
    if step.destructive:
        question = "%s: %s?" % (step.id, step.description)
        branches.append(("ask %s" % quote_exact(printable(question)), body))
        tail = ['skipped="$skipped %s "; %s' % (step.id, _echo("%s: skipped" % step.id))]
    else:
        tail = None
    if not branches:
        return out + body
    for i, (cond, lines) in enumerate(branches):
        out.append(("if " if i == 0 else "elif ") + cond + "; then")
        out.extend("  " + l for l in lines)
    out.append("else")
    out.extend("  " + l for l in (tail if tail is not None else body))
    out.append("fi")
    return out


def render_script(plan: Plan) -> str:
    """The plan as a bash script (``bash FILE`` or ``bash FILE --yes``)."""
    root = "" if plan.root in ("/", "") else plan.root
    lines = ["#!/usr/bin/env bash", _comment("Removal plan written by `cudaenv uninstall`; cudaenv itself removes nothing.")]
    for t in plan.targets:
        lines.append(_comment("Removes: CUDA %s at %s (%s)" % (t.version or "?", t.path, t.install_method)))
    lines += [
        _comment("Run: bash THIS_FILE   (asks before each step that removes or changes something)"),
        _comment("     bash THIS_FILE --yes   (or CUDAENV_YES=1: yes to every step)"),
        _comment("Paths are read through $ROOT (CUDAENV_SCRIPT_ROOT overrides it; empty means /)."),
        _comment("It stops at the first command that fails."),
    ]
    for warning in plan.in_use:
        lines.append(_comment("IN USE: " + warning))
    for note in plan.notes:
        lines.append(_comment("note: " + note.message))
    lines.append(_PRELUDE % {"root": quote_exact(root), "edit": EDIT_LINES_CODE})
    for warning in plan.in_use:
        lines.append(_echo("warning: " + warning) + " >&2")
    for step in plan.steps:
        lines.extend(_step(step))
    lines += ["", _echo("done. Check what is left with: cudaenv uninstall --check %s" % " ".join(printable(t.path) for t in plan.targets))]
    return "\n".join(lines) + "\n"
