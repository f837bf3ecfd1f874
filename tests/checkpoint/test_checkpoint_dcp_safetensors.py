"""`cudaenv checkpoint inspect|fix FOLDER` of a DCP folder in the safetensors format (issue 32), without torch: the
shards' headers are the real ones torch 2.13's HuggingFaceStorageWriter wrote with two gloo ranks
(tests/recorded/dcp-safetensors-headers.txt); the tensor bytes after them are zeros of the recorded sizes (constructed:
cudaenv never reads them, which is counted). Variations (a rank lost, a name moved, a value written ahead of the
header, a header without DCP's sharding info) are built from those headers and say so."""

import json
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

import checkpoint_builders as cb
from builders import recorded
from cudaenv.checkpoint import hf_dcp
from cudaenv.checkpoint import layout as L
from cudaenv.checkpoint.folder import folder_exit_code, inspect_folder

FULL = {"module.fc.weight": ("float32", (512, 512)), "module.fc.bias": ("float32", (512,)),
        "module.emb.weight": ("bfloat16", (256, 512)), "module.steps": ("int64", (6,))}
FULL_BYTES = 512 * 512 * 4 + 512 * 4 + 256 * 512 * 2 + 6 * 8


def recorded_shards():
    """{file name: (its size, its header as text)} of the recorded save."""
    lines = recorded("dcp-safetensors-headers.txt").strip().splitlines()
    out = {}
    for head, header in zip(lines[0::2], lines[1::2]):
        name, size = head.split()
        out[name] = (int(size), header)
    return out


def shard_bytes(header_text, size=None, header=None):
    """A safetensors file: the header (padded to 8 bytes, as the library pads it), then zeros up to ``size`` or the
    header's own data length."""
    raw = (json.dumps(header) if header is not None else header_text).encode()
    raw += b" " * (-len(raw) % 8)
    doc = json.loads(raw)
    data = max(e for v in doc.values() if isinstance(v, dict) and "data_offsets" in v for e in v["data_offsets"])
    body = struct.pack("<Q", len(raw)) + raw
    return body + b"\0" * ((size - len(body)) if size is not None else data)


def write_folder(folder, rename=None, drop=()):
    folder.mkdir(parents=True, exist_ok=True)
    for name, (size, header) in recorded_shards().items():
        if name in drop:
            continue
        (folder / (rename or {}).get(name, name)).write_bytes(shard_bytes(header, size))
    return folder


def test_the_recorded_files_are_as_large_as_their_headers_say():
    for name, (size, header) in recorded_shards().items():
        assert len(shard_bytes(header)) == size, name  # the zeros stand exactly where the tensors were


def test_two_ranks_shards_are_one_checkpoint_read_from_the_headers_only(tmp_path, bytes_read):
    folder = write_folder(tmp_path / "ckpt")
    r = inspect_folder(str(folder))
    assert r.layout == "dcp-safetensors" and r.world_size == 2 and r.shard_count == 2
    assert r.tensors == 4 and r.total_bytes == FULL_BYTES  # full sizes: the chunks joined at their offsets
    assert {d.dtype: d.count for d in r.dtypes} == {"float32": 2, "bfloat16": 1, "int64": 1}
    assert [(f.name, f.rank, f.tensors, f.format) for f in r.files] == [
        ("shard-00001-model-00001-of-00001.safetensors", 0, 4, "safetensors"),
        ("shard-00002-model-00001-of-00001.safetensors", 1, 4, "safetensors")]
    assert [(p.prefix, p.keys, p.of) for p in r.prefixes] == [("module.", 4, 4)]
    assert not r.missing and not r.inconsistencies and r.verdict is None  # no pickle: nothing loading runs
    assert any("HuggingFaceStorageWriter (DCP_VERSION 1.0)" in n for n in r.notes)
    assert folder_exit_code(r) == 0
    on_disk = sum(p.stat().st_size for p in folder.iterdir())
    assert 0 < bytes_read[0] < 4096 < on_disk  # the two headers, not the 1.3 MB of tensors


def test_inspect_says_the_layout_and_the_fix_command(tmp_path, cli):
    folder = write_folder(tmp_path / "ckpt")
    res = cli("checkpoint", "inspect", str(folder))
    flat = " ".join(res.out.split())
    assert res.code == 0, res.err
    assert "in the safetensors format" in flat and "world size 2, 2 files with tensors" in flat
    assert "tensors: 4, 1.3 MiB (the model's keys, full size)" in flat and "saved on: none stored (safetensors)" in flat
    assert "HuggingFaceStorageReader with dcp.load" in flat and "checkpoint fix -o" in flat and "ckpt.safetensors" in flat
    doc = json.loads(cli("checkpoint", "inspect", str(folder), "--json").out)
    assert doc["layout"] == "dcp-safetensors" and doc["world_size"] == 2 and doc["total_bytes"] == FULL_BYTES


