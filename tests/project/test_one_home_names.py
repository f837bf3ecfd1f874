"""One home for each name (issue 25): guard names, not spellings.

The planted-copy checks of ``test_one_home_parsers.py``/``_facts.py``/``_model.py`` catch a second copy of a data
literal or an idiom; a helper rewritten rather than pasted passes them. These checks read every module of the
installed package (``ast``) for what a rewrite keeps, its name:

* **a module-level name defined in two modules**: a public function, class or constant (``def``, ``class``, an
  assignment) of the same name in two modules of the package is one fact with two homes, or two facts under one
  name (a reader who finds one thinks it is the other). Names a kind of module must define (each command's ``run``
  and ``HELP``, each diagnose section's ``check``) are :data:`ROLES`; the few others left are :data:`SAME_NAME`,
  each with its reason.
* **a module that aliases a function**: ``x = imported_or_own_function``, ``from cudaenv.m import f as g`` (a
  cudaenv name imported under another name; a module imported under a short name is fine), and a function whose
  whole body is ``return f(<its own arguments>)`` (``find_toolkit`` around ``select_toolkit``) make one fact
  findable under two names: callers use the one name. The few left are :data:`ALIASES`, each with its reason.

Each check is also run on planted source text (a second definition, each form of alias), so it cannot pass by
matching nothing.
"""

import ast
from typing import Callable, Dict, List, Set, Tuple

import pytest

from builders import package_modules

MODULES = package_modules()
SOURCES = {m: open(p, encoding="utf-8").read() for m, p in MODULES.items() if not m.startswith("cudaenv._child")}

# Names each module of one kind defines by contract: the kind (a module prefix) may repeat them; one other module
# of the package may hold the same name (counted as a duplicate beyond that).
ROLES: Dict[str, Tuple[str, str]] = {
    "run": ("cudaenv.commands.", "each command module's entry point (the command table calls module.run)"),
    "HELP": ("cudaenv.commands.", "each command's help line, read by the command table"),
    "OPTIONS": ("cudaenv.commands.", "a command's Option declarations, read by the fast parser of use/list"),
    "POSITIONAL": ("cudaenv.commands.", "a command's positional arguments, read by the fast parser of use/list"),
    "ACTIONS": ("cudaenv.commands.", "a command's Action declarations (torch, fleet), read by core.options.declare"),
    "ACTION_DEST": ("cudaenv.commands.", "where a command with actions keeps the chosen one (declare, the fast parser)"),
    "FORMATS": ("cudaenv.commands.", "a command's --format choices"),
    "RUNS_CHILDREN": ("cudaenv.commands.", "a command whose run starts children: the fast parser's path installs the "
                                           "signal handlers for it (cli)"),
    "check": ("cudaenv.diagnose.", "each diagnose section's rules, called in the expert's order by cudaenv.diagnose"),
    "F": ("cudaenv.diagnose.", "each diagnose section's finding maker (diagnose._common.finding bound to the section)"),
    "TABLE": ("cudaenv.", "the data/ table a facts module reads (each module names its own table)"),
    "sources": ("cudaenv.facts.", "the source keys of the table a facts module reads"),
    "PROBE": ("cudaenv.probes.", "the name a probe's notes carry"),
    "TYPE_CHECKING": ("cudaenv.", "False: the `use` path's stand-in for typing.TYPE_CHECKING (typing is not imported there)"),
}

# A bound of one module's own reading (MAX_*, *_LIMIT, *CHUNK, SMALL): the name says "a limit", the value is that
# reading's fact (a 64 KiB chunk of an HTTP body is not a 1 MiB chunk of an rpm header).
BOUNDS = ("MAX_", "_LIMIT", "CHUNK", "SMALL")

