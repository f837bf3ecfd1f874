"""A symbolic pickle machine: what a pickle *would* build, without building it.

:func:`walk` reads the opcodes of one pickle from bytes (a reader of its own, one pass) and keeps a real stack, a
real metastack for MARK and a real memo, so memo references (``BINGET`` of a memoized ``'cpu'`` or storage class)
and ``STACK_GLOBAL`` resolve to what they would be at load time, not to a guess from neighbouring opcodes. Nothing
is ever imported or called: the values are :mod:`cudaenv.checkpoint.nodes` (a ``GLOBAL`` is a :class:`Global`, a
``REDUCE`` a :class:`Call`, a ``BINPERSID`` a :class:`Persid`).

Every input is bounded (:class:`Limits`): opcode count, memo size, stack depth, string length (a longer string is a
:class:`Blob`, never decoded). ``walk`` never raises for any bytes: a truncated or broken pickle ends the walk with
a note, and what was built so far is kept.

Two loops share the walk's state. The fast loop below does the opcodes a torch pickle is made of (a 20,000-tensor
state_dict is 700,000 of them) in one tight loop over the bytes: no object per opcode, no call per opcode, the
most frequent first, each reading everything it needs (which raises on a short argument, an empty stack, a missing
memo entry) before it changes anything. Anything else (a rare opcode, an argument or a stack it does not expect,
any such exception, the bounds checked every 1024 opcodes, STOP) goes to :mod:`cudaenv.checkpoint.careful`, the
reference interpreter, from the same byte with the same state: it does the rare case right or ends the walk with
its note, so both loops give the same result for any bytes (a differential test checks it).
"""

from __future__ import annotations

import struct

from cudaenv.checkpoint import careful
from cudaenv.checkpoint.nodes import CHECKED, NEWOBJ_OK, NO_EMPTY, Call, Global, Limits, Persid, SDict, SList, WalkResult, state_filled
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Optional

# The opcodes the fast loop does (the others always go to the careful loop): the dispatch below is ordered by how
# often each comes in a torch state_dict (LONG_BINPUT, BINGET, BININT1, BINUNICODE, MARK, REDUCE, TUPLE, ...).
_FAST_OPS = (0x72, 0x68, 0x4B, 0x58, 0x28, 0x52, 0x74, 0x71, 0x6A, 0x73, 0x7D, 0x29, 0x89, 0x51, 0x85, 0x86, 0x87,
             0x8C, 0x94, 0x95, 0x4D, 0x4A, 0x88, 0x4E, 0x75, 0x5D, 0x65, 0x61, 0x62, 0x47, 0x8A, 0x81, 0x30, 0x32)
FAST = bytearray(256)  # 1 for the opcodes above (34 stores at import; a test of all 256 against the tuple cost 0.1 ms)
for _op in _FAST_OPS:
    FAST[_op] = 1
FAST = bytes(FAST)
del _op

_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_U16 = struct.Struct("<H").unpack_from
_F64 = struct.Struct(">d").unpack_from


class _Careful(Exception):
    """This opcode is for the careful loop (raised before the fast loop changed anything)."""


class _Entries(Exception):
    """This BINUNICODE starts a state_dict's tensor entry that :mod:`cudaenv.checkpoint.template` does in one step."""


TEMPLATE_FROM = 1 << 16  # a pickle of this many bytes or more is walked with the template (a smaller one gains nothing)


# What an opcode of the fast loop raises when its argument, its stack or the memo is not there; the careful loop
# then names it. The fast loop changes nothing before the last read that can raise.
_HAND_OVER = (IndexError, KeyError, struct.error, UnicodeDecodeError, _Careful)


def walk(data: bytes, start: int = 0, limits: Optional[Limits] = None, template: Optional[bool] = None) -> WalkResult:
    """Walk the pickle that starts at ``data[start]``; never raises for any ``data``. ``template``: do a state_dict's
    tensor entries in one step each (:mod:`cudaenv.checkpoint.template`; the same result); by default for a pickle of
    :data:`TEMPLATE_FROM` bytes or more."""
    res = WalkResult()
    counts = [0] * 256
    buf = data if isinstance(data, bytes) else bytes(memoryview(data))
    if template is None:
        template = len(buf) - start >= TEMPLATE_FROM
    res.data, res.start = buf, start
    try:
        _walk(buf, start, limits or Limits(), res, counts, template)
    except careful.Stop:
        pass
    except RecursionError:  # pragma: no cover - nothing here recurses on input
        res.notes.append(M("the pickle is nested too deeply to follow"))
    res.opcodes = {op: c for op, c in enumerate(counts) if c}
    return res


def reference_walk(data: bytes, start: int = 0, limits: Optional[Limits] = None) -> WalkResult:
    """The same walk by the careful loop alone: what :func:`walk` must give for any bytes (the tests compare them)."""
    res = WalkResult()
    counts = [0] * 256
    res.data, res.start = bytes(memoryview(data)), start
    try:
        careful.run(res.data, start, [], [], {}, 0, counts, limits or Limits(), res, bytes(256))
    except careful.Stop:
        pass
    except RecursionError:  # pragma: no cover - nothing here recurses on input
        res.notes.append(M("the pickle is nested too deeply to follow"))
    res.opcodes = {op: c for op, c in enumerate(counts) if c}
    return res


