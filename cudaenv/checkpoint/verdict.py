"""The safety verdict of a read checkpoint (issue 26): what ``torch.load(weights_only=False)`` (a plain
``pickle.load``) of it would run, fail closed.

* ``safe``: every pickle torch.load would read was walked to its end (or to the byte where pickle itself raises:
  nothing after it runs), and it names only globals on torch's weights_only allowlist, and calls only those.
* ``unsafe`` (exit 3): a global outside the allowlist (an allow-list: the deny-list of
  ``data/checkpoint_weights_only.txt`` only adds words), a computed ``STACK_GLOBAL``, a call of what is not a global.
* ``inconclusive`` (exit 4): a walk that stopped for a reason of its own (a bound, an argument it does not read), a
  pickle that was not read, an archive where cudaenv cannot be sure which bytes torch unpickles, TorchScript.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Tuple

    from cudaenv.checkpoint.reading import Container
    from cudaenv.checkpoint.nodes import WalkResult
    from cudaenv.checkpoint.tables import Facts

from cudaenv.checkpoint.nodes import Unresolved
from cudaenv.checkpoint.report import VerdictReason

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
               "float": "float", "bool": "bool", "NoneType": "NoneType", "Blob": "bytes", "ShortBytes": "bytes",
               "Global": "a global itself (a class or function)", "Unresolved": "a computed global",
               "Persid": "a persistent id's object"}


def what_kind(kind: str) -> str:
    """A walk's target kind (:func:`cudaenv.checkpoint.nodes.target_kind`) as a person reads it."""
    if "." in kind or kind.startswith("<"):  # a call's result
        return "the result of %s(...)" % kind
    return _NODE_TYPES.get(kind, kind)


def pickle_name(box: Container) -> str:
    """The name of the pickle ``box.pickle`` is, as a report says where something is."""
    if box.format in ("torch-zip", "torchscript", "zip"):
        return "%s/data.pkl" % box.prefix
    if box.format == "torch-legacy":
        return "the legacy object pickle"
    if box.format == "torch-legacy-tar":
        return "legacy tar member pickle"
    return "the pickle at byte 0"


def walked(box: Container) -> List[Tuple[str, WalkResult]]:
    """Every pickle torch.load would unpickle that was walked, with its name."""
    out: List[Tuple[str, WalkResult]] = []
    if box.leading is not None:  # torch.load reads the file from byte 0 as a pickle (not a zip there)
        out.append(("the pickle at byte 0", box.leading))
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
        unsure.append(VerdictReason("%s/code/" % box.prefix, "a TorchScript archive: torch.load(weights_only=False) "
                                    "hands it to torch.jit.load, which runs its TorchScript code; cudaenv does not judge that code"))
    if box.format == "torch-legacy-tar" and box.pickle is None:
        unsure.append(VerdictReason("the tar archive", "a legacy tar checkpoint whose members were not walked"))
    for what in box.unread:
        unsure.append(VerdictReason(what.split(" ", 1)[0], "a pickle torch.load reads was not read: %s" % what))
    for where, r in walked(box):
        names = [g for g in r.globals]
        for g in sorted(names):
            v = f.verdict(g)
            if v in ("allowed", "needs-import"):
                if g in r.dotted:  # weights_only checks the joined name; pickle follows the attribute chain
                    unsure.append(VerdictReason(where, "GLOBAL %s is spelled with a dotted attribute path (protocol 4 "
                                                       "resolves it by getattr, one step at a time): cudaenv does not "
                                                       "follow the chain to be sure it is the allowlisted object" % g))
                continue
            if g == Unresolved.full:
                unsafe.append(VerdictReason(where, "%d STACK_GLOBAL with a computed (non-literal) name: what it imports "
                                                   "is unknown" % r.computed_globals))
                continue
            words = {"dangerous": "; it can run code or reach the system", "blocked": "; its module is one torch blocks"}
            unsafe.append(VerdictReason(where, "GLOBAL %s is outside torch's weights_only allowlist: "
                                               "torch.load(weights_only=False) imports it, and may call it%s" % (g, words.get(v, ""))))
        for (op, kind), _n in sorted(r.call_targets.items()):
            unsafe.append(VerdictReason(where, "%s calls %s, which is not an allowlisted global" % (op, what_kind(kind))))
        if not r.complete and not r.fails:  # (a walk that ends where pickle itself raises saw all that runs)
            unsure.append(VerdictReason("%s, byte %d" % (where, r.end), "the walk stopped before the pickle's end: %s"
                                        % (r.notes[-1] if r.notes else "no reason recorded")))
    if unsafe:
        return {"verdict": "unsafe", "verdict_reasons": tuple(unsafe + unsure)}
    if unsure:
        return {"verdict": "inconclusive", "verdict_reasons": tuple(unsure)}
    if box.format in ("unknown", "zip"):  # torch.load fails on it; the pickle at byte 0 (if any) runs nothing
        return {"verdict": None, "verdict_reasons": ()}
    return {"verdict": "safe", "verdict_reasons": ()}


