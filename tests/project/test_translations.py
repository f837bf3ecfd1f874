"""The Chinese catalog against the marked messages (issue 33): the parity test.

A message marked for translation (``M``/``t``/``tn``/``N_`` from cudaenv.core.i18n, read from the source by
tools/po.py) must have a Chinese entry with the same placeholders, keeping the commands and flags it names; an entry
that no mark uses any more is stale. The failure lists exactly which messages lack what. Each check also runs on a
planted catalog, so it is shown to fail. A text that is not marked (a finding added without marks) prints in English
and is not this test's business.
"""

import importlib.util
import io
import os

import pytest

from builders import REPO

PO = REPO / "cudaenv" / "locale" / "zh_CN" / "LC_MESSAGES" / "cudaenv.po"


def _po_tool():
    spec = importlib.util.spec_from_file_location("cudaenv_po_tool", str(REPO / "tools" / "po.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


po = _po_tool()


def problems(marked, entries):
    """What is wrong with a catalog's ``entries`` for the ``marked`` messages: one line each."""
    have = {e.msgid: e for e in entries if e.msgid}
    out = []
    for msgid, info in marked.items():
        e = have.get(msgid)
        if e is None or not e.translated:
            out.append("no Chinese for %r (%s)" % (msgid, info["where"][0]))
            continue
        for n, text in e.strs.items():
            source = info["plural"] if n and info["plural"] else msgid
            if po.placeholders(text) != po.placeholders(source):
                out.append("placeholders differ for %r: %r" % (msgid, text))
            lost = [x for x in po.literals(source) if x not in text]
            if lost:
                out.append("%r loses %s" % (msgid, ", ".join(lost)))
    return out


def test_no_entry_is_stale():
    """Every entry of the catalog is a marked message or a text of a data table (tools/po.py drops the others)."""
    known = set(po.all_messages(str(REPO)))
    assert [e.msgid for e in _catalog() if e.msgid and e.msgid not in known] == []


def _catalog():
    from cudaenv.core.msgfmt import read_po

    return read_po(PO.read_text(encoding="utf-8"))


def _marked():
    import cudaenv

    return po.marked_messages(os.path.dirname(cudaenv.__file__))  # the source marks; the data tables' texts below


def test_every_marked_message_has_chinese_with_the_same_placeholders():
    marked = _marked()
    assert len(marked) > 80  # the doctor's checklist at least: the reader found the marks
    assert problems(marked, _catalog()) == []


# The rows of data/error_patterns.json whose texts (title, explanation, details, advice) have no Chinese yet: `explain`
# shows them in English. Exact: a row added without Chinese (or a text changed in English) fails the test below until it
# is translated or listed here. Every row has Chinese now.
UNTRANSLATED_ROWS = set()


def test_the_error_table_rows_in_chinese_are_exactly_the_listed_ones():
    """Each row of the error table is translated whole or listed as not yet; a translated text keeps its {names}."""
    data = po.data_messages(str(REPO))
    catalog = {e.msgid: e for e in _catalog() if e.msgid}
    untranslated, wrong = set(), []
    for msgid, info in data.items():
        e = catalog.get(msgid)
        if e is None or not e.translated:
            untranslated.update(w.split(" ", 1)[1] for w in info["where"])
        else:
            wrong += problems({msgid: info}, [e])
    assert wrong == []
    assert untranslated == UNTRANSLATED_ROWS


def test_the_check_fails_on_a_planted_catalog():
    from cudaenv.core.msgfmt import read_po

    marked = {"Hello %s": {"plural": None, "where": ["x.py:1"]}, "run `cudaenv doctor` --json": {"plural": None, "where": ["x.py:2"]},
              "%d GPU": {"plural": "%d GPUs", "where": ["x.py:3"]}, "missing": {"plural": None, "where": ["x.py:4"]}}
    planted = read_po('msgid "Hello %s"\nmsgstr "你好 %d"\n\nmsgid "run `cudaenv doctor` --json"\nmsgstr "运行 cudaenv doctor"\n\n'
                      'msgid "%d GPU"\nmsgid_plural "%d GPUs"\nmsgstr[0] "%d 块 GPU"\n\nmsgid "gone"\nmsgstr "没了"\n')
    found = problems(marked, planted)
    assert found == ["placeholders differ for 'Hello %s': '你好 %d'", "'run `cudaenv doctor` --json' loses --json, `cudaenv doctor`",
                     "no Chinese for 'missing' (x.py:4)"]


def test_named_placeholders_may_move_positional_ones_may_not():
    assert po.placeholders("%(a)s then %(b)s") == po.placeholders("%(b)s 之后 %(a)s")
    assert po.placeholders("%s then %d") != po.placeholders("%d 之后 %s")
    assert po.placeholders("100%% of {n}") == (["{n}"], [])


def test_the_wheel_carries_the_compiled_catalog():
    """The installed .mo is this .po compiled (the build hook ran; a stale or missing .mo would print English)."""
    import gettext

    import cudaenv
    from cudaenv.core.msgfmt import compile_po

    mo = os.path.join(os.path.dirname(cudaenv.__file__), "locale", "zh_CN", "LC_MESSAGES", "cudaenv.mo")
    if not os.path.isfile(mo):
        pytest.fail("no compiled catalog in the installed package: %s" % mo)
    with open(mo, "rb") as fh:
        installed = gettext.GNUTranslations(fh)
    fresh = gettext.GNUTranslations(io.BytesIO(compile_po(_catalog())))
    assert installed._catalog == fresh._catalog


# ------------------------------------------------------------------ sentences outside render/ (docs/contributing.md)
import ast  # noqa: E402
import re  # noqa: E402

CAPABILITIES = ("checkpoint", "toolkit", "explain", "recommend", "diagnose", "fix", "pasted", "verify", "fleet", "stack")
# three plain English words in a row: a sentence (a path, a flag, a version, an identifier is not)
_PROSE = re.compile(r"(?<![\w./$%{=-])[a-z]{2,}'?[a-z]* [a-z]{2,}'?[a-z]* [a-z]{2,}'?[a-z]*(?![\w./(=-])")
# a line that is a command to paste (its words are the program's); its `    # comment` is prose all the same
_COMMANDS = ("cudaenv", "pip", "conda", "pixi", "uv", "nvidia-smi", "lspci", "kill", "grep", "cat", "ln", "rm", "sudo",
             "torchrun", "python", "dmesg", "update-alternatives", "ldconfig", "modprobe", "export", "unset", "tail", "head")
_MARKS = ("M", "N_", "t", "tn")


_PLACEHOLDER = re.compile(r"%(?:\(\w+\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]|\{\w*\}")


def _is_prose(text):
    text = _PLACEHOLDER.sub("value", text)  # "the file %s is missing": a value stands where a word would
    if "    # " in text:
        return _words(text.split("    # ", 1)[1])
    if re.match(r"value\S* -m [\w.]+ ", text):
        return False  # "%s -m pip install %s": a Python's -m, a command to paste
    first = text.split(" ", 1)[0]
    first = first[len("value"):] if first.startswith("value") and first != "value" else first  # "%sln": sudo, then ln
    return first not in _COMMANDS and "=" not in first and _words(text)


def _words(text):
    """Three words in a row, two of them written (not values): "%s %s %s" is no sentence."""
    return any(sum(w != "value" for w in m.group(0).split()) >= 2 for m in _PROSE.finditer(text))


def unmarked_sentences(source):
    """(line, text) of each sentence ``source`` makes outside a mark: ``"... %s ..." % x``, an f-string or
    ``"...".format(...)`` whose literal words are prose (_is_prose), not inside M/N_/t/tn."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def marked(node):
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _MARKS:
                return True
        return False

    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, str):
            text = node.left.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
                and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
            text = node.func.value.value
        if text and _is_prose(text) and not marked(node):
            found.append((node.lineno, text))
    return sorted(found)


# the rooms below the capabilities whose modules make notes a person reads (a probe's Note, a ToolStatus message, an
# index refresh's notes): a module of theirs that marks its messages is held to the same rule
NOTE_ROOMS = ("probes", "index")


def _converted_modules():
    """{module path: its unmarked sentences} for every capability (and NOTE_ROOMS) module that marks its messages
    (imports cudaenv.core.i18n): the modules the message-value rule has reached."""
    import cudaenv

    package = os.path.dirname(cudaenv.__file__)
    out = {}
    for room in CAPABILITIES + NOTE_ROOMS:
        for folder, _, files in os.walk(os.path.join(package, room)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as fh:
                        source = fh.read()
                    if "cudaenv.core.i18n" in source:
                        out[os.path.relpath(path, os.path.dirname(package)).replace(os.sep, "/")] = unmarked_sentences(source)
    return out


# Capability modules that mark some of their messages but still make sentences outside M (their findings, plans or
# notes print in English in a Chinese run). Exact: a module converted whole (or one that makes a new unmarked sentence)
# fails the test below until this set says so.
NOT_YET_CONVERTED = set()  # none now: every capability module that marks its messages marks them all


def test_converted_capability_modules_make_no_sentence_outside_a_mark():
    modules = _converted_modules()
    assert len(modules) > 20  # the scan found the marking modules
    left = {path: found[:3] for path, found in modules.items() if found and path not in NOT_YET_CONVERTED}
    assert left == {}, "a sentence made outside M(...): mark it (docs/contributing.md, 'Where a sentence lives')"
    assert sorted(p for p in NOT_YET_CONVERTED if not modules.get(p)) == []  # converted now: drop it from the set


def test_every_mark_outside_render_has_a_literal_template():
    """tools/po.py (and so the parity test above, which checks every marked message has Chinese) reads a template
    only when it is a literal: an M(f"...") or M("..." % x) is English made before its mark, which no catalog holds
    (an M(TABLE[key]) of N_-marked words is translated through its N_ entries)."""
    import cudaenv

    package = os.path.dirname(cudaenv.__file__)
    bad = []
    for folder, _, files in os.walk(package):
        for name in files:
            if not name.endswith(".py") or os.path.basename(folder) == "render":
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            marks = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                     and n.module == "cudaenv.core.i18n" for a in n.names if a.name in ("M", "N_")}
            bad += ["%s:%d" % (name, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Name) and n.func.id in marks
                    and n.args and isinstance(n.args[0], (ast.JoinedStr, ast.BinOp))]  # a text made before its mark
    assert bad == []


def test_the_sentence_scan_finds_a_planted_one():
    planted = '''
from cudaenv.core.i18n import M
def finding(path, n):
    a = "the file %s is missing" % path                 # unmarked: found
    b = f"removed {n} temporary files from {path}"     # unmarked f-string: found
    c = M("the file %s is missing", path)              # marked
    d = "%sln -sfn %s %s" % ("sudo ", path, path)      # a command
    e = "%srm %s    # if no toolkit should be the default" % ("", path)  # a command with a prose comment: found
    g = "%s: %s" % (path, n)                            # no words
    h = "%s %s %s" % (path, "runs", n)                  # values only
    i = "%s -m pip install %s" % (path, n)              # a Python's -m: a command
    return a, b, c, d, e, g, h, i
'''
    assert [line for line, _ in unmarked_sentences(planted)] == [4, 5, 8]


GLOSSARY = REPO / "docs" / "zh-glossary.md"


def words_not_used(text):
    """The glossary's "Words not used" table: [(not, but, except)] (``except`` "" when none)."""
    section = text.split("## Words not used", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] not in ("Not", "---"):
            rows.append(tuple(cells))
    return rows


def inconsistent(rows, entries):
    """One line for each translation that uses a word the glossary says not to use."""
    out = []
    for e in entries:
        for text in e.strs.values():
            for wrong, right, allowed in rows:
                if wrong in (text.replace(allowed, "") if allowed else text):
                    out.append("%r uses %s, not %s: %r" % (e.msgid[:60], wrong, right, text[:80]))
    return out


def test_the_catalog_uses_the_glossarys_words():
    """Each term in one spelling throughout (显存, never 视频内存): the words the glossary lists as not used appear in
    no translation (outside the exception it names)."""
    rows = words_not_used(GLOSSARY.read_text(encoding="utf-8"))
    assert len(rows) >= 10 and ("视频内存", "显存", "") in rows and ("检查点", "checkpoint", "梯度检查点") in rows
    assert inconsistent(rows, _catalog()) == []


def test_the_glossary_check_fails_on_a_planted_catalog():
    from cudaenv.core.msgfmt import read_po

    rows = words_not_used("## Words not used\n\n| Not | But | Except in |\n|---|---|---|\n| 视频内存 | 显存 | |\n"
                          "| 检查点 | checkpoint | 梯度检查点 |\n\n## Style\n")
    planted = read_po('msgid "out of GPU memory"\nmsgstr "视频内存不足"\n\nmsgid "gradient checkpointing"\nmsgstr "梯度检查点"\n\n'
                      'msgid "the checkpoint"\nmsgstr "这个检查点"\n')
    assert inconsistent(rows, planted) == ["'out of GPU memory' uses 视频内存, not 显存: '视频内存不足'",
                                           "'the checkpoint' uses 检查点, not checkpoint: '这个检查点'"]
