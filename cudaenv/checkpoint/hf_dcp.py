"""DCP folders in the safetensors format (issue 32): what torch 2.13's ``HuggingFaceStorageWriter`` with
``save_distributed=True`` writes, read from the shards' safetensors headers alone. Pure: already-read headers in,
values out.

Every rank writes its own ``shard-{rank+1:05d}-model-{n:05d}-of-{N:05d}.safetensors`` (its chunk of each tensor,
T:distributed/checkpoint/_hf_utils.py:12-13, 58-76); no ``.metadata`` and no index are written unless the writer
consolidates (hf_storage.py:139-159, then the shards are in ``sharded/`` and the whole tensors beside it, a plain
sharded safetensors checkpoint). Each shard's header ``__metadata__`` holds ``DCP_SHARDING_INFO``, a JSON object
``{key: {"saved_offsets": [...]}}`` that places the shard's chunk in the full tensor, ``DCP_VERSION`` and
``format: pt`` (filesystem.py:451-467). torch's own ``HuggingFaceStorageReader`` reads every ``.safetensors`` file of
the folder and makes each tensor's full size the largest offset plus shape (hf_storage.py:313-391); it copies the
chunks into tensors it does not clear first, so a chunk that no file holds stays whatever memory held: a missing
rank's file is found here, from the chunks' volumes, before anything loads.
"""

from __future__ import annotations

from itertools import chain, islice, repeat
from typing import Any, Dict, List, Optional, Tuple

from cudaenv.core.i18n import M

SHARD_PREFIX = "shard-"
SUFFIX = ".safetensors"
SHARDING_KEY = "DCP_SHARDING_INFO"
VERSION_KEY = "DCP_VERSION"
OFFSETS_KEY = "saved_offsets"
SHARDED_DIR = "sharded"  # where the writer puts the shards when it also consolidates


def shard_name(name: str) -> Optional[Tuple[int, int, int]]:
    """(shard, file, files) of ``shard-00002-model-00001-of-00004.safetensors``; None for any other name."""
    if not (name.startswith(SHARD_PREFIX) and name.endswith(SUFFIX)):
        return None
    parts = name[len(SHARD_PREFIX):-len(SUFFIX)].split("-")
    if len(parts) != 5 or parts[1] != "model" or parts[3] != "of":
        return None
    nums = (parts[0], parts[2], parts[4])
    if not all(p.isdigit() and p.isascii() and len(p) <= 9 for p in nums):
        return None
    return int(nums[0]), int(nums[1]), int(nums[2])


def sharding_info(header: Any) -> Tuple[Optional[Dict[str, Tuple[int, ...]]], Optional[str], Optional[str]]:
    """(key -> saved offsets, DCP version, problem) of one shard's safetensors header; the map None when the header
    holds no ``DCP_SHARDING_INFO`` (torch's reader then places every tensor at offset 0)."""
    import json
    from operator import itemgetter

    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(meta, dict) or SHARDING_KEY not in meta:
        return None, None, M("no %s in its header's __metadata__: not written by DCP's HuggingFaceStorageWriter", SHARDING_KEY)
    version = meta.get(VERSION_KEY) if isinstance(meta.get(VERSION_KEY), str) else None
    raw = meta[SHARDING_KEY]
    if not isinstance(raw, str):
        return None, version, M("its %s is not a string", SHARDING_KEY)
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return None, version, M("its %s is not JSON: %s", SHARDING_KEY, str(exc)[:200])
    if not isinstance(doc, dict):
        return None, version, M("its %s is not a JSON object", SHARDING_KEY)
    out: Dict[str, Tuple[int, ...]] = {}
    bad = 0
    try:  # the usual shard: every entry {"saved_offsets": [naturals]}, checked in C at once
        lists = list(map(itemgetter(OFFSETS_KEY), doc.values()))
        whole = set(map(type, lists)) <= _LIST and _naturals(list(chain.from_iterable(lists)))
    except (TypeError, KeyError):  # (an entry that is no dict, or lacks its offsets)
        whole = False
    if whole:
        return dict(zip(doc, map(tuple, lists))), version, None
    for key, value in doc.items():
        offs = value.get(OFFSETS_KEY) if type(value) is dict else None
        if type(offs) is list and _naturals(offs):
            out[key] = tuple(offs)
        else:
            bad += 1
    return out, version, (M("%d %s entries have no list of offsets", bad, SHARDING_KEY) if bad else None)


