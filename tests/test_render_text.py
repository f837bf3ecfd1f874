"""render/text: the one wrapping / fitting / width / colour helper of the human renderers."""

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.render.text import color_enabled, fit, paint, shell_words, terminal_width, wrap, wrap_command


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


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=20, max_value=120))
def test_wrap_never_raises_and_fits(text, width):
    lines = wrap(text, "  - ", "    ", width)
    assert lines
    assert all(len(x) <= width for x in lines)


def test_cudaenv_use_does_not_import_the_text_helper(fake_root, tmp_path):
    """The helper (and its textwrap) stays off the `cudaenv use` path."""
    fake_root.toolkit("12.4.131")
    probe = ("import sys, runpy\n"
             "sys.argv = ['cudaenv', 'use', '12.4', '--shell', 'bash', '--root', sys.argv[1]]\n"
             "try:\n    runpy.run_module('cudaenv', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print([m for m in ('cudaenv.render.text', 'textwrap') if m in sys.modules], file=sys.stderr)\n")
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    proc = subprocess.run([sys.executable, "-c", probe, str(fake_root.path)], env=env, capture_output=True, text=True,
                          timeout=60, cwd=str(tmp_path))
    assert "export CUDA_HOME=" in proc.stdout, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr
