"""``cudaenv verify``'s output: the text report of each section (devices, distributed, toolkit) and the JSON.

Every string that came from a child (error texts, GPU names, torchrun's output) goes through ``text.printable``.
"""

from cudaenv.render.json_out import dumps
from typing import Any, List, Optional

from cudaenv.render.text import WIDTH, paint, wrap, wrap_advice, wrap_command, wrap_quoted
from cudaenv.core.text import printable
from cudaenv.core.version import sm_name
from cudaenv.core.i18n import Msg, t, tn, tr
from cudaenv.render.width import has_wide, width_of



def render_json(report) -> str:
    """``cudaenv verify --json``: the :class:`cudaenv.verify.VerifyReport` envelope."""
    return dumps(report.to_dict())


def render_text(report, color: bool = False, width: int = WIDTH) -> str:
    """Each section that ran, in order: devices, distributed, toolkit; ``width``: the terminal's (COLUMNS), at most 80."""
    parts = []
    if report.devices is not None:
        parts.append(render_devices(report.devices, color, width))
    if report.distributed is not None:
        parts.append(render_distributed(report.distributed, color, width))
    if report.toolkit is not None:
        parts.append(render_toolkit(report.toolkit, color, width))
    return "\n".join(parts)


def _mark(ok: Optional[bool], color: bool, skipped: bool = False) -> str:
    if skipped:
        text, code = t("skipped"), "warning"
    elif ok:
        text, code = t("ok"), "ok"
    else:
        text, code = t("FAILED"), "error"
    return paint(text, code, color)


def _wrap(text: str, indent: str, width: int = WIDTH) -> List[str]:
    return wrap(printable(text), indent, indent, width, newlines=False)  # error texts come from the child


def _wrap_item(text: str, first: str, rest: str, width: int = WIDTH) -> List[str]:
    return wrap_advice(printable(text), first, rest, width)  # between shell words only, like explain and the doctor


def _title(title):
    """An error's title: a marked message, or a plain title of data/error_patterns.json (in the catalog as it is)."""
    return tr(title) if isinstance(title, Msg) or not title else t(title)


def _cut(row: str, start: int, detail: str, room: int) -> str:
    """``row``, whose last ``detail`` (wide characters in it) begins at ``start``, within ``room`` (counted as the
    English row is: ``start`` characters, then the detail's columns), its end written ``...`` when cut."""
    if start + width_of(detail) <= room:
        return row
    kept, columns = [], start
    for c in detail:
        columns += width_of(c)
        if columns > room - 3:
            break
        kept.append(c)
    return row[:start] + "".join(kept) + "..."


def render_error(error: Any, indent: str = "  ", width: int = WIDTH) -> List[str]:
    if error is None:
        return []
    head = indent + t("error %s: %s", error.id or t("(not recognised)"), _title(error.title) or error.message)
    lines = _wrap(head, "", width)
    lines = [lines[0]] + ["%s  %s" % (indent, x) for x in lines[1:]]
    if error.title:
        first = next((x.strip() for x in tr(error.message).splitlines() if x.strip()), "")
        lines += _wrap(first, indent + "  ", width)
    if error.explanation:  # explain's words: a quoted phrase (`import torch`) stays on one line, as explain shows it
        lines += wrap_quoted(printable(tr(error.explanation)), indent + "  ", indent + "  ", width)
    for detail in error.details:
        lines += _wrap(tr(detail), indent + "  ", width)
    if error.advice or error.fix:
        lines.append(indent + "  " + t("What to do:"))
        for item in error.fix:  # shell lines: as the doctor lays out a finding's fix (`` \`` continuations)
            lines += wrap_command(printable(tr(item)), indent + "    ", width)
        for item in error.advice:
            lines += _wrap_item(tr(item), indent + "    - ", indent + "      ", width)
    if error.id is None:
        lines += _wrap(t("cudaenv explain can help with the full message; paste it with: cudaenv explain -"), indent + "  ", width)
    return lines


def _device_header(r) -> str:
    if r.logical is None:
        label = "CPU: %s" % (r.name or "CPU")
    else:
        label = r.device
        if r.physical is not None:
            label += " = GPU %d" % r.physical
        if r.name:
            label += ": %s" % r.name
        if r.capability:
            label += " (%s)" % (sm_name(r.capability) or "sm_" + r.capability.replace(".", ""))
    return printable(label)  # the GPU's name as the child read it


