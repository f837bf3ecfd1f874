"""The readable facts report (``doctor --verbose``): what the snapshot saw, section by section, within the terminal's
width (80 columns at most; pure): the snapshot's facts and the doctor's facts view (cudaenv.diagnose.view)."""

from typing import List, Optional

from cudaenv.render.text import WIDTH, wrap
from cudaenv.render.width import pad, width_of
from cudaenv.core.text import printable
from cudaenv.core.i18n import N_, t, tn, tr

KEY = 18  # width of the key column, indent included

SECTIONS = (N_("Platform"), N_("Driver"), N_("GPUs"), N_("Visibility"), N_("Toolkits"), "cuDNN", N_("Torch"), N_("Notes"))


def _wrap(text: str, first: str, rest: str, width: int) -> List[str]:
    return wrap(text, first, rest, width, newlines=False)


def _kv(key: str, value: object, width: int = WIDTH) -> List[str]:
    first = "  " + pad(key, KEY - 3) + " "
    if width_of(first) > KEY:
        first = "  " + key + " "
    return _wrap("" if value is None else printable(value), first, " " * KEY, width)


def _item(text: str, width: int = WIDTH, bullet: str = "- ") -> List[str]:
    return _wrap(printable(text), "  " + bullet, "  " + " " * width_of(bullet), width)


def _writers(width: int):
    """``_kv`` and ``_item`` at ``width``."""
    return (lambda key, value: _kv(key, value, width)), (lambda text, bullet="- ": _item(text, width, bullet))


def _yes(value: Optional[bool]) -> str:
    return t("unknown") if value is None else (t("yes") if value else t("no"))


