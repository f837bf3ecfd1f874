"""One home for a paste's decorations (issue 25): cudaenv.parse.decorations, used by explain's normalizer and by the
readers of pasted tool outputs alike (before, each had its own: the readers did not take colours or full-width
punctuation away, so an nvidia-smi pasted from a coloured terminal or through a Chinese IME read as no facts)."""

import inspect

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.explain import normalize as explain_normalize
from cudaenv.parse import _lines
from cudaenv.parse.decorations import undecorate
from cudaenv.pasted import read_facts


def test_undecorate_keeps_the_lines_or_drops_fences_when_told():
    text = "> **RuntimeError\uff1a** boom\n```text\n\x1b[31mred\x1b[0m\n~~~"
    assert undecorate(text).split("\n") == ["RuntimeError:  boom", "", "red", ""]
    assert undecorate(text, keep_lines=False).splitlines() == ["RuntimeError:  boom", "red"]
    assert undecorate(text, marks_only=True).split("\n") == ["**RuntimeError\uff1a** boom", "", "\x1b[31mred\x1b[0m", ""]


def test_both_readers_use_it_and_neither_keeps_a_copy():
    for module in (explain_normalize, _lines):
        source = inspect.getsource(module)
        assert "undecorate" in source and "`{3,}" not in source and "0xFF01" not in source, module.__name__


def test_a_pasted_tool_output_with_colours_and_full_width_punctuation_is_read():
    text = ("\x1b[32mGPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-5fd1d6d4-8e6e-4c5d-9a3b-2f0c1d2e3f40)\x1b[0m\n"
            "\uff1e Cuda compilation tools\uff0c release 12.4\uff0c V12.4.131\n")
    facts = read_facts(text)
    assert facts is not None and [g.name for g in facts.gpus] == ["NVIDIA GeForce RTX 3090"]
    assert facts.toolkit_version == "12.4.131"


@settings(max_examples=200)
@given(st.text(max_size=400))
def test_undecorate_keeps_the_line_count_for_any_text(text):
    text = "\n".join(text.splitlines())
    assert len(undecorate(text).split("\n")) == len(text.split("\n"))


def test_a_pattern_is_compiled_only_when_its_mark_is_in_the_text():
    """The doctor reads every tool output through undecorate (parse._lines.lines): an output without a fence or a quote
    mark compiles none of the patterns (issue 35: six patterns were compiled at import, 0.5 ms of `doctor --quick`)."""
    import importlib

    from cudaenv.parse import decorations

    importlib.reload(decorations)  # fresh patterns, none compiled yet
    names = ("ANSI", "BARE_SGR", "FENCE", "FENCE_LINE", "QUOTE", "_STOP_SENTENCE")

    def compiled():
        return [n for n in names if getattr(decorations, n)._compiled is not None]

    assert decorations.undecorate("NVRM version: 550.135\nID=ubuntu\n", keep_lines=False, marks_only=True) == \
        "NVRM version: 550.135\nID=ubuntu\n"
    assert compiled() == []
    assert decorations.undecorate("> quoted", keep_lines=False, marks_only=True) == "quoted"
    assert compiled() == ["QUOTE"]