class Joined:
    """One key of the whole checkpoint: its dtype (the header's), full size, chunks and the elements they hold."""

    __slots__ = ("fqn", "dtype", "size", "chunks", "held")

    def __init__(self, fqn: str, dtype: str, size: List[int], chunks: int = 0, held: int = 0):
        self.fqn, self.dtype, self.size, self.chunks, self.held = fqn, dtype, size, chunks, held


_INT = {int}
_LIST = {list}
_DICT = {dict}
_STR = {str}


def _naturals(values: list) -> bool:
    """Every value an int (not a bool) >= 0 (the type test in C: a header has one shape per tensor)."""
    return set(map(type, values)) <= _INT and (not values or min(values) >= 0)


def _numel(shape) -> int:
    from math import prod

    return prod(shape)


def join_shards(shards: List[Tuple[str, Any, Optional[Dict[str, Tuple[int, ...]]]]]) -> Tuple[List[Joined], List[str]]:
    """The whole checkpoint's tensors from every shard's (name, header, offsets), as torch's reader joins them (full
    size: the largest offset plus shape in each dimension), and the problems: a key whose shards disagree on its dtype
    or rank, offsets for a key the header lacks, and a tensor whose chunks hold fewer (or more) elements than its full
    size: a rank's file missing, or chunks that overlap.

    The usual folder (every shard the same keys in the same order, each entry a dtype and a shape of naturals, its
    offsets one per dimension) is joined in C at once (:func:`_join_at_once`); any other is joined chunk by chunk
    (:func:`join_each`), which gives the same answer for the usual folder (tested on generated shard sets)."""
    joined = _join_at_once(shards)
    return joined if joined is not None else join_each(shards)


def _join_at_once(shards) -> Optional[Tuple[List[Joined], List[str]]]:
    """:func:`join_shards` of the usual folder with no Python step per chunk (the maps and the elementwise ``max``
    over the shards run in C); None where any shard is not the usual one, for :func:`join_each` to read."""
    from math import prod
    from operator import add, gt, itemgetter, lt

    keys0 = dtypes0 = ranks0 = None
    ends: List[list] = []  # per shard: every key's offsets plus shape (its chunk's far corner), flat
    helds: List[list] = []  # per shard: each key's chunk's elements
    shape_of, dtype_of = itemgetter("shape"), itemgetter("dtype")
    for _name, header, offsets in shards:
        if type(header) is not dict:
            return None
        keys = list(header)
        if "__metadata__" in header:
            keys.remove("__metadata__")
        values = list(map(header.__getitem__, keys))
        if not set(map(type, values)) <= _DICT:
            return None
        try:
            shapes = list(map(shape_of, values))
            dtypes = list(map(dtype_of, values))
        except KeyError:
            return None
        flat = list(chain.from_iterable(shapes)) if set(map(type, shapes)) <= _LIST else None
        if flat is None or not (set(map(type, dtypes)) <= _STR and _naturals(flat)):
            return None
        ranks = list(map(len, shapes))
        if keys0 is None:
            keys0, dtypes0, ranks0 = keys, dtypes, ranks
        elif keys != keys0 or dtypes != dtypes0 or ranks != ranks0:
            return None
        if not offsets:  # (no sharding info: torch's reader places every chunk at 0)
            ends.append(flat)
        else:
            if len(offsets) != len(keys):  # (a key without offsets, or offsets for a key the header lacks)
                return None
            try:
                offs = list(map(offsets.__getitem__, keys))
            except (KeyError, TypeError):
                return None
            if list(map(len, offs)) != ranks:
                return None
            ends.append(list(map(add, flat, chain.from_iterable(offs))))
        helds.append(list(map(prod, shapes)))
    if keys0 is None:
        return None
    if len(ends) == 1:
        flat, held = ends[0], helds[0]
    else:
        flat = list(map(max, *ends))  # each dimension's largest end over the shards
        held = list(map(sum, zip(*helds)))
    cut = iter(flat)
    sizes = list(map(list, map(islice, repeat(cut), ranks0)))  # the flat ends cut back into each key's dimensions
    tensors = list(map(Joined, keys0, dtypes0, sizes, repeat(len(ends)), held))
    numels = list(map(prod, sizes))
    problems: List[str] = []
    if any(map(lt, held, numels)) or any(map(gt, held, numels)):
        _volume_problems(tensors, problems)
    return tensors, problems


