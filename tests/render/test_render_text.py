"""render/text: the one wrapping / fitting / width / colour helper of the human renderers."""

import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.render.text import color_enabled, fit, paint, shell_words, terminal_width, wrap, wrap_command
from cudaenv.diagnose.view import build_view


def test_terminal_width_honours_columns_within_bounds():
    assert terminal_width({}) == 80
    assert terminal_width({"COLUMNS": "60"}) == 60
    assert terminal_width({"COLUMNS": "200"}) == 80  # capped: output stays within the documented 80 columns
    assert terminal_width({"COLUMNS": "200"}, cap=120) == 120
    assert terminal_width({"COLUMNS": "10"}) == 40  # a fix stays legible
    for junk in ("", "abc", "-5", "6O", "\u0663\u0663", "9" * 5000, " 70 "):
        assert terminal_width({"COLUMNS": junk}) == (70 if junk == " 70 " else 80)


def test_colour_only_on_a_terminal_without_no_color_or_dumb():
    assert color_enabled(True, {}) is True
    assert color_enabled(False, {}) is False
    assert color_enabled(True, {"NO_COLOR": ""}) is False  # any value, even empty
    assert color_enabled(True, {"TERM": "dumb"}) is False
    assert color_enabled(True, {"TERM": "xterm-256color"}) is True
    assert paint("x", "error", True) == "\033[31mx\033[0m"
    assert paint("x", "error", False) == "x"
    assert paint("x", "no-such-colour", True) == "x"


def test_wrap_prose():
    text = "driver 535.104.05 is older than the 580.65.06 that CUDA 13.0 needs; torch-cuda-unavailable is the id"
    lines = wrap(text, "  - ", "    ", 40)
    assert lines[0].startswith("  - driver") and all(x.startswith("    ") for x in lines[1:])
    assert all(len(x) <= 40 for x in lines)
    assert " ".join(x.strip(" -") for x in lines) == text.replace("  ", " ")
    assert "torch-cuda-unavailable" in " ".join(lines).split()  # never broken at a hyphen
    assert wrap("one\ntwo", "> ", "  ") == ["> one", "  two"]
    assert wrap("one\ntwo", "> ", "  ", newlines=False) == ["> one two"]
    assert wrap("", "  - ") == ["  -"]
    assert wrap("a " + "x" * 50, "", "  ", 20, long_words="keep") == ["a", "  " + "x" * 50]
    assert all(len(x) <= 20 for x in wrap("a " + "x" * 50, "", "  ", 20))
    assert wrap("/usr/local/" + "d" * 60 + "/bin", "", "  ", 30, long_words="fit")[0] == "/usr/local/d...ddddddddd/bin"  # 28 = 30 - indent


def test_fit_keeps_both_ends():
    assert fit("/usr/local/cuda-12.4", 40) == "/usr/local/cuda-12.4"
    assert fit("/opt/" + "x" * 50 + "/cuda-12.4", 21) == "/opt/xxxx...cuda-12.4"
    assert len(fit("y" * 100, 21)) == 21
    assert fit("abcdef", 2) == "ab"


def test_wrap_command_breaks_between_words_only():
    cmd = "python -m pip install 'torch==2.13.0+cu126' --index-url https://download.pytorch.org/whl/cu126 --force-reinstall"
    lines = wrap_command(cmd, "    ", 60)
    assert len(lines) > 1 and all(x.endswith(" \\") for x in lines[:-1])
    assert all(len(x) <= 60 for x in lines)
    words = []
    for x in lines:
        words += shell_words(x.rstrip("\\").rstrip())[0]
    assert words == shell_words(cmd)[0]


@settings(max_examples=300)
@given(st.text(max_size=300), st.integers(min_value=20, max_value=120))
def test_wrap_never_raises_and_fits(text, width):
    lines = wrap(text, "  - ", "    ", width)
    assert lines
    assert all(len(x) <= width for x in lines)


_WORDS = st.lists(st.sampled_from(["a", "b", "word", "x" * 25, "-", "/", "\u00e9", "\u2003", "\u00a0", " ", "  ", "\t", "\r",
                                    "\x0b", "\n"]), max_size=40).map("".join)


