"""Issue 31: `cudaenv diff A.json B.json` (what changed between two doctor reports, grouped by the doctor's sections),
and the one comparison it shares with `fleet summarize --baseline`."""

import json
import shutil

from hypothesis import given, settings
from hypothesis import strategies as st

from fleet_builders import CPU_TORCH, GPUS8, OLD_DRIVER, node_report, planted
from machine import A10G, ARCH_CU121, a10g_535

from cudaenv.fleet.compare import compare_reports, differences, report_facts
from cudaenv.fleet.records import ReportDiff
from cudaenv.fleet.summary import ReportFileError, diff_files, summarize
from cudaenv.fleet.files import report_paths
from cudaenv.model.reports import Finding
from cudaenv.model.record import replace
from cudaenv.model.snapshot import Toolkit

ENV = {"PATH": "/nonexistent", "COLUMNS": "80"}


def write(path, report):
    path.write_text(json.dumps(report.to_dict()))
    return str(path)


def test_differences_keeps_the_order_and_names_missing_sides():
    assert differences([("a", "1"), ("b", "2"), ("c", "3")], [("c", "3"), ("b", "9"), ("d", "4")]) == (
        ("a", "1", None), ("b", "2", "9"), ("d", None, "4"))
    assert differences([("a", "1")], [("a", "1")]) == ()


def test_a_driver_update_is_one_section_with_before_and_after(cli, tmp_path):
    a = write(tmp_path / "before.json", node_report("n1", driver=OLD_DRIVER))
    b = write(tmp_path / "after.json", node_report("n1"))
    r = cli("diff", a, b, "--json", env=ENV)
    assert r.code == 1, r
    data = json.loads(r.out)
    assert data["schema_version"] == 1
    assert [(c["section"], c["fact"], c["before"], c["after"]) for c in data["changes"]] == [
        ("driver", "driver", "535.247.01", "580.95.05"), ("driver", "driver CUDA", "12.2", "13.0"),
        ("driver", "kernel module", None, "open 580.95.05")]
    assert ReportDiff.from_dict(data) == diff_files(a, b)  # the JSON reads back as the record
    text = cli("diff", a, b, env=ENV)
    assert text.code == 1 and "Driver" in text.out and "535.247.01 -> 580.95.05" in text.out
    assert "Versions" not in text.out  # only the sections that changed


def test_the_same_report_twice_is_no_difference(cli, tmp_path):
    a = write(tmp_path / "a.json", node_report("n1"))
    b = write(tmp_path / "b.json", node_report("n2"))  # another host name and nothing else: the same setup
    r = cli("diff", a, b, env=ENV)
    assert r.code == 0 and "No difference" in r.out


def test_sections_follow_the_doctors_order_and_findings_come_and_go(cli, tmp_path):
    extra = Toolkit(version="12.4.131", path="/usr/local/cuda-12.4", source="/usr/local/cuda-*", install_method="runfile")
    before = node_report("n1", torch=CPU_TORCH, findings=(Finding("torch-cpu-only", "error", "CPU torch", "d"),))
    s = before.snapshot
    after = node_report("n1", driver=OLD_DRIVER, gpus=GPUS8[:7], toolkits=s.toolkits + (extra,),
                        findings=(Finding("gpu-count-differs", "warning", "7 of 8", "d"),))
    d = compare_reports(before, after)
    sections = [c.section for c in d.changes]
    assert sections == sorted(sections, key=("environment", "driver", "visibility", "versions", "toolkits").index)
    facts = {(c.section, c.fact): (c.before, c.after) for c in d.changes}
    assert facts[("driver", "GPU 7")] == ("NVIDIA A100-SXM4-80GB, compute 8.0", None)
    assert facts[("versions", "torch")] == ("2.13.0+cpu", "2.13.0+cu130")
    assert facts[("toolkits", "toolkit /usr/local/cuda-12.4")] == (None, "12.4.131 (runfile)")
    assert [f.id for f in d.findings_new] == ["gpu-count-differs"] and [f.id for f in d.findings_gone] == ["torch-cpu-only"]
    md = cli("diff", write(tmp_path / "a.json", before), write(tmp_path / "b.json", after), "--format", "markdown", env=ENV)
    assert md.code == 1
    assert md.out.index("#### Driver") < md.out.index("#### Versions (torch)") < md.out.index("#### Toolkits")
    assert "| gone | `torch-cpu-only` | error | CPU torch |" in md.out


