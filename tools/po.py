"""The translation catalogs' upkeep: every marked message of the package, and the ``.po`` files brought up to date.

    .venv/bin/python tools/po.py            # add the new marked messages to each catalog, drop the ones no longer marked
    .venv/bin/python tools/po.py --check    # only list what is missing or stale (exit 1 if anything is)

The marks (cudaenv/core/i18n.py), imported by name from ``cudaenv.core.i18n``: ``M("...")``, ``t("...")``,
``N_("...")`` with a literal first argument, and ``tn("...", "...", n)`` with two. The command line's declarations are
messages without a mark (the ``use`` path imports none): the literal ``help=`` and ``description=`` of ``Option``,
``Positional``, ``Action``, ``add_parser`` and ``add_argument`` calls, and the helps of the ``COMMANDS`` table. A mark whose first argument is not a literal (``t(TITLES[key])``) looks up a text
marked elsewhere with ``N_`` and is not a message of its own. New entries get an empty ``msgstr`` (English is shown
until someone translates them); existing translations are kept; each entry says where its message is used (``#:``).
tests/project/test_translations.py checks the catalogs with the same reader (:func:`marked_messages`). Not in the
wheel.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections import OrderedDict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKS = {"M": 1, "t": 1, "N_": 1, "tn": 2}
PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?[#0 +-]*(?:\*|\d+)?(?:\.(?:\*|\d+))?([diouxXeEfFgGcrsa%])|\{(\w*)\}")


def marked_messages(package_dir):
    """{msgid: {"plural": str or None, "where": ["cudaenv/x.py:12", ...]}} for every marked literal under
    ``package_dir`` (the ``cudaenv`` folder), in the order of the files and lines."""
    found = OrderedDict()
    top = os.path.dirname(package_dir)
    for folder, dirs, files in os.walk(package_dir):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, top).replace(os.sep, "/")
            if rel == "cudaenv/core/i18n.py":
                continue
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            names = {}  # the marks this module imports from cudaenv.core.i18n, by the name it calls them
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == "cudaenv.core.i18n":
                    names.update((a.asname or a.name, a.name) for a in node.names if a.name in MARKS)
            texts = []  # (line, column, msgid, plural)
            constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) and _literal(n.value)
                         for t in n.targets if isinstance(t, ast.Name)}  # help=MIRROR_HELP: a module's named text
            for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
                if isinstance(call.func, ast.Name) and call.func.id in names:
                    need = MARKS[names[call.func.id]]
                    args = call.args[:need]
                    if len(args) == need and all(_literal(a) for a in args):
                        texts.append((call.lineno, call.col_offset, args[0].value, args[1].value if need == 2 else None))
                else:
                    texts += [(call.lineno, call.col_offset, text, None) for text in _declared(call, constants)]
            if rel == "cudaenv/commands/__init__.py":
                texts += _command_helps(tree)
            for line, _col, msgid, plural in sorted(texts, key=lambda x: x[:2]):
                entry = found.setdefault(msgid, {"plural": plural, "where": []})
                entry["where"].append("%s:%d" % (rel, line))
    return found


def _literal(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


# Declarations whose words are messages by what they are (the command line's --help): an option's, a positional's or
# an action's help and description (cudaenv.core.options' Option, Positional, Action; argparse's add_parser and
# add_argument), translated where the parser is built (cudaenv/cli/parser.py), so the `use` path imports no mark.
DECLARED = {"Option", "Positional", "Action", "add_parser", "add_argument"}


def _declared(call, constants=None):
    name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(call.func, ast.Attribute) else None
    if name not in DECLARED:
        return []
    nodes = [k.value for k in call.keywords if k.arg in ("help", "description")]
    if name == "Action":
        nodes += call.args[1:3]  # Action(name, help, description)
    nodes = [n.args[0] if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "said" and n.args else n
             for n in nodes]  # add_parser(help=said("...")): cudaenv.core.options.said translates a declaration's words
    texts = [constants[n.id] if isinstance(n, ast.Name) and n.id in (constants or {}) else n.value if _literal(n) else None
             for n in nodes]
    return [text for text in texts if text and text.strip()]


def _command_helps(tree):
    """The one-line helps of the COMMANDS table (name -> (module, help)) of cudaenv/commands/__init__.py."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMMANDS" for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            return [(v.lineno, v.col_offset, v.elts[1].value, None) for v in node.value.values
                    if isinstance(v, ast.Tuple) and len(v.elts) == 2 and _literal(v.elts[1])]
    return []


