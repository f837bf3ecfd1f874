"""The fast readings of a DCP folder in the safetensors format (issue 32) against the exact ones, on generated shard
sets (constructed: the layout of torch 2.13's HuggingFaceStorageWriter, each rank a row block of every tensor with its
DCP_SHARDING_INFO offsets, as in tests/recorded/dcp-safetensors-headers.txt), the usual ones and odd ones:

- the join of the chunks in C at once (``hf_dcp._join_at_once``, through ``join_shards``) gives what the join chunk by
  chunk (``hf_dcp.join_each``) gives: the same tensors, sizes, chunks, elements held and problems (a lost rank, an
  overlap, a key missing from a shard, offsets for a key the header lacks, a dtype or rank that disagrees);
- a shard counted alone (``inspect_member(lean=True)``: ``safetensors_tally``) is the same ShardFile, problems and
  dtype counts as the one made from its whole single-file report."""

import json
import os
import struct
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

import checkpoint_builders as cb
from builders import recorded
from cudaenv.checkpoint import hf_dcp
from cudaenv.checkpoint.folder import inspect_folder
from cudaenv.checkpoint.folder_files import Acc, inspect_member

ODD = ["lose a rank", "a rank twice", "a key missing from a shard", "a key without offsets", "offsets for no key",
       "a dtype that disagrees", "a rank that disagrees", "offsets of the wrong length", "a shape not naturals",
       "an entry no object", "no sharding info", "keys in another order", "a header no object", "no dtype", "no shape",
       "no __metadata__", "an empty sharding info"]


