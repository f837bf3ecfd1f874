"""`cudaenv checkpoint inspect FOLDER` (issue 32): checkpoint folders built without torch (tests/checkpoint_builders.py:
sharded safetensors and torch zips with a Hugging Face index, a DeepSpeed ZeRO folder laid out as DeepSpeed's own
zero_to_fp32.py and tests/unit/checkpoint/test_reshape_checkpoint.py name its files, a DCP .metadata that is not
DCP's). The real torch and safetensors writers are in test_checkpoint_folder_torch.py. Tensor bytes are never read:
the bytes read are counted."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import checkpoint_builders as cb
from builders import recorded
from cudaenv.checkpoint import layout as L
from cudaenv.checkpoint.folder import folder_exit_code, inspect_folder
from cudaenv.checkpoint.report import VisibleGpus

MiB = 1024 * 1024


def write_index(folder, name, weight_map, total_size=None):
    doc = {"metadata": {"total_size": total_size if total_size is not None else 0}, "weight_map": weight_map}
    (folder / name).write_text(json.dumps(doc))


def st_shards(tmp_path, big=4 * MiB, prefix="module."):
    """Two safetensors shards of a 4-tensor model (keys with ``prefix``) and their index."""
    folder = tmp_path / "hf"
    folder.mkdir()
    one = {prefix + "a.weight": ("F32", (big // 4,), big), prefix + "a.bias": ("BF16", (4,), 8)}
    two = {prefix + "b.weight": ("F32", (big // 4,), big), prefix + "b.bias": ("F16", (4,), 8)}
    (folder / "model-00001-of-00002.safetensors").write_bytes(cb.safetensors_file(one, {"format": "pt"}))
    (folder / "model-00002-of-00002.safetensors").write_bytes(cb.safetensors_file(two, {"format": "pt"}))
    wmap = {k: "model-00001-of-00002.safetensors" for k in one}
    wmap.update({k: "model-00002-of-00002.safetensors" for k in two})
    write_index(folder, "model.safetensors.index.json", wmap, 2 * big + 16)
    return folder, wmap


def test_sharded_safetensors_with_an_index_is_read_from_the_headers_only(tmp_path, bytes_read):
    folder, wmap = st_shards(tmp_path)
    r = inspect_folder(str(folder))
    assert r.layout == "safetensors-shards" and r.index == "model.safetensors.index.json"
    assert r.shard_count == 2 and r.tensors == 4 and r.total_bytes == 2 * 4 * MiB + 16
    assert {d.dtype: d.count for d in r.dtypes} == {"float32": 2, "bfloat16": 1, "float16": 1}
    assert [(f.name, f.tensors, f.listed, f.verdict) for f in r.files] == [
        ("model-00001-of-00002.safetensors", 2, 2, None), ("model-00002-of-00002.safetensors", 2, 2, None)]
    assert [(p.prefix, p.keys, p.of) for p in r.prefixes] == [("module.", 4, 4)]
    assert r.verdict is None and r.weights_only is None  # no pickle in it: nothing that loading runs
    assert not r.missing and not r.unlisted and not r.inconsistencies
    assert folder_exit_code(r) == 0
    on_disk = sum(p.stat().st_size for p in folder.iterdir())
    assert 0 < bytes_read[0] < 4096 < on_disk  # the two headers, not the 8 MiB of tensors


def test_the_index_names_a_missing_shard_and_a_leftover_is_unlisted(tmp_path, cli):
    folder, wmap = st_shards(tmp_path, big=64)
    wmap["module.c.weight"] = "model-00003-of-00003.safetensors"
    write_index(folder, "model.safetensors.index.json", wmap)
    (folder / "model-old.safetensors").write_bytes(cb.safetensors_file({"x": ("F32", (1,), 4)}))
    r = inspect_folder(str(folder / "model.safetensors.index.json"))
    assert r.missing == ("model-00003-of-00003.safetensors",) and r.unlisted == ("model-old.safetensors",)
    assert folder_exit_code(r) == 1
    res = cli("checkpoint", "inspect", str(folder))
    assert res.code == 1, res.err
    flat = " ".join(res.out.split())
    assert "MISSING: model-00003-of-00003.safetensors is named but not in the folder" in flat
    assert "unlisted: model-old.safetensors" in flat and "world size" not in flat and "2 files with tensors" in flat


def test_keys_the_index_misplaces_and_keys_in_two_shards_are_problems(tmp_path):
    folder, wmap = st_shards(tmp_path, big=64)
    wmap["module.a.bias"] = "model-00002-of-00002.safetensors"
    write_index(folder, "model.safetensors.index.json", wmap)
    (folder / "model-00002-of-00002.safetensors").write_bytes(cb.safetensors_file(
        {"module.b.weight": ("F32", (16,), 64), "module.b.bias": ("F16", (4,), 8), "module.a.weight": ("F32", (16,), 64)}))
    r = inspect_folder(str(folder))
    text = " | ".join(r.inconsistencies)
    assert "1 keys are in more than one shard (the last loaded wins): module.a.weight" in text
    assert "1 keys the index places in a shard are not in it: module.a.bias" in text
    assert folder_exit_code(r) == 1


def test_an_index_that_points_outside_the_folder_is_not_followed(tmp_path, bytes_read):
    folder, wmap = st_shards(tmp_path, big=64)
    secret = tmp_path / "secret.safetensors"
    secret.write_bytes(cb.safetensors_file({"x": ("F32", (1,), 4)}))
    wmap["x"] = "../secret.safetensors"
    write_index(folder, "model.safetensors.index.json", wmap)
    r = inspect_folder(str(folder))
    assert any("names a shard outside the folder: ../secret.safetensors" in p for p in r.inconsistencies)
    assert all("secret" not in f.name for f in r.files)


def test_bin_shards_merge_devices_and_prefixes_and_the_worst_verdict_wins(tmp_path, cli):
    folder = tmp_path / "bin"
    folder.mkdir()
    sd = cb.cnn("cuda:1", prefix="module.")
    items = list(sd.items())
    one = cb.state_dict(items[:3])
    two = cb.state_dict(items[3:])
    (folder / "pytorch_model-00001-of-00002.bin").write_bytes(cb.torch_zip(one, prefix="pytorch_model-00001-of-00002"))
    (folder / "pytorch_model-00002-of-00002.bin").write_bytes(cb.torch_zip(two, prefix="pytorch_model-00002-of-00002"))
    wmap = {k: "pytorch_model-00001-of-00002.bin" for k, _ in items[:3]}
    wmap.update({k: "pytorch_model-00002-of-00002.bin" for k, _ in items[3:]})
    write_index(folder, "pytorch_model.bin.index.json", wmap)
    r = inspect_folder(str(folder), VisibleGpus(1, ("cuda:0",)))
    assert r.layout == "bin-shards" and r.shard_count == 2 and r.tensors == 6
    assert {(d.device, d.count) for d in r.devices} == {("cuda:1", 6)}
    assert [(p.prefix, p.keys, p.of) for p in r.prefixes] == [("module.", 6, 6)]
    assert r.verdict == "safe" and r.weights_only is True
    assert folder_exit_code(r) == 1  # cuda:1 on a machine with one GPU: a device to map
    # one shard that runs code makes the whole folder unsafe (exit 3), and says which file
    evil = cb.state_dict(items[3:] + [("x", cb.Reduce(cb.glob("os", "system"), ("touch pwned",)))])
    (folder / "pytorch_model-00002-of-00002.bin").write_bytes(cb.torch_zip(evil, prefix="pytorch_model-00002-of-00002"))
    r = inspect_folder(str(folder))
    assert r.verdict == "unsafe" and folder_exit_code(r) == 3 and r.weights_only is False
    assert [f.verdict for f in r.files] == ["safe", "unsafe"]
    assert any(v.where.startswith("pytorch_model-00002-of-00002.bin: ") and "os.system" in v.why for v in r.verdict_reasons)
    res = cli("checkpoint", "inspect", str(folder / "pytorch_model.bin.index.json"))
    assert res.code == 3 and "UNSAFE" in res.out and not (tmp_path / "pwned").exists()


def test_one_inconclusive_file_makes_the_folder_inconclusive():
    assert L.worst(["safe", "inconclusive", "safe"]) == "inconclusive"
    assert L.worst(["safe", "inconclusive", "unsafe"]) == "unsafe"
    assert L.worst([None, "safe"]) == "safe" and L.worst([None]) is None
    assert L.worst(["safe", "something new"]) == "inconclusive"  # an unknown verdict fails closed


def recorded_zero_layout(stage):
    """The files of a real DeepSpeed 0.19.8 ZeRO checkpoint (tests/recorded/deepspeed-zero-layouts.txt: two gloo
    ranks on CPU), and the DeepSpeed globals its optimizer states name."""
    files, globals_ = [], []
    block = None
    for line in recorded("deepspeed-zero-layouts.txt").splitlines():
        if line.startswith("== stage "):
            block = int(line.split()[-1])
        elif block == stage and line.startswith("optim global: "):
            globals_.append(line[len("optim global: "):].split())
        elif block == stage and " " in line and not line.startswith("latest:"):
            files.append(line.split()[0])
    return files, globals_


def zero_folder(tmp_path, stage=2, drop=(), partition_count=2):
    """A DeepSpeed ZeRO folder with the file names of a real DeepSpeed 0.19.8 save (recorded_zero_layout), each
    .pt built as DeepSpeed writes it (model states: {module: state_dict, buffer_names, param_shapes, ds_version};
    optimizer states: {optimizer_state_dict: {loss_scaler: LossScaler(...), zero_stage: ZeroStageEnum(stage),
    partition_count, ...}}, the DeepSpeed classes named, never imported), the scripts as stand-ins that are never run.
    ``drop``: file names left out."""
    files, ds_globals = recorded_zero_layout(stage)

    def optimizer(name):
        return stage, partition_count, str(100 + int(name.split("zero_pp_rank_")[1].split("_")[0]))

    return cb.zero_files(tmp_path / "ds", files, ds_globals, drop, optim_facts=optimizer)


def test_a_zero_folder_says_stage_world_size_and_which_files_hold_what(tmp_path, cli):
    top = zero_folder(tmp_path)
    r = inspect_folder(str(top))
    assert r.layout == "deepspeed-zero" and r.tag == "global_step1" and r.zero_stage == 2 and r.world_size == 2
    assert r.model_files == ("global_step1/mp_rank_00_model_states.pt",)
    assert r.optimizer_files == ("global_step1/zero_pp_rank_0_mp_rank_00_optim_states.pt",
                                 "global_step1/zero_pp_rank_1_mp_rank_00_optim_states.pt")
    assert [(f.role, f.rank) for f in r.files] == [("script", None), ("model", None), ("optimizer", 0), ("optimizer", 1)]
    assert r.tensors == 6 and not r.missing and {d.dtype: d.count for d in r.dtypes} == {"float32": 6}
    # the optimizer states name DeepSpeed's own classes: torch.load(weights_only=False) imports them
    assert r.verdict == "unsafe" and [f.verdict for f in r.files[1:]] == ["safe", "unsafe", "unsafe"]
    assert any("deepspeed.runtime.fp16.loss_scaler.LossScaler" in v.why for v in r.verdict_reasons)
    res = cli("checkpoint", "inspect", str(top))
    flat = " ".join(res.out.split())
    assert res.code == 3 and "world size 2, ZeRO stage 2" in flat
    assert "zero_to_fp32.py: script shipped with the checkpoint" in flat
    assert "code shipped with the checkpoint" in flat and "--trust" in flat


def test_a_stage_3_zero_folder_has_model_states_per_rank(tmp_path):
    r = inspect_folder(str(zero_folder(tmp_path, stage=3)))
    assert r.zero_stage == 3 and r.world_size == 2 and len(r.model_files) == 2 and r.tensors == 6


def test_a_zero_folder_missing_a_rank_names_the_file(tmp_path):
    top = zero_folder(tmp_path, drop=("global_step1/zero_pp_rank_1_mp_rank_00_optim_states.pt",))
    r = inspect_folder(str(top / "global_step1"))
    assert r.world_size == 2 and r.tag is None
    assert r.missing == ("zero_pp_rank_1_mp_rank_00_optim_states.pt",) and folder_exit_code(r) == 3  # (unsafe first)


def test_a_dcp_metadata_that_runs_code_is_unsafe_and_never_run(tmp_path, cli):
    folder = tmp_path / "dcp"
    folder.mkdir()
    (folder / ".metadata").write_bytes(cb.dumps(cb.Reduce(cb.glob("os", "system"), ("touch %s" % (tmp_path / "pwned"),)), 4))
    (folder / "__0_0.distcp").write_bytes(b"\0" * 64)
    r = inspect_folder(str(folder))
    assert r.layout == "dcp" and r.verdict == "unsafe" and folder_exit_code(r) == 3
    assert any(v.where.startswith(".metadata: ") and "os.system" in v.why for v in r.verdict_reasons)
    res = cli("checkpoint", "inspect", str(folder / ".metadata"))
    assert res.code == 3 and not (tmp_path / "pwned").exists()


def test_layout_names():
    assert L.classify([".metadata", "__0_0.distcp", "__1_0.distcp"], []) == "dcp"
    assert L.classify(["latest", "zero_to_fp32.py"], ["global_step5"]) == "deepspeed-zero"
    assert L.classify(["model.safetensors.index.json", "model-00001-of-00002.safetensors"], []) == "safetensors-shards"
    assert L.classify(["pytorch_model.bin.index.json"], []) == "bin-shards"
    assert L.classify(["notes.txt"], []) == "unknown"
    assert L.dcp_rank("__12_3.distcp") == 12 and L.dcp_rank("x.distcp") is None and L.dcp_rank("__a_0.distcp") is None
    assert L.zero_rank("bf16_zero_pp_rank_7_mp_rank_00_optim_states.pt") == 7
    assert L.pick_tag(None, ["global_step9", "global_step10", "other"]) == "global_step10"
    assert L.pick_tag("global_step9", ["global_step9", "global_step10"]) == "global_step9"
    assert L.parse_index(b"[1]")[0] is None and L.parse_index(b"\xff")[2].startswith("the index is not JSON")


# ------------------------------------------------------------------ checkpoint fix FOLDER -o OUT
def st_bytes(tensors, metadata=None):
    """A safetensors file whose tensor bytes differ per tensor (cb.safetensors_file writes zeros)."""
    data = bytearray(cb.safetensors_file(tensors, metadata))
    start = len(data) - sum(size for _, _, size in tensors.values())
    for i in range(start, len(data)):
        data[i] = (i * 7 + 3) % 251
    return bytes(data)


def header_and_data(path):
    import struct

    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def test_fix_merges_safetensors_shards_without_torch_and_strips_in_the_same_pass(tmp_path, cli):
    folder = tmp_path / "hf"
    folder.mkdir()
    one = {"_orig_mod.module.a.weight": ("F32", (4, 4), 64), "_orig_mod.module.a.bias": ("BF16", (4,), 8)}
    two = {"_orig_mod.module.b.weight": ("F16", (8,), 16)}
    (folder / "model-00001-of-00002.safetensors").write_bytes(st_bytes(one, {"format": "pt"}))
    (folder / "model-00002-of-00002.safetensors").write_bytes(st_bytes(two, {"format": "pt"}))
    wmap = {k: "model-00001-of-00002.safetensors" for k in one}
    wmap.update({k: "model-00002-of-00002.safetensors" for k in two})
    write_index(folder, "model.safetensors.index.json", wmap)
    out = tmp_path / "one.safetensors"
    res = cli("checkpoint", "fix", str(folder), "-o", str(out), "--strip-prefix", "_orig_mod.", "--strip-prefix", "module.")
    assert res.code == 0, res.err
    header, data = header_and_data(out)
    assert header["__metadata__"] == {"format": "pt"}
    assert {k: (v["dtype"], v["shape"]) for k, v in header.items() if k != "__metadata__"} == {
        "a.weight": ("F32", [4, 4]), "a.bias": ("BF16", [4]), "b.weight": ("F16", [8])}
    for shard, tensors in (("model-00001-of-00002.safetensors", one), ("model-00002-of-00002.safetensors", two)):
        src_header, src_data = header_and_data(folder / shard)
        for key in tensors:
            b, e = src_header[key]["data_offsets"]
            nb, ne = header[key[len("_orig_mod.module."):]]["data_offsets"]
            assert data[nb:ne] == src_data[b:e]  # every tensor's bytes copied from its shard's byte range
    assert "merged without torch" in res.out and "stripped _orig_mod. then module. from 3 keys" in " ".join(res.out.split())


def test_fix_of_a_folder_says_what_is_wrong_before_writing(tmp_path, cli, monkeypatch):
    folder, wmap = st_shards(tmp_path, big=64)
    out = tmp_path / "one.safetensors"
    # --to pt with a .safetensors OUT, two keys that would get one name: usage errors, nothing written
    assert cli("checkpoint", "fix", str(folder), "-o", str(out), "--to", "pt").code == 2 and not out.exists()
    (folder / "model-00002-of-00002.safetensors").write_bytes(cb.safetensors_file({"a.weight": ("F32", (16,), 64),
                                                                                   "module.b.bias": ("F16", (4,), 8)}))
    write_index(folder, "model.safetensors.index.json", {"module.a.weight": "model-00001-of-00002.safetensors",
                                                         "module.a.bias": "model-00001-of-00002.safetensors",
                                                         "a.weight": "model-00002-of-00002.safetensors",
                                                         "module.b.bias": "model-00002-of-00002.safetensors"})
    res = cli("checkpoint", "fix", str(folder), "-o", str(out), "--strip-prefix", "module.")
    assert res.code == 2 and "two tensors would be named a.weight" in " ".join(res.err.split()) and not out.exists()
    # too little free space: said before a byte is written (exit 1)
    import collections
    import shutil

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10, 10, 100))
    res = cli("checkpoint", "fix", str(folder), "-o", str(out))
    assert res.code == 1 and "100 bytes free" in " ".join(res.err.split()) and not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".cudaenv-tmp")]
    # a shard the index names is missing: nothing is written (exit 2)
    monkeypatch.undo()
    (folder / "model-00002-of-00002.safetensors").unlink()
    res = cli("checkpoint", "fix", str(folder), "-o", str(out))
    assert res.code == 2 and "is missing (model-00002-of-00002.safetensors)" in " ".join(res.err.split()) and not out.exists()


def test_fix_of_a_zero_folder_runs_its_script_only_with_trust(tmp_path, cli):
    top = zero_folder(tmp_path)
    res = cli("checkpoint", "fix", str(top), "-o", str(tmp_path / "fp32.pt"))
    err = " ".join(res.err.split())
    assert res.code == 2 and "code shipped with the checkpoint" in err and "--trust" in err
    assert not (tmp_path / "fp32.pt").exists()
    res = cli("checkpoint", "fix", str(top), "--in-place")
    assert res.code == 2 and "-o OUT" in " ".join(res.err.split())


# ------------------------------------------------------------------ DCP built without torch; property tests
DCP = "torch.distributed.checkpoint.metadata"


def dcp_metadata(items, tensors=(), protocol=4, transforms=None, planner_data=None):
    """A DCP ``.metadata`` pickle as torch 2.13's writer makes it (dataclasses: the class called, then BUILD with
    their fields; TensorProperties' state a tuple, dtype first), from stand-in globals (never imported).
    ``items``: (fqn, file, offset, length); ``tensors``: (fqn, dtype name, size); ``transforms``: fqn -> its
    transform_descriptors (left out of _StorageInfo's fields otherwise, as torch writes None)."""
    def obj(module, name, state):
        return cb.Reduce(cb.glob(module, name), (), state)

    sdm = {}
    for fqn, dtype, size in tensors:
        props = obj(DCP, "TensorProperties", (cb.glob("torch", dtype), None, False, None, False))
        sdm[fqn] = obj(DCP, "TensorStorageMetadata", {"properties": props, "size": cb.Reduce(cb.glob("torch", "Size"), (tuple(size),)),
                                                      "chunks": []})
    storage = {obj(DCP, "MetadataIndex", {"fqn": fqn, "offset": None, "index": i}):
               obj("torch.distributed.checkpoint.filesystem", "_StorageInfo", dict(
                   {"relative_path": f, "offset": o, "length": n},
                   **({"transform_descriptors": (transforms or {})[fqn]} if fqn in (transforms or {}) else {})))
               for i, (fqn, f, o, n) in enumerate(items)}
    return cb.dumps(obj(DCP, "Metadata", {"state_dict_metadata": sdm, "planner_data": planner_data,
                                          "storage_data": storage, "storage_meta": None, "version": "1.0.0"}), protocol)


def test_a_dcp_folder_built_without_torch_and_a_range_named_many_times_is_walked_once(tmp_path, cli):
    folder = tmp_path / "dcp"
    folder.mkdir()
    item = cb.torch_zip(cb.Tensor(cb.Storage("0", 16), (4, 4)), prefix="archive")
    (folder / "__0_0.distcp").write_bytes(item)
    many = [("model.module.w", "__0_0.distcp", 0, len(item))] + [("model.module.w%d" % i, "__0_0.distcp", 0, len(item))
                                                                for i in range(20_000)]
    (folder / ".metadata").write_bytes(dcp_metadata(many, [("model.module.w", "float32", (4, 4))]))
    r = inspect_folder(str(folder))
    assert r.layout == "dcp" and r.world_size == 1 and r.tensors == 1 and r.total_bytes == 64
    assert {d.dtype: d.count for d in r.dtypes} == {"float32": 1}
    assert [(p.container, p.prefix) for p in r.prefixes] == [("model", "module.")]
    data = {f.name: f for f in r.files}["__0_0.distcp"]
    assert data.pickles == 1 and data.verdict == "safe" and data.weights_only is True
    assert {f.name: f.verdict for f in r.files}[".metadata"] == "safe" and folder_exit_code(r) == 0
    res = cli("checkpoint", "inspect", str(folder / ".metadata"))  # DCP's .metadata stands for its folder
    assert res.code == 0 and "fix -o %s.pt -- %s/.metadata" % (folder, folder) in " ".join(res.out.split()).replace("\\ ", "")


def test_a_dcp_item_outside_its_file_or_folder_is_named_and_not_read(tmp_path):
    folder = tmp_path / "dcp"
    folder.mkdir()
    (folder / "__0_0.distcp").write_bytes(b"\0" * 100)
    (folder / ".metadata").write_bytes(dcp_metadata([("w", "__0_0.distcp", 50, 1000), ("v", "../../etc/passwd", 0, 10)]))
    r = inspect_folder(str(folder))
    assert r.verdict == "inconclusive" and folder_exit_code(r) == 4
    assert any("lies outside the 100-byte file" in p for p in r.inconsistencies)
    assert any("outside the folder: ../../etc/passwd" in p for p in r.inconsistencies)


def test_dcp_transforms_are_read_from_the_metadata_and_said_before_anything_is_written(tmp_path, cli):
    """A compressed item (stream.zstd/1, torch's own extension) is named with what torch needs to read it and is not
    walked (inconclusive); an item through an extension torch does not know is a problem, and fix refuses the folder
    before it runs anything; planner_data that is not the default planner's key -> path map is named."""
    folder = tmp_path / "dcp"
    folder.mkdir()
    item = cb.torch_zip(cb.Tensor(cb.Storage("0", 16), (4, 4)), prefix="archive")
    (folder / "__0_0.distcp").write_bytes(item + item)
    items = [("w", "__0_0.distcp", 0, len(item)), ("v", "__0_0.distcp", len(item), len(item))]
    tensors = [("w", "float32", (4, 4)), ("v", "float32", (4, 4))]
    (folder / ".metadata").write_bytes(dcp_metadata(items, tensors, transforms={"w": ["stream.zstd/1"]},
                                                    planner_data={"w": ("w",), "v": ("v",)}))
    r = inspect_folder(str(folder))
    assert r.transforms == ("stream.zstd/1",) and r.unreadable_transforms == () and r.verdict == "inconclusive"
    assert any("1 items are stored through stream.zstd/1 (compressed): torch reads them only with the zstandard or "
               "pyzstd module" in n for n in r.notes)
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language, tr

    set_language(CHINESE)  # what reading it needs is the table's words, said in the reader's language too
    try:
        said = [tr(n) for n in r.notes]  # (exact: the table's Chinese words take no blanks beside them; a colon and
        # a full-width semicolon set the value apart, so an untranslated, English value would read right too)
        assert "1 个条目经由 stream.zstd/1 保存（压缩过）：torch 读取它们需要：读取它的 Python 里的 zstandard 或 pyzstd " \
               "模块；cudaenv 不解压任何东西，所以没有遍历它们的字节" in said, said
    finally:
        set_language(ENGLISH)
    assert any(v.why == "stored through stream.zstd/1: its bytes are transformed, not walked" for v in r.verdict_reasons)
    data = {f.name: f for f in r.files}["__0_0.distcp"]
    assert data.pickles == 1 and data.tensors == 2  # v walked, w not
    res = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), "--python", "/nonexistent/python")
    assert res.code == 2 and "transformed, not walked" in " ".join(res.err.split()) and not (tmp_path / "one.pt").exists()
    # an extension torch does not know (or a version it does not), and a planner's own planner_data
    planner = cb.Reduce(cb.glob("my.planner", "Plan"), ())
    (folder / ".metadata").write_bytes(dcp_metadata(items, tensors, transforms={"w": ["my.crypt/1"], "v": ["stream.zstd/2"]},
                                                    planner_data=planner))
    r = inspect_folder(str(folder))
    assert r.unreadable_transforms == ("my.crypt/1", "stream.zstd/2")
    text = " | ".join(r.inconsistencies)
    assert "1 items are stored through the transform my.crypt/1, which torch's DCP reader does not know" in text
    assert "planner_data is not the default planner's key -> path map (my.planner.Plan)" in text
    for extra in ((), ("--trust",)):
        res = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), *extra, "--python", "/nonexistent/python")
        err = " ".join(res.err.split())
        assert res.code == 2 and "my.crypt/1, stream.zstd/2, which torch's DCP reader does not know" in err, res.err
    res = cli("checkpoint", "inspect", str(folder))
    # (the planner's own class is a global outside DCP's: the .metadata is unsafe, exit 3)
    assert res.code == 3 and "cannot be read by torch's DCP reader" in " ".join(res.out.split())
    assert L.transform_support("stream.zstd/1.3", {"stream.zstd": ("1", "zstd")}) == "zstd"
    assert L.transform_support("stream.zstd", {"stream.zstd": ("1", "zstd")}) is None