def render_devices(report, color: bool = False, width: int = WIDTH) -> str:
    lines: List[str] = []
    torch = report.info.get("torch")
    head = "cudaenv verify: %s" % report.python
    if torch:
        head += ", torch %s" % torch
    lines += _wrap(head, "", width)
    if report.problem is not None:
        p = report.problem
        lines.append("")
        lines += _wrap(t("%s: %s", _mark(False, color), p.message), "", width)  # (the message said by t: marked)
        if p.error is not None:
            lines += render_error(p.error, width=width)
        lines.append("")
        lines += _wrap(t("Nothing ran on a GPU (finding %s). `cudaenv verify --cpu` checks the CPU path; "
                         "`cudaenv doctor` explains the whole setup.", p.id or "unknown"), "", width)
        return "\n".join(lines) + "\n"
    for r in report.results:
        lines.append("")
        header = _device_header(r)
        mark = _mark(r.ok, color)
        pad = max(1, width - width_of(header) - width_of(_mark(r.ok, False)))
        lines.append(header + " " * pad + mark)
        for c in r.checks:
            status = _mark(c.ok, color, c.skipped)
            plain = _mark(c.ok, False, c.skipped)
            detail = printable(tr(c.detail))  # the child's own sentence said in the reader's language (said())
            row = "  %-13s %s%s %6.3f s  %s" % (c.name, status, " " * (8 - width_of(plain)), c.seconds, detail)
            room = width + (len(status) - len(plain)) - (width_of(plain) - len(plain))  # colour codes take no column
            if has_wide(detail):  # a Chinese detail is cut by the columns it takes
                lines.append(_cut(row, len(row) - len(detail), detail, room))
            else:
                lines.append(row if len(row) <= room else row[: room - 3] + "...")
        figures = []
        if r.tflops is not None:
            figures.append(t("%.2f TFLOP/s fp32 matmul", r.tflops))
        if r.gbps is not None:
            figures.append(t("%.1f GB/s %s", r.gbps, t("memory copy") if r.logical is None else "device->host"))
        if r.memory_free_mib is not None and r.memory_total_mib:
            figures.append(t("%.1f of %.1f GiB free", r.memory_free_mib / 1024.0, r.memory_total_mib / 1024.0))
        if figures:
            lines += _wrap(t(", ").join(figures), "  ", width)
        if r.error is not None:
            lines += render_error(r.error, width=width)
            if r.output_tail:
                lines.append("  " + t("last output:"))
                lines += ["    " + printable(x)[: width - 4] for x in r.output_tail.splitlines()[-8:]]
    good = sum(1 for r in report.results if r.ok)
    lines.append("")
    if report.ok:
        lines.append(tn("all checks passed on %d device", "all checks passed on %d devices", good))
    else:
        lines.append(tn("%d of %d device passed", "%d of %d devices passed", len(report.results), good, len(report.results)))
    return "\n".join(lines) + "\n"


def render_distributed(report, color: bool = False, width: int = WIDTH) -> str:
    if report.ranks or report.nproc:
        lines = ["cudaenv verify --distributed: " + tn("%d rank, backend %s", "%d ranks, backend %s", report.nproc, report.nproc,
                                                      report.backend)]
    else:  # it could not start: no rank count to report
        lines = ["cudaenv verify --distributed: " + t("not run (backend %s)", report.backend)]
    if report.command:
        lines += wrap_command(printable(report.command), "  ", width)
    for r in report.ranks:
        where = r.device or "?"
        if r.physical is not None:
            where += " = GPU %d" % r.physical
        if r.name and r.name != "CPU":
            where += " (%s)" % r.name
        extra = []
        if r.nccl:
            extra.append("NCCL %s" % r.nccl)
        if r.busbw_gbps is not None:
            extra.append(t("%.2f GB/s all-reduce", r.busbw_gbps))
        lines.append("  " + t("%s: %s", t("rank %d", r.rank), "%s %s%s" % (where, _mark(r.ok, color), ("  " + t(", ").join(extra)) if extra else "")))
        if r.error is not None:
            lines += _wrap(t("%s: %s", r.error.stage or t("error"), tr(r.error.message)), "    ", width)
        else:
            for c in r.checks:
                if not c.ok:
                    lines += _wrap(t("%s: %s", c.name, c.detail), "    ", width)
    if report.error is not None:
        lines += render_error(report.error, width=width)
    if report.output_tail and not report.ok:
        lines.append("  " + t("torchrun's last output:"))
        lines += ["    " + printable(x)[: width - 4] for x in report.output_tail.splitlines()[-12:]]
    if report.nccl_debug:
        lines.append("  " + t("NCCL_DEBUG=INFO output:"))
        lines += ["    " + x for x in report.nccl_debug]
    lines.append("")
    lines.append(t("distributed check passed") if report.ok else t("distributed check FAILED"))
    return "\n".join(lines) + "\n"


def render_toolkit(report, color: bool = False, width: int = WIDTH) -> str:
    lines = ["cudaenv verify --toolkit: %s%s" % (report.nvcc or t("no nvcc"), t(" (CUDA %s)", report.version) if report.version else "")]
    for s in report.stages:
        lines.append("  %-8s %s%s %6.2f s  %s" % (s.name, _mark(s.ok, color), " " * (8 - width_of(_mark(s.ok, False))), s.seconds, printable(tr(s.detail))))
    for d in report.devices:
        if d.get("ok"):
            lines.append("    " + t("device %s: %s (%s) ran the kernel", d.get("device"), d.get("name"), d.get("capability")))
    if report.note:
        lines += _wrap(tr(report.note), "  ", width)
    if report.error is not None:
        lines += render_error(report.error, width=width)
    lines.append("")
    lines.append(t("toolkit check passed") if report.ok else t("toolkit check FAILED"))
    return "\n".join(lines) + "\n"
