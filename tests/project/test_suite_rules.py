"""The test suite's own rules, read from its source (issue 25: tests that cannot drift).

* test modules are named by what they test, never by an issue or as "more" of another module;
* no ``assert A and B or C``: unparenthesized, the ``or`` lets the assertion pass while ``A and B`` is false;
* no per-example hypothesis deadline (``@settings(deadline=...)``): a wall-clock bound on a loaded machine; the
  profile in conftest.py is the one home of ``deadline=None``;
* no assertion on a duration (``time.monotonic()``, ``perf_counter()``, ``process_time()``, directly or through a
  name assigned from them in the same function): counted work (``builders.count_steps``,
  ``assert_linear``), the values a timeout leaves (``error == "timeout"``, "no answer within 2 s") or bench/ instead.
  A clock that only bounds a wait loop, or a pytest timeout that keeps a hang from blocking the suite, is fine;
* a child interpreter started with ``-c`` through ``subprocess`` (``[sys.executable, ..., "-c", ...]``) is given a
  working folder (``cwd=``, builders.CHILD_CWD): ``-c`` puts the working folder first on sys.path, so a child started
  in the checkout imports ./cudaenv, the source tree, not the installed package the suite tests.

Each check is also run on a planted breach, so that it is known to fail.
"""

import ast
import re

from builders import TESTS

CLOCKS = {"monotonic", "perf_counter", "process_time", "monotonic_ns", "perf_counter_ns", "process_time_ns"}  # durations
NAMED_AFTER = re.compile(r"(?:^|_)(?:issue\d*|more)(?:_|\.py$)")
# the CPU seconds of one regex search, bounded per example in a worker process that is killed when it hangs: the one
# timing check left in the default suite (a step count of sre's backtracking is not observable from Python)
CLOCK_ALLOWED = {"project/test_regex_safety.py": "per-pattern CPU bound of the regex search, in a killed-on-hang worker"}


def _test_modules():
    return sorted(p for p in TESTS.rglob("test_*.py") if "recorded" not in p.parts and "corpus" not in p.parts)


def _rel(path):
    return str(path.relative_to(TESTS)).replace("\\", "/")


def named_after_an_issue(names):
    return [n for n in names if NAMED_AFTER.search(n.rsplit("/", 1)[-1])]


def _opens_paren_before(source_lines, node):
    """Whether the nearest non-blank character before ``node`` in the source is an opening parenthesis."""
    line, col = node.lineno - 1, node.col_offset
    while line >= 0:
        before = source_lines[line][:col].rstrip()
        if before:
            return before.endswith("(")
        line -= 1
        col = len(source_lines[line]) if line >= 0 else 0
    return False


def hollow_asserts(source):
    """Line numbers of ``assert A and B or C`` whose ``A and B`` is not in parentheses."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.Or):
            for value in node.test.values:
                if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And) and not _opens_paren_before(lines, value):
                    out.append(node.lineno)
    return out


def example_deadlines(source):
    """Line numbers of ``settings(..., deadline=...)`` calls (decorators and profiles alike)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("settings", "register_profile") and any(k.arg == "deadline" for k in node.keywords):
                if not (name == "register_profile" and all(isinstance(k.value, ast.Constant) and k.value.value is None
                                                           for k in node.keywords if k.arg == "deadline")):
                    out.append(node.lineno)
    return out


def _reads_clock(node, clocked):
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Attribute) and f.attr in CLOCKS and isinstance(f.value, ast.Name) and f.value.id == "time":
                return True
            if isinstance(f, ast.Name) and f.id in ("monotonic", "perf_counter", "process_time"):
                return True
        if isinstance(sub, ast.Name) and sub.id in clocked:
            return True
    return False


def clock_asserts(source):
    """Line numbers of assertions that read a clock, directly or through a name the same function assigned from one."""
    tree = ast.parse(source)
    out = set()
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        clocked = set()
        changed = True
        while changed:  # names assigned from a clock, or from a name that is (start = ...; took = ... - start)
            changed = False
            for node in ast.walk(scope):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if _reads_clock(node.value, clocked):
                        for t in targets:
                            for n in ast.walk(t):
                                if isinstance(n, ast.Name) and n.id not in clocked:
                                    clocked.add(n.id)
                                    changed = True
        out.update(node.lineno for node in ast.walk(scope) if isinstance(node, ast.Assert) and _reads_clock(node.test, clocked))
    return sorted(out)


SPAWNS = {"run", "Popen", "check_output", "check_call", "call"}  # subprocess's ways to start a program


