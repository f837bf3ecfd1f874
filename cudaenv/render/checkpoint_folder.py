"""``cudaenv checkpoint inspect FOLDER`` as text: the layout (DCP, DeepSpeed ZeRO, sharded safetensors or .bin), the
world size or shard count, every file with its size and verdict, the tensors, dtypes and saved devices of all of
them, wrapper prefixes across the shards, missing and unlisted files, and what to run to get one file.

Everything that came from the folder (names, keys, global names, devices) passes through
:func:`cudaenv.core.text.printable`."""

from __future__ import annotations

from typing import List

from cudaenv.checkpoint.report import FolderReport, ShardFile
from cudaenv.core.i18n import N_, t, tn, tr
from cudaenv.core.text import printable
from cudaenv.render.checkpoint import VERDICT_WORDS, device_summary, human_bytes
from cudaenv.render.text import WIDTH, wrap, wrap_advice

LAYOUT_NAMES = {
    "dcp": N_("torch.distributed.checkpoint (DCP) folder: .metadata + .distcp files"),
    "dcp-safetensors": N_("torch.distributed.checkpoint (DCP) folder in the safetensors format: one "
                          "shard-*-model-*.safetensors file per rank (HuggingFaceStorageWriter)"),
    "deepspeed-zero": N_("DeepSpeed ZeRO checkpoint folder"),
    "safetensors-shards": N_("sharded safetensors checkpoint"),
    "bin-shards": N_("sharded .bin checkpoint (torch.save shards)"),
    "unknown": N_("a folder cudaenv does not recognise as a checkpoint (no .metadata, ZeRO files or index)"),
}

ROLE_WORDS = {"metadata": N_("metadata pickle"), "data": N_("data"), "shard": N_("shard"), "model": N_("model states"),
              "optimizer": N_("optimizer states"), "script": N_("script shipped with the checkpoint")}
# the labels of the report's lines (_item says them in the run's language; render/checkpoint.py marks the others)
LABELS = (N_("index"), N_("tag"), N_("layout"), N_("model in"), N_("optimizer in"), N_("file"), N_("MISSING"),
          N_("unlisted"), N_("weights_only"))

VERDICT_SHORT = {"safe": N_("safe"), "unsafe": N_("unsafe"), "inconclusive": N_("inconclusive")}  # a file's verdict
MAX_FILES = 12  # files listed one by one; the rest summed


def _item(label: str, text: str, width: int) -> List[str]:
    return wrap(printable(tr(text)), "  " + t("%s: ", t(label)), "      ", width, newlines=False, long_words="keep")


def _file_line(f: ShardFile, mp: bool = False) -> str:
    parts = [t(ROLE_WORDS[f.role]) if f.role in ROLE_WORDS else f.role, human_bytes(f.size)]
    if f.rank is not None:
        parts.append(t("data-parallel rank %d", f.rank) if mp else t("rank %d", f.rank))
    if mp and f.mp_rank is not None:
        parts.append(t("tensor-parallel rank %d", f.mp_rank))
    if f.role in ("shard", "model", "optimizer", "data"):
        parts.append(t("%d tensors", f.tensors) + (t(" (index: %d)", f.listed) if f.listed is not None and f.listed != f.tensors else ""))
    if f.role == "data" and f.pickles:
        parts.append(t("%d torch.save items walked", f.pickles))
    if f.verdict is not None:
        parts.append(t("verdict %s", t(VERDICT_SHORT.get(f.verdict, f.verdict))))
    if f.weights_only is not None:
        parts.append("weights_only %s" % (t("yes") if f.weights_only else t("no")))
    if f.role == "script":
        parts.append(t("code: runs when you run it"))
    return "%s: %s" % (f.name, t(", ").join(parts))


