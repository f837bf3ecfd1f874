"""``cudaenv checkpoint fix FOLDER -o OUT`` (issue 32): one file from a checkpoint in many, prefixes stripped and
devices mapped in the same pass, checked before it replaces anything.

* **sharded safetensors**: merged without torch: the headers joined (keys renamed as asked) and every tensor's
  bytes copied from its shard's byte range into one safetensors file.
* **sharded .bin**: each shard loaded by torch in your Python (``_child/checkpoint_fix.py``; ``weights_only=True``,
  or ``False`` with ``--trust``) and saved as one ``torch.save`` file.
* **DCP**: torch's own ``torch.distributed.checkpoint.format_utils.dcp_to_torch_save``, in your Python; it loads the
  items DCP stored as bytes with ``torch.load(weights_only=False)``, so the folder's verdict must be safe (else
  ``--trust``).
* **DCP in the safetensors format** (``HuggingFaceStorageWriter``'s per-rank shards): read by torch's own
  ``HuggingFaceStorageReader`` through ``dcp.load`` in your Python, into tensors of the full sizes its headers give
  (torch's ``consolidate_safetensors_files`` is not used: torch 2.13's raises TypeError on an integer tensor,
  ``torch.finfo``); refused before anything runs when the shards do not make whole tensors.
* **DeepSpeed ZeRO**: the folder's own ``zero_to_fp32.py`` (``get_fp32_state_dict_from_zero_checkpoint``), only with
  ``--trust``: it is code shipped with the checkpoint.

OUT's format is ``--to pt|safetensors``, else OUT's suffix (``.safetensors``; anything else a torch.save file). A
safetensors OUT from the last three is written by the safetensors library in the same child (tied weights once,
their other names in the metadata; views of shared memory copied; values that are not tensors named); a torch.save
OUT from safetensors shards is read by the safetensors library and saved by torch in your Python. One file converts
the same way (:func:`convert_file`). A converted result must hold the source's keys and shapes
(:mod:`cudaenv.checkpoint.flat`). Missing shards, an OUT of the wrong kind and too little free space are said before
anything is written.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from cudaenv.checkpoint.fix import EXIT_NOT_WRITTEN, cut_then_escaped
from cudaenv.checkpoint.rewrite import COPY_CHUNK
from cudaenv.core.errors import UserError
from cudaenv.core.i18n import M, edit, join, listing



def consolidate(host, path: str, out: Optional[str], opts, visible, trust: bool = False, python: Optional[str] = None,
                timeout: Optional[float] = None, in_place: bool = False, to: Optional[str] = None):
    """Write the one-file checkpoint of the folder ``path`` at ``out`` (``to``: ``pt`` or ``safetensors``, else
    OUT's suffix says); the :class:`FixReport`."""
    from cudaenv.checkpoint import fix as F
    from cudaenv.checkpoint.folder import inspect_folder
    from cudaenv.checkpoint.report import FixReport
    from cudaenv.core.fs import atomic_binary, remove_stale_temps
    from cudaenv.core.text import printable

    if in_place:
        raise UserError(M("--in-place rewrites one file; a checkpoint folder needs -o OUT"), hint=M("-o consolidated.pt"))
    target = F.plan_output(path, out, False)
    folder = inspect_folder(path, visible)
    layout = folder.layout
    if layout == "unknown":
        raise UserError(M("%s is not a checkpoint folder cudaenv recognises", printable(path)))
    if folder.missing:
        raise UserError(M("%d file%s the checkpoint names %s missing (%s): nothing was written", len(folder.missing), "" if len(folder.missing) == 1 else "s", "is" if len(folder.missing) == 1 else "are", ", ".join(printable(m) for m in folder.missing[:5])), hint=M("copy them from where the checkpoint was saved"))
    fmt = to or F.output_format(target.path, None)
    if layout in ("safetensors-shards", "dcp-safetensors") and opts.extract is not None:
        raise UserError(M("safetensors shards are one flat dict of tensors: --extract does not apply to them"))
    to_safetensors = layout != "safetensors-shards" and fmt == "safetensors"  # torch writes it through safetensors
    expected = _shard_shapes(_folder_of(path, folder), folder, opts) if layout == "safetensors-shards" else None
    if layout == "dcp" and folder.unreadable_transforms:
        raise UserError(M("%s stores items through %s, which torch's DCP reader does not know (it raises 'Unknown "
                        "extension'): torch's dcp_to_torch_save cannot read them, and nothing was run", printable(path), printable(", ".join(folder.unreadable_transforms[:3]))),
                        hint=M("convert it in the code that registered that extension (the ExtensionRegistry given to "
                             "FileSystemReader), or re-save it without it"))
    if layout == "deepspeed-zero" and (folder.mp_world_size or 1) > 1:
        # zero_to_fp32.py reads mp_rank_00's model states only and expects one optimizer file per data-parallel
        # rank (it raises on the others: deepspeed/utils/zero_to_fp32.py get_model_state_file, parse_optim_states)
        raise UserError(M("%s holds %d model-parallel (tensor-parallel) ranks: DeepSpeed's zero_to_fp32.py does not "
                        "merge tensor-parallel slices (it reads mp_rank_00 only), so one file of the whole model "
                        "cannot come from it: nothing was run", printable(path), folder.mp_world_size),
                        hint=M("merge the slices with the tool of the framework that split the model (Megatron-DeepSpeed: "
                             "DeepSpeed's deepspeed/checkpoint/ds_to_universal.py), then consolidate its output"))
    if layout == "deepspeed-zero" and not trust:
        raise UserError(M("a DeepSpeed ZeRO folder is consolidated by its own zero_to_fp32.py, which is code shipped "
                        "with the checkpoint: nothing was run"), hint=M("read it, and only if you trust where the folder "
                                                                     "came from: add --trust"))
    if layout == "dcp-safetensors" and folder.inconsistencies:
        raise UserError(M("%s is not one whole checkpoint that torch's HuggingFaceStorageReader reads right (%s): "
                          "nothing was run", printable(path), listing(M("; "), folder.inconsistencies[:2], cut_then_escaped(400))),
                        hint=M("cudaenv checkpoint inspect says what is wrong; a missing rank's file must be copied from "
                               "where the checkpoint was saved"))
    if layout == "dcp-safetensors":  # every shard a safetensors file that read whole: nothing of it runs
        expected = _dcp_st_shapes(_folder_of(path, folder), folder, opts)
    elif layout != "safetensors-shards" and folder.verdict != "safe" and not trust:
        why = join("; ", (M("%s: %s", r.where, r.why) for r in folder.verdict_reasons[:2])) or M("verdict %s", folder.verdict)
        raise UserError(M("%s is not safe to load (%s)", printable(path), edit(why, printable)),  # (escaped as said)
                        hint=M("only if you trust where it came from: add --trust (torch loads it in your Python, which "
                             "runs its code)"))
    need = _bytes_needed(folder)
    _check_space(target.path, need)
    warnings: List[str] = []
    stale = remove_stale_temps(os.path.dirname(os.path.abspath(target.path)))
    if stale:
        warnings.append(M("removed %d temporary file%s a killed fix left", len(stale), "" if len(stale) == 1 else "s"))
    changes: List[str] = []
    try:
        writer = atomic_binary(target.path)
        with writer as fh:
            if layout == "safetensors-shards" and fmt == "pt":  # read by safetensors, saved by torch, in your Python
                method = "torch"
                fh.flush()
                changes = _torch_merge(host, python, timeout, path, folder, writer.tmp, opts, trust)
                check_converted(writer.tmp, visible, "pt", expected)
                after = _inspect(writer.tmp, visible)
            elif layout == "safetensors-shards":
                method = "merge"
                changes = merge_safetensors(_folder_of(path, folder), folder, fh, opts)
                if opts.map_location:
                    changes.append(M("safetensors stores no device: --map-location %s is for the loader "
                                     "(safe_open(..., device=%r))", opts.map_location, opts.map_location))
                fh.flush()
                check_converted(writer.tmp, visible, "safetensors", expected)
                after = _inspect(writer.tmp, visible)
                if after.format != "safetensors" or after.inconsistencies or after.tensors != folder.tensors:
                    raise UserError(M("the merged file did not check out (%s): nothing was written", listing(
                        M("; "), after.inconsistencies[:3], printable) or M("%d tensors, the shards have %d", after.tensors, folder.tensors)),
                                    exit_code=EXIT_NOT_WRITTEN)
            else:
                method = "torch" if layout != "deepspeed-zero" else "zero_to_fp32"
                fh.flush()
                changes = _torch_merge(host, python, timeout, path, folder, writer.tmp, opts, trust, to_safetensors)
                if expected is not None:
                    check_converted(writer.tmp, visible, fmt, expected)
                after = _inspect(writer.tmp, visible)
                if to_safetensors:
                    if after.format != "safetensors" or after.inconsistencies:
                        raise UserError(M("the safetensors file did not check out (%s): nothing was written", listing(
                            M("; "), after.inconsistencies[:3], printable) or printable(after.format)), exit_code=EXIT_NOT_WRITTEN)
                elif not F.loadable(after):
                    why = [r.why for r in after.verdict_reasons] + list(after.inconsistencies + after.weights_only_reasons)
                    raise UserError(M("the consolidated file did not check out (verdict %s: %s); nothing was written", after.verdict,
                                      listing(M("; "), why, cut_then_escaped(300)) or M("not loadable with weights_only=True")),
                                    exit_code=EXIT_NOT_WRITTEN)
    except OSError as exc:
        raise UserError(M("cannot write %s: %s; nothing was written", printable(target.path), printable(exc.strerror or str(exc))),
                        hint=M("free space or choose another -o folder") if exc.errno == 28 else None,
                        exit_code=EXIT_NOT_WRITTEN) from None
    from cudaenv.model.record import replace

    after = replace(after, path=target.path)
    return FixReport(path, target.path, method, tuple(target.notes + changes), None, after, None, tuple(warnings),
                     folder=folder)


def _inspect(path: str, visible):
    from cudaenv.checkpoint.analyze import inspect_file

    return inspect_file(path, visible, with_tensors=False)


def _folder_of(path: str, report) -> str:
    return path if os.path.isdir(path) else (os.path.dirname(path) or ".")


def _bytes_needed(report) -> int:
    """What OUT will take: the tensors' bytes (ZeRO: the fp32 weights, a third of Adam's fp32 optimizer states: the
    master weights and two moments), plus a little for the pickle or header."""
    if report.layout == "deepspeed-zero":
        optim = sum(f.size for f in report.files if f.role == "optimizer")
        return optim // 3 + (1 << 20)
    return report.total_bytes + (1 << 20)


def _check_space(out: str, need: int) -> None:
    import shutil

    from cudaenv.core.text import printable

    folder = os.path.dirname(os.path.abspath(out))
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < need:
        raise UserError(M("%s has %d bytes free, the consolidated checkpoint needs about %d: nothing was written", printable(folder), free, need), hint=M("free space or choose another -o folder"), exit_code=EXIT_NOT_WRITTEN)


def merge_safetensors(folder: str, report, out_fh, opts) -> List[str]:
    """One safetensors file from the shards of ``report`` (in index order): :func:`merge_files`."""
    return merge_files([os.path.join(folder, name) for name in report.model_files], out_fh, opts)


def merge_files(paths: List[str], out_fh, opts) -> List[str]:
    """One safetensors file from the safetensors files ``paths`` (in order, each file's tensors in data order): the
    joined header with every key renamed by ``opts.strip`` / ``opts.add``, then each tensor's bytes copied from its
    file. Raises :class:`UserError` before a byte is written when two keys would end up with one name."""
    import json
    import struct

    from cudaenv.checkpoint.container import open_container
    from cudaenv.checkpoint.rewrite import strip_key
    from cudaenv.core.text import printable
    from cudaenv.host.files import open_regular

    plan: List[tuple] = []  # (new key, shard path, absolute start, length, dtype, shape)
    header: Dict[str, Any] = {}
    meta: Optional[dict] = None
    renamed = 0
    offset = 0
    for shard in paths:
        name = os.path.basename(shard)
        box = open_container(shard)
        if box.format != "safetensors" or box.safetensors is None:
            raise UserError(M("%s is not a safetensors file: not merged", printable(name)))
        if meta is None and isinstance(box.safetensors.get("__metadata__"), dict):
            meta = box.safetensors["__metadata__"]
        items = [(k, v) for k, v in box.safetensors.items() if k != "__metadata__"]
        items.sort(key=lambda kv: kv[1].get("data_offsets", [0])[0] if isinstance(kv[1], dict) else 0)
        for key, info in items:
            new = strip_key(key, opts.strip) if opts.strip else key
            if opts.add:
                new = opts.add + new
            renamed += new != key
            if new in header:
                raise UserError(M("two tensors would be named %s (one from %s): nothing was written", printable(new), printable(name)), hint=M("strip fewer prefixes"))
            begin, end = info["data_offsets"]
            header[new] = {"dtype": info["dtype"], "shape": info["shape"], "data_offsets": [offset, offset + end - begin]}
            plan.append((shard, box.safetensors_data_start + begin, end - begin))
            offset += end - begin
    if meta is not None:
        meta = _renamed_aliases(meta, opts)
        header = dict([("__metadata__", meta)] + list(header.items()))
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the safetensors library pads its header to 8 bytes
    out_fh.write(struct.pack("<Q", len(raw)))
    out_fh.write(raw)
    current = None
    src = None
    try:
        for shard, start, length in plan:
            if shard != current:
                if src is not None:
                    src.close()
                src, current = open_regular(shard), shard
            src.seek(start)
            left = length
            while left:
                chunk = src.read(min(COPY_CHUNK, left))
                if not chunk:
                    raise UserError(M("%s ends %d bytes early: nothing was written", printable(shard), left),
                                    exit_code=EXIT_NOT_WRITTEN)
                out_fh.write(chunk)
                left -= len(chunk)
    finally:
        if src is not None:
            src.close()
    if len(paths) == 1:
        changes = [M("rewrote the safetensors header (%d tensors, their bytes copied, no torch)", len(plan))]
    else:
        changes = [M("merged %d safetensors shards into one file (%d tensors, header and byte ranges, no torch)",
                     len(paths), len(plan))]
    if opts.strip:
        from cudaenv.checkpoint.fix import then

        changes.append(M("stripped %s from %d keys", then(opts.strip), renamed))
    if opts.add:
        changes.append(M("added %s to every key", opts.add))
    return changes


def _renamed_aliases(meta: dict, opts) -> dict:
    """The safetensors metadata with the tied names cudaenv wrote once (``cudaenv.aliases``) renamed as the keys are,
    so they still name the tensors they stand for."""
    import json

    from cudaenv.checkpoint.flat import ALIASES_KEY
    from cudaenv.checkpoint.rewrite import strip_key

    raw = meta.get(ALIASES_KEY)
    if not isinstance(raw, str) or not (opts.strip or opts.add):
        return meta
    try:
        aliases = json.loads(raw)
    except ValueError:
        return meta
    if not isinstance(aliases, dict):
        return meta

    def rename(k):
        k = strip_key(k, opts.strip) if opts.strip else k
        return opts.add + k if opts.add else k

    renamed = {rename(k): rename(v) for k, v in aliases.items() if isinstance(k, str) and isinstance(v, str)}
    return dict(meta, **{ALIASES_KEY: json.dumps(renamed, sort_keys=True)})


def _torch_merge(host, python: Optional[str], timeout: Optional[float], path: str, report, tmp: str, opts,
                 trust: bool, to_safetensors: bool = False) -> List[str]:
    """The .bin shards, the DCP folder or the ZeRO folder loaded and saved by torch in the user's Python."""
    from cudaenv.checkpoint.fix import _run_child

    folder = _folder_of(path, report)
    spec: Dict[str, Any] = {"output": tmp, "map_location": opts.map_location, "strip": opts.strip, "add": opts.add,
                            "extract": opts.extract, "to": "safetensors" if to_safetensors else None}
    if report.layout == "safetensors-shards":
        spec.update(layout="safetensors", sources=[os.path.abspath(os.path.join(folder, n)) for n in report.model_files])
    elif report.layout == "bin-shards":
        spec.update(layout="bin", sources=[os.path.abspath(os.path.join(folder, n)) for n in report.model_files],
                    weights_only=not trust)
    elif report.layout == "dcp":
        from cudaenv.checkpoint.layout import transform_modules

        spec.update(layout="dcp", source=os.path.abspath(folder), weights_only=not trust,
                    need_modules=transform_modules(report.transforms))  # (checked before torch is imported)
    elif report.layout == "dcp-safetensors":
        spec.update(layout="dcp-safetensors", source=os.path.abspath(folder))
    else:
        spec.update(layout="zero", source=os.path.abspath(folder), tag=report.tag,
                    script=os.path.abspath(os.path.join(folder, "zero_to_fp32.py")))
        if not os.path.isfile(spec["script"]):
            raise UserError(M("the folder has no zero_to_fp32.py to consolidate it with"),
                            hint=M("DeepSpeed copies it beside the checkpoint; copy it from the DeepSpeed that saved it"))
    return _run_child(host, python, timeout, path, spec)


def _shard_shapes(folder: str, report, opts):
    """The names and shapes of the shards' headers, renamed as asked (what the one file must hold)."""
    from cudaenv.checkpoint import flat
    from cudaenv.checkpoint.container import open_container

    shapes: Dict[str, tuple] = {}
    for name in report.model_files:
        box = open_container(os.path.join(folder, name))
        if box.safetensors is None:
            return None
        shapes.update(flat.safetensors_shapes(box.safetensors))
    return dict(zip(flat.renamed_keys(list(shapes), opts.strip, opts.add), shapes.values()))


def _dcp_st_shapes(folder: str, report, opts):
    """The keys and full sizes of a DCP folder in the safetensors format (its shards' headers joined as torch's
    reader joins them), renamed as asked: what the one file must hold."""
    from cudaenv.checkpoint import flat, hf_dcp
    from cudaenv.checkpoint.container import open_container

    shards = []
    for name in report.model_files:
        box = open_container(os.path.join(folder, name))
        shards.append((name, box.safetensors, hf_dcp.sharding_info(box.safetensors)[0]))
    tensors, _problems = hf_dcp.join_shards(shards)
    keys = flat.renamed_keys([t.fqn for t in tensors], opts.strip, opts.add)
    return dict(zip(keys, (tuple(t.size) for t in tensors)))


# ------------------------------------------------------------------ one file to another format (--to)
def convert_file(host, path: str, out: Optional[str], opts, visible, in_place: bool = False, trust: bool = False,
                 python: Optional[str] = None, timeout: Optional[float] = None, to: str = "safetensors"):
    """``fix FILE --to safetensors`` (a torch.save file written as safetensors by torch and the safetensors library in
    your Python, with tied and shared tensors as :func:`_child.checkpoint_fix.save_safetensors` writes them for a
    folder; or a safetensors file's keys renamed without torch) and ``fix FILE.safetensors --to pt`` (read by the
    safetensors library, saved by torch). The result is checked before it replaces anything: a safetensors header
    that reads whole, or a torch.save file torch.load(weights_only=True) loads; and the keys and shapes of the source
    (:mod:`cudaenv.checkpoint.flat`). The :class:`FixReport`; every failure a :class:`UserError`."""
    from cudaenv.checkpoint import fix as F
    from cudaenv.checkpoint.analyze import inspect_file
    from cudaenv.core.fs import remove_stale_temps
    from cudaenv.core.text import printable

    target = F.plan_output(path, out, in_place)
    try:
        before = inspect_file(path, visible, with_tensors=False)
    except OSError as exc:
        raise UserError(M("cannot read %s: %s", printable(path), printable(exc.strerror or exc)))
    warnings: List[str] = []
    out = target.path
    source_st = before.format == "safetensors"
    if source_st and opts.extract is not None:
        raise UserError(M("a safetensors file is one flat dict of tensors: --extract does not apply to it"))
    if not source_st and before.format not in F.SAFE_FORMATS + ("torchscript", "pickle", "torch-legacy-tar"):
        raise UserError(M("%s is a %s file: not converted", printable(path), before.format))
    safe = (not source_st and before.format in F.SAFE_FORMATS and before.verdict == "safe" and before.weights_only is True
            and not [p for p in before.inconsistencies + before.weights_only_reasons if p not in before.mended_by_fix])
    if not source_st and not safe:
        why = listing(M("; "), [r.why for r in before.verdict_reasons[:2]] + list(before.weights_only_reasons[:3]
                                                                                 + before.inconsistencies[:2])) or before.format
        if not trust:
            raise UserError(M("%s is not safe to load with torch.load(weights_only=True) (%s)", printable(path),
                              edit(why, printable)),
                            hint=M("only if you trust where it came from: add --trust (torch loads it in your Python, "
                                 "which runs its code)"))
        warnings.append(M("--trust: torch.load(weights_only=False) runs the file's code in your Python (%s)", why))
    expected = source_shapes(path, opts, source_st)
    _check_space(out, before.total_bytes + (1 << 20))
    stale = remove_stale_temps(os.path.dirname(os.path.abspath(out)))
    if stale:
        warnings.append(M("removed %d temporary file%s a killed fix left", len(stale), "" if len(stale) == 1 else "s"))
    try:
        return _convert(host, path, target, opts, visible, in_place, python, timeout, to, before, source_st, safe,
                        expected, warnings)
    except OSError as exc:
        raise UserError(M("cannot write %s: %s; nothing was written", printable(out), printable(exc.strerror or str(exc))),
                        hint=M("free space or choose another -o folder") if exc.errno == 28 else None,
                        exit_code=EXIT_NOT_WRITTEN) from None


def _convert(host, path, target, opts, visible, in_place, python, timeout, to, before, source_st, safe, expected,
             warnings):
    from cudaenv.checkpoint import fix as F
    from cudaenv.checkpoint.report import FixReport
    from cudaenv.core.fs import atomic_binary

    out = target.path
    backup = None
    changes: List[str] = []
    writer = atomic_binary(out)
    with writer as fh:
        if source_st and to == "safetensors":
            method = "merge"
            changes = merge_files([path], fh, opts)
            if opts.map_location:
                changes.append(M("safetensors stores no device: --map-location %s is for the loader "
                                 "(safe_open(..., device=%r))", opts.map_location, opts.map_location))
        else:
            method = "convert" if source_st or safe else "torch"  # (torch: --trust, the file's code may run)
            fh.flush()
            spec: Dict[str, Any] = {"output": writer.tmp, "map_location": opts.map_location, "strip": opts.strip,
                                    "add": opts.add, "extract": opts.extract, "to": to}
            if source_st:
                spec.update(layout="safetensors", sources=[os.path.abspath(path)])
            else:
                spec.update(source=os.path.abspath(path), weights_only=safe)
            changes = F._run_child(host, python, timeout, path, spec)
        fh.flush()
        check_converted(writer.tmp, visible, to, expected)
        if in_place:
            backup = F._backup(out)
    after = _inspect(out, visible)
    return FixReport(path, out, method, tuple(target.notes + changes), before, after, backup, tuple(warnings))


def source_shapes(path: str, opts, source_st: bool):
    """The names and shapes the converted file must hold, from cudaenv's own reading of ``path`` (None when its
    pickle did not read whole: then only the format is checked)."""
    from cudaenv.checkpoint import flat
    from cudaenv.checkpoint import graph as G
    from cudaenv.checkpoint.container import open_container

    box = open_container(path)
    if source_st:
        if box.safetensors is None:
            return None
        shapes = flat.safetensors_shapes(box.safetensors)
        return dict(zip(flat.renamed_keys(list(shapes), opts.strip, opts.add), shapes.values()))
    if box.pickle is None or not box.pickle.complete:
        return None
    an = G.graph(box.pickle.root, G.storages_of(box))

    def tensor_of(value):
        t = an.tensor(value)
        return tuple(t.shape) if t is not None else None

    return flat.pt_shapes(box.pickle.root, tensor_of, opts.strip, opts.add, opts.extract)


def check_converted(tmp: str, visible, to: str, expected) -> None:
    """The converted file before it replaces anything: a safetensors header that reads whole, or a torch.save file
    torch.load(weights_only=True) loads; and the names and shapes ``expected`` (UserError, exit 1: nothing was
    written)."""
    from cudaenv.checkpoint import fix as F
    from cudaenv.checkpoint import flat
    from cudaenv.checkpoint.analyze import inspect_file
    from cudaenv.checkpoint.container import open_container
    from cudaenv.core.text import printable

    if to == "safetensors":
        box = open_container(tmp)
        if box.format != "safetensors" or box.safetensors is None or box.problems:
            raise UserError(M("the safetensors file did not check out (%s); nothing was written", listing(
                M("; "), box.problems[:3], printable) or printable(box.format)), exit_code=EXIT_NOT_WRITTEN)
        got = flat.safetensors_shapes(box.safetensors)
    else:
        check = inspect_file(tmp, visible, with_tensors=True)
        if not F.loadable(check):
            why = [r.why for r in check.verdict_reasons] + list(check.inconsistencies + check.weights_only_reasons)
            raise UserError(M("the torch.save file did not check out (verdict %s: %s); nothing was written", check.verdict,
                              listing(M("; "), why, cut_then_escaped(300)) or M("not loadable with weights_only=True")),
                            exit_code=EXIT_NOT_WRITTEN)
        got = {e.key: tuple(e.shape) for e in check.tensor_list}
    if expected is not None:
        problems = flat.compare(expected, got)
        if problems:
            raise UserError(M("the written file does not hold what the source holds (%s); nothing was written",
                              listing(M("; "), problems, lambda text: printable(text)[:600])), exit_code=EXIT_NOT_WRITTEN)
