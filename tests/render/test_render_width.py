"""render/width (issue 33): display width, and prose with Chinese in it wrapped to the terminal's columns."""

from hypothesis import given
from hypothesis import strategies as st

from cudaenv.render.text import fit, wrap, wrap_command
from cudaenv.render.width import pad, wide_chunks, width_of

CLOSING = "，。、；：？！）》」"


def test_a_chinese_character_takes_two_columns():
    assert width_of("abc") == 3
    assert width_of("显存") == 4
    assert width_of("GPU 0 的显存：") == 14
    assert width_of("café") == 4  # not wide: one column each, exactly its len
    assert pad("显存", 8) == "显存    " and pad("GPU", 8) == "GPU     "


def test_chinese_prose_wraps_within_the_width_and_never_inside_a_word():
    text = ("驱动已安装，但其内核模块没有加载：nvidia-smi 无法与驱动通信。很可能的原因：内核已更新，而模块没有为 "
            "6.5.0-41-generic 重新编译；/usr/local/cuda-12.4/bin/nvcc 也在 PATH 里。")
    for width in (40, 60, 80):
        lines = wrap(text, "  ", "  ", width)
        assert all(width_of(line) <= width for line in lines), lines
        joined = "".join(line.strip() for line in lines)
        for word in ("nvidia-smi", "6.5.0-41-generic", "/usr/local/cuda-12.4/bin/nvcc", "PATH"):
            assert word in joined  # whole: never cut across two lines
        assert not any(line.strip()[:1] in CLOSING for line in lines)  # no line starts with a closing mark
        assert joined.replace(" ", "") == text.replace(" ", "")


def test_a_wide_label_is_measured_by_its_columns():
    lines = wrap("Ubuntu 22.04.4 LTS, x86_64, kernel 6.5.0-41-generic", "  正常    系统" + " " * 17, " " * 31, 60)
    assert all(width_of(line) <= 60 for line in lines), lines
    assert lines[0].startswith("  正常    系统") and lines[1].startswith(" " * 31)


def test_an_opening_mark_stays_with_what_follows():
    chunks = wide_chunks("见（torch-import-error）。")
    assert "（torch-import-error）。" in chunks


def test_fit_elides_by_columns():
    assert fit("显存" * 20, 11) == "显存...显存"  # 4 + 3 + 4 columns
    assert fit("显存" * 20, 10) == "显存...存"  # 4 + 3 + 2: a wide character is never half shown
    assert width_of(fit("显存" * 20, 12)) <= 12
    assert fit("abcdefghij", 7) == "ab...ij"  # English as before


def test_a_chinese_comment_after_a_command_is_measured_by_its_columns():
    lines = wrap_command("sudo reboot    # 如果 modprobe 失败，再读：sudo dmesg | grep -i nvidia", "    ", 50)
    assert all(width_of(line) <= 50 for line in lines), lines
    assert lines[-1].strip() == "sudo reboot"


WORDS = st.sampled_from(["显存", "驱动", "不足", "，", "。", "（", "）", "nvidia-smi", "CUDA", "12.4", " ", " ", "的",
                         "/usr/local/cuda-12.4", "torch.cuda.is_available()", "算力"])


@given(st.lists(WORDS, max_size=60), st.integers(min_value=30, max_value=100))
def test_any_mix_fits_unless_one_word_is_longer_than_a_line(words, width):
    text = "".join(words)
    lines = wrap(text, "  - ", "    ", width, long_words="keep")
    for line in lines:
        assert width_of(line) <= width or len(line.split()) <= 2, (line, width)
    assert "".join(line.strip(" -") for line in lines).replace(" ", "") == text.replace(" ", "").strip("-")


@given(st.lists(WORDS | st.sampled_from(["/a/very/long/path/" * 4, "显存" * 30]), max_size=40),
       st.integers(min_value=12, max_value=80))
def test_break_mode_cuts_a_long_piece_to_the_columns_left(words, width):
    """The one greedy loop (render.text._greedy) measured by display width: "break" cuts a piece longer than a line
    where the line ends, by columns, so every line fits, and nothing is lost."""
    text = "".join(words)
    lines = wrap(text, "", "", width, long_words="break")
    assert all(width_of(line) <= width for line in lines), (lines, width)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