def render_folder(report: FolderReport, width: int = WIDTH) -> str:
    lines = wrap(t("%s: %s", printable(report.path), t(LAYOUT_NAMES[report.layout]) if report.layout in LAYOUT_NAMES
                   else report.layout), "", "  ", width, long_words="keep")
    if report.index:
        lines += _item("index", report.index, width)
    if report.tag:
        lines += _item("tag", t("%s (from latest, else the highest global_step)", report.tag), width)
    shape = []
    tp = (report.mp_world_size or 1) > 1
    if report.world_size is not None:
        shape.append(t("data-parallel world size %d", report.world_size) if tp else t("world size %d", report.world_size))
    if report.zero_stage is not None:
        shape.append(t("ZeRO stage %d", report.zero_stage))
    if tp:
        shape.append(t("%d tensor-parallel ranks (mp_rank_XX)", report.mp_world_size))
    shape.append(tn("%d file with tensors", "%d files with tensors", report.shard_count))
    lines += _item("layout", t(", ").join(shape), width)
    if report.model_files and report.layout == "deepspeed-zero":
        lines += _item("model in", ", ".join(report.model_files[:8]) + (" ..." if len(report.model_files) > 8 else ""), width)
    if report.optimizer_files:
        lines += _item("optimizer in", ", ".join(report.optimizer_files[:8]) + (
            t(" ... (%d files)", len(report.optimizer_files)) if len(report.optimizer_files) > 8 else ""), width)
    lines += _item("tensors", "%d, %s%s" % (report.tensors, human_bytes(report.total_bytes),
                                            t(" (the model's keys, full size)") if report.layout in ("dcp", "dcp-safetensors") else ""), width)
    if report.dtypes:
        lines += _item("dtypes", ", ".join("%s ×%d" % (d.dtype, d.count) for d in report.dtypes), width)
    if report.layout == "dcp":
        lines += _item("saved on", t("none stored: DCP copies each item into the tensor of the state_dict you load into"), width)
    elif report.layout in ("safetensors-shards", "dcp-safetensors"):
        lines += _item("saved on", t("none stored (safetensors)"), width)
    elif report.files:
        lines += _item("saved on", device_summary(report), width)
    for f in report.files[:MAX_FILES]:
        lines += _item("file", _file_line(f, tp), width)
    if len(report.files) > MAX_FILES:
        rest = report.files[MAX_FILES:]
        lines.append("  " + t("... %d more files, %s (--json lists them)", len(rest), human_bytes(sum(f.size for f in rest))))
    for p in report.prefixes:
        if p.where == "keys":
            scope = t("all %d keys", p.of) if p.keys == p.of else t("%d of %d keys", p.keys, p.of)
        else:
            scope = t("all %d _metadata keys", p.of) if p.keys == p.of else t("%d of %d _metadata keys", p.keys, p.of)
        lines += _item("prefix", t("%s on %s of %s", p.prefix, scope, p.container) if p.container
                       else t("%s on %s of all the shards", p.prefix, scope), width)
    for n in report.missing[:20]:
        lines += _item("MISSING", t("%s is named but not in the folder", n), width)
    if len(report.missing) > 20:
        lines.append("  " + t("... %d more missing", len(report.missing) - 20))
    for n in report.unlisted[:20]:
        lines += _item("unlisted", t("%s is in the folder but nothing names it (a leftover of another save?)", n), width)
    if report.verdict is not None:
        lines += _item("verdict", t("%s (the worst of its files')", t(VERDICT_WORDS[report.verdict])), width)
        for r in report.verdict_reasons[:8]:
            lines += wrap(printable(t("%s: %s", tr(r.where), tr(r.why))), "    - ", "      ", width, newlines=False, long_words="keep")
        if len(report.verdict_reasons) > 8:
            lines.append("    - " + t("... %d more (--json lists them)", len(report.verdict_reasons) - 8))
    if report.weights_only is not None:
        lines += _item("weights_only", t("every file torch.load reads with weights_only=True loads: %s",
                                         t("yes") if report.weights_only else t("no")), width)
    for p in report.inconsistencies[:12]:
        lines += _item("problem", p, width)
    for n in report.notes[:12]:
        lines += _item("note", n, width)
    for a in folder_advice(report):
        lines += wrap_advice(printable(a), "  " + t("what to do: "), "      ", width)
    return "\n".join(lines) + "\n"


def folder_advice(report: FolderReport) -> List[str]:
    """What to run to get one file that loads on one GPU (the commands paste as they are)."""
    from cudaenv.core.text import shell_quote as q

    out: List[str] = []
    path = report.path.rstrip("/") or report.path
    n = len(report.missing)
    if n:
        out.append(tn("%d file the checkpoint names is missing: copy it from where it was saved before loading or converting it",
                      "%d files the checkpoint names are missing: copy them from where it was saved before loading or "
                      "converting it", n))
    if report.unreadable_transforms:
        out.append(t("its items stored through %s cannot be read by torch's DCP reader: convert it in the code that "
                     "registered that extension, or re-save it without it", ", ".join(report.unreadable_transforms[:3])))
        return out
    if report.verdict in ("unsafe", "inconclusive") and report.layout != "deepspeed-zero":
        return out  # (a ZeRO folder's optimizer states name DeepSpeed's classes: its way out needs --trust anyway)
    stem = path[:-len(report.index)].rstrip("/") if report.index and path.endswith(report.index) else path
    if stem.endswith("/.metadata") or stem == ".metadata":  # DCP's .metadata given: its folder
        stem = stem[:-len(".metadata")].rstrip("/")
    stem = stem or "."
    if report.layout == "dcp":
        out.append(t("one file for one GPU: torch's own converter (torch.distributed.checkpoint.format_utils."
                     "dcp_to_torch_save, run in your Python, checked after): cudaenv checkpoint fix -o %s -- %s",
                     q(stem + ".pt" if stem != "." else "consolidated.pt"), q(path)))
    elif report.layout == "dcp-safetensors" and report.inconsistencies:
        out.append(t("the shards do not make one whole checkpoint (see the problems above): copy the missing rank's file "
                     "from where it was saved; cudaenv checkpoint fix refuses to consolidate it until then"))
    elif report.layout == "dcp-safetensors":
        out.append(t("one file for one GPU: torch's own reader of this format (torch.distributed.checkpoint."
                     "HuggingFaceStorageReader with dcp.load, run in your Python, checked after): cudaenv checkpoint fix "
                     "-o %s -- %s", q(stem + ".safetensors" if stem != "." else "consolidated.safetensors"), q(path)))
    elif report.layout == "deepspeed-zero" and (report.mp_world_size or 1) > 1:
        out.append(t("one file of the whole model: the %d tensor-parallel ranks hold slices of each weight, and DeepSpeed's "
                     "zero_to_fp32.py does not merge them (it reads mp_rank_00 only); merge them with the tool of the "
                     "framework that split the model (Megatron-DeepSpeed: DeepSpeed's ds_to_universal.py), then "
                     "convert its output", report.mp_world_size))
    elif report.layout == "deepspeed-zero":
        out.append(t("one fp32 file: zero_to_fp32.py, which DeepSpeed saved in the folder, does it; it is code shipped with "
                     "the checkpoint: read it, and run it only if you trust where the folder came from: "
                     "cudaenv checkpoint fix --trust -o %s -- %s", q(stem + ".pt" if stem != "." else "consolidated.pt"), q(path)))
    elif report.layout in ("safetensors-shards", "bin-shards"):
        ext = ".safetensors" if report.layout == "safetensors-shards" else ".pt"
        out.append(t("transformers' from_pretrained(folder) loads the shards as they are; one file: cudaenv checkpoint "
                     "fix -o %s -- %s", q(stem + ext if stem != "." else "consolidated" + ext), q(path)))
    return out
