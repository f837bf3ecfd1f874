"""A torch state_dict's tensor entries in one step each: the template of :mod:`cudaenv.checkpoint.pickle_vm`.

Each entry of a state_dict that torch (or any pickler of protocol 2) writes is the same run of 30-40 opcodes::

    BINUNICODE key, PUT, GET _rebuild_tensor_v2, MARK, MARK, GET 'storage', GET FloatStorage,
    BINUNICODE '17' PUT (or GET), GET 'cpu', INT numel, TUPLE PUT, BINPERSID, INT offset,
    size tuple (PUT), stride tuple (PUT), NEWFALSE, GET OrderedDict, EMPTY_TUPLE, REDUCE PUT, TUPLE PUT, REDUCE PUT

(PUT: ``BINPUT``/``LONG_BINPUT``, GET: ``BINGET``/``LONG_BINGET``, INT: ``BININT1``/``BININT2``/a ``BININT`` that is
not negative, a tuple: ``EMPTY_TUPLE``, ``TUPLE1-3`` of INTs or ``MARK`` INTs ``TUPLE``, or a GET). :data:`ENTRY`, one
compiled pattern, matches the bytes of such a run after the key's string (the pattern is all opcodes and arguments of
a fixed width, so where it matches, the opcodes are exactly those); :func:`run` then does what those opcodes do, in
their order, to the walk's stack, memo, persistent ids and opcode counts, in a few Python statements instead of 35
turns of the opcode loop. It is syntax, not a guess: the values are whatever the memo holds (the function called
may be anything), and an entry is taken only when nothing in it can go another way than in the opcode loop: every
GET's entry is in the memo and no PUT of the entry replaces one (so no GET of it reads its own PUT), both strings
are valid UTF-8 of at most the loop's short length, and no bound (opcodes, memo, stack, MARK nesting) can be reached
inside it. Anything else (the first entry, which has the GLOBALs; a SETITEMS; a Parameter; another rebuild; a
mutated byte) leaves the entry, unchanged, to the opcode loop. ``tests/checkpoint/test_pickle_vm.py`` checks that
the walk gives the same for any bytes with and without this.
"""

from __future__ import annotations

import re
import struct

from cudaenv.checkpoint.nodes import Call, Global, Persid, SDict

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Tuple

_INT = rb"(?:K.|M..|J...[\x00-\x7f])"  # BININT1, BININT2, BININT >= 0
_GET = rb"(?:h.|j....)"
_PUT = rb"(q.|r....)"
_TUPLE = (rb"(?:\)|" + _INT + rb"\x85|" + _INT * 2 + rb"\x86|" + _INT * 3 + rb"\x87|\(" + _INT + rb"{4,32}t|" + _GET + rb")")
ENTRY = re.compile(
    _PUT  # 1 the key's PUT
    + rb"(" + _GET + rb"\(\(" + _GET + _GET + rb")"  # 2 the rebuild function, MARK, MARK, 'storage', the storage type
    + rb"(?:X(.)\x00\x00\x00([0-9]{1,19})" + _PUT + rb"|(" + _GET + rb"))"  # 3-5 a new storage key: length, digits, PUT; 6 a GET
    + rb"(" + _GET + _INT + rb")t" + _PUT + rb"Q"  # 7 the location, numel; TUPLE, 8 PUT, BINPERSID
    + rb"(" + _INT + _TUPLE + rb")" + _PUT + rb"?"  # 9 the storage offset and the size (a tuple or a GET), 10 its PUT
    + rb"(" + _TUPLE + rb")" + _PUT + rb"?"  # 11 the stride, 12 its PUT
    + rb"([\x88\x89]" + _GET + rb"\)R)" + _PUT  # 13 requires_grad, OrderedDict, EMPTY_TUPLE, REDUCE; 14 PUT
    + rb"t" + _PUT + rb"R" + _PUT,  # TUPLE, 15 PUT, REDUCE, 16 PUT
    re.DOTALL)
match = ENTRY.match

