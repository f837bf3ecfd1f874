"""Asking the person at the terminal: the one home of cudaenv's questions (``uninstall``'s ``[y/N]``, ``fix``'s menus).

Commands ask through these, never with ``input()`` or their own reads of stdin; a question with no terminal to ask
on is the caller's to refuse (:func:`can_ask`). questionary is imported only when a menu is shown.
"""

import sys


def can_ask(ctx, menu: bool = False) -> bool:
    """Whether there is a person to ask: stdin is a terminal (``menu``: stdout too, where questionary draws)."""
    stdin = ctx.stdin if ctx.stdin is not None else sys.stdin
    try:
        return stdin is not None and bool(stdin.isatty()) and (not menu or ctx.is_tty)
    except (AttributeError, ValueError):
        return False


def yes_no(ctx, question: str) -> bool:
    """``question [y/N] `` on ctx.out, one line read from stdin: True for y or yes (any case), no by default."""
    stdin = ctx.stdin if ctx.stdin is not None else sys.stdin
    ctx.out.write("%s [y/N] " % question)
    ctx.out.flush()
    return stdin.readline().strip().lower() in ("y", "yes")


def select(question: str, titles):
    """A menu of ``titles``: the index picked, or None when the person left it (Ctrl-C, Escape)."""
    import questionary

    return questionary.select(question, choices=[questionary.Choice(t, value=i) for i, t in enumerate(titles)]).ask()


def confirm(question: str) -> bool:
    """A yes/no menu, yes by default (questionary's)."""
    import questionary

    return bool(questionary.confirm(question, default=True).ask())
