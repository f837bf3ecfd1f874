"""The readable facts report (``doctor --verbose``): what the snapshot saw, section by section, within the terminal's
width (80 columns at most; pure): the snapshot's facts and the doctor's facts view (cudaenv.diagnose.view)."""

from typing import List, Optional

from cudaenv.render.text import WIDTH, wrap
from cudaenv.core.text import printable
from cudaenv.core.i18n import tr

KEY = 18  # width of the key column, indent included

SECTIONS = ("Platform", "Driver", "GPUs", "Visibility", "Toolkits", "cuDNN", "Torch", "Notes")


def _wrap(text: str, first: str, rest: str, width: int) -> List[str]:
    return wrap(text, first, rest, width, newlines=False)


def _kv(key: str, value: object, width: int = WIDTH) -> List[str]:
    first = ("  %-*s" % (KEY - 3, key)) + " "
    if len(first) > KEY:
        first = "  " + key + " "
    return _wrap("" if value is None else printable(value), first, " " * KEY, width)


def _item(text: str, width: int = WIDTH, bullet: str = "- ") -> List[str]:
    return _wrap(printable(text), "  " + bullet, "  " + " " * len(bullet), width)


def _writers(width: int):
    """``_kv`` and ``_item`` at ``width``."""
    return (lambda key, value: _kv(key, value, width)), (lambda text, bullet="- ": _item(text, width, bullet))