@settings(max_examples=600)
@given(_WORDS, st.integers(min_value=1, max_value=90), st.sampled_from(["", "  ", "note: ", "x" * 30, " " * 45]),
       st.sampled_from([None, "", "    ", "x" * 50]), st.sampled_from(["break", "keep", "fit"]), st.booleans())
def test_wrap_is_textwraps_reading(text, width, first, rest, long_words, newlines):
    """wrap's own greedy loop (textwrap stays unimported for plain text) gives textwrap's lines, word for word."""
    import textwrap

    from hypothesis import assume

    from cudaenv.render.text import fit as fit_word

    rest_ = " " * len(first) if rest is None else rest
    assume(width > max(len(first), len(rest_)))  # an indent as wide as the line: textwrap itself never ends
    got = wrap(text, first, rest, width=width, newlines=newlines, long_words=long_words)
    want = []
    for i, para in enumerate(text.split("\n") if newlines else [text]):
        lead = first if i == 0 else rest_
        if long_words == "fit":
            room = width - len(rest_)
            para = " ".join(fit_word(w, room) if len(w) > room else w for w in para.split(" "))
        lines = textwrap.wrap(para, width=width, initial_indent=lead, subsequent_indent=rest_,
                              break_long_words=long_words == "break", break_on_hyphens=False)
        want += [line.rstrip() for line in lines] or [lead.rstrip()]
    assert got == want


def test_cudaenv_use_does_not_import_the_text_helper(fake_root, tmp_path):
    """The helper (and its textwrap) stays off the `cudaenv use` path."""
    fake_root.toolkit("12.4.131")
    # (said at exit: an atexit function keeps the command's usual exit, cudaenv.cli._exit_now)
    probe = ("import atexit, sys, runpy\n"
             "sys.argv = ['cudaenv', 'use', '12.4', '--shell', 'bash', '--root', sys.argv[1]]\n"
             "atexit.register(lambda: print([m for m in ('cudaenv.render.text', 'textwrap') if m in sys.modules],"
             " file=sys.stderr))\n"
             "runpy.run_module('cudaenv', run_name='__main__')\n")
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    proc = subprocess.run([sys.executable, "-c", probe, str(fake_root.path)], env=env, capture_output=True, text=True,
                          timeout=60, cwd=str(tmp_path))
    assert "export CUDA_HOME=" in proc.stdout, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr


# ------------------------------------------------------------------ outside strings (issue 12)
from cudaenv.render.text import md_code, md_inline, md_text  # noqa: E402

HOSTILE = "evil\x1b]0;owned\x07\x1b[2J|`x`<b>*y*\n\u202e"


def test_markdown_escapes_show_outside_strings_as_written():
    assert md_text("a|b*c_`d`<e>") == "a\\|b\\*c\\_\\`d\\`\\<e\\>"
    assert md_code("/opt/a`b") == "``/opt/a`b``"
    assert md_code("`x`") == "`` `x` ``"
    assert md_code("/x|y") == "`/x\\|y`"
    assert md_inline("torch `import` <script> & a|b") == "torch `import` &lt;script&gt; &amp; a\\|b"
    for out in (md_text(HOSTILE), md_code(HOSTILE), md_inline(HOSTILE)):
        assert "\x1b" not in out and "\x07" not in out and "\n" not in out and "\u202e" not in out


def _hostile_snapshot():
    from cudaenv.model.snapshot import ActiveToolkit, Driver, Gpu, Note, Platform, Snapshot, Toolkit

    path = "/opt/cuda`12|4\x1b[31m"
    return Snapshot(platform=Platform(system="linux", distro=HOSTILE, machine="x86_64"),
                    driver=Driver(version="550.54.15\x1b[2J", source="nvidia-smi"),
                    gpus=(Gpu(0, name="GPU|<img src=x>`\x1b]0;t\x07", compute_capability="8.6"),),
                    toolkits=(Toolkit("12.4", path, "PATH", active=True),),
                    active_toolkit=ActiveToolkit(path, nvcc=path + "/bin/nvcc", version="12.4"),
                    notes=(Note("driver", "nvidia-smi said \x1b[5m|<x>"),))


