"""`cudaenv init`'s words: the hook (its template filled in), the block ``--install`` appends, what it did. Pure."""

from cudaenv.toolkit.service import BEGIN, END


def render_hook(shell, template: str, version: str, commands) -> str:
    """The hook for ``shell``: its template with cudaenv's version and the subcommand list filled in."""
    return shell.render_template(template, {"VERSION": version, "COMMANDS": " ".join(commands)})


def render_block(hook_line: str, how: str) -> str:
    """The marked block appended to the rc file: delete it to remove the hook."""
    return "%s\n# added by `%s`; delete this block to remove it\n%s\n%s\n" % (BEGIN, how, hook_line, END)


def render_hook_installed(outcome) -> str:
    """What ``--install`` did (for stderr), in the reader's language (the hook line as it is: it is pasted)."""
    from cudaenv.core.i18n import t

    if outcome.kind == "present":
        return "cudaenv: " + t("the hook is already in %s; nothing changed", outcome.rc) + "\n"
    backup = t(" (backup: %s)", outcome.backup) if outcome.backup else ""
    return ("cudaenv: " + t("added the hook to %s%s", outcome.rc, backup) + "\n"
            + "cudaenv: " + t("open a new shell, or run: %s", outcome.shell.hook_line) + "\n")
