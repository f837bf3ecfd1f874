"""The import rules of the house as a test, read from every module's import statements (``ast``, lazy imports too).

Layers, highest first: commands > render > capabilities > facts > probes > parse > model > infrastructure. A module
imports only from its own layer or below; nothing imports ``cudaenv.cli`` (the entry point) except ``__main__``;
``subprocess`` and ``tempfile`` only in the host package (host/process.py, host/files.py) and the modules that apply changes. What still breaks a rule on
main is in ALLOWED with its reason: the list shows what is left to do, and an entry that is no longer needed fails.
"""

import ast
import os

import cudaenv
from builders import TESTS, docstring_ids, package_modules

PACKAGE = os.path.dirname(cudaenv.__file__)

ORDER = ("infrastructure", "model", "parse", "probes", "facts", "capabilities", "render", "commands", "entry")

# module (or package prefix) -> layer; the longest matching prefix wins.
LAYERS = {
    "cudaenv": "infrastructure",  # the package itself (__version__)
    "cudaenv.model.record": "infrastructure", "cudaenv.core.lazy": "infrastructure", "cudaenv.core.fs": "infrastructure",
    "cudaenv.core.errors": "infrastructure", "cudaenv.core.text": "infrastructure", "cudaenv.core.config": "infrastructure",
    "cudaenv.core.options": "infrastructure", "cudaenv.host": "infrastructure", "cudaenv.core.resources": "infrastructure",
    "cudaenv.core.version": "infrastructure",
    "cudaenv.model.snapshot": "model", "cudaenv.model": "model",
    "cudaenv.parse": "parse",
    "cudaenv.probes": "probes",
    "cudaenv.facts": "facts",
    "cudaenv.probes.collect": "capabilities", "cudaenv.diagnose": "capabilities", "cudaenv.recommend": "capabilities",
    "cudaenv.index": "capabilities", "cudaenv.toolkit": "capabilities",
    "cudaenv.verify": "capabilities", "cudaenv.verify.toolkit_check": "capabilities", "cudaenv.explain": "capabilities",
    "cudaenv.toolkit.installer_check": "capabilities", "cudaenv.shells": "capabilities", "cudaenv.checkpoint": "capabilities",
    "cudaenv.portable": "capabilities", "cudaenv.fleet": "capabilities", "cudaenv.pasted": "capabilities",
    "cudaenv.explain.checks": "capabilities",
    "cudaenv.render": "render",
    "cudaenv.commands": "commands",
    "cudaenv.cli": "entry", "cudaenv.__main__": "entry",
}

# The modules that run programs or make temp folders (the host package) and those that apply changes (subprocess / tempfile allowed).
APPLY = {
    "cudaenv.host.process": "the one runner: timeouts, bounded capture, process groups",
    "cudaenv.host.files": "scratch_dir: the one private temporary folder for cudaenv's children",
    "cudaenv.core.fs": "atomic writes (a temp file beside the target, then rename): the torch index cache, rc files",
    "cudaenv.toolkit.install.apply": "`cudaenv install`: a staging folder beside the target, renamed into place",
    "cudaenv.toolkit.install.runfile": "`cudaenv install --runfile`: the same staging folder, for the runfile's toolkit",
}

# (importer, imported) -> why it is still there. Each entry must still be needed (the test fails on a stale one).
ALLOWED = {
    ("cudaenv.model.record", "cudaenv.model.codec"): "Record.to_dict()/from_dict() are the codec's entry points on every record "
                                                "(a lazy import inside the methods: never loaded on the use path)",
    ("cudaenv.host.process", "cudaenv.parse._lines"): "a note's excerpt of a command's output uses parse/_lines' excerpt (lazily); "
                                              "the excerpt helper belongs below the Host",
}
ALLOWED_PROCESS = {}  # empty since verify and toolkit_check make their folders through Host