def test_doctor_text_and_markdown_never_pass_a_control_character_or_markup():
    from cudaenv.model.reports import Finding
    from cudaenv.render.markdown import render_markdown
    from cudaenv.render.report import render_report

    s = _hostile_snapshot()
    findings = [Finding("cuda-home-mismatch", "warning", "CUDA_HOME points at %s" % s.toolkits[0].path, "detail " + HOSTILE,
                        ("export CUDA_HOME=%s" % s.toolkits[0].path,), "toolkits")]
    for verbose in (False, True):
        text = render_report(s, findings, build_view(s), verbose=verbose)
        md = render_markdown(s, findings, build_view(s), verbose=verbose)
        for out in (text, md):
            assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        prose = re.sub(r"(?ms)^```text$.*?^```$", "", md)  # inside the fenced facts block markup is inert
        assert re.search(r"(?<!\\)<(img|b|x)\b", prose) is None, prose  # a tag from outside is escaped (\< or &lt;)
        table = [line for line in md.splitlines() if line.startswith("| ")]
        assert table and all(line.replace("\\|", "").count("|") == 3 for line in table), table  # no cell split
        assert "``/opt/cuda`12\\|4\\x1b[31m``" in md  # a path with a backtick stays one code span


def test_list_and_plan_text_escape_folder_names():
    from types import SimpleNamespace

    from cudaenv.render.toolkits import render_toolkit_table
    from cudaenv.toolkit.table import list_view
    from cudaenv.model.snapshot import Note, Toolkit

    tk = Toolkit("12.4\x1b[2J", "/opt/cu\nda\t12\x1b[31m", "CUDAENV_TOOLKITS", nvcc="/opt/x/bin/nvcc")
    state = SimpleNamespace(toolkits=(tk,), cuda_symlink=None, active_toolkit=None)
    out = render_toolkit_table(state, list_view(state), [Note("toolkits", "odd \x1b[5m name\n")])
    assert "\x1b" not in out and "\t" not in out and "/opt/cu\\nda\\t12\\x1b[31m" in out
    row = next(line for line in out.splitlines() if "/opt/cu" in line)
    assert "12.4\\x1b[2J" in row and row.endswith("/opt/cu\\nda\\t12\\x1b[31m")  # one row, escaped
    from cudaenv.render.plan import render_plan_text
    from cudaenv.toolkit.uninstall.records import Plan, Step

    plan = Plan(targets=(tk,), steps=(Step("s1", "folder", "remove %s" % tk.path, commands=(("rm", "-rf", tk.path),),
                                           details=("line\x1b[2J",)),), notes=(Note("uninstall", "n\x1b]0;x\x07"),))
    text = render_plan_text(plan)
    assert "\x1b" not in text and "\x07" not in text and "\t" not in text
    assert "remove /opt/cu\\nda\\t12\\x1b[31m" in text