_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_U16 = struct.Struct("<H").unpack_from
# each entry's opcodes outside the spans: BINUNICODE key, TUPLE BINPERSID (the persistent id), TUPLE REDUCE (the call)
_FIXED = (0x58, 0x74, 0x51, 0x74, 0x52)


class _Get:
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


def _ops(span: bytes) -> Tuple[List[Any], bytes]:
    """What a span of INTs, GETs, MARKs, tuple opcodes, NEWTRUE/NEWFALSE and REDUCE pushes (a tuple's ints as a
    tuple, a GET as a :class:`_Get`, NEWTRUE as True), and its opcodes' bytes (for the counts)."""
    values: List[Any] = []
    ops = bytearray()
    i = 0
    end = len(span)
    ints: List[int] = []  # the INTs not yet in a tuple
    while i < end:
        op = span[i]
        ops.append(op)
        i += 1
        if op == 0x4B:
            ints.append(span[i])
            i += 1
            continue
        if op == 0x4D:
            ints.append(_U16(span, i)[0])
            i += 2
            continue
        if op == 0x4A:
            ints.append(_I32(span, i)[0])
            i += 4
            continue
        if op in (0x85, 0x86, 0x87, 0x74):  # TUPLE1-3 (the last 1-3 INTs), TUPLE (those since the MARK)
            k = {0x85: 1, 0x86: 2, 0x87: 3}.get(op, len(ints))
            values.extend(ints[:len(ints) - k])
            values.append(tuple(ints[len(ints) - k:]))
            ints = []
            continue
        values.extend(ints)
        ints = []
        if op == 0x68:
            values.append(_Get(span[i]))
            i += 1
        elif op == 0x6A:
            values.append(_Get(_U32(span, i)[0]))
            i += 4
        elif op == 0x29:  # EMPTY_TUPLE
            values.append(())
        elif op in (0x88, 0x89):  # NEWTRUE, NEWFALSE
            values.append(op == 0x88)
        # MARK, REDUCE: nothing pushed here (the pattern puts them where their effect is the entry's)
    values.extend(ints)
    return values, bytes(ops)


def _read(span: bytes, memo: Dict[int, Any]) -> List[Any]:
    """``[values, opcodes' bytes, times used, whether the last value is a memo entry, opcodes]`` of a span, its GETs
    read from ``memo`` (KeyError: not there)."""
    values, ops = _ops(span)
    got = [memo[v.index] if type(v) is _Get else v for v in values]
    return [got, ops, 0, type(values[-1]) is _Get, len(ops)]


def _entry(sig: Tuple[bytes, ...], memo: Dict[int, Any]) -> List[Any]:
    """What an entry's five spans give (read from ``memo``; KeyError: a GET's entry is not there): ``[the rebuild
    function, 'storage', the storage type, the location, numel, offset, size, whether it is a GET's (else a tuple to
    copy), stride, the same, requires_grad, OrderedDict, opcodes, times used, the spans' opcodes]``. KeyError too when
    either REDUCE would call something that is not a global (the opcode loop records that: weights_only refuses it)."""
    head, locnum, size, stride, tail = (_read(span, memo) for span in sig)
    if type(head[0][0]) is not Global or type(tail[0][1]) is not Global:
        raise KeyError("a REDUCE of a value that is not a global")
    return (head[0] + locnum[0] + size[0] + [size[3]] + stride[0] + [stride[3]] + tail[0][:2]
            + [head[4] + locnum[4] + size[4] + stride[4] + tail[4], 0, head[1] + locnum[1] + size[1] + stride[1] + tail[1]])


