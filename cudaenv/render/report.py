"""The doctor's checklist: sections in the expert's order, one marked line per check, then each problem with its fix.

Pure: ``render_report(snapshot, findings, view, color=False) -> str``, within 80 columns; ``view`` is the doctor's
facts view (cudaenv.diagnose.view), which the Markdown and facts renderers format too.
"""

from typing import Dict, List, Optional, Sequence, Tuple

from cudaenv.render.text import WIDTH, fix_heading, paint as _paint, wrap as _wrap, wrap_command
from cudaenv.render.width import pad, width_of
from cudaenv.core.i18n import N_, t, tn, tr
from cudaenv.core.text import printable


MARK_W = 8  # "warning " / "error   " / "ok      "
LABEL_W = 21

TITLES = {
    "environment": N_("Environment"),
    "driver": N_("Driver"),
    "containers": N_("Containers"),
    "visibility": N_("Visibility"),
    "versions": N_("Versions (torch)"),
    "toolkits": N_("Toolkits"),
    "frameworks": N_("Frameworks (other CUDA consumers)"),
    "resources": N_("Resources"),
}
MARKS = {"ok": N_("ok"), "info": N_("info"), "warning": N_("warning"), "error": N_("error")}  # the checklist's marks
SEVERITY_WORDS = {"error": N_("ERROR"), "warning": N_("WARNING"), "info": N_("INFO")}  # a finding's head
RANK = {"error": 0, "warning": 1, "info": 2}
# a driver tool's status (ToolStatus.status: a key of the JSON, said in words here); a failure id stays as it is
# where a framework's CUDA was read (FrameworkStatus.cuda_from, cudaenv.diagnose.frameworks.CUDA_EVIDENCE), as a phrase:
# "%s (from %s)" is a fact's source (nvidia-smi), which the Chinese sets apart with a blank; these are words
CUDA_FROM = {"name": N_("from its package name"), "build-info": N_("from its build-info file"),
             "local-tag": N_("from its version tag"), "requires": N_("from the nvidia wheels it requires"),
             "needed": N_("from its libraries' NEEDED entries")}
TOOL_STATES = {"missing": N_("missing"), "not run": N_("not run"), "timeout": N_("timeout"), "failed": N_("failed")}


def _safe(text) -> str:
    """Text that holds strings from outside (tool output, an image's os-release, GPU names) made safe to print;
    its paragraph breaks are kept."""
    return "\n".join(printable(part) for part in str(text).split("\n"))


def _cc(g) -> str:
    return g.compute_capability or "?"


def _mib(v: Optional[int]) -> str:
    return "?" if v is None else "%d" % v


# ------------------------------------------------------------------ the checks: (label, facts, finding ids)
Check = Tuple[str, str, Tuple[str, ...]]


def _ids(view, row: str) -> Tuple[str, ...]:
    """The finding ids checklist row ``row`` shows (the view's rows: ``data/findings.json``)."""
    return dict(view.checklist or ()).get(row, ())


def _environment(s, view) -> List[Check]:
    p = s.platform
    system = ", ".join(x for x in (p.distro or p.system, p.machine, t("kernel %s", p.kernel) if p.kernel else None) if x)
    wsl = t("no") if not p.wsl else "WSL %d (%s)" % (p.wsl, ", ".join(p.wsl_signals) or t("detected"))
    if p.container:
        nodes = ", ".join(p.dev_nvidia) if p.dev_nvidia else ("/dev/dxg" if p.dev_dxg else t("no /dev/nvidia*"))
        container = "%s, %s" % (p.container, nodes)
        if p.nvidia_visible_devices is not None:
            container += ", NVIDIA_VISIBLE_DEVICES=%s" % printable(p.nvidia_visible_devices)
        env = s.env_map
        for name in ("NVIDIA_DRIVER_CAPABILITIES", "CUDA_VERSION"):  # the runtime's capabilities, the image's CUDA
            if env.get(name) is not None:
                container += ", %s=%s" % (name, printable(env[name]))
    else:
        container = t("no")
    return [
        (t("system"), system, ()),
        ("WSL", wsl, _ids(view, "WSL")),
        (t("container"), container, _ids(view, "container")),
    ]