def test_the_doctor_renderers_read_derived_facts_from_the_view():
    """render/report, render/markdown and render/facts format one ReportView built once by diagnose (the doctor's
    facts view); they compute no facts."""
    import ast as _ast
    import os as _os

    import cudaenv.render as render_pkg
    from cudaenv.diagnose.view import ReportView, build_view
    from cudaenv.render.markdown import render_markdown
    from cudaenv.render.report import render_report
    from cudaenv.model.record import replace
    from cudaenv.model.snapshot import Driver, Platform, Snapshot, Torch
    from cudaenv.render.facts import render_facts

    s = Snapshot(platform=Platform(system="linux"), driver=Driver("535.247.01", source="nvidia-smi"),
                 torch=Torch("/usr/bin/python3", installed=True, version="2.5.1+cu121", cuda="12.1"))
    view = build_view(s)
    assert view.driver_cuda == "12.2" and view.torch_min_driver and view.driver_system == "linux"
    assert isinstance(view, ReportView) and view.torch_build == "cuda" and view.driver_shown == "535.247.01"
    other = replace(view, driver_cuda="99.9", torch_min_driver="999.1")
    assert "535.247.01 (CUDA 99.9)" in render_report(s, [], other)
    assert "needs driver >= 999.1" in render_report(s, [], other)
    assert "supports CUDA 99.9" in render_markdown(s, [], other)
    cpu = replace(view, torch_build="cpu")  # the view, not the snapshot, decides
    assert "2.5.1+cu121 (CPU-only)" in render_report(s, [], cpu)
    assert "CUDA none (CPU build)" in render_markdown(s, [], cpu)
    assert "2.5.1+cu121 (CPU only)" in render_facts(s, cpu)
    for name in ("report.py", "markdown.py", "facts.py", "toolkits.py", "plan.py"):
        tree = _ast.parse(open(_os.path.join(_os.path.dirname(render_pkg.__file__), name), encoding="utf-8").read())
        imported = {n.module for n in _ast.walk(tree) if isinstance(n, _ast.ImportFrom) and n.module}
        imported |= {a.name for n in _ast.walk(tree) if isinstance(n, _ast.Import) for a in n.names}
        assert not {m for m in imported if m.startswith(("cudaenv.diagnose._common", "cudaenv.facts", "cudaenv.diagnose.versions"))}, name


def _pasted(lines):
    """The lines as a shell reads them: a line ending in `` \\`` goes on with the next one."""
    out, cur = [], None
    for line in lines:
        body = line.strip() if cur is not None else line
        cur = body if cur is None else cur + " " + body
        if cur.endswith(" \\"):
            cur = cur[:-2]
        else:
            out.append(cur)
            cur = None
    return out + ([cur] if cur is not None else [])


def test_the_command_of_every_advice_item_pastes_whole():
    """Issue 13: advice wrapped between any two words split a command over two lines, so a paste ran
    `... && sudo systemctl` and then `restart docker`. The command an item gives stays on one line, or goes on
    with `` \\``, for every advice item cudaenv has, at any width it renders."""
    from cudaenv.render.text import advice_command, wrap_advice
    from cudaenv.core.resources import table_rows
    from cudaenv.core.text import printable

    items = [re.sub(r"^\{if_\w+\}", "", a) for row in table_rows("error_patterns") for a in row.get("advice", ())]
    assert len(items) > 150
    checked = 0
    for width in (80, 60, 40):
        for item in items:
            text = printable(item)
            lines = wrap_advice(text, "    - ", "      ", width)
            start, end, sure = advice_command(text)
            cmd = text[start:end]
            if cmd and (sure or len(cmd) <= width - 6) and not (start == 0 and end == len(text) and not sure):
                checked += 1
                assert any(cmd in line for line in _pasted(lines)), (width, item, lines)
            for line in lines:
                words, _ = shell_words(line.rstrip(" \\"))
                assert len(line) <= width or len(words) <= 2, (width, line)  # only a word longer than a line sticks out
    assert checked > 250  # about 95 items with a command, at each of three widths


def test_advice_breaks_before_the_command_and_continues_a_long_one():
    from cudaenv.render.text import wrap_advice

    docker = ("Install the NVIDIA Container Toolkit (the nvidia-container-toolkit package from NVIDIA's repository), "
              "then: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker")
    lines = wrap_advice(docker, "    - ", "      ", 80)
    assert not any(line.endswith("systemctl") for line in lines), lines
    assert "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker" in _pasted(lines)[-1]
    assert lines[-2].endswith(" \\") and lines[-3].endswith("then:")
    short = wrap_advice("Allow more time: cudaenv verify --timeout 300", "    - ", "      ", 40)
    assert short == ["    - Allow more time:", "      cudaenv verify --timeout 300"]
    note = wrap_advice("nvidia-smi    (on the host: the driver itself must work first)", "    - ", "      ", 80)
    assert note == ["    - nvidia-smi    (on the host: the driver itself must work first)"]
    prose = "Check that this driver branch supports the GPU, and the firmware settings (Above 4G decoding, Resizable BAR)"
    assert wrap_advice(prose, "- ", "  ", 60) == wrap(prose, "- ", "  ", 60, newlines=False)