def run(buf: bytes, pos: int, end: int, m: Any, stack: List[Any], memo: Dict[int, Any], depth: int, ops: int,
        counts: List[int], lim: Any, persids: List[Any], short: int) -> Tuple[int, int]:
    """The entries from ``buf[pos]`` (a BINUNICODE key whose string ends at ``end``, ``m`` the match after it) while
    they come: ``(pos, ops)`` after the last one taken (``pos`` unchanged: none was)."""
    n = len(buf)
    u32 = _U32
    max_ops = lim.max_ops - 128  # an entry is at most 21 + 2 * 35 opcodes
    max_memo = lim.max_memo - 8  # and 8 PUTs
    max_stack = lim.max_stack - 40  # (the stack: 2 more; a MARK's: up to 33)
    max_depth = lim.max_stack - 3  # (3 MARKs deep)
    done = short_puts = long_puts = new_keys = short_gets = long_gets = 0
    # what an entry's spans (all but the key, the storage key and the PUTs) give, by their bytes, for this run: their
    # GETs' memo entries cannot change in it (no PUT of an entry replaces one)
    sigs: Dict[Tuple[bytes, ...], List[Any]] = {}
    while ops <= max_ops and len(memo) <= max_memo and len(stack) <= max_stack and depth <= max_depth:
        kput, head, sk_len, sk, sk_put, sk_get, locnum, pid_put, size, size_put, stride, stride_put, tail, hooks_put, \
            args_put, call_put = m.groups()
        # everything that can refuse the entry first, nothing changed before the last of it
        try:
            key = buf[pos + 5:end].decode("utf-8")
            sig = (head, locnum, size, stride, tail)
            e = sigs.get(sig)
            if e is None:
                e = sigs[sig] = _entry(sig, memo)
            if sk_get is None:
                if sk_len[0] != len(sk) or len(sk) > short:
                    break
                v_sk = sk.decode("ascii")
                if len(sk_put) == 2:
                    i_sk = sk_put[1]
                else:
                    i_sk = u32(sk_put, 1)[0]
                if i_sk in memo:
                    break
            elif len(sk_get) == 2:
                v_sk = memo[sk_get[1]]
            else:
                v_sk = memo[u32(sk_get, 1)[0]]
        except (KeyError, UnicodeDecodeError):
            break
        if len(kput) == 2:  # the five PUTs of every entry are all BINPUT or all LONG_BINPUT, or it is refused
            if len(pid_put) != 2 or len(hooks_put) != 2 or len(args_put) != 2 or len(call_put) != 2:
                break
            i_key, i_pid, i_hooks, i_args, i_call = kput[1], pid_put[1], hooks_put[1], args_put[1], call_put[1]
        else:
            if len(pid_put) != 5 or len(hooks_put) != 5 or len(args_put) != 5 or len(call_put) != 5:
                break
            i_key, i_pid, i_hooks, i_args, i_call = u32(kput, 1)[0], u32(pid_put, 1)[0], u32(hooks_put, 1)[0], \
                u32(args_put, 1)[0], u32(call_put, 1)[0]
        if i_key in memo or i_pid in memo or i_hooks in memo or i_args in memo or i_call in memo:
            break
        if size_put is not None:
            i_size = size_put[1] if len(size_put) == 2 else u32(size_put, 1)[0]
            if i_size in memo:
                break
        if stride_put is not None:
            i_stride = stride_put[1] if len(stride_put) == 2 else u32(stride_put, 1)[0]
            if i_stride in memo:
                break
        # the entry's opcodes, in their order
        (v_func, v_storage, v_type, v_loc, numel, offset, v_size, size_got, v_stride, stride_got, rg, v_od, span_ops,
         _, _) = e
        memo[i_key] = key
        if sk_get is None:
            memo[i_sk] = v_sk
            new_keys += 1
            if len(sk_put) == 2:
                short_puts += 1
            else:
                long_puts += 1
        elif len(sk_get) == 2:
            short_gets += 1
        else:
            long_gets += 1
        pid = (v_storage, v_type, v_sk, v_loc, numel)
        memo[i_pid] = pid
        p = Persid(pid)
        persids.append(p)
        if not size_got:
            v_size = (*v_size,)  # a new tuple, as TUPLE makes
        if size_put is not None:
            memo[i_size] = v_size
            if len(size_put) == 2:
                short_puts += 1
            else:
                long_puts += 1
            ops += 1
        if not stride_got:
            v_stride = (*v_stride,)
        if stride_put is not None:
            memo[i_stride] = v_stride
            if len(stride_put) == 2:
                short_puts += 1
            else:
                long_puts += 1
            ops += 1
        hooks = Call(v_od, ())
        memo[i_hooks] = hooks
        args = (p, offset, v_size, v_stride, rg, hooks)
        memo[i_args] = args
        call = Call(v_func, args)
        memo[i_call] = call
        stack.append(key)
        stack.append(call)
        if len(kput) == 2:
            short_puts += 5
        else:
            long_puts += 5
        e[13] += 1
        ops += 12 + span_ops if sk_get is None else 11 + span_ops
        done += 1
        pos = m.end()
        # the next entry?
        if pos + 5 > n or buf[pos] != 0x58:
            break
        length = u32(buf, pos + 1)[0]
        end = pos + 5 + length
        if length > short or end > n:
            break
        m = match(buf, end)
        if m is None:
            break
    for op in _FIXED:
        counts[op] += done
    counts[0x58] += new_keys
    counts[0x71] += short_puts
    counts[0x72] += long_puts
    counts[0x68] += short_gets
    counts[0x6A] += long_gets
    for e in sigs.values():
        if e[13]:
            for op in e[14]:
                counts[op] += e[13]
    return pos, ops


