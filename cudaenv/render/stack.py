"""``cudaenv lock`` and ``doctor --against FILE``: what was locked, and each difference from the stack with the
commands that converge it, as text and as Markdown.

A stack file is untrusted (it came with a project): its values go through :func:`cudaenv.core.text.printable`, and
through the md_* helpers in Markdown.
"""

from __future__ import annotations

from typing import List

from cudaenv.core.i18n import N_, t, tn, tr
from cudaenv.core.text import printable
from cudaenv.render.text import WIDTH, md_code, md_inline, paint, wrap, wrap_command, wrap_labelled

WHAT = {
    "driver": N_("driver older than the stack's floor"),
    "gpu-arch": N_("a GPU architecture the stack was not locked on"),
    "cuda-major": N_("torch's CUDA major differs"),
    "torch": N_("another torch build"),
    "wheel": N_("a companion or CUDA wheel differs"),
    "toolkit": N_("another CUDA toolkit active"),
}


def render_locked(stack, path: str, width: int = WIDTH) -> str:
    """What ``cudaenv lock`` wrote, in a few lines, within ``width`` (the terminal's, at most 80)."""
    req = []
    if stack.torch:
        req.append("torch %s%s" % (printable(stack.torch), t(" from %s", printable(stack.torch_index)) if stack.torch_index else ""))
    if stack.driver_min:
        req.append(t("driver >= %s", printable(stack.driver_min)))
    if stack.gpu_archs:
        req.append(t("GPU compute %s", ", ".join(printable(a) for a in stack.gpu_archs)))
    if stack.toolkit:
        req.append(t("toolkit %s%s", printable(stack.toolkit), (" (%s)" % printable(stack.toolkit_source)) if stack.toolkit_source else ""))
    if stack.wheels:
        req.append(tn("%d CUDA wheel", "%d CUDA wheels", len(stack.wheels)))
    out = wrap(t("wrote %s: %s.", printable(path), t("; ").join(req) or t("no CUDA stack found (no driver, torch or toolkit)")),
               width=width, long_words="keep")
    out += wrap(t("Commit it with the project; check a machine with `cudaenv doctor --against %s`.", printable(path)), width=width,
                long_words="keep")
    return "\n".join(out) + "\n"


def _difference(d) -> str:
    have = printable(d.have) if d.have is not None else t("none")
    return t("%s: wants %s, has %s", t(WHAT[d.what]) if d.what in WHAT else printable(d.what), printable(d.wanted or "?"), have)


def against_headline(check) -> str:
    n = len(check.differences)
    where = t(" (locked on %s)", printable(check.locked_on)) if check.locked_on else ""
    if not n:
        return t("This machine holds the stack of %s%s.", printable(check.file), where)
    return tn("%d difference from the stack of %s%s:", "%d differences from the stack of %s%s:", n, n, printable(check.file), where)


def render_against_text(check, width: int = WIDTH, color: bool = False) -> str:
    out: List[str] = [""] + [paint(line, "bold", color) for line in wrap_labelled(printable(check.file), t("Against "), "  ", width)]
    out += wrap(against_headline(check), width=width)
    for d in check.differences:
        out += wrap(_difference(d), first="  - ", width=width)
        for c in d.commands:
            out += wrap(printable(tr(c)[2:]), first="      ", width=width) if c.startswith("# ") else wrap_command(
                printable(c), "      $ ", width=width)
        if d.what == "gpu-arch":
            out += wrap(t("no command converges this: run the stack on the GPUs it names, or lock it again on this one"),
                        first="      ", width=width)
        if d.what == "cuda-major" and not d.commands:
            out += wrap(t("the torch install line above converges it"), first="      ", width=width)
    return "\n".join(out) + "\n"


def render_against_markdown(check) -> str:
    out = ["", "### Against %s" % md_code(check.file), "", md_inline(against_headline(check)), ""]
    for d in check.differences:
        out.append("- %s" % md_inline(_difference(d)))
        cmds = [c for c in d.commands if not c.startswith("# ")]
        words = [c[2:] for c in d.commands if c.startswith("# ")]
        out += ["  - %s" % md_inline(w) for w in words]
        if cmds:
            out += ["", "  ```sh"] + ["  %s" % printable(c) for c in cmds] + ["  ```", ""]
    return "\n".join(out) + "\n"


def render_snippets(stack) -> str:
    """What carries the stack's choice into the project's own files: a pip requirements file and uv's pyproject
    tables (recommend's formats, :mod:`cudaenv.render.recommend`) and pixi's ``[system-requirements] cuda`` (the
    CUDA major the solver may assume: pixi.prefix.dev, "System Requirements")."""
    from cudaenv.render.recommend import render_pyproject, render_requirements
    from cudaenv.stack.lock import stack_recommendation

    rec = stack_recommendation(stack)
    out: List[str] = []
    if rec is not None:
        out += ["# ---- requirements.txt (pip, uv pip)", render_requirements(rec).rstrip("\n")]
        out += ["", "# ---- pyproject.toml (uv)", render_pyproject(rec).rstrip("\n")]
    if stack.cuda_major is not None:
        out += ["", "# ---- pixi.toml (or [tool.pixi.system-requirements] in pyproject.toml)", "[system-requirements]",
                'cuda = "%d"' % stack.cuda_major]
    if not out:
        out = ["# the stack names no torch build and no CUDA major: nothing to carry into a project file"]
    return "\n".join(printable(line) for line in "\n".join(out).split("\n")) + "\n"
