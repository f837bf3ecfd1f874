"""`cudaenv doctor` output: the checklist, --format markdown, --json findings, exit codes, --strict, colours, spinner."""

import io
import re
import sys

import pytest

from conftest import SYSTEM_BIN, recorded
from cudaenv.cli import main
from cudaenv.diagnose import Finding, diagnose, exit_code
from cudaenv.render.markdown import render_markdown
from cudaenv.render.report import fix_lines, render_report
from cudaenv.render.spinner import Spinner
from test_diagnose_rules import healthy
from test_diagnose_scenarios import A10G, ARCH_CU121, ARCH_CU128, Machine, a10g_535

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def machine(fake_root, fake_bin, tmp_path, cli, bare_python):
    return Machine(fake_root, fake_bin, tmp_path, cli, bare_python)


from test_diagnose_scenarios import bare_python  # noqa: E402,F401  (the module-scoped venv fixture)


def _cpu_torch_on_a10g(m):
    return a10g_535(m).torch("2.13.0+cpu", None)


# ------------------------------------------------------------------ the checklist
def test_checklist_sections_marks_and_fix(machine):
    _cpu_torch_on_a10g(machine)
    r = machine.doctor(fmt=None)
    assert r.code == 1
    out = r.out
    heads = ["Environment", "Driver", "Visibility", "Versions (torch)", "Toolkits", "Resources"]
    positions = [out.index("\n%s\n" % h) for h in heads]
    assert positions == sorted(positions)
    assert re.search(r"^  ok +driver +535\.247\.01 \(CUDA 12\.2\)", out, re.M)
    assert re.search(r"^  error +torch +2\.13\.0\+cpu \(CPU-only\)", out, re.M)
    assert "ERROR  torch-cpu-only" in out and "  fix:" in out
    assert "https://download.pytorch.org/whl/cu126" in out
    assert all(len(line) <= 80 for line in out.splitlines()), max(out.splitlines(), key=len)
    assert not ANSI.search(out)


def test_healthy_report_says_no_problems_and_exits_0(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    r = machine.doctor(fmt=None)
    assert r.code == 0 and "No problems found." in r.out and "ERROR" not in r.out and "WARNING" not in r.out


def test_strict_fails_on_warnings_only(machine):
    a10g_535(machine).torch("2.9.0+cu128", "12.8", A10G, ARCH_CU128)  # minor-version compatibility: a warning
    assert machine.doctor().code == 0
    assert machine.doctor("--strict").code == 1
    assert machine.doctor("--strict", fmt="--format=markdown").code == 1


def test_usage_errors_exit_2(cli):
    r = cli("doctor", "--format", "yaml")
    assert r.code == 2 and "invalid choice" in r.err
    r = cli("doctor", "--json", "--format", "markdown")
    assert r.code == 2 and "disagree" in r.err


def test_json_findings_are_added_to_the_snapshot(machine):
    _cpu_torch_on_a10g(machine)
    data = machine.doctor().json()
    assert data["schema_version"] == 1 and list(data)[-1] == "findings"
    f = next(f for f in data["findings"] if f["id"] == "torch-cpu-only")
    assert f["severity"] == "error" and isinstance(f["fix"], list) and f["fix"]
    assert machine.doctor(fmt="--format=json").json()["findings"] == data["findings"]


def test_markdown_is_paste_ready(machine):
    _cpu_torch_on_a10g(machine)
    r = machine.doctor(fmt="--format=markdown")
    md = r.out
    assert r.code == 1 and md.startswith("### CUDA environment")
    for row in ("| Driver | 535.247.01 (supports CUDA 12.2) |", "| GPUs | 0: NVIDIA A10G, compute 8.6", "| CUDA_VISIBLE_DEVICES | unset |",
                "| torch | 2.13.0+cpu, CUDA none (CPU build)", "| torch devices | 0 (cuda.is_available() = False) |",
                "| Toolkits | none found |", "| cuDNN | none found |"):
        assert row in md, row
    assert "- **error** `torch-cpu-only`" in md and "```sh" in md
    assert md.count("```") % 2 == 0


# ------------------------------------------------------------------ colours and the spinner
def test_colours_only_on_a_terminal_and_never_with_no_color(machine):
    _cpu_torch_on_a10g(machine)
    env = dict(machine.env, PATH=machine.bin.env_path, CUDAENV_ROOT=str(machine.root.path), TERM="xterm")
    args = ["doctor", "--python", machine.python]
    out = Tty()
    main(args, env=env, out=out, err=io.StringIO())
    assert "\x1b[31m" in out.getvalue()  # red for the error
    assert all(len(ANSI.sub("", line)) <= 80 for line in out.getvalue().splitlines())
    out2 = Tty()
    main(args, env=dict(env, NO_COLOR="1"), out=out2, err=io.StringIO())
    assert not ANSI.search(out2.getvalue())


def test_spinner_on_a_terminal_stderr_only(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    env = dict(machine.env, PATH=machine.bin.env_path, CUDAENV_ROOT=str(machine.root.path))
    err = Tty()
    out = io.StringIO()
    main(["doctor", "--json", "--python", machine.python], env=env, out=out, err=err)
    assert "\r" in err.getvalue() and err.getvalue().endswith("\r")  # drawn, then cleared
    assert "\r" not in out.getvalue()
    plain = io.StringIO()
    main(["doctor", "--json", "--python", machine.python], env=env, out=io.StringIO(), err=plain)
    assert plain.getvalue() == ""


def test_spinner_unit():
    s = Tty()
    with Spinner(s, enabled=True, interval=0.01) as sp:
        sp("importing torch in /usr/bin/python3")
        import time

        time.sleep(0.05)
    assert "importing torch" in s.getvalue()
    quiet = Tty()
    with Spinner(quiet, enabled=False) as sp:
        sp("x")
    assert quiet.getvalue() == ""


# ------------------------------------------------------------------ pure pieces
def test_exit_code_rules():
    err = Finding("x", "error", "t", "d")
    warn = Finding("y", "warning", "t", "d")
    info = Finding("z", "info", "t", "d")
    assert exit_code([]) == 0 and exit_code([info]) == 0 and exit_code([info], strict=True) == 0
    assert exit_code([warn]) == 0 and exit_code([warn], strict=True) == 1
    assert exit_code([err]) == 1 and exit_code([err, info], strict=True) == 1


def test_fix_lines_keep_commands_whole_and_within_80_columns():
    lines = fix_lines("python -m pip install torch==2.13.0+cu126 --index-url https://download.pytorch.org/whl/cu126"
                      "    # the CUDA 12.6 build", "    ")
    assert lines[0] == "    # the CUDA 12.6 build"
    assert lines[1].endswith(" \\") and all(len(x) <= 80 for x in lines)
    joined = " ".join(x.strip().rstrip("\\").strip() for x in lines[1:])
    assert joined == "python -m pip install torch==2.13.0+cu126 --index-url https://download.pytorch.org/whl/cu126"
    assert fix_lines("kill 12    # python", "  ") == ["  kill 12  # python"]
    assert fix_lines("# prose only", "  ") == ["  # prose only"]


def test_render_functions_are_pure_and_fit(monkeypatch):
    s = healthy()
    found = diagnose(s)
    text = render_report(s, found)
    assert text == render_report(s, found) and "No problems found." in text
    assert all(len(line) <= 80 for line in text.splitlines())
    md = render_markdown(s, found)
    assert "| Driver | 580.95.05 (supports CUDA 13.0), open module |" in md and "**Findings:** none." in md
