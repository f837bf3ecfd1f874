"""The values a symbolic pickle walk builds (:mod:`cudaenv.checkpoint.pickle_vm`), and its bounds.

Nothing here is the file's: a ``GLOBAL`` is a :class:`Global` (module and name as text, never imported), a
``REDUCE`` or ``NEWOBJ`` is a :class:`Call` that remembers its arguments and whatever ``SETITEM(S)``, ``APPEND(S)``
and ``BUILD`` did to it (never performed), a ``BINPERSID`` is a :class:`Persid`, dicts, lists and sets are
:class:`SDict`, :class:`SList`, :class:`SSet` (their items in order), long strings and every bytes payload a
:class:`Blob` (a length, never the bytes).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Optional, Set, Tuple


class Limits:
    """The bounds of one walk."""

    def __init__(self, max_ops: int = 20_000_000, max_memo: int = 4_000_000, max_stack: int = 1_000_000,
                 max_string: int = 1 << 20):
        self.max_ops = max_ops
        self.max_memo = max_memo
        self.max_stack = max_stack
        self.max_string = max_string


class Global:
    """``module.name`` as the pickle spells it (``GLOBAL``, ``INST`` or a resolved ``STACK_GLOBAL``)."""

    __slots__ = ("module", "name", "full")

    def __init__(self, module: str, name: str):
        self.module = module
        self.name = name
        self.full = "%s.%s" % (module, name)  # read for every call of it (a rebuild function: once per tensor)

    def __repr__(self):
        return "Global(%s)" % self.full


class Unresolved:
    """A ``STACK_GLOBAL`` whose module or name is not a plain string on the stack (a computed name)."""

    __slots__ = ("module", "name")

    def __init__(self, module: Any, name: Any):
        self.module = module
        self.name = name

    full = "<computed STACK_GLOBAL>"


_NONE: Tuple[()] = ()


class Call:
    """``func(*args)`` (REDUCE), ``cls.__new__(cls, *args)`` (NEWOBJ) or ``INST``/``OBJ``, never performed."""

    __slots__ = ("func", "args", "kind", "pairs", "items", "states", "__weakref__")

    def __init__(self, func: Any, args: Any, kind: str = "reduce"):
        self.func = func
        self.args = args
        self.kind = kind  # reduce | newobj | newobj_ex | inst | obj
        # what SETITEM(S), APPEND(S) and BUILD did to the result, in order: a list once there is one (most calls have
        # none, and a 20,000-tensor state_dict makes 40,000 calls)
        self.pairs: List[Tuple[Any, Any]] = _NONE  # type: ignore[assignment]
        self.items: List[Any] = _NONE  # type: ignore[assignment]
        self.states: List[Any] = _NONE  # type: ignore[assignment]

    @property
    def name(self) -> str:
        func = self.func
        if type(func) is Global:
            return func.full
        return getattr(func, "full", "<%s>" % type(func).__name__)

    def __repr__(self):
        return "Call(%s)" % self.name


class Persid:
    """A persistent id (``BINPERSID`` / ``PERSID``): for a torch storage, the tuple ``('storage', type, key, location,
    numel[, view_metadata])``."""

    __slots__ = ("pid",)

    def __init__(self, pid: Any):
        self.pid = pid


class SDict:
    """A dict the pickle built (``EMPTY_DICT``/``DICT`` plus ``SETITEM(S)``): its pairs in order (a repeated key is
    kept twice; the later one wins, as in a real dict)."""

    __slots__ = ("pairs",)

    def __init__(self, pairs=None):
        self.pairs: List[Tuple[Any, Any]] = pairs if pairs is not None else []


class SList:
    """A list (``EMPTY_LIST``/``LIST`` plus ``APPEND(S)``)."""

    __slots__ = ("items",)

    def __init__(self, items=None):
        self.items: List[Any] = items if items is not None else []


class SSet:
    """A set or frozenset (protocol 4 ``EMPTY_SET``/``ADDITEMS``/``FROZENSET``)."""

    __slots__ = ("items", "frozen")

    def __init__(self, items=None, frozen=False):
        self.items: List[Any] = items if items is not None else []
        self.frozen = frozen


class Blob:
    """Bytes or a string too long to keep (or bytes at all: tensor-sized payloads are never materialized)."""

    __slots__ = ("kind", "length")

    def __init__(self, kind: str, length: int):
        self.kind = kind  # bytes | str | bytearray | buffer
        self.length = length

    def __repr__(self):
        return "Blob(%s, %d)" % (self.kind, self.length)


class ShortBytes(bytes):
    """A small ``SHORT_BINSTRING``/``BINSTRING``/``STRING`` value (kept as bytes; re-emitted as it was)."""


class WalkResult:
    """What one pickle would build, and how it is made."""

    def __init__(self):
        self.root: Any = None
        self.complete = False  # reached STOP
        # the walk ended where pickle itself raises (a byte that is no opcode, the end of the bytes, an empty stack,
        # a memo entry never stored, ...): nothing after ``end`` runs. False for a walk that stopped for a reason of
        # its own (a bound, an argument it does not read): what follows is unknown, the verdict is inconclusive
        self.fails = False
        self.ran_out = False  # the walk ended because the bytes it was given end
        self.made_globals: Dict[Tuple[str, str], Global] = {}  # (module, name) -> its one Global
        self.dotted: Set[str] = set()  # full names of globals whose name part has a dot (an attribute chain)
        self.end = 0  # offset just after STOP (or where the walk ended)
        self.protocol: Optional[int] = None
        self.opcodes: Dict[int, int] = {}  # opcode byte -> count
        self.globals: Dict[str, int] = {}  # "module.name" -> how often it is pushed
        self.computed_globals = 0  # STACK_GLOBALs with a non-string module or name
        self.persids: List[Persid] = []
        # what SETITEM(S), BUILD and APPEND(S) were applied to, and the callables of REDUCE and NEWOBJ that are not a
        # global, by :func:`target_kind` (weights_only checks them): every SETITEM and BUILD target; only the APPEND
        # targets that are not a list (keyed ("APPEND" or "APPENDS", kind)) and only the callables that are not a
        # global (keyed ("REDUCE" or "NEWOBJ", kind)), which are what torch refuses
        self.setitem_targets: Dict[str, int] = {}
        self.build_targets: Dict[str, int] = {}
        self.build_filled: Dict[str, int] = {}
        self.checked_calls: List[Tuple[str, Any]] = []  # REDUCEs of an allowed global that may raise (calls.CHECKED)  # the BUILD targets whose state pickle's `if state:` finds true
        self.append_targets: Dict[Tuple[str, str], int] = {}
        self.call_targets: Dict[Tuple[str, str], int] = {}
        self.notes: List[str] = []
        self.op_count = 0
        self.data = b""  # the bytes walked, from ``start`` (for :func:`cudaenv.checkpoint.pickle_vm.first_seen`)
        self.start = 0


def state_filled(state: Any) -> bool:
    """Whether pickle's (and torch's) ``if state:`` of a BUILD state would be true, and, for a (state, slotstate)
    pair, whether either is: what BUILD then writes into the object. Unknown values count as filled."""
    if type(state) is tuple and len(state) == 2:
        return state_filled(state[0]) or state_filled(state[1])
    if type(state) is SDict:
        return bool(state.pairs)
    if type(state) is SList:
        return bool(state.items)
    if state is None or type(state) in (bool, int, float, str, tuple):
        return bool(state)
    return True


def target_kind(obj: Any) -> str:
    """What an opcode was applied to, as the walk records it: a call's callable (``collections.OrderedDict``; a name
    with a dot, or ``<...>`` for a callable that is not a global) or the node's type (``SDict``, ``SList``, ``tuple``,
    ``str``, ``Global``, ``Persid``, ...: no dot)."""
    return obj.name if type(obj) is Call else type(obj).__name__


OPCODE_NAMES = {
    0x28: "MARK", 0x2E: "STOP", 0x30: "POP", 0x31: "POP_MARK", 0x32: "DUP", 0x46: "FLOAT", 0x49: "INT",
    0x4A: "BININT", 0x4B: "BININT1", 0x4C: "LONG", 0x4D: "BININT2", 0x4E: "NONE", 0x50: "PERSID",
    0x51: "BINPERSID", 0x52: "REDUCE", 0x53: "STRING", 0x54: "BINSTRING", 0x55: "SHORT_BINSTRING",
    0x56: "UNICODE", 0x58: "BINUNICODE", 0x61: "APPEND", 0x62: "BUILD", 0x63: "GLOBAL", 0x64: "DICT",
    0x7D: "EMPTY_DICT", 0x65: "APPENDS", 0x67: "GET", 0x68: "BINGET", 0x69: "INST", 0x6A: "LONG_BINGET",
    0x6C: "LIST", 0x5D: "EMPTY_LIST", 0x6F: "OBJ", 0x70: "PUT", 0x71: "BINPUT", 0x72: "LONG_BINPUT",
    0x73: "SETITEM", 0x74: "TUPLE", 0x29: "EMPTY_TUPLE", 0x75: "SETITEMS", 0x47: "BINFLOAT", 0x80: "PROTO",
    0x81: "NEWOBJ", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4", 0x85: "TUPLE1", 0x86: "TUPLE2", 0x87: "TUPLE3",
    0x88: "NEWTRUE", 0x89: "NEWFALSE", 0x8A: "LONG1", 0x8B: "LONG4", 0x42: "BINBYTES", 0x43: "SHORT_BINBYTES",
    0x8C: "SHORT_BINUNICODE", 0x8D: "BINUNICODE8", 0x8E: "BINBYTES8", 0x8F: "EMPTY_SET", 0x90: "ADDITEMS",
    0x91: "FROZENSET", 0x92: "NEWOBJ_EX", 0x93: "STACK_GLOBAL", 0x94: "MEMOIZE", 0x95: "FRAME",
    0x96: "BYTEARRAY8", 0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
}
