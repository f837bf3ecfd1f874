"""The pickle walk's two loops agree: `pickle_vm.walk` (the fast loop, handing rare opcodes and every problem to the
careful loop, and a state_dict's tensor and `_metadata` entries to the template, one step each) gives, for any
bytes, what `pickle_vm.reference_walk` (the careful loop alone) gives: the same object graph (identity and sharing
included), notes, end offset, opcode counts, globals, persistent ids and targets, with the template and without."""

import pickle
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import checkpoint_builders as cb
from cudaenv.checkpoint import nodes, pickle_vm


def canon(root):
    """A text for the graph under ``root``: every node by kind and contents, a node seen before as ``ref N``."""
    out, ids, todo = [], {}, [root]
    end = object()
    while todo:
        o = todo.pop()
        if o is end:
            out.append("]")
            continue
        t = type(o)
        if o is None or t in (bool, int, float, str, bytes, nodes.ShortBytes):
            out.append("%s:%r" % (t.__name__, o))
            continue
        if id(o) in ids:
            out.append("ref%d" % ids[id(o)])
            continue
        ids[id(o)] = len(ids)
        if t is nodes.Global:
            out.append("G(%r,%r,%r)" % (o.module, o.name, o.full))
            continue
        if t is nodes.Blob:
            out.append("B(%r,%r)" % (o.kind, o.length))
            continue
        if t is tuple:
            head, parts = "T", list(o)
        elif t is nodes.SDict:
            head, parts = "D", [x for kv in o.pairs for x in kv]
        elif t in (nodes.SList, nodes.SSet):
            head, parts = "L%s" % getattr(o, "frozen", ""), list(o.items)
        elif t is nodes.Persid:
            head, parts = "P", [o.pid]
        elif t is nodes.Unresolved:
            head, parts = "U", [o.module, o.name]
        elif t is nodes.Call:
            head = "C(%s,%d,%d,%d,%s,%s,%s)" % (o.kind, len(o.pairs), len(o.items), len(o.states), type(o.pairs).__name__,
                                              type(o.items).__name__, type(o.states).__name__)
            parts = [o.func, o.args] + [x for kv in o.pairs for x in kv] + list(o.items) + list(o.states)
        else:
            raise AssertionError("a value the walk does not make: %r" % (o,))
        out.append(head + "%d[" % len(parts))
        todo.append(end)
        todo.extend(reversed(parts))
    return "\n".join(out)


def summary(res):
    return {"root": canon(res.root), "persids": canon(tuple(res.persids)), "complete": res.complete, "end": res.end,
            "protocol": res.protocol, "opcodes": res.opcodes, "globals": res.globals, "computed": res.computed_globals,
            "setitem": res.setitem_targets, "build": res.build_targets, "append": res.append_targets,
            "call": res.call_targets, "notes": res.notes, "op_count": res.op_count}


def same_walk(data, start=0, limits=None):
    fast = pickle_vm.walk(data, start, limits, template=True)
    ref = pickle_vm.reference_walk(data, start, limits)
    assert summary(fast) == summary(ref)
    assert summary(pickle_vm.walk(data, start, limits, template=False)) == summary(ref)
    return fast


LIMITS = [None, pickle_vm.Limits(max_ops=5000, max_memo=100, max_stack=100, max_string=64),
          pickle_vm.Limits(max_ops=40, max_memo=3, max_stack=4, max_string=2),
          pickle_vm.Limits(max_ops=3000, max_memo=1, max_stack=1, max_string=0)]
