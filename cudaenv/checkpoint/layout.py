"""Checkpoint folders (issue 32): which kind of multi-file checkpoint a folder holds, from its file names, and what
its small descriptor files say. Pure: names and already-read bytes or walked pickles in, values out.

* **DCP** (``torch.distributed.checkpoint``, FSDP's sharded state dict): ``.metadata`` (a pickle of
  ``Metadata``, read by DCP with a plain ``pickle.load``) and ``__{rank}_{n}.distcp`` files, each a run of items,
  every item a whole ``torch.save`` archive at the offset ``.metadata``'s ``storage_data`` gives.
* **DeepSpeed ZeRO**: ``latest`` (the tag), ``global_step*/`` with ``mp_rank_00_model_states.pt`` (stages 0-2) or
  ``zero_pp_rank_{r}_mp_rank_00_model_states.pt`` (stage 3, one per rank) and ``*_optim_states.pt`` (one per
  data-parallel rank; their ``optimizer_state_dict`` holds ``zero_stage`` and ``partition_count``), and
  ``zero_to_fp32.py``, the script DeepSpeed copies beside them. With model (tensor) parallelism every
  ``mp_rank_{mp:02d}`` has its own model states and optimizer files, each model states file saying
  ``dp_world_size`` and ``mp_world_size``; zero_to_fp32.py reads mp_rank_00 only (it does not merge them).
* **sharded Hugging Face** checkpoints: ``model.safetensors.index.json`` or ``pytorch_model.bin.index.json``, whose
  ``weight_map`` names the shard of every key.

The names and their sources are rows of ``data/checkpoint_layouts.json`` (DCP in the safetensors format:
:mod:`cudaenv.checkpoint.hf_dcp`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from cudaenv.checkpoint.graph import pairs_of
from cudaenv.checkpoint.nodes import Call, Global, SDict, SList
from cudaenv.core.i18n import M, filled_message

DCP_METADATA = ".metadata"
DCP_SUFFIX = ".distcp"
ZERO_LATEST = "latest"
ZERO_SCRIPT = "zero_to_fp32.py"
INDEX_SUFFIXES = (".safetensors.index.json", ".bin.index.json")
MAX_INDEX = 64 * 1024 * 1024  # the largest index JSON read (a 400B model's is a few MB)
ORDER = {"unsafe": 3, "inconclusive": 2, "safe": 1, None: 0}  # the worst verdict of a folder's files wins


def worst(verdicts) -> Optional[str]:
    """The folder's verdict: the worst of its files' (unsafe > inconclusive > safe); None when no file has one."""
    out = None
    for v in verdicts:
        if ORDER.get(v, 2) > ORDER[out]:
            out = v if v in ORDER else "inconclusive"
    return out


def classify(names: Sequence[str], folders: Sequence[str]) -> str:
    """The layout of a folder from the names of its regular files and of its subfolders: ``dcp``,
    ``deepspeed-zero``, ``dcp-safetensors`` (:mod:`cudaenv.checkpoint.hf_dcp`), ``safetensors-shards``,
    ``bin-shards`` or ``unknown``."""
    from cudaenv.checkpoint.hf_dcp import shard_name

    files = set(names)
    if DCP_METADATA in files and any(n.endswith(DCP_SUFFIX) for n in files):
        return "dcp"
    if any(n.endswith(DCP_SUFFIX) for n in files):
        return "dcp"
    if (ZERO_LATEST in files and folders) or ZERO_SCRIPT in files or any(is_zero_file(n) for n in files):
        return "deepspeed-zero"
    if any(shard_name(n) is not None for n in files):
        return "dcp-safetensors"
    if any(n.endswith(INDEX_SUFFIXES[0]) for n in files):
        return "safetensors-shards"
    if any(n.endswith(INDEX_SUFFIXES[1]) for n in files):
        return "bin-shards"
    if sum(1 for n in files if n.endswith(".safetensors")) > 1:
        return "safetensors-shards"
    if sum(1 for n in files if n.endswith(".bin")) > 1:
        return "bin-shards"
    return "unknown"


def index_layout(name: str) -> str:
    return "safetensors-shards" if name.endswith(INDEX_SUFFIXES[0]) else "bin-shards"


# ------------------------------------------------------------------ DCP
def dcp_rank(name: str) -> Optional[int]:
    """The rank of ``__{rank}_{n}.distcp`` (T:distributed/checkpoint/filesystem.py:666-673 and 690), None for
    another name."""
    if not (name.startswith("__") and name.endswith(DCP_SUFFIX)):
        return None
    rank, sep, rest = name[2:-len(DCP_SUFFIX)].partition("_")
    return int(rank) if sep and rank.isdigit() and rest.isdigit() else None


class DcpItem:
    """One item of a DCP checkpoint: which key (``fqn``), where its ``torch.save`` archive is, and whether DCP loads
    it as a tensor (``torch.load(weights_only=True)``) or as bytes (``torch.load(weights_only=False)``)."""

    __slots__ = ("fqn", "file", "offset", "length", "tensor", "transforms")

    def __init__(self, fqn: str, file: str, offset: int, length: int, tensor: bool, transforms: Tuple[str, ...] = ()):
        self.fqn, self.file, self.offset, self.length, self.tensor = fqn, file, offset, length, tensor
        self.transforms = transforms  # the _StorageInfo's transform_descriptors (stream.zstd/1, ...), in order


class DcpTensor:
    __slots__ = ("fqn", "dtype", "size", "chunks")

    def __init__(self, fqn: str, dtype: Optional[str], size: Tuple[int, ...], chunks: int):
        self.fqn, self.dtype, self.size, self.chunks = fqn, dtype, size, chunks


class DcpMetadata:
    """What a walked ``.metadata`` says (nothing of it was run): the tensors (key, dtype, full size, how many
    chunks), the keys stored as bytes, the items and the files they are in, the DCP version."""

    def __init__(self):
        self.tensors: List[DcpTensor] = []
        self.byte_keys: List[str] = []
        self.items: List[DcpItem] = []
        self.version: Optional[str] = None
        self.problems: List[str] = []
        self.planner_paths = 0  # planner_data's key -> path entries (the default planner's)


def _fields(obj: Any) -> Dict[Any, Any]:
    """A dataclass instance's fields as pickle builds it (NEWOBJ, then BUILD with a dict, or a (None, slots) pair)."""
    out: Dict[Any, Any] = {}
    if isinstance(obj, Call):
        for state in obj.states:
            if isinstance(state, tuple):
                for part in state:
                    out.update((k, v) for k, v in pairs_of(part))
            else:
                out.update((k, v) for k, v in pairs_of(state))
    return out


