"""The values a symbolic pickle walk builds (:mod:`cudaenv.checkpoint.pickle_vm`), its bounds, the arguments of its
opcodes as pickle's C unpickler reads them, and the calls of allowed globals that fail when torch makes them.

Nothing here is the file's: a ``GLOBAL`` is a :class:`Global` (module and name as text, never imported), a
``REDUCE`` or ``NEWOBJ`` is a :class:`Call` that remembers its arguments and whatever ``SETITEM(S)``, ``APPEND(S)``
and ``BUILD`` did to it (never performed), a ``BINPERSID`` is a :class:`Persid`, dicts, lists and sets are
:class:`SDict`, :class:`SList`, :class:`SSet` (their items in order), long strings and every bytes payload a
:class:`Blob` (a length, never the bytes).

The last two are here because they are always read together on `checkpoint inspect`'s path (fewer modules to import
at start-up, issue 26):

* the calls of allowed globals that fail when torch makes them (issue 26): the weights_only verdict is no when one of
  them raises, whatever the globals are (an OrderedDict of an int, a torch.device of a string that is no device, a
  rebuild function with too few arguments). Checked against torch 2.13
  (tests/checkpoint/test_checkpoint_verdict_torch.py). Only what is sure to raise is named; what depends on the
  machine (``torch.device(3)``: an accelerator must be there) is not.
* the arguments of pickle opcodes as pickle's C unpickler reads them (for :mod:`cudaenv.checkpoint.careful`): the
  length-prefixed strings and bytes, the text arguments of protocol 0 (INT, LONG, PUT, GET, STRING).
"""

from __future__ import annotations

from cudaenv.core.i18n import M

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


# ------------------------------------------------------------------ calls of allowed globals that fail (issue 26)

# the device types torch 2.13's torch.device accepts (its error message lists them: c10/core/Device.cpp)
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_ITERABLE_ONE = ("collections.OrderedDict", "builtins.set", "collections.Counter", "torch.Size")
# rebuild function -> (fewest, most) arguments (T:_utils.py: their signatures)
_ARITY = {"torch._utils._rebuild_tensor_v2": (6, 7), "torch._utils._rebuild_tensor_v3": (7, 8),
          "torch._utils._rebuild_parameter": (3, 3), "torch._utils._rebuild_parameter_with_state": (4, 4)}
# the legacy storage classes: torch's weights_only unpickler hands a StorageType for them, which is not callable
# (T:_weights_only_unpickler.py:202-209, T:serialization.py:1964)
_STORAGE_CLASSES = tuple("torch.%sStorage" % t for t in (
    "BFloat16", "Bool", "Byte", "Char", "ComplexDouble", "ComplexFloat", "Double", "Float", "Half", "Int", "Long",
    "QInt32", "QInt8", "QUInt2x4", "QUInt4x2", "QUInt8", "Short")) + tuple("torch.cuda.%sStorage" % t for t in (
    "BFloat16", "Bool", "Byte", "Char", "ComplexDouble", "ComplexFloat", "Double", "Float", "Half", "Int", "Long",
    "Short"))
# the names protocol 2 pickles spell (torch reads them through pickle's IMPORT_MAPPING: __builtin__ -> builtins)
_ALIASES = {"__builtin__.set": "builtins.set"}
# the allowed globals that are classes torch's NEWOBJ can make (cls.__new__(cls, *args), T:_weights_only_unpickler.py:384-400);
# NEWOBJ of any other (a function, a dtype, a StorageType) raises
NEWOBJ_OK = frozenset(("collections.OrderedDict", "builtins.set", "__builtin__.set", "collections.Counter", "torch.Size",
                       "torch.device", "builtins.complex", "builtins.bytearray", "torch.nn.parameter.Parameter",
                       "torch.Tensor", "torch.storage.UntypedStorage"))
NO_EMPTY = frozenset(tuple(_ARITY) + _STORAGE_CLASSES)  # recorded even with no arguments: they raise on ()
CHECKED = frozenset(_ITERABLE_ONE + ("torch.device",) + tuple(_ARITY) + _STORAGE_CLASSES + tuple(_ALIASES))  # the calls the walk records


def _not_iterable(value: Any) -> bool:
    return value is None or type(value) in (int, float, bool) or (type(value) is Blob and value.kind == "int")


def _bad_device(text: str) -> bool:
    kind, _, index = text.partition(":")
    if kind not in DEVICE_TYPES:
        return True
    if _ or index:
        return not index.isdigit() or not index.isascii() or (len(index) > 1 and index[0] == "0") or len(index) > 9
    return False