HEADS = [b"", b"\x80\x02", b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00"]
# every opcode byte the walk knows, with arguments of the right size, short ones and hostile ones
_ARGS = [b"", b"\x00", b"\x05", b"\xff", b"\x01\x00", b"\x03\x00\x00\x00", b"\x02\x00\x00\x00ab", b"\xff\xff\xff\xff",
         b"\x02\x00\x00\x00\x00\x00\x00\x00hi", b"\x02\xc3(", b"torch\n_utils\n", b"os\nsystem\n", b"0\n", b"12\n", b"x\n",
         b"'a'\n", b"1.5\n", b"01\n", b"5L\n"]
OPS = sorted(nodes.OPCODE_NAMES)
soup = st.lists(st.tuples(st.sampled_from(OPS), st.sampled_from(_ARGS)), max_size=60).map(
    lambda parts: b"".join(bytes([op]) + arg for op, arg in parts))


@settings(max_examples=400)
@given(st.binary(max_size=512), st.sampled_from(HEADS), st.sampled_from(LIMITS))
def test_both_loops_agree_on_any_bytes(data, head, limits):
    same_walk(head + data, 0, limits)


@settings(max_examples=400)
@given(st.sampled_from(HEADS), soup, st.sampled_from([b"", b"."]), st.sampled_from(LIMITS))
def test_both_loops_agree_on_opcode_soup(head, body, stop, limits):
    same_walk(head + body + stop, 0, limits)


_REAL = [cb.dumps(cb.cnn("cuda:2", prefix="module.")), cb.dumps(cb.cnn(), protocol=4),
         cb.dumps(cb.state_dict([("w%d" % i, cb.Tensor(cb.Storage(str(i), 4), (4,))) for i in range(300)],
                                [""] + ["w%d" % i for i in range(300)])),
         pickle.dumps({"a": [1, 2.5, "x", None, True], "b": (1, 2), 3: {"n": -7, "big": 2 ** 70}, "s": {1}, "f": frozenset()}, 0)]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(_REAL))), st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), max_size=6),
       st.integers(0, 10 ** 6), st.sampled_from(LIMITS))
def test_both_loops_agree_on_mutated_checkpoint_pickles(which, edits, cut, limits):
    data = bytearray(_REAL[which])
    for pos, value in edits:
        data[pos % len(data)] = value
    same_walk(bytes(data[: len(data) - cut % 200]), 0, limits)


def test_both_loops_agree_on_real_pickles_from_a_start_offset():
    for data in _REAL:
        assert same_walk(data).complete
        res = same_walk(b"junk" + data, 4)
        assert res.complete and res.end == 4 + len(data)


def test_the_bounds_are_checked_at_the_same_opcode_as_in_the_careful_loop():
    """The fast loop hands the 1024th, 2048th, ... opcode to the careful loop, which checks the bounds first: a limit
    trips at the same opcode, with the same note and end offset, whichever loop runs."""
    many_nones = b"\x80\x02" + b"N" * 5000 + b"."
    res = same_walk(many_nones, 0, pickle_vm.Limits(max_stack=1000))
    assert res.notes == ["the pickle's stack passes 1000 entries"] and res.end == 1025  # just after the 1024th opcode's byte
    puts = b"\x80\x02N" + b"".join(b"r" + struct.pack("<I", i) for i in range(3000)) + b"."
    res = same_walk(puts, 0, pickle_vm.Limits(max_memo=1500))
    assert res.notes == ["the pickle's memo passes 1500 entries"] and sum(res.opcodes.values()) == 2048
    res = same_walk(b"\x80\x02" + b"N0" * 3000 + b"N.", 0, pickle_vm.Limits(max_ops=2000))
    assert res.notes == ["the pickle has more than 2000 opcodes"] and sum(res.opcodes.values()) == 2048


def test_the_fast_loop_leaves_rare_and_broken_opcodes_to_the_careful_loop():
    # a SETITEM on an OrderedDict call, a BUILD on a dict, a key the fast loop's strict UTF-8 refuses (a surrogate,
    # which pickle reads: surrogatepass), a long string, a missing memo entry
    data = (b"\x80\x02ccollections\nOrderedDict\nq\x00)RX\x01\x00\x00\x00kK\x01s}K\x02b0X\x03\x00\x00\x00\xed\xa0\x80q\x01"
            b"X\x0d\x00\x00\x00hello, world!0h\x0100.")
    res = same_walk(data, 0, pickle_vm.Limits(max_string=12))
    assert res.complete and res.setitem_targets == {"collections.OrderedDict": 1}
    assert res.build_targets == {"SDict": 1} and res.root.pairs == [("k", 1)]
    res = same_walk(b"\x80\x02h\x07.")
    assert res.notes == ["the pickle reads memo entry 7 that was never stored (byte 3)"]