def test_summary_deviations_are_the_diffs_changes(tmp_path):
    """One comparison: every node fleet summarize --baseline calls deviating differs from the baseline in diff too,
    in the same facts; a node it calls identical shows no change."""
    folder = planted(tmp_path / "r")
    base = str(folder / "node-01.json")
    s = summarize(report_paths([str(folder)]), baseline_file=base)
    names = {"driver": "driver", "driver_cuda": "driver CUDA", "torch": "torch"}
    for node in s.nodes:
        d = diff_files(base, node.file)
        facts = {c.fact for c in d.changes}
        assert bool(node.deviations) == bool(d.changes), node.name
        for dim in node.deviations:
            if dim == "gpus":
                assert any(f.startswith("GPU ") for f in facts), node.name
            else:
                assert names[dim] in facts, (node.name, dim)


def test_hostile_values_are_escaped(cli, tmp_path):
    evil = replace(GPUS8[0], name="A100\x1b[31m | `x`")
    a = write(tmp_path / "a.json", node_report("n1"))
    b = write(tmp_path / "b.json", node_report("n1\x1b]0;x\x07", gpus=(evil,) + GPUS8[1:]))
    for fmt in ("text", "markdown"):
        r = cli("diff", a, b, "--format", fmt, env=ENV)
        assert r.code == 1 and "\x1b" not in r.out and "\x07" not in r.out, fmt


def test_a_file_that_is_not_a_report_is_a_usage_error(cli, tmp_path):
    a = write(tmp_path / "a.json", node_report("n1"))
    (tmp_path / "junk.json").write_text("{\"schema_version\": 1")
    for other in (str(tmp_path / "junk.json"), str(tmp_path / "missing.json"), str(tmp_path)):
        r = cli("diff", a, other, env=ENV)
        assert r.code == 2 and "doctor --json" in r.err, (other, r)


def test_diff_of_reports_the_doctor_wrote(machine, tmp_path):
    """Before and after a driver update on a stand-in node: the doctor's own JSON, then diff."""
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    before = tmp_path / "before.json"
    before.write_text(machine.doctor().out)
    shutil.rmtree(machine.site)  # torch reinstalled with another build
    machine.torch("2.5.1+cu124", "12.4", A10G, ARCH_CU121)
    after = tmp_path / "after.json"
    after.write_text(machine.doctor().out)
    d = diff_files(str(before), str(after))
    facts = {c.fact: (c.before, c.after) for c in d.changes}
    assert facts["torch"] == ("2.5.1+cu121", "2.5.1+cu124") and facts["torch CUDA"] == ("12.1", "12.4")
    assert all(c.section == "versions" for c in d.changes), d.changes


def test_report_facts_leave_out_what_changes_by_the_minute():
    busy = node_report("n1", gpus=tuple(replace(g, memory_used_mib=70000) for g in GPUS8))
    assert report_facts(busy) == report_facts(node_report("n1"))


@settings(max_examples=100)
@given(data=st.binary(max_size=300))
def test_property_any_bytes_as_a_report_are_a_diff_or_a_reason(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("d")
    (folder / "a.json").write_bytes(data)
    good = write(folder / "b.json", node_report("n1"))
    try:
        d = diff_files(str(folder / "a.json"), good)
    except ReportFileError as exc:
        assert exc.why
    else:
        assert isinstance(d, ReportDiff)
