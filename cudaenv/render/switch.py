"""The installed toolkits as `cudaenv use` and `cudaenv link` list them after an error, and the ``use --write``
script. Pure and cheap (on the ``cudaenv use`` error path): render.text's own wrapping, no textwrap.
"""

from __future__ import annotations

from cudaenv.core.i18n import N_, t, tr
from cudaenv.core.text import printable
from cudaenv.render.text import WIDTH, wrap, wrap_labelled
from cudaenv.render.width import width_of
from cudaenv.toolkit.select import unique_toolkits
from cudaenv.core.version import version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Optional, Sequence

    from cudaenv.model.snapshot import Toolkit


def render_installed(toolkits: Sequence[Toolkit], system: str = "linux", width: int = WIDTH) -> str:
    """The installed toolkits, one per line: version, path, and which is active or linked; a row wider than
    ``width`` puts its path on a line of its own (a path is never cut)."""
    toolkits = unique_toolkits(toolkits, system)
    if not toolkits:
        return t("no CUDA toolkits found (looked in /usr/local/cuda-*, /opt,\nCUDA_HOME, CUDA_PATH, PATH, CUDAENV_TOOLKITS)")
    rows = []
    for tk in sorted(toolkits, key=lambda tk: (version_key(tk.version), tk.path), reverse=True):
        flags = [f for f, on in ((t("active"), tk.active), ("/usr/local/cuda", tk.is_link_target)) if on]
        said = t("(%s)", t(", ").join(flags)) if flags else ""  # (full-width in Chinese)
        row = "  %-10s %s%s" % (tk.version or "?", printable(tk.path), ("  " + said) if said else "")
        if width_of(row) > width:
            row = ("  %-10s %s" % (tk.version or "?", said)).rstrip() + "\n    " + printable(tk.path)
        rows.append(row)
    return t("installed CUDA toolkits:") + "\n" + "\n".join(rows)


def render_use_error(message: str, toolkits: Optional[Sequence[Toolkit]] = None, system: str = "linux",
                     candidates: Sequence[Toolkit] = (), width: int = WIDTH) -> str:
    """`cudaenv use`'s error on stderr: the message (wrapped to ``width``), the toolkits that matched an ambiguous spec,
    then every toolkit."""
    text = "\n".join(wrap_labelled(tr(message), "cudaenv: " + t("error: "), "  ", width)) + "\n"
    if candidates:
        text += t("matching:") + "\n%s\n" % render_installed(candidates, system, width).split("\n", 1)[-1]
    if toolkits is not None:
        text += render_installed(toolkits, system, width) + "\n"
    return text


def render_shell_error(message: str, width: int = WIDTH) -> str:
    """`cudaenv use`'s error when it cannot tell the shell, and how to name it."""
    hint = wrap_labelled(t("pass --shell bash|zsh|fish|pwsh (or set CUDAENV_SHELL)"), t("hint: "), "  ", width)
    return render_use_error(message, width=width) + "\n".join(hint) + "\n"


def render_switch_script(values) -> str:
    """The standalone bash script of ``cudaenv use --write`` (cudaenv.toolkit.project.switch_script's values in the
    shell/switch-cuda.bash template, each quoted for bash)."""
    from cudaenv import __version__
    from cudaenv.core.resources import read_shell_template
    from cudaenv.shells.posix import Bash

    bash = Bash()
    return bash.render_template(
        read_shell_template("switch-cuda.bash"),
        {"VERSION": __version__, "CUDA_VERSION": values.version, "ROOT": values.root, "LIB": values.lib, "LINK": values.link},
        raw={"KNOWN": " ".join(bash.quote(r) for r in values.known)},
    )


def render_link_error(outcome, width: int = WIDTH) -> str:
    """`cudaenv link`'s answer when the spec names no single toolkit: the message and what is installed."""
    said = "\n".join(wrap_labelled(tr(outcome.error), "cudaenv: " + t("error: "), "  ", width))
    return "%s\n%s\n" % (said, render_installed(outcome.toolkits, outcome.system, width))


def render_link_header(outcome, width: int = WIDTH) -> str:
    """The line on stderr before `cudaenv link`'s commands (none when there is nothing to run)."""
    from cudaenv.toolkit.select import LINK

    if not outcome.report.plan.commands:
        return ""
    where = LINK if outcome.root is None else t("%s inside %s", LINK, printable(outcome.root))
    said = wrap("cudaenv: " + t("to point %s at %s, run:", where, describe_toolkit(outcome.toolkit)), rest="  ",
                width=width, long_words="keep")
    return "\n".join(said) + "\n"


def render_link_notes(outcome) -> str:
    """What the link does not change (stderr, after the commands)."""
    return "".join(printable(tr(note)) + "\n" for note in outcome.report.notes)


def describe_toolkit(toolkit) -> str:
    """``CUDA 12.1.105 at /usr/local/cuda-12.1`` in the run's language (cudaenv.toolkit.switch.describe's English)."""
    return t("CUDA %s at %s", toolkit.version or t("(unknown version)"), printable(toolkit.path))


def render_switched(change) -> str:
    """`cudaenv use`'s confirmation on stderr in the run's language: the toolkit switched to, or what --off undid
    (the words of the change's English ``message``, which the English path prints as it is)."""
    if change.toolkit is not None:
        return describe_toolkit(change.toolkit)
    if not change.message:
        return ""
    if change.changes:
        return t("CUDA toolkit entries removed from this shell")
    return t("no CUDA toolkit entries in this shell; nothing to undo")


# `cudaenv use`'s own messages, by key (commands/use.py says them through use_message)
USE_MESSAGES = {
    "off-alone": N_("--off takes no VERSION, --local or --write"),
    "local-alone": N_("--local needs a VERSION: cudaenv use --local 12.1"),
    "ignored": N_("%s names no CUDA version; ignored"),
    "no-version": N_("no VERSION given and no .cuda-version here or in a parent directory"),
    "names-none": N_("%s names no CUDA version"),
    "wrote": N_("wrote %s (%s)"),
    "write-windows": N_("--write makes a bash script; on Windows use `cudaenv use VERSION --shell pwsh`"),
    "cannot-write": N_("cannot write %s: %s"),
    "shell-code": N_('this is shell code for your shell to run: source <(cudaenv use ...) or load the hook with '
                     'eval "$(cudaenv init %s)"'),
}


def use_message(what, *args) -> str:
    """`cudaenv use`'s message in the run's language: a key of :data:`USE_MESSAGES` with its values, ``wrote-script``
    (the path and the toolkit of ``--write``), an EnvChange (the confirmation), or a marked message (a SelectError's)."""
    if what == "wrote-script":
        path, toolkit = args
        return t("wrote %s: `source %s` switches a shell to %s", path, path, describe_toolkit(toolkit))
    if isinstance(what, str) and what in USE_MESSAGES:
        return t(USE_MESSAGES[what], *args)
    if hasattr(what, "changes"):
        return render_switched(what)
    return tr(what)