def first_seen(res: WalkResult, wanted) -> List[int]:
    """The opcodes of ``wanted`` in the order the walked pickle first has them (torch's weights_only unpickler stops
    at the first it does not support: that one is the 'Unsupported operand N' it names). The stdlib's
    ``pickletools.genops`` (the one reader of every opcode's layout; imported only here, for a pickle that has such
    opcodes) over the bytes the walk kept, stopping once all are found; any it does not reach (past a broken opcode)
    come last, in opcode order."""
    import io
    import pickletools

    want = set(wanted)
    found: List[int] = []
    stream = io.BytesIO(res.data)
    stream.seek(res.start)
    try:
        for opcode, _arg, _pos in pickletools.genops(stream):
            op = ord(opcode.code)
            if op in want:
                found.append(op)
                want.discard(op)
                if not want:
                    break
    except Exception:  # noqa: BLE001 - genops of damaged bytes (ValueError, UnicodeDecodeError, struct.error, ...)
        pass
    return found + sorted(want)


def _walk(buf: bytes, pos: int, lim: Limits, res: WalkResult, counts: List[int], template: bool) -> None:  # noqa: C901
    """Both loops (and the template's), until the careful one raises :class:`careful.Stop` (STOP, or a note)."""
    n = len(buf)
    if template:
        from cudaenv.checkpoint import template as tmpl

        entry, meta = tmpl.match, tmpl.match_meta
    else:
        entry = meta = tmpl = None
    m = end = None
    stack: List[Any] = []
    metastack: List[List[Any]] = []
    memo: Dict[int, Any] = {}
    persids = res.persids
    set_targets = res.setitem_targets
    build_targets = res.build_targets
    checked = CHECKED
    max_stack = lim.max_stack
    max_memo = lim.max_memo
    short = min(256, lim.max_string)  # a string up to this long is decoded here (a key, 'storage', a location)
    u32, i32, u16, f64 = _U32, _I32, _U16, _F64
    ops = 0
    while True:
        # opcodes number ops + 1 ... up to the next multiple of 1024 (that one's bounds check is the careful loop's)
        k = ops
        try:
            for k in range(ops + 1, (ops | 1023) + 1):  # noqa: B007 - k is read after a break-out (the opcode count)
                op = buf[pos]
                counts[op] += 1
                if op == 0x72:  # r LONG_BINPUT
                    memo[u32(buf, pos + 1)[0]] = stack[-1]
                    pos += 5
                elif op == 0x68:  # h BINGET
                    stack.append(memo[buf[pos + 1]])
                    pos += 2
                elif op == 0x4B:  # K BININT1
                    stack.append(buf[pos + 1])
                    pos += 2
                elif op == 0x58:  # X BINUNICODE
                    length = u32(buf, pos + 1)[0]
                    end = pos + 5 + length
                    if length > short or end > n:
                        raise _Careful
                    if entry is not None:
                        m = entry(buf, end) or meta(buf, end)
                        if m is not None:
                            raise _Entries
                    stack.append(buf[pos + 5:end].decode("utf-8"))
                    pos = end
                elif op == 0x28:  # ( MARK
                    if len(metastack) >= max_stack:
                        raise _Careful
                    metastack.append(stack)
                    stack = []
                    pos += 1
                elif op == 0x52:  # R REDUCE (of a global: another callable is for the careful loop, which records it)
                    if type(stack[-2]) is not Global:
                        raise _Careful
                    if stack[-2].full in checked and (stack[-1] != () or stack[-2].full in NO_EMPTY):  # (an allowed call that may raise)
                        res.checked_calls.append((stack[-2].full, stack[-1]))
                    stack[-1] = Call(stack[-2], stack.pop())
                    pos += 1
                elif op == 0x74:  # t TUPLE
                    items = tuple(stack)
                    stack = metastack.pop()
                    stack.append(items)
                    pos += 1
                elif op == 0x71:  # q BINPUT
                    memo[buf[pos + 1]] = stack[-1]
                    pos += 2
                elif op == 0x6A:  # j LONG_BINGET
                    stack.append(memo[u32(buf, pos + 1)[0]])
                    pos += 5
                elif op == 0x73:  # s SETITEM
                    target = stack[-3]
                    if type(target) is not SDict:
                        raise _Careful
                    value = stack.pop()
                    target.pairs.append((stack.pop(), value))
                    set_targets["SDict"] = set_targets.get("SDict", 0) + 1
                    pos += 1
                elif op == 0x7D:  # } EMPTY_DICT
                    stack.append(SDict())
                    pos += 1
                elif op == 0x29:  # ) EMPTY_TUPLE
                    stack.append(())
                    pos += 1
                elif op == 0x89:  # NEWFALSE
                    stack.append(False)
                    pos += 1
                elif op == 0x51:  # Q BINPERSID
                    p = Persid(stack[-1])
                    stack[-1] = p
                    persids.append(p)
                    pos += 1
                elif op == 0x85:  # TUPLE1
                    stack[-1] = (stack[-1],)
                    pos += 1
                elif op == 0x86:  # TUPLE2
                    pair = (stack[-2], stack[-1])
                    stack.pop()
                    stack[-1] = pair
                    pos += 1
                elif op == 0x87:  # TUPLE3
                    triple = (stack[-3], stack[-2], stack[-1])
                    del stack[-2:]
                    stack[-1] = triple
                    pos += 1
                elif op == 0x8C:  # SHORT_BINUNICODE
                    length = buf[pos + 1]
                    end = pos + 2 + length
                    if length > short or end > n:
                        raise _Careful
                    stack.append(buf[pos + 2:end].decode("utf-8"))
                    pos = end
                elif op == 0x94:  # MEMOIZE
                    if len(memo) >= max_memo:
                        raise _Careful
                    memo[len(memo)] = stack[-1]
                    pos += 1
                elif op == 0x95:  # FRAME
                    if pos + 9 > n:
                        raise _Careful
                    pos += 9
                elif op == 0x4D:  # M BININT2
                    stack.append(u16(buf, pos + 1)[0])
                    pos += 3
                elif op == 0x4A:  # J BININT
                    stack.append(i32(buf, pos + 1)[0])
                    pos += 5
                elif op == 0x88:  # NEWTRUE
                    stack.append(True)
                    pos += 1
                elif op == 0x4E:  # N NONE
                    stack.append(None)
                    pos += 1
                elif op == 0x75:  # u SETITEMS
                    target = metastack[-1][-1]
                    if type(target) is not SDict or len(stack) & 1:  # (an odd count: pickle raises, the careful loop says so)
                        raise _Careful
                    target.pairs.extend(zip(stack[::2], stack[1::2]))
                    stack = metastack.pop()
                    set_targets["SDict"] = set_targets.get("SDict", 0) + 1
                    pos += 1
                elif op == 0x5D:  # ] EMPTY_LIST
                    stack.append(SList())
                    pos += 1
                elif op == 0x65:  # e APPENDS
                    target = metastack[-1][-1]
                    if type(target) is not SList:
                        raise _Careful
                    target.items.extend(stack)
                    stack = metastack.pop()
                    pos += 1
                elif op == 0x61:  # a APPEND
                    target = stack[-2]
                    if type(target) is not SList:
                        raise _Careful
                    target.items.append(stack.pop())
                    pos += 1
                elif op == 0x62:  # b BUILD
                    target = stack[-2]
                    if type(target) is not Call:
                        raise _Careful
                    state = stack.pop()
                    kind = target.name
                    build_targets[kind] = build_targets.get(kind, 0) + 1
                    if state_filled(state):
                        res.build_filled[kind] = res.build_filled.get(kind, 0) + 1
                    if target.states:
                        target.states.append(state)
                    else:
                        target.states = [state]
                    pos += 1
                elif op == 0x47:  # G BINFLOAT
                    stack.append(f64(buf, pos + 1)[0])
                    pos += 9
                elif op == 0x8A:  # LONG1
                    end = pos + 2 + buf[pos + 1]
                    if end > n:
                        raise _Careful
                    stack.append(int.from_bytes(buf[pos + 2:end], "little", signed=True))
                    pos = end
                elif op == 0x81:  # NEWOBJ (of a global, as REDUCE)
                    if type(stack[-2]) is not Global:
                        raise _Careful
                    if stack[-2].full not in NEWOBJ_OK:  # (torch's NEWOBJ raises on what is no class)
                        res.checked_calls.append(("NEWOBJ " + stack[-2].full, stack[-1]))
                    stack[-1] = Call(stack[-2], stack.pop(), "newobj")
                    pos += 1
                elif op == 0x30:  # 0 POP
                    stack.pop()
                    pos += 1
                elif op == 0x32:  # 2 DUP
                    stack.append(stack[-1])
                    pos += 1
                else:
                    raise _Careful
            ops = k
        except _HAND_OVER:
            ops = k - 1  # opcode k raised before it changed anything: the careful loop does it
            if pos < n:
                counts[buf[pos]] -= 1
        except _Entries:
            ops = k - 1
            counts[0x58] -= 1
            at = pos
            if m.re is tmpl.ENTRY:
                pos, ops = tmpl.run(buf, pos, end, m, stack, memo, len(metastack), ops, counts, lim, persids, short)
            else:
                pos, ops = tmpl.run_meta(buf, pos, end, m, stack, memo, ops, counts, lim, short, set_targets)
            if pos != at:
                continue  # back to the fast loop (the bounds it passed could not be reached: the template checked)
        pos, stack, ops = careful.run(buf, pos, stack, metastack, memo, ops, counts, lim, res, FAST)
