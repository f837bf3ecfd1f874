"""Issue 16: `cudaenv fleet summarize` over generated report sets with planted drift, broken files, reports of other
versions, and reports written by the doctor itself on stand-in nodes; any bytes as a report never crash it."""

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import recorded
import fleet_builders
from fleet_builders import GPUS8, node_report, planted
from machine import A10G, ARCH_CU121, a10g_535

from cudaenv.fleet.records import FleetSummary
from cudaenv.fleet.summary import Summarizer, decode_report, natural_key, summarize
from cudaenv.fleet.files import report_paths
from cudaenv.model.reports import Finding, ToolkitList
from cudaenv.model.record import replace

def run(cli, *args):
    return cli("fleet", "summarize", *args, env={"PATH": "/nonexistent", "COLUMNS": "80"})


def test_planted_drift_is_found_and_named(tmp_path):
    s = summarize(report_paths([str(planted(tmp_path / "r"))]))
    assert s.nodes_read == 20 and s.reference == "majority" and not s.unreadable
    ref = dict(s.reference_config)
    assert ref == {"driver": "580.95.05", "driver_cuda": "13.0", "gpus": "8 x NVIDIA A100-SXM4-80GB",
                   "toolkits": "13.0.2", "torch": "2.13.0+cu130", "cudnn": "none"}
    dev = {n.name: n.deviations for n in s.nodes if n.deviations}
    assert dev == {"node-03": ("driver", "driver_cuda"), "node-04": ("driver", "driver_cuda"), "node-07": ("torch",),
                   "node-09": ("gpus",)}
    assert s.deviating == 4 and s.with_errors == 1 and not s.ok
    assert [n.name for n in s.nodes if n.errors] == ["node-07"]
    drivers = {v.value: v.nodes for g in s.dimensions if g.dimension == "driver" for v in g.values}
    assert drivers == {"580.95.05": 18, "535.247.01": 2}
    assert {(f.id, f.severity, f.nodes, f.examples) for f in s.findings} == {
        ("torch-cpu-only", "error", 1, ("node-07",)), ("gpu-count-differs", "warning", 1, ("node-09",))}
    assert [c.nodes for c in s.configurations] == [16, 2, 1, 1] and s.configurations[0].reference


def test_cli_text_fits_80_columns_and_exits_1_on_drift(cli, tmp_path):
    r = run(cli, str(planted(tmp_path / "r")))
    assert r.code == 1, r
    assert all(len(line) <= 80 for line in r.out.splitlines()), r.out
    assert "20 nodes read, 4 deviate from the majority, 1 with errors" in r.out
    assert ("  node-03            driver 535.247.01 (not 580.95.05); driver CUDA 12.2 (not\n"
            "                     13.0)\n") in r.out  # wrapped under its column
    assert "  node-07            torch 2.13.0+cpu (not 2.13.0+cu130)\n" in r.out
    assert "*580.95.05 (18)   535.247.01 (2)" in r.out
    assert "Every node" not in r.out
    assert "Every node (20)" in run(cli, "--all", str(tmp_path / "r")).out


def test_clean_fleet_exits_0(cli, tmp_path):
    folder = tmp_path / "ok"
    folder.mkdir()
    for i in range(3):
        (folder / ("n%d.json" % i)).write_text(json.dumps(node_report("n%d" % i).to_dict()))
    r = run(cli, str(folder))
    assert r.code == 0 and "Result: ok (exit 0)" in r.out, r


def test_baseline_replaces_the_majority(cli, tmp_path):
    folder = planted(tmp_path / "r")
    r = run(cli, "--json", "--baseline", str(folder / "node-03.json"), str(folder))
    data = r.json()
    assert r.code == 1 and data["reference"] == "baseline" and data["reference_config"]["driver"] == "535.247.01"
    assert data["deviating"] == 18  # every node but the two old-driver ones
    bad = run(cli, "--baseline", str(tmp_path / "missing.json"), str(folder))
    assert bad.code == 2 and "--baseline" in bad.err


def test_json_is_a_registered_envelope_that_reads_back(cli, tmp_path):
    from cudaenv.model.records import envelopes

    assert FleetSummary in envelopes()
    r = run(cli, "--format", "json", str(planted(tmp_path / "r")))
    data = r.json()
    assert list(data)[0] == "schema_version" and data["nodes_read"] == 20
    back = FleetSummary.from_dict(data)
    assert back.deviating == 4 and back.nodes[6].name == "node-07" and dict(back.nodes[6].config)["torch"] == "2.13.0+cpu"


