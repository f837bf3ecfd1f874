"""``cudaenv fleet summarize``: the summary (:class:`cudaenv.fleet.records.FleetSummary`) as text for a terminal
(80 columns: groups, the first nodes of each list; ``all_nodes`` lists every node), as Markdown, and as one
self-contained HTML file (inline CSS and a small inline script: no network, no external scripts or fonts).

Every value in a summary came from a report file, untrusted: text goes through :func:`cudaenv.core.text.printable`,
Markdown through the md_* helpers of :mod:`cudaenv.render.text`, HTML through ``html.escape``.
"""

from __future__ import annotations

from typing import List

from cudaenv.core.i18n import ENGLISH, N_, language, t, tn, tr
from cudaenv.render.text import WIDTH, fit, md_code, md_inline, md_text, paint, wrap
from cudaenv.render.width import pad, width_of
from cudaenv.core.text import printable

LABELS = {"driver": N_("driver"), "driver_cuda": N_("driver CUDA"), "gpus": N_("GPUs"), "toolkits": N_("toolkits"),
          "torch": "torch", "cudnn": "cuDNN"}
LIST_LIMIT = 20  # nodes shown per list in text and Markdown unless every node is asked for


def _label(key: str) -> str:
    return t(LABELS[key]) if key in LABELS else key


def _plural(n: int, word: str) -> str:
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def headline(summary) -> str:
    """One sentence: how many nodes, against what, how many deviate, have errors, could not be read."""
    ref = t("the baseline %s", printable(summary.baseline_file)) if summary.reference == "baseline" else t("the majority")
    parts = [tn("%d node read", "%d nodes read", summary.nodes_read)]
    if summary.unreadable:
        parts.append(tn("%d report unreadable", "%d reports unreadable", len(summary.unreadable)))
    parts.append(t("%d deviate from %s", summary.deviating, ref))
    parts.append(t("%d with errors", summary.with_errors))
    return t(", ").join(parts)


VALUES = {"none": N_("none"), "unknown": N_("unknown")}  # a dimension's value in words (cudaenv.fleet.summary)


def _value(value: str) -> str:
    """A configuration value as shown: the words ``none`` and ``unknown`` in the reader's language, the rest as is."""
    return t(VALUES[value]) if value in VALUES else printable(value)


def _deviation_text(node, reference) -> str:
    ref = dict(reference)
    config = dict(node.config)
    return t("; ").join(t("%s %s (not %s)", _label(k), _value(config.get(k, "")), _value(ref.get(k, "")))
                        for k in node.deviations)


IMAGE_VERDICTS = {"needs-newer-driver": N_("driver too old"), "forward-compat": N_("only through forward compatibility"),
                  "no-driver": N_("no driver in its report")}
IMAGE_WHY = {"require": N_("its NVIDIA_REQUIRE_CUDA, checked by the runtime"), "cuda": N_("its CUDA"),
             "torch": N_("its torch's CUDA build")}


def _verdict(verdict: str) -> str:
    return t(IMAGE_VERDICTS[verdict]) if verdict in IMAGE_VERDICTS else verdict


def image_headline(fleet) -> str:
    """``--image``: the image, what it needs, and how many nodes run it."""
    img = fleet.image
    name = printable(img.tags[0] if img.tags else img.ref)
    if not img.readable:
        return t("image %s: not read (%s)", name, printable(tr(img.why or "?")))
    if fleet.needs_driver is None:
        return t("image %s: it says nothing of its CUDA, so no driver floor is known", name)
    parts = [tn("runs on %d node", "runs on %d nodes", fleet.runs), t("driver too old on %d", fleet.too_old)]
    if fleet.forward_compat:
        parts.append(t("only through forward compatibility on %d", fleet.forward_compat))
    if fleet.no_driver:
        parts.append(t("no driver on %d", fleet.no_driver))
    why = t(IMAGE_WHY[fleet.needs_why]) if fleet.needs_why in IMAGE_WHY else "?"
    return t("image %s needs driver %s or newer (%s): %s", name, printable(fleet.needs_driver), why, t(", ").join(parts))


NAME = 18  # the column of node names in text; a longer name gets a line of its own, never cut


def _named(name: str, text: str, width: int) -> List[str]:
    """``text`` wrapped beside a node's name; a name wider than the column stands whole on its own line above."""
    name = printable(name)
    if width_of(name) <= NAME:
        return wrap(text, first="  %s " % pad(name, NAME), width=width, long_words="fit")
    return wrap(name, first="  ", width=width, long_words="break") + wrap(text, first=" " * (NAME + 3), width=width,
                                                                         long_words="fit")


