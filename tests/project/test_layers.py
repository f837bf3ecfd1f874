"""The import rules of the house as a test, read from every module's import statements (``ast``, lazy imports inside
functions too; ``if TYPE_CHECKING:`` blocks not, they never run).

The folder tree is the layer tree: each top-level entry of ``cudaenv/`` (a folder, or one of the few top-level
modules) is a *room* on one *floor* (FLOORS, lowest first), and a module imports only from its own room or from rooms
on lower floors. The capabilities share one floor in a fixed order (CAPABILITIES): a capability imports only the ones
before it. Each capability is a pure core plus its service module(s) (SERVICES): only a service imports the floors
that read the machine or the network (``host``, ``probes``, ``index``), and a core imports only the pure floors and
the cores earlier in the order, never another capability's service. There is no import cycle between modules nor
between rooms (Tarjan's strongly connected components on the import graph). ``_child`` scripts import nothing of
cudaenv; nothing imports ``cudaenv.cli`` (the entry point) except ``__main__``; ``subprocess`` and ``tempfile`` only
in the host package and the modules that apply changes (APPLY). The import checks also run on a planted source tree, so
it is shown to fail.
"""

import ast
import os

import cudaenv
from builders import TESTS, docstring_ids, package_modules

PACKAGE = os.path.dirname(cudaenv.__file__)

# The floors, lowest first. A room imports only from itself and the rooms on its own or a lower floor (the probes use
# _child's loader, on their floor), except on the capabilities' floor, where the order of CAPABILITIES rules.
FLOORS = ("core", "model", "parse", "shells", "host", "probes", "facts", "index", "capabilities", "render", "commands",
          "cli", "entry")

# Every top-level entry of cudaenv/ -> its floor. ``cudaenv`` is the package's __init__ (``__version__``).
ROOMS = {
    "cudaenv": "core",
    "core": "core",  # config, options, errors, text, fs, lazy, jobs, resources, version: imports nothing of cudaenv
    "bundle": "core",  # the `cudaenv` command's start-up bundles (bin/cudaenv, cli): imports nothing of cudaenv
    "model": "model",  # the record base, the codec, the snapshot and the JSON contract's envelopes
    "parse": "parse",  # pure parsers: text or bytes in, values out
    "shells": "shells",  # each shell's syntax and start-up files: pure writers of shell code (core only)
    "host": "host",  # the one seam to the machine: files, processes, children
    "_child": "probes",  # the child scripts' loader (reads them through host/files; the scripts import nothing)
    "probes": "probes",  # one module per fact, read through a Host; collect runs them all
    "facts": "facts",  # the facts tables of data/ and typed access to them
    "index": "index",  # the package index over the network (a reader, like the probes) and its cache
    "render": "render",  # every human text
    "commands": "commands",  # one thin module per subcommand
    "cli": "cli",  # the argument parser and the dispatcher
    "__main__": "entry",  # python -m cudaenv
    "portable": "entry",  # the runtime helper for users' code (imports checkpoint; nothing of cudaenv imports it)
}

# The capabilities, in their order: each imports only those before it (derived from what they use: explain reads
# checkpoint's weights names and toolkit's oldest target; the doctor asks explain and recommend; fix reads the
# doctor's findings and recommend's decision; pasted outputs and verify are judged by the doctor's rules).
CAPABILITIES = ("checkpoint", "toolkit", "explain", "recommend", "diagnose", "fix", "pasted", "verify", "fleet", "stack")

PURE_FLOORS = ("core", "model", "parse", "shells", "facts")  # what a capability's pure core may import (and itself)
IO_ROOMS = ("host", "probes", "index")  # read the machine or the network: only services (and probes) import them