def _broken(folder):
    folder.mkdir()
    good = json.dumps(node_report("good").to_dict())
    (folder / "good.json").write_text(good)
    (folder / "truncated.json").write_text(good[: len(good) // 2])
    (folder / "empty.json").write_text("")
    (folder / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    (folder / "x.json").mkdir()
    (folder / "list.json").write_text(json.dumps(ToolkitList().to_dict()))  # another command's output
    (folder / "v2.json").write_text(json.dumps(dict(json.loads(good), schema_version=2)))
    (folder / "array.json").write_text("[1, 2]")
    (folder / "shape.json").write_text(json.dumps(dict(json.loads(good), gpus="many", hostname=["x"])))
    os.mkfifo(folder / "fifo.json")
    (folder / ".good.json.abc.cudaenv-tmp").write_text("half")  # the atomic writer's temporary file: skipped
    (folder / "notes.txt").write_text("not a report")  # not *.json: skipped in a folder
    return folder


def test_broken_files_are_unreadable_entries_never_fatal(cli, tmp_path):
    folder = _broken(tmp_path / "b")
    s = summarize(report_paths([str(folder)]))
    why = {os.path.basename(u.file): u.why for u in s.unreadable}
    assert s.nodes_read == 1 and set(why) == {"truncated.json", "empty.json", "binary.json", "x.json", "list.json",
                                              "v2.json", "array.json", "shape.json", "fifo.json"}
    assert why["truncated.json"].startswith("not JSON (truncated?)")
    assert why["empty.json"] == "empty file"
    assert why["binary.json"].startswith("not UTF-8 text")
    assert "folder" in why["x.json"] and "FIFO" in why["fifo.json"]
    assert why["list.json"].startswith("not a doctor report") and "platform" in why["list.json"]
    assert "schema_version 2" in why["v2.json"]
    assert why["array.json"] == "not a doctor report: not a cudaenv report: a JSON list, not an object"
    assert why["shape.json"].startswith("not a doctor report")
    r = run(cli, str(folder), str(folder / "x.json"))
    assert r.code == 0 and "Unreadable reports (10)" in r.out and "Traceback" not in r.err, r


def test_newer_minor_and_unknown_fields_are_read_with_a_note(tmp_path):
    data = dict(node_report("new").to_dict(), schema_version="1.4", gpu_health={"ecc": 0})
    data["driver"]["new_field"] = 1
    (tmp_path / "new.json").write_text(json.dumps(data))
    s = summarize([str(tmp_path / "new.json")])
    assert s.nodes_read == 1 and dict(s.reference_config)["driver"] == "580.95.05"
    assert len(s.notes) == 1 and "1.4" in s.notes[0] and "newer" in s.notes[0]


def test_no_reports_is_a_usage_error(cli, tmp_path):
    (tmp_path / "none").mkdir()
    r = run(cli, str(tmp_path / "none"))
    assert r.code == 2 and "no reports found" in r.err


def test_only_unreadable_reports_exit_1(cli, tmp_path):
    (tmp_path / "a.json").write_text("{")
    r = run(cli, str(tmp_path / "a.json"))
    assert r.code == 1 and "no report could be read" in r.out


HOSTILE = 'evil\x1b]0;pwned\x07<script>alert(1)</script>|`*_"&\u202e' + "x" * 300


def _hostile(folder):
    folder.mkdir()
    for i, name in enumerate(("n1", "n2", HOSTILE)):
        gpus = GPUS8 if i < 2 else (replace(GPUS8[0], name="GPU <img src=x onerror=alert(1)> " + "y" * 200),)
        (folder / ("%d.json" % i)).write_text(json.dumps(node_report(name, gpus=gpus,
                                                                     findings=(Finding(HOSTILE, "error", "t", "d"),)).to_dict()))
    return folder


def test_text_escapes_and_fits_hostile_values(cli, tmp_path):
    r = run(cli, "--all", str(_hostile(tmp_path / "h")))
    assert r.code == 1
    assert "\x1b" not in r.out and "\x07" not in r.out and "\u202e" not in r.out and "\\x1b]0;pwned" in r.out
    assert all(len(line) <= 80 for line in r.out.splitlines()), [l for l in r.out.splitlines() if len(l) > 80]


def test_markdown_escapes_values(cli, tmp_path):
    r = run(cli, "--format", "markdown", str(_hostile(tmp_path / "h")))
    assert r.code == 1 and r.out.startswith("### cudaenv fleet summary")
    import re

    assert "\x1b" not in r.out and "\u202e" not in r.out and "\\<script\\>alert(1)" in r.out  # md_text escapes it
    from cudaenv.render.text import md_code

    s = summarize(report_paths([str(tmp_path / "h")]))
    rest = r.out
    for value in [v for n in s.nodes for _, v in n.config] + [f.id for f in s.findings]:
        rest = rest.replace(md_code(value), "")  # a code span shows its text literally
    assert not re.search(r"(?<!\\)<", rest), rest  # raw HTML nowhere else

    tables, current = [], []
    for line in r.out.splitlines() + [""]:
        if line.startswith("|"):
            current.append(len(re.findall(r"(?<!\\)\|", line)))  # cell borders: unescaped pipes
        elif current:
            tables.append(current)
            current = []
    assert len(tables) == 3 and all(len(set(t)) == 1 for t in tables), tables  # no row has a leaked | border


def test_html_is_self_contained_and_escaped(cli, tmp_path):
    r = run(cli, "--format", "html", str(planted(tmp_path / "r")))
    page = r.out
    assert r.code == 1 and page.startswith("<!DOCTYPE html>")
    assert '<b id="nodes-read">20</b>' in page and '<b id="deviating" class="bad">4</b>' in page
    assert '<b id="with-errors" class="bad">1</b>' in page
    assert page.count('<tr class="deviates">') >= 3 and page.count('<tr class="error">') >= 2  # node-07: nodes and findings
    for external in ("http://", "https://", "src=", "href=", "@import", "url("):
        assert external not in page, external
    h = run(cli, "--format", "html", str(_hostile(tmp_path / "h"))).out
    assert "<script>alert" not in h and "<img" not in h and "&lt;script&gt;alert(1)&lt;/script&gt;" in h
    assert h.count("<script>") == 1  # only the page's own


def test_long_node_names_stay_whole_and_the_html_shows_what_deviates(cli, tmp_path):
    # issue 27: text cut node names in the middle; the HTML wrapped them at hyphens and named only the dimension
    folder = tmp_path / "r"
    folder.mkdir()
    long_names = ["gpu-node-rack12-slot%02d.cluster.example" % i for i in range(1, 6)]
    for i, name in enumerate(long_names):
        changes = {"driver": fleet_builders.OLD_DRIVER} if i == 0 else {}
        if i == 1:
            changes.update(torch=fleet_builders.CPU_TORCH, findings=(Finding("torch-cpu-only", "error", "CPU torch", "d"),))
        (folder / (name + ".json")).write_text(json.dumps(node_report(name, **changes).to_dict()))
    r = run(cli, "--all", str(folder))
    assert all(len(line) <= 80 for line in r.out.splitlines()), r.out
    for name in long_names:
        assert "  %s\n" % name in r.out, r.out  # whole, on a line of its own
    assert "..." not in r.out.split("Findings")[1], r.out
    page = run(cli, "--format", "html", str(folder)).out
    assert '<td class="name">gpu-node-rack12-slot01.cluster.example</td>' in page and "td.name{white-space:nowrap}" in page
    assert "driver 535.247.01 (not 580.95.05)" in page and '<td class="dev" title="majority: 580.95.05">535.247.01</td>' in page


def test_finding_examples_are_whole_names():
    from cudaenv.render.fleet import _names

    text = _names(["node-%02d" % i for i in range(1, 11)], 5, 32)
    assert len(text) <= 32 and text.endswith("more") and all(p.strip().startswith(("node-", "+")) for p in text.split(","))
    assert text == "node-01, node-02, +13 more", text


def test_natural_order():
    assert sorted(["node-10", "node-2", "node-1"], key=natural_key) == ["node-1", "node-2", "node-10"]
    # host names from reports are untrusted: a superscript digit, other scripts' digits, a 5000-digit run
    odd = ["0²0", "n٣", "n" + "9" * 5000, "n3", "n" + "9" * 4999]
    assert sorted(odd, key=natural_key)[:2] == ["0²0", "n3"]


# ------------------------------------------------------------------ reports made by the doctor on stand-in nodes
def test_reports_written_by_the_doctor_on_stand_in_nodes(machine, cli, tmp_path):
    out = tmp_path / "reports"
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    for name in ("gpu-a", "gpu-b", "gpu-c"):
        machine.root.file("etc/hostname", name + "\n")
        machine.doctor("--output", str(out) + "/")
    # gpu-d: the same machine with the other recorded driver (a GTX 1080 Ti on 470)
    machine.smi(query=recorded("diag-query-1080ti.txt"), banner=recorded("diag-banner-1080ti.txt"))
    machine.root.file("etc/hostname", "gpu-d\n")
    machine.doctor("--output", str(out) + "/")
    assert sorted(os.listdir(out)) == ["gpu-a.json", "gpu-b.json", "gpu-c.json", "gpu-d.json"]
    r = run(cli, "--json", str(out))
    data = r.json()
    assert data["nodes_read"] == 4 and not data["unreadable"]
    assert data["reference_config"]["driver"] == "535.247.01"
    (odd,) = [n for n in data["nodes"] if n["deviations"]]
    assert odd["name"] == "gpu-d" and "driver" in odd["deviations"] and "gpus" in odd["deviations"]
    assert r.code == 1


# ------------------------------------------------------------------ any bytes
@settings(max_examples=300)
@given(st.binary(max_size=2000))
def test_any_bytes_never_crash(data):
    report, why = decode_report(data)
    assert (report is None) != (why is None)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
                     max_leaves=20)
_KEYS = st.sampled_from(["driver", "gpus", "toolkits", "torch", "cudnn", "platform", "findings", "hostname",
                         "generated_at", "cudaenv_version", "env", "notes"])


@settings(max_examples=300)
@given(st.dictionaries(_KEYS, _JSON, max_size=6), st.data())
def test_any_values_in_a_real_report_never_crash(changes, data):
    """A real report with any JSON in its known keys (or in the fields of its driver, GPUs, torch)."""
    base = node_report("n").to_dict()
    base.update(changes)
    for key in ("driver", "torch"):
        if isinstance(base.get(key), dict):
            base[key].update(data.draw(st.dictionaries(st.sampled_from(["version", "cuda_version", "installed", "cuda"]),
                                                       _JSON, max_size=2)))
    acc = Summarizer()
    report, why = decode_report(json.dumps(base).encode())
    if report is not None:
        acc.add_report(report, "n.json")
    s = acc.summary()
    assert s.nodes_read == (report is not None)
    from cudaenv.render.fleet import render_html, render_markdown, render_text

    render_text(s, all_nodes=True), render_markdown(s), render_html(s)


def test_reports_that_differ_only_per_node_are_decoded_once_and_read_alike(tmp_path, monkeypatch):
    """The decoding a summary shares between reports whose sections are the same (bounded by CACHE_SIZE) gives each
    node its own host name, time, notes and findings, exactly as decoding every report would."""
    from cudaenv.fleet import summary as fleet_summary

    folder = tmp_path / "r"
    folder.mkdir()
    for i in range(12):
        data = dict(node_report("n%d" % i).to_dict(), schema_version="1.4" if i < 3 else "1.0",
                    generated_at="2026-12-03T05:53:%02dZ" % i)
        data["gpus"][0]["uuid"] = "GPU-%d" % i  # a field the summary never reads
        if i == 5:
            data["findings"] = [{"id": "torch-cpu-only", "severity": "error", "title": "t", "detail": "d"}]
        (folder / ("n%d.json" % i)).write_text(json.dumps(data))
    results = []
    for size in (256, 1, 0):  # shared, a cache that fills at once, none at all
        monkeypatch.setattr(fleet_summary, "CACHE_SIZE", size)
        s = summarize(report_paths([str(folder)]))
        results.append(s.to_dict())
        assert s.nodes_read == 12 and [n.name for n in s.nodes] == ["n%d" % i for i in range(12)]
        assert [n.generated_at for n in s.nodes] == ["2026-12-03T05:53:%02dZ" % i for i in range(12)]
        assert [n.name for n in s.nodes if n.errors] == ["n5"] and s.with_errors == 1
        assert len(s.configurations) == 1  # the UUIDs differ, the configuration does not
        assert len(s.notes) == 1 and s.notes[0].startswith("3 reports: ")
    assert results[0] == results[1] == results[2]


_NAMES = st.one_of(st.sampled_from(["n1", "n2", 'q"uote', "back\\slash", "\\\"", "é", "\u2028", "x\u0000y", ""]),
                   st.text(max_size=6))


@settings(max_examples=150)
@given(st.lists(st.tuples(st.sampled_from(["plain", "ascii", "nested", "nested-last", "dup", "swap", "bad", "null",
                                           "indent"]), st.sampled_from(["n1", 'q"uote', "\\\""]), _NAMES),
                min_size=1, max_size=7))
def test_reports_shared_by_their_bytes_read_as_each_decoded_alone(tmp_path_factory, variants):
    """A summary takes a report whose bytes are an earlier one's but for its hostname and generated_at values from that
    decoding (issue 35): whatever the names hold (quotes, backslashes, NUL, U+2028), wherever a nested "hostname" key
    or a second one sits, in either order, with a raw control character that makes the file no JSON, the summary is
    the one decoding every report alone gives (CACHE_SIZE 0)."""
    from cudaenv.fleet import summary as fleet_summary

    folder = tmp_path_factory.mktemp("raw")
    base = node_report("n").to_dict()
    for i, (how, host, other) in enumerate(variants):
        data = dict(base, hostname=host, generated_at="2026-12-03T05:53:%02dZ" % (i % 2))
        if how == "swap":
            data = {"generated_at": data.pop("generated_at"), **data}
        if how in ("nested", "nested-last"):
            data["zz_extra"] = {"hostname": other, "generated_at": other}  # a key of the same name, not the report's
            if how == "nested":
                data = {"zz_extra": data.pop("zz_extra"), **data}
        text = json.dumps(data, ensure_ascii=how == "ascii", indent=2 if how == "indent" else None)
        if how == "dup":
            text = text[:-1] + ', "hostname": %s}' % json.dumps(other)
        if how == "bad":
            text = text.replace('"hostname": ', '"hostname": "\x01" ,"x": ', 1)
        if how == "null":
            text = text.replace('"hostname": ', '"hostname": null, "y": ', 1)
        (folder / ("r%d.json" % i)).write_text(text, encoding="utf-8")
    results = []
    for size in (256, 0):
        fleet_summary.CACHE_SIZE = size
        try:
            results.append(summarize(report_paths([str(folder)])).to_dict())
        finally:
            fleet_summary.CACHE_SIZE = 256
    assert results[0] == results[1]


def test_a_fleet_of_one_body_is_decoded_once(tmp_path, monkeypatch):
    """100 reports that differ in their hostname and generated_at only: one JSON decoding for them all (counted), and
    each node has its own name and time."""
    from cudaenv.fleet import summary as fleet_summary

    base = node_report("n").to_dict()
    for i in range(100):
        (tmp_path / ("n%d.json" % i)).write_text(json.dumps(dict(base, hostname="node-%d" % i,
                                                                 generated_at="2026-12-03T05:%02d:00Z" % (i % 60)), indent=2))
    decoded = []
    real = fleet_summary._decode_node
    monkeypatch.setattr(fleet_summary, "_decode_node", lambda *a, **k: decoded.append(1) or real(*a, **k))
    s = summarize(report_paths([str(tmp_path)]))
    assert len(decoded) == 1
    assert [n.name for n in s.nodes] == ["node-%d" % i for i in range(100)]
    assert [n.generated_at for n in s.nodes][:2] == ["2026-12-03T05:00:00Z", "2026-12-03T05:01:00Z"]


def test_a_json_error_reads_as_one_sentence():
    """issue 27: json's message "Unterminated string starting at" was followed by " at line 1", "at at"."""
    _, why = decode_report(b'{"schema_version": 1, "platf')
    assert why == "not JSON (truncated?): Unterminated string starting at: line 1 column 23", why
    _, why = decode_report(b'{"schema_version": 1,')
    assert why == "not JSON (truncated?): Expecting property name enclosed in double quotes: line 1 column 22", why
    assert " at at " not in why