def test_the_first_rank_lost_leaves_tensors_not_whole_and_fix_runs_nothing(tmp_path, cli):
    folder = write_folder(tmp_path / "ckpt", drop=("shard-00001-model-00001-of-00001.safetensors",))
    r = inspect_folder(str(folder))
    assert r.world_size == 1 and folder_exit_code(r) == 1
    assert r.missing == ("shard-00001-model-00001-of-00001.safetensors",)  # a gap below shard 2
    assert len(r.inconsistencies) == 1 and r.inconsistencies[0].startswith("4 tensors are not whole")
    assert "module.fc.weight 131072 of 262144" in r.inconsistencies[0]
    out = tmp_path / "one.safetensors"
    res = cli("checkpoint", "fix", str(folder), "-o", str(out), "--python", "/nonexistent/python")
    assert res.code == 2 and "shard-00001-model-00001-of-00001.safetensors): nothing was written" in " ".join(res.err.split())
    assert not out.exists()  # said before anything ran or was written


def test_a_rank_in_the_middle_lost_is_named(tmp_path, cli):
    # constructed from the recording: the second rank's file renamed to the third's, as if rank 1 of 3 were lost
    folder = write_folder(tmp_path / "ckpt", rename={"shard-00002-model-00001-of-00001.safetensors":
                                                     "shard-00003-model-00001-of-00001.safetensors"})
    r = inspect_folder(str(folder))
    assert r.missing == ("shard-00002-model-00001-of-00001.safetensors",)
    assert folder_exit_code(r) == 1
    res = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), "--python", "/nonexistent/python")
    assert res.code == 2 and "shard-00002-model-00001-of-00001.safetensors" in res.err
    assert not (tmp_path / "one.pt").exists()


def test_a_value_written_ahead_of_the_header_is_walked_and_refused(tmp_path, cli):
    # constructed from what torch 2.13's writer does with a value that is not a tensor (filesystem.py:420-467: the
    # torch.save'd bytes items first, then the safetensors bytes; seen with dcp.save({'w': ..., 'step': 7},
    # storage_writer=HuggingFaceStorageWriter(DIR, save_distributed=True), no_dist=True)): a zip, then a header
    folder = tmp_path / "ckpt"
    folder.mkdir()
    size, header = recorded_shards()["shard-00001-model-00001-of-00001.safetensors"]
    (folder / "shard-00001-model-00001-of-00001.safetensors").write_bytes(cb.torch_zip(7) + shard_bytes(header, size))
    r = inspect_folder(str(folder))
    # the archive's directory is not in the file's last 64 KiB (the tensors follow it): not read, so inconclusive
    assert r.files[0].format == "unknown" and r.verdict == "inconclusive" and folder_exit_code(r) == 4
    assert any("not a safetensors file" in p and "ahead of the safetensors header" in p for p in r.inconsistencies)
    res = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), "--python", "/nonexistent/python")
    assert res.code == 2 and "not one whole checkpoint" in " ".join(res.err.split())
    assert not (tmp_path / "one.pt").exists()
    # a small one: the archive is read, its pickle walked (fail-closed, never run), and it is still no shard
    (folder / "shard-00001-model-00001-of-00001.safetensors").write_bytes(cb.torch_zip(7) + shard_bytes(None, header={
        "__metadata__": {"DCP_SHARDING_INFO": "{}"}, "w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}))
    r = inspect_folder(str(folder))
    assert r.files[0].format != "safetensors" and r.files[0].pickles == 1 and r.verdict == "safe"
    assert any("not a safetensors file" in p for p in r.inconsistencies) and r.tensors == 0


def test_a_shard_without_sharding_info_and_a_stranger_are_problems(tmp_path):
    folder = write_folder(tmp_path / "ckpt")
    size, text = recorded_shards()["shard-00002-model-00001-of-00001.safetensors"]
    header = json.loads(text)
    del header["__metadata__"]["DCP_SHARDING_INFO"]  # constructed: the recorded header without DCP's sharding info
    (folder / "shard-00002-model-00001-of-00001.safetensors").write_bytes(shard_bytes(None, header=header))
    (folder / "model.safetensors").write_bytes(shard_bytes(None, header={"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}))
    r = inspect_folder(str(folder))
    problems = " | ".join(r.inconsistencies)
    assert "reads every .safetensors file of the folder, and these are not DCP shards: model.safetensors" in problems
    assert "shard-00002-model-00001-of-00001.safetensors: no DCP_SHARDING_INFO" in problems
    assert "chunks that overlap" in problems  # read at offset 0, rank 1's rows land on rank 0's


def test_fix_refuses_extract_on_a_flat_dict_of_tensors(tmp_path, cli):
    folder = write_folder(tmp_path / "ckpt")
    res = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), "--extract", "model")
    assert res.code == 2 and "--extract does not apply" in " ".join(res.err.split())


def test_names():
    assert hf_dcp.shard_name("shard-00002-model-00001-of-00004.safetensors") == (2, 1, 4)
    assert hf_dcp.shard_name("model-00001-of-00004.safetensors") is None
    assert hf_dcp.shard_name("shard-0000２-model-00001-of-00004.safetensors") is None  # (a fullwidth digit)
    assert L.classify(["shard-00001-model-00001-of-00001.safetensors"], []) == "dcp-safetensors"
    assert L.classify(["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"], []) == "safetensors-shards"
    lost = hf_dcp.missing_shards(["shard-00001-model-00001-of-00001.safetensors", "shard-999999999-model-00001-of-00001.safetensors"])
    assert len(lost) == 200 and lost[0] == "shard-00002-model-00001-of-00001.safetensors"  # 200 named, the loop stops


@settings(max_examples=300)
@given(st.one_of(st.text(), st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                                         lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=20)))
def test_any_sharding_info_gives_offsets_or_a_problem(value):
    raw = value if isinstance(value, str) else json.dumps(value)
    offsets, _version, problem = hf_dcp.sharding_info({"__metadata__": {"DCP_SHARDING_INFO": raw}})
    assert (offsets, problem) != (None, None)
    tensors, _problems = hf_dcp.join_shards([("a", {"k": {"dtype": "F32", "shape": [2, 2]}}, offsets)])
    assert [t.fqn for t in tensors] in ([], ["k"])


ENTRY = st.one_of(st.fixed_dictionaries({"dtype": st.sampled_from(["F32", "I64", 3]),
                                          "shape": st.lists(st.integers(-2, 5), max_size=3)}), st.integers())
OFFSETS = st.dictionaries(st.text(max_size=8), st.lists(st.integers(0, 9), max_size=3).map(tuple), max_size=6)


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=8), ENTRY, max_size=6), OFFSETS)
def test_any_header_and_offsets_join_without_a_crash(header, offsets):
    tensors, problems = hf_dcp.join_shards([("a", header, offsets), ("b", header, None)])
    assert all(t.held >= 0 and all(d >= 0 for d in t.size) for t in tensors)
    assert isinstance(problems, list)