def problem(name: str, args: Any, dtypes: Any = ()) -> Optional[str]:
    """Why torch's call of the allowed global ``name`` with ``args`` raises; None when it may not. ``dtypes``: the
    dtype names (``float32``) a ``_rebuild_tensor_v3`` may name."""
    if name.startswith("NEWOBJ "):
        return M("NEWOBJ of %s, which is not a class torch makes an instance of", name[7:])
    name = _ALIASES.get(name, name)
    if name in _STORAGE_CLASSES:
        return M("a storage class is a StorageType under weights_only, which cannot be called")
    if type(args) is not tuple:
        return M("its arguments are not a tuple") if _not_iterable(args) else None
    if name in _ITERABLE_ONE:
        if len(args) > 1:
            return M("it takes at most 1 argument, it gets %d", len(args))
        if args and _not_iterable(args[0]):
            return M("its argument is a %s, which is not iterable", type(args[0]).__name__)
        if args and name == "collections.OrderedDict" and not _pairs(args[0]):
            return M("its argument is neither a dict nor a sequence of pairs cudaenv can read")
        if args and name in ("builtins.set", "collections.Counter") and not _hashables(args[0]):
            return M("its argument holds items cudaenv cannot be sure are hashable")
        if name == "torch.Size" and args and type(args[0]) in (str, SDict, SSet):
            return M("its argument holds no sizes")
        return None
    if name == "torch.device":
        if not args or len(args) > 2:
            return M("it takes 1 or 2 arguments, it gets %d", len(args))
        first = args[0]
        if first is None or type(first) in (float, bool, tuple, SList, SDict):
            return M("its first argument is a %s, not a device string or index", type(first).__name__)
        if type(first) is str and _bad_device(first):
            return M("%r is not a device string torch reads", first[:40])
        return None
    span = _ARITY.get(name)
    if span is not None and not span[0] <= len(args) <= span[1]:
        if span[0] == span[1]:
            return M("it takes %d arguments, it gets %d", span[0], len(args))
        return M("it takes %d or %d arguments, it gets %d", span[0], span[1], len(args))
    if name in ("torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3"):
        # set_(storage, offset, size, stride): an int and two tuples of ints, or it raises 'invalid combination'
        offset, size, stride = args[1], args[2], args[3]
        if type(offset) not in (int, bool) or not _ints(size) or not _ints(stride):
            return M("its storage offset, size or stride is not an int and tuples of ints")
        if len(size) != len(stride):  # set_: 'unequal size length (5) and stride length (4)'
            return M("its size has %d dimensions and its stride %d", len(size), len(stride))
        if type(args[0]) is not Persid:  # _rebuild_tensor reads storage.dtype and hands it to set_
            return M("its storage argument is a %s, not a storage", type(args[0]).__name__)
        if name.endswith("_v3") and not (type(args[6]) is Global and args[6].module == "torch"
                                         and args[6].name in dtypes):  # torch.empty(dtype=...)
            return M("its dtype argument is not a torch dtype")
        if type(args[4]) is not bool:  # tensor.requires_grad = ...: 'requires_grad must be a bool'
            return M("its requires_grad is a %s, not a bool", type(args[4]).__name__)
    return None


def _ints(value: Any) -> bool:
    return type(value) is tuple and all(type(v) in (int, bool) for v in value)


# the storage classes torch 2.13's weights_only unpickler hands a persistent id (T:_weights_only_unpickler.py:202-209:
# a StorageType for the legacy classes, whose .dtype the persistent_load reads; UntypedStorage itself, which only the
# zip reader takes: T:serialization.py:2176, while the legacy one reads its .dtype and fails, :1818)
_STORAGE_MODULES = ("torch", "torch.cuda")
UNTYPED = "torch.storage.UntypedStorage"


def persid_problem(pid: Any, legacy: bool, storage_names: Any) -> Optional[str]:
    """Why torch's ``persistent_load`` raises on the storage persistent id ``pid`` (``('storage', type, key, location,
    numel)``, legacy files one more: ``view_metadata``), or where cudaenv cannot be sure it does not; None when the
    id has the one shape torch reads (T:serialization.py:1802-1865 legacy, 2163-2195 zip). ``storage_names``: the
    legacy storage class names (``FloatStorage``)."""
    want = 6 if legacy else 5
    if type(pid) is not tuple or len(pid) != want:
        if type(pid) is not tuple:
            return M("a storage persistent id of not a tuple: items, where torch unpacks %d", want)
        return M("a storage persistent id of %d items, where torch unpacks %d", len(pid), want)
    kind, key, location, numel = pid[1], pid[2], pid[3], pid[4]
    if type(kind) is not Global or not (
            (kind.module in _STORAGE_MODULES and kind.name in storage_names) or (not legacy and kind.full == UNTYPED)):
        if type(kind) is Global:
            return M("its storage type is %s, not a storage class torch reads a dtype from", kind.full)
        return M("its storage type is a %s, not a storage class torch reads a dtype from", type(kind).__name__)
    if type(key) not in (str, int):
        return M("its storage key is a %s (torch looks it up in a dict and names a record with it)", type(key).__name__)
    if type(location) is not str:
        return M("its location is a %s, not a device string", type(location).__name__)
    if type(numel) is not int:
        return M("its element count is a %s, not an int", type(numel).__name__)
    if legacy:
        view = pid[5]
        if view is not None and not (type(view) is tuple and len(view) == 3 and type(view[0]) in (str, int)
                                     and type(view[1]) is int and type(view[2]) is int):
            return M("its view (key, offset, size) is not a key and two ints")
    return None