def test_fix_of_a_zstd_dcp_folder_says_the_missing_module_before_torch_runs(tmp_path, cli):
    """stream.zstd/1 items need zstandard or pyzstd in the Python that converts them (torch raises at the first such
    item otherwise): with --trust, the child checks the modules before it imports torch, and fix says which are
    missing and where; nothing is written. This suite's own Python has neither (nor torch: it is never reached)."""
    import importlib.util
    import sys

    if any(importlib.util.find_spec(m) is not None for m in ("zstandard", "pyzstd")):
        pytest.skip("this Python has zstandard or pyzstd")
    folder = tmp_path / "dcp"
    folder.mkdir()
    item = cb.torch_zip(cb.Tensor(cb.Storage("0", 16), (4, 4)), prefix="archive")
    (folder / "__0_0.distcp").write_bytes(item)
    (folder / ".metadata").write_bytes(dcp_metadata([("w", "__0_0.distcp", 0, len(item))], [("w", "float32", (4, 4))],
                                                    transforms={"w": ["stream.zstd/1"]}))
    assert L.transform_modules(("stream.zstd/1", "stream.zstd/2", "my.crypt/1")) == [["stream.zstd/1", ["zstandard", "pyzstd"]]]
    res = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), "--trust", "--python", sys.executable)
    err = " ".join(res.err.split())
    assert res.code == 2 and "stream.zstd/1, which torch reads only with the zstandard or pyzstd module" in err, res.err
    assert sys.executable in err and "-m pip install zstandard" in err
    assert not (tmp_path / "one.pt").exists() and "torch could not" not in err