def _offsets_entry_by_entry(doc):
    """The reference: each entry on its own (a dict whose saved_offsets is a list of naturals), as sharding_info reads
    a shard whose entries are not all whole."""
    out, bad = {}, 0
    for key, value in doc.items():
        offs = value.get("saved_offsets") if type(value) is dict else None
        if type(offs) is list and all(type(v) is int and v >= 0 for v in offs):
            out[key] = tuple(offs)
        else:
            bad += 1
    return out, bad


GOOD = st.fixed_dictionaries({"saved_offsets": st.lists(st.integers(0, 9), max_size=3)})
ODD = st.one_of(GOOD, st.fixed_dictionaries({"saved_offsets": st.lists(st.one_of(st.integers(-2, 3), st.booleans(),
                                                                              st.floats(0, 2)), max_size=3)}),
                st.dictionaries(st.sampled_from(["x", "saved_offsets"]), st.integers()), st.integers(), st.lists(st.integers()))


@settings(max_examples=300)
@given(st.one_of(st.dictionaries(st.text(max_size=6), GOOD, max_size=8), st.dictionaries(st.text(max_size=6), ODD, max_size=8)))
def test_sharding_info_read_at_once_equals_entry_by_entry(doc):
    """The fast path (every entry checked in C at once) gives what the entry-by-entry reading gives, and its problem
    counts the same entries."""
    offsets, _version, problem = hf_dcp.sharding_info({"__metadata__": {"DCP_SHARDING_INFO": json.dumps(doc)}})
    want, bad = _offsets_entry_by_entry(doc)
    assert offsets == want
    assert (problem is None) == (bad == 0) and (bad == 0 or problem.startswith("%d " % bad))


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=8), ENTRY, max_size=6), OFFSETS)
def test_join_with_shapes_checked_at_once_equals_each_checked_on_its_own(header, offsets):
    """A shard whose shapes are all lists of naturals (checked at once) joins as when one odd shape makes each be
    checked on its own: the odd entry only is left out."""
    whole = {k: v for k, v in header.items() if isinstance(v, dict) and all(type(d) is int and d >= 0 for d in v["shape"])}
    with_odd = dict(whole, **{"an odd shape": {"dtype": "F32", "shape": [-1]}})  # (longer than any key drawn)
    a, pa = hf_dcp.join_shards([("a", whole, offsets), ("b", whole, None)])
    b, pb = hf_dcp.join_shards([("a", with_odd, offsets), ("b", with_odd, None)])
    assert [(t.fqn, t.dtype, t.size, t.chunks, t.held) for t in a] == [(t.fqn, t.dtype, t.size, t.chunks, t.held) for t in b]
    assert pa == pb
