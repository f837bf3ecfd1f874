"""``cudaenv checkpoint fix FOLDER -o OUT`` (issue 32): one file from a checkpoint in many, prefixes stripped and
devices mapped in the same pass, checked before it replaces anything.

* **sharded safetensors**: merged without torch: the headers joined (keys renamed as asked) and every tensor's
  bytes copied from its shard's byte range into one safetensors file.
* **sharded .bin**: each shard loaded by torch in your Python (``_child/checkpoint_fix.py``; ``weights_only=True``,
  or ``False`` with ``--trust``) and saved as one ``torch.save`` file.
* **DCP**: torch's own ``torch.distributed.checkpoint.format_utils.dcp_to_torch_save``, in your Python; it loads the
  items DCP stored as bytes with ``torch.load(weights_only=False)``, so the folder's verdict must be safe (else
  ``--trust``).
* **DeepSpeed ZeRO**: the folder's own ``zero_to_fp32.py`` (``get_fp32_state_dict_from_zero_checkpoint``), only with
  ``--trust``: it is code shipped with the checkpoint.

An OUT ending in ``.safetensors`` from the last three is written by the safetensors library in the same child
(tied weights once, their other names in the metadata; views of shared memory copied; values that are not tensors
named). Missing shards, an OUT of the wrong kind and too little free space are said before anything is written.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from cudaenv.checkpoint.fix import EXIT_NOT_WRITTEN
from cudaenv.checkpoint.rewrite import COPY_CHUNK
from cudaenv.core.errors import UserError
from cudaenv.core.i18n import M



def consolidate(host, path: str, out: Optional[str], opts, visible, trust: bool = False, python: Optional[str] = None,
                timeout: Optional[float] = None, in_place: bool = False):
    """Write the one-file checkpoint of the folder ``path`` at ``out``; the :class:`FixReport`."""
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
    ext = os.path.splitext(target.path)[1].lower()
    if layout == "safetensors-shards" and ext != ".safetensors":
        raise UserError(M("sharded safetensors are merged into one safetensors file: give -o OUT.safetensors"),
                        hint=M("(a torch.save file from safetensors shards is not written yet)"))
    to_safetensors = layout != "safetensors-shards" and ext == ".safetensors"  # torch writes it through safetensors
    if layout == "deepspeed-zero" and not trust:
        raise UserError(M("a DeepSpeed ZeRO folder is consolidated by its own zero_to_fp32.py, which is code shipped "
                        "with the checkpoint: nothing was run"), hint=M("read it, and only if you trust where the folder "
                                                                     "came from: add --trust"))
    if layout != "safetensors-shards" and folder.verdict != "safe" and not trust:
        why = "; ".join("%s: %s" % (r.where, r.why) for r in folder.verdict_reasons[:2]) or "verdict %s" % folder.verdict
        raise UserError(M("%s is not safe to load (%s)", printable(path), printable(why)),
                        hint=M("only if you trust where it came from: add --trust (torch loads it in your Python, which "
                             "runs its code)"))
    need = _bytes_needed(folder)
    _check_space(target.path, need)
    warnings: List[str] = []
    stale = remove_stale_temps(os.path.dirname(os.path.abspath(target.path)))
    if stale:
        warnings.append("removed %d temporary file%s a killed fix left" % (len(stale), "" if len(stale) == 1 else "s"))
    changes: List[str] = []
    try:
        writer = atomic_binary(target.path)
        with writer as fh:
            if layout == "safetensors-shards":
                method = "merge"
                changes = merge_safetensors(_folder_of(path, folder), folder, fh, opts)
                if opts.map_location:
                    changes.append("safetensors stores no device: --map-location %s is for the loader "
                                   "(safe_open(..., device=%r))" % (opts.map_location, opts.map_location))
                fh.flush()
                after = _inspect(writer.tmp, visible)
                if after.format != "safetensors" or after.inconsistencies or after.tensors != folder.tensors:
                    raise UserError(M("the merged file did not check out (%s): nothing was written", printable(
                        "; ".join(after.inconsistencies[:3]) or "%d tensors, the shards have %d" % (after.tensors, folder.tensors))),
                                    exit_code=EXIT_NOT_WRITTEN)
            else:
                method = "torch" if layout != "deepspeed-zero" else "zero_to_fp32"
                fh.flush()
                changes = _torch_merge(host, python, timeout, path, folder, writer.tmp, opts, trust, to_safetensors)
                after = _inspect(writer.tmp, visible)
                if to_safetensors:
                    if after.format != "safetensors" or after.inconsistencies:
                        raise UserError(M("the safetensors file did not check out (%s): nothing was written", printable(
                            "; ".join(after.inconsistencies[:3]) or after.format)), exit_code=EXIT_NOT_WRITTEN)
                elif not F.loadable(after):
                    why = [r.why for r in after.verdict_reasons] + list(after.inconsistencies + after.weights_only_reasons)
                    raise UserError(M("the consolidated file did not check out (verdict %s: %s); nothing was written", after.verdict, printable("; ".join(why)[:300] or "not loadable with weights_only=True")),
                                    exit_code=EXIT_NOT_WRITTEN)
    except OSError as exc:
        raise UserError(M("cannot write %s: %s; nothing was written", printable(target.path), printable(exc.strerror or str(exc))),
                        hint="free space or choose another -o folder" if exc.errno == 28 else None,
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
    """One safetensors file from the shards of ``report`` (in index order, each shard's tensors in data order): the
    joined header with every key renamed by ``opts.strip`` / ``opts.add``, then each tensor's bytes copied from its
    shard. Raises :class:`UserError` before a byte is written when two keys would end up with one name."""
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
    for name in report.model_files:
        shard = os.path.join(folder, name)
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
    changes = ["merged %d safetensors shards into one file (%d tensors, header and byte ranges, no torch)" % (
        len(report.model_files), len(plan))]
    if opts.strip:
        changes.append("stripped %s from %d keys" % (" then ".join(opts.strip), renamed))
    if opts.add:
        changes.append("added %s to every key" % opts.add)
    return changes


def _torch_merge(host, python: Optional[str], timeout: Optional[float], path: str, report, tmp: str, opts,
                 trust: bool, to_safetensors: bool = False) -> List[str]:
    """The .bin shards, the DCP folder or the ZeRO folder loaded and saved by torch in the user's Python."""
    from cudaenv.checkpoint.fix import _run_child

    folder = _folder_of(path, report)
    spec: Dict[str, Any] = {"output": tmp, "map_location": opts.map_location, "strip": opts.strip, "add": opts.add,
                            "extract": opts.extract, "to": "safetensors" if to_safetensors else None}
    if report.layout == "bin-shards":
        spec.update(layout="bin", sources=[os.path.abspath(os.path.join(folder, n)) for n in report.model_files],
                    weights_only=not trust)
    elif report.layout == "dcp":
        spec.update(layout="dcp", source=os.path.abspath(folder), weights_only=not trust)
    else:
        spec.update(layout="zero", source=os.path.abspath(folder), tag=report.tag,
                    script=os.path.abspath(os.path.join(folder, "zero_to_fp32.py")))
        if not os.path.isfile(spec["script"]):
            raise UserError(M("the folder has no zero_to_fp32.py to consolidate it with"),
                            hint=M("DeepSpeed copies it beside the checkpoint; copy it from the DeepSpeed that saved it"))
    return _run_child(host, python, timeout, path, spec)