META = re.compile(_PUT + rb"\}" + _PUT + rb"(" + _GET + _INT + rb")s", re.DOTALL)
"""A ``_metadata`` entry after its key's string: PUT, EMPTY_DICT, PUT, GET 'version', INT, SETITEM."""
match_meta = META.match


def run_meta(buf: bytes, pos: int, end: int, m: Any, stack: List[Any], memo: Dict[int, Any], ops: int,
             counts: List[int], lim: Any, short: int, set_targets: Dict[str, int]) -> Tuple[int, int]:
    """:func:`run` for ``_metadata``'s ``'prefix': {'version': 1}`` entries (:data:`META`)."""
    n = len(buf)
    u32 = _U32
    max_ops = lim.max_ops - 8  # an entry is 7 opcodes
    max_memo = lim.max_memo - 2  # 2 PUTs
    max_stack = lim.max_stack - 4  # 4 on the stack before SETITEM
    done = short_puts = long_puts = 0
    spans: Dict[bytes, List[Any]] = {}
    while ops <= max_ops and len(memo) <= max_memo and len(stack) <= max_stack:
        kput, dput, span = m.groups()
        try:
            key = buf[pos + 5:end].decode("utf-8")
            sp = spans.get(span)
            if sp is None:
                sp = spans[span] = _read(span, memo)
        except (KeyError, UnicodeDecodeError):
            break
        if len(kput) != len(dput):
            break
        if len(kput) == 2:
            i_key, i_dict = kput[1], dput[1]
        else:
            i_key, i_dict = u32(kput, 1)[0], u32(dput, 1)[0]
        if i_key in memo or i_dict in memo:
            break
        if len(kput) == 2:
            short_puts += 2
        else:
            long_puts += 2
        memo[i_key] = key
        d = SDict()
        memo[i_dict] = d
        d.pairs.append((sp[0][0], sp[0][1]))
        stack.append(key)
        stack.append(d)
        sp[2] += 1
        ops += 7
        done += 1
        pos = m.end()
        if pos + 5 > n or buf[pos] != 0x58:
            break
        length = u32(buf, pos + 1)[0]
        end = pos + 5 + length
        if length > short or end > n:
            break
        m = match_meta(buf, end)
        if m is None:
            break
    counts[0x58] += done
    counts[0x7D] += done
    counts[0x73] += done
    counts[0x71] += short_puts
    counts[0x72] += long_puts
    for _, span_ops, times, _, _ in spans.values():
        if times:
            for op in span_ops:
                counts[op] += times
    if done:
        set_targets["SDict"] = set_targets.get("SDict", 0) + done
    return pos, ops
