"""``cudaenv doctor --format markdown``: a paste-ready report for a forum or an issue tracker (pure).

The facts a helper asks for first (driver and its CUDA, GPUs, CUDA_VISIBLE_DEVICES, torch and its CUDA, device
count, toolkits, cuDNN), then the findings with their fixes.
"""

from typing import List, Sequence

from cudaenv.render.text import FIX_NEEDS, backtick_run, md_code, md_inline, md_text
from cudaenv.core.i18n import N_, t, tr
from cudaenv.core.text import printable


def _cell(text) -> str:
    """A table cell: its parts are escaped where they are composed (facts_rows); one line."""
    return str(text).replace("\n", " ")


def _state(status):
    """A driver tool's status in words (cudaenv.render.report.TOOL_STATES), any other as it is."""
    from cudaenv.render.report import TOOL_STATES

    return t(TOOL_STATES[status]) if status in TOOL_STATES else status


def facts_rows(s, view) -> List[tuple]:
    """(key, value) rows of the facts table; ``view``: the doctor's facts view (cudaenv.diagnose.view)."""
    p = s.platform
    d = s.driver
    rows = []
    osline = ", ".join(md_text(x) for x in (p.distro or p.system, p.machine, p.kernel and t("kernel %s", p.kernel)) if x)
    if p.wsl:
        osline += ", WSL %d" % p.wsl
    if p.container:
        osline += t(", %s container", md_text(p.container))
    rows.append((N_("OS"), osline))
    if view.driver_shown and view.l4t is not None:
        rows.append((N_("Driver"), "Jetson L4T %s%s" % (view.l4t, " (JetPack %s)" % view.jetpack if view.jetpack else "")))
    elif view.driver_shown:
        rows.append((N_("Driver"), t("%s (supports CUDA %s)%s", md_text(view.driver_shown), md_text(d.cuda_version or view.driver_cuda or "?"),
                                     t(", %s module", md_text(d.kernel_module)) if d.kernel_module else "")))
    else:
        failed = view.failed_tools
        rows.append((N_("Driver"), t("none") + ("" if not failed else " (%s)" % "; ".join(
            "%s: %s" % (md_text(f.tool), md_text(tr(f.message) if f.message else f.failure or _state(f.status))) for f in failed))))
    if s.gpus:
        rows.append((N_("GPUs"), "<br>".join(
            t("%d: %s, compute %s, %s/%s MiB used", g.index, md_text(g.name or "?"), md_text(g.compute_capability or "?"),
              "?" if g.memory_used_mib is None else g.memory_used_mib,
              "?" if g.memory_total_mib is None else g.memory_total_mib)
            for g in s.gpus)))
    else:
        rows.append((N_("GPUs"), t("none seen")))
    v = s.visible_devices
    if v.cuda_visible_devices is None:
        rows.append(("CUDA_VISIBLE_DEVICES", t("unset")))
    else:
        mapping = ", ".join("cuda:%d = GPU %d" % (m.logical, m.physical) for m in v.mapping) or t("no GPU visible")
        rows.append(("CUDA_VISIBLE_DEVICES", "%s (%s)" % (md_code(v.cuda_visible_devices), mapping)))
    if v.device_order:
        rows.append(("CUDA_DEVICE_ORDER", md_text(v.device_order)))
    tp = s.torch
    if tp is None or not tp.installed:
        rows.append(("torch", t("not installed") + (t(" in %s", md_code(tp.python)) if tp is not None and tp.python else "")))
    else:
        rows.append(("torch", t("%s, CUDA %s, Python %s at %s", md_text(tp.version), md_text(tp.cuda) if view.torch_build == "cuda" else t("none (CPU build)"),
                             md_text(tp.python_version or "?"), md_code(tp.python))))
        if view.torch_devices == "import-failed":
            rows.append((N_("torch devices"), t("not known: import torch failed")))
        elif view.torch_devices != "not-imported":
            rows.append((N_("torch devices"), t("%s (cuda.is_available() = %s)", tp.device_count, tp.cuda_available)
                         if view.torch_devices == "known" else t("not known: torch did not report them")))
            if tp.cudnn or tp.nccl:
                rows.append(("torch cuDNN / NCCL", "%s / %s" % (md_text(tp.cudnn or "none"), md_text(tp.nccl or "none"))))
            if tp.arch_list:
                rows.append((N_("torch arch list"), " ".join(md_text(a) for a in tp.arch_list)))
        else:
            rows.append((N_("torch devices"), t("not checked (torch not imported)")))
    if tp is not None and tp.site_code_skipped:
        rows.append((N_("site code"), t("not run by the quick read: %s (this code may change sys.path; doctor without --quick runs it)",
                                        ", ".join(md_code(f) for f in tp.site_code_skipped))))
    e = getattr(s, "python_env", None)
    if e is not None:
        from cudaenv.render.facts import python_env_text

        rows.append(("Python environment", md_text(python_env_text(e))))
    a = s.active_toolkit
    tks = []
    for tk, flags in zip(s.toolkits, view.toolkit_marks):
        tks.append(t("%s at %s (%s%s)", md_text(tk.version or "?"), md_code(tk.path), md_text(tk.install_method), (", " + ", ".join(flags)) if flags else ""))
    rows.append((N_("Toolkits"), "<br>".join(tks) if tks else t("none found")))
    if a is not None and (a.nvcc or a.path):
        rows.append(("nvcc", "%s (CUDA %s)" % (md_code(a.nvcc or a.path), md_text(a.version or "?"))))
    frameworks = tuple(getattr(s, "frameworks", ()) or ())
    if frameworks:
        from cudaenv.render.report import framework_facts

        verdicts = dict(view.framework_verdicts)
        minimums = dict(view.framework_min_drivers)
        rows.append((N_("Frameworks"), "<br>".join(
            "%s: %s" % (md_code(fw.package), md_text(framework_facts(fw, verdicts.get(fw.package, "unknown"), minimums.get(fw.package))))
            for fw in frameworks)))
    if getattr(s, "libraries", ()):
        from cudaenv.render.report import library_facts

        rows.append((N_("CUDA libraries loaded"), "<br>".join("%s: %s" % (md_text(lib.consumer), md_text(library_facts(lib))) for lib in s.libraries)))
        if getattr(s, "import_order", ()) and s.platform is not None and s.platform.system == "windows":  # Windows' DLL loads
            rows.append((N_("Import order"), md_text(", ".join(s.import_order))))
    if getattr(s, "extensions", ()):
        from cudaenv.render.report import extension_facts

        rows.append(("torch extensions", "<br>".join("%s: %s" % (md_code(e.package), md_text(extension_facts(e))) for e in s.extensions)))
    if getattr(s, "framework_imports", ()):
        from cudaenv.render.report import import_facts

        rows.append(("Framework imports", "<br>".join("%s: %s" % (md_code(i.module), md_text(import_facts(i))) for i in s.framework_imports)))
    rows.append(("cuDNN", "<br>".join("%s (%s, %s)" % (md_text(c.version or "?"), md_text(c.source), md_code(c.header)) for c in s.cudnn) or t("none found")))
    if view.image is not None:
        from cudaenv.render.report import image_facts

        rows.append(("Image", md_text(image_facts(view.image, view.image_need))))  # printable already: md_text keeps \x1b
    return rows


