"""Every regular expression cudaenv ships runs in linear time on hostile text (issue 12: regex backtracking).

One property, three sources of patterns:

* every ``pattern``/``patterns`` string in the installed ``data/*.json`` tables (the error table's rows, and
  any row another table adds later), compiled as cudaenv compiles them (case-insensitive; the error table's in
  the form ``cudaenv.explain.table.tolerant`` makes, where a blank between two letters may be missing);
* every literal pattern in the package's code, collected from the source with ``ast`` (``re.compile``,
  ``re.search``, ..., ``LazyPattern``), with its flags when they are spelled ``re.X``; a pattern built with
  ``%`` from ``re.escape(...)`` is tried with a plain word in the hole;
* the compiled module-level patterns of explain's normalizer and ranker (built from pieces the ast cannot read).

Each is run, the way the code runs it (``search`` for compiled ones, whose use is unknown), against inputs
made from the pattern itself: 100 KB runs of a character each of its classes accepts, its literal pieces
repeated 100 KB long (``NCCL error NCCL error ...``), a literal piece followed by a long run, and 1 MB lines;
then hypothesis mixes the same pieces. Each example runs in a worker process: the bound (CPU seconds of the
search, so a loaded machine does not fail it) is asserted per example, and a worker still busy after
``KILL_AFTER`` wall seconds (measured with ``time.monotonic``) is killed, so a hang fails the test instead of
blocking the suite. A quadratic pattern (``(?P<check>[\\w-]+) gave a wrong result`` on a 100 KB word: 45 s)
fails by orders of magnitude.
"""

import ast
import json
import multiprocessing
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:  # Python 3.11+
    from re import _compiler as sre_compile, _parser as sre_parse
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_compile
    import sre_parse

import cudaenv
from cudaenv.core.lazy import LazyPattern

BOUND = 0.5  # CPU seconds one search may take on one example
KILL_AFTER = 3.0  # wall seconds before a busy worker counts as hung and is killed
RUN = 100_000
LINE = 1_000_000

PACKAGE = Path(cudaenv.__file__).parent
_METHODS = {"compile": "search", "search": "search", "match": "match", "fullmatch": "fullmatch", "findall": "findall",
            "finditer": "findall", "sub": "sub", "subn": "sub", "split": "split"}
_FLAG_POS = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "findall": 2, "finditer": 2, "split": 3, "sub": 4, "subn": 4}


# ------------------------------------------------------------------------------------ collecting patterns