def _ints(obj: Any) -> Optional[Tuple[int, ...]]:
    """A ``torch.Size`` (a call of the global with a tuple) or a plain tuple/list of ints."""
    if isinstance(obj, Call) and obj.args:
        obj = obj.args[0] if isinstance(obj.args, tuple) else obj.args
    if isinstance(obj, SList):
        obj = tuple(obj.items)
    if isinstance(obj, tuple) and all(isinstance(d, int) and not isinstance(d, bool) for d in obj):
        return obj
    return None


def parse_dcp_metadata(root: Any) -> DcpMetadata:
    """The walked ``.metadata`` pickle (a ``Metadata`` dataclass, T:distributed/checkpoint/metadata.py:137-150)."""
    meta = DcpMetadata()
    fields = _fields(root)
    if not fields:
        meta.problems.append(M("its pickle is not a DCP Metadata object"))
        return meta
    version = fields.get("version")
    meta.version = version if isinstance(version, str) else None
    for fqn, value in pairs_of(fields.get("state_dict_metadata")):
        if not isinstance(fqn, str):
            continue
        name = value.name if isinstance(value, Call) else ""
        if name.endswith(".BytesStorageMetadata"):
            meta.byte_keys.append(fqn)
            continue
        f = _fields(value)
        props = _fields(f.get("properties"))
        dtype = props.get("dtype")
        for state in getattr(f.get("properties"), "states", ()):  # TensorProperties.__getstate__: a tuple, dtype first
            if isinstance(state, tuple) and state and isinstance(state[0], Global):
                dtype = state[0]
        size = _ints(f.get("size")) or ()
        chunks = f.get("chunks")
        n = len(chunks.items) if isinstance(chunks, SList) else len(chunks) if isinstance(chunks, tuple) else 0
        meta.tensors.append(DcpTensor(fqn, dtype.name if isinstance(dtype, Global) and dtype.module == "torch" else None,
                                      size, n))
    byte_keys = set(meta.byte_keys)
    for index, info in pairs_of(fields.get("storage_data")):
        key, where = _fields(index), _fields(info)
        fqn, path, offset, length = key.get("fqn"), where.get("relative_path"), where.get("offset"), where.get("length")
        if not (isinstance(fqn, str) and isinstance(path, str) and isinstance(offset, int) and isinstance(length, int)):
            meta.problems.append(M("a storage_data entry without a key, file, offset and length"))
            continue
        transforms = _descriptors(where.get("transform_descriptors"))
        if transforms is None:
            meta.problems.append(M("item %s: its transform_descriptors are not a list of names: its bytes are not "
                                 "read as a torch.save archive", fqn[:80]))
            transforms = ("?",)
        meta.items.append(DcpItem(fqn, path, offset, length, fqn not in byte_keys, transforms))
    planner = fields.get("planner_data")
    if planner is not None:
        pairs = pairs_of(planner) if isinstance(planner, SDict) else None
        paths = [v for _, v in pairs or ()]
        good = [v for v in paths if _path(v)]
        meta.planner_paths = len(good)
        if pairs is None or len(good) != len(paths):
            what = planner.name if isinstance(planner, (Call, Global)) else type(planner).__name__
            meta.problems.append(M("planner_data is not the default planner's key -> path map (%s): torch's "
                                   "dcp_to_torch_save rebuilds the nested state_dict from that map only",
                                   what if pairs is None else M("%d of %d entries are not paths", len(paths) - len(good), len(paths))))
    return meta


