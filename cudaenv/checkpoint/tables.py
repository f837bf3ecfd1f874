"""The tables `checkpoint inspect` judges a pickle by, read once: ``data/checkpoint_weights_only.txt`` (what torch
2.13's weights_only unpickler accepts: globals, opcodes, blocked modules, globals allowed after an import, dangerous
names) and ``data/checkpoint_dtypes.txt`` (storage classes, dtypes, bytes per element). Both are in the line format
(:func:`cudaenv.resources.parse_lines_table`), read without json: json imports re, which alone costs more than
half of inspect's start-up budget (2x ``python -c pass``)."""

from __future__ import annotations


class Facts:
    def __init__(self):
        from cudaenv.resources import load_table

        wo = load_table("checkpoint_weights_only")
        self.torch_version = wo.get("torch_version", "2.13.0")
        self.allowed = frozenset(r["name"] for r in wo["rows"] if r["kind"] == "global")
        self.opcodes = frozenset(r["code"] for r in wo["rows"] if r["kind"] == "opcode")
        self.blocked = tuple(r["name"] for r in wo["rows"] if r["kind"] == "blocked_module")
        self.conditional = {r["name"]: r["needs"] for r in wo["rows"] if r["kind"] == "conditional"}
        self.dangerous = tuple(r["name"] for r in wo["rows"] if r["kind"] == "dangerous")
        dt = load_table("checkpoint_dtypes")
        self.storage_dtype = {r["storage"]: (r["dtype"], r["itemsize"]) for r in dt["rows"] if r.get("storage")}
        self.itemsize = {r["dtype"]: r["itemsize"] for r in dt["rows"]}

    def verdict(self, name: str) -> str:
        module = name.rsplit(".", 1)[0] if "." in name else name
        if name in self.allowed:
            return "allowed"
        if name in self.conditional:
            return "needs-import"
        if _under(name, self.dangerous):
            return "dangerous"
        if module.split(".")[0] in self.blocked or module in self.blocked:
            return "blocked"
        return "not-allowed"


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


_FACTS = []  # the one Facts, once read (not functools.lru_cache: functools and collections are not on this path)


def facts() -> Facts:
    if not _FACTS:
        _FACTS.append(Facts())
    return _FACTS[0]
