"""Text forms of a torch recommendation and of a refresh: the text answer, requirements.txt, pyproject.toml."""

from typing import Any, List

from cudaenv.core.i18n import N_, t, tr
from cudaenv.core.text import printable


def render_text(rec: Any, width: int = 80) -> str:
    """The answer as a person reads it: within ``width`` columns, commands continued only between shell words."""
    from cudaenv.render.text import wrap, wrap_command

    def prose(text: str, first: str, rest: str) -> List[str]:
        return wrap(printable(tr(text)), first, rest, width, long_words="keep")

    lines: List[str] = []
    if rec.variant and getattr(rec, "installed_fits", False):
        head = t("Installed and fits: torch %s, %s. Nothing to install.", rec.torch_version, rec.variant)
    elif rec.variant:
        what = "torch %s, %s" % (rec.torch_version, rec.variant if rec.variant != "default" else t("plain PyPI wheel"))
        head = (t("Recommended: ") if rec.ok else t("Asked for (does not fit): ")) + what + (" (%s)" % rec.index_url if rec.index_url else "")
    elif getattr(rec, "asked_variant", None) and not any(c.variant == rec.asked_variant for c in rec.candidates or ()):
        head = t("%s has no torch %s.", rec.asked_variant, rec.torch_version or "")
    else:
        head = t("No torch %s build fits this machine.", rec.torch_version or "")
    lines += prose(head, "", "  ")
    lines += ["", t("Why:")]
    for r in rec.reasons:
        lines += prose(r, "  - ", "    ")
    if rec.commands:
        lines += ["", t("Install:")]
        for c in rec.commands:
            lines += wrap_command(tr(c), "  ", width)
    if getattr(rec, "mirror", None) and rec.commands:
        lines.append("")
        lines += prose(mirror_text(rec), t("mirror: "), "    ")
    if getattr(rec, "conda_install", None) is not None or getattr(rec, "solver", None) is not None:
        from cudaenv.render.conda import render_conda

        lines += render_conda(rec, width)
    if rec.alternatives:
        lines.append("")
        lines.append(t(("Options:" if getattr(rec, "installed_fits", False) else "Alternatives:") if rec.variant else "What to change:"))
        for a in rec.alternatives:
            lines += prose(a.summary, "  - ", "    ")
    if getattr(rec, "uv_auto", None):
        lines.append("")
        lines += prose(uv_auto_text(rec), t("uv: "), "    ")
    if rec.notes:
        lines.append("")
        for n in rec.notes:
            lines += prose(n, t("note: "), "      ")
    return "\n".join(lines) + "\n"


_HEADINGS = (N_("Options:"), N_("Alternatives:"), N_("What to change:"))  # render_text's, said with t()


def mirror_text(rec: Any) -> str:
    """How the install line uses the --mirror it names (data/torch_mirrors.json's layout)."""
    if rec.index_layout == "flat":
        return t("%s is a flat listing of wheels: pip and uv read it with --find-links (uv's index needs format = \"flat\", "
                 "pixi's [pypi-options] find-links); the local-tag pins keep PyPI's builds of the same version out. "
                 "`cudaenv torch mirror-check --mirror %s` checks that it serves this build", rec.mirror, rec.mirror)
    if rec.index_layout == "upstream":
        return t("%s sent its downloads back to the official index when last checked: it saves nothing there. "
                 "`cudaenv torch mirror-check --mirror %s` says what it does today", rec.mirror, rec.mirror)
    return t("%s mirrors the simple index: it is the only index for torch in this line (--index-url), so nothing falls "
             "back to another index. `cudaenv torch mirror-check --mirror %s` checks that it serves this build", rec.mirror,
             rec.mirror)


def uv_auto_text(rec: Any) -> str:
    """Why uv's ``--torch-backend=auto`` would pick another build than this one (it reads only the driver)."""
    auto = next((c for c in rec.candidates or () if c.variant == rec.uv_auto), None)
    why = ("; ".join(tr(p) for p in auto.problems) if auto is not None and auto.problems
           else t("it is newer, and uv takes the newest the driver runs"))
    return t("uv's --torch-backend=auto would pick %s: it reads only the driver, not the GPUs (astral-sh/uv#14742). "
             "%s. With uv, name the build: --torch-backend=%s", rec.uv_auto, why[:1].upper() + why[1:], rec.variant)