# The data tables whose texts people read, and the fields of each row that hold them (a list or one string).
DATA_TEXTS = (("error_patterns.json", "rows", ("title", "explanation", "details", "advice")),
              ("explain_rules.json", "rows", ("title", "explanation", "advice")),  # its variants (other kinds have none)
              ("driver_install.json", "rows", ("steps",)),
              ("frameworks.json", "rows", ("gpu_fix", "fix", "older_fix")),
              ("host_driver.json", "rows", ("fix",)),
              ("xid.json", "rows", ("meaning", "first_step")),  # an Xid's name stays NVIDIA's, as its catalog writes it
              ("toolkit_install.json", "rows", ("steps",)),
              ("toolkit_places.txt", "rows", ("place",)),  # a line table (data/README.md): only its places in words
              ("checkpoint_layouts.json", "rows", ("needs",)))  # what reading a DCP transform needs
# The tables whose rows name a source (``"source": "key"``) that a renderer shows with its note in words (``URL (note)``:
# the note is translated, cudaenv/toolkit/install/repos.py source_text), and the rows whose source is shown: `install
# --plan`'s platform rows (those with steps; the conda row's steps are added to them, its source is not shown).
SOURCE_NOTES = (("toolkit_install.json", lambda row: "steps" in row and row.get("when") != "conda"),)
COMMAND_FIELDS = ("steps", "gpu_fix", "fix", "older_fix")  # shell lines: only those with a comment (# ...) are words
WORDED = re.compile(r"(?:^| )[a-z]{2,} ")  # a line table's cell in words ("every nvcc on PATH"), not a path or a name


def data_messages(repo=REPO):
    """{msgid: {"plural": None, "where": ["data/error_patterns.json cuda-oom", ...]}} for every text of the data
    tables a renderer translates (DATA_TEXTS), in table order. The renderers look them up by their English template
    (cudaenv.core.i18n.filled_message), so a row changed in English simply has no Chinese until it is translated."""
    import json

    found = OrderedDict()
    for name, key, fields in DATA_TEXTS:
        with open(os.path.join(repo, "data", name), encoding="utf-8") as fh:
            table = _line_table(fh.read(), name) if name.endswith(".txt") else json.load(fh)
        rows = table[key]  # a key or field the table does not have would translate nothing, silently
        for field in fields:
            if not any(field in row for row in rows):
                raise SystemExit("tools/po.py: data/%s has no row with a %r field (DATA_TEXTS is out of date)" % (name, field))
        for row in rows:
            for field in fields:
                value = row.get(field)
                for text in (value if isinstance(value, list) else [value]):
                    if name.endswith(".txt") and not WORDED.search(text or ""):
                        continue
                    if isinstance(text, str) and text.strip() and (field not in COMMAND_FIELDS or "#" in text):
                        entry = found.setdefault(text, {"plural": None, "where": []})
                        entry["where"].append("data/%s %s" % (name, row.get("id") or row.get("topic") or row.get("when")
                                                              or row.get("package") or row.get("label") or row.get("place")
                                                              or row.get("code")))
    for name, shown in SOURCE_NOTES:
        with open(os.path.join(repo, "data", name), encoding="utf-8") as fh:
            table = json.load(fh)
        named = [row["source"] for row in table["rows"] if shown(row)]  # (a key the table lacks: a KeyError)
        for key in sorted(set(named), key=named.index):
            url, sep, note = table["sources"][key].partition(" (")
            if sep and note.endswith(")") and note[:-1].strip():
                found.setdefault(note[:-1], {"plural": None, "where": []})["where"].append("data/%s sources %s" % (name, key))
    return found


