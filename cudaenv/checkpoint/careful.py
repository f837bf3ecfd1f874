"""The careful interpreter of :mod:`cudaenv.checkpoint.pickle_vm`: every opcode, every check, every message.

The fast loop comes to :func:`run` for everything it does not do itself: a rare opcode, an opcode whose argument,
stack or memo entry is not what it expects (this code then names the problem, or does the rare case right), the
bounds checked every 1024 opcodes, STOP. It runs from the same byte on the same state (stack, metastack, memo), and
hands back at the next opcode the fast loop knows; a failure ends the walk with a note (:class:`Stop`).
"""

from __future__ import annotations

import struct

from cudaenv.checkpoint.nodes import (_CONSTANTS, _INTS, CHECKED, COUNTED, NEWOBJ_OK, NO_EMPTY, UNSURE, Blob, Call, Global, Persid,
                                      SDict, ShortBytes, SList, SSet, Unresolved, _decode_line_str, c_int, state_filled, target_kind)
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Tuple

    from cudaenv.checkpoint.nodes import Limits, WalkResult


class Stop(Exception):
    """The walk is over: STOP was reached (``res.complete``) or a note says why not."""


def run(buf: bytes, pos: int, stack: List[Any], metastack: List[List[Any]], memo: Dict[int, Any], ops: int,
        counts: List[int], lim: Limits, res: WalkResult, fast: bytes) -> Tuple[int, List[Any], int]:  # noqa: C901
    """Opcodes from ``pos`` (one at least) to the next that ``fast`` marks and is not a 1024th: ``(pos, stack, ops)``."""
    n = len(buf)
    globals_ = res.globals
    unpack_from = struct.unpack_from
    max_string = lim.max_string

    def fail(message: str, certain: bool = False, ran_out: bool = False) -> None:
        """End the walk with ``message``; ``certain``: pickle itself raises here (so nothing after this runs);
        ``ran_out``: because the bytes end there."""
        res.notes.append(message)
        res.end = pos
        res.fails = certain
        res.ran_out = ran_out
        raise Stop

    def need(count: int) -> None:
        if pos + count > n:
            fail(M("the pickle is cut short at byte %d", pos), True, True)

    def pop_mark() -> List[Any]:
        nonlocal stack
        if not metastack:
            fail(M("a pickle opcode at byte %d needs a MARK that is not there", pos - 1), True)
        items = stack
        stack = metastack.pop()
        return items

    def pop() -> Any:
        if not stack:
            fail(M("the pickle pops an empty stack at byte %d", pos - 1), True)
        return stack.pop()

    def text(length: int, kind: str, codec: str) -> Any:
        nonlocal pos
        if length < 0 or pos + length > n:
            fail(M("a string at byte %d runs past the end of the pickle", pos), True, True)
        start = pos
        pos += length
        if kind == "bytes" or length > max_string:
            return Blob(kind if kind == "bytes" else "str", length)
        raw = bytes(buf[start:pos])
        if codec == "utf-8":
            try:
                return raw.decode("utf-8", "surrogatepass")  # as pickle decodes it
            except UnicodeDecodeError as exc:  # pickle (so torch.load, either way) raises here: the walk ends too
                fail(M("the string at byte %d is not UTF-8 (%s): pickle, and so torch.load, stops there", start, exc.reason), True)
        return ShortBytes(raw)

    def line() -> bytes:
        """A text argument up to its newline, however long (pickle reads any length; the bytes are in memory)."""
        nonlocal pos
        end = buf.find(b"\n", pos)
        if end < 0:
            fail(M("an unterminated text argument at byte %d", pos), True, True)
        raw = bytes(buf[pos:end])
        pos = end + 1
        return raw

    made = res.made_globals  # one Global per name for the whole walk: a memoized 1 MiB string named 100,000 times
    # is joined once (a str hashes once and compares by identity first)

    def push_global(module: Any, name: Any) -> None:
        if isinstance(module, str) and isinstance(name, str):
            g = made.get((module, name))
            if g is None:
                g = made[(module, name)] = Global(module, name)
                if "." in name:  # protocol 4 resolves it as an attribute chain (torch + serialization.os.system)
                    res.dotted.add(g.full)
            globals_[g.full] = globals_.get(g.full, 0) + 1
            stack.append(g)
        else:
            res.computed_globals += 1
            globals_[Unresolved.full] = globals_.get(Unresolved.full, 0) + 1
            stack.append(Unresolved(module, name))

    def put(index: int) -> None:
        if not stack:
            fail(M("the pickle memoizes from an empty stack at byte %d", pos), True)
        if index not in memo and len(memo) >= lim.max_memo:
            fail(M("the pickle's memo passes %d entries", lim.max_memo))
        memo[index] = stack[-1]

    def get(index: int) -> None:
        if index not in memo:
            fail(M("the pickle reads memo entry %d that was never stored (byte %d)", index, pos), True)
        stack.append(memo[index])

    def count(table: Dict[Any, int], kind: Any) -> None:
        table[kind] = table.get(kind, 0) + 1

    def setitems(target: Any, pairs: List[Tuple[Any, Any]]) -> None:
        count(res.setitem_targets, target_kind(target))
        if isinstance(target, SDict) or (isinstance(target, Call) and target.pairs):
            target.pairs.extend(pairs)
        elif isinstance(target, Call):
            target.pairs = list(pairs)

    def appends(target: Any, items: List[Any], opname: str = "") -> None:
        if opname and type(target) is not SList:  # (the fast loop does the appends to a list, and records none)
            count(res.append_targets, (opname, target_kind(target)))
        if isinstance(target, SList) or (isinstance(target, Call) and target.items):
            target.items.extend(items)
        elif isinstance(target, Call):
            target.items = list(items)
        elif isinstance(target, SSet):
            target.items.extend(items)

    max_stack = lim.max_stack
    max_memo = lim.max_memo
    max_ops = lim.max_ops
    # The bounds on the stack, the memo and the opcode count are checked every 1024 opcodes (an overshoot of at most
    # 1024 entries), MARK nesting at every MARK.
    first = True
    while True:
        if not first and pos < n and fast[buf[pos]] and (ops & 1023) != 1023:
            return pos, stack, ops
        first = False
        if pos >= n:
            fail(M("the pickle ends without STOP at byte %d", pos), True, True)
        op = buf[pos]
        pos += 1
        counts[op] += 1
        ops += 1
        if not ops & 1023:
            if ops > max_ops:
                fail(M("the pickle has more than %d opcodes", max_ops))
            if len(stack) > max_stack:
                fail(M("the pickle's stack passes %d entries", max_stack))
            if len(memo) > max_memo:
                fail(M("the pickle's memo passes %d entries", max_memo))
        if op == 0x72 or op == 0x71:  # r LONG_BINPUT, q BINPUT (the memo's bound: every 1024 opcodes)
            width = 4 if op == 0x72 else 1
            need(width)
            if not stack:
                put(0)
            memo[unpack_from("<I", buf, pos)[0] if width == 4 else buf[pos]] = stack[-1]
            pos += width
        elif op == 0x68 or op == 0x6A:  # h BINGET, j LONG_BINGET
            width = 4 if op == 0x6A else 1
            need(width)
            get(unpack_from("<I", buf, pos)[0] if width == 4 else buf[pos])
            pos += width
        elif op in _INTS:  # K BININT1, M BININT2, J BININT
            width, fmt = _INTS[op]
            need(width)
            stack.append(unpack_from(fmt, buf, pos)[0])
            pos += width
        elif op in _CONSTANTS:  # ) EMPTY_TUPLE, NEWFALSE, NEWTRUE, N NONE
            stack.append(_CONSTANTS[op])
        elif op == 0x28:  # ( MARK
            if len(metastack) >= max_stack:
                fail(M("the pickle's stack passes %d entries", max_stack))
            metastack.append(stack)
            stack = []
        elif op == 0x52 or op == 0x81:  # R REDUCE, NEWOBJ (the fast loop does a global's, and records none)
            args = pop()
            func = pop()
            if type(func) is not Global:
                count(res.call_targets, ("REDUCE" if op == 0x52 else "NEWOBJ", target_kind(func)))
            elif op == 0x52 and func.full in CHECKED and (args != () or func.full in NO_EMPTY):
                res.checked_calls.append((func.full, args))
            elif op == 0x81 and func.full not in NEWOBJ_OK:  # (torch's NEWOBJ raises on what is no class)
                res.checked_calls.append(("NEWOBJ " + func.full, args))
            stack.append(Call(func, args, "reduce" if op == 0x52 else "newobj"))
        elif op == 0x74:  # t TUPLE
            items = pop_mark()
            stack.append(tuple(items))
        elif op == 0x73:  # s SETITEM
            value = pop()
            key = pop()
            target = stack[-1] if stack else fail(M("SETITEM on an empty stack"), True)
            setitems(target, [(key, value)])
        elif op == 0x7D:  # } EMPTY_DICT
            stack.append(SDict())
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
        elif op == 0x63:  # c GLOBAL
            at = pos - 1
            try:  # pickle decodes both lines as strict UTF-8
                module = line().decode("utf-8")
                name = line().decode("utf-8")
            except UnicodeDecodeError:
                fail(M("the GLOBAL at byte %d names a module or name that is not UTF-8: pickle stops there", at), True)
            push_global(module, name)
        elif op == 0x75:  # u SETITEMS
            items = pop_mark()
            if len(items) & 1:  # pickle: 'odd number of items for SETITEMS' (torch's weights_only unpickler fails too)
                fail(M("SETITEMS at byte %d has an odd number of items: pickle stops there", pos - 1), True)
            target = stack[-1] if stack else fail(M("SETITEMS on an empty stack"), True)
            setitems(target, [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)])
        elif op == 0x5D:  # ] EMPTY_LIST
            stack.append(SList())
        elif op == 0x65:  # e APPENDS
            items = pop_mark()
            target = stack[-1] if stack else fail(M("APPENDS on an empty stack"), True)
            appends(target, items, "APPENDS")
        elif op == 0x61:  # a APPEND
            value = pop()
            target = stack[-1] if stack else fail(M("APPEND on an empty stack"), True)
            appends(target, [value], "APPEND")
        elif op == 0x62:  # b BUILD
            state = pop()
            target = stack[-1] if stack else fail(M("BUILD on an empty stack"), True)
            count(res.build_targets, target_kind(target))
            if state_filled(state):
                count(res.build_filled, target_kind(target))
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
            if length < 0:  # pickle: 'LONG pickle has negative byte count'
                fail(M("a LONG4 with a negative length at byte %d", pos), True)
            need(length)
            # any length pickle reads; a long one is kept as its length (its value is no tensor's shape)
            stack.append(int.from_bytes(buf[pos:pos + length], "little", signed=True) if length <= 256 else Blob("int", length))
            pos += length
        elif op == 0x80:  # PROTO
            need(1)
            if res.protocol is None:
                res.protocol = buf[pos]
            pos += 1
        elif op == 0x2E:  # . STOP
            if not stack:  # pickle: 'unpickling stack underflow'; torch's weights_only unpickler: 'pop from empty list'
                fail(M("STOP on an empty stack at byte %d: pickle raises there", pos - 1), True)
            res.root = stack.pop()
            res.complete = True
            res.end = pos
            res.op_count = ops
            raise Stop
        elif op == 0x92:  # NEWOBJ_EX
            kwargs = pop()
            args = pop()
            cls = pop()
            stack.append(Call(cls, (args, kwargs), "newobj_ex"))
        elif op in COUNTED:  # length-prefixed strings and bytes
            width, fmt, kind, codec = COUNTED[op]
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
            target = stack[-1] if stack else fail(M("ADDITEMS on an empty stack"), True)
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
            stack.append(stack[-1] if stack else fail(M("DUP on an empty stack"), True))
        elif op == 0x64:  # d DICT
            items = pop_mark()
            if len(items) & 1:  # pickle: 'odd number of items for DICT'
                fail(M("DICT at byte %d has an odd number of items: pickle stops there", pos - 1), True)
            stack.append(SDict([(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]))
        elif op == 0x6C:  # l LIST
            items = pop_mark()
            stack.append(SList(items))
        elif op == 0x70 or op == 0x67:  # p PUT, g GET: PyLong_FromString(line, base 10), as int() reads it
            at = pos - 1
            what = "PUT" if op == 0x70 else "GET"
            index, why = c_int(line(), 10)
            if index is None:
                fail(_bad_number(what, at, why), why != UNSURE)
            if index < 0:  # pickle: 'negative PUT argument'
                fail(M("a negative %s argument at byte %d", what, at), True)
            put(index) if op == 0x70 else get(index)
        elif op == 0x49:  # I INT
            at = pos - 1
            raw = line()
            if raw == b"01" or raw == b"00":
                stack.append(raw == b"01")
            else:
                value, why = c_int(raw, 0, strtol=True)
                if value is None:
                    fail(_bad_number("INT", at, why), why != UNSURE)
                stack.append(value)
        elif op == 0x4C:  # L LONG (pickle drops one trailing L)
            at = pos - 1
            raw = line()
            value, why = c_int(raw[:-1] if raw.endswith(b"L") else raw, 0)
            if value is None:
                fail(_bad_number("LONG", at, why), why != UNSURE)
            stack.append(value)
        elif op == 0x46:  # F FLOAT (PyOS_string_to_double: no spaces, no underscores, overflow raises)
            at = pos - 1
            raw = line().split(b"\0", 1)[0]
            try:
                value = float(raw)
            except ValueError:
                fail(M("the FLOAT argument at byte %d is not a number: pickle stops there", at), True)
            if raw != raw.strip() or b"_" in raw or (value in (float("inf"), float("-inf")) and b"inf" not in raw.lower()):
                fail(M("the FLOAT argument at byte %d is one Python's float() and pickle may read differently", at))
            stack.append(value)
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
                fail(M("OBJ without a class at byte %d", pos))
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
            fail(M("byte %d is 0x%02x, not a pickle opcode", pos - 1, op), True)


def _bad_number(opcode: str, at: int, why: str):
    """Why the text argument of ``opcode`` (INT, LONG, PUT, GET) at byte ``at`` was not read (:func:`c_int`'s
    ``why``), as a marked message."""
    if why == UNSURE:
        return M("the %s argument at byte %d is one cudaenv cannot be sure how pickle reads", opcode, at)
    return M("the %s argument at byte %d is not a number: pickle stops there", opcode, at)
