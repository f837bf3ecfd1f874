"""The tables `checkpoint inspect` judges a pickle by, read once: ``data/checkpoint_weights_only.txt`` (what torch
2.13's weights_only unpickler accepts: globals, opcodes, blocked modules, globals allowed after an import, dangerous
names) and ``data/checkpoint_dtypes.txt`` (storage classes, dtypes, bytes per element), and the safety verdict by
them (safe, unsafe, inconclusive). Both tables are in the line format (:mod:`cudaenv.core.linetable`), read without
json (json imports re, which alone costs more than half of inspect's start-up budget, 2x ``python -c pass``), and
from the wheel's compiled copy without parsing (:func:`cudaenv.core.resources.compiled_table`).

A global is judged by the name torch reads it as: torch's weights_only unpickler renames a GLOBAL's protocol-2 names
(``__builtin__.set`` is ``builtins.set``, ``__builtin__.intern`` is ``sys.intern``) before its blocklist and allowlist,
with the rename rows of the table (:meth:`Facts.torch_name`). A plain ``pickle.load`` (weights_only=False) renames
with the stdlib's ``_compat_pickle``, a larger set (``commands`` is ``subprocess``): the danger label looks at that
name too, read only for a global that is not allowed (a torch checkpoint's never are).

The safety verdict (:func:`judge`, :func:`inspect_exit_code`; issue 26; beside its tables, as both are always read
together on `checkpoint inspect`'s path): what ``torch.load(weights_only=False)`` (a plain ``pickle.load``) of a read
checkpoint would run, fail closed.

* ``safe``: every pickle torch.load would read was walked to its end (or to the byte where pickle itself raises:
  nothing after it runs), and it names only globals on torch's weights_only allowlist, and calls only those.
* ``unsafe`` (exit 3): a global outside the allowlist (an allow-list: the deny-list of
  ``data/checkpoint_weights_only.txt`` only adds words), a computed ``STACK_GLOBAL``, a call of what is not a global.
* ``inconclusive`` (exit 4): a walk that stopped for a reason of its own (a bound, an argument it does not read), a
  pickle that was not read, an archive where cudaenv cannot be sure which bytes torch unpickles, TorchScript.
"""

from __future__ import annotations

from cudaenv.checkpoint.nodes import Unresolved
from cudaenv.checkpoint.report import VerdictReason
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Any, Dict, List, Tuple

    from cudaenv.checkpoint.nodes import WalkResult
    from cudaenv.checkpoint.reading import Container


class Facts:
    def __init__(self):
        from cudaenv.core.resources import load_table

        wo = load_table("checkpoint_weights_only")
        self.torch_version = wo.get("torch_version", "2.13.0")
        kinds: Dict[str, list] = {}  # the rows by kind, in one pass (read on inspect's start-up)
        for r in wo["rows"]:
            kinds.setdefault(r["kind"], []).append(r)
        self.allowed = frozenset(r["name"] for r in kinds.get("global", ()))
        self.opcodes = frozenset(r["code"] for r in kinds.get("opcode", ()))
        self.blocked = tuple(r["name"] for r in kinds.get("blocked_module", ()))
        self.conditional = {r["name"]: r["needs"] for r in kinds.get("conditional", ())}
        self.dangerous = tuple(r["name"] for r in kinds.get("dangerous", ()))
        self.rename_global = {r["name"]: r["to"] for r in kinds.get("rename_global", ())}
        self.rename_module = {r["name"]: r["to"] for r in kinds.get("rename_module", ())}
        dt = load_table("checkpoint_dtypes")
        self.storage_dtype = {r["storage"]: (r["dtype"], r["itemsize"]) for r in dt["rows"] if r.get("storage")}
        self.itemsize = {r["dtype"]: r["itemsize"] for r in dt["rows"]}

    def torch_name(self, name: str) -> str:
        """``name`` (``module.name``) as torch's weights_only unpickler reads a GLOBAL of it: ``(module, name)`` in its
        NAME_MAPPING, else ``module`` in its IMPORT_MAPPING, renamed (T:_weights_only_unpickler.py:230-240)."""
        to = self.rename_global.get(name)
        if to is not None:
            return to
        if "." in name:
            module, _, short = name.rpartition(".")
            to = self.rename_module.get(module)
            if to is not None:
                return "%s.%s" % (to, short)
        return name

    def verdict(self, name: str) -> str:
        """allowed | needs-import | dangerous | blocked | not-allowed, for the name as the pickle spells it."""
        torch_name = self.torch_name(name)
        if torch_name in self.allowed:
            return "allowed"
        if torch_name in self.conditional:
            return "needs-import"
        names = (name, torch_name, plain_name(name))
        if any(_under(n, self.dangerous) for n in names) or any(_under(n, self.dangerous) for n in _chain_tails(name)):
            return "dangerous"
        for n in names:
            module = n.rsplit(".", 1)[0] if "." in n else n
            if module.split(".")[0] in self.blocked or module in self.blocked:
                return "blocked"
        return "not-allowed"


