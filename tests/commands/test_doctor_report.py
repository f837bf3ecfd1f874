"""`cudaenv doctor` output: the checklist, --format markdown, --json findings, exit codes, --strict, colours, spinner."""

import io
import re
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import recorded
from cudaenv.cli import main
from cudaenv.diagnose import diagnose, exit_code
from cudaenv.model.reports import Finding
from cudaenv.render.markdown import render_markdown
from cudaenv.render.report import render_report
from cudaenv.render.text import shell_words, wrap_command
from cudaenv.render.spinner import Spinner
from cudaenv.diagnose.view import build_view
from machine import A10G, ARCH_CU118, ARCH_CU121, ARCH_CU126, RTX2080TI_X4, TITANV_5880, a10g_535, healthy

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Tty(io.StringIO):
    def isatty(self):
        return True


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
    # two GPU models, CUDA_DEVICE_ORDER unset: device-order-differs, a warning
    machine.smi(query=recorded("smi-query-titanv-5880.txt"))
    machine.torch("2.13.0+cu126", "12.6", TITANV_5880, ARCH_CU126, order=[1, 0])
    assert machine.doctor().code == 0
    assert machine.doctor("--strict").code == 1
    assert machine.doctor("--strict", fmt="--format=markdown").code == 1


def test_usage_errors_exit_2(cli):
    r = cli("doctor", "--format", "yaml")
    assert r.code == 2 and "invalid choice" in r.err
    r = cli("doctor", "--json", "--format", "markdown")
    assert r.code == 2 and "disagree" in r.err
    r = cli("doctor", "--bogus")
    assert r.code == 2 and "--bogus" in r.err
    r = cli("doctor", "--python", "/nonexistent/python3")
    assert r.code == 2 and "does not exist" in r.err and "Traceback" not in r.err
    r = cli("doctor", "--root", "/nonexistent-root")
    assert r.code == 2 and "not a directory" in r.err and "Traceback" not in r.err


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


def test_markdown_names_torch_cudnn_and_nccl(machine):
    md = a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).doctor(fmt="--format=markdown").out
    assert "| torch cuDNN / NCCL | 9.10.2 / 2.27.3 |" in md  # what the (fake) torch build reports
    assert "| torch arch list | sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 |" in md


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
    out3 = Tty()
    main(args, env=dict(env, TERM="dumb"), out=out3, err=io.StringIO())
    assert not ANSI.search(out3.getvalue()) and ANSI.sub("", out.getvalue()) == out3.getvalue()


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
    lines = wrap_command("python -m pip install torch==2.13.0+cu126 --index-url https://download.pytorch.org/whl/cu126"
                      "    # the CUDA 12.6 build", "    ")
    assert lines[0] == "    # the CUDA 12.6 build"
    assert lines[1].endswith(" \\") and all(len(x) <= 80 for x in lines)
    joined = " ".join(x.strip().rstrip("\\").strip() for x in lines[1:])
    assert joined == "python -m pip install torch==2.13.0+cu126 --index-url https://download.pytorch.org/whl/cu126"
    assert wrap_command("kill 12    # python", "  ") == ["  kill 12  # python"]
    assert wrap_command("# prose only", "  ") == ["  # prose only"]


def test_render_functions_are_pure_and_fit(monkeypatch):
    s = healthy()
    found = diagnose(s)
    text = render_report(s, found, build_view(s))
    assert text == render_report(s, found, build_view(s)) and "No problems found." in text
    assert all(len(line) <= 80 for line in text.splitlines())
    md = render_markdown(s, found, build_view(s))
    assert "| Driver | 580.95.05 (supports CUDA 13.0), open module |" in md and "**Findings:** none." in md


# ------------------------------------------------------------------ 80 columns with long paths and many GPUs
LONG = "opt/site software/very-long-directory-name-for-hpc-modules/cuda/toolkits/by-version"
LONG_TK = "cuda-12.1.1-with-a-long-suffix-name"


def _crowded(m):
    """Four GPUs, a busy one, toolkits in a long folder with a space, CUDA_HOME/LD_LIBRARY_PATH on another one."""
    m.smi(query=recorded("smi-query-2080ti-x4.txt"), apps=recorded("smi-apps-2080ti.txt"))
    m.torch("2.7.1+cu118", "11.8", RTX2080TI_X4, ARCH_CU118)
    m.root.toolkit("12.1.1", where=LONG, name=LONG_TK)
    m.root.toolkit("11.8.0", cudnn="8.9.7")
    m.env["CUDAENV_TOOLKITS"] = "/" + LONG
    m.path_in_root += ["/%s/%s/bin" % (LONG, LONG_TK), "/usr/local/cuda-11.8/bin"]
    m.env["CUDA_HOME"] = "/usr/local/cuda-11.8"
    m.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.8/lib64:/%s/x/lib64" % LONG
    m.env["CUDA_VISIBLE_DEVICES"] = "1,2,3"
    return m


def _over(text, width=80):
    """Lines wider than ``width`` that are not explained by one shell word too long for any line."""
    bad = []
    for line in text.splitlines():
        if len(line) <= width:
            continue
        words, _ = shell_words(line.rstrip(" \\"))
        if not any(len(w) > width - 10 for w in words):
            bad.append(line)
    return bad


def test_long_paths_and_many_gpus_fit_80_columns(machine):
    r = _crowded(machine).doctor(fmt=None)
    assert r.code == 1
    found = set(re.findall(r"^(?:ERROR|WARNING|INFO)  (\S+)$", r.out, re.M))
    assert {"nvcc-torch-mismatch", "multiple-toolkits-on-path", "cuda-home-mismatch", "ld-library-path-mismatch",
            "gpu-memory-busy"} <= found, found
    assert _over(r.out) == []
    long_lines = [x for x in r.out.splitlines() if len(x) > 80]
    # the only wider lines are the quoted long paths, kept whole so that they paste
    assert long_lines and all(("'/%s/" % LONG.split("/")[0]) in x for x in long_lines), long_lines
    v = machine.doctor("--verbose", fmt=None)
    assert _over(v.out) == []


