"""A symbolic pickle machine: what a pickle *would* build, without building it.

:func:`walk` reads the opcodes of one pickle from bytes (a reader of its own, one pass) and keeps a real stack, a
real metastack for MARK and a real memo, so memo references (``BINGET`` of a memoized ``'cpu'`` or storage class)
and ``STACK_GLOBAL`` resolve to what they would be at load time, not to a guess from neighbouring opcodes. Nothing
is ever imported or called: a ``GLOBAL`` is a :class:`Global` (module and name as text), a ``REDUCE`` or ``NEWOBJ``
is a :class:`Call` that remembers its arguments and whatever ``SETITEM(S)``, ``APPEND(S)`` and ``BUILD`` did to it,
a ``BINPERSID`` is a :class:`Persid`.

Every input is bounded (:class:`Limits`): opcode count, memo size, stack depth, string length (a longer string is a
:class:`Blob`, never decoded). ``walk`` never raises for any bytes: a truncated or broken pickle ends the walk with
a note, and what was built so far is kept.
"""

from __future__ import annotations

import struct
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Optional, Tuple


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

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module = module
        self.name = name

    @property
    def full(self) -> str:
        return "%s.%s" % (self.module, self.name)

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
        return getattr(self.func, "full", "<%s>" % type(self.func).__name__)

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
        self.end = 0  # offset just after STOP (or where the walk ended)
        self.protocol: Optional[int] = None
        self.opcodes: Dict[int, int] = {}  # opcode byte -> count
        self.globals: Dict[str, int] = {}  # "module.name" -> how often it is pushed
        self.computed_globals = 0  # STACK_GLOBALs with a non-string module or name
        self.persids: List[Persid] = []
        self.setitem_targets: Dict[str, int] = {}  # what SETITEM(S) was applied to, by type (weights_only checks it)
        self.build_targets: Dict[str, int] = {}
        self.notes: List[str] = []
        self.op_count = 0


MARK = object()
_REPORTED_OP_NAMES = {
    0x80: "PROTO", 0x95: "FRAME", 0x8C: "SHORT_BINUNICODE", 0x94: "MEMOIZE", 0x93: "STACK_GLOBAL",
}


class _Stop(Exception):
    pass



# Length-prefixed strings and bytes: opcode -> (bytes of the length field, its struct format (None: one byte), kind,
# codec). One table, so that every such opcode skips its length field and reads its kind the same way.
_COUNTED = {
    0x8C: (1, None, "str", "utf-8"),  # SHORT_BINUNICODE
    0x8D: (8, "<Q", "str", "utf-8"),  # BINUNICODE8
    0x55: (1, None, "short", "bytes"),  # U SHORT_BINSTRING
    0x54: (4, "<i", "short", "bytes"),  # T BINSTRING
    0x43: (1, None, "bytes", "bytes"),  # C SHORT_BINBYTES
    0x42: (4, "<I", "bytes", "bytes"),  # B BINBYTES
    0x8E: (8, "<Q", "bytes", "bytes"),  # BINBYTES8
    0x96: (8, "<Q", "bytes", "bytes"),  # BYTEARRAY8
}

def _decode_line_str(raw: bytes) -> Any:
    """The argument of protocol-0 ``STRING`` (a Python string literal), kept as bytes, never ``eval``-ed."""
    if len(raw) >= 2 and raw[:1] == raw[-1:] and raw[:1] in (b"'", b'"'):
        raw = raw[1:-1]
    try:
        import codecs

        return ShortBytes(codecs.escape_decode(raw)[0])
    except Exception:  # noqa: BLE001 - a malformed literal is just bytes
        return ShortBytes(raw)


def walk(data: bytes, start: int = 0, limits: Optional[Limits] = None) -> WalkResult:
    """Walk the pickle that starts at ``data[start]``; never raises for any ``data``."""
    res = WalkResult()
    counts = [0] * 256
    try:
        _walk(data if isinstance(data, bytes) else memoryview(data), start, limits or Limits(), res, counts)
    except _Stop:
        pass
    except RecursionError:  # pragma: no cover - nothing here recurses on input
        res.notes.append("the pickle is nested too deeply to follow")
    res.opcodes = {op: c for op, c in enumerate(counts) if c}
    return res