def render_markdown(snapshot, findings: Sequence, view, verbose: bool = False) -> str:
    """The report; ``verbose`` adds every fact the probes saw (render.facts) in a folded block."""
    s = snapshot
    out = [t("### CUDA environment (cudaenv doctor%s)", (" " + md_text(s.cudaenv_version)) if s.cudaenv_version else ""), ""]
    out.append("| | |")
    out.append("|---|---|")
    for key, value in facts_rows(s, view):
        out.append("| %s | %s |" % (_cell(t(key)), _cell(value)))
    out.append("")
    shown = [f for f in findings if f.severity in ("error", "warning")] + [f for f in findings if f.severity == "info" and f.section != "hints"]
    if not shown:
        out.append(t("**Findings:** none."))
    else:
        out.append(t("**Findings**"))
        out.append("")
        for f in shown:
            out.append("- **%s** `%s`: %s" % (t(f.severity), f.id, md_inline(tr(f.title))))
            out.append("  %s" % md_inline(tr(f.detail)))
            if f.fix:
                lines = [printable(line) for cmd in f.fix for line in tr(cmd).split("\n")]
                fence = "`" * max([3] + [backtick_run(line) + 1 for line in lines])  # a ``` in a command cannot close it
                if FIX_NEEDS.get(f.fix_kind or ""):
                    out.append("  " + t("The fix %s.", t(FIX_NEEDS[f.fix_kind])))
                out.append("  %ssh" % fence)
                out += ["  " + line for line in lines]
                out.append("  " + fence)
    if s.notes and not verbose:  # the facts block below ends with the notes
        out.append("")
        out.append("<details><summary>%s</summary>" % t("Probe notes"))
        out.append("")
        for n in s.notes:
            out.append("- %s: %s" % (md_text(n.probe), md_inline(tr(n.message))))
        out.append("")
        out.append("</details>")
    if verbose:
        from cudaenv.render.facts import render_facts

        out += ["", "<details><summary>%s</summary>" % t("All facts"), "", "```text"]
        out += render_facts(s, view).rstrip("\n").replace("```", "'''").split("\n")
        out += ["```", "", "</details>"]
    return "\n".join(out) + "\n"