def _pasted(lines):
    """What a shell reads from pasted lines: backslash-newline joins, comments drop."""
    text = "\n".join(x.strip() for x in lines).replace(" \\\n", " ")
    return [w for line in text.split("\n") for w in shlex.split(line, comments=True)]


def test_fix_lines_never_break_a_quoted_word_or_a_comment():
    path = "/opt/site software/%s/cuda-12.1" % ("x" * 40)
    item = "export CUDA_HOME=%s    # match the nvcc on PATH" % shlex.quote(path)
    lines = wrap_command(item, "    ")
    assert lines[0] == "    # match the nvcc on PATH"
    assert _pasted(lines) == ["export", "CUDA_HOME=" + path]
    item = "sudo dnf install akmod-nvidia kernel-devel-6.18.44-fc-v1045 kernel-headers-6.18.44-fc-v1045  # from RPM Fusion"
    lines = wrap_command(item, "    ")
    assert lines[0] == "    # from RPM Fusion" and all(len(x) <= 80 for x in lines)
    assert _pasted(lines) == shlex.split(item, comments=True)
    item = '/very/long/path/to/a/virtual/environment/bin/python -c "import torch; torch.cuda.init()"'
    lines = wrap_command(item, "    ")
    assert lines[-1].strip() == '"import torch; torch.cuda.init()"' and _pasted(lines) == shlex.split(item)


@settings(max_examples=200)
@given(st.lists(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=60),
                min_size=1, max_size=12),
       st.text(alphabet="abc def#", max_size=40))
def test_fix_lines_paste_back_to_the_same_words(words, comment):
    item = " ".join(shlex.quote(w) for w in words)
    if comment.strip():
        item += "    # " + comment
    lines = wrap_command(item, "    ")
    assert _pasted(lines) == words
    for line in lines:
        if len(line) > 80:
            assert any(len(shlex.quote(w)) > 80 - 10 for w in words), lines


def test_shell_words_never_raise_on_any_text():
    @settings(max_examples=200)
    @given(st.text(max_size=200))
    def check(text):
        words, comment = shell_words(text)
        assert isinstance(words, list) and isinstance(comment, str)

    check()


# ------------------------------------------------------------------ --verbose: every fact the probes saw
def test_verbose_adds_every_fact_a_helper_asks_for(machine):
    _crowded(machine)
    plain = machine.doctor(fmt=None).out
    text = machine.doctor("--verbose", fmt=None).out
    md = machine.doctor("--verbose", fmt="--format=markdown").out
    uuids = re.findall(r"GPU-[0-9a-f-]{36}", recorded("smi-query-2080ti-x4.txt"))
    assert len(uuids) == 4 and not any(u in plain for u in uuids)
    for out in (text, md):
        for fact in uuids + ["00000000:0B:00.0", "/usr/local/cuda-11.8", LONG_TK, "sm_37 sm_50", "cuDNN",
                             "cuda:0 is GPU 1", "cuda:2 is GPU 3", "11264 MiB"]:
            assert fact in out, fact
    assert text.index("Problems:") < text.index("Facts (--verbose")
    assert text.count("\nNotes\n") == 1
    assert "<details><summary>All facts</summary>" in md and md.count("```") % 2 == 0
    assert machine.doctor("--verbose").json()["findings"] == machine.doctor().json()["findings"]


# ------------------------------------------------------------------ this machine
@pytest.mark.real_machine
def test_real_machine_checklist(cli_subprocess):
    """This machine: CUDA 13.0 at /usr/local/cuda-13.0 behind /usr/local/cuda and an nvcc wrapper, no driver, no GPU."""
    from pathlib import Path

    if not Path("/usr/local/cuda-13.0/bin/nvcc").exists() or Path("/proc/driver/nvidia").exists():
        pytest.skip("not the machine with the CUDA 13.0 toolkit and no driver")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root"}
    r = cli_subprocess("doctor", "--quick", env=env)
    assert r.code == 0, r  # no GPU and no driver is not an error: nothing here wants one
    out = r.out
    assert re.search(r"^  ok +active toolkit +/usr/local/cuda-13\.0 \(CUDA 13\.0[.\d]*, via PATH\)", out, re.M), out
    assert re.search(r"^  ok +/usr/local/cuda +-> /usr/local/cuda-13\.0", out, re.M)
    assert re.search(r"^  ok +GPUs +none seen", out, re.M)
    assert "ERROR" not in out and all(len(line) <= 80 for line in out.splitlines())
    md = cli_subprocess("doctor", "--quick", "--format", "markdown", "--verbose", env=env).out
    assert "/usr/local/cuda-13.0" in md and "| GPUs | none seen |" in md and "<summary>All facts</summary>" in md


def test_import_order_reaches_the_snapshot(machine):
    """`doctor --import-order` (issue 29, Windows' DLL loads): the comma-separated modules, trimmed and without empty
    ones, reach the snapshot's import_order (JSON); unstated, it is empty (the usual program: torch first)."""
    a10g_535(machine)
    assert machine.findings("--quick", "--frameworks")[2]["import_order"] == []
    data = machine.findings("--quick", "--frameworks", "--import-order", " paddle, torch ,,onnxruntime.preload_dlls")[2]
    assert data["import_order"] == ["paddle", "torch", "onnxruntime.preload_dlls"]