@settings(max_examples=200)
@given(st.binary(max_size=600))
def test_any_index_bytes_give_a_map_or_a_problem(raw):
    wmap, total, problem = L.parse_index(raw)
    assert wmap is None or isinstance(wmap, dict)
    assert wmap is not None or problem


@settings(max_examples=200)
@given(st.binary(max_size=800))
def test_any_pickle_read_as_dcp_metadata_never_crashes(raw):
    from cudaenv.checkpoint import pickle_vm

    meta = L.parse_dcp_metadata(pickle_vm.walk(raw).root)
    assert isinstance(meta.items, list) and isinstance(meta.tensors, list)


@given(st.text(max_size=60))
def test_any_name_has_a_layout_and_a_rank_or_none(name):
    assert L.classify([name], []) in ("dcp", "deepspeed-zero", "safetensors-shards", "bin-shards", "unknown")
    assert L.dcp_rank(name) is None or L.dcp_rank(name) >= 0
    assert L.zero_rank(name) is None or L.zero_rank(name) >= 0
    assert L.zero_mp_rank(name) is None or L.zero_mp_rank(name) >= 0
    assert L.transform_support(name, {"stream.zstd": ("1", "zstd")}) in (None, "zstd")


def test_bin_shards_of_big_tensors_are_read_without_their_bytes(tmp_path, bytes_read):
    folder = tmp_path / "bin"
    folder.mkdir()
    for s in range(2):
        items = [("w%d.%d" % (s, i), cb.Tensor(cb.Storage(str(i), 256 * 1024), (256 * 1024,))) for i in range(2)]
        (folder / ("pytorch_model-%05d-of-00002.bin" % (s + 1))).write_bytes(cb.torch_zip(cb.state_dict(items), prefix="p%d" % s))
    r = inspect_folder(str(folder))
    assert r.layout == "bin-shards" and r.tensors == 4 and r.total_bytes == 4 * MiB and r.verdict == "safe"
    assert bytes_read[0] < 64 * 1024  # per file: its end, directory, data.pkl and 30 bytes per record header