def _platform(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    p = s.platform
    lines = kv(t("system"), " ".join(x for x in (p.system, p.machine or "") if x))
    if p.distro or p.distro_id:
        lines += kv(t("distro"), p.distro or " ".join(x for x in (p.distro_id, p.distro_version) if x))
    if p.kernel:
        lines += kv(t("kernel"), p.kernel)
    wsl = t("no") if not p.wsl else "WSL%d" % p.wsl
    if p.wsl_signals:
        wsl += " (%s)" % ", ".join(p.wsl_signals)
    lines += kv("WSL", wsl)
    container = p.container or t("no")
    if p.container_signals:
        container += " (%s)" % ", ".join(p.container_signals)
    lines += kv(t("container"), container)
    if p.nvidia_visible_devices is not None:
        lines += kv("NVIDIA_VISIBLE_DEVICES", p.nvidia_visible_devices)
    devices = list(p.dev_nvidia) + (["/dev/dxg"] if p.dev_dxg else [])
    lines += kv(t("GPU devices"), ", ".join(devices) if devices else t("none in /dev"))
    if p.pci_nvidia_devices:
        lines += kv("NVIDIA PCI", ", ".join(p.pci_nvidia_devices))
    if p.libcuda:
        lines += kv("libcuda", ", ".join(p.libcuda))
    if p.secure_boot is not None:
        lines += kv("Secure Boot", t("on") if p.secure_boot else t("off"))
    if p.nouveau_loaded:
        lines += kv("nouveau", t("loaded"))
    return lines


def _driver(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    d = s.driver
    lines: List[str] = []
    if d is None:
        lines += kv(t("driver"), t("none found"))
    else:
        lines += kv(t("version"), t("%s (from %s)", d.version or t("unknown"), d.source))
        lines += kv(t("max CUDA"), d.cuda_version or t("unknown"))
        if d.kernel_module or d.kernel_module_version:
            lines += kv(t("kernel module"), " ".join(x for x in (d.kernel_module, d.kernel_module_version) if x))
        if d.wsl_windows_side:
            lines += kv("WSL", t("the driver is the Windows host's"))
        if d.nvidia_smi:
            lines += kv("nvidia-smi", d.nvidia_smi)
    for tool in s.tools:
        status = tool.status + (" (%s)" % tool.failure if tool.failure else "")
        if tool.seconds is not None:
            status += ", %.2f s" % tool.seconds
        lines += kv(tool.tool, status)
    return lines


def condition_text(c) -> str:
    """One GPU's condition from nvidia-smi -q, in short (--verbose's facts)."""
    parts = ["ECC %s" % (c.ecc_mode or "?"),
             t("uncorrectable %s volatile / %s aggregate", *("?" if v is None else v for v in (c.ecc_volatile_uncorrected,
                                                                                              c.ecc_aggregate_uncorrected)))]
    for text, on in ((t("retired pages %s", c.retired_pages), c.retired_pages is not None),
                     (t("a page retirement pending"), c.retirement_pending), (t("a row remap pending"), c.remap_pending),
                     (t("row remapping failed"), c.remap_failed), (t("persistence %s", c.persistence_mode), bool(c.persistence_mode)),
                     (t("slowed by %s", ", ".join(c.slowdowns)), bool(c.slowdowns))):
        if on:
            parts.append(text)
    return "%s: %s" % (c.pci_bus_id or t("a GPU"), "; ".join(parts))


def _gpus(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    if not s.gpus:
        return item(t("no GPUs seen"), bullet="")
    lines: List[str] = []
    for g in s.gpus:
        memory = ""
        if g.memory_total_mib is not None:
            memory = "%d MiB" % g.memory_total_mib
            if g.memory_used_mib is not None:
                memory += t(" (%d used)", g.memory_used_mib)
        parts = [g.name or t("unknown GPU")]
        if g.compute_capability:
            parts.append(t("compute %s", g.compute_capability))
        if memory:
            parts.append(memory)
        lines += item(", ".join(parts), bullet="%d  " % g.index)
        ids = ", ".join(x for x in (g.uuid, g.pci_bus_id) if x)
        if ids:
            lines += _wrap(ids, " " * 5, " " * 5, width)
    for c in getattr(s, "gpu_conditions", ()) or ():
        lines += item(condition_text(c), bullet="nvidia-smi -q ")
    for d in getattr(s, "pci_devices", ()) or ():
        if d.link_width is not None or d.link_speed is not None:
            lines += item(t("%s: PCIe %s GT/s x%s of %s GT/s x%s (%s)", *(
                ["?" if v is None else ("%g" % v if isinstance(v, float) else str(v)) for v in (
                    d.address, d.link_speed, d.link_width, d.link_cap_speed, d.link_cap_width)] + [d.source])), bullet=t("link "))
    for p in s.processes:
        where = "GPU %d" % p.gpu_index if p.gpu_index is not None else (p.gpu_uuid or t("a GPU"))
        text = t("pid %d %s: %s MiB on %s", p.pid, p.name or "?", p.used_memory_mib if p.used_memory_mib is not None else "?", where)
        if p.state and p.state != "running":
            text += " (%s)" % p.state
        lines += item(text, bullet=t("process "))
    return lines


def _visibility(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    v = s.visible_devices
    if v.cuda_visible_devices is None:
        lines = kv("CUDA_VISIBLE_DEVICES", t("unset (every GPU is visible)"))
    else:
        lines = kv("CUDA_VISIBLE_DEVICES", repr(v.cuda_visible_devices))
    if v.device_order is not None:
        lines += kv("CUDA_DEVICE_ORDER", v.device_order)
    for m in v.mapping:
        lines += item(t("cuda:%d is GPU %d%s", m.logical, m.physical, t(" (%s)", m.uuid) if m.uuid else ""), bullet="")
    if v.invalid_entry is not None:
        lines += item(t("entry %r is invalid: it and every entry after it are ignored", v.invalid_entry))
    for problem in v.problems:
        lines += item(tr(problem))
    return lines


def _toolkits(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    lines: List[str] = []
    if not s.toolkits:
        lines += item(t("no CUDA toolkit found"), bullet="")
    for k, marks in zip(s.toolkits, view.toolkit_marks):
        text = t("%s  %s  (%s, found by %s)", k.version or t("unknown"), k.path, k.install_method, k.source)
        if marks:
            text += " [%s]" % ", ".join(marks)
        lines += item(text, bullet="* " if k.active else "- ")
    link = s.cuda_symlink
    if link is not None:
        target = link.target or "?"
        if link.dangling:
            target += t(" (dangling)")
        elif link.resolved and link.resolved != link.target:
            target += " = %s" % link.resolved
        if link.alternatives:
            target += " (update-alternatives)"
        lines += kv(link.path, "-> " + target)
    a = s.active_toolkit
    if a is not None:
        nvcc = a.nvcc or t("none")
        if a.nvcc_on_path and a.nvcc and a.nvcc_on_path[0] != a.nvcc:
            nvcc = "%s -> %s" % (a.nvcc_on_path[0], a.nvcc)  # a wrapper or a link on PATH
        lines += kv(t("active nvcc"), t("%s (%s, via %s)", nvcc, a.version or t("unknown version"), a.via))
        if a.path:
            lines += kv(t("active root"), a.path)
        if len(a.nvcc_on_path) > 1:
            lines += kv(t("nvcc on PATH"), ", ".join(a.nvcc_on_path))
    return lines


def _cudnn(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    if not s.cudnn:
        return item(t("no cuDNN headers found"), bullet="")
    lines: List[str] = []
    for c in s.cudnn:
        lines += item("%s  %s  (%s)" % (c.version or t("unknown"), c.header or "?", c.source))
    return lines


def python_env_text(e) -> str:
    """One line on who made the interpreter's environment (a snapshot's :class:`PythonEnv`)."""
    tool = " (%s %s)" % (e.tool, e.tool_version) if e.tool and e.tool_version else ""
    if e.kind == "pixi":
        if not e.manifest:
            return t("pixi environment '%s' at %s (no manifest found above it)", e.name, e.prefix)
        cuda = t("CUDA %s declared for the solver", e.manifest_cuda) if e.manifest_cuda else t("no CUDA declared: pixi solves CPU-only builds")
        return t("pixi environment '%s' of %s; %s", e.name, e.manifest, cuda)
    if e.kind == "conda":
        return t("conda environment '%s' at %s%s", e.name, e.prefix, tool)
    if e.kind in ("uv", "venv", "virtualenv"):
        return t("%s at %s%s", {"uv": "uv venv", "venv": "venv"}.get(e.kind, e.kind), e.prefix, tool)
    return t("no virtual environment (%s)", e.prefix)


def _torch(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    tp = s.torch
    if tp is None:
        return item(t("not probed"), bullet="")
    lines: List[str] = []
    if tp.python is None:
        return kv("python", t("none found"))
    python = tp.python
    extra = [x for x in (tp.python_version, tp.python_source and t("from %s", tp.python_source)) if x]
    if tp.in_virtualenv:
        extra.append("venv")
    if tp.externally_managed:
        extra.append(t("externally managed (PEP 668)"))
    if extra:
        python += t(" (%s)", t(", ").join(extra))
    lines += kv("python", python)
    e = getattr(s, "python_env", None)
    if e is not None:
        lines += kv(t("environment"), python_env_text(e))
        if e.cuda_packages:
            lines += kv(t("CUDA packages"), ", ".join(e.cuda_packages))
        if getattr(view, "solver", ()):
            lines += kv(t("solver sees"), ", ".join("%s %s" % (name, value or t("none")) for name, value in view.solver))
    if not tp.installed:
        lines += kv("torch", t("not installed"))
        return lines
    build = {"cuda": "CUDA %s" % tp.cuda, "rocm": "ROCm %s" % tp.hip}.get(view.torch_build) or t("CPU only")
    lines += kv("torch", t("%s (%s)%s", tp.version or t("unknown version"), build, t(", installed by %s", tp.installer) if tp.installer else ""))
    if tp.location:
        lines += kv(t("location"), tp.location)
    if view.torch_devices == "import-failed":
        lines += kv(t("import"), t("failed: %s", tp.import_error.splitlines()[0]))
    elif view.torch_devices == "not-imported":
        why = t("see Notes") if s.notes_for("torch") else "--quick"
        lines += kv(t("import"), t("not imported (%s)", why))
    else:
        available = _yes(tp.cuda_available)
        if tp.device_count is not None:
            available += tn(", %d device", ", %d devices", tp.device_count)
        lines += kv(t("CUDA available"), available)
        for i, d in enumerate(tp.devices):
            lines += item(t("cuda:%d %s, compute %s", i, d.name or "?", d.capability or "?"), bullet="")
        if tp.arch_list:
            lines += kv(t("arch list"), " ".join(tp.arch_list))
        if tp.cudnn or tp.nccl:
            lines += kv("cuDNN / NCCL", "%s / %s" % (tp.cudnn or t("none"), tp.nccl or t("none")))
        if tp.cuda_error:
            lines += kv(t("CUDA error"), tp.cuda_error.splitlines()[0])
    if tp.nvidia_packages:
        lines += kv(t("nvidia wheels"), ", ".join(tp.nvidia_packages))
    return lines


def _notes(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    if not s.notes:
        return item(t("none"), bullet="")
    lines: List[str] = []
    for n in s.notes:
        lines += item(t("%s: %s", n.probe, n.message))
    return lines


def render_facts(snapshot, view, width: int = WIDTH) -> str:
    """Every section of the facts report, each a title line and indented lines, ending with a newline; ``view``: the
    doctor's facts view (cudaenv.diagnose.view), the same the checklist and the Markdown table format; ``width``: the
    terminal's (COLUMNS), at most 80."""
    builders = (_platform, _driver, _gpus, _visibility, _toolkits, _cudnn, _torch, _notes)
    out: List[str] = []
    for title, build in zip(SECTIONS, builders):
        if out:
            out.append("")
        out.append(t(title))
        out.extend(build(snapshot, view, width))
    return "\n".join(line.rstrip() for line in out) + "\n"