_HASHABLE = (str, int, float, bool, type(None), bytes)


def _items(value: Any) -> Any:
    """The items of a tuple or a list the pickle built; None for anything else."""
    if type(value) is tuple:
        return value
    if type(value) is SList:
        return value.items
    return None


def _pairs(value: Any) -> bool:
    """A dict, an OrderedDict, or a tuple or list of 2-tuples: what ``OrderedDict(value)`` surely reads."""
    if type(value) is SDict or (type(value) is Call and getattr(value.func, "full", "") == "collections.OrderedDict"):
        return True
    items = _items(value)
    return items is not None and all(type(i) is tuple and len(i) == 2 and _hashable(i[0]) for i in items)


def _hashable(value: Any) -> bool:
    if type(value) is tuple:
        return all(_hashable(v) for v in value)
    return type(value) in _HASHABLE


def _hashables(value: Any) -> bool:
    """A tuple or list of plain hashable items (or a str): what ``set(value)`` surely reads."""
    if type(value) is str:
        return True
    items = _items(value)
    return items is not None and all(_hashable(i) for i in items)


# ------------------------------------------------------------------ opcode arguments, as pickle's C unpickler reads them

# Length-prefixed strings and bytes: opcode -> (bytes of the length field, its struct format (None: one byte), kind,
# codec). One table, so that every such opcode skips its length field and reads its kind the same way.
COUNTED = {
    0x58: (4, "<I", "str", "utf-8"),  # X BINUNICODE
    0x8C: (1, None, "str", "utf-8"),  # SHORT_BINUNICODE
    0x8D: (8, "<Q", "str", "utf-8"),  # BINUNICODE8
    0x55: (1, None, "short", "bytes"),  # U SHORT_BINSTRING
    0x54: (4, "<i", "short", "bytes"),  # T BINSTRING
    0x43: (1, None, "bytes", "bytes"),  # C SHORT_BINBYTES
    0x42: (4, "<I", "bytes", "bytes"),  # B BINBYTES
    0x8E: (8, "<Q", "bytes", "bytes"),  # BINBYTES8
    0x96: (8, "<Q", "bytes", "bytes"),  # BYTEARRAY8
}

_INTS = {0x4B: (1, "<B"), 0x4D: (2, "<H"), 0x4A: (4, "<i")}  # BININT1, BININT2, BININT: width, struct format
_CONSTANTS = {0x29: (), 0x89: False, 0x88: True, 0x4E: None}  # EMPTY_TUPLE, NEWFALSE, NEWTRUE, NONE


def _decode_line_str(raw: bytes) -> Any:
    """The argument of protocol-0 ``STRING`` (a Python string literal), kept as bytes, never ``eval``-ed."""
    if len(raw) >= 2 and raw[:1] == raw[-1:] and raw[:1] in (b"'", b'"'):
        raw = raw[1:-1]
    try:
        import codecs

        return ShortBytes(codecs.escape_decode(raw)[0])
    except Exception:  # noqa: BLE001 - a malformed literal is just bytes
        return ShortBytes(raw)


UNSURE = "is one cudaenv cannot be sure how pickle reads"
_MAX_DIGITS = 4300  # CPython's default int digit limit (sys.int_info.default_max_str_digits), settable per process


def c_int(raw: bytes, base: int, strtol: bool = False) -> Tuple[Any, str]:
    """The integer pickle's C unpickler reads from a text argument (INT and LONG: ``strtol`` then
    ``PyLong_FromString`` with base 0; PUT and GET: ``PyLong_FromString`` with base 10), as ``(value, "")``; ``(None,
    why)`` when pickle raises there, or ``(None, UNSURE)`` where it depends on the interpreter (the digit limit, C's
    octal ``010``). The line is a C string: it ends at a NUL byte."""
    text = raw.split(b"\0", 1)[0]
    if strtol and not text and raw:  # INT: strtol of an empty C string ends at its NUL, which pickle accepts: 0
        return 0, ""
    try:
        return int(text, base), ""
    except ValueError:
        pass
    body = text.strip().lstrip(b"+-").replace(b"_", b"")
    if body.isdigit() and len(body) > _MAX_DIGITS - 100:  # over the digit limit here, maybe not in the loading process
        return None, UNSURE
    if base == 0 and body.isdigit():  # '010': strtol reads it as octal 8, int(x, 0) refuses it
        return None, UNSURE
    return None, "is not a number: pickle stops there"
