"""Things made on first use, so that importing a module on the `cudaenv use` path stays cheap."""

import sys


class LazyPattern:
    """A regular expression compiled on first use: module import stays cheap on the `cudaenv use` path.

    ``LazyPattern(r"...", flags)`` behaves like ``re.compile(r"...", flags)`` for method calls
    (``.match``, ``.search``, ``.findall``, ``.sub``, ...).
    """

    # once compiled, the usual methods are the compiled pattern's own, in slots: a parser's per-line ``.match`` costs a
    # plain attribute read, not a ``__getattr__`` call
    _METHODS = ("match", "search", "fullmatch", "sub", "subn", "findall", "finditer", "split")
    __slots__ = ("_pattern", "_flags", "_compiled") + _METHODS

    def __init__(self, pattern: str, flags: int = 0):
        self._pattern = pattern
        self._flags = flags
        self._compiled = None

    def __getattr__(self, name):
        compiled = self._compiled
        if compiled is None:
            import re

            compiled = self._compiled = re.compile(self._pattern, self._flags)
            for method in self._METHODS:
                setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return "LazyPattern(%r)" % self._pattern


class LazyModule:
    """A module imported on first attribute access: ``ntpath = LazyModule("ntpath")`` costs nothing on Linux
    until a Windows path is actually handled."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        module = self._module
        if module is None:
            module = self._module = __import__(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return "LazyModule(%r)" % self._name


def own_annotations(cls: type) -> dict:
    """The annotations ``cls`` itself declares (not its bases'), in order: its fields, for the records and named
    tuples. Up to Python 3.13, and on 3.14+ in a module with ``from __future__ import annotations``, they are in the
    class's ``__dict__``; otherwise Python 3.14+ makes them on first use (PEP 649/749), so they are asked of
    ``annotationlib``, as strings where a name is not defined yet."""
    own = cls.__dict__.get("__annotations__")
    if own is not None or sys.version_info < (3, 14):  # before 3.14: none in the class's __dict__ means none
        return own or {}
    from annotationlib import Format, get_annotations

    return get_annotations(cls, format=Format.FORWARDREF)