def children_in_the_checkout(source):
    """Line numbers of ``subprocess.X([sys.executable, ..., "-c", ...], ...)`` calls without ``cwd=``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SPAWNS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"):
            continue
        argv = node.args[0] if node.args else None
        first = argv.elts[0] if isinstance(argv, ast.List) and argv.elts else None
        if not (isinstance(first, ast.Attribute) and first.attr == "executable" and getattr(first.value, "id", "") == "sys"):
            continue
        if any(isinstance(e, ast.Constant) and e.value == "-c" for e in argv.elts) and not any(k.arg == "cwd" for k in node.keywords):
            out.append(node.lineno)
    return out


# ------------------------------------------------------------------------------------ the checks


def test_test_modules_are_named_by_subject():
    names = [_rel(p) for p in _test_modules()]
    assert len(names) > 90
    bad = named_after_an_issue(names)
    assert not bad, "name these by what they test (or merge them into the subject's module): %s" % bad


def test_no_assert_hides_its_check_behind_an_or():
    bad = ["%s:%d" % (_rel(p), n) for p in _test_modules() for n in hollow_asserts(p.read_text(encoding="utf-8"))]
    assert not bad, "`assert A and B or C` passes on C alone: split it, or parenthesize what is meant: %s" % bad


def test_no_per_example_deadline():
    files = _test_modules() + [TESTS / "conftest.py", TESTS / "builders.py"]
    bad = ["%s:%d" % (_rel(p), n) for p in files for n in example_deadlines(p.read_text(encoding="utf-8"))]
    assert not bad, "a hypothesis deadline is a wall-clock assertion (conftest's profile sets none): %s" % bad


def test_no_assertion_reads_a_clock():
    files = [p for p in _test_modules() + [TESTS / "builders.py"] if _rel(p) not in CLOCK_ALLOWED]
    bad = ["%s:%d" % (_rel(p), n) for p in files for n in clock_asserts(p.read_text(encoding="utf-8"))]
    assert not bad, ("timing asserts do not belong in unit tests: count the work (builders.count_steps, assert_linear), "
                     "assert the value a timeout leaves, or move the figure to bench/run.py: %s" % bad)


def test_no_child_interpreter_runs_in_the_checkout():
    files = _test_modules() + [TESTS / "builders.py", TESTS / "conftest.py"]
    bad = ["%s:%d" % (_rel(p), n) for p in files for n in children_in_the_checkout(p.read_text(encoding="utf-8"))]
    assert not bad, "give the -c child a working folder (cwd=CHILD_CWD): from the checkout it imports ./cudaenv: %s" % bad


# ------------------------------------------------------------------------------------ each check fails on a breach

PLANTED_HOLLOW = '''
def test_x(f):
    assert f.severity == "warning" and "550" in f.detail or "nvcc" in f.fix
    assert (f.a and f.b) or f.c
    assert f.a is None or (f.b and f.c)
    assert (
        f.a and f.b
    ) or f.c
'''

PLANTED_CLOCK = '''
import time

def test_x(run):
    start = time.monotonic()
    run()
    took = time.monotonic() - start
    assert took < 2
    began = time.perf_counter()
    assert run() and time.perf_counter() - began < 1
    end = time.monotonic() + 5
    while time.monotonic() < end:  # a wait loop: fine
        pass
'''

PLANTED_CHILDREN = '''
import subprocess, sys

def test_x(tmp_path):
    subprocess.run([sys.executable, "-c", "import cudaenv"], capture_output=True)
    subprocess.Popen([sys.executable, "-S", "-c", "pass"], cwd=str(tmp_path))
    subprocess.check_output([sys.executable, "-S", "-c", "pass"])
    subprocess.run([sys.executable, "script.py"])
    host.run([sys.executable, "-c", "print(1)"])
'''

PLANTED_DEADLINE = '''
from hypothesis import settings
settings.register_profile("cudaenv", deadline=None)

@settings(max_examples=10, deadline=2000)
def test_x():
    pass
'''


def test_the_checks_fail_on_planted_breaches():
    assert named_after_an_issue(["recommend/test_recommend_issue13.py", "test_portable_more.py", "checkpoint/test_fix.py",
                                 "test_moreover.py", "test_issues_page.py"]) == ["recommend/test_recommend_issue13.py",
                                                                                  "test_portable_more.py"]
    assert hollow_asserts(PLANTED_HOLLOW) == [3]
    assert clock_asserts(PLANTED_CLOCK) == [8, 10]
    assert example_deadlines(PLANTED_DEADLINE) == [5]
    assert children_in_the_checkout(PLANTED_CHILDREN) == [5, 7]