# Each capability's service modules: the ones that do its I/O (read the machine through Host or the probes, run the
# probes, fetch from the index). Every other module of a capability is its pure core.
SERVICES = {
    "cudaenv.checkpoint.container": "reads the checkpoint file (bounded reads of a regular file)",
    "cudaenv.checkpoint.analyze": "reads the checkpoint file's pickle and a safetensors header (bounded)",
    "cudaenv.checkpoint.advice": "asks the machine which GPUs are visible, for the map_location advice",
    "cudaenv.checkpoint.fix": "runs the torch-free rewrite, or the user's torch in a child for --trust",
    "cudaenv.checkpoint.folder": "lists a checkpoint folder and reads its files and index (bounded, regular files only)",
    "cudaenv.checkpoint.consolidate": "writes one file from a checkpoint folder (the shards' byte ranges, or torch in a child)",
    "cudaenv.toolkit.installer_check": "reads the .run installer's header (bounded)",
    "cudaenv.toolkit.link": "reads the package database and ld.so.conf to link a toolkit",
    "cudaenv.toolkit.project": "reads the project's folder and probes the toolkits (`use --local`)",
    "cudaenv.toolkit.install.service": "the platform, the store of installed toolkits, the GPUs before an install",
    "cudaenv.toolkit.install.listing": "fetches NVIDIA's wheel listing through the index client",
    "cudaenv.toolkit.install.apply": "installs the wheels into the store (through Host.run)",
    "cudaenv.toolkit.install.runfile": "unpacks a runfile into the store",
    "cudaenv.toolkit.uninstall.inspect": "reads what an uninstall would remove (package databases, files, links)",
    "cudaenv.toolkit.uninstall.targets": "finds the toolkits and site-packages to uninstall from",
    "cudaenv.toolkit.uninstall.dpkg": "streams dpkg's lists through the Host",
    "cudaenv.toolkit.uninstall.rpm": "asks rpm (through Host.run) which packages own the files, where it is installed",
    "cudaenv.recommend.service": "probes the machine, reads the index cache or refreshes it",
    "cudaenv.recommend.guard_service": "`cudaenv torch guard`: reads torch before and after, runs pip's dry run and the install",
    "cudaenv.recommend.mirror_check": "`cudaenv torch mirror-check`: probes the machine, reads the mirror's and the official index's pages",
    "cudaenv.diagnose.service": "`cudaenv doctor`: collects the snapshot (the probes) before the rules run",
    "cudaenv.pasted.service": "`cudaenv explain`: reads the paste (--file, stdin) and this machine's context",
    "cudaenv.toolkit.service": "`cudaenv link` and `cudaenv init`: probes the toolkits, edits the rc file",
    "cudaenv.toolkit.uninstall.service": "`cudaenv uninstall`: the toolkits, site-packages, and removing cudaenv's own installs",
    "cudaenv.fix.apply": "runs the install through Host.run, probes again and diagnoses",
    "cudaenv.pasted.context": "probes this machine for the context of a pasted error",
    "cudaenv.explain.service": "probes this machine's platform (a Mac, a container) for explain --probe",
    "cudaenv.verify.run": "runs the device children, torchrun and the probes",
    "cudaenv.verify.toolkit_check": "compiles and runs the test program with the active nvcc",
    "cudaenv.verify.classify": "reads a child's CommandResult (host.process) into a verify result",
    "cudaenv.fleet.files": "reads the report files (bounded, regular files only)",
    "cudaenv.stack.service": "probes the machine for `cudaenv lock`, writes and reads the stack file",
}

# The modules that run programs or make temp folders (the host package) and those that apply changes (subprocess / tempfile allowed).
APPLY = {
    "cudaenv.host.process": "the one runner: timeouts, bounded capture, process groups",
    "cudaenv.host.files": "scratch_dir: the one private temporary folder for cudaenv's children",
    "cudaenv.core.fs": "atomic writes (a temp file beside the target, then rename): the torch index cache, rc files",
    "cudaenv.toolkit.install.apply": "`cudaenv install`: a staging folder beside the target, renamed into place",
    "cudaenv.toolkit.install.runfile": "`cudaenv install --runfile`: the same staging folder, for the runfile's toolkit",
}