def _driver(s, view) -> List[Check]:
    d = s.driver
    if view.driver_shown:
        bits = [view.driver_shown]
        cuda = d.cuda_version or view.driver_cuda  # nvidia-smi's, else what that driver ships (data/cuda_drivers.json)
        if view.l4t is not None:  # a Jetson: an L4T release, not a driver series
            bits[0] = "L4T %s%s" % (view.l4t, " (JetPack %s)" % view.jetpack if view.jetpack else "")
        elif cuda:
            bits[0] += t(" (%s)", "CUDA %s" % cuda)
        if d.kernel_module:
            bits.append(t("%s module", d.kernel_module))
        if d.wsl_windows_side:
            bits.append(t("Windows host driver"))
        bits.append(t("via %s", d.source))
        driver = t(", ").join(bits)
    else:
        failed = view.failed_tools
        driver = t("none") + ("" if not failed else t(" (%s)", t("; ").join(
            t("%s: %s", f.tool, f.failure or (t(TOOL_STATES[f.status]) if f.status in TOOL_STATES else f.status)) for f in failed)))
    if s.gpus:
        gpus = t("; ").join(t("GPU %d: %s, compute %s", g.index, g.name or "?", _cc(g)) for g in s.gpus)
    elif s.platform.pci_nvidia_devices:
        gpus = t("on the PCI bus: %s", ", ".join(s.platform.pci_nvidia_devices))
    else:
        gpus = t("none seen")
    return [(t("driver"), driver, _ids(view, "driver")), (t("GPUs"), gpus, _ids(view, "GPUs"))]


def _visibility(s, view) -> List[Check]:
    v = s.visible_devices
    if v.cuda_visible_devices is None:
        cvd = tn("unset (all %d GPU)", "unset (all %d GPUs)", len(s.gpus)) if s.gpus else t("unset")
    else:
        shown = ", ".join("cuda:%d=GPU %d" % (m.logical, m.physical) for m in v.mapping) or t("no GPU")
        cvd = "%r -> %s" % (v.cuda_visible_devices, shown)
    order = v.device_order or t("unset (FASTEST_FIRST)")
    checks = [("CUDA_VISIBLE_DEVICES", cvd, _ids(view, "CUDA_VISIBLE_DEVICES")),
              ("CUDA_DEVICE_ORDER", order, _ids(view, "CUDA_DEVICE_ORDER"))]
    if view.torch_devices not in (None, "not-imported"):
        checks.append((t("torch devices"), torch_devices_text(s.torch, view.torch_devices), _ids(view, "torch devices")))
    return checks


def torch_devices_text(torch, state: str) -> str:
    """``1 (is_available: True)``, or why it is not known (never ``None``); ``state``: the view's torch_devices."""
    if state == "import-failed":
        return t("not known: import torch failed (see torch-import-error)")
    if state == "unknown":
        return t("not known: torch did not report them (see Notes)")
    return "%s%s" % (torch.device_count, t(" (%s)", "is_available: %s" % torch.cuda_available))


def _not_imported(torch) -> str:
    return t("import torch failed") if torch.import_error else "--quick" if not torch.dynamic else t("it gave no arch list")


def site_code_text(files) -> str:
    """What ``doctor --quick``'s read of the interpreter did not run (.pth import lines, sitecustomize)."""
    return t("not run by the quick read: %s (this code may change sys.path; doctor without --quick runs it)",
             ", ".join(files))


def _versions(s, view) -> List[Check]:
    tp = s.torch
    if tp is None or not tp.installed:
        torch = t("not installed") + (t(" in %s", tp.python) if tp is not None and tp.python else "")
    else:
        kind = {"cuda": "CUDA %s" % tp.cuda, "rocm": "ROCm %s" % tp.hip}.get(view.torch_build, t("CPU-only"))
        torch = t("%s (%s) in %s", tp.version, kind, tp.python)
    checks = [("torch", torch, _ids(view, "torch"))]
    if tp is not None and tp.site_code_skipped:
        checks.append((t("site code"), site_code_text(tp.site_code_skipped), ()))
    if tp is not None and tp.installed and tp.cuda:
        need = view.torch_min_driver
        have = view.driver_version or t("none")
        if s.platform.jetson is not None:
            facts = t("a Jetson: its L4T/JetPack release, not a driver series, decides which CUDA runs")
        else:
            facts = t("needs driver >= %s, have %s", need or "?", have)
        checks.append((t("torch + driver"), facts, _ids(view, "torch + driver")))
        caps = ", ".join(view.gpu_capabilities) or "?"
        if tp.arch_list and tp.dynamic:
            checks.append((t("GPU arch"), t("GPU %s; torch has %s..%s", caps, tp.arch_list[0], tp.arch_list[-1]), _ids(view, "GPU arch")))
        else:
            table = view.static_arch_list
            if table:
                facts = t("GPU %s; torch %s has %s..%s (cudaenv's tables; torch not imported: %s)",
                          caps, tp.version, table[0], table[-1], _not_imported(tp))
            else:
                facts = t("not checked: cudaenv's tables have no arch list for torch %s (torch not imported: %s)",
                          tp.version, _not_imported(tp))
            checks.append((t("GPU arch"), facts, _ids(view, "GPU arch")))
    return checks