# Names two modules define for different things, each with its reason. Keep this short: rename instead.
SAME_NAME: Dict[str, str] = {
    "ACTIVE": "render.toolkits' mark for the active toolkit ('*') vs toolkit.switch's variable CUDAENV_ACTIVE",
    "Alternative": "an update-alternatives entry (probes.dpkg) vs another torch build to offer (recommend.records)",
    "CACHE_NAME": "each cache's own file: index.cache's torch-index.json, toolkit.install.listing's toolkit-releases.json",
    "CHECKS": "explain.checks' registry of row checks vs render.report's checklist builders per section",
    "Candidate": "explain.rank's matching error row vs recommend.records' judged torch build",
    "Check": "render.report's row type vs installer_check's and verify's check records (three reports' own rows)",
    "Context": "cli's per-command context (streams, env) vs explain.rank's context-line rules",
    "Facts": "checkpoint.tables' torch pickle tables vs recommend.view's torch facts lookup",
    "Gpu": "model.snapshot's probed GPU record vs pasted.context's GPU named in a paste",
    "KINDS": "parse.visible_devices' CUDA_VISIBLE_DEVICES entry kinds vs pasted.context's context kinds",
    "LINK": "render.toolkits' arrow ('->') vs toolkit.select's /usr/local/cuda (the link's one home)",
    "MARKER": "each child protocol's own line marker (torch probe, verify, toolkit check; the store's marker file): the "
              "parent restates a _child script's marker because _child imports nothing of cudaenv",
    "META": "checkpoint.template's pickle pattern vs toolkit.install.plan's meta package name",
    "Options": "each service's own options record (checkpoint fix, torch recommend, uninstall)",
    "Paste": "explain's read paste (text, size, cut) vs explain.rank's normalized views of it",
    "Request": "recommend's torch request vs verify's run request",
    "rules": "diagnose's rule order vs explain.rank's loaded ranking rules",
    "SECTIONS": "diagnose's finding sections vs render.facts' fact section titles",
    "classify": "toolkit.uninstall.rcfiles' line classifier vs verify.classify's error classifier",
    "describe": "explain's error description by id vs toolkit.switch's one-line toolkit description",
    "driver_steps": "recommend.fix_plan's driver upgrade steps vs uninstall's driver removal steps",
    "gpu_label": "the doctor's GPU label (with its compute capability) vs a paste's (with its bus id)",
    "index_base": "index.torch's torch index base, recommend.service's checked one (a usage error), "
                  "toolkit.install.listing's pip index for NVIDIA's wheels",
    "install_argv": "recommend.install's pip/uv argv from pins vs recommend.apply's for a recommendation",
    "load_toolkits": "toolkit.project's (paths mapped for this machine's shell) vs uninstall.targets' (with the link)",
    "local_tag": "facts.torch's local version tag of a version string vs torch_policy's rule (does a platform's "
                 "variant carry one)",
    "parse_list": "parse.dpkg's *.list file vs parse.nvidia_smi's -L output",
    "quote": "diagnose's POSIX quoting of a fix line vs recommend.install's quoting for the target system",
    "render_install": "render.fix's install outcome vs render.install's toolkit install",
    "render_markdown": "each renderer module's Markdown of its own report (doctor, fleet)",
    "render_report": "each renderer module's text of its own report (doctor, check-installer)",
    "render_text": "each renderer module's text of its own report (fleet, torch recommend, verify)",
    "run": "the command modules' entry points and the pickle walkers' (checkpoint.careful, checkpoint.template)",
    "run_verify": "recommend.apply runs `cudaenv verify` as a child after fix vs verify.run's own run",
    "seconds": "core.config resolves a timeout setting vs core.options reads a --timeout value",
    "walk": "checkpoint.pickle_vm's opcode walk vs host.tree's bounded folder walk",
    "kill_all_children": "the host package's light stand-in (`use` and `list` never load the runner) for "
                         "host.children's, which it calls when loaded",
}

