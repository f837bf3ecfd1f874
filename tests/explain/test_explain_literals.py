"""explain's start-up as counted work (issue 35): the literals of the tables' patterns are read from
``cudaenv/explain/literals.py`` (written by ``tools/explain_literals.py``), and a pattern is compiled only when its
literals are in the paste, so a 2-line paste parses no pattern and compiles a handful instead of the tables'
hundreds."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import RECORDED, recorded

from cudaenv.core.resources import load_table
from cudaenv.explain import classify_all
from cudaenv.explain import rank as R
from cudaenv.explain import table as T
from cudaenv.explain.literals import LITERALS

TWO_LINES = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
             "CUDA kernel errors might be asynchronously reported at some other API call\n")


def _patterns():
    out = [p for row in load_table(T.TABLE)["rows"] for p in row["patterns"]]
    for row in load_table(R.RULES)["rows"]:
        if row["kind"] in ("chain", "boilerplate", "wrapper", "context"):
            out.append(row["pattern"])
        elif row["kind"] == "platform":
            out.extend(row["patterns"])
    return list(dict.fromkeys(out))


def test_the_literals_file_is_current():
    """Every pattern of both tables is in the file, with what parsing it says now (else: run
    ``python tools/explain_literals.py``); a pattern the file lacks would be parsed at each run, a stale one never
    used."""
    patterns = _patterns()
    assert set(LITERALS) == set(patterns), "run: python tools/explain_literals.py"
    for p in patterns:
        assert LITERALS[p] == (T.needle(p), T.prefilter(p), T.short_literals(p), T.window(p)), (p, "run: python tools/explain_literals.py")


def test_a_pattern_missing_from_the_file_is_parsed(monkeypatch):
    monkeypatch.setattr("cudaenv.explain.literals.LITERALS", {})
    assert T.literals_of("CUDA out of memory") == ("cuda out of memory", ("cuda out of memory",), ("cuda out of memory",),
                                                   ("memory", 12))
    assert T.literals_of("(?:ab|cd)x") == ("", (), ("ab", "cd"), None)
    assert T.literals_of(r"\bM[1-4] (?:Pro|Max)\b") == ("", (), ("pro", "max"), None)


@pytest.fixture
def fresh_tables(monkeypatch):
    """The tables read anew in this test (their patterns not compiled yet), and every parse of a pattern counted."""
    T.rows.cache_clear()
    R.rules.cache_clear()
    parsed = []
    real = T._parsed

    def counting(pattern):
        parsed.append(pattern)
        return real(pattern)

    monkeypatch.setattr(T, "_parsed", counting)
    yield parsed
    T.rows.cache_clear()
    R.rules.cache_clear()


def _compiled():
    """(patterns of the table compiled, patterns of the ranking rules compiled, all of each)."""
    rows = T.rows()
    table = sum(1 for row in rows for c in row.patterns._compiled if c is not None)
    r = R.rules()
    lazy = [rule.pattern for group in (r.chain, r.boilerplate, r.wrapper, r.context) for rule in group]
    lazy += [rule.pattern for _, group in r.platforms for rule in group]
    lazy += [rule.until for rule in r.context if rule.until is not None]
    lazy += [v.value_pattern for v in r.variants if v.value_pattern is not None]
    assert all(isinstance(p, T.Lazy) for p in lazy)
    return table, sum(1 for p in lazy if p._compiled is not None), sum(len(row.patterns) for row in rows), len(lazy)


def test_a_two_line_paste_parses_no_pattern_and_compiles_a_few(fresh_tables):
    """Before: every pattern of both tables parsed twice (needle, prefilter) and every ranking rule compiled at the
    first classify (about 280 patterns); now none parsed, and only those whose literals the paste holds compiled."""
    found = classify_all(TWO_LINES)
    assert [m.id for m in found][:1] == ["gpu-arch-unsupported"]
    assert fresh_tables == []  # no pattern parsed: literals.py had them all
    table, rules, all_table, all_rules = _compiled()
    assert all_table > 150 and all_rules > 40  # what compiling everything would be
    assert table <= 4, table
    # the boilerplate sentence and cpu-on-purpose's "device" are in the paste; three context rules have no literal
    # of 2+ characters and are tried on the matched line only
    assert rules <= 5, rules


def test_a_paste_without_any_literal_compiles_nothing(fresh_tables):
    assert classify_all("hello world\nnothing to see here\n") == []
    table, rules, _, _ = _compiled()
    assert fresh_tables == []
    assert (table, rules) == (0, 0)


def test_a_lazy_pattern_is_the_pattern():
    lazy = T.Lazy(r"(?P<inner>a+)b")
    assert lazy._compiled is None and lazy.pattern == r"(?P<inner>a+)b"
    assert lazy.search("xAAB").group("inner") == "AA" and lazy.match("aab") and not lazy.match("xab")
    assert [m.span() for m in lazy.finditer("ab ab")] == [(0, 2), (3, 5)] and "inner" in lazy.groupindex
    assert lazy.compiled is re.compile(r"(?P<inner>a+)b", re.IGNORECASE)


LOG_LINE = "2024-05-01 12:00:01,123 - train - INFO - [rank0]: step 17 loss 0.2512 ok 45%|####  |\n"


def test_a_long_paste_is_scanned_once_for_each_literal_it_lacks(monkeypatch):
    """A paste over views.BIG characters remembers which literals it holds; a literal without a line break is in
    the lines view only if the joined view holds it, so the lines view is scanned only for those: one pass over the
    text for each literal the paste lacks (before: two, the lines view and then the joined one)."""
    from cudaenv.explain import views as V

    scans = []
    real = V.View.squeezed

    def counting(self):
        scans.append(self.name)
        return real.fget(self)

    monkeypatch.setattr(V.View, "squeezed", property(counting))
    text = LOG_LINE * 1000 + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert min(len(v.text) for v in R.read(text).views) > V.BIG
    paste = R.read(text)
    found = R.candidates(paste)
    assert [c.row.id for c in found][:1] == ["cuda-oom"]
    looked = set(paste.views[1]._has) | set(paste.views[0]._has)
    held = {lit for lit, yes in paste.views[1]._has.items() if yes}
    assert scans.count("joined") + scans.count("glued") == len(paste.views[1]._has)
    assert scans.count("lines") <= len(held) < len(looked) / 4, (scans.count("lines"), len(held), len(looked))


def _windowed():
    return [(row, row.patterns[i], w) for row in T.rows() for i, w in enumerate(row.windows) if w is not None]


def test_most_patterns_have_a_window_and_each_is_in_the_pattern():
    found = _windowed()
    assert len(found) > 150
    for row, _, (piece, before) in found:
        assert " " not in piece and len(piece) >= 3 and 0 <= before <= T.MAX_BEFORE, (row.id, piece, before)


class _Counting:
    """A compiled pattern whose match and finditer calls are counted."""

    def __init__(self, pattern):
        self.pattern, self.tries, self.scans = pattern, 0, 0

    def match(self, text, pos=0):
        self.tries += 1
        return self.pattern.match(text, pos)

    def finditer(self, text):
        self.scans += 1
        return self.pattern.finditer(text)


def test_a_long_log_is_tried_only_around_the_piece():
    """The out-of-memory error at the end of a long training log (bench/run.py's 10 MB log, shorter): its pattern is
    tried at the few places before its piece, not run over the whole text in each view (before: three scans of
    the searched million characters by a pattern whose lookbehind gives the engine no first character)."""
    text = LOG_LINE * 2000 + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    paste = R.read(text)
    row = next(r for r in T.rows() if r.id == "cuda-oom")
    for i, w in enumerate(row.windows):
        if w is None:
            continue
        for view in paste.views:
            counting = _Counting(row.patterns[i])
            got = [m.span() for m in R._matches(counting, view, w)]
            assert got == [m.span() for m in row.patterns[i].finditer(view.text)]
            places = view.low.count(w[0])  # "memory" is in OutOfMemoryError too
            assert counting.scans == 0 and 1 <= places <= 2 and counting.tries <= (w[1] + 1) * places, (w, counting.tries)


@settings(max_examples=25)
@given(st.integers(0, 2**32), st.sampled_from(sorted(p.name for p in RECORDED.glob("err-*.txt"))))
def test_the_windows_find_what_finditer_finds(seed, name):
    """Every windowed pattern of the table, on a recorded error inside a long log (case flipped here and there,
    the error repeated, blanks dropped): the same matches, in the same order, as one scan."""
    import random

    rng = random.Random(seed)
    err = recorded(name)
    err = "".join(c.swapcase() if rng.random() < 0.1 else c for c in err)
    if rng.random() < 0.3:
        err = err.replace(" ", "", rng.randrange(4))
    text = LOG_LINE * rng.randrange(240, 300) + (err + "\n") * rng.randrange(1, 4) + LOG_LINE * rng.randrange(0, 50)
    paste = R.read(text)
    for row, pattern, w in _windowed():
        for view in paste.views:
            assert [m.span() for m in R._matches(pattern, view, w)] == [m.span() for m in pattern.finditer(view.text)], (
                row.id, pattern.pattern, view.name)
