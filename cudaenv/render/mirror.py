"""`cudaenv torch mirror-check` as a person reads it: what was looked for, what the mirror's page says, the verdict
and the install lines for the mirror's layout."""

from typing import Any, List

from cudaenv.core.text import printable

VERDICT = {
    "ok": "the mirror serves this build itself%s.",
    "unreachable": "the mirror cannot be reached: %s.",
    "timeout": "the mirror did not answer in time: %s.",
    "http-error": "the mirror has no page for this build: %s.",
    "not-an-index": "the mirror answered with a page that is no index (an error page?): %s.",
    "missing": "the mirror does not list this build (torch %s for Python %s on %s).",
    "lagging": "the mirror lags: its newest build of this kind is torch %s, not %s.",
    "upstream": "the mirror sends the download back upstream (%s): it saves nothing.",
    "hash-mismatch": "the mirror's file differs from the official one (sha256 %s, official %s): do not install it.",
}


def _verdict(c: Any) -> str:
    s, w = c.source, c.want
    if c.verdict == "ok":
        tail = (", and its sha256 matches the official index's" if c.hash_match
                else " (its sha256 could not be compared with the official index's)")
        return VERDICT["ok"] % tail
    if c.verdict in ("unreachable", "timeout", "http-error", "not-an-index"):
        return VERDICT[c.verdict] % (s.message or s.url)
    if c.verdict == "missing":
        return VERDICT["missing"] % ("%s+%s" % (w.torch_version, w.local) if w.local else w.torch_version, w.python or "any", w.platform or "any")
    if c.verdict == "lagging":
        return VERDICT["lagging"] % (s.newest, w.torch_version)
    if c.verdict == "upstream":
        return VERDICT["upstream"] % (s.redirect or s.file_url)
    return VERDICT["hash-mismatch"] % (s.sha256, c.official.sha256 if c.official else "?")


def render_mirror_check(c: Any, width: int = 80) -> str:
    from cudaenv.render.text import wrap, wrap_command

    def prose(text: str, first: str = "", rest: str = "  ") -> List[str]:
        return wrap(printable(text), first, rest, width, long_words="keep")

    w, s = c.want, c.source
    layout = {"simple": "a simple index", "flat": "a flat listing of wheels", None: "no index page read"}.get(s.layout, s.layout)
    expected = " (data/torch_mirrors.json: %s)" % c.expected_layout if c.expected_layout else ""
    lines = prose("Mirror %s (%s): %s%s" % (c.mirror, c.base, layout, expected))
    wanted = "torch %s%s" % (w.torch_version, "+" + w.local if w.local else "")
    lines += prose("Looked for %s, Python %s, %s (the build `cudaenv torch recommend` picks here)"
                   % (wanted, w.python or "any", w.platform or "any platform"))
    lines += prose("page: %s" % s.url, "  ", "    ")
    if s.file:
        lines += prose("file: %s" % s.file_url, "  ", "    ")
        where = {"mirror": "the mirror itself", "upstream": "the official index (the link points upstream)",
                 "elsewhere": "another server"}.get(s.served_by, s.served_by)
        lines += prose("served by: %s%s" % (where, "; a HEAD is redirected to %s" % s.redirect if s.redirect else ""), "  ", "    ")
        lines += prose("sha256: %s" % (s.sha256 or "not given by the page"), "  ", "    ")
        if c.official is not None:
            lines += prose("official sha256: %s (%s)" % (c.official.sha256 or "not read", c.official.message or c.official.url), "  ", "    ")
    elif s.newest:
        lines += prose("newest of this kind listed: torch %s" % s.newest, "  ", "    ")
    lines += [""] + prose(("OK: " if c.ok else "Not usable: ") + _verdict(c))
    if c.ok and c.commands:
        lines += ["", "Install from it:"]
        for line in c.commands:
            lines += wrap_command(line, "  ", width)
        if c.snippet:
            lines += ["", "pixi (in the manifest):"] + ["  " + printable(x) for x in c.snippet if x]
    return "\n".join(lines) + "\n"