def _type_checking(node):
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def imports_of(source, modules, module=""):
    """Every module of ``modules`` (and every outside module) that ``source`` imports at run time: lazy ones inside
    functions included, TYPE_CHECKING blocks not. ``from a import b`` is ``a.b`` when that is a module, else ``a``;
    ``import a.b`` is the longest module it names."""
    tree = ast.parse(source)
    skip = set()
    for node in ast.walk(tree):
        if _type_checking(node):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(_known(a.name, modules) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "%s: a relative import (the house uses absolute ones)" % module
            base = node.module or ""
            for a in node.names:
                full = base + "." + a.name
                out.add(full if full in modules else _known(base, modules))
    return out


def _known(name, modules):
    """``name``, or the longest module of ``modules`` it lies in (``cudaenv.host.Host`` -> ``cudaenv.host``)."""
    if not name.startswith("cudaenv"):
        return name
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def graph(sources):
    """{module: {module or outside name it imports}} for ``sources`` ({module: source text})."""
    return {m: imports_of(text, sources, m) - {m} for m, text in sources.items()}


def room(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def rank(name):
    """A room's height: its floor, and within the capabilities' floor its place in CAPABILITIES."""
    if name in CAPABILITIES:
        return (FLOORS.index("capabilities"), CAPABILITIES.index(name))
    return (FLOORS.index(ROOMS[name]), 0)


def _inner(edges):
    """The edges between cudaenv modules (the _child scripts left out: they run elsewhere and import nothing)."""
    return {m: {t for t in ts if t.startswith("cudaenv") and room(t) != "_child" or t == "cudaenv._child"}
            for m, ts in edges.items() if not m.startswith("cudaenv._child.")}


def strongly_connected(edges):
    """Tarjan's strongly connected components of ``edges`` ({node: {node}}) with more than one node (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return sorted(out)


def room_edges(edges, depth=1):
    """The edges between rooms: the first ``depth`` components under cudaenv (2: toolkit.install is its own room)."""
    def name(m):
        parts = m.split(".")[1:1 + depth]
        while parts and ".".join(["cudaenv"] + parts) not in edges:
            parts.pop()
        return ".".join(parts) or "cudaenv"

    out = {}
    for m, ts in _inner(edges).items():
        for t in ts:
            if name(m) != name(t):
                out.setdefault(name(m), set()).add(name(t))
    return out


def order_breaks(edges):
    """(importer, imported) -> why, for every import that goes up a floor or forward in the capabilities' order."""
    found = {}
    for m, ts in _inner(edges).items():
        for t in ts:
            a, b = room(m), room(t)
            if a != b and rank(b) > rank(a):
                found[(m, t)] = "%s imports %s" % (a, b)
    return found


def purity_breaks(edges, services=SERVICES):
    """(importer, imported) -> why, for every module of a pure floor or a capability's core that imports an I/O room,
    and every capability's core that imports another capability's service."""
    found = {}
    for m, ts in _inner(edges).items():
        a = room(m)
        pure = a in PURE_FLOORS or (a in CAPABILITIES and m not in services)
        if not pure:
            continue
        for t in ts:
            b = room(t)
            if b in IO_ROOMS:
                found[(m, t)] = "a pure module imports %s" % b
            elif b in CAPABILITIES and b != a and t in services:
                found[(m, t)] = "a core imports %s's service" % b
    return found


def idle_services(edges, services=SERVICES):
    """The services that import no I/O room: pure modules, to be taken off SERVICES (the list stays what is needed)."""
    return sorted(m for m in services if m in edges and not any(room(t) in IO_ROOMS for t in _inner(edges)[m]))


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


MODULES = package_modules()
SOURCES = {m: _read(p) for m, p in MODULES.items()}
EDGES = graph(SOURCES)


def _edges():
    for module, targets in EDGES.items():
        for target in targets:
            yield module, target


def _check(found):
    assert found == {}, "\n".join("%s -> %s (%s)" % (m, t, why) for (m, t), why in sorted(found.items()))


def test_every_top_level_entry_is_a_room_on_a_floor():
    """``ls cudaenv/`` is the architecture: folders, the package's __init__, __main__ and the public portable."""
    entries = {name[:-3] if name.endswith(".py") else name for name in os.listdir(PACKAGE)
               if name.endswith(".py") or os.path.isfile(os.path.join(PACKAGE, name, "__init__.py"))}
    entries = {"cudaenv" if e == "__init__" else e for e in entries}
    assert sorted(entries - set(ROOMS) - set(CAPABILITIES)) == []
    assert sorted(set(ROOMS) - entries) == [] and sorted(set(CAPABILITIES) - entries) == []
    assert set(ROOMS.values()) | {"capabilities"} == set(FLOORS)
    assert sorted(n for n in os.listdir(PACKAGE) if n.endswith(".py")) == ["__init__.py", "__main__.py", "portable.py"]
    assert sorted(set(SERVICES) - set(MODULES)) == [], "a service that is no module"
    assert sorted(m for m in SERVICES if room(m) not in CAPABILITIES) == []


def test_child_scripts_import_nothing_of_cudaenv():
    """The _child scripts run inside other interpreters (the user's Python): stdlib only."""
    bad = sorted((m, t) for m, t in _edges() if m.startswith("cudaenv._child.") and t.startswith("cudaenv"))
    assert bad == []


def test_imports_go_down_the_floors_and_the_capabilities_order():
    _check(order_breaks(EDGES))


def test_pure_cores_import_no_io_and_no_service():
    """Only a capability's service reads the machine (host, probes, collect) or the network (index); a core imports
    the pure floors and the cores before it."""
    _check(purity_breaks(EDGES))


def test_every_service_reads_the_machine_or_the_network():
    assert idle_services(EDGES) == [], "pure now: remove from SERVICES"


def test_no_import_cycle_between_modules():
    assert strongly_connected(_inner(EDGES)) == []


def test_no_import_cycle_between_rooms():
    assert strongly_connected(room_edges(EDGES)) == []
    assert strongly_connected(room_edges(EDGES, depth=2)) == []  # toolkit.install, toolkit.uninstall, probes.toolkits


PLANTED = {
    "cudaenv": "",
    "cudaenv.core": "",
    "cudaenv.core.text": "def printable(s):\n    return s\n",
    "cudaenv.model": "",
    # a cycle through a lazy import: record -> codec at module level, codec -> record inside a function
    "cudaenv.model.record": "from cudaenv.model.codec import to_jsonable\n",
    "cudaenv.model.codec": "def to_jsonable(x):\n    from cudaenv.model.record import Record\n    return Record\n",
    # a TYPE_CHECKING import never runs: no cycle, no break
    "cudaenv.model.schema": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from cudaenv.diagnose import rules\n",
    "cudaenv.host": "class Host:\n    pass\n",
    "cudaenv.diagnose": "from cudaenv.core.text import printable\n",
    # a capability importing one after it (diagnose < verify), and a core reading the machine
    "cudaenv.diagnose.rules": "def check(s):\n    from cudaenv.verify.run import run\n    from cudaenv.host import Host\n",
    "cudaenv.verify": "",
    "cudaenv.verify.run": "from cudaenv.diagnose.rules import check\nfrom cudaenv.host import Host\n",
    "cudaenv.verify.classify": "from cudaenv.verify.run import run\n",  # a core importing its own service
    "cudaenv.fleet": "from cudaenv.verify.run import run\n",  # a core importing another capability's service
}


def test_the_checks_fail_on_a_planted_tree():
    edges = graph(PLANTED)
    assert "cudaenv.diagnose" not in edges["cudaenv.model.schema"]
    assert strongly_connected(_inner(edges)) == [["cudaenv.diagnose.rules", "cudaenv.verify.run"],
                                                 ["cudaenv.model.codec", "cudaenv.model.record"]]
    assert strongly_connected(room_edges(edges)) == [["diagnose", "verify"]]
    assert sorted(order_breaks(edges)) == [("cudaenv.diagnose.rules", "cudaenv.verify.run")]
    services = {"cudaenv.verify.run": "planted", "cudaenv.verify.classify": "planted, but it reads nothing"}
    assert idle_services(edges, services) == ["cudaenv.verify.classify"]
    assert sorted(purity_breaks(edges, services)) == [("cudaenv.diagnose.rules", "cudaenv.host"),
                                                     ("cudaenv.diagnose.rules", "cudaenv.verify.run"),
                                                     ("cudaenv.fleet", "cudaenv.verify.run")]


def test_nothing_imports_the_cli_from_below():
    bad = sorted(m for m, t in _edges() if room(t) == "cli" and room(m) != "cli" and m != "cudaenv.__main__")
    assert bad == []


def test_processes_and_temp_files_only_where_changes_are_applied():
    found = sorted((m, t) for m, t in _edges()
                   if t in ("subprocess", "tempfile") and m not in APPLY and not m.startswith("cudaenv._child"))
    users = {m for m, t in _edges() if t in ("subprocess", "tempfile")}
    assert sorted(set(APPLY) - users) == [], "no longer runs programs or makes temp files: remove from APPLY"
    assert found == []


# ----------------------------------------------------------------------------- sizes (issue 11: modules you can read)
COMMAND_LINES = 150  # a command: arguments -> one service call -> one renderer -> exit code
MODULE_LINES = 500  # issue 25: no module over 500 lines

# Commands still over COMMAND_LINES -> why. Each entry must still be needed (a stale one fails).
LONG_COMMANDS = {}

# Modules over MODULE_LINES -> why (none: the Host record and its helpers were split by noun). Each entry must still be
# needed (a stale one fails).
LONG_MODULES = {}


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


# the capabilities that say what this machine adds to an explanation (and why a match ranks where it does), and the
# one renderer of each
CONTEXT_DATA = {"cudaenv.explain": "cudaenv.render.explain", "cudaenv.pasted.context": "cudaenv.render.pasted_context",
                "cudaenv.pasted.nvcc_context": "cudaenv.render.pasted_context", "cudaenv.explain.rank": "cudaenv.render.explain"}


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
    """explain's probe context and pasted/context.py's machine context are data (NamedTuples), and explain/rank.py's
    ranking notes (kind, value) pairs; the English is written in render/ only (pasted/context.py and nvcc_context.py
    built their sentences themselves, rank.py its notes as marked messages)."""
    for module, renderer in CONTEXT_DATA.items():
        with open(MODULES[module], encoding="utf-8") as fh:
            assert sentences(fh.read()) == [], module
        with open(MODULES[renderer], encoding="utf-8") as fh:
            assert sentences(fh.read()), renderer  # the check reads what it should
    old = 'def _devices(s):\n    return ["%s does not exist here (valid: %s)." % (a, b)]\n'
    assert sentences(old) == ['2: %s does not exist here (valid: %s).']
