"""The plumbing every checkpoint folder reader shares (issue 32): what a folder's files add up to (:class:`Acc`), one
member file read with the single-file readers (never its tensor bytes, never its code), and the folder's report
made from them (:func:`finish_report`)."""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from cudaenv.checkpoint import layout as L
from cudaenv.checkpoint.report import DeviceCount, DtypeCount, FolderReport, KeyPrefix, ShardFile, VerdictReason
from cudaenv.core.i18n import M

MAX_REASONS = 40  # verdict reasons kept from all the files together


class Acc:
    """What the files add up to."""

    def __init__(self):
        self.files: List[ShardFile] = []
        self.reasons: List[VerdictReason] = []
        self.verdicts: List[Optional[str]] = []
        self.weights_only: List[Optional[bool]] = []
        self.dtypes: Dict[str, int] = {}
        self.devices: Dict[Tuple[str, str], int] = {}
        self.problems: List[str] = []
        self.notes: List[str] = []
        self.keys: Dict[str, List[str]] = {}  # file -> its top-level keys (a shard's state_dict keys)
        self.prefixes: List[KeyPrefix] = []

    def add(self, shard: ShardFile, reasons=(), report=None, count_dtypes: bool = True) -> None:
        self.files.append(shard)
        self.verdicts.append(shard.verdict)
        self.weights_only.append(shard.weights_only)
        for r in reasons:
            if len(self.reasons) < MAX_REASONS:
                self.reasons.append(VerdictReason(M("%s: %s", shard.name, r.where), r.why))
        for p in shard.problems:
            self.problems.append(M("%s: %s", shard.name, p))
        if report is not None and count_dtypes:
            for d in report.dtypes:
                self.dtypes[d.dtype] = self.dtypes.get(d.dtype, 0) + d.count
        if report is not None:
            for d in report.devices:
                self.devices[(d.device, d.via)] = self.devices.get((d.device, d.via), 0) + d.count


def inspect_member(folder: str, name: str, role: str, visible, acc: Acc, rank: Optional[int] = None,
                  keep_prefixes: bool = True, shown: Optional[str] = None, count_dtypes: bool = True, lean: bool = False):
    """Read one pickle or safetensors file of the folder with the single-file readers; its box (for the walked
    root or the header) and report. ``lean``: a safetensors file is only counted and checked
    (:func:`safetensors_tally`: what its :class:`ShardFile` holds, the same as from its whole report) and its report
    is None: its tensor list, prefixes and advice are not made, and its keys are not kept."""
    from cudaenv.checkpoint.analyze import build_report
    from cudaenv.checkpoint.container import open_container
    from cudaenv.checkpoint.graph import pairs_of

    import gc

    collecting = gc.isenabled()
    gc.disable()  # as inspect_file, file by file: the cycles a file's walk leaves are collected before the next
    try:
        box = open_container(os.path.join(folder, name))
        if lean and box.format == "safetensors":
            from cudaenv.checkpoint.safetensors_report import safetensors_tally

            problems = list(box.problems)
            dtypes, count, total = safetensors_tally(box, problems)
            shard = ShardFile(shown or name, role, box.size, "safetensors", rank, count, total,
                              pickles=sum(1 for _ in walked_pickles(box)), problems=tuple(problems))
            acc.add(shard)
            if count_dtypes:
                for d, n in dtypes.items():
                    acc.dtypes[d] = acc.dtypes.get(d, 0) + n
            return box, None
        report = build_report(box, visible, with_tensors=False)
    finally:
        if collecting:
            gc.enable()
    if box.format == "safetensors":
        keys = [k for k in (box.safetensors or {}) if k != "__metadata__"]
    else:
        keys = [k for k, _ in pairs_of(box.pickle.root if box.pickle is not None else None) if isinstance(k, str)]
    acc.keys[name] = keys
    walked = sum(1 for _ in walked_pickles(box))
    shown = shown or name
    shard = ShardFile(shown, role, report.size, report.format, rank, report.tensors, report.total_bytes, pickles=walked,
                      verdict=report.verdict, weights_only=report.weights_only, devices=report.devices,
                      problems=report.inconsistencies)
    acc.add(shard, report.verdict_reasons, report, count_dtypes=count_dtypes)
    if keep_prefixes:
        acc.prefixes.extend(KeyPrefix(shown if not p.container else "%s %s" % (shown, p.container), p.prefix, p.keys, p.of, p.where)
                            for p in report.prefixes)
    return box, report


def walked_pickles(box):
    from cudaenv.checkpoint.tables import walked

    return walked(box)


def finish_report(report: FolderReport, acc: Acc, visible, shard_count: int, **more) -> FolderReport:
    from cudaenv.model.record import replace

    verdict = L.worst(acc.verdicts)
    loads = [w for w in acc.weights_only if w is not None]
    return replace(
        report, files=tuple(acc.files), shard_count=shard_count, verdict=verdict, verdict_reasons=tuple(acc.reasons),
        weights_only=(all(loads) if loads else None),
        dtypes=tuple(DtypeCount(k, n) for k, n in sorted(acc.dtypes.items(), key=lambda x: (-x[1], x[0]))),
        devices=tuple(DeviceCount(d, n, via) for (d, via), n in sorted(acc.devices.items(), key=lambda x: (-x[1], x[0]))),
        prefixes=tuple(acc.prefixes), inconsistencies=tuple(acc.problems), notes=tuple(acc.notes), visible=visible, **more)