def test_prose_after_a_command_is_never_continued_like_shell_code():
    # issue 27: "cudaenv verify runs a matmul ... works \" put a shell continuation into a sentence
    from cudaenv.render.text import advice_command, wrap_advice
    from cudaenv.core.resources import table_rows

    items = [re.sub(r"^\{if_\w+\}", "", a) for row in table_rows("error_patterns") for a in row.get("advice", ())]
    for item in items + ["cudaenv verify runs a matmul on each GPU and shows whether cuBLAS works on it at all",
                         "See who else holds memory: nvidia-smi (cudaenv doctor lists them with the commands to end them)"]:
        for width in (80, 60):
            lines = wrap_advice(item, "    - ", "      ", width)
            for line in lines:
                if line.endswith(" \\"):
                    last = line[:-2].split()[-1]
                    assert last not in ("the", "and", "a", "works", "with", "shows", "or"), (width, item, lines)
    text = "A toolkit (CUDA 8.0 to 12.9): cudaenv use 12.9; where none is installed: cudaenv install 12.9 --plan, or --runfile FILE"
    start, end, _ = advice_command(text)
    assert text[start:end] == "cudaenv install 12.9 --plan"  # the sentence's comma is not the command's


@given(st.text(alphabet=" ab(){}[]:|&", max_size=30), st.sampled_from([": ", "  (", "   ", " && ", " | ", " || ", "(", " "]),
       st.integers(0, 8))
def test_top_level_finds_what_a_scan_of_each_character_finds(text, needle, start):
    from cudaenv.render.text import _top_level

    depth, expected = 0, -1  # the reading _top_level had before it jumped from bracket to bracket
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(needle, i):
            expected = i
            break
    assert _top_level(text, needle, start) == expected


@given(st.text(alphabet=" ab\u00e9", max_size=30))
def test_space_chunks_are_res_split(text):
    from cudaenv.render.text import _space_chunks

    assert _space_chunks(text) == [c for c in re.split("( +)", text) if c]


def test_a_possessive_ends_the_command_before_the_prose_that_leads_to_it():
    # issue 27: "cudaenv explain --probe "..." adds this \" and "sha256sum FILE against \" continued prose like shell code
    from cudaenv.render.text import advice_command, wrap_advice
    from cudaenv.core.resources import table_rows

    probe = "cudaenv explain --probe \"...\" adds this machine's device count to this explanation"
    start, end, _ = advice_command(probe)
    assert probe[start:end] == "cudaenv explain --probe \"...\""
    check = "Check the file before running it: cudaenv check-installer FILE; sha256sum FILE against NVIDIA's published checksum"
    start, end, _ = advice_command(check)
    assert check[start:end] == "cudaenv check-installer FILE; sha256sum FILE"
    items = [re.sub(r"^\{if_\w+\}", "", a) for row in table_rows("error_patterns") for a in row.get("advice", ())]
    for item in items + [probe, check]:
        start, end, sure = advice_command(item)
        if sure:  # written as a command: one longer than a line is continued with " \\" (the others wrap as prose)
            assert not re.search(r"\w's\b|\ws'(\s|$)", re.sub(r"\"[^\"]*\"|`[^`]*`", "", item[start:end])), item
        for width in (80, 60):
            lines = wrap_advice(item, "    - ", "      ", width)
            for line, after in zip(lines, lines[1:]):
                if line.endswith(" \\"):
                    assert not re.search(r"\w's\b", after.split("    ")[0]), (width, item, lines)


def test_a_labelled_error_puts_a_long_path_on_a_line_of_its_own():
    from cudaenv.render.text import wrap_labelled

    path = "/tmp/" + "a_rather_long_folder_name/" * 3 + "node-07.json:"
    assert wrap_labelled(path + " no such file", "cudaenv: error: ", "  ", 60) == ["cudaenv: error:", "  " + path, "  no such file"]
    assert wrap_labelled("no such file", "cudaenv: error: ", "  ", 60) == ["cudaenv: error: no such file"]