def _toolkits(s, view) -> List[Check]:
    a = s.active_toolkit
    if a is not None and (a.path or a.nvcc):
        active = t("%s (CUDA %s, via %s)", a.path or a.nvcc, a.version or "?", a.via)
    else:
        active = t("none (no nvcc on PATH, no CUDA_HOME)")
    checks = [(t("active toolkit"), active, _ids(view, "active toolkit"))]
    if s.toolkits:
        checks.append((t("installed"), "; ".join("%s %s" % (k.version or "?", k.path) for k in s.toolkits), ()))
    link = s.cuda_symlink
    if link is not None:
        checks.append((printable(link.path), "-> %s%s" % (printable(link.target), t(" (dangling)") if link.dangling else ""),
                       _ids(view, "cuda link")))
    checks.append(("CUDA_HOME", view.cuda_home or t("unset"), _ids(view, "CUDA_HOME")))
    in_ld = view.toolkits_in_ld_library_path
    checks.append(("LD_LIBRARY_PATH", ", ".join(in_ld) if in_ld else t("no toolkit in it"), _ids(view, "LD_LIBRARY_PATH")))
    cudnn = "; ".join("%s (%s)" % (d.version, d.source) for d in s.cudnn) or t("none found")
    checks.append(("cuDNN", cudnn, _ids(view, "cuDNN")))
    return checks




def framework_facts(fw, verdict: str, minimum: Optional[str]) -> str:
    """One framework's line: version, the CUDA (and cuDNN) it was built for and what said so, the verdict's words."""
    bits = [fw.version or t("version unknown")]
    if fw.gpu_build is False:
        bits.append(t("CPU-only build"))
    elif fw.cuda:
        cuda = "CUDA %s" % fw.cuda + (", cuDNN %s" % fw.cudnn if fw.cudnn else "")
        bits.append(t("%s (%s)", cuda, t(CUDA_FROM.get(fw.cuda_from or "", N_("from its files")))))
        if minimum:
            bits.append(t("needs driver >= %s", minimum))
    elif verdict == "plugin":
        bits.append(t("part of another package"))
    else:
        bits.append(t("its files do not say which CUDA"))
    if fw.cudnn_soname:  # the cuDNN its runtime opens itself (XLA's dlopen), as the loader resolves it
        if fw.cudnn_path:
            how = ", ".join(b for b in (printable(fw.cudnn_version or ""), t("via %s", printable(fw.cudnn_via)) if fw.cudnn_via else "") if b)
            bits.append(t("opens %s: %s", printable(fw.cudnn_soname), printable(fw.cudnn_path)) + (" (%s)" % how if how else ""))
        else:
            bits.append(t("opens %s: found nowhere", printable(fw.cudnn_soname)))
    words = {"conflict": N_("installed together with a package it conflicts with"),
             "no-gpu-platform": N_("no GPU on this platform by design")}
    if verdict in words:
        bits.append(t(words[verdict]))
    return ", ".join(bits)