# Second homes this change did not reach: name -> who removes it and how. An entry no longer needed fails.
PENDING: Dict[str, str] = {
    "cc_tuple": "facts.torch.cc_tuple wraps core.version.cc_tuple returning () for None: callers should use the core one",
    "sm_name": "facts.torch.sm_name wraps core.version.sm_name (no suffix, 'sm_?'): callers should use the core one",
    "corrected_value": "the visible-GPU rule (diagnose.visibility vs parse.visible_devices): helper converge's",
    "LABELS": "fleet.summary's dimension labels vs render.fleet's: one set (render at the edge, helper edge's)",
}

# (module, alias as written) -> reason; every other alias fails.
_CKPT = "the weights-entry names and prefixes under other names: the state-dict change's (helper ckpt-write)"
ALIASES: Dict[Tuple[str, str], str] = {
    ("cudaenv.portable", "import WEIGHTS_ENTRIES as NESTED"): _CKPT,
    ("cudaenv.portable", "import WRAPPER_PREFIXES as WRAPPERS"): _CKPT,
    ("cudaenv.checkpoint.graph", "STATE_DICT_NAMES = WEIGHTS_ENTRIES"): _CKPT,
    ("cudaenv.checkpoint.graph", "EMA_NAMES = EMA_ENTRIES"): _CKPT,
    ("cudaenv.explain.checks", "import WRAPPER_PREFIXES as PREFIXES"): _CKPT,
}


# ------------------------------------------------------------------ what a module defines
def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _public(name: str) -> bool:
    return not name.startswith("_") and not _is_dunder(name)


