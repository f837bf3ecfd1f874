"""The report of a safetensors file: its JSON header only (names, dtypes, shapes, data offsets); no device is
stored there, so none is reported."""

from __future__ import annotations

from cudaenv.checkpoint.graph import MAX_TENSOR_LIST, prefix_findings
from cudaenv.checkpoint.nodes import SDict
from cudaenv.checkpoint.report import CheckpointReport, DtypeCount, TensorEntry
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Dict, List

    from cudaenv.checkpoint.reading import Container


# the header's dtype -> (torch's name for it, bits per element): the dtypes of the safetensors format and library
# 0.8 (F4 and F6 pack elements below a byte: n elements take n * bits / 8 bytes, a whole number; the F6 have no torch
# dtype, so they keep their own name)
_ST_DTYPES = {"F64": ("float64", 64), "F32": ("float32", 32), "F16": ("float16", 16), "BF16": ("bfloat16", 16),
              "I64": ("int64", 64), "I32": ("int32", 32), "I16": ("int16", 16), "I8": ("int8", 8), "U8": ("uint8", 8),
              "U16": ("uint16", 16), "U32": ("uint32", 32), "U64": ("uint64", 64), "BOOL": ("bool", 8),
              "F8_E4M3": ("float8_e4m3fn", 8), "F8_E5M2": ("float8_e5m2", 8), "F8_E4M3FNUZ": ("float8_e4m3fnuz", 8),
              "F8_E5M2FNUZ": ("float8_e5m2fnuz", 8), "F8_E8M0": ("float8_e8m0fnu", 8), "F4": ("float4_e2m1fn_x2", 4),
              "F6_E2M3": ("F6_E2M3", 6), "F6_E3M2": ("F6_E3M2", 6), "C64": ("complex64", 64)}


def safetensors_tally(box: Container, problems) -> tuple:
    """(dtype -> tensors, tensors, their bytes) of a safetensors file, its problems added to ``problems``: what
    :func:`safetensors_report` counts, without the report's tensor list, prefixes and advice (what a checkpoint
    folder's shard needs, issue 32)."""
    dtypes, total, count, _entries, _keys = _walk(box.safetensors or {}, box.size - (box.safetensors_data_start or 0),
                                                  problems, 0)
    return dtypes, count, total


def _walk(header, data_len: int, problems, most: int):
    """Every entry of a safetensors header checked: (dtype -> tensors, bytes, tensors, the first ``most`` entries,
    the keys); each problem added to ``problems``."""
    dtypes: Dict[str, int] = {}
    total = 0
    count = 0
    entries: List[TensorEntry] = []
    keys: List[str] = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            problems.append(M("header entry %s is not an object", name[:80]))
            continue
        count += 1
        keys.append(name)
        st = info.get("dtype")
        shape = info.get("shape")
        offs = info.get("data_offsets")
        if isinstance(st, str):
            dtype, bits = _ST_DTYPES.get(st, (st[:20], None))
        else:  # a list, a number, an object: JSON the library refuses (and nothing to look up by)
            dtype, bits = "not a dtype", None
            problems.append(M("tensor %s has a dtype that is not a string (%s)", name[:80], type(st).__name__))
        dtypes[dtype] = dtypes.get(dtype, 0) + 1
        shape_t = tuple(shape) if isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape) else ()
        if isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) for o in offs):
            begin, end = offs
            total += max(0, end - begin)
            if end < begin or end > data_len:
                problems.append(M("tensor %s has data offsets %d..%d outside the %d data bytes", name[:80], begin, end, data_len))
            elif bits is not None:
                n = 1
                for d in shape_t:
                    n *= d
                if n * bits != (end - begin) * 8:
                    need = M("%d bytes", n * bits // 8) if n * bits % 8 == 0 else M("%d bits, not whole bytes", n * bits)
                    problems.append(M("tensor %s is %s %s = %s, but its data offsets give %d", name[:80], dtype, list(shape_t), need, end - begin))
        else:
            problems.append(M("tensor %s has no valid data_offsets", name[:80]))
        if len(entries) < most:
            entries.append(TensorEntry(name, dtype, shape_t, None, None, 0))
    return dtypes, total, count, entries, keys


def safetensors_report(box: Container, notes, problems, visible) -> CheckpointReport:
    header = box.safetensors or {}
    dtypes, total, count, entries, keys = _walk(header, box.size - (box.safetensors_data_start or 0), problems,
                                                MAX_TENSOR_LIST)
    sd = SDict([(k, None) for k in keys])
    prefixes = prefix_findings("", sd)
    notes.append(M("safetensors stores no device: tensors go where the loader puts them (safe_open(..., device=...))"))
    report = CheckpointReport(box.path, "safetensors", box.size, markers=tuple(box.markers.items()), kind="state_dict",
                              tensors=count, storages=count, total_bytes=total,
                              dtypes=tuple(DtypeCount(k, n) for k, n in sorted(dtypes.items(), key=lambda x: (-x[1], x[0]))), prefixes=tuple(prefixes),
                              weights_only=None, notes=tuple(notes), inconsistencies=tuple(problems), visible=visible,
                              tensor_list=tuple(entries))
    from cudaenv.model.record import replace
    from cudaenv.checkpoint.advice import advise

    return replace(report, advice=tuple(advise(report)))