def _frameworks(s, view) -> List[Check]:
    frameworks = tuple(getattr(s, "frameworks", ()) or ())
    checks: List[Check] = []
    if not frameworks:
        t_ = s.torch
        where = t("the packages of %s", t_.python) if t_ is not None and t_.python else t("no Python to read")
        checks.append((t("found"), t("none in %s", where), ()))
    verdicts = dict(getattr(view, "framework_verdicts", ()) or ())
    minimums = dict(getattr(view, "framework_min_drivers", ()) or ())
    ids = dict(getattr(view, "framework_findings", ()) or ())
    checks += [(fw.package, framework_facts(fw, verdicts.get(fw.package, "unknown"), minimums.get(fw.package)),
                tuple(i for i in _ids(view, "frameworks") if i == ids.get(fw.package))) for fw in frameworks]
    order = tuple(getattr(s, "import_order", ()) or ())
    windows = s.platform is not None and s.platform.system == "windows"
    if order and s.libraries and windows:  # the program's import order the DLL loads were replayed in (doctor --import-order)
        checks.append((t("import order"), t("%s (as stated: the DLLs are loaded in that order)", ", ".join(printable(m) for m in order)), ()))
    worst = dict(getattr(view, "library_verdicts", ()) or ())
    for consumer in worst:
        libs = [lib for lib in s.libraries if lib.consumer == consumer]
        checks.append((t("%s loads", consumer), "; ".join(library_facts(lib) for lib in libs),
                       tuple(i for i in _ids(view, "libraries") if i == worst[consumer])))
    ext_ids = dict(getattr(view, "extension_findings", ()) or ())
    for ext in getattr(s, "extensions", ()) or ():
        checks.append((t("%s extension", printable(ext.package)), extension_facts(ext),
                       tuple(i for i in _ids(view, "extensions") if i == ext_ids.get(ext.object))))
    import_ids = dict(getattr(view, "import_findings", ()) or ())
    for item in getattr(s, "framework_imports", ()) or ():
        checks.append(("import %s" % printable(item.module), import_facts(item),
                       tuple(i for i in _ids(view, "imports") if i == import_ids.get(item.module))))
    return checks


def import_facts(item) -> str:
    """``imported (2.20.0); its device check sees 1 GPU: /physical_device:GPU:0`` or the import's error."""
    if item.imported is None:
        return t("no answer: %s", printable(tr(item.error or "?")))
    if not item.imported:
        return t("fails: %s", printable((item.error or "?").strip().splitlines()[-1][:300]))
    head = t("imported (%s)", printable(item.version)) if item.version else t("imported")
    if item.error:
        return t("%s; its device check failed: %s", head, printable(item.error.strip().splitlines()[-1][:300]))
    if item.gpu_count is None:
        return head
    return tn("%s; its device check sees %d GPU%s", "%s; its device check sees %d GPUs%s", item.gpu_count, head, item.gpu_count,
              ": %s" % printable(item.detail) if item.detail else "")


def extension_facts(ext) -> str:
    """``flash_attn_2_cuda.so: 2 of 212 torch symbols not exported by this torch (c10::...(...)); C++11 ABI FALSE, torch's TRUE``."""
    from cudaenv.diagnose.extensions import abi_words
    from cudaenv.parse.symbols import readable

    name = printable(ext.object.rsplit("/", 1)[-1])
    if ext.missing_count:
        state = t("%d of %d torch symbols not exported by this torch (%s)",
                  ext.missing_count, ext.checked, ", ".join(printable(readable(n)) for n in ext.missing[:2]))
    elif ext.checked:
        state = t("its %d torch symbols all exported by this torch%s", ext.checked, "" if ext.complete else t(" (some left unread)"))
    else:
        state = t("no torch symbol to check")
    built = t(", built for CUDA %s", printable(ext.cuda)) if ext.cuda else ""
    return t("%s: %s%s; C++11 ABI %s, torch's %s", name, state, built, abi_words(ext.cxx11_abi), abi_words(ext.torch_cxx11_abi))


def _file_name(path: str) -> str:
    """The last component of a Linux or a Windows path (``C:\\e\\torch\\lib\\torch_cuda.dll`` -> ``torch_cuda.dll``)."""
    return printable(path.replace("\\", "/").rsplit("/", 1)[-1])