def plain_name(name: str) -> str:
    """``name`` as ``pickle.load`` of a protocol 0-2 pickle imports it (weights_only=False; the stdlib's
    ``_compat_pickle``, imported here only: a small module, and only a file with a global outside the allowlist
    comes here)."""
    import _compat_pickle

    if "." not in name:
        return name
    module, _, short = name.rpartition(".")
    pair = _compat_pickle.NAME_MAPPING.get((module, short))
    if pair is not None:
        return "%s.%s" % pair
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return "%s.%s" % (module, short)


def _chain_tails(name: str, most: int = 32):
    """What a dotted name may reach through its attribute chain, as CPython resolves ``torch`` +
    ``serialization.os.system`` (getattr step by step: ``torch.serialization.os`` is the module os): every tail of
    two parts or more (``os.system``, ``serialization.os.system``), the last ``most`` parts only (a bound)."""
    parts = name.split(".")[-most:]
    return [".".join(parts[i:]) for i in range(1, len(parts) - 1)]


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


_FACTS = []  # the one Facts, once read (not functools.lru_cache: functools and collections are not on this path)


def facts() -> Facts:
    if not _FACTS:
        _FACTS.append(Facts())
    return _FACTS[0]


# ------------------------------------------------------------------ the safety verdict (issue 26): safe, unsafe, inconclusive

EXIT_UNSAFE = 3  # docs/reference/exit-codes.md
EXIT_INCONCLUSIVE = 4


def inspect_exit_code(report) -> int:
    """``checkpoint inspect``'s exit code: 3 unsafe, 4 inconclusive, else 0 when torch.load(weights_only=True) loads
    the file here as it is, 1 when it does not."""
    from cudaenv.checkpoint.advice import needs_mapping

    if report.verdict == "unsafe":
        return EXIT_UNSAFE
    if report.verdict == "inconclusive":
        return EXIT_INCONCLUSIVE
    loads_here = report.weights_only is not False and not report.inconsistencies and not needs_mapping(report)
    return 0 if loads_here else 1


_NODE_TYPES = {"SDict": "dict", "SList": "list", "SSet": "set", "tuple": "tuple", "str": "str", "int": "int",
               "float": "float", "bool": "bool", "NoneType": "NoneType", "Blob": "bytes", "ShortBytes": "bytes"}


def what_kind(kind: str) -> str:
    """A walk's target kind (:func:`cudaenv.checkpoint.nodes.target_kind`) as a person reads it."""
    if "." in kind or kind.startswith("<"):  # a call's result
        return M("the result of %s(...)", kind)
    if kind == "Global":
        return M("a global itself (a class or function)")
    if kind == "Unresolved":
        return M("a computed global")
    if kind == "Persid":
        return M("a persistent id's object")
    return _NODE_TYPES.get(kind, kind)


def pickle_name(box: Container) -> str:
    """The name of the pickle ``box.pickle`` is, as a report says where something is."""
    if box.format in ("torch-zip", "torchscript", "zip"):
        return "%s/data.pkl" % box.prefix
    if box.format == "torch-legacy":
        return M("the legacy object pickle")
    if box.format == "torch-legacy-tar":
        return M("legacy tar member pickle")
    return M("the pickle at byte 0")


