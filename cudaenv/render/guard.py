"""`cudaenv torch guard`'s words: what the install would do or did to torch, and the line that keeps or restores it."""

from cudaenv.core.i18n import t
from cudaenv.core.text import printable


def _nvidia(names) -> str:
    return ", ".join(printable(n) for n in sorted(names)) or t("none")


def render_guard(outcome) -> str:
    o = outcome
    before = o.before.version
    lines = []
    if before is None:
        lines.append(t("torch was not installed in %s before the install: nothing to guard.", printable(o.python or "?")))
    if o.blocked:
        command = " ".join(printable(a) for a in o.argv)
        lines.append(t("cudaenv torch guard: stopped before anything changed."))
        if o.removes:
            lines.append(t("%s's dry run of `%s` would uninstall torch %s and install none.", printable(o.planner or "pip"),
                           command, printable(before)))
        else:
            lines.append(t("%s's dry run of `%s` would replace torch %s with torch %s.", printable(o.planner or "pip"), command,
                           printable(before), printable(o.planned)))
        if o.keep:
            lines += [t("To keep this torch, install with it pinned (the installer then keeps it, or says which package cannot have it):"),
                      "  " + " ".join(_quote(a) for a in o.keep)]
        if o.keep_requirements:
            lines.append(t("To keep this torch, add these lines to the requirement files it syncs:"))
            lines += ["  " + printable(line) for line in o.keep_requirements]
        lines.append(t("To let the install replace torch anyway: cudaenv torch guard --allow-torch-change -- %s",
                       " ".join(_quote(a) for a in o.argv)))
        return "\n".join(lines) + "\n"
    if before is not None and o.planner is None:
        lines.append(t("cudaenv torch guard: no dry run is known for `%s` (pip, uv pip, conda, mamba and micromamba installs "
                       "have one): it ran as given, and torch was read again after it.", printable(o.argv[0])))
    elif before is not None and o.dry_error:
        lines.append(t("cudaenv torch guard: %s's dry run did not finish (%s): the install ran unguarded, and torch was "
                       "read again after it.", printable(o.planner), printable(o.dry_error)))
    elif before is not None and o.dry_code is not None:
        lines.append(t("cudaenv torch guard: %s's dry run failed (exit status %d): the install ran unguarded, and torch was "
                       "read again after it.", printable(o.planner), o.dry_code))
    if o.error:
        lines.append(t("cudaenv torch guard: the installer could not be started (%s): %s", printable(o.error), printable(o.argv[0])))
        return "\n".join(lines) + "\n"
    if o.timed_out:
        lines.append(t("cudaenv torch guard: the install ran past its time (CUDAENV_INSTALL_TIMEOUT) and was stopped."))
    elif o.code:
        lines.append(t("cudaenv torch guard: the install failed (exit status %d).", o.code))
    after = o.after.version if o.after is not None else None
    if before is not None and o.changed:
        lines.append(t("torch was replaced: %s -> %s.", printable(before), printable(after) if after else t("removed")))
        if _build(before) != _build(after):
            lines.append(t("Its build changed too: %s -> %s.", _build(before), _build(after)))
        lines.append(t("To bring back torch %s:", printable(before)))
        lines += ["  " + printable(line) for line in o.restore]
    elif before is not None:
        lines.append(t("torch %s is unchanged.", printable(before)))
    if o.nvidia_changed:
        lines.append(t("nvidia wheels before: %s", _nvidia(o.before.nvidia)))
        lines.append(t("nvidia wheels after:  %s", _nvidia(o.after.nvidia)))
    return "\n".join(lines) + "\n"


def _build(version) -> str:
    if not version:
        return t("none")
    tag = version.split("+", 1)[1] if "+" in version else ""
    return printable(tag) if tag else t("the default build of its index")


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(printable(arg))