@st.composite
def shard_sets(draw, odd_ok=True):
    """(shards as join_shards takes them, the odd changes made): ``ranks`` shards, each a row block of every tensor."""
    ranks = draw(st.integers(1, 4))
    tensors = draw(st.lists(st.tuples(st.sampled_from(["F32", "BF16", "I64"]),
                                      st.lists(st.integers(0, 6), max_size=3)), max_size=5))
    keys = ["m.k%d" % i for i in range(len(tensors))]
    shards = []
    for r in range(ranks):
        header = {"__metadata__": {"format": "pt"}}
        offsets = {}
        for key, (dtype, shape) in zip(keys, tensors):
            lo, hi = (shape[0] * r // ranks, shape[0] * (r + 1) // ranks) if shape else (0, 0)
            header[key] = {"dtype": dtype, "shape": ([hi - lo] + shape[1:]) if shape else [], "data_offsets": [0, 0]}
            offsets[key] = tuple([lo] + [0] * (len(shape) - 1)) if shape else ()
        shards.append(["shard-%05d" % (r + 1), header, offsets])
    odd = draw(st.lists(st.sampled_from(ODD), max_size=3)) if odd_ok else []
    for change in odd:
        if not shards:
            break
        i = draw(st.integers(0, len(shards) - 1))
        name, header, offsets = shards[i]
        entries = [k for k in header if k != "__metadata__"] if isinstance(header, dict) else []
        key = draw(st.sampled_from(entries)) if entries else None
        if change == "lose a rank":
            del shards[i]
        elif change == "a rank twice":
            shards.append([name + "b", header, offsets])
        elif change == "a key missing from a shard" and key:
            shards[i][1] = {k: v for k, v in header.items() if k != key}
        elif change == "a key without offsets" and key and offsets:
            shards[i][2] = {k: v for k, v in offsets.items() if k != key}
        elif change == "offsets for no key" and isinstance(offsets, dict):
            shards[i][2] = dict(offsets or {}, **{"m.nowhere": (0,)})
        elif change == "a dtype that disagrees" and key and isinstance(header[key], dict):
            shards[i][1] = dict(header, **{key: dict(header[key], dtype="F16")})
        elif change == "a rank that disagrees" and key and isinstance(header[key], dict) \
                and isinstance(header[key].get("shape", []), list):  # (an earlier change may have made it a number)
            shards[i][1] = dict(header, **{key: dict(header[key], shape=list(header[key].get("shape", [])) + [1])})
        elif change == "offsets of the wrong length" and key and offsets and key in offsets:
            shards[i][2] = dict(offsets, **{key: tuple(offsets[key]) + (0,)})
        elif change == "a shape not naturals" and key and isinstance(header[key], dict):
            shards[i][1] = dict(header, **{key: dict(header[key], shape=draw(st.sampled_from([[-1], [True], ["2"], 3, None])))})
        elif change == "an entry no object" and key:
            shards[i][1] = dict(header, **{key: draw(st.sampled_from([3, "x", [1], None]))})
        elif change == "no sharding info":
            shards[i][2] = None
        elif change == "an empty sharding info":
            shards[i][2] = {}
        elif change == "keys in another order" and isinstance(header, dict):
            shards[i][1] = dict(reversed(list(header.items())))
        elif change == "a header no object":
            shards[i][1] = draw(st.sampled_from([None, [], "x"]))
        elif change == "no dtype" and key and isinstance(header[key], dict):
            shards[i][1] = dict(header, **{key: {k: v for k, v in header[key].items() if k != "dtype"}})
        elif change == "no shape" and key and isinstance(header[key], dict):
            shards[i][1] = dict(header, **{key: {k: v for k, v in header[key].items() if k != "shape"}})
        elif change == "no __metadata__" and isinstance(header, dict):
            shards[i][1] = {k: v for k, v in header.items() if k != "__metadata__"}
    return [tuple(s) for s in shards], odd


def _seen(joined):
    tensors, problems = joined
    return [(t.fqn, t.dtype, t.size, t.chunks, t.held) for t in tensors], problems


@settings(max_examples=400)
@given(shard_sets())
def test_the_join_at_once_equals_the_join_chunk_by_chunk(drawn):
    shards, _odd = drawn
    assert _seen(hf_dcp.join_shards(shards)) == _seen(hf_dcp.join_each(shards))


@settings(max_examples=200)
@given(shard_sets(odd_ok=False))
def test_the_usual_shard_set_is_joined_at_once(drawn):
    """(Not vacuous: the usual set takes the fast path, and its answer is the exact one.)"""
    shards, _odd = drawn
    fast = hf_dcp._join_at_once(shards)
    assert fast is not None
    assert _seen(fast) == _seen(hf_dcp.join_each(shards))


def test_each_odd_change_is_still_found():
    """A rank lost, an overlap, a key a shard lacks and offsets that name no key: the same verdicts either way."""
    full = {"a.w": ("F32", [8, 4]), "a.b": ("F32", [8])}

    def rank(r, n=4, drop=()):
        header = {"__metadata__": {}}
        offsets = {}
        for k, (dtype, shape) in full.items():
            if k in drop:
                continue
            header[k] = {"dtype": dtype, "shape": [shape[0] // n] + shape[1:]}
            offsets[k] = tuple([shape[0] // n * r] + [0] * (len(shape) - 1))
        return ("r%d" % r, header, offsets)

    whole = [rank(r) for r in range(4)]
    tensors, problems = hf_dcp.join_shards(whole)
    assert [(t.fqn, t.size, t.held) for t in tensors] == [("a.w", [8, 4], 32), ("a.b", [8], 8)] and problems == []
    lost = whole[:1] + whole[2:]  # rank 1 gone: the sizes still reach the end, the elements do not
    _, problems = hf_dcp.join_shards(lost)
    assert len(problems) == 1 and problems[0].startswith("2 tensors are not whole") and "a.w 24 of 32" in problems[0]
    _, problems = hf_dcp.join_shards(whole + whole[:1])
    assert len(problems) == 1 and problems[0].startswith("2 tensors have chunks that overlap")
    lacking = [whole[0], rank(1, drop=("a.b",))] + whole[2:]  # (not the last rank: its end gives the size)
    _, problems = hf_dcp.join_shards(lacking)
    assert problems == ["1 tensors are not whole: their chunks in the shards hold fewer elements than their size (a "
                        "rank's file is missing; torch's reader would leave the rest uninitialised): a.b 6 of 8"]
    name, header, offsets = whole[3]
    _, problems = hf_dcp.join_shards(whole[:3] + [(name, header, dict(offsets, **{"a.gone": (0,)}))])
    assert problems == ["r3: DCP_SHARDING_INFO places a.gone, which its header does not hold"]


# ------------------------------------------------------------------ one shard counted alone
ENTRY = st.one_of(
    st.fixed_dictionaries({"dtype": st.sampled_from(["F32", "BF16", "F4", "X9", 3]),
                           "shape": st.one_of(st.lists(st.integers(-1, 5), max_size=3), st.just([True]), st.none()),
                           "data_offsets": st.one_of(st.lists(st.integers(-2, 90), min_size=2, max_size=2),
                                                     st.just([0]), st.just(["0", 4]))}),
    st.integers(), st.text(max_size=3))


@settings(max_examples=150)
@given(st.dictionaries(st.text(min_size=1, max_size=6), ENTRY, max_size=6), st.integers(0, 100),
       st.booleans(), st.booleans())
def test_a_shard_counted_alone_is_the_shard_its_whole_report_makes(header, data, with_meta, count_dtypes):
    doc = dict({"__metadata__": {"format": "pt"}} if with_meta else {}, **header)
    raw = json.dumps(doc).encode()
    raw += b" " * (-len(raw) % 8)
    with tempfile.TemporaryDirectory() as folder:
        name = "shard-00001-model-00001-of-00001.safetensors"
        with open(os.path.join(folder, name), "wb") as fh:
            fh.write(struct.pack("<Q", len(raw)) + raw + b"\0" * data)
        whole, alone = Acc(), Acc()
        _box, report = inspect_member(folder, name, "data", None, whole, 0, keep_prefixes=False, count_dtypes=count_dtypes)
        _box, none = inspect_member(folder, name, "data", None, alone, 0, keep_prefixes=False, count_dtypes=count_dtypes,
                                    lean=True)
    assert report is not None and none is None
    assert alone.files == whole.files and alone.problems == whole.problems and alone.dtypes == whole.dtypes
    assert alone.verdicts == whole.verdicts and alone.reasons == whole.reasons and alone.devices == whole.devices


def test_the_folder_of_the_bench_is_read_at_once_and_whole(tmp_path, monkeypatch):
    """The bench's folder (8 ranks of row chunks, bench/run.py folder_figures, smaller): the join is the one at once,
    and a lost rank in it is named."""
    calls = []
    real = hf_dcp.join_each
    monkeypatch.setattr(hf_dcp, "join_each", lambda shards: calls.append(1) or real(shards))
    for s in range(8):
        keys = ["module.blocks.%d.w" % i for i in range(50)]
        info = json.dumps({k: {"saved_offsets": [4 * s, 0]} for k in keys})
        (tmp_path / ("shard-%05d-model-00001-of-00001.safetensors" % (s + 1))).write_bytes(cb.safetensors_file(
            {k: ("F32", (4, 4), 64) for k in keys}, {"DCP_SHARDING_INFO": info, "DCP_VERSION": "1.0", "format": "pt"}))
    r = inspect_folder(str(tmp_path))
    assert r.layout == "dcp-safetensors" and r.world_size == 8 and r.tensors == 50 and not r.inconsistencies
    assert r.total_bytes == 50 * 32 * 4 * 4 and [f.tensors for f in r.files] == [50] * 8 and calls == []
    (tmp_path / "shard-00003-model-00001-of-00001.safetensors").unlink()
    r = inspect_folder(str(tmp_path))
    assert r.missing == ("shard-00003-model-00001-of-00001.safetensors",)
    assert any("50 tensors are not whole" in p and "module.blocks.0.w 112 of 128" in p for p in r.inconsistencies)
    assert calls == []  # (a lost rank is still the usual set: found by the join at once)


def test_the_real_two_rank_save_is_joined_at_once():
    """torch 2.13's own 2-rank gloo save (tests/recorded/dcp-safetensors-headers.txt) is the usual set: joined at once,
    as the chunk-by-chunk join joins it."""
    lines = recorded("dcp-safetensors-headers.txt").strip().splitlines()  # (a file's name and size, its header)
    shards = [(head.split()[0], json.loads(text), hf_dcp.sharding_info(json.loads(text))[0])
              for head, text in zip(lines[0::2], lines[1::2])]
    assert len(shards) == 2
    fast = hf_dcp._join_at_once(shards)
    assert fast is not None and _seen(fast) == _seen(hf_dcp.join_each(shards))
    assert {t.fqn: t.size for t in fast[0]} == {"module.fc.weight": [512, 512], "module.fc.bias": [512],
                                                "module.emb.weight": [256, 512], "module.steps": [6]}