def _descriptors(value: Any) -> Optional[Tuple[str, ...]]:
    """A ``_StorageInfo.transform_descriptors``: None or empty is (), a list of strings their tuple, else None."""
    if value is None:
        return ()
    items = value.items if isinstance(value, SList) else value if isinstance(value, tuple) else None
    if items is None or not all(isinstance(d, str) for d in items):
        return None
    return tuple(items)


def _path(value: Any) -> bool:
    """A planner_data path: a list or tuple of keys (strings) and list indexes (ints)."""
    items = value.items if isinstance(value, SList) else value if isinstance(value, tuple) else None
    return bool(items) and all(isinstance(k, str) or (isinstance(k, int) and not isinstance(k, bool)) for k in items)


def dcp_transforms(meta: DcpMetadata, known: Optional[Dict[str, Tuple[str, str]]] = None):
    """The storage transforms ``.metadata`` says the items went through (compression, an extension's encoding):
    (every descriptor, those torch's reader does not know, notes, problems). A known one's requirement is a note
    (``known``: name -> (major version, what reading it needs), the ``dcp_transform`` rows of
    data/checkpoint_layouts.json); one torch's reader does not know is a problem: DCP's reader raises for it, so no
    consolidation can read those items."""
    if known is None:
        from cudaenv.core.resources import load_table

        known = {r["name"]: (r["version"], r["needs"]) for r in load_table("checkpoint_layouts")["rows"]
                 if r["kind"] == "dcp_transform"}
    counts: Dict[str, int] = {}
    for item in meta.items:
        for d in item.transforms:
            counts[d] = counts.get(d, 0) + 1
    unknown: List[str] = []
    notes: List[str] = []
    problems: List[str] = []
    for d, n in sorted(counts.items()):
        needs = transform_support(d, known)
        if needs is None:
            unknown.append(d)
            problems.append(M("%d items are stored through the transform %s, which torch's DCP reader does not know (it "
                            "raises 'Unknown extension'): neither torch nor cudaenv can read them", n, d[:80]))
        else:
            notes.append(M("%d items are stored through %s (compressed): torch reads them only with %s; cudaenv "
                         "decompresses nothing, so their bytes were not walked", n, d[:80],
                           filled_message(needs, needs, {})))  # the table's words, said in the reader's language
    return tuple(sorted(counts)), tuple(unknown), notes, problems