def library_facts(lib) -> str:
    """``libcudart.so.12: /usr/local/cuda-12.1/lib64/libcudart.so.12 (12.1.105, via LD_LIBRARY_PATH)``; every string
    read from the files (the NEEDED entry, the path, its version) escaped (:func:`printable`)."""
    needed = printable(lib.needed)
    if lib.path is None:
        return t("%s: not found", needed) + (t(" (dlopen by %s)", _file_name(lib.object)) if lib.loaded_by != "needed" else "")
    bits = [b for b in (printable(lib.version or ""), t("via %s", printable(lib.via)) if lib.via else None,
                        t("dlopen by %s", _file_name(lib.object)) if lib.loaded_by != "needed" else None) if b]
    if lib.via == "loaded" and lib.first_loaded_by:  # Windows: the module another consumer's import loaded first
        bits.append(t("loaded first by %s", printable(lib.first_loaded_by)))
        bits.append(t("its own search takes %s", printable(lib.own)) if lib.own else t("its own search finds none"))
    return "%s: %s%s" % (needed, printable(lib.path), " (%s)" % ", ".join(bits) if bits else "")


def _resources(s, view) -> List[Check]:
    mem = "; ".join("GPU %d %s/%s MiB" % (g.index, _mib(g.memory_used_mib), _mib(g.memory_total_mib)) for g in s.gpus) or t("no GPU")
    return [(t("GPU memory"), mem, _ids(view, "GPU memory")),
            (t("GPU processes"), "%d" % len(s.processes), _ids(view, "GPU processes"))]


def image_facts(image, need) -> str:
    """``doctor --image``'s row: the image, its CUDA, what it needs (shared with the Markdown report)."""
    name = printable(image.tags[0] if image.tags else image.ref)
    if not image.readable:
        return t("%s: not read", name)
    said = []
    if image.cuda_version:
        said.append("CUDA %s" % printable(image.cuda_version))
    if image.require_cuda:
        said.append(t("requires %s", printable(image.require_cuda.split()[0])))
    if image.torch:
        said.append("torch %s" % printable(image.torch))
    return "%s: %s; %s" % (name, ", ".join(said) or t("no CUDA said"), t("needs driver >= %s", need) if need else t("no driver floor"))


def _containers(s, view) -> List[Check]:
    """Only on a container host (an engine or the NVIDIA Container Toolkit), or with ``doctor --image``: nothing, and
    no section, elsewhere."""
    h = getattr(s, "containers", None)
    image = [(t("image"), image_facts(view.image, view.image_need), _ids(view, "image"))] if view.image is not None else []
    if h is None:
        return image
    tools = [name for name, path in (("nvidia-ctk", h.nvidia_ctk), ("nvidia-container-cli", h.nvidia_container_cli)) if path]
    toolkit = ", ".join(printable(p) for p in h.packages) or ", ".join(tools) or t("no NVIDIA Container Toolkit")
    runtimes = "; ".join("%s: %s" % (cfg.engine, "CDI" if cfg.engine == "podman" else
                                     ", ".join(printable(r) for r in cfg.runtimes) or t("no runtimes registered"))
                         for cfg in h.configs)
    runtime = "%s; %s%s" % (", ".join(h.engines) or t("no engine"), toolkit, ("; " + runtimes) if runtimes else "")
    specs = [sp for sp in h.cdi_specs if sp.kind == "nvidia.com/gpu"]
    cdi = "; ".join(tn("%s (driver %s, %d device name)", "%s (driver %s, %d device names)", len(sp.devices), printable(sp.path),
                       ", ".join(printable(v) for v in sp.driver_versions) or "?", len(sp.devices)) for sp in specs) or t("no spec")
    return [(t("container runtime"), runtime, _ids(view, "container runtime")), ("CDI", cdi, _ids(view, "CDI"))] + image


CHECKS = {
    "environment": _environment,
    "driver": _driver,
    "containers": _containers,
    "visibility": _visibility,
    "versions": _versions,
    "toolkits": _toolkits,
    "frameworks": _frameworks,
    "resources": _resources,
}


def _mark(findings) -> str:
    if not findings:
        return "ok"
    return min((f.severity for f in findings), key=lambda sev: RANK.get(sev, 3))


def _line(mark: str, label: str, facts: str, color: bool, width: int = WIDTH) -> List[str]:
    shown = t(MARKS[mark]) if mark in MARKS else mark
    head = "  " + pad(shown, MARK_W)
    lab = label if width_of(label) < LABEL_W else label + " "
    first = head + pad(lab, LABEL_W)
    lines = _wrap(printable(tr(facts)), first, " " * (2 + MARK_W + LABEL_W), width)
    if color:
        lines[0] = lines[0].replace(head, "  " + _paint(pad(shown, MARK_W), mark, True), 1)
    return lines


