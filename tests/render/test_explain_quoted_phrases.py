"""explain's text keeps each quoted phrase on one line (issue 27): the explanation's `import torch`, `sudo make` and
`srcIndex < srcSelectDimSize` and an advice item's `cudaenv torch recommend`'s were broken across lines at some
widths. Every recorded error, explained at widths from 44 to 80 columns: no line opens a backtick or a double quote
it does not close."""

import re

from builders import RECORDED, recorded
from cudaenv.render.text import wrap_quoted

POSSESSIVE = re.compile(r"[A-Za-z]'s\b|s'(\s|$)")


def test_no_quoted_phrase_is_broken_across_lines(cli, tmp_path):
    paste = tmp_path / "paste.txt"
    broken, explained = [], 0
    for path in sorted(RECORDED.glob("err-*.txt")):
        paste.write_text(recorded(path.name))
        for width in (44, 48, 52, 56, 60, 80):
            r = cli("explain", "--offline", "--all", "--file", str(paste), env={"PATH": "/usr/bin:/bin", "COLUMNS": str(width)})
            explained += "What to do:" in r.out
            for line in r.out.splitlines():
                plain = POSSESSIVE.sub("", line)
                if plain.count('"') % 2 or plain.count("`") % 2:
                    broken.append((path.name, width, line))
    assert broken == [] and explained > 300, explained


def test_wrap_quoted_keeps_a_span_whole_and_falls_back_when_it_cannot():
    text = "The Python interpreter did not finish `import torch` before the time allowed ran out"
    lines = wrap_quoted(text, "  ", "  ", 48)
    assert "`import torch`" in "\n".join(lines) and all(len(x) <= 48 for x in lines), lines
    span = "`" + "x " * 40 + "`"  # longer than a line: plain wrapping, every line within the width
    assert all(len(x) <= 40 for x in wrap_quoted("see " + span, "", "", 40))


def test_verify_shows_explains_words_the_same_way():
    from cudaenv.render.verify import render_error
    from cudaenv.verify.records import VerifyError

    err = VerifyError(id="torch-import-hang", message="timed out", title="the interpreter hung while importing torch",
                      explanation="The Python interpreter did not finish `import torch` before the time allowed ran out, "
                                  "so nothing was checked.")
    for width in (48, 52, 60, 80):
        lines = render_error(err, width=width)
        assert "`import torch`" in "\n".join(lines) and all(len(x) <= width for x in lines), (width, lines)