def transform_modules(descriptors: Sequence[str], rows: Optional[Sequence[Dict[str, Any]]] = None) -> List[List[Any]]:
    """[descriptor, [module, ...]] for each transform of ``descriptors`` that torch's reader reads only with one of
    those Python modules (``rows``: the ``dcp_transform`` rows of data/checkpoint_layouts.json): what the Python that
    converts the folder must be able to import, checked before it runs anything (stream.zstd/1: zstandard or
    pyzstd, T:distributed/checkpoint/_extension.py:91-107)."""
    if rows is None:
        from cudaenv.core.resources import load_table

        rows = [r for r in load_table("checkpoint_layouts")["rows"] if r["kind"] == "dcp_transform"]
    out: List[List[Any]] = []
    for d in descriptors:
        name, _, version = d.partition("/")
        for r in rows:
            if r["name"] == name and version.partition(".")[0] == r["version"] and r.get("modules"):
                out.append([d, list(r["modules"])])
    return out


def transform_support(descriptor: str, known: Dict[str, Tuple[str, str]]) -> Optional[str]:
    """What torch's reader needs for one transform descriptor (``name/version``, torch 2.13's ExtensionRegistry):
    the requirement from ``known`` (name -> (major version, requirement), data/checkpoint_layouts.json) when torch
    knows the name and version, else None (torch raises for it: no consolidation can read the item)."""
    name, _, version = descriptor.partition("/")
    row = known.get(name)
    if row is None or version.partition(".")[0] != row[0]:
        return None
    return row[1]


# ------------------------------------------------------------------ DeepSpeed ZeRO
def is_zero_file(name: str) -> bool:
    return name.endswith(("_model_states.pt", "_optim_states.pt")) and "mp_rank_" in name


def zero_role(name: str) -> Optional[str]:
    if name.endswith("_optim_states.pt"):
        return "optimizer"
    if name.endswith("_model_states.pt"):
        return "model"
    if name == ZERO_SCRIPT:
        return "script"
    return None


def zero_rank(name: str) -> Optional[int]:
    """The data-parallel rank of ``[bf16_]zero_pp_rank_{r}_mp_rank_{mp:02d}_*_states.pt``."""
    at = name.find("zero_pp_rank_")
    if at < 0:
        return None
    digits = name[at + len("zero_pp_rank_"):].partition("_")[0]
    return int(digits) if digits.isdigit() else None


def zero_mp_rank(name: str) -> Optional[int]:
    """The model-parallel (tensor-parallel) rank of ``..._mp_rank_{mp:02d}_..._states.pt``, None for another name."""
    at = name.find("mp_rank_")
    if at < 0:
        return None
    digits = name[at + len("mp_rank_"):].partition("_")[0]
    return int(digits) if digits.isdigit() else None


def zero_model_facts(root: Any) -> Tuple[Optional[int], Optional[int]]:
    """(dp_world_size, mp_world_size) from a walked ``*_model_states.pt`` (DeepSpeed's engine saves both beside
    ``module``: deepspeed/runtime/engine.py _save_checkpoint)."""
    out: Dict[str, Optional[int]] = {"dp_world_size": None, "mp_world_size": None}
    for k, v in pairs_of(root):
        if k in out and isinstance(v, int) and not isinstance(v, bool) and v > 0:
            out[k] = v
    return out["dp_world_size"], out["mp_world_size"]