def walked(box: Container) -> List[Tuple[str, WalkResult]]:
    """Every pickle torch.load would unpickle that was walked, with its name."""
    out: List[Tuple[str, WalkResult]] = []
    if box.leading is not None:  # torch.load reads the file from byte 0 as a pickle (not a zip there)
        out.append((M("the pickle at byte 0"), box.leading))
    if box.pickle is not None:
        out.append((pickle_name(box), box.pickle))
    out.extend(box.extra_pickles.items())
    return out


def judge(box: Container, f: Facts) -> Dict[str, Any]:
    """The safety verdict: what torch.load(weights_only=False) of the file runs. Fail closed: ``safe`` only when every
    pickle torch would read was walked to its end (or to where pickle itself fails) and names only allowlisted
    globals and targets; ``unsafe`` for anything outside the allowlist; ``inconclusive`` for everything else."""
    unsafe: List[VerdictReason] = []
    unsure: List[VerdictReason] = [VerdictReason(w, y) for w, y in box.ambiguous]
    if box.format == "safetensors":
        return {"verdict": "safe", "verdict_reasons": ()}
    if box.format == "torchscript":
        unsure.append(VerdictReason("%s/code/" % box.prefix, M("a TorchScript archive: torch.load(weights_only=False) "
                                    "hands it to torch.jit.load, which runs its TorchScript code; cudaenv does not judge that code")))
    if box.format == "torch-legacy-tar" and box.pickle is None:
        unsure.append(VerdictReason(M("the tar archive"), M("a legacy tar checkpoint whose members were not walked")))
    for what in box.unread:
        unsure.append(VerdictReason(what.split(" ", 1)[0], M("a pickle torch.load reads was not read: %s", what)))
    for where, r in walked(box):
        names = [g for g in r.globals]
        for g in sorted(names):
            v = f.verdict(g)
            if v in ("allowed", "needs-import"):
                if g in r.dotted:  # weights_only checks the joined name; pickle follows the attribute chain
                    unsure.append(VerdictReason(where, M("GLOBAL %s is spelled with a dotted attribute path (protocol 4 "
                                                         "resolves it by getattr, one step at a time): cudaenv does not "
                                                         "follow the chain to be sure it is the allowlisted object", g)))
                continue
            if g == Unresolved.full:
                unsafe.append(VerdictReason(where, M("%d STACK_GLOBAL with a computed (non-literal) name: what it imports "
                                                     "is unknown", r.computed_globals)))
                continue
            if v == "dangerous":
                why = M("GLOBAL %s is outside torch's weights_only allowlist: torch.load(weights_only=False) imports it, "
                        "and may call it; it can run code or reach the system", g)
            elif v == "blocked":
                why = M("GLOBAL %s is outside torch's weights_only allowlist: torch.load(weights_only=False) imports it, "
                        "and may call it; its module is one torch blocks", g)
            else:
                why = M("GLOBAL %s is outside torch's weights_only allowlist: torch.load(weights_only=False) imports it, "
                        "and may call it", g)
            unsafe.append(VerdictReason(where, why))
        for (op, kind), _n in sorted(r.call_targets.items()):
            unsafe.append(VerdictReason(where, M("%s calls %s, which is not an allowlisted global", op, what_kind(kind))))
        if not r.complete and not r.fails:  # (a walk that ends where pickle itself raises saw all that runs)
            unsure.append(VerdictReason(M("%s, byte %d", where, r.end), M("the walk stopped before the pickle's end: %s",
                                        r.notes[-1] if r.notes else M("no reason recorded"))))
    if unsafe:
        return {"verdict": "unsafe", "verdict_reasons": tuple(unsafe + unsure)}
    if unsure:
        return {"verdict": "inconclusive", "verdict_reasons": tuple(unsure)}
    if box.format in ("unknown", "zip"):  # torch.load fails on it; the pickle at byte 0 (if any) runs nothing
        return {"verdict": None, "verdict_reasons": ()}
    return {"verdict": "safe", "verdict_reasons": ()}