def join_each(shards: List[Tuple[str, Any, Optional[Dict[str, Tuple[int, ...]]]]]) -> Tuple[List[Joined], List[str]]:
    """:func:`join_shards` chunk by chunk: any shard set (the reference of the reading at once)."""
    from math import prod
    from operator import add

    tensors: Dict[str, Joined] = {}
    problems: List[str] = []
    for name, header, offsets in shards:
        if not isinstance(header, dict):
            continue
        offsets = offsets or {}
        items = [(key, info) for key, info in header.items() if type(info) is dict and key != "__metadata__"]
        shapes = [info.get("shape") for _, info in items]
        checked = set(map(type, shapes)) <= _LIST and _naturals(list(chain.from_iterable(shapes)))  # in C, at once
        for (key, info), shape in zip(items, shapes):
            if not checked and (type(shape) is not list or not _naturals(shape)):
                continue  # (the file's own report says so)
            dtype = info.get("dtype")
            dtype = dtype if type(dtype) is str else "?"
            offs = offsets.get(key)
            if offs is None:
                offs = (0,) * len(shape)
            elif len(offs) != len(shape):
                problems.append(M("%s: %s has %d offsets for %d dimensions", name, key[:120], len(offs), len(shape)))
                continue
            t = tensors.get(key)
            if t is None:
                t = tensors[key] = Joined(key, dtype, list(map(add, shape, offs)))
            elif len(t.size) != len(shape) or t.dtype != dtype:
                problems.append(M("%s: %s is %s %s here, %s with %d dimensions in another shard", name, key[:120], dtype, list(shape), t.dtype, len(t.size)))
                continue
            else:
                t.size = list(map(max, t.size, map(add, shape, offs)))
            t.chunks += 1
            t.held += prod(shape)
        for key in [k for k in offsets if k not in header][:3]:
            problems.append(M("%s: %s places %s, which its header does not hold", name, SHARDING_KEY, key[:120]))
    joined = list(tensors.values())
    _volume_problems(joined, problems)
    return joined, problems


def _volume_problems(tensors: List[Joined], problems: List[str]) -> None:
    """The tensors whose chunks hold fewer elements than their full size (a rank lost) or more (chunks that overlap)."""
    short = [t for t in tensors if t.held < _numel(t.size)]
    over = [t for t in tensors if t.held > _numel(t.size)]
    if short:
        problems.append(M("%d tensors are not whole: their chunks in the shards hold fewer elements than their size (a "
                          "rank's file is missing; torch's reader would leave the rest uninitialised): %s", len(short),
                          ", ".join("%s %d of %d" % (t.fqn[:120], t.held, _numel(t.size)) for t in short[:5])))
    if over:
        problems.append(M("%d tensors have chunks that overlap (their shards hold more elements than their size): %s",
                          len(over), ", ".join(t.fqn[:120] for t in over[:5])))


def missing_shards(names: List[str]) -> List[str]:
    """The shard files a gap in the shard numbers leaves out: for each ``model-{n}-of-{N}`` that some shard has, the
    shards numbered from 1 to the highest seen (a rank whose whole output is gone)."""
    parsed = [p for p in (shard_name(n) for n in names) if p is not None]
    ranks = {p[0] for p in parsed}
    top = max(ranks, default=0)
    absent: List[int] = []
    for shard in range(1, top + 1):  # at most len(ranks) + 200 steps: a hostile shard-999999999 costs no more
        if shard not in ranks:  # (a rank that wrote other files: its chunks' absence shows in the volumes)
            absent.append(shard)
            if len(absent) >= 200:
                break
    from itertools import islice

    names_of = ("%s%05d-model-%05d-of-%05d%s" % (SHARD_PREFIX, shard, n, total, SUFFIX)
                for n, total in sorted({(p[1], p[2]) for p in parsed}) for shard in absent)
    return list(islice(names_of, 200))
