"""``cudaenv checkpoint inspect FOLDER`` (or an index file): a checkpoint in many files, read file by file with the
single-file readers, never its tensor bytes, never any of its code (issue 32).

The layout comes from the file names (:mod:`cudaenv.checkpoint.layout`); every pickle torch would read is walked
with the same fail-closed rules as a lone checkpoint (DCP's ``.metadata``, read by DCP with a plain ``pickle.load``,
with torch's allowlist plus the DCP classes its own writer puts there, ``data/checkpoint_layouts.json``; every item
of a ``.distcp`` file, a whole ``torch.save`` archive, at the offset ``.metadata`` gives). The folder's verdict is
the worst of its files'.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from cudaenv.checkpoint import layout as L
from cudaenv.checkpoint.folder_files import MAX_REASONS, Acc, finish_report, inspect_member
from cudaenv.checkpoint.report import FolderReport, ShardFile, VerdictReason
from cudaenv.core.i18n import M, join

MAX_ENTRIES = 200_000  # the most folder entries looked at
MAX_DCP_ITEMS = 500_000  # the DCP items walked (a 64-rank FSDP save of a 70B model and its optimizer: ~150,000)


class _DcpFacts:
    """torch's weights_only facts, with the globals DCP's own writer puts in ``.metadata`` allowed too."""

    def __init__(self, base):
        from cudaenv.core.resources import load_table

        self.base = base
        self.extra = frozenset(r["name"] for r in load_table("checkpoint_layouts")["rows"] if r["kind"] == "dcp_metadata_global")

    def verdict(self, name: str) -> str:
        return "allowed" if name in self.extra else self.base.verdict(name)


def _listing(folder: str) -> Tuple[List[str], List[str]]:
    """(regular files, subfolders) of ``folder`` by name, sorted; links followed (a Hugging Face cache's snapshot is
    links into its blobs), at most MAX_ENTRIES."""
    files: List[str] = []
    folders: List[str] = []
    with os.scandir(folder) as it:
        for n, entry in enumerate(it):
            if n >= MAX_ENTRIES:
                break
            try:
                if entry.is_file():
                    files.append(entry.name)
                elif entry.is_dir():
                    folders.append(entry.name)
            except OSError:
                continue
    return sorted(files, key=_natural), sorted(folders, key=_natural)


def _natural(name: str):
    """``__2_0`` before ``__10_0``: digits compared as numbers (as zero_to_fp32.py sorts)."""
    out, digits = [], ""
    for c in name + "\x00":
        if c.isdigit():
            digits += c
            continue
        if digits:
            out.append((0, int(digits), ""))
            digits = ""
        out.append((1, 0, c))
    return out


def inspect_folder(path: str, visible=None) -> FolderReport:
    """The report of the checkpoint folder ``path`` (or of the folder an index file or a ``.metadata`` is in)."""
    index = None
    folder = path
    if not os.path.isdir(path):
        folder = os.path.dirname(path) or "."
        if os.path.basename(path).endswith(L.INDEX_SUFFIXES):
            index = os.path.basename(path)
    files, folders = _listing(folder)
    kind = L.index_layout(index) if index else L.classify(files, folders)
    if kind == "dcp":
        return _dcp(path, folder, files, visible)
    if kind == "deepspeed-zero":
        return _zero(path, folder, files, folders, visible)
    if kind == "dcp-safetensors":
        return _dcp_safetensors(path, folder, files, visible)
    if kind in ("safetensors-shards", "bin-shards"):
        report = _shards(path, folder, files, kind, index, visible)
        if kind == "safetensors-shards" and "sharded" in folders:  # DCP's HuggingFaceStorageWriter consolidated here
            from cudaenv.model.record import replace

            report = replace(report, notes=report.notes + (
                M("sharded/ holds the per-rank DCP shards these files may have been consolidated from (inspect it on "
                "its own)"),))
        return report
    acc = Acc()
    return finish_report(FolderReport(path, "unknown"), acc, visible, shard_count=0)


# ------------------------------------------------------------------ sharded safetensors / .bin
def _shards(path: str, folder: str, files: List[str], kind: str, index: Optional[str], visible) -> FolderReport:
    from cudaenv.checkpoint.graph import prefix_findings
    from cudaenv.host.files import read_regular

    acc = Acc()
    ext = ".safetensors" if kind == "safetensors-shards" else ".bin"
    if index is None:
        found = [n for n in files if n.endswith(L.INDEX_SUFFIXES[0 if kind == "safetensors-shards" else 1])]
        index = found[0] if found else None
        if len(found) > 1:
            acc.notes.append(M("more than one index in the folder: %s read", index))
    wmap: Optional[Dict[str, str]] = None
    total_size = None
    if index is not None:
        raw = read_regular(os.path.join(folder, index), L.MAX_INDEX + 1)
        if raw is None or len(raw) > L.MAX_INDEX:
            acc.problems.append(M("%s: not read (missing, not a regular file, or over %d bytes)", index, L.MAX_INDEX))
        else:
            wmap, total_size, problem = L.parse_index(raw)
            if problem:
                acc.problems.append(M("%s: %s", index, problem))
    on_disk = [n for n in files if n.endswith(ext)]
    if wmap is not None:
        listed = list(dict.fromkeys(wmap.values()))
        bad = [n for n in listed if not L.safe_member(n)]
        for n in bad[:5]:
            acc.problems.append(M("%s names a shard outside the folder: %s (not read)", index, n[:200]))
        listed = [n for n in listed if L.safe_member(n)]
        missing = tuple(n for n in listed if n not in files)
        unlisted = tuple(n for n in on_disk if n not in listed)
        shards = [n for n in listed if n in files]
    else:
        missing, unlisted, shards = (), (), on_disk
        if index is None:
            acc.notes.append(M("no index file: every %s file in the folder is taken as a shard", ext))
    per_file: Dict[str, int] = {}
    for f in (wmap or {}).values():
        per_file[f] = per_file.get(f, 0) + 1
    tensors = total = 0
    from cudaenv.model.record import replace

    for name in shards:
        try:
            _box, report = inspect_member(folder, name, "shard", visible, acc, keep_prefixes=False)
        except OSError as exc:
            acc.problems.append(M("%s: cannot be read: %s", name, exc.strerror or exc))
            continue
        acc.files[-1] = replace(acc.files[-1], listed=per_file.get(name) if wmap is not None else None)
        tensors += report.tensors
        total += report.total_bytes
    # the keys: every shard's, against the index
    seen: Dict[str, str] = {}
    twice: List[str] = []
    for name in shards:
        for k in acc.keys.get(name, ()):
            if k in seen and seen[k] != name:
                twice.append(k)
            seen[k] = name
    if twice:
        acc.problems.append(M("%d keys are in more than one shard (the last loaded wins): %s", len(twice), ", ".join(twice[:5])))
    if wmap is not None:
        sets = {f: set(keys) for f, keys in acc.keys.items()}  # (a list's `in` made this quadratic)
        elsewhere = [k for k, f in wmap.items() if f in sets and k not in sets[f]]
        if elsewhere:
            acc.problems.append(M("%d keys the index places in a shard are not in it: %s", len(elsewhere), ", ".join(elsewhere[:5])))
        extra = [k for k in seen if k not in wmap]
        if extra:
            acc.problems.append(M("%d keys in the shards are not in the index: %s", len(extra), ", ".join(extra[:5])))
        if total_size is not None and not missing and total_size != total and kind == "safetensors-shards":
            acc.notes.append(M("the index's total_size is %d bytes, the shards' tensors are %d", total_size, total))
    acc.prefixes.extend(prefix_findings("", L.prefix_keys(list(seen))))
    return finish_report(FolderReport(path, kind, index=index, tensors=tensors, total_bytes=total, missing=missing,
                                unlisted=unlisted, model_files=tuple(shards)), acc, visible, shard_count=len(shards))


# ------------------------------------------------------------------ DCP
def _dcp(path: str, folder: str, files: List[str], visible) -> FolderReport:
    from cudaenv.checkpoint.container import open_container
    from cudaenv.checkpoint.graph import prefix_findings
    from cudaenv.checkpoint.tables import facts
    from cudaenv.checkpoint.tables import judge

    acc = Acc()
    f = facts()
    meta = L.DcpMetadata()
    data_files = [n for n in files if n.endswith(L.DCP_SUFFIX)]
    if L.DCP_METADATA in files:
        box = open_container(os.path.join(folder, L.DCP_METADATA))
        judged = judge(box, _DcpFacts(f)) if box.pickle is not None else {"verdict": "inconclusive", "verdict_reasons": (
            VerdictReason(M("the file"), M("not read as a pickle (%s)", box.format)),)}
        problems = list(box.problems)
        if box.pickle is not None and box.pickle.complete:
            meta = L.parse_dcp_metadata(box.pickle.root)
            problems += meta.problems
        elif box.pickle is not None:
            problems.append(M("its pickle is incomplete: the items it lists are unknown"))
        acc.add(ShardFile(L.DCP_METADATA, "metadata", box.size, box.format, pickles=1, verdict=judged["verdict"],
                          problems=tuple(problems)), judged["verdict_reasons"])
    else:
        acc.problems.append(M("no .metadata: DCP cannot load the folder, and which item is where is unknown"))
    by_file: Dict[str, List[L.DcpItem]] = {}
    for item in meta.items:
        by_file.setdefault(item.file, []).append(item)
    referenced = [n for n in by_file if L.safe_member(n)]
    for n in [n for n in by_file if not L.safe_member(n)][:5]:
        acc.problems.append(M(".metadata names a data file outside the folder: %s (not read)", n[:200]))
    missing = tuple(n for n in referenced if n not in files)
    unlisted = tuple(n for n in data_files if meta.items and n not in by_file)
    for name in data_files:
        acc.add(*_dcp_file(folder, name, by_file.get(name, []), f, judge))
    transforms, unreadable, notes, problems = L.dcp_transforms(meta)
    acc.notes.extend(notes)
    acc.problems.extend(problems)
    ranks = {L.dcp_rank(n) for n in set(data_files) | set(referenced)} - {None}
    # the keys, grouped by the state_dict they are in (planner_data maps each flattened key to its path)
    groups: Dict[str, List[str]] = {}
    for t in meta.tensors:
        head, _, rest = t.fqn.partition(".")
        if rest and head in _weights_entries():
            groups.setdefault(head, []).append(rest)
        else:
            groups.setdefault("", []).append(t.fqn)
    for where, keys in groups.items():
        acc.prefixes.extend(prefix_findings(where, L.prefix_keys(keys)))
    total = 0
    for t in meta.tensors:
        acc.dtypes[t.dtype or "?"] = acc.dtypes.get(t.dtype or "?", 0) + 1
        n = 1
        for d in t.size:
            n *= d
        total += n * (f.itemsize.get(t.dtype or "", 0) or 0)
    if meta.byte_keys:
        acc.notes.append(M("%d keys are stored as pickled bytes (DCP loads them with torch.load(weights_only=False)): %s", len(meta.byte_keys), ", ".join(meta.byte_keys[:5])))
    return finish_report(FolderReport(path, "dcp", world_size=len(ranks) or None, tensors=len(meta.tensors), total_bytes=total,
                                missing=missing, unlisted=unlisted, model_files=tuple(data_files), transforms=transforms,
                                unreadable_transforms=unreadable),
                   acc, visible, shard_count=len(data_files))


def _weights_entries():
    from cudaenv.checkpoint.names import EMA_ENTRIES, WEIGHTS_ENTRIES

    return WEIGHTS_ENTRIES + EMA_ENTRIES


def _dcp_file(folder: str, name: str, items: List[L.DcpItem], f, judge):
    """One ``.distcp`` file: every item's ``torch.save`` archive walked (its directory and data.pkl, never its
    tensor bytes)."""
    from cudaenv.checkpoint.container import read_embedded
    from cudaenv.host.files import open_regular

    problems: List[str] = []
    reasons: List[VerdictReason] = []
    verdicts: List[Optional[str]] = []
    loads = True
    size = 0
    n_tensors = 0
    try:
        fh = open_regular(os.path.join(folder, name))
    except OSError as exc:
        return ShardFile(name, "data", 0, "distcp", L.dcp_rank(name), problems=(M("cannot be read: %s", exc.strerror or exc),)), ()
    seen: Dict[Tuple[int, int], Optional[str]] = {}  # (offset, length) -> its verdict: a range is walked once
    with fh:
        size = os.fstat(fh.fileno()).st_size
        for n, item in enumerate(sorted(items, key=lambda i: i.offset)):
            if n >= MAX_DCP_ITEMS:
                verdicts.append("inconclusive")
                reasons.append(VerdictReason(M("items %d and after", n), M("not walked: more than %d items in one file", MAX_DCP_ITEMS)))
                break
            where = M("item %s (bytes %d-%d)", item.fqn[:120], item.offset, item.offset + item.length)
            if item.offset < 0 or item.length <= 0 or item.offset + item.length > size:
                verdicts.append("inconclusive")
                if len(problems) < MAX_REASONS:
                    problems.append(M("%s lies outside the %d-byte file", where, size))
                    reasons.append(VerdictReason(where, M("not read: it lies outside the file")))
                continue
            if item.transforms:  # compressed or encoded by a DCP extension: not a torch.save archive as stored
                verdicts.append("inconclusive")
                n_tensors += item.tensor
                if len(reasons) < MAX_REASONS:
                    reasons.append(VerdictReason(where, M("stored through %s: its bytes are transformed, not walked", ", ".join(item.transforms)[:120])))
                if item.tensor:
                    loads = False
                continue
            if (item.offset, item.length) in seen:  # the same bytes named twice: walked once (a hostile
                n_tensors += item.tensor  # .metadata can name one range a million times)
                continue
            box = read_embedded(fh, item.offset, item.length, "%s %s" % (name, item.fqn))
            judged = judge(box, f)
            verdicts.append(judged["verdict"] if box.pickle is not None else "inconclusive")
            seen[(item.offset, item.length)] = verdicts[-1]
            if box.pickle is None:
                reasons.append(VerdictReason(where, "not a torch.save archive (%s): not walked" % box.format))
            if len(reasons) < MAX_REASONS:
                reasons.extend(VerdictReason("%s, %s" % (where, r.where), r.why) for r in judged["verdict_reasons"][:3])
            if item.tensor:
                n_tensors += 1
                # DCP loads a tensor item with torch.load(weights_only=True): every global allowed, the walk whole
                r = box.pickle
                ok = (r is not None and r.complete and not box.problems and not r.call_targets
                      and all(f.verdict(g) == "allowed" for g in r.globals) and all(op in f.opcodes for op in r.opcodes))
                if not ok:
                    loads = False
                    if len(problems) < MAX_REASONS:
                        problems.append(M("%s: torch.load(weights_only=True) would refuse it", where))
    shard = ShardFile(name, "data", size, "distcp", L.dcp_rank(name), n_tensors, sum(i.length for i in items),
                      pickles=len(seen), verdict=L.worst(verdicts), weights_only=loads if n_tensors else None,
                      problems=tuple(problems))
    return shard, reasons


# ------------------------------------------------------------------ DCP in the safetensors format
def _dcp_safetensors(path: str, folder: str, files: List[str], visible) -> FolderReport:
    """A folder of DCP's HuggingFaceStorageWriter shards (:mod:`cudaenv.checkpoint.hf_dcp`): each shard's header read
    (never its tensor bytes; a shard that is not safetensors is walked as any checkpoint), the chunks joined."""
    from cudaenv.checkpoint import hf_dcp
    from cudaenv.checkpoint.graph import prefix_findings
    from cudaenv.checkpoint.safetensors_report import _ST_DTYPES

    acc = Acc()
    shards = [n for n in files if hf_dcp.shard_name(n) is not None]
    others = [n for n in files if n.endswith(hf_dcp.SUFFIX) and n not in shards]
    if others:
        acc.problems.append(M("torch's HuggingFaceStorageReader reads every .safetensors file of the folder, and these are "
                            "not DCP shards: %s", ", ".join(others[:5])))
    joined = []
    versions = set()
    for name in shards:
        try:
            box, _report = inspect_member(folder, name, "data", visible, acc, hf_dcp.shard_name(name)[0] - 1,
                                          keep_prefixes=False, count_dtypes=False, lean=True)
        except OSError as exc:
            acc.problems.append(M("%s: cannot be read: %s", name, exc.strerror or exc))
            continue
        if box.format != "safetensors":
            acc.problems.append(M("%s: not a safetensors file (%s): DCP's HuggingFaceStorageWriter writes a value that is "
                                "not a tensor as a torch.save archive ahead of the safetensors header, and no safetensors "
                                "reader opens the file", name, box.format))
            if acc.verdicts[-1] is None:  # not read as any checkpoint: what loading it would run is unknown
                acc.verdicts[-1] = "inconclusive"
                acc.reasons.append(VerdictReason(name, M("neither a safetensors file nor a checkpoint cudaenv reads whole")))
            continue
        offsets, version, problem = hf_dcp.sharding_info(box.safetensors)
        versions.add(version)
        if problem:
            acc.problems.append(M("%s: %s", name, problem))
        joined.append((name, box.safetensors, offsets))
    tensors, problems = hf_dcp.join_shards(joined)
    acc.problems.extend(problems)
    from math import prod

    total = 0
    for t in tensors:
        dtype, bits = _ST_DTYPES.get(t.dtype, (t.dtype[:20], None))
        acc.dtypes[dtype] = acc.dtypes.get(dtype, 0) + 1
        total += (bits or 0) * prod(t.size) // 8
    acc.prefixes.extend(prefix_findings("", L.prefix_keys([t.fqn for t in tensors])))
    versions.discard(None)
    acc.notes.append(M("saved by torch.distributed.checkpoint's HuggingFaceStorageWriter%s: no .metadata; each shard's "
                     "header places its chunks (DCP_SHARDING_INFO), and nothing records the world size: the full sizes "
                     "are where the chunks present end, so a lost last rank's file shows only as sizes smaller than "
                     "your model's", " (DCP_VERSION %s)" % ", ".join(sorted(versions)) if versions else ""))
    ranks = {hf_dcp.shard_name(n)[0] for n in shards}
    return finish_report(FolderReport(path, "dcp-safetensors", world_size=len(ranks) or None, tensors=len(tensors),
                                      total_bytes=total, missing=tuple(hf_dcp.missing_shards(shards)),
                                      model_files=tuple(shards)), acc, visible, shard_count=len(shards))


# ------------------------------------------------------------------ DeepSpeed ZeRO
def _zero(path: str, folder: str, files: List[str], folders: List[str], visible) -> FolderReport:
    from cudaenv.host.files import read_regular

    acc = Acc()
    tag = None
    where = folder
    top = files
    if not any(L.is_zero_file(n) for n in files):
        latest = None
        if L.ZERO_LATEST in files:
            raw = read_regular(os.path.join(folder, L.ZERO_LATEST), 4096)
            latest = raw.decode("utf-8", "replace").strip() if raw is not None else None
            if latest is not None and latest not in folders:
                acc.problems.append(M("latest names %s, which is not a folder here", latest[:200]))
        tag = L.pick_tag(latest, folders)
        if tag is None:
            acc.problems.append(M("no global_step* folder with the checkpoint's files"))
            return finish_report(FolderReport(path, "deepspeed-zero"), acc, visible, shard_count=0)
        where = os.path.join(folder, tag)
        files, _sub = _listing(where)
    rel = (tag + "/") if tag else ""
    if L.ZERO_SCRIPT in top:
        acc.files.append(ShardFile(L.ZERO_SCRIPT, "script", os.path.getsize(os.path.join(folder, L.ZERO_SCRIPT)), "python"))
    models = [n for n in files if L.zero_role(n) == "model"]
    optims = [n for n in files if L.zero_role(n) == "optimizer"]
    tensors = total = 0
    stages: Dict[str, int] = {}  # optimizer file -> its zero_stage; each rank's file is read (issue 32: mp ranks)
    counts: Dict[str, int] = {}  # optimizer file -> its partition_count (the data-parallel world size)
    mp_sizes: Dict[str, int] = {}  # model file -> its mp_world_size
    from cudaenv.model.record import replace

    for name in models + optims:
        role = L.zero_role(name)
        try:
            box, report = inspect_member(where, name, role, visible, acc, L.zero_rank(name), keep_prefixes=role == "model",
                                        shown=rel + name, count_dtypes=role == "model")
        except OSError as exc:
            acc.problems.append(M("%s%s: cannot be read: %s", rel, name, exc.strerror or exc))
            continue
        acc.files[-1] = replace(acc.files[-1], mp_rank=L.zero_mp_rank(name))
        total += report.total_bytes
        if role == "model" and not tensors:  # (stage 3: every rank's model states list the same keys)
            tensors = report.tensors
        if box.pickle is None:
            continue
        if role == "model":
            _dp, mp = L.zero_model_facts(box.pickle.root)
            if mp is not None:
                mp_sizes[name] = mp
        else:
            stage_of, count_of = L.zero_optimizer_facts(box.pickle.root)
            if stage_of is not None:
                stages[name] = stage_of
            if count_of is not None:
                counts[name] = count_of
    stage = next(iter(stages.values()), None)
    count = next(iter(counts.values()), None)
    for what, values in ((M("ZeRO stage"), stages), (M("partition_count (data-parallel world size)"), counts),
                         ("mp_world_size", mp_sizes)):
        if len(set(values.values())) > 1:  # every rank's file must say the same
            acc.problems.append(M("the ranks' files disagree on the %s: %s", what, join(", ", (
                M("%s%s says %d", rel, n, v) for n, v in list(values.items())[:6]))))
    if stage is None and any(n.startswith("zero_pp_rank_") and n.endswith("_model_states.pt") for n in models):
        stage = 3
    mp_ranks = {L.zero_mp_rank(n) for n in models + optims} - {None}
    mp_world = max(mp_sizes.values()) if mp_sizes else (max(mp_ranks) + 1 if mp_ranks else 1)
    over = sorted(n for n in models + optims if (L.zero_mp_rank(n) or 0) >= mp_world)
    if over:
        acc.problems.append(M("%d files are of model-parallel ranks the model states do not count (mp_world_size %d): %s", len(over), mp_world, ", ".join(rel + n for n in over[:5])))
    world = count if count is not None else (len([n for n in optims if L.zero_mp_rank(n) in (0, None)]) or None)
    missing: List[str] = []
    if world is not None and optims:
        stem = optims[0][:optims[0].find("zero_pp_rank_")] if "zero_pp_rank_" in optims[0] else ""
        per_rank_model = any(n.startswith("zero_pp_rank_") for n in models)
        want_models, want_optims = L.zero_expected_files(stem, world, mp_world, per_rank_model)
        have = set(files)
        missing += [rel + n for n in want_optims if n not in have]
        if models:
            missing += [rel + n for n in want_models if n not in have]
    if not models:
        missing.append(rel + "mp_rank_00_model_states.pt")
    if mp_world > 1:
        acc.notes.append(M("%d model-parallel (tensor-parallel) ranks: each mp_rank_XX file holds a slice of the model, "
                         "checked rank by rank", mp_world))
    return finish_report(FolderReport(path, "deepspeed-zero", tag=tag, world_size=world, zero_stage=stage,
                                mp_world_size=mp_world if (mp_sizes or mp_ranks) else None, tensors=tensors,
                                total_bytes=total, missing=tuple(missing[:200]),
                                model_files=tuple(rel + n for n in models), optimizer_files=tuple(rel + n for n in optims)),
                   acc, visible, shard_count=len(models) + len(optims))


def folder_exit_code(report: FolderReport) -> int:
    """As a file's: 3 unsafe, 4 inconclusive; else 0 when every file is there, consistent and loads here as it is
    (weights_only, no device to map), 1 when not."""
    from cudaenv.checkpoint.advice import needs_mapping
    from cudaenv.checkpoint.tables import EXIT_INCONCLUSIVE, EXIT_UNSAFE

    if report.verdict == "unsafe":
        return EXIT_UNSAFE
    if report.verdict == "inconclusive":
        return EXIT_INCONCLUSIVE
    whole = report.layout != "unknown" and not report.missing and not report.inconsistencies
    return 0 if whole and report.weights_only is not False and not needs_mapping(report) else 1
