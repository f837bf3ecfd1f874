"""The tables `checkpoint inspect` judges a pickle by, read once: ``data/checkpoint_weights_only.txt`` (what torch
2.13's weights_only unpickler accepts: globals, opcodes, blocked modules, globals allowed after an import, dangerous
names) and ``data/checkpoint_dtypes.txt`` (storage classes, dtypes, bytes per element). Both are in the line format
(:func:`cudaenv.core.resources.parse_lines_table`), read without json: json imports re, which alone costs more than
half of inspect's start-up budget (2x ``python -c pass``).

A global is judged by the name torch reads it as: torch's weights_only unpickler renames a GLOBAL's protocol-2 names
(``__builtin__.set`` is ``builtins.set``, ``__builtin__.intern`` is ``sys.intern``) before its blocklist and allowlist,
with the rename rows of the table (:meth:`Facts.torch_name`). A plain ``pickle.load`` (weights_only=False) renames
with the stdlib's ``_compat_pickle``, a larger set (``commands`` is ``subprocess``): the danger label looks at that
name too, read only for a global that is not allowed (a torch checkpoint's never are)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Dict


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