# state_dicts as torch writes them, of every shape the template knows and some it does not: sizes of 0-6 dims (a
# MARK tuple from 4), ints of each width, shared storages (a GET of the storage key), tied size tuples (a GET), other
# storage types and locations (new strings), Parameters and v3 rebuilds (another pattern), big memos (LONG_BINPUT)
_DIM = st.sampled_from([0, 1, 2, 3, 200, 255, 256, 70000, 2 ** 31 - 1])
_KEY = st.sampled_from(["w", "module.layer.weight", "bias", "_orig_mod.x", "é", "a" * 300, "q", "r\x00"])


@st.composite
def state_dicts(draw):
    count = draw(st.integers(1, 40))
    pad = draw(st.integers(0, 300))  # strings before the entries: memo indices past 255 (LONG_BINPUT, LONG_BINGET)
    storages, items = [], [("pad%d" % i, "s%d" % i) for i in range(pad)]
    shared_size = (4,)
    for i in range(count):
        if storages and draw(st.integers(0, 5)) == 0:
            storage = draw(st.sampled_from(storages))  # a shared storage
        else:
            storage = cb.Storage(draw(st.sampled_from([str(i), str(i) * 3, "k%d" % i])), draw(_DIM),
                                 draw(st.sampled_from(["cpu", "cuda:0", "cuda:2"])),
                                 draw(st.sampled_from(["FloatStorage", "FloatStorage", "HalfStorage", "UntypedStorage"])))
            storages.append(storage)
        size = shared_size if draw(st.integers(0, 4)) == 0 else tuple(draw(st.lists(_DIM, max_size=6)))
        tensor = cb.Tensor(storage, size, draw(_DIM), dtype=draw(st.sampled_from([None, None, None, "uint16"])))
        if draw(st.integers(0, 9)) == 0:
            tensor = cb.Parameter(tensor)
        items.append(("%s%d" % (draw(_KEY), i), tensor))
    return cb.state_dict(items, [""] + ["m%d" % i for i in range(draw(st.integers(0, count)))])


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(state_dicts(), st.sampled_from([2, 2, 4]), st.sampled_from(LIMITS + [pickle_vm.Limits(max_ops=600, max_memo=300,
       max_stack=40, max_string=256)]), st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), max_size=4),
       st.integers(0, 10 ** 6), st.booleans())
def test_the_template_and_the_careful_loop_agree_on_state_dicts_and_mutated_ones(sd, protocol, limits, edits, cut, mutate):
    """A template shortcut can never diverge silently: for generated state_dicts (and the same bytes with a few bytes
    changed or cut short), the walk with the template, without it and the careful loop alone give the same."""
    data = bytearray(cb.dumps(sd, protocol))
    if mutate:
        for pos, value in edits:
            data[pos % len(data)] = value
        data = data[: len(data) - cut % 200]
    same_walk(bytes(data), 0, limits)


def test_the_template_takes_a_state_dicts_entries(monkeypatch):
    """The template really is the path for a torch state_dict's entries (else the tests above would prove nothing): all
    but the first (its GLOBALs and strings are new) and the one where the memo passes 255 (BINPUT, then LONG_BINPUT)
    of 300 tensor entries, all but the first of their 301 `_metadata` entries."""
    from cudaenv.checkpoint import template

    taken = []
    for name in ("run", "run_meta"):
        real = getattr(template, name)

        def counting(buf, pos, *args, _real=real, _name=name):
            end, ops = _real(buf, pos, *args)
            taken.append((_name, ops - args[5 if _name == "run" else 4]))
            return end, ops

        monkeypatch.setattr(template, name, counting)
    data = _REAL[2]
    res = same_walk(data)
    ops = {name: sum(n for k, n in taken if k == name) for name in ("run", "run_meta")}
    assert res.complete and sum(res.opcodes.values()) == res.op_count
    assert ops["run"] == 298 * 28 and ops["run_meta"] == 300 * 7  # 28 opcodes per tensor entry, 7 per metadata entry