def _names(names: List[str], more: int, room: int) -> str:
    """Whole names, as many as fit in ``room`` characters, then ``+N more``: a name is never cut in the middle."""
    out: List[str] = []
    for i, n in enumerate(names):
        left = len(names) - i - 1 + more
        tail = t(", +%d more", left) if left else ""
        candidate = ", ".join(out + [n])
        if width_of(candidate + tail) > room and out:
            return ", ".join(out) + t(", +%d more", len(names) - i + more)
        out.append(n)
    return ", ".join(out) + (t(", +%d more", more) if more else "")


def render_text(summary, all_nodes: bool = False, width: int = WIDTH, color: bool = False) -> str:
    out: List[str] = []
    out += wrap(headline(summary), width=width)
    if summary.nodes_read:
        reference = t("the majority's value") if summary.reference == "majority" else t("the baseline's value") \
            if summary.reference == "baseline" else t("the %s's value", summary.reference)
        out += ["", paint(t("Configuration"), "bold", color) + t(" (* %s; node counts)", reference)]
        for group in summary.dimensions:
            items = ["%s%s (%d)" % ("*" if v.reference else "", fit(_value(v.value), 40), v.nodes) for v in group.values]
            out += wrap("   ".join(items[:8]) + ("   " + t("+%d more", len(items) - 8) if len(items) > 8 else ""),
                        first="  %s " % pad(_label(group.dimension), 12), width=width, long_words="fit")
        if len(summary.configurations) > 1:
            out += ["", t("%s whole configurations; the largest:", len(summary.configurations))]
            for c in summary.configurations[:5]:
                values = t(", ").join(_value(v) for _, v in c.config)
                out += wrap(values, first="  %s%6d  " % ("*" if c.reference else " ", c.nodes), width=width, long_words="fit")
    if summary.findings:
        out += ["", paint(t("Findings"), "bold", color) + t(" (nodes)")]
        for f in summary.findings:
            mark = paint("%-7s" % printable(f.severity), "error" if f.severity == "error" else "warning"
                         if f.severity == "warning" else "dim", color)
            line = "  %s %-28s %6d  " % (mark, fit(printable(f.id), 28), f.nodes)
            room = max(10, width - 48)
            names = _names([printable(n) for n in f.examples], max(0, f.nodes - len(f.examples)), room)
            if len(names) <= room:
                out.append(line + names)
            else:  # one name wider than the column: whole, on the next line
                out.append(line.rstrip())
                out += wrap(names, first=" " * 4, width=width, long_words="break")
    if summary.image is not None:
        out += ["", paint(t("Image"), "bold", color)] + wrap(image_headline(summary.image), first="  ", width=width)
        shown = summary.image.nodes if all_nodes else summary.image.nodes[:LIST_LIMIT]
        for n in shown:
            out += _named(n.name, t("driver %s: %s", printable(n.driver), _verdict(n.verdict)), width)
        if len(shown) < len(summary.image.nodes):
            out.append("  " + t("... %d more (--all lists every node)", len(summary.image.nodes) - len(shown)))
    deviating = [n for n in summary.nodes if n.deviations]
    if deviating:
        out += ["", paint(t("Deviating nodes"), "bold", color) + t(" (%d)", len(deviating))]
        shown = deviating if all_nodes else deviating[:LIST_LIMIT]
        for n in shown:
            out += _named(n.name, _deviation_text(n, summary.reference_config), width)
        if len(shown) < len(deviating):
            out.append("  " + t("... %d more (--all lists every node)", len(deviating) - len(shown)))
    failing = [n for n in summary.nodes if n.errors]
    if failing:
        out += ["", paint(t("Nodes with errors"), "bold", color) + t(" (%d)", len(failing))]
        shown = failing if all_nodes else failing[:LIST_LIMIT]
        for n in shown:
            out += _named(n.name, ", ".join(printable(e) for e in n.errors), width)
        if len(shown) < len(failing):
            out.append("  " + t("... %d more (--all lists every node)", len(failing) - len(shown)))
    if summary.unreadable:
        out += ["", paint(t("Unreadable reports"), "bold", color) + t(" (%d)", len(summary.unreadable))]
        shown = summary.unreadable if all_nodes else summary.unreadable[:LIST_LIMIT]
        for u in shown:
            out += wrap(printable(tr(u.why)), first="  " + t("%s: ", fit(printable(u.file), width // 2)), rest="    ", width=width)
        if len(shown) < len(summary.unreadable):
            out.append("  " + t("... %d more (--all lists them all)", len(summary.unreadable) - len(shown)))
    if summary.notes:
        out += [""] + [line for note in summary.notes for line in wrap(printable(tr(note)), first=t("note: "), width=width)]
    if all_nodes and summary.nodes:
        out += ["", paint(t("Every node"), "bold", color) + t(" (%d)", len(summary.nodes))]
        for n in summary.nodes:
            cfg = dict(n.config)
            state = t("error") if n.errors else t("deviates") if n.deviations else t("ok")
            out += _named(n.name, t("%s; driver %s; %s; torch %s", state, printable(cfg.get("driver", "")),
                                    printable(cfg.get("gpus", "")), printable(cfg.get("torch", ""))),
                          width)
    image = summary.image
    if summary.ok:
        result = t("ok (exit 0)")
    elif not summary.nodes_read:
        result = t("exit 1: %s", t("no report could be read"))
    else:
        extra = "" if image is None or image.ok else t(", the image not read") if not image.image.readable else \
            t(", driver too old for the image on %d", image.too_old)
        result = t("exit 1: %s", tn("%d node deviate, %s with errors%s", "%d nodes deviate, %s with errors%s", summary.deviating,
                                    summary.deviating, summary.with_errors, extra))
    out += ["", t("Result: %s", result)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ Markdown
def render_markdown(summary, all_nodes: bool = False) -> str:
    out = ["### cudaenv fleet summary", "", md_inline(headline(summary)), ""]
    if summary.nodes_read:
        out += ["| dimension | reference | other values (nodes) |", "|---|---|---|"]
        for group in summary.dimensions:
            ref = [v for v in group.values if v.reference]
            others = ", ".join("%s (%d)" % (md_code(v.value), v.nodes) for v in group.values if not v.reference)
            out.append("| %s | %s | %s |" % (_label(group.dimension),
                                              "%s (%d)" % (md_code(ref[0].value), ref[0].nodes) if ref else "",
                                              others or "-"))
        out.append("")
    if summary.findings:
        out += ["| finding | severity | nodes | e.g. |", "|---|---|---|---|"]
        out += ["| %s | %s | %d | %s |" % (md_code(f.id), md_text(f.severity), f.nodes, ", ".join(md_text(n) for n in f.examples))
                for f in summary.findings]
        out.append("")
    rows = [n for n in summary.nodes if all_nodes or n.deviations or n.errors]
    if rows:
        shown = rows if all_nodes else rows[:LIST_LIMIT]
        out += ["| node | deviates in | errors |", "|---|---|---|"]
        ref = dict(summary.reference_config)
        for n in shown:
            cfg = dict(n.config)
            dev = "; ".join("%s %s (not %s)" % (_label(k), md_code(cfg.get(k, "")), md_code(ref.get(k, ""))) for k in n.deviations)
            out.append("| %s | %s | %s |" % (md_text(n.name), dev or "-", ", ".join(md_code(e) for e in n.errors) or "-"))
        if len(shown) < len(rows):
            out.append("")
            out.append("... and %d more nodes (`--all` lists every node)" % (len(rows) - len(shown)))
        out.append("")
    if summary.unreadable:
        out += ["Unreadable reports:", ""]
        out += ["- %s: %s" % (md_code(u.file), md_text(u.why)) for u in summary.unreadable[: None if all_nodes else LIST_LIMIT]]
        out.append("")
    if summary.image is not None:
        out += ["**%s**" % md_text(image_headline(summary.image)), ""]
        rows = summary.image.nodes if all_nodes else summary.image.nodes[:LIST_LIMIT]
        if rows:
            out += ["| node | driver | image |", "|---|---|---|"]
            out += ["| %s | %s | %s |" % (md_text(n.name), md_code(n.driver), md_text(IMAGE_VERDICTS.get(n.verdict, n.verdict)))
                    for n in rows]
            if len(rows) < len(summary.image.nodes):
                out += ["", "... and %d more nodes (`--all` lists every node)" % (len(summary.image.nodes) - len(rows))]
            out.append("")
    for note in summary.notes:
        out += ["> note: %s" % md_text(note), ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ------------------------------------------------------------------ HTML
_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#1b1f24;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f6f8fa}#nodes th{cursor:pointer;user-select:none}
tr.error td{background:#ffebe9}tr.deviates td{background:#fff8c5}
.ref{font-weight:600}.num{text-align:right}code{font-family:ui-monospace,monospace}
td.name{white-space:nowrap}td.dev{font-weight:600;color:#9a6700}
.summary span{display:inline-block;margin-right:1.2em;padding:.3em .7em;border-radius:4px;background:#f6f8fa}
.bad{color:#cf222e;font-weight:600}.good{color:#1a7f37;font-weight:600}
#filter{padding:.3em;width:22em}
"""

_SCRIPT = """
(function(){
var table=document.getElementById("nodes");if(!table)return;
var body=table.tBodies[0],heads=table.tHead.rows[0].cells,filter=document.getElementById("filter"),
shown=document.getElementById("shown");
function text(row,i){return row.cells[i].getAttribute("data-v")||row.cells[i].textContent;}
function cmp(a,b){var x=parseFloat(a),y=parseFloat(b);
 if(!isNaN(x)&&!isNaN(y)&&String(x)===a&&String(y)===b)return x-y;
 return a.localeCompare(b,undefined,{numeric:true});}
Array.prototype.forEach.call(heads,function(th,i){th.addEventListener("click",function(){
 var dir=th.getAttribute("data-dir")==="asc"?-1:1;
 Array.prototype.forEach.call(heads,function(h){h.removeAttribute("data-dir");});
 th.setAttribute("data-dir",dir===1?"asc":"desc");
 var rows=Array.prototype.slice.call(body.rows);
 rows.sort(function(a,b){return dir*cmp(text(a,i),text(b,i));});
 rows.forEach(function(r){body.appendChild(r);});});});
function apply(){var q=filter.value.toLowerCase(),n=0;
 Array.prototype.forEach.call(body.rows,function(r){var hit=r.textContent.toLowerCase().indexOf(q)>=0;
  r.style.display=hit?"":"none";if(hit)n++;});shown.textContent=String(n);}
filter.addEventListener("input",apply);
if(location.hash.length>1){try{filter.value=decodeURIComponent(location.hash.slice(1));}catch(e){}}
apply();
})();
"""


def _h(value: object) -> str:
    import html

    return html.escape(printable(value), quote=True)


def render_html(summary) -> str:
    """One HTML file: the summary at the top, the configurations with node counts, the findings, the deviating and
    failing nodes highlighted in a sortable, filterable table of every node, and the unreadable reports."""
    ok = summary.ok
    out = ["<!DOCTYPE html>", '<html lang="%s"><head><meta charset="utf-8">' % ("en" if language() == ENGLISH else "zh-CN"),
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
           'script-src \'unsafe-inline\'">',
           "<title>%s</title><style>%s</style></head><body>" % (_h(t("cudaenv fleet summary")), _CSS),
           "<h1>%s</h1>" % _h(t("cudaenv fleet summary")),
           '<p class="summary"><span>%s <b id="nodes-read">%d</b></span>'
           '<span>%s <b id="deviating" class="%s">%d</b></span>'
           '<span>%s <b id="with-errors" class="%s">%d</b></span>'
           '<span>%s <b id="unreadable-count">%d</b></span>'
           '<span>%s <b>%s</b></span><span>%s <b id="result" class="%s">%s</b></span></p>' % (
               _h(t("nodes read:")), summary.nodes_read, _h(t("deviating:")), "bad" if summary.deviating else "good",
               summary.deviating, _h(t("with errors:")), "bad" if summary.with_errors else "good", summary.with_errors,
               _h(t("unreadable:")), len(summary.unreadable), _h(t("reference:")),
               _h("baseline " + summary.baseline_file if summary.reference == "baseline" and summary.baseline_file
                  else summary.reference), _h(t("result:")), "good" if ok else "bad", _h(t("ok") if ok else t("drift or errors")))]
    if summary.dimensions:
        out += ["<h2>%s</h2>" % _h(t("Configuration")), '<table id="dimensions"><thead><tr><th>%s</th><th>%s</th>'
                "</tr></thead><tbody>" % (_h(t("dimension")), _h(t("values (nodes)")))]
        for group in summary.dimensions:
            cells = ", ".join('<span class="%s">%s</span> (%d)' % ("ref" if v.reference else "", _h(v.value), v.nodes)
                              for v in group.values)
            out.append("<tr><th>%s</th><td>%s</td></tr>" % (_h(_label(group.dimension)), cells))
        out.append("</tbody></table>")
        keys = [k for k, _ in summary.configurations[0].config] if summary.configurations else []
        out += ["<h2>%s</h2>" % _h(t("Configurations")), '<table id="configurations"><thead><tr><th>%s</th>%s</tr></thead><tbody>'
                % (_h(t("nodes")), "".join("<th>%s</th>" % _h(_label(k)) for k in keys))]
        for c in summary.configurations:
            out.append('<tr class="%s"><td class="num">%d</td>%s</tr>' % (
                "ref" if c.reference else "deviates", c.nodes, "".join("<td>%s</td>" % _h(v) for _, v in c.config)))
        out.append("</tbody></table>")
    if summary.findings:
        out += ["<h2>%s</h2>" % _h(t("Findings")), '<table id="findings"><thead><tr><th>%s</th><th>%s</th><th>%s</th>'
                "<th>%s</th></tr></thead><tbody>" % (_h(t("finding")), _h(t("severity")), _h(t("nodes")), _h(t("e.g.")))]
        for f in summary.findings:
            out.append('<tr class="%s"><td><code>%s</code></td><td>%s</td><td class="num">%d</td><td>%s</td></tr>' % (
                "error" if f.severity == "error" else "", _h(f.id), _h(f.severity), f.nodes,
                _h(", ".join(f.examples))))
        out.append("</tbody></table>")
    if summary.nodes:
        keys = [k for k, _ in summary.nodes[0].config]
        out += ["<h2>%s</h2>" % _h(t("Nodes")), '<p><input id="filter" type="search" placeholder="%s" '
                'aria-label="%s"> %s</p>' % (_h(t("filter: a name, a version, a finding id")), _h(t("filter nodes")),
                                             t("%s of %d shown; click a column to sort", '<span id="shown">%d</span>' % len(summary.nodes),
                                               len(summary.nodes))),
                '<table id="nodes"><thead><tr><th>%s</th><th>%s</th>%s<th>%s</th><th>%s</th>'
                "<th>%s</th></tr></thead><tbody>" % (_h(t("node")), _h(t("state")), "".join("<th>%s</th>" % _h(_label(k)) for k in keys),
                                                     _h(t("errors")), _h(t("warnings")), _h(t("deviates in")))]
        ref = dict(summary.reference_config)
        for n in summary.nodes:
            state = "error" if n.errors else "deviates" if n.deviations else "ok"
            cells = "".join('<td class="dev" title="%s: %s">%s</td>' % (_h(summary.reference), _h(ref.get(k, "")), _h(v))
                            if k in n.deviations else "<td>%s</td>" % _h(v) for k, v in n.config)
            out.append('<tr class="%s"><td class="name">%s</td><td>%s</td>%s<td>%s</td><td>%s</td><td>%s</td></tr>' % (
                state, _h(n.name), state, cells, _h(", ".join(n.errors)), _h(", ".join(n.warnings)),
                _h(_deviation_text(n, summary.reference_config))))
        out.append("</tbody></table>")
    if summary.image is not None:
        out += ["<h2>%s</h2>" % _h(t("Image")), '<p id="image">%s</p>' % _h(image_headline(summary.image))]
        if summary.image.nodes:
            out += ['<table id="image-nodes"><thead><tr><th>%s</th><th>%s</th><th>%s</th></tr></thead><tbody>' % (
                _h(t("node")), _h(t("driver")), _h(t("image")))]
            out += ['<tr class="error"><td class="name">%s</td><td>%s</td><td>%s</td></tr>' % (
                _h(n.name), _h(n.driver), _h(_verdict(n.verdict))) for n in summary.image.nodes]
            out.append("</tbody></table>")
    if summary.unreadable:
        out += ["<h2>%s</h2>" % _h(t("Unreadable reports")), '<table id="unreadable"><thead><tr><th>%s</th><th>%s</th></tr></thead><tbody>'
                % (_h(t("file")), _h(t("why")))]
        out += ["<tr><td><code>%s</code></td><td>%s</td></tr>" % (_h(u.file), _h(tr(u.why))) for u in summary.unreadable]
        out.append("</tbody></table>")
    if summary.notes:
        out += ["<h2>%s</h2>" % _h(t("Notes")), "<ul>"] + ["<li>%s</li>" % _h(tr(n)) for n in summary.notes] + ["</ul>"]
    out += ["<script>%s</script>" % _SCRIPT, "</body></html>"]
    return "\n".join(out) + "\n"