def zero_expected_files(stem: str, world: int, mp_world: int, per_rank_model: bool) -> Tuple[List[str], List[str]]:
    """The model-states and optimizer-states file names of a ZeRO save with ``world`` data-parallel ranks and
    ``mp_world`` model-parallel ranks, as DeepSpeed's engine names them (deepspeed/runtime/engine.py
    _get_ckpt_name, _get_rank_zero_ckpt_name): ``mp_rank_{mp:02d}_model_states.pt`` (stage 3:
    ``zero_pp_rank_{dp}_mp_rank_{mp:02d}_model_states.pt``) and ``{stem}zero_pp_rank_{dp}_mp_rank_{mp:02d}_optim_states.pt``."""
    models: List[str] = []
    optims: List[str] = []
    for mp in range(mp_world):
        if per_rank_model:
            models += ["zero_pp_rank_%d_mp_rank_%02d_model_states.pt" % (dp, mp) for dp in range(world)]
        else:
            models.append("mp_rank_%02d_model_states.pt" % mp)
        optims += ["%szero_pp_rank_%d_mp_rank_%02d_optim_states.pt" % (stem, dp, mp) for dp in range(world)]
    return models, optims


def pick_tag(latest: Optional[str], folders: Sequence[str]) -> Optional[str]:
    """The tag folder: the one ``latest`` names when it exists, else the ``global_step*`` with the highest step."""
    if latest and latest in folders:
        return latest
    steps = [(int(f[len("global_step"):]), f) for f in folders if f.startswith("global_step") and f[len("global_step"):].isdigit()]
    return max(steps)[1] if steps else None


def zero_optimizer_facts(root: Any) -> Tuple[Optional[int], Optional[int]]:
    """(zero_stage, partition_count) from a walked ``*_optim_states.pt`` (its ``optimizer_state_dict``, as
    zero_to_fp32.py reads them; a list of partition counts gives its largest)."""
    osd = None
    for k, v in pairs_of(root):
        if k == "optimizer_state_dict":
            osd = v
    stage = count = None
    for k, v in pairs_of(osd):
        if k == "zero_stage" and isinstance(v, Call) and isinstance(v.args, tuple) and len(v.args) == 1:
            v = v.args[0]  # DeepSpeed 0.19 pickles a ZeroStageEnum(2) (its global is named, never imported)
        if k == "zero_stage" and isinstance(v, int) and not isinstance(v, bool):
            stage = v
        elif k == "partition_count":
            if isinstance(v, int) and not isinstance(v, bool):
                count = v
            else:
                items = v.items if isinstance(v, SList) else v if isinstance(v, tuple) else ()
                ints = [i for i in items if isinstance(i, int) and not isinstance(i, bool)]
                count = max(ints) if ints else None
    return stage, count


# ------------------------------------------------------------------ Hugging Face index
def parse_index(raw: bytes) -> Tuple[Optional[Dict[str, str]], Optional[int], Optional[str]]:
    """(weight_map, metadata.total_size, problem) of a ``*.index.json``; the map None when it is not one."""
    import json

    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, None, M("the index is not JSON: %s", str(exc)[:200])
    if not isinstance(doc, dict) or not isinstance(doc.get("weight_map"), dict):
        return None, None, M("the index has no weight_map object")
    wmap = {k: v for k, v in doc["weight_map"].items() if isinstance(k, str) and isinstance(v, str)}
    problem = None
    if len(wmap) != len(doc["weight_map"]):
        problem = M("%d weight_map entries are not a key and a file name", len(doc["weight_map"]) - len(wmap))
    meta = doc.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    return wmap, total if isinstance(total, int) and not isinstance(total, bool) else None, problem


def safe_member(name: str) -> bool:
    """A file name an index or a .metadata may name inside the folder: no path separator, no parent, not empty."""
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..") and "\x00" not in name


def prefix_keys(keys: Sequence[str]) -> SDict:
    """The keys as a state_dict the prefix finder reads (values are never looked at)."""
    return SDict([(k, None) for k in keys])