def _type_checking(node):
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def imports_of(path, module):
    """Every module ``module`` imports at run time (lazy ones inside functions included; TYPE_CHECKING blocks not)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    skip = set()
    for node in ast.walk(tree):
        if _type_checking(node):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "%s: a relative import (the house uses absolute ones)" % module
            base = node.module or ""
            out.add(base)
            for a in node.names:  # from cudaenv import config -> cudaenv.core.config
                out.add(base + "." + a.name)
    return out


def layer(module):
    best = None
    for prefix, name in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, name)
    return best[1] if best else None


MODULES = package_modules()


def _edges():
    for module, path in MODULES.items():
        for target in imports_of(path, module):
            if target.startswith("cudaenv") and (target in MODULES or target == "cudaenv"):
                yield module, target
            elif not target.startswith("cudaenv"):
                yield module, target


def test_every_module_has_a_layer():
    assert [m for m in MODULES if not m.startswith("cudaenv._child") and layer(m) is None] == []


def test_child_scripts_import_nothing_of_cudaenv():
    """The _child scripts run inside other interpreters (the user's Python): stdlib only."""
    bad = sorted((m, t) for m, t in _edges() if m.startswith("cudaenv._child") and t.startswith("cudaenv") and m != "cudaenv._child")
    assert bad == []


def test_imports_go_down_the_layers():
    found = {}
    for module, target in _edges():
        if not target.startswith("cudaenv") or module.startswith("cudaenv._child") or target.startswith("cudaenv._child"):
            continue
        a, b = layer(module), layer(target)
        if a and b and ORDER.index(b) > ORDER.index(a):
            found[(module, target)] = "%s imports %s" % (a, b)
    unexplained = sorted(set(found) - set(ALLOWED))
    stale = sorted(set(ALLOWED) - set(found))
    assert unexplained == [], "\n".join("%s -> %s (%s)" % (m, t, found[(m, t)]) for m, t in unexplained)
    assert stale == [], "fixed, so remove from ALLOWED: %s" % stale


def test_nothing_imports_the_cli_from_below():
    bad = sorted(m for m, t in _edges() if t == "cudaenv.cli" and m != "cudaenv.__main__")
    assert bad == []


def test_processes_and_temp_files_only_where_changes_are_applied():
    found = {}
    for module, target in _edges():
        if target in ("subprocess", "tempfile") and module not in APPLY and not module.startswith("cudaenv._child"):
            found[(module, target)] = True
    unexplained = sorted(set(found) - set(ALLOWED_PROCESS))
    stale = sorted(set(ALLOWED_PROCESS) - set(found))
    users = {m for m, t in _edges() if t in ("subprocess", "tempfile")}
    assert sorted(set(APPLY) - users) == [], "no longer runs programs or makes temp files: remove from APPLY"
    assert unexplained == [], unexplained
    assert stale == [], "fixed, so remove from ALLOWED_PROCESS: %s" % stale


# ----------------------------------------------------------------------------- sizes (issue 11: modules you can read)
COMMAND_LINES = 150  # a command: arguments -> one service call -> one renderer -> exit code
MODULE_LINES = 400

# Commands still over COMMAND_LINES -> why. Each entry must still be needed (a stale one fails).
LONG_COMMANDS = {}

# Modules over MODULE_LINES -> why. "one thing" entries are kept on purpose; the others are not split yet and name
# who owns them. Each entry must still be needed (a stale one fails).
LONG_MODULES = {
    "cudaenv.host": "one thing: the Host record, the seam every probe reads through (files, processes and children "
                    "are its own modules)",
    "cudaenv._child.torch_probe": "one thing: run as `python -c SOURCE` in the user's interpreter, so one file that "
                                  "imports nothing of cudaenv (the static and the dynamic torch pass)",
    "cudaenv.parse.nvidia_smi": "one thing: every parser of nvidia-smi's outputs (banner, CSV, -q); grown past 400 by "
                                "the pasted-outputs helper (issue 14) at the same time as this step",
}


def _lines(path):
    with open(path, encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def test_commands_are_thin():
    long = {m: _lines(p) for m, p in MODULES.items() if m.startswith("cudaenv.commands.") and _lines(p) > COMMAND_LINES}
    unexplained = sorted(set(long) - set(LONG_COMMANDS))
    stale = sorted(set(LONG_COMMANDS) - set(long))
    assert unexplained == [], "over %d lines: %s" % (COMMAND_LINES, {m: long[m] for m in unexplained})
    assert stale == [], "no longer over %d lines, so remove from LONG_COMMANDS: %s" % (COMMAND_LINES, stale)


def test_commands_walk_no_folders():
    """Commands are thin: reading a folder tree is a capability's I/O through the Host, never ``os.walk`` in a command."""
    found = []
    for module, path in MODULES.items():
        if not module.startswith("cudaenv.commands."):
            continue
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if (isinstance(node, ast.Attribute) and node.attr in ("walk", "scandir", "listdir")
                    and isinstance(node.value, ast.Name) and node.value.id == "os"):
                found.append("%s:%d os.%s" % (module, node.lineno, node.attr))
    assert found == []


def test_no_module_is_long_unless_listed():
    long = {m: _lines(p) for m, p in MODULES.items() if _lines(p) > MODULE_LINES}
    unexplained = sorted(set(long) - set(LONG_MODULES))
    stale = sorted(set(LONG_MODULES) - set(long))
    assert unexplained == [], "over %d lines: %s" % (MODULE_LINES, {m: long[m] for m in unexplained})
    assert stale == [], "no longer over %d lines, so remove from LONG_MODULES: %s" % (MODULE_LINES, stale)


def test_no_test_module_imports_another():
    """Shared scenario builders live in builders.py, machine.py and the *_builders.py modules, never in a test_*.py."""
    tests = str(TESTS)
    found = set()
    for folder, dirs, files in os.walk(tests):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                tree = ast.parse(open(path, encoding="utf-8").read())
                for node in ast.walk(tree):
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                        [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                    found.update((os.path.relpath(path, tests), n) for n in names
                                 if n.split(".")[-1].startswith("test_") or n.startswith("test_"))
    assert sorted(found) == []


# Test folders that mirror no package: the project-wide checks (docs, packaging, these import rules, the suite's
# isolation, regex safety over the whole package). A data folder (recorded/, corpus/) mirrors no package either, so
# a test module there fails too.
PROJECT_TEST_FOLDERS = {"project": "checks over the whole project, not one package"}


def _test_modules():
    for folder, dirs, files in os.walk(str(TESTS)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                yield os.path.relpath(os.path.join(folder, name), str(TESTS))


def _misplaced(rel, package=PACKAGE):
    """Why tests/REL is in the wrong place, or None: tests/X/ holds the tests of the package cudaenv/X/ (nested
    alike: tests/toolkit/install/ for cudaenv/toolkit/install/); tests/ itself holds the tests of cudaenv's flat
    modules (test_M.py or test_M_*.py for cudaenv/M.py); PROJECT_TEST_FOLDERS hold the project-wide checks."""
    folder, name = os.path.split(rel)
    if folder in PROJECT_TEST_FOLDERS:
        return None
    if folder:
        if os.path.isfile(os.path.join(package, folder, "__init__.py")):
            return None
        return "tests/%s/ mirrors no package cudaenv/%s/" % (folder, folder)
    flat = [m[:-3] for m in os.listdir(package) if m.endswith(".py") and not m.startswith("__")]
    stem = name[len("test_"):-len(".py")]
    if any(stem == m or stem.startswith(m + "_") for m in flat):
        return None
    return "names no flat module of cudaenv/ (a package's tests go in tests/PACKAGE/)"


def test_test_folders_mirror_the_packages():
    misplaced = {rel: why for rel in _test_modules() for why in [_misplaced(rel)] if why}
    assert misplaced == {}
    assert sorted(set(PROJECT_TEST_FOLDERS) - {os.path.dirname(r) for r in _test_modules()}) == [], \
        "an empty project-wide folder: remove it from PROJECT_TEST_FOLDERS"


def test_the_mirror_check_can_fail(tmp_path):
    package = tmp_path / "cudaenv"
    (package / "parse").mkdir(parents=True)
    (package / "parse" / "__init__.py").write_text("")
    (package / "snapshot.py").write_text("")
    ok = ["parse/test_parse_x.py", "test_snapshot.py", "test_snapshot_json.py", "project/test_docs.py"]
    assert [r for r in ok if _misplaced(r, str(package))] == []
    bad = ["test_parse_x.py", "data/test_x.py", "parse/extra/test_x.py", "test_snapshots.py", "recorded/test_x.py"]
    assert [r for r in bad if _misplaced(r, str(package))] == bad


def test_the_wrapper_prefixes_have_one_home():
    """`module.` and `_orig_mod.` as a tuple of wrapper prefixes is written once (checkpoint/names.py): the reader,
    its advice, explain's key-list check and cudaenv.portable import it."""
    import re as _re

    found = []
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as fh:
            if _re.search(r"\(\s*[\"']module\.[\"']\s*,\s*[\"']_orig_mod\.[\"']\s*\)", fh.read()):
                found.append(module)
    assert found == ["cudaenv.checkpoint.names"], found


def test_the_weights_entries_have_one_home():
    """The top-level entries that hold a model's weights (and its EMA) are written once (checkpoint/names.py): the
    reader's structure, explain's nested-key hint, cudaenv.portable and `checkpoint fix --trust` (whose torch child
    gets them in its spec, as it imports nothing of cudaenv's) use that tuple. Any module listing two of them next to
    each other again is a second copy."""
    import re as _re

    found = []
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if _re.search(r"[\"']model_state_dict[\"']\s*,\s*[\"']model_state[\"']|[\"']state_dict_ema[\"']\s*,", text):
            found.append(module)
    assert found == ["cudaenv.checkpoint.names"], found
    from cudaenv._child import source

    child = source("checkpoint_fix.py")
    assert 'spec["weights_entries"]' in child and "model_state" not in child


# the modules that walk folders with os.walk: the writers over their own trees (readers use cudaenv.host.tree)
WALKERS = {
    "cudaenv.toolkit.install.apply": "`cudaenv install` moving the wheels' files of its own staging folder",
}


def test_only_the_host_walks_what_it_inspects():
    """A reader walks an inspected folder through cudaenv.host.tree (inspected-system names, links not followed, a
    limit); os.walk elsewhere is a second walk that can leave --root or forget the limit."""
    found = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if (isinstance(node, ast.Attribute) and node.attr == "walk" and isinstance(node.value, ast.Name)
                    and node.value.id == "os"):
                found.add(module)
    assert found == set(WALKERS), sorted(found ^ set(WALKERS))


# the capabilities that say what this machine adds to an explanation, and the one renderer of each
CONTEXT_DATA = {"cudaenv.explain": "cudaenv.render.explain", "cudaenv.pasted.context": "cudaenv.render.pasted_context",
                "cudaenv.pasted.nvcc_context": "cudaenv.render.pasted_context"}


def sentences(source):
    """English sentences written in code (docstrings and regular expressions left out): a string constant of four
    words or more that ends like a sentence (``.`` or ``:``) or is a format with ``%s`` / ``%d``."""
    tree = ast.parse(source)
    skip = docstring_ids(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("compile", "search", "match", "fullmatch"):
            skip.update(id(a) for a in node.args)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value.strip()
            if len(text.split()) >= 4 and (text.endswith((".", ":")) or "%s" in text or "%d" in text):
                found.append("%d: %s" % (node.lineno, text[:50]))
    return found


def test_machine_context_is_data_and_its_sentences_are_rendered():
    """explain's probe context and pasted/context.py's machine context are data (NamedTuples); the English is written
    in render/ only (pasted/context.py and nvcc_context.py built their sentences themselves)."""
    for module, renderer in CONTEXT_DATA.items():
        with open(MODULES[module], encoding="utf-8") as fh:
            assert sentences(fh.read()) == [], module
        with open(MODULES[renderer], encoding="utf-8") as fh:
            assert sentences(fh.read()), renderer  # the check reads what it should
    old = 'def _devices(s):\n    return ["%s does not exist here (valid: %s)." % (a, b)]\n'
    assert sentences(old) == ['2: %s does not exist here (valid: %s).']
