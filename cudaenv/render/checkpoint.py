"""``cudaenv checkpoint inspect`` and ``fix`` as text: format, structure, tensors and bytes, saved devices, key
prefixes, the weights_only verdict with security warnings, inconsistencies, and what to do on this machine.

Everything that came from the file (keys, global names, device strings, markers) and the path pass through
:func:`cudaenv.core.text.printable`; lines wrap through :func:`cudaenv.render.text.wrap`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import List

from cudaenv.checkpoint.report import CheckpointReport, FixReport
from cudaenv.render.text import WIDTH, wrap, wrap_advice
from cudaenv.core.i18n import N_, t, tn, tr
from cudaenv.core.text import printable

FORMAT_NAMES = {
    "torch-zip": N_("torch zip checkpoint (torch.save)"),
    "torchscript": N_("TorchScript archive (torch.jit.save)"),
    "torch-legacy": N_("legacy torch checkpoint (_use_new_zipfile_serialization=False)"),
    "torch-legacy-tar": N_("legacy torch tar archive (before torch 0.4)"),
    "safetensors": "safetensors",
    "pickle": N_("plain pickle"),
    "zip": N_("zip archive without data.pkl"),
    "unknown": N_("not a checkpoint cudaenv recognizes"),
}
# the labels of the report's lines (_item says them in the run's language)
LABELS = (N_("content"), N_("markers"), N_("tensors"), N_("dtypes"), N_("saved on"), N_("key"), N_("prefix"), N_("verdict"),
          N_("globals"), N_("problem"), N_("note"), N_("this machine"), N_("changed"), N_("backup"), N_("before"), N_("after"))


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return ("%d %s" % (value, unit)) if unit == "B" else "%.1f %s" % (value, unit)
        value /= 1024
    return "%d B" % n


def _item(label: str, text: str, width: int) -> List[str]:
    return wrap(printable(tr(text)), "  " + t("%s: ", t(label)), "      ", width, newlines=False, long_words="keep")


VERDICT_WORDS = {
    "safe": N_("safe: every pickle torch.load reads was walked whole; it names only globals and calls on torch's "
               "weights_only allowlist"),
    "unsafe": N_("UNSAFE: torch.load(weights_only=False) would import or call what is outside torch's weights_only "
                 "allowlist (below); do not load it unless you trust where it came from"),
    "inconclusive": N_("inconclusive: cudaenv could not walk every pickle torch.load would read to its end (below), so "
                       "it cannot say what loading it runs; treat it as unsafe"),
}


def device_summary(report: CheckpointReport) -> str:
    """``cuda:2 ×412, cpu ×3`` (storages), then devices outside the storage tuple."""
    parts = ["%s ×%d" % (d.device, d.count) for d in report.devices if d.via == "storage"]
    parts += ["%s ×%d (%s)" % (d.device, d.count, d.via) for d in report.devices if d.via != "storage"]
    return ", ".join(parts) if parts else t("none stored")


def render_inspect(report: CheckpointReport, width: int = WIDTH) -> str:
    fmt = t(FORMAT_NAMES.get(report.format, report.format))
    lines = wrap(printable(report.path) + ": " + fmt, "", "  ", width, long_words="keep")
    if report.kind:
        what = report.kind + (" of %s" % report.whole_module if report.whole_module and not report.whole_module.startswith("(") else "")
        lines += _item("content", what, width)
    markers = ", ".join("%s %s" % (k, v) for k, v in report.markers if k != "serialization_id")
    if report.archive_prefix is not None:
        markers = ("archive %s/, " % report.archive_prefix if report.archive_prefix else "") + markers
    if markers:
        lines += _item("markers", markers, width)
    if report.format not in ("unknown", "zip", "torch-legacy-tar"):
        lines += _item("tensors", tn("%d in %d storage, %s (shared storages counted once)", "%d in %d storages, %s (shared storages counted once)",
                                     report.storages, report.tensors, report.storages, human_bytes(report.total_bytes)), width)
        if report.dtypes:
            lines += _item("dtypes", ", ".join("%s ×%d" % (d.dtype, d.count) for d in report.dtypes), width)
        if report.format != "safetensors":
            lines += _item("saved on", device_summary(report), width)
    shown = 5 if report.kind == "state_dict" else 20
    listed = [s for s in report.structure if not s.startswith("... ")]  # analyze's "... N more keys" is not a key
    total = report.key_count if report.key_count is not None else len(listed)
    for s in listed[:shown]:
        lines += _item("key", s, width)
    if total > min(shown, len(listed)):
        more = total - min(shown, len(listed))
        json_has = N_("them") if len(listed) >= total else t("the first %d", len(listed))
        lines.append("  " + tn("... %d more key (--json lists %s)", "... %d more keys (--json lists %s)", more, more, t(json_has)))
    for p in report.prefixes:
        if p.where == "keys":
            scope = t("all %d keys", p.of) if p.keys == p.of else t("%d of %d keys", p.keys, p.of)
        else:
            scope = t("all %d _metadata keys", p.of) if p.keys == p.of else t("%d of %d _metadata keys", p.keys, p.of)
        said = (t("%s on %s of the top level", p.prefix, scope) if not p.container
                else t("%s on %s of %s", p.prefix, scope, repr(p.container)))
        lines += _item("prefix", said, width)
    if report.verdict is not None:
        lines += _item("verdict", t(VERDICT_WORDS[report.verdict]), width)
        for r in report.verdict_reasons[:8]:
            lines += wrap(printable("%s: %s" % (r.where, r.why)), "    - ", "      ", width, newlines=False, long_words="keep")
        if len(report.verdict_reasons) > 8:
            lines.append("    - " + t("... %d more (--json lists them)", len(report.verdict_reasons) - 8))
    if report.weights_only is not None:
        verdict = t("yes") if report.weights_only else t("no")
        lines += _item("weights_only", t("torch.load(weights_only=True) on torch 2.13 in a fresh process: %s", verdict), width)
        for r in report.weights_only_reasons[:8]:
            lines += wrap(printable(r), "    - ", "      ", width, newlines=False, long_words="keep")
    odd = [g.name for g in report.globals if g.verdict != "allowed"]
    if report.globals:
        lines += _item("globals", t("%d referenced%s", len(report.globals), t(", outside the allowlist: %s", ", ".join(odd[:12])) if odd
                                    else t(", all on torch's weights_only allowlist")), width)
    for s in report.security:
        lines += _item("SECURITY", s, width)
    for p in report.inconsistencies[:12]:
        lines += _item("problem", p, width)
    for n in report.notes[:12]:
        lines += _item("note", n, width)
    if report.visible is not None:
        lines += _item("this machine", tn("%d GPU visible%s (%s)", "%d GPUs visible%s (%s)", report.visible.count, report.visible.count,
                                          (": " + ", ".join(report.visible.devices[:8])) if report.visible.devices else "",
                                          report.visible.source), width)
    for a in report.advice:  # advice names commands: they paste as they are
        lines += wrap_advice(printable(tr(a)), "  " + t("what to do: "), "      ", width)
    return "\n".join(lines) + "\n"


_METHOD_WORDS = {"rewrite": N_("rewritten without torch"), "torch": N_("through torch, --trust"), "merge": N_("merged without torch"),
                 "zero_to_fp32": N_("through the folder's zero_to_fp32.py, --trust"),
                 "convert": N_("converted by torch in your Python, nothing of the file run")}


def render_fix(report: FixReport, width: int = WIDTH) -> str:
    lines = wrap(t("%s -> %s (%s)", printable(report.source), printable(report.output),
                                    t("through torch in your Python") if report.method == "torch" and report.folder is not None
                                    else t(_METHOD_WORDS[report.method]) if report.method in _METHOD_WORDS else report.method),
                 "", "  ", width, long_words="keep")
    for w in report.warnings:
        lines += _item("WARNING", w, width)
    for c in report.changes:
        lines += _item("changed", c, width)
    if report.backup:
        lines += _item("backup", report.backup, width)
    if report.folder is not None:  # a checkpoint folder consolidated into one file (issue 32)
        f = report.folder
        keys = ", ".join(t("%s on %d/%d keys", p.prefix, p.keys, p.of) for p in f.prefixes if p.where == "keys") or t("no wrapper prefix")
        lines += _item("before", tn("%s, %d file, %d tensors, %s; %s%s", "%s, %d files, %d tensors, %s; %s%s", len(f.files),
                                    f.layout, len(f.files), f.tensors, human_bytes(f.total_bytes), keys,
                                    t("; world size %d", f.world_size) if f.world_size is not None else ""), width)
    for label, r in (("before", report.before), ("after", report.after)):
        if r is None:
            continue
        keys = ", ".join(t("%s on %d/%d keys", p.prefix, p.keys, p.of) for p in r.prefixes if p.where == "keys") or t("no wrapper prefix")
        lines += _item(label, t("%d tensors, %s; saved on %s; %s; weights_only %s",
                                r.tensors, human_bytes(r.total_bytes), device_summary(r), keys,
                                t("yes") if r.weights_only else t("no") if r.weights_only is False else "n/a"), width)
    return "\n".join(lines) + "\n"


def render_trust_warning(folder: bool = False) -> str:
    """What ``checkpoint fix --trust`` says first, on stderr: of the file, or of a checkpoint folder's files (PATH a
    folder, an index file or DCP's ``.metadata``) and a DeepSpeed ZeRO folder's own script."""
    if folder:
        return t("warning: --trust: the checkpoint folder's files that are not safe to load without running them are "
                 "loaded by torch in your Python with weights_only=False, and a DeepSpeed ZeRO folder's own "
                 "zero_to_fp32.py is run: either runs any code they carry\n")
    return t("warning: --trust: if the file is not safe to rewrite without torch, torch loads it in your Python "
             "with weights_only=False, which runs any code it carries\n")