def _imported(tree: ast.Module) -> Dict[str, Tuple[str, str]]:
    """Module-level name -> (module, name) it was imported as (``from m import f as g``: g -> (m, f))."""
    out: Dict[str, Tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                out[a.asname or a.name] = ("." * node.level + (node.module or ""), a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = (a.name, "")
    return out


def _is_alias_value(value: ast.AST, names: Set[str]) -> bool:
    """``f`` or ``mod.f`` where ``f``/``mod`` is a name the module imported or defined as a function or class."""
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        return value.value.id in names
    return False


def definitions(tree: ast.Module) -> Dict[str, int]:
    """The public names a module defines at its top level (functions, classes, assignments that are not aliases)."""
    imported = set(_imported(tree))
    callables = imported | {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    out: Dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.setdefault(node.name, node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _is_alias_value(node.value, callables):
                continue  # an alias: the alias check's
            if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "LazyModule":
                continue  # ``ntpath = LazyModule("ntpath")``: an import, made lazily
            for t in targets:
                for name in ([t] if isinstance(t, ast.Name) else t.elts if isinstance(t, ast.Tuple) else []):
                    if isinstance(name, ast.Name):
                        out.setdefault(name.id, node.lineno)
    return {name: line for name, line in out.items() if _public(name) or name == "TYPE_CHECKING"}


def defined_twice(trees: Dict[str, ast.Module], roles=None, same_name=None) -> Dict[str, List[str]]:
    """name -> the modules that define it, for each name defined in two modules beyond :data:`ROLES`/:data:`SAME_NAME`."""
    roles = ROLES if roles is None else roles
    same_name = dict(SAME_NAME, **PENDING) if same_name is None else same_name
    where: Dict[str, List[str]] = {}
    for module, tree in trees.items():
        for name in definitions(tree):
            where.setdefault(name, []).append(module)
    out = {}
    for name, modules in where.items():
        if name in same_name or (name.isupper() and any(b in name for b in BOUNDS)):
            continue
        if name in roles:
            modules = [m for m in modules if not m.startswith(roles[name][0])]
        if len(modules) > 1:
            out[name] = sorted(modules)
    return out


# ------------------------------------------------------------------ aliases
def _params(fn: ast.FunctionDef) -> List[str]:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs] + ([a.vararg.arg] if a.vararg else []) + \
        ([a.kwarg.arg] if a.kwarg else [])


def _passes_its_arguments(fn: ast.FunctionDef, call: ast.Call) -> bool:
    """The call hands on the function's own parameters and nothing else (any order, by position or keyword)."""
    passed = []
    for arg in call.args:
        value = arg.value if isinstance(arg, ast.Starred) else arg
        if not isinstance(value, ast.Name):
            return False
        passed.append(value.id)
    for kw in call.keywords:
        if not isinstance(kw.value, ast.Name):
            return False
        passed.append(kw.value.id)
    return sorted(passed) == sorted(_params(fn))


def aliases(tree: ast.Module, is_module: Callable[[str], bool]) -> List[Tuple[int, str]]:
    """(line, the alias as written) for each way the module gives a function (or a cudaenv name) a second name."""
    imported = _imported(tree)
    own = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    out: List[Tuple[int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "cudaenv"):
            for a in node.names:
                if a.asname and a.asname != a.name and a.asname != "_" + a.name \
                        and not is_module("%s.%s" % (node.module or "", a.name)):
                    out.append((node.lineno, "import %s as %s" % (a.name, a.asname)))
        elif isinstance(node, ast.Assign) and _is_alias_value(node.value, set(imported) | own):
            value = node.value
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            target = value.id if isinstance(value, ast.Name) else "%s.%s" % (value.value.id, value.attr)
            root = value.id if isinstance(value, ast.Name) else value.value.id
            if isinstance(value, ast.Attribute) and imported.get(root, ("", None))[1] == "" and not is_module(imported[root][0]):
                continue  # an attribute of a third-party module (``_signal = signal.SIGKILL``): not cudaenv's
            out += [(node.lineno, "%s = %s" % (n, target)) for n in names if n != target]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if node.body and isinstance(node.body[0], ast.Expr) and \
                isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str) else node.body
            if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call):
                call = body[0].value
                callee = call.func.id if isinstance(call.func, ast.Name) else None
                if callee and (callee in imported or callee in own) and callee != node.name and _passes_its_arguments(node, call):
                    out.append((node.lineno, "def %s(...): return %s(...)" % (node.name, callee)))
    return out


def _package_module(name: str) -> bool:
    return name in MODULES


def alias_findings(trees: Dict[str, ast.Module], allowed=None, is_module=_package_module) -> List[Tuple[str, int, str]]:
    allowed = ALIASES if allowed is None else allowed
    return [(module, line, text) for module, tree in trees.items() for line, text in aliases(tree, is_module)
            if (module, text) not in allowed]


TREES = {m: ast.parse(text) for m, text in SOURCES.items()}


# ------------------------------------------------------------------ the checks
def test_no_name_is_defined_in_two_modules():
    assert defined_twice(TREES) == {}


def test_no_module_aliases_a_function():
    assert alias_findings(TREES) == []


def test_every_allowed_entry_names_something_real_and_says_why():
    for (module, text), reason in ALIASES.items():
        assert module in SOURCES and len(reason) > 20, (module, text)
    for name, reason in list(SAME_NAME.items()) + list(PENDING.items()) + [(n, r[1]) for n, r in ROLES.items()]:
        assert len(reason) > 20 and any(name in definitions(t) for t in TREES.values()), name


def test_an_allowed_name_is_still_defined_twice():
    """A SAME_NAME or PENDING entry whose second definition is gone is stale: remove it."""
    counts: Dict[str, int] = {}
    for tree in TREES.values():
        for name in definitions(tree):
            counts[name] = counts.get(name, 0) + 1
    assert [n for n in list(SAME_NAME) + list(PENDING) if counts.get(n, 0) < 2] == []


def test_a_bound_or_an_allowed_name_is_not_a_way_around_the_check():
    trees = _trees(cudaenv_a="def LIMITS(x):\n    pass\n", cudaenv_b="LIMITS = 1\n")
    assert defined_twice(trees, ROLES, {}) == {"LIMITS": ["cudaenv.a", "cudaenv.b"]}


# ------------------------------------------------------------------ the checks see what they guard against
def _trees(**sources: str) -> Dict[str, ast.Module]:
    return {module.replace("_", "."): ast.parse(text) for module, text in sources.items()}


PLANTED_TWICE = [
    # a second definition of a function, a class, a constant, under any body
    dict(cudaenv_a="def seconds_text(v):\n    return '%d s' % v\n", cudaenv_b="def seconds_text(value):\n    return str(value)\n"),
    dict(cudaenv_a="class Deadline:\n    pass\n", cudaenv_b="class Deadline(object):\n    seconds = 1\n"),
    dict(cudaenv_a="PASSWD = '/etc/passwd'\n", cudaenv_b="PASSWD: str = 'etc/passwd'\n"),
    dict(cudaenv_a="X, LIMIT = 1, 2\n", cudaenv_b="LIMIT = 2\n"),
    # a role's name outside its kind of module, twice
    dict(cudaenv_x="def run(args):\n    pass\n", cudaenv_y="def run(argv):\n    pass\n"),
]


@pytest.mark.parametrize("sources", PLANTED_TWICE)
def test_a_planted_second_definition_is_found(sources):
    assert defined_twice(_trees(**sources), ROLES, {}) != {}


def test_a_role_within_its_kind_and_private_names_are_not_duplicates():
    sources = dict(cudaenv_commands_doctor="HELP = 'a'\ndef run(a):\n    pass\n_limit = 1\n",
                   cudaenv_commands_use="HELP = 'b'\ndef run(a):\n    pass\n_limit = 2\n",
                   cudaenv_other="def __getattr__(name):\n    pass\n")
    trees = {"cudaenv.commands.doctor": ast.parse(sources["cudaenv_commands_doctor"]),
             "cudaenv.commands.use": ast.parse(sources["cudaenv_commands_use"]), "cudaenv.other": ast.parse(sources["cudaenv_other"])}
    assert defined_twice(trees, ROLES, {}) == {}


PLANTED_ALIASES = [
    ("from cudaenv.core.version import version_key as version_tuple\n", "import version_key as version_tuple"),
    ("from cudaenv.core.version import version_key\nversion_tuple = version_key\n", "version_tuple = version_key"),
    ("def mb(n):\n    return n >> 20\n_mb = mb\n", "_mb = mb"),
    ("from cudaenv.toolkit import select\nfind = select.select_toolkit\n", "find = select.select_toolkit"),
    ("from cudaenv.toolkit.select import select_toolkit\n"
     "def find_toolkit(toolkits, spec, system='linux'):\n    '''The toolkit spec names.'''\n"
     "    return select_toolkit(toolkits, spec, system)\n", "def find_toolkit(...): return select_toolkit(...)"),
    ("from cudaenv.toolkit.select import select_toolkit\n"
     "def find_toolkit(toolkits, spec, *, system='linux'):\n    return select_toolkit(toolkits, spec=spec, system=system)\n",
     "def find_toolkit(...): return select_toolkit(...)"),
]


@pytest.mark.parametrize("source, expected", PLANTED_ALIASES)
def test_a_planted_alias_is_found(source, expected):
    modules = {"cudaenv.toolkit.select", "cudaenv.core.version", "cudaenv.toolkit"}
    found = alias_findings({"cudaenv.planted": ast.parse(source)}, {}, modules.__contains__)
    assert [text for _, _, text in found] == [expected]


def test_what_is_not_an_alias():
    source = ("from cudaenv.facts import drivers as drv\n"  # a module under a short name
              "from cudaenv.host import process as _process\n"
              "from cudaenv.core.version import cc_tuple as _cc_tuple\n"  # a private import of the same name
              "import signal as _signal\n"
              "KILL = _signal.SIGKILL\n"  # an attribute of a stdlib module
              "from typing import Optional as Opt\n"  # not cudaenv's
              "def describe(toolkit):\n    return 'CUDA %s' % drv.name(toolkit)\n"  # does work of its own
              "def first(items):\n    return select(items, 0)\n")  # passes more than its own arguments
    modules = {"cudaenv.facts.drivers", "cudaenv.host.process", "cudaenv.facts", "cudaenv.host"}
    assert alias_findings({"cudaenv.planted": ast.parse(source)}, {}, modules.__contains__) == []