def render_report(snapshot, findings: Sequence, view, color: bool = False, verbose: bool = False,
                  width: int = WIDTH, sections: Optional[Sequence[str]] = None) -> str:
    """The checklist; ``verbose`` (``doctor --verbose``) appends every fact the probes saw (render.facts);
    ``sections``: only these checklist sections (``doctor --frameworks``: ``("frameworks",)``), None: all.

    ``view``: the doctor's facts view (:func:`cudaenv.diagnose.view.build_view`)."""
    s = snapshot
    out: List[str] = []
    by_section: Dict[str, List] = {}
    for f in findings:
        by_section.setdefault(f.section, []).append(f)
    version = s.cudaenv_version or ""
    out.append(_paint("cudaenv doctor%s" % ((" " + version) if version else ""), "bold", color))
    if s.root not in ("/", ""):
        out += _wrap(t("inspecting files under %s", printable(s.root)), "", "  ", width)
    for section, build in CHECKS.items():
        if sections is not None and section not in sections:
            continue
        mine = by_section.get(section, [])
        rows = build(s, view)
        if not rows and not mine:  # a section with nothing to check here (Containers on a machine without an engine)
            continue
        out.append("")
        out.append(_paint(t(TITLES[section]), "bold", color))
        claimed = set()
        for label, facts, ids in rows:
            hits = [f for f in mine if f.id in ids]
            claimed.update(f.id for f in hits)
            out += _line(_mark(hits), label, facts, color, width)
        for f in mine:
            if f.id not in claimed:
                out += _line(f.severity, f.id, tr(f.title), color, width)
    problems = [f for f in findings if f.section != "hints" and f.severity in ("error", "warning")]
    infos = [f for f in findings if f.section != "hints" and f.severity == "info"]
    if problems or infos:
        errors = sum(1 for f in problems if f.severity == "error")
        warnings = len(problems) - errors
        out.append("")
        counted = t("Problems: %s, %s", tn("%d error", "%d errors", errors), tn("%d warning", "%d warnings", warnings))
        if infos:  # count what is shown below
            counted += t(", %d info", len(infos))
        out.append(_paint(counted, "bold", color))
        for f in sorted(problems, key=lambda f: RANK[f.severity]) + infos:
            out.append("")
            out += _finding(f, color, width)
    hints = [f for f in findings if f.section == "hints"]
    if hints:
        out.append("")
        out.append(_paint(t("Hints"), "bold", color))
        for f in hints:
            out += _wrap(_safe(tr(f.title)), "  - ", "    ", width)
            for cmd in f.fix[:1]:
                out += wrap_command(printable(tr(cmd)), "      ", width)
    if s.notes and not verbose:  # the facts below end with the notes
        out.append("")
        out.append(_paint(t("Notes"), "bold", color))
        for n in s.notes:
            out += _wrap(printable(t("%s: %s", n.probe, n.message)), "  - ", "    ", width)
    if not problems:
        out.append("")
        out.append(_paint(t("No problems found."), "ok", color))
    if verbose:
        from cudaenv.render.facts import SECTIONS, render_facts

        out.append("")
        out.append(_paint(t("Facts (--verbose: everything the probes saw)"), "bold", color))
        titles = {t(x) for x in SECTIONS}
        for line in render_facts(s, view, width).rstrip("\n").split("\n"):
            out.append(_paint(line, "bold", color) if line in titles else line)
    return "\n".join(out) + "\n"


def _finding(f, color: bool, width: int = WIDTH) -> List[str]:
    head = "%s  %s" % (_paint(t(SEVERITY_WORDS[f.severity]) if f.severity in SEVERITY_WORDS else f.severity.upper(), f.severity, color), f.id)
    lines = [head]
    lines += _wrap(_safe(tr(f.title)), "  ", "  ", width)
    lines += _wrap(_safe(tr(f.detail)), "  ", "  ", width)
    if f.fix:
        lines.append("  " + fix_heading(f.fix_kind))
        for cmd in f.fix:
            lines += wrap_command(printable(tr(cmd)), "    ", width)
    return lines