def render_requirements(rec: Any) -> str:
    """A requirements.txt snippet: the decision's own pins (``rec.packages``, :func:`cudaenv.recommend.install.packages`
    made them with the tables the decision was given). When they carry local tags (``torch==2.7.1+cu126``) the variant
    index is an ``--extra-index-url``: the tag already keeps PyPI's build of the same version from winning, and the
    plain pins (a torchaudio that is not rebuilt) may come from either index; else it is the ``--index-url``."""
    if not rec.variant:
        return "# no torch build fits this machine: see `cudaenv torch recommend`\n"
    out = ["# torch %s, %s (cudaenv torch recommend)" % (rec.torch_version, rec.variant)]
    if rec.index_url:
        pinned = any(p.endswith("+" + rec.variant) for p in rec.packages)  # a pin carries the variant's local tag
        out.append("%s %s" % ("--extra-index-url" if pinned else "--index-url", rec.index_url))
    out.extend(rec.packages)
    return "\n".join(out) + "\n"


def render_pyproject(rec: Any) -> str:
    if not rec.variant:
        return "# no torch build fits this machine: see `cudaenv torch recommend`\n"
    deps = ", ".join('"%s"' % p for p in rec.plain_packages)
    out = ["# torch %s, %s (cudaenv torch recommend)" % (rec.torch_version, rec.variant), "[project]", "dependencies = [%s]" % deps]
    if rec.index_url:
        name = "pytorch-%s" % rec.variant
        out += ["", "[[tool.uv.index]]", 'name = "%s"' % name, 'url = "%s"' % rec.index_url, "explicit = true", "", "[tool.uv.sources]"]
        out += ['%s = [{ index = "%s" }]' % (p.split("==", 1)[0], name) for p in rec.plain_packages]
    return "\n".join(out) + "\n"


def render_refresh(outcome: Any, width: int = 80) -> List[str]:
    """The lines `cudaenv torch refresh` prints on stdout for a refresh that learned something."""
    from cudaenv.render.text import wrap

    lines = [t("read %d index page(s) from %s%s", outcome.pages_read, outcome.base,
               t(" (%d could not be read)", outcome.pages_failed) if outcome.pages_failed else "")]
    if outcome.versions:
        lines.append(t("torch releases: %s to %s", outcome.versions[0], outcome.versions[-1]))
    lines.append(t("variants: %s", ", ".join(outcome.variants) or t("none")))
    if outcome.new_variants:
        lines.append(t("new since the bundled table: %s", ", ".join(outcome.new_variants)))
    if outcome.new_versions:
        lines.append(t("torch releases the bundled table does not know: %s", ", ".join(outcome.new_versions)))
    for n in outcome.notes:
        lines += wrap(printable(tr(n)), t("note: "), "      ", width, long_words="keep")
    lines.append(t("cache written to %s", printable(outcome.cache_file)))
    return lines


def render_refresh_failure(outcome: Any, width: int = 80) -> List[str]:
    """The lines on stderr when the refresh cached nothing, within ``width`` columns."""
    from cudaenv.render.text import wrap

    lines = wrap(printable(tr(outcome.message)), "cudaenv: ", "  ", width, long_words="keep")
    for n in grouped_notes(outcome.notes)[:3]:
        lines += wrap(printable(n), "  - ", "    ", width, long_words="keep")
    if outcome.cache_note:
        lines += wrap(printable(tr(outcome.cache_note)), t("note: "), "      ", width, long_words="keep")
    return lines


def grouped_notes(notes: List[str]) -> List[str]:
    """``cu126: X`` and ``cu128: X`` said once: ``cu126, cu128: X`` (the summary line is left out)."""
    order: List[str] = []
    pages: dict = {}
    for note in notes:
        if note.startswith("nothing could be read"):
            continue
        note = tr(note)  # "cu126: " is a plain piece in every language; "root listing: " is said with a full-width colon
        cuts = [i for i in (note.find(": "), note.find("\uff1a")) if i >= 0]
        cut = min(cuts) if cuts else -1
        where, sep, why = (note[:cut], note[cut], note[cut + (2 if note[cut] == ":" else 1):]) if cut >= 0 else (note, "", "")
        if not sep or " " in where.replace("root listing", "root"):
            where, why = "", note
        if why not in pages:
            pages[why] = []
            order.append(why)
        if where:
            pages[why].append(where)
    out = []
    for why in order:
        where = pages[why]
        if len(where) > 3:
            where = where[:2] + [t("%d more", len(where) - 2)]
        out.append(("%s: %s" % (", ".join(where), why)) if where else why)
    return out
