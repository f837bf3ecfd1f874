"""`cudaenv explain` as text, the paste's side: the facts read from pasted tool outputs, the doctor's findings on
them, and what this machine says about the error (:mod:`cudaenv.pasted`, :mod:`cudaenv.pasted.context`).

Every value came from outside (the paste, this machine's tools): each passes through :func:`cudaenv.core.text.printable`.
"""

from typing import List, Optional, Sequence

from cudaenv.render.text import WIDTH, fix_heading, wrap, wrap_command
from cudaenv.core.text import printable
from cudaenv.core.i18n import t, tr


def _gpu(g) -> str:
    bits = [printable(g.name) if g.name else "GPU"]
    if g.compute_capability:
        bits.append(t("compute %s", printable(g.compute_capability)))
    if g.bus_id:
        bits.append(printable(g.bus_id))
    if g.memory_total_mib is not None:
        bits.append(t("%d of %d MiB", g.memory_used_mib, g.memory_total_mib) if g.memory_used_mib is not None
                    else "%d MiB" % g.memory_total_mib)
    if g.uuid:
        bits.append(printable(g.uuid))
    return t("GPU %d: %s", g.index, t(", ").join(bits))


def fact_lines(facts) -> List[str]:
    """The pasted facts as short sentences (nothing for what the paste did not show)."""
    f = facts
    out: List[str] = []
    where = " ".join(printable(x) for x in (f.platform, f.machine) if x)
    if f.driver_version or f.cuda_version:
        driver = t("driver %s", printable(f.driver_version)) if f.driver_version else t("a driver")
        module = t(" (%s kernel module)", f.kernel_module) if f.kernel_module else ""
        loaded = getattr(f, "kernel_module_version", None)
        if loaded and loaded != f.driver_version:  # a kernel log's API mismatch: the module loaded is another driver
            module += t(", kernel module %s loaded", printable(loaded))
        cuda = t(", CUDA up to %s", printable(f.cuda_version)) if f.cuda_version else ""
        out.append("%s%s%s%s" % (driver, module, cuda, t(" on %s", where) if where else ""))
    elif where:
        out.append(t("platform: %s", where))
    for g in f.gpus[:16]:
        out.append(_gpu(g))
    if len(f.gpus) > 16:
        out.append(t("... and %d more GPUs", len(f.gpus) - 16))
    if f.torch_version:
        build = "CUDA %s" % printable(f.torch_cuda) if f.torch_cuda else t("no CUDA: a CPU build")
        bits = ["torch %s (%s)" % (printable(f.torch_version), build)]
        if f.cuda_available is not None:
            bits.append("torch.cuda.is_available() %s" % f.cuda_available)
        if f.cudnn_version:
            bits.append("cuDNN %s" % printable(f.cudnn_version))
        out.append(", ".join(bits))
    if f.toolkit_version:
        out.append("nvcc %s" % printable(f.toolkit_version))
    for g in f.xids[:16]:
        where = t(" on %s", ", ".join(printable(p) for p in g.pci[:4])) if g.pci else ""
        out.append(t("kernel log: Xid %d%s, %s", g.code, where, t("once") if g.count == 1 else t("%d times", g.count)))
    if f.fallen_off_bus:
        out.append(t("kernel log: %s fell off the bus", ", ".join(printable(p) for p in f.fallen_off_bus[:8])))
    for g in getattr(f, "gpu_conditions", ())[:16]:
        said = [text for text, on in (
            (t("uncorrectable ECC %s volatile, %s aggregate", g.ecc_volatile_uncorrected, g.ecc_aggregate_uncorrected),
             g.ecc_volatile_uncorrected is not None or g.ecc_aggregate_uncorrected is not None),
            (t("a page retirement pending"), g.retirement_pending), (t("a row remap pending"), g.remap_pending),
            (t("row remapping failed"), g.remap_failed), (", ".join(printable(x) for x in g.slowdowns), bool(g.slowdowns))) if on]
        if said:
            out.append("nvidia-smi -q, %s: %s" % (printable(g.pci_bus_id or t("a GPU")), "; ".join(said)))
    for d in getattr(f, "pci_devices", ())[:16]:
        link = ""
        if d.link_speed is not None or d.link_cap_speed is not None:
            link = t(", link %s GT/s x%s of %s GT/s x%s", *("?" if v is None else "%g" % v for v in (
                d.link_speed, d.link_width, d.link_cap_speed, d.link_cap_width)))
        out.append("lspci, %s%s%s%s" % (printable(d.address or t("a GPU")), (": %s" % printable(d.name)) if d.name else "",
                                        (" (rev %s)" % printable(d.revision)) if d.revision else "", link))
    return out


def render_pasted(facts, findings: Sequence = (), width: int = WIDTH) -> str:
    """The facts block and the findings block ("" when no tool output was recognised)."""
    if facts is None:
        return ""
    out = wrap(t("From the pasted %s:", ", ".join(printable(s) for s in facts.sources)), "", "  ", width, newlines=False)
    for line in fact_lines(facts):
        out += wrap(line, "  ", "    ", width, newlines=False)
    if findings:
        out.append("")
        from cudaenv.render.report import SEVERITY_WORDS

        out.append(t("The doctor's findings on those facts:"))
        for f in findings:
            severity = t(SEVERITY_WORDS[f.severity]) if f.severity in SEVERITY_WORDS else f.severity.upper()
            out += wrap("%s %s: %s" % (severity, f.id, printable(tr(f.title))), "  ", "    ", width, newlines=False)
            out += wrap(printable(tr(f.detail)), "    ", "    ", width, newlines=False)
            if f.fix:
                out.append("    " + fix_heading(f.fix_kind))
                for cmd in f.fix:
                    out += wrap_command(printable(tr(cmd)), "      ", width)
    elif facts.torch_version or facts.driver_version:
        out.append(t("  (the doctor's rules find nothing wrong in these facts)"))
    return "\n".join(out) + "\n"


def render_machine(lines: Sequence[str], width: int = WIDTH, title: Optional[str] = None) -> str:
    """This machine's context lines under a heading ("" when there are none)."""
    if not lines:
        return ""
    out = [title or t("On this machine:")]
    for line in lines:
        out += wrap(printable(line), "  ", "    ", width, newlines=False)
    return "\n".join(out) + "\n"