def _walk(buf, pos: int, lim: Limits, res: WalkResult, counts: List[int]) -> None:  # noqa: C901 - one opcode dispatch
    n = len(buf)
    stack: List[Any] = []
    metastack: List[List[Any]] = []
    memo: Dict[int, Any] = {}
    globals_ = res.globals
    unpack_from = struct.unpack_from
    max_string = lim.max_string
    ops = 0

    def fail(message: str) -> None:
        res.notes.append(message)
        res.end = pos
        raise _Stop

    def need(count: int) -> None:
        if pos + count > n:
            fail("the pickle is cut short at byte %d" % pos)

    def pop_mark() -> List[Any]:
        nonlocal stack
        if not metastack:
            fail("a pickle opcode at byte %d needs a MARK that is not there" % (pos - 1))
        items = stack
        stack = metastack.pop()
        return items

    def pop() -> Any:
        if not stack:
            fail("the pickle pops an empty stack at byte %d" % (pos - 1))
        return stack.pop()

    def text(length: int, kind: str, codec: str) -> Any:
        nonlocal pos
        if length < 0 or pos + length > n:
            fail("a string at byte %d runs past the end of the pickle" % pos)
        start = pos
        pos += length
        if kind == "bytes" or length > max_string:
            return Blob(kind if kind == "bytes" else "str", length)
        raw = bytes(buf[start:pos])
        if codec == "utf-8":
            return raw.decode("utf-8", "surrogatepass") if _valid_utf8(raw) else raw.decode("utf-8", "replace")
        return ShortBytes(raw)

    def line() -> bytes:
        nonlocal pos
        end = pos
        limit = min(n, pos + max_string + 2)
        while end < limit and buf[end] != 10:
            end += 1
        if end >= limit:
            fail("an unterminated text argument at byte %d" % pos)
        raw = bytes(buf[pos:end])
        pos = end + 1
        return raw

    def push_global(module: Any, name: Any) -> None:
        if isinstance(module, str) and isinstance(name, str):
            g = Global(module, name)
            globals_[g.full] = globals_.get(g.full, 0) + 1
            stack.append(g)
        else:
            res.computed_globals += 1
            globals_[Unresolved.full] = globals_.get(Unresolved.full, 0) + 1
            stack.append(Unresolved(module, name))

    def put(index: int) -> None:
        if not stack:
            fail("the pickle memoizes from an empty stack at byte %d" % pos)
        if index not in memo and len(memo) >= lim.max_memo:
            fail("the pickle's memo passes %d entries" % lim.max_memo)
        memo[index] = stack[-1]

    def get(index: int) -> None:
        if index not in memo:
            fail("the pickle reads memo entry %d that was never stored (byte %d)" % (index, pos))
        stack.append(memo[index])

    def setitems(target: Any, pairs: List[Tuple[Any, Any]]) -> None:
        kind = target.name if isinstance(target, Call) else type(target).__name__
        res.setitem_targets[kind] = res.setitem_targets.get(kind, 0) + 1
        if isinstance(target, SDict) or (isinstance(target, Call) and target.pairs):
            target.pairs.extend(pairs)
        elif isinstance(target, Call):
            target.pairs = list(pairs)

    def appends(target: Any, items: List[Any]) -> None:
        if isinstance(target, SList) or (isinstance(target, Call) and target.items):
            target.items.extend(items)
        elif isinstance(target, Call):
            target.items = list(items)
        elif isinstance(target, SSet):
            target.items.extend(items)

    max_stack = lim.max_stack
    max_memo = lim.max_memo
    max_ops = lim.max_ops
    missing = MARK
    short = min(256, max_string)
    # The hot opcodes of a torch pickle come first and are inlined; the bounds on the stack, the memo and the opcode
    # count are checked every 1024 opcodes (an overshoot of at most 1024 entries), MARK nesting at every MARK.
    while True:
        if pos >= n:
            fail("the pickle ends without STOP at byte %d" % pos)
        op = buf[pos]
        pos += 1
        counts[op] += 1
        ops += 1
        if not ops & 1023:
            if ops > max_ops:
                fail("the pickle has more than %d opcodes" % max_ops)
            if len(stack) > max_stack:
                fail("the pickle's stack passes %d entries" % max_stack)
            if len(memo) > max_memo:
                fail("the pickle's memo passes %d entries" % max_memo)
        if op == 0x72:  # r LONG_BINPUT
            if pos + 4 > n:
                need(4)
            if not stack:
                put(0)
            memo[unpack_from("<I", buf, pos)[0]] = stack[-1]
            pos += 4
        elif op == 0x68:  # h BINGET
            if pos >= n:
                need(1)
            value = memo.get(buf[pos], missing)
            if value is missing:
                get(buf[pos])
            stack.append(value)
            pos += 1
        elif op == 0x4B:  # K BININT1
            if pos >= n:
                need(1)
            stack.append(buf[pos])
            pos += 1
        elif op == 0x58:  # X BINUNICODE
            if pos + 4 > n:
                need(4)
            length = unpack_from("<I", buf, pos)[0]
            pos += 4
            if length <= short and pos + length <= n:  # a key, 'storage', a location: decoded at once
                raw = bytes(buf[pos:pos + length])
                pos += length
                try:
                    stack.append(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    stack.append(raw.decode("utf-8", "replace"))
            else:
                stack.append(text(length, "str", "utf-8"))
        elif op == 0x28:  # ( MARK
            if len(metastack) >= max_stack:
                fail("the pickle's stack passes %d entries" % max_stack)
            metastack.append(stack)
            stack = []
        elif op == 0x52:  # R REDUCE
            if len(stack) < 2:
                pop()
                pop()
            args = stack.pop()
            stack[-1] = Call(stack[-1], args)
        elif op == 0x74:  # t TUPLE
            items = pop_mark()
            stack.append(tuple(items))
        elif op == 0x71:  # q BINPUT
            if pos >= n:
                need(1)
            if not stack:
                put(0)
            memo[buf[pos]] = stack[-1]
            pos += 1
        elif op == 0x6A:  # j LONG_BINGET
            need(4)
            get(unpack_from("<I", buf, pos)[0])
            pos += 4
        elif op == 0x73:  # s SETITEM
            value = pop()
            key = pop()
            target = stack[-1] if stack else fail("SETITEM on an empty stack")
            setitems(target, [(key, value)])
        elif op == 0x7D:  # } EMPTY_DICT
            stack.append(SDict())
        elif op == 0x89:  # NEWFALSE
            stack.append(False)
        elif op == 0x51:  # Q BINPERSID
            p = Persid(pop())
            res.persids.append(p)
            stack.append(p)
        elif op == 0x85:  # TUPLE1
            stack.append((pop(),))
        elif op == 0x86:  # TUPLE2
            b = pop()
            a = pop()
            stack.append((a, b))
        elif op == 0x87:  # TUPLE3
            c = pop()
            b = pop()
            a = pop()
            stack.append((a, b, c))
        elif op == 0x29:  # ) EMPTY_TUPLE
            stack.append(())
        elif op == 0x63:  # c GLOBAL
            module = line().decode("utf-8", "replace")
            name = line().decode("utf-8", "replace")
            push_global(module, name)
        elif op == 0x4D:  # M BININT2
            need(2)
            stack.append(unpack_from("<H", buf, pos)[0])
            pos += 2
        elif op == 0x4A:  # J BININT
            need(4)
            stack.append(unpack_from("<i", buf, pos)[0])
            pos += 4
        elif op == 0x88:  # NEWTRUE
            stack.append(True)
        elif op == 0x4E:  # N NONE
            stack.append(None)
        elif op == 0x75:  # u SETITEMS
            items = pop_mark()
            target = stack[-1] if stack else fail("SETITEMS on an empty stack")
            setitems(target, [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)])
        elif op == 0x5D:  # ] EMPTY_LIST
            stack.append(SList())
        elif op == 0x65:  # e APPENDS
            items = pop_mark()
            target = stack[-1] if stack else fail("APPENDS on an empty stack")
            appends(target, items)
        elif op == 0x61:  # a APPEND
            value = pop()
            target = stack[-1] if stack else fail("APPEND on an empty stack")
            appends(target, [value])
        elif op == 0x62:  # b BUILD
            state = pop()
            target = stack[-1] if stack else fail("BUILD on an empty stack")
            res.build_targets[type(target).__name__] = res.build_targets.get(type(target).__name__, 0) + 1
            if isinstance(target, Call):
                if target.states:
                    target.states.append(state)
                else:
                    target.states = [state]
        elif op == 0x47:  # G BINFLOAT
            need(8)
            stack.append(unpack_from(">d", buf, pos)[0])
            pos += 8
        elif op == 0x8A:  # LONG1
            need(1)
            length = buf[pos]
            pos += 1
            need(length)
            stack.append(int.from_bytes(bytes(buf[pos:pos + length]), "little", signed=True))
            pos += length
        elif op == 0x8B:  # LONG4
            need(4)
            length = unpack_from("<i", buf, pos)[0]
            pos += 4
            if length < 0 or length > 4096:
                fail("a LONG4 of %d bytes at byte %d" % (length, pos))
            need(length)
            stack.append(int.from_bytes(bytes(buf[pos:pos + length]), "little", signed=True))
            pos += length
        elif op == 0x80:  # PROTO
            need(1)
            if res.protocol is None:
                res.protocol = buf[pos]
            pos += 1
        elif op == 0x2E:  # . STOP
            res.root = stack.pop() if stack else None
            res.complete = True
            res.end = pos
            res.op_count = ops
            return
        elif op == 0x81:  # NEWOBJ
            args = pop()
            cls = pop()
            stack.append(Call(cls, args, "newobj"))
        elif op == 0x92:  # NEWOBJ_EX
            kwargs = pop()
            args = pop()
            cls = pop()
            stack.append(Call(cls, (args, kwargs), "newobj_ex"))
        elif op in _COUNTED:  # length-prefixed strings and bytes
            width, fmt, kind, codec = _COUNTED[op]
            need(width)
            length = buf[pos] if fmt is None else unpack_from(fmt, buf, pos)[0]
            pos += width
            stack.append(text(length, kind, codec))
        elif op == 0x94:  # MEMOIZE
            put(len(memo))
        elif op == 0x93:  # STACK_GLOBAL
            name = pop()
            module = pop()
            push_global(module, name)
        elif op == 0x95:  # FRAME
            need(8)
            pos += 8
        elif op == 0x8F:  # EMPTY_SET
            stack.append(SSet())
        elif op == 0x90:  # ADDITEMS
            items = pop_mark()
            target = stack[-1] if stack else fail("ADDITEMS on an empty stack")
            appends(target, items)
        elif op == 0x91:  # FROZENSET
            items = pop_mark()  # before naming stack: pop_mark rebinds it
            stack.append(SSet(items, frozen=True))
        elif op == 0x30:  # 0 POP
            if stack:
                stack.pop()
            else:
                pop_mark()
        elif op == 0x31:  # 1 POP_MARK
            pop_mark()
        elif op == 0x32:  # 2 DUP
            stack.append(stack[-1] if stack else fail("DUP on an empty stack"))
        elif op == 0x64:  # d DICT
            items = pop_mark()
            stack.append(SDict([(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]))
        elif op == 0x6C:  # l LIST
            items = pop_mark()
            stack.append(SList(items))
        elif op == 0x70:  # p PUT
            raw = line()
            put(int(raw) if raw.isdigit() and len(raw) < 12 else fail("a bad PUT argument"))
        elif op == 0x67:  # g GET
            raw = line()
            get(int(raw) if raw.isdigit() and len(raw) < 12 else fail("a bad GET argument"))
        elif op == 0x49:  # I INT
            raw = line()
            if raw == b"01":
                stack.append(True)
            elif raw == b"00":
                stack.append(False)
            else:
                stack.append(_int(raw) if len(raw) < 4096 else fail("an INT of %d digits" % len(raw)))
        elif op == 0x4C:  # L LONG
            raw = line().rstrip(b"L")
            stack.append(_int(raw) if len(raw) < 4096 else fail("a LONG of %d digits" % len(raw)))
        elif op == 0x46:  # F FLOAT
            raw = line()
            try:
                stack.append(float(raw))
            except ValueError:
                fail("a bad FLOAT argument at byte %d" % pos)
        elif op == 0x53:  # S STRING
            stack.append(_decode_line_str(line()))
        elif op == 0x56:  # V UNICODE
            raw = line()
            stack.append(raw.decode("raw-unicode-escape", "replace"))
        elif op == 0x50:  # P PERSID
            p = Persid(line().decode("ascii", "replace"))
            res.persids.append(p)
            stack.append(p)
        elif op == 0x69:  # i INST
            module = line().decode("utf-8", "replace")
            name = line().decode("utf-8", "replace")
            push_global(module, name)
            cls = stack.pop()
            items = pop_mark()
            stack.append(Call(cls, tuple(items), "inst"))
        elif op == 0x6F:  # o OBJ
            items = pop_mark()
            if not items:
                fail("OBJ without a class at byte %d" % pos)
            stack.append(Call(items[0], tuple(items[1:]), "obj"))
        elif op in (0x82, 0x83, 0x84):  # EXT1, EXT2, EXT4
            width = {0x82: 1, 0x83: 2, 0x84: 4}[op]
            need(width)
            code = int.from_bytes(bytes(buf[pos:pos + width]), "little")
            pos += width
            push_global("<extension registry>", str(code))
        elif op == 0x97:  # NEXT_BUFFER
            stack.append(Blob("buffer", 0))
        elif op == 0x98:  # READONLY_BUFFER
            pass
        else:
            fail("byte %d is 0x%02x, not a pickle opcode" % (pos - 1, op))


def _int(raw: bytes) -> int:
    try:
        return int(raw)
    except ValueError:
        return 0


def _valid_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


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