def _line_table(text, name):
    """A data table in the line format (data/README.md), read by the package's own reader (cudaenv/core/linetable.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cudaenv_linetable", os.path.join(REPO, "cudaenv", "core", "linetable.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_lines_table(text, name)


def all_messages(repo=REPO):
    """The marked messages of the package's source, then the data tables' texts: what a catalog holds."""
    marked = marked_messages(os.path.join(repo, "cudaenv"))
    for msgid, info in data_messages(repo).items():
        marked.setdefault(msgid, info)
    return marked


def placeholders(text):
    """The placeholders of a message, in a form two languages must share: the named ones (``%(name)s``,
    ``{name}``) as a sorted list, the positional ``%s``/``%d`` in order (a translation cannot reorder those)."""
    named, positional = [], []
    for m in PLACEHOLDER.finditer(text):
        if m.group(3) is not None:
            named.append("{%s}" % m.group(3))
        elif m.group(2) == "%":
            continue
        elif m.group(1):
            named.append("%%(%s)%s" % (m.group(1), m.group(2)))
        else:
            positional.append("%" + m.group(2))
    return sorted(named), positional


LITERAL = re.compile(r"`[^`]+`|(?<![\w-])--[a-z][\w-]*")


def literals(text):
    """What a translation must keep as it is: `code spans` and --flags."""
    return sorted(set(LITERAL.findall(text)))


def _quote(text):
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\r", "\\r")
    if "\n" not in body:
        return '"%s"' % body
    pieces = body.split("\n")
    return '""\n' + "\n".join('"%s\\n"' % p for p in pieces[:-1]) + ('\n"%s"' % pieces[-1] if pieces[-1] else "")


def write_po(entries, header, marked):
    """The text of a catalog holding the ``marked`` messages with the translations ``entries`` already has."""
    have = {e.msgid: e for e in entries if e.msgid}
    out = ['msgid ""', "msgstr " + _quote(header), ""]
    for msgid, info in marked.items():
        e = have.get(msgid)
        out += [("#. " if w.startswith("data/") else "#: ") + w for w in info["where"][:3]]
        if e is not None and e.fuzzy:
            out.append("#, fuzzy")
        out.append("msgid " + _quote(msgid))
        if info["plural"] is not None:
            out.append("msgid_plural " + _quote(info["plural"]))
            out.append("msgstr[0] " + _quote(e.strs.get(0, "") if e is not None else ""))
        else:
            out.append("msgstr " + _quote(e.strs.get(0, "") if e is not None else ""))
        out.append("")
    return "\n".join(out)


def catalogs():
    locale = os.path.join(REPO, "cudaenv", "locale")
    for lang in sorted(os.listdir(locale)):
        path = os.path.join(locale, lang, "LC_MESSAGES", "cudaenv.po")
        if os.path.isfile(path):
            yield lang, path


def main(argv):
    sys.path.insert(0, os.path.join(REPO, "cudaenv", "core"))
    import msgfmt

    marked = all_messages()
    bad = 0
    for lang, path in catalogs():
        with open(path, encoding="utf-8") as fh:
            entries = msgfmt.read_po(fh.read())
        header = next((e.strs.get(0, "") for e in entries if e.msgid == ""), "")
        have = {e.msgid: e for e in entries if e.msgid}
        missing = [m for m in marked if m not in have or not have[m].translated]
        stale = [m for m in have if m not in marked]
        print("%s: %d marked, %d without a translation, %d stale" % (lang, len(marked), len(missing), len(stale)))
        for m in stale:
            print("  stale: %r" % m)
        bad += len(missing) + len(stale)
        if "--check" not in argv:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(write_po(entries, header, marked))
    return 1 if bad and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
