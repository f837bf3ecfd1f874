"""`cudaenv torch mirror-check` as a person reads it: what was looked for, what the mirror's page says, the verdict
and the install lines for the mirror's layout."""

from typing import Any, List

from cudaenv.core.i18n import N_, t
from cudaenv.core.text import printable

VERDICT = {  # said in the reader's language (t)
    "ok": N_("the mirror serves this build itself%s."),
    "unreachable": N_("the mirror cannot be reached: %s."),
    "timeout": N_("the mirror did not answer in time: %s."),
    "http-error": N_("the mirror has no page for this build: %s."),
    "not-an-index": N_("the mirror answered with a page that is no index (an error page?): %s."),
    "missing": N_("the mirror does not list this build (torch %s for Python %s on %s)."),
    "lagging": N_("the mirror lags: its newest build of this kind is torch %s, not %s."),
    "upstream": N_("the mirror sends the download back upstream (%s): it saves nothing."),
    "hash-mismatch": N_("the mirror's file differs from the official one (sha256 %s, official %s): do not install it."),
}
LAYOUT_WORDS = {"simple": N_("a simple index"), "flat": N_("a flat listing of wheels"), None: N_("no index page read")}
SERVED_BY = {"mirror": N_("the mirror itself"), "upstream": N_("the official index (the link points upstream)"),
             "elsewhere": N_("another server")}


def _verdict(c: Any) -> str:
    s, w = c.source, c.want
    if c.verdict == "ok":
        tail = (t(", and its sha256 matches the official index's") if c.hash_match
                else t(" (its sha256 could not be compared with the official index's)"))
        return t(VERDICT["ok"], tail)
    if c.verdict in ("unreachable", "timeout", "http-error", "not-an-index"):
        return t(VERDICT[c.verdict], s.message or s.url)
    if c.verdict == "missing":
        return t(VERDICT["missing"], "%s+%s" % (w.torch_version, w.local) if w.local else w.torch_version,
                 w.python or t("any"), w.platform or t("any"))
    if c.verdict == "lagging":
        return t(VERDICT["lagging"], s.newest, w.torch_version)
    if c.verdict == "upstream":
        return t(VERDICT["upstream"], s.redirect or s.file_url)
    return t(VERDICT["hash-mismatch"], s.sha256, c.official.sha256 if c.official else "?")


def render_mirror_check(c: Any, width: int = 80) -> str:
    from cudaenv.render.text import wrap, wrap_command

    def prose(text: str, first: str = "", rest: str = "  ") -> List[str]:
        return wrap(printable(text), first, rest, width, long_words="keep")

    w, s = c.want, c.source
    layout = t(LAYOUT_WORDS[s.layout]) if s.layout in LAYOUT_WORDS else s.layout
    expected = t(" (data/torch_mirrors.json: %s)", c.expected_layout) if c.expected_layout else ""
    lines = prose(t("Mirror %s (%s): %s%s", c.mirror, c.base, layout, expected))
    wanted = "torch %s%s" % (w.torch_version, "+" + w.local if w.local else "")
    lines += prose(t("Looked for %s, Python %s, %s (the build `cudaenv torch recommend` picks here)",
                     wanted, w.python or t("any"), w.platform or t("any platform")))
    lines += prose(t("page: %s", s.url), "  ", "    ")
    if s.file:
        lines += prose(t("file: %s", s.file_url), "  ", "    ")
        where = t(SERVED_BY[s.served_by]) if s.served_by in SERVED_BY else s.served_by
        lines += prose(t("served by: %s%s", where, t("; a HEAD is redirected to %s", s.redirect) if s.redirect else ""),
                       "  ", "    ")
        lines += prose(t("sha256: %s", s.sha256 or t("not given by the page")), "  ", "    ")
        if c.official is not None:
            lines += prose(t("official sha256: %s (%s)", c.official.sha256 or t("not read"),
                             c.official.message or c.official.url), "  ", "    ")
    elif s.newest:
        lines += prose(t("newest of this kind listed: torch %s", s.newest), "  ", "    ")
    lines += [""] + prose(t("OK: %s", _verdict(c)) if c.ok else t("Not usable: %s", _verdict(c)))
    if c.ok and c.commands:
        lines += ["", t("Install from it:")]
        for line in c.commands:
            lines += wrap_command(line, "  ", width)
        if c.snippet:
            lines += ["", t("pixi (in the manifest):")] + ["  " + printable(x) for x in c.snippet if x]
    return "\n".join(lines) + "\n"
