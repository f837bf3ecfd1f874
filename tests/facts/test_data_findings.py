"""data/findings.json: one home for what each doctor finding is (issue 25: section, checklist row, fixable and
pasteable were spread over diagnose, render/report, fix/plan, fix/apply, commands/fix and pasted).
The table must say exactly what the rules return, and every reader must read it."""

import ast
import json

import pytest

from builders import docgen, package_sources
from cudaenv.core.resources import load_table
from cudaenv.facts import findings

TABLE = load_table("findings")
ROWS = TABLE["rows"]
RULES = {f["id"]: f for f in docgen().doctor_findings()}  # read from the rules' own F(...) calls


def test_every_row_names_a_known_source_and_every_source_is_used():
    keys = {row["id"]: [row["source"]] + row.get("also", []) for row in ROWS}
    assert {key for named in keys.values() for key in named} == set(TABLE["sources"])
    for row in ROWS:
        named = keys[row["id"]]
        assert "rule" in named and len(set(named)) == len(named), row["id"]
        for field, key in (("fixable", "fix"), ("pasteable", "paste")):
            assert row[field] == (key in named), row["id"]
        assert row["after_fix"] == ("fix" in named or "after-fix" in named), row["id"]
        assert (row["checklist"] is not None) == ("checklist" in named), row["id"]


def test_the_table_has_exactly_the_ids_the_rules_return_each_in_its_section():
    assert [r["id"] for r in ROWS] == list(findings.finding_ids())
    assert len(set(findings.finding_ids())) == len(ROWS)
    assert set(findings.finding_ids()) == set(RULES)
    for row in ROWS:
        rule = RULES[row["id"]]
        assert (row["section"], sorted(row["severities"])) == (rule["section"], sorted(rule["severities"])), row["id"]


def test_sections_in_the_doctors_order():
    from cudaenv.diagnose import SECTIONS

    order = [r["section"] for r in ROWS]
    assert order == sorted(order, key=SECTIONS.index)


def test_a_finding_takes_its_section_from_the_table():
    from cudaenv.diagnose._common import make

    assert make("toolkits")("no-driver", "error", "t", "d").section == "driver"  # the row wins over the builder
    assert make("toolkits")("not-a-finding", "error", "t", "d").section == "toolkits"


def _checklist_rows_of_the_report():
    text = dict(package_sources())["render/report.py"]
    return {node.args[1].value for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "_ids" and len(node.args) == 2 and isinstance(node.args[1], ast.Constant)}


def test_every_checklist_row_is_one_the_report_shows_and_every_row_of_the_report_is_in_the_table():
    assert {r["checklist"] for r in ROWS if r["checklist"]} == _checklist_rows_of_the_report() == set(dict(findings.checklist()))
    assert {r["id"] for r in ROWS if r["checklist"] is None} == {r["id"] for r in ROWS if r["section"] == "hints"}


def test_fixable_pasteable_and_after_fix():
    assert findings.ids_where("fixable") == ("torch-missing", "torch-cpu-only", "driver-too-old-for-torch", "gpu-arch-unsupported")
    assert set(findings.ids_where("fixable")) < set(findings.ids_where("after_fix"))
    assert set(findings.ids_where("after_fix")) - set(findings.ids_where("fixable")) == {"torch-import-error", "torch-cuda-unavailable"}
    assert "nvcc-torch-mismatch" in findings.ids_where("pasteable") and "cudnn-mismatch" not in findings.ids_where("pasteable")


def test_explains_shared_ids_are_doctor_findings():
    """A row of data/error_patterns.json marked doctor_finding shares its id with a row here."""
    shared = {r["id"] for r in load_table("error_patterns")["rows"] if r.get("doctor_finding")}
    assert shared and shared <= set(findings.finding_ids()), shared - set(findings.finding_ids())


@pytest.mark.parametrize("module, names", [
    ("fix/plan.py", ("FIXABLE",)),
    ("pasted/__init__.py", ("PASTE_FINDINGS",)),
])
def test_no_second_list_of_finding_attributes(module, names):
    text = dict(package_sources())[module]
    defined = {t.id for node in ast.parse(text).body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    assert not defined & set(names)


def test_no_module_outside_diagnose_lists_three_doctor_ids():
    """A tuple of doctor finding ids written out in code is a second home of an attribute of theirs (the checklist's
    rows, fix's set, the paste's set were such tuples): ask cudaenv.facts.findings instead."""
    ids = set(findings.finding_ids())
    found = []
    for rel, text in package_sources():
        if rel.startswith(("diagnose/", "_child/")):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                literal = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in ids]
                if len(literal) >= 3:
                    found.append((rel, node.lineno, literal))
    assert found == []


def test_the_table_is_one_row_per_line():
    with open(findings.__file__.replace("facts/findings.py", "data/findings.json"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert sum(1 for line in lines if line.lstrip().startswith('{"id"')) == len(ROWS)
    assert json.loads("\n".join(lines)) == TABLE


def test_every_finding_says_who_applies_its_fix():
    """fix_kind (issue 27): a fix that needs the host, a reboot or the user's code says so; `cudaenv fix`'s are commands."""
    assert {row["fix_kind"] for row in ROWS} == set(findings.FIX_KINDS)
    assert {findings.fix_kind(i) for i in findings.ids_where("fixable")} == {"command"}
    assert findings.fix_kind("driver-library-mismatch") == "reboot" and findings.fix_kind("container-toolkit-missing") == "host"
    assert {findings.fix_kind(r["id"]) for r in ROWS if r["section"] == "hints"} <= {"command", "user-code"}
    assert findings.fix_kind("not-a-finding") is None


def test_a_finding_carries_its_fix_kind_and_the_text_says_what_the_fix_needs():
    from cudaenv.diagnose import diagnose
    from cudaenv.model.record import replace
    from cudaenv.model.snapshot import ToolStatus
    from cudaenv.render.markdown import render_markdown
    from cudaenv.render.report import render_report
    from cudaenv.diagnose.view import build_view

    from machine import healthy

    s = healthy()
    s = replace(s, tools=(ToolStatus("nvml", None, status="failed", failure="driver-library-mismatch"),) + s.tools[1:])
    found = {f.id: f for f in diagnose(s)}
    assert found["driver-library-mismatch"].fix_kind == "reboot"
    assert found["driver-library-mismatch"].to_dict()["fix_kind"] == "reboot"  # the JSON says it too
    text = render_report(s, tuple(found.values()), build_view(s))
    assert "  fix (needs a reboot):" in text
    assert "The fix needs a reboot." in render_markdown(s, tuple(found.values()), build_view(s))
    env = replace(healthy(), env=(("CUDA_LAUNCH_BLOCKING", "1"),))
    hint = {f.id: f for f in diagnose(env)}["launch-blocking-set"]
    assert hint.fix_kind == "command"