def data_patterns():
    """(where, pattern, flags, method) for every pattern string in the shipped data tables."""
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "patterns" and isinstance(value, list):
                    found.extend((where, p, re.IGNORECASE, "search") for p in value if isinstance(p, str))
                elif key == "pattern" and isinstance(value, str):
                    found.append((where, value, re.IGNORECASE, "search"))
                else:
                    walk(value, "%s/%s" % (where, node.get("id", key)) if key == "rows" else where)
        elif isinstance(node, list):
            for item in node:
                walk(item, "%s[%s]" % (where, item.get("id")) if isinstance(item, dict) and "id" in item else where)

    for path in sorted((PACKAGE / "data").glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")), path.name)
    from cudaenv.explain.table import tolerant  # the error table compiles each pattern in its tolerant form

    return [(where, tolerant(p) if where.startswith("error_patterns.json") else p, flags, method)
            for where, p, flags, method in found]


def _flags(node):
    if node is None:
        return 0
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
        value = getattr(re, node.attr, 0)
        return int(value) if isinstance(value, (int, re.RegexFlag)) else 0
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flags(node.left) | _flags(node.right)
    return 0


def _literal(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
        return re.sub(r"%[sd]", "name", node.left.value).replace("%%", "%")  # the hole holds re.escape(a word)
    return None


def code_patterns():
    """(where, pattern, flags, method) for every literal pattern in cudaenv's own code."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "re" and func.attr in _METHODS:
                name = func.attr
            elif isinstance(func, ast.Name) and func.id == "LazyPattern":
                name = "compile"
            else:
                continue
            pattern = _literal(node.args[0])
            if pattern is None:
                continue
            pos = _FLAG_POS[name]
            flag_node = node.args[pos] if len(node.args) > pos else next((k.value for k in node.keywords if k.arg == "flags"), None)
            where = "%s:%d" % (path.relative_to(PACKAGE.parent), node.lineno)
            found.append((where, pattern, _flags(flag_node), _METHODS[name]))
    return found


def module_patterns(modules=("cudaenv.explain.normalize", "cudaenv.explain.rank")):
    """(where, pattern, flags, method) for the compiled patterns these modules hold, however their source spells
    them (explain's normalizer builds its prefix pattern from pieces, which the ast collector cannot read)."""
    import importlib

    found = []
    for name in modules:
        module = importlib.import_module(name)
        for attr, value in sorted(vars(module).items()):
            if isinstance(value, re.Pattern):
                found.append(("%s.%s" % (name, attr), value.pattern, value.flags & ~re.UNICODE, "search"))
            elif isinstance(value, LazyPattern):  # compiled on first use (explain's CJK edges)
                found.append(("%s.%s" % (name, attr), value._pattern, value._flags & ~re.UNICODE, "search"))
    return found


ALL = data_patterns() + code_patterns() + module_patterns()


# ------------------------------------------------------------------------------------ adversarial inputs

_UNIVERSE = [chr(c) for c in range(32, 127)] + ["\n", "\t", "\r", "\u00e9", "\uff1a"]
_PREFERRED = "a0 -_.:/x\n\"'`<>()[]{}|=,;"


def _accepted(node, flags):
    """Characters of the universe that one class/any/literal node accepts, best representatives first."""
    state = sre_parse.State()
    state.flags = flags
    try:
        rx = sre_compile.compile(sre_parse.SubPattern(state, [node]), flags)
    except Exception:  # noqa: BLE001 - a node that does not compile alone gives no characters
        return []
    hits = [c for c in _UNIVERSE if rx.fullmatch(c)]
    hits.sort(key=lambda c: (_PREFERRED.find(c) if c in _PREFERRED else len(_PREFERRED) + _UNIVERSE.index(c)))
    return hits[:3]


def pieces(pattern, flags):
    """(characters its classes accept, its literal runs) read from the parsed pattern."""
    chars, literals = [], []

    def walk(sub):
        run = []
        for op, av in sub:
            name = str(op)
            if name == "LITERAL":
                run.append(chr(av))
                continue
            if run:
                literals.append("".join(run))
                run = []
            if name in ("IN", "ANY", "NOT_LITERAL"):
                chars.extend(_accepted((op, av), flags))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                walk(av[2])
            elif name == "SUBPATTERN":
                walk(av[-1])
            elif name == "ATOMIC_GROUP":
                walk(av)
            elif name == "BRANCH":
                for alt in av[1]:
                    walk(alt)
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(av[1])
            elif name == "GROUPREF_EXISTS":
                walk(av[1])
                if av[2] is not None:
                    walk(av[2])
        if run:
            literals.append("".join(run))

    walk(sre_parse.parse(pattern, flags))
    chars = list(dict.fromkeys(chars + [c for lit in literals for c in lit[:1]]))
    return chars[:16], list(dict.fromkeys(literals))[:8]


def adversarial(pattern, flags):
    """(name, text) pairs that make a backtracking pattern quadratic if anything does."""
    chars, literals = pieces(pattern, flags)
    out = [("%d x %r" % (RUN, c), c * RUN) for c in chars]
    for lit in literals:
        out.append(("%r repeated" % lit, lit * (RUN // len(lit) + 1)))
        out.append(("%r + space repeated" % lit, (lit + " ") * (RUN // (len(lit) + 1) + 1)))
    if literals:
        head = literals[0]
        out += [("%r then %d x %r" % (head, RUN, c), head + c * RUN) for c in chars[:8]]
        out.append(("pieces interleaved", ("".join(literals) + "".join(c * 20 for c in chars)) * (RUN // 200 + 1)))
    out.append(("1 MB line of 'x'", "x" * LINE))
    out.append(("1 MB line of its pieces", ("".join(literals) + " " + "".join(chars).replace("\n", " ")) * (LINE // 50 + 1)))
    return out


# ------------------------------------------------------------------------------------ the timed worker


def _worker(conn):
    cache = {}
    while True:
        job = conn.recv()
        if job is None:
            return
        pattern, flags, method, text = job
        rx = cache.get((pattern, flags)) or cache.setdefault((pattern, flags), re.compile(pattern, flags))
        start = time.process_time()
        if method == "sub":
            rx.sub("", text)
        else:
            result = getattr(rx, method)(text)
            del result
        conn.send(time.process_time() - start)


class Runner:
    """A worker process that times one search at a time, and is killed when one outlives KILL_AFTER."""

    def __init__(self):
        self.ctx = multiprocessing.get_context("fork")
        self.proc = None

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()

    def time(self, pattern, flags, method, text):
        """CPU seconds the search took, or None when it was still running after KILL_AFTER wall seconds."""
        if self.proc is None or not self.proc.is_alive():
            self._start()
        began = time.monotonic()
        self.conn.send((pattern, flags, method, text))
        if not self.conn.poll(max(0.0, KILL_AFTER - (time.monotonic() - began))):
            self.proc.kill()
            self.proc.join()
            self.proc = None
            return None
        return self.conn.recv()

    def close(self):
        if self.proc is not None:
            self.conn.send(None)
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()


@pytest.fixture(scope="module")
def runner():
    r = Runner()
    yield r
    r.close()


def _check(runner, where, pattern, flags, method, name, text):
    took = runner.time(pattern, flags, method, text)
    assert took is not None, "%s %r hung on %s (killed after %.0f s)" % (where, pattern, name, KILL_AFTER)
    assert took < BOUND, "%s %r took %.2f s on %s" % (where, pattern, took, name)


# ------------------------------------------------------------------------------------ the tests


def test_the_collection_sees_the_patterns_it_must():
    """The collectors find the error table, inline calls, compiled and lazy patterns (or the test proves nothing)."""
    data = [p for _, p, _, _ in data_patterns()]
    code = {(w.split(":")[0], p) for w, p, _, _ in code_patterns()}
    assert len(data) >= 60 and any("gave ?a ?wrong ?result" in p for p in data)  # the tolerant form cudaenv compiles
    assert any(w.endswith("installer_check.py") and "title" in p for w, p in code)
    assert any(w.endswith("_lazy.py") is False and "CUDA_VERSION" in p for w, p in code)  # a LazyPattern
    assert len(code) >= 60
    modules = {w: p for w, p, _, _ in module_patterns()}
    assert "cudaenv.explain.normalize._PREFIX" in modules and "ERROR" in modules["cudaenv.explain.normalize._PREFIX"]


def test_a_quadratic_pattern_fails_this_check(runner):
    """The check itself: the old wrong-result pattern exceeds the bound on its own adversarial inputs."""
    old = r"(?P<check>[\w-]+) gave a wrong result"
    word = "a" * 30_000
    assert "%r" % ("a",) in [name.split(" x ")[-1] for name, _ in adversarial(old, re.IGNORECASE)]  # a run of word characters
    took = runner.time(old, re.IGNORECASE, "search", word)
    assert took is None or took >= BOUND / 10, "a 30 KB word should take > %.2f s on the quadratic pattern" % (BOUND / 10)


@pytest.mark.parametrize("where, pattern, flags, method", ALL, ids=["%s:%s" % (w, p[:40]) for w, p, _, _ in ALL])
def test_every_pattern_is_linear_on_adversarial_input(runner, where, pattern, flags, method):
    for name, text in adversarial(pattern, flags):
        _check(runner, where, pattern, flags, method, name, text)


@st.composite
def mixed_text(draw):
    where, pattern, flags, method = draw(st.sampled_from(ALL))
    chars, literals = pieces(pattern, flags)
    alphabet = (chars or ["a"]) + literals + [" ", "\n"]
    unit = "".join(draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=30)))
    times = draw(st.integers(min_value=1, max_value=max(1, 50_000 // len(unit))))
    noise = draw(st.text(max_size=50))
    return where, pattern, flags, method, noise + unit * times + noise


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mixed_text())
def test_every_pattern_is_linear_on_generated_text(runner, case):
    where, pattern, flags, method, text = case
    _check(runner, where, pattern, flags, method, "generated text of %d characters" % len(text), text)


def test_the_linear_work_check_can_fail():
    """builders.assert_linear, which the hostile-input tests use, counts steps and characters gone over (never
    seconds): a scan of the lines passes; a loop that looks back over every earlier line fails, and so does a find
    from each entry to the end of the text; the same on any machine under any load."""
    from builders import assert_linear, count_steps

    def scan(text):
        return [line for line in text.split("\n") if "y" in line]

    def looks_back(text):
        lines = text.split("\n")
        return [sum(1 for earlier in lines[:i] if earlier == line) for i, line in enumerate(lines)]

    def finds_from_each_entry(text):  # one C call per entry, each going to the end of the text: quadratic too
        at = text.find('"a"')
        while at != -1:
            text.find("}", at)
            at = text.find('"a"', at + 1)

    assert count_steps(scan, "x\n" * 1000) == count_steps(scan, "x\n" * 1000)  # a count, the same every run
    assert_linear(scan, "x\n")
    with pytest.raises(AssertionError, match="not linear"):
        assert_linear(looks_back, "x\n", size=2_000)
    with pytest.raises(AssertionError, match="not linear"):
        assert_linear(finds_from_each_entry, '"a": {')
