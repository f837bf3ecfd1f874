"""The records of ``cudaenv checkpoint inspect --json`` and ``fix --json`` (the JSON contract: written and read by
:mod:`cudaenv.model.codec`)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Optional, Tuple

from cudaenv.model.record import Record


class DeviceCount(Record):
    """A device string and how many storages (or tensors, for devices outside the storage tuple) name it."""

    device: str
    count: int
    via: str = "storage"  # storage | meta | rebuild-argument | torch.device (a tensor's) | device-value (not a tensor)


class DtypeCount(Record):
    """A dtype and how many tensors have it."""

    dtype: str
    count: int


class KeyPrefix(Record):
    """A wrapper prefix (``module.``, ``_orig_mod.``, ``_orig_mod.module.`` ...) on keys of one state_dict."""

    container: str  # the path of the state_dict in the checkpoint ("" for the top level, "state_dict", "model")
    prefix: str
    keys: int  # keys that carry it
    of: int  # the state_dict's keys
    where: str = "keys"  # keys | _metadata


class GlobalRef(Record):
    """A global the pickle names (never imported): how often, and what torch.load(weights_only=True) makes of it."""

    name: str
    count: int
    verdict: str  # allowed | not-allowed | dangerous | blocked | needs-import


class VerdictReason(Record):
    """Where and why the safety verdict is what it is: ``where`` is a place in the file (``data.pkl byte 1234``,
    ``the zip's central directory``, ``legacy tar member storages``), ``why`` says what was found there."""

    where: str
    why: str


class TensorEntry(Record):
    """One tensor as the pickle describes it."""

    key: str
    dtype: Optional[str] = None
    shape: Tuple[int, ...] = ()
    device: Optional[str] = None
    storage: Optional[str] = None  # the storage key (data/<key>)
    offset: int = 0  # storage_offset in elements


class VisibleGpus(Record):
    """What this machine shows CUDA, read cheaply (CUDA_VISIBLE_DEVICES and ``nvidia-smi -L``; torch is not imported)."""

    count: int
    devices: Tuple[str, ...] = ()  # cuda:0, cuda:1, ...
    source: str = "nvidia-smi -L"


class CheckpointReport(Record):
    """``cudaenv checkpoint inspect --json``."""

    _json_envelope = True
    _json_maps = ("markers",)

    path: str
    format: str  # torch-zip | torchscript | torch-legacy | torch-legacy-tar | safetensors | pickle | zip | unknown
    size: int
    whole_module: Optional[str] = None  # the class of a torch.save(model) pickle
    archive_prefix: Optional[str] = None
    markers: Tuple[Tuple[str, str], ...] = ()  # format_version, version, byteorder, storage_alignment, protocol, ...
    kind: Optional[str] = None  # state_dict | training checkpoint | lightning checkpoint | whole module | ...
    structure: Tuple[str, ...] = ()  # "state_dict: 412 tensors", "epoch: int" (the first 40 top-level keys, then "... N more keys")
    key_count: Optional[int] = None  # the top-level keys in all (structure lists at most 40 of them)
    tensors: int = 0
    storages: int = 0
    total_bytes: int = 0  # per unique storage (tied weights and views once)
    dtypes: Tuple[DtypeCount, ...] = ()
    devices: Tuple[DeviceCount, ...] = ()
    prefixes: Tuple[KeyPrefix, ...] = ()
    globals: Tuple[GlobalRef, ...] = ()
    weights_only: Optional[bool] = None  # would torch.load(weights_only=True) of torch 2.13 load it in a fresh process
    weights_only_reasons: Tuple[str, ...] = ()
    # what torch.load(weights_only=False) of this file runs: safe (every pickle torch would read was walked whole,
    # and it names only allowlisted globals and targets) | unsafe (a global or a call outside the allowlist: exit 3)
    # | inconclusive (the walk stopped, a bound was hit, or the archive is ambiguous: exit 4); None: no pickle at all
    verdict: Optional[str] = None
    verdict_reasons: Tuple[VerdictReason, ...] = ()
    security: Tuple[str, ...] = ()
    inconsistencies: Tuple[str, ...] = ()
    mended_by_fix: Tuple[str, ...] = ()  # the inconsistencies `checkpoint fix`'s rewrite mends (bytes before the zip)
    notes: Tuple[str, ...] = ()
    visible: Optional[VisibleGpus] = None
    advice: Tuple[str, ...] = ()
    tensor_list: Tuple[TensorEntry, ...] = ()


class FixReport(Record):
    """``cudaenv checkpoint fix --json``: what changed, before and after."""

    _json_envelope = True

    source: str
    output: str
    method: str  # rewrite (no torch) | merge (safetensors, no torch) | torch (--trust, in the user's interpreter) | convert (--to: torch with weights_only=True or the safetensors library) | zero_to_fp32
    changes: Tuple[str, ...] = ()
    before: Optional[CheckpointReport] = None
    after: Optional[CheckpointReport] = None
    backup: Optional[str] = None
    warnings: Tuple[str, ...] = ()
    folder: Optional[FolderReport] = None  # the checkpoint folder consolidated into OUT (issue 32; before is None)


class ShardFile(Record):
    """One file of a checkpoint folder, as ``checkpoint inspect FOLDER`` read it (never its tensor bytes)."""

    name: str  # its path inside the folder
    role: str  # shard | model | optimizer | metadata (DCP's .metadata, a pickle) | data (a .distcp) | script | tag | index
    size: int
    format: Optional[str] = None  # as CheckpointReport.format; "distcp" for a DCP data file
    rank: Optional[int] = None  # the rank that wrote it (DCP, ZeRO), from its name
    tensors: int = 0
    total_bytes: int = 0  # the tensor bytes it holds (per unique storage)
    listed: Optional[int] = None  # the keys the index assigns to it
    pickles: int = 0  # the pickles walked in it (a DCP data file: one torch.save archive per item)
    verdict: Optional[str] = None  # safe | unsafe | inconclusive, as CheckpointReport.verdict
    weights_only: Optional[bool] = None  # None where torch does not read it with torch.load
    devices: Tuple[DeviceCount, ...] = ()
    problems: Tuple[str, ...] = ()
    mp_rank: Optional[int] = None  # DeepSpeed ZeRO: the model-parallel (tensor-parallel) rank, from mp_rank_XX


class FolderReport(Record):
    """``cudaenv checkpoint inspect FOLDER --json``: a checkpoint in many files (a DCP folder, a DeepSpeed ZeRO
    folder, sharded safetensors or ``.bin`` with an index), read file by file without running any of them."""

    _json_envelope = True

    path: str
    layout: str  # dcp | dcp-safetensors | deepspeed-zero | safetensors-shards | bin-shards | unknown
    index: Optional[str] = None  # the index file read (sharded safetensors / .bin)
    tag: Optional[str] = None  # the ZeRO tag folder read (`latest`, else the highest global_step*)
    world_size: Optional[int] = None  # the ranks that wrote it (DCP: from the file names; ZeRO: partition_count)
    zero_stage: Optional[int] = None
    mp_world_size: Optional[int] = None  # DeepSpeed ZeRO: the model-parallel (tensor-parallel) ranks (mp_rank_XX)
    transforms: Tuple[str, ...] = ()  # DCP: the storage transforms its items are stored through (stream.zstd/1, ...)
    unreadable_transforms: Tuple[str, ...] = ()  # DCP: those torch's reader does not know (no conversion reads them)
    shard_count: int = 0  # the files that hold tensors
    model_files: Tuple[str, ...] = ()
    optimizer_files: Tuple[str, ...] = ()
    files: Tuple[ShardFile, ...] = ()
    tensors: int = 0
    total_bytes: int = 0
    dtypes: Tuple[DtypeCount, ...] = ()
    devices: Tuple[DeviceCount, ...] = ()
    prefixes: Tuple[KeyPrefix, ...] = ()
    missing: Tuple[str, ...] = ()  # files the index (or .metadata, or the ranks) name that are not on disk
    unlisted: Tuple[str, ...] = ()  # shard files on disk that nothing names
    verdict: Optional[str] = None  # the worst of its files' verdicts (any inconclusive: inconclusive)
    verdict_reasons: Tuple[VerdictReason, ...] = ()
    weights_only: Optional[bool] = None  # every file torch.load reads with weights_only=True would load
    inconsistencies: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    visible: Optional[VisibleGpus] = None