def _yes(value: Optional[bool]) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def _platform(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    p = s.platform
    lines = kv("system", " ".join(x for x in (p.system, p.machine or "") if x))
    if p.distro or p.distro_id:
        lines += kv("distro", p.distro or " ".join(x for x in (p.distro_id, p.distro_version) if x))
    if p.kernel:
        lines += kv("kernel", p.kernel)
    wsl = "no" if not p.wsl else "WSL%d" % p.wsl
    if p.wsl_signals:
        wsl += " (%s)" % ", ".join(p.wsl_signals)
    lines += kv("WSL", wsl)
    container = p.container or "no"
    if p.container_signals:
        container += " (%s)" % ", ".join(p.container_signals)
    lines += kv("container", container)
    if p.nvidia_visible_devices is not None:
        lines += kv("NVIDIA_VISIBLE_DEVICES", p.nvidia_visible_devices)
    devices = list(p.dev_nvidia) + (["/dev/dxg"] if p.dev_dxg else [])
    lines += kv("GPU devices", ", ".join(devices) if devices else "none in /dev")
    if p.pci_nvidia_devices:
        lines += kv("NVIDIA PCI", ", ".join(p.pci_nvidia_devices))
    if p.libcuda:
        lines += kv("libcuda", ", ".join(p.libcuda))
    if p.secure_boot is not None:
        lines += kv("Secure Boot", "on" if p.secure_boot else "off")
    if p.nouveau_loaded:
        lines += kv("nouveau", "loaded")
    return lines


def _driver(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    d = s.driver
    lines: List[str] = []
    if d is None:
        lines += kv("driver", "none found")
    else:
        lines += kv("version", "%s (from %s)" % (d.version or "unknown", d.source))
        lines += kv("max CUDA", d.cuda_version or "unknown")
        if d.kernel_module or d.kernel_module_version:
            lines += kv("kernel module", " ".join(x for x in (d.kernel_module, d.kernel_module_version) if x))
        if d.wsl_windows_side:
            lines += kv("WSL", "the driver is the Windows host's")
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
             "uncorrectable %s volatile / %s aggregate" % tuple("?" if v is None else v for v in (c.ecc_volatile_uncorrected,
                                                                                             c.ecc_aggregate_uncorrected))]
    for text, on in (("retired pages %s" % c.retired_pages, c.retired_pages is not None),
                     ("a page retirement pending", c.retirement_pending), ("a row remap pending", c.remap_pending),
                     ("row remapping failed", c.remap_failed), ("persistence %s" % c.persistence_mode, bool(c.persistence_mode)),
                     ("slowed by %s" % ", ".join(c.slowdowns), bool(c.slowdowns))):
        if on:
            parts.append(text)
    return "%s: %s" % (c.pci_bus_id or "a GPU", "; ".join(parts))


def _gpus(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    if not s.gpus:
        return item("no GPUs seen", bullet="")
    lines: List[str] = []
    for g in s.gpus:
        memory = ""
        if g.memory_total_mib is not None:
            memory = "%d MiB" % g.memory_total_mib
            if g.memory_used_mib is not None:
                memory += " (%d used)" % g.memory_used_mib
        parts = [g.name or "unknown GPU"]
        if g.compute_capability:
            parts.append("compute %s" % g.compute_capability)
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
            lines += item("%s: PCIe %s GT/s x%s of %s GT/s x%s (%s)" % tuple(
                ["?" if v is None else ("%g" % v if isinstance(v, float) else str(v)) for v in (
                    d.address, d.link_speed, d.link_width, d.link_cap_speed, d.link_cap_width)] + [d.source]), bullet="link ")
    for p in s.processes:
        where = "GPU %d" % p.gpu_index if p.gpu_index is not None else (p.gpu_uuid or "a GPU")
        text = "pid %d %s: %s MiB on %s" % (p.pid, p.name or "?", p.used_memory_mib if p.used_memory_mib is not None else "?", where)
        if p.state and p.state != "running":
            text += " (%s)" % p.state
        lines += item(text, bullet="process ")
    return lines


def _visibility(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    v = s.visible_devices
    if v.cuda_visible_devices is None:
        lines = kv("CUDA_VISIBLE_DEVICES", "unset (every GPU is visible)")
    else:
        lines = kv("CUDA_VISIBLE_DEVICES", repr(v.cuda_visible_devices))
    if v.device_order is not None:
        lines += kv("CUDA_DEVICE_ORDER", v.device_order)
    for m in v.mapping:
        lines += item("cuda:%d is GPU %d%s" % (m.logical, m.physical, " (%s)" % m.uuid if m.uuid else ""), bullet="")
    if v.invalid_entry is not None:
        lines += item("entry %r is invalid: it and every entry after it are ignored" % v.invalid_entry)
    for problem in v.problems:
        lines += item(problem)
    return lines


def _toolkits(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    lines: List[str] = []
    if not s.toolkits:
        lines += item("no CUDA toolkit found", bullet="")
    for t, marks in zip(s.toolkits, view.toolkit_marks):
        text = "%s  %s  (%s, found by %s)" % (t.version or "unknown", t.path, t.install_method, t.source)
        if marks:
            text += " [%s]" % ", ".join(marks)
        lines += item(text, bullet="* " if t.active else "- ")
    link = s.cuda_symlink
    if link is not None:
        target = link.target or "?"
        if link.dangling:
            target += " (dangling)"
        elif link.resolved and link.resolved != link.target:
            target += " = %s" % link.resolved
        if link.alternatives:
            target += " (update-alternatives)"
        lines += kv(link.path, "-> " + target)
    a = s.active_toolkit
    if a is not None:
        nvcc = a.nvcc or "none"
        if a.nvcc_on_path and a.nvcc and a.nvcc_on_path[0] != a.nvcc:
            nvcc = "%s -> %s" % (a.nvcc_on_path[0], a.nvcc)  # a wrapper or a link on PATH
        lines += kv("active nvcc", "%s (%s, via %s)" % (nvcc, a.version or "unknown version", a.via))
        if a.path:
            lines += kv("active root", a.path)
        if len(a.nvcc_on_path) > 1:
            lines += kv("nvcc on PATH", ", ".join(a.nvcc_on_path))
    return lines


def _cudnn(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    if not s.cudnn:
        return item("no cuDNN headers found", bullet="")
    lines: List[str] = []
    for c in s.cudnn:
        lines += item("%s  %s  (%s)" % (c.version or "unknown", c.header or "?", c.source))
    return lines


def python_env_text(e) -> str:
    """One line on who made the interpreter's environment (a snapshot's :class:`PythonEnv`)."""
    tool = " (%s %s)" % (e.tool, e.tool_version) if e.tool and e.tool_version else ""
    if e.kind == "pixi":
        if not e.manifest:
            return "pixi environment '%s' at %s (no manifest found above it)" % (e.name, e.prefix)
        cuda = ("CUDA %s declared for the solver" % e.manifest_cuda) if e.manifest_cuda else "no CUDA declared: pixi solves CPU-only builds"
        return "pixi environment '%s' of %s; %s" % (e.name, e.manifest, cuda)
    if e.kind == "conda":
        return "conda environment '%s' at %s%s" % (e.name, e.prefix, tool)
    if e.kind in ("uv", "venv", "virtualenv"):
        return "%s at %s%s" % ({"uv": "uv venv", "venv": "venv"}.get(e.kind, e.kind), e.prefix, tool)
    return "no virtual environment (%s)" % e.prefix


def _torch(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    t = s.torch
    if t is None:
        return item("not probed", bullet="")
    lines: List[str] = []
    if t.python is None:
        return kv("python", "none found")
    python = t.python
    extra = [x for x in (t.python_version, t.python_source and "from " + t.python_source) if x]
    if t.in_virtualenv:
        extra.append("venv")
    if t.externally_managed:
        extra.append("externally managed (PEP 668)")
    if extra:
        python += " (%s)" % ", ".join(extra)
    lines += kv("python", python)
    e = getattr(s, "python_env", None)
    if e is not None:
        lines += kv("environment", python_env_text(e))
        if e.cuda_packages:
            lines += kv("CUDA packages", ", ".join(e.cuda_packages))
        if getattr(view, "solver", ()):
            lines += kv("solver sees", ", ".join("%s %s" % (name, value or "none") for name, value in view.solver))
    if not t.installed:
        lines += kv("torch", "not installed")
        return lines
    build = {"cuda": "CUDA %s" % t.cuda, "rocm": "ROCm %s" % t.hip}.get(view.torch_build, "CPU only")
    lines += kv("torch", "%s (%s)%s" % (t.version or "unknown version", build, ", installed by %s" % t.installer if t.installer else ""))
    if t.location:
        lines += kv("location", t.location)
    if view.torch_devices == "import-failed":
        lines += kv("import", "failed: %s" % t.import_error.splitlines()[0])
    elif view.torch_devices == "not-imported":
        why = "see Notes" if s.notes_for("torch") else "--quick"
        lines += kv("import", "not imported (%s)" % why)
    else:
        available = _yes(t.cuda_available)
        if t.device_count is not None:
            available += ", %d device%s" % (t.device_count, "" if t.device_count == 1 else "s")
        lines += kv("CUDA available", available)
        for i, d in enumerate(t.devices):
            lines += item("cuda:%d %s, compute %s" % (i, d.name or "?", d.capability or "?"), bullet="")
        if t.arch_list:
            lines += kv("arch list", " ".join(t.arch_list))
        if t.cudnn or t.nccl:
            lines += kv("cuDNN / NCCL", "%s / %s" % (t.cudnn or "none", t.nccl or "none"))
        if t.cuda_error:
            lines += kv("CUDA error", t.cuda_error.splitlines()[0])
    if t.nvidia_packages:
        lines += kv("nvidia wheels", ", ".join(t.nvidia_packages))
    return lines


def _notes(s, view, width: int = WIDTH) -> List[str]:
    kv, item = _writers(width)
    if not s.notes:
        return item("none", bullet="")
    lines: List[str] = []
    for n in s.notes:
        lines += item("%s: %s" % (n.probe, tr(n.message)))
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
        out.append(title)
        out.extend(build(snapshot, view, width))
    return "\n".join(line.rstrip() for line in out) + "\n"