def test_the_verbose_facts_follow_the_terminal_width():
    # issue 27: doctor --verbose wrapped its facts at 80 columns whatever COLUMNS said
    from cudaenv.diagnose import diagnose
    from cudaenv.diagnose.view import build_view
    from cudaenv.model.record import replace
    from cudaenv.render.report import render_report

    from machine import cuda_torch, healthy

    s = healthy(torch=cuda_torch(nvidia_packages=("nvidia-cudnn-cu13==9.13.0.50", "nvidia-cublas-cu13==13.0.0.19",
                                                  "nvidia-nccl-cu13==2.27.7")))
    s = replace(s, platform=replace(s.platform, libcuda=("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05")))
    for width in (80, 60, 50):
        text = render_report(s, diagnose(s), build_view(s), verbose=True, width=width)
        assert "Facts (--verbose" in text and "nvidia-nccl-cu13" in text
        assert max(len(line) for line in text.splitlines()) <= width, width


def test_the_sentence_s_comma_after_a_command_stays_against_it():
    # review: "cudaenv install 12.9 --plan    , or --runfile FILE": the comma after the command was set off like a note
    from cudaenv.render.text import wrap_advice

    text = "where none is installed: cudaenv install 12.9 --plan, or --runfile FILE"
    assert wrap_advice(text, "    - ", "      ", 80) == ["    - " + text]
    lines = wrap_advice(text, "    - ", "      ", 50)
    assert "cudaenv install 12.9 --plan, or" in " ".join(line.strip() for line in lines), lines
    assert not any("    ," in line or line.strip().startswith(",") for line in lines), lines


def test_the_library_facts_and_the_checklists_paths_are_escaped():
    """library_facts (the doctor's "torch loads" row, and the Markdown's "CUDA libraries loaded") escapes what it read
    from the files: the NEEDED entry, the path, its version, and on Windows the consumer that loaded it first and the
    file its own search takes; the checklist's /usr/local/cuda link row, the --root line and a hint escape theirs."""
    from cudaenv.model.reports import Finding
    from cudaenv.model.snapshot import LoadedLibrary
    from cudaenv.model.toolkits import CudaSymlink
    from cudaenv.model.record import replace
    from cudaenv.render.report import library_facts, render_report

    bad = "\x1b]0;owned\x07\x1b[2J\u202e"
    found = LoadedLibrary(consumer="torch", object="/site/torch/lib/libtorch_cuda.so", needed="libcudart.so.12" + bad,
                          path="/opt/cuda" + bad + "/lib64/libcudart.so.12", via="LD_LIBRARY_PATH", version="12.8" + bad)
    loaded = LoadedLibrary(consumer="onnxruntime-gpu", object="C:\\e\\ort\\onnxruntime_providers_cuda.dll",
                           needed="cudnn64_9.dll", path="C:\\e\\torch\\lib\\cudnn64_9.dll" + bad, via="loaded",
                           first_loaded_by="torch" + bad, own="C:\\e\\other" + bad + "\\cudnn64_9.dll")
    missing = LoadedLibrary(consumer="torch", object="/site/torch/lib/libtorch_cuda.so", needed="libnccl.so.2" + bad,
                            loaded_by="dlopen")
    for lib in (found, loaded, missing):
        out = library_facts(lib)
        assert not {"\x1b", "\x07", "\u202e"} & set(out), out
        assert "\\x1b]0;owned\\x07\\x1b[2J" in out, out
    assert library_facts(found).startswith("libcudart.so.12\\x1b]0;owned\\x07\\x1b[2J\\u202e: /opt/cuda\\x1b]0;owned")
    s = replace(_hostile_snapshot(), root="/mnt/img" + bad, cuda_symlink=CudaSymlink("/usr/local/cuda" + bad, "cuda-12" + bad))
    hint = Finding("some-hint", "info", "look at /opt/x" + bad, "", ("ls /opt/x" + bad,), "hints")
    text = render_report(s, [hint], build_view(s))
    assert not {"\x1b", "\x07", "\u202e"} & set(text), text
    assert "/usr/local/cuda\\x1b]0;owned" in text and "/mnt/img\\x1b]0;owned" in text and "ls /opt/x\\x1b]0;owned" in text
