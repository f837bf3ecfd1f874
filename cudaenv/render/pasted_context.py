"""The sentences of what this machine says about a pasted error (``cudaenv explain`` without ``--offline``), from the
data :func:`cudaenv.pasted.context.machine_context` gathers: the GPUs CUDA numbers here, the ``torch.load`` line that
works here, this GPU against the user's torch build, the processes holding GPU memory, and this machine's toolkits
against the architecture nvcc refused. Unescaped, as :func:`cudaenv.render.explain.context_lines`: the command passes
them through :func:`cudaenv.core.text.printable` where it shows them.
"""

from typing import List, Optional, Sequence, Tuple

from cudaenv.pasted.context import Gpu, MachineContext, TorchArch
from cudaenv.pasted.nvcc_context import NvccContext, NvccToolkit
from cudaenv.render.explain import cuda_names
from cudaenv.core.i18n import N_, t, tr


def machine_context_lines(ctx: Optional[MachineContext]) -> Tuple[str, ...]:
    """Every sentence of ``ctx`` (none for None): the toolkits' first, then the GPUs'."""
    if ctx is None:
        return ()
    out = nvcc_lines(ctx.nvcc) if ctx.nvcc is not None else []
    if ctx.no_gpu is not None:
        said = t("nvidia-smi is not installed") if ctx.no_gpu == "no-smi" else t("nvidia-smi and NVML show no GPU")
        out.append(t("This machine: %s, so CUDA has no device here.", said))
        if "load" in ctx.kinds:
            out.append(t('Load the checkpoint here with: torch.load(path, map_location="cpu")'))
        return tuple(out)
    if not ctx.gpu_count:
        return tuple(out)
    if "devices" in ctx.kinds:
        out += _devices(ctx)
    if "load" in ctx.kinds:
        seen = ctx.visible_count > 0
        out.append(t('Load the checkpoint here with: torch.load(path, map_location="%s")%s',
                     "cuda:0" if seen else "cpu", t("    # every tensor onto the first visible GPU") if seen else t("    # no GPU is visible here")))
    if "arch" in ctx.kinds:
        out += _arch(ctx.visible, ctx.torch)
    if "memory" in ctx.kinds:
        out += _memory(ctx)
    return tuple(out)


def gpu_label(g: Gpu) -> str:
    bits = [b for b in (g.name, g.bus_id) if b]
    return "GPU %d%s" % (g.index, (" (%s)" % ", ".join(bits)) if bits else "")


def _devices(ctx: MachineContext) -> List[str]:
    out = []
    names = [t("cuda:%d is %s", i, gpu_label(g)) for i, g in enumerate(ctx.visible)]
    if ctx.visible_setting is not None:
        if ctx.visible_count:
            out.append(t("Here CUDA_VISIBLE_DEVICES=%s: CUDA numbers the visible GPUs from 0, so only %s exist%s: %s.",
                         ctx.visible_setting, cuda_names(len(ctx.visible), 16), "s" if ctx.visible_count == 1 else "", "; ".join(names)))
        else:
            out.append(t("Here CUDA_VISIBLE_DEVICES=%s hides every GPU: CUDA sees none of the %d GPU(s) of this machine.",
                         ctx.visible_setting, ctx.gpu_count))
    else:
        out.append(t("This machine has %d GPU(s), all visible (CUDA_VISIBLE_DEVICES is unset): %s.", ctx.visible_count, "; ".join(names)))
    if ctx.missing:
        out.append(t("%s does not exist here (valid: %s).",
                     ", ".join("cuda:%d" % d for d in ctx.missing), cuda_names(ctx.visible_count, 16, "none")))
    return out


def _arch(seen: Sequence[Gpu], torch: Optional[TorchArch]) -> List[str]:
    out = []
    for g in seen:
        if g.compute_capability:
            out.append(t("%s has compute capability %s (%s).", gpu_label(g), g.compute_capability, g.sm))
        else:
            out.append(t("%s: nvidia-smi did not say its compute capability (drivers before 510 do not).", gpu_label(g)))
    tp = torch
    if tp is None or not tp.installed:
        where = tp.python if tp is not None and tp.python else t("the Python found here")
        out.append(t("No torch is installed in %s (give the one that failed with --python).", where))
        return out
    if not tp.cuda:
        out.append(t("torch %s in %s is a CPU build.", tp.version, tp.python))
        return out
    if tp.arch_list:
        out.append(t("torch %s in %s has kernels for: %s (cudaenv's tables; torch was not imported).",
                     tp.version, tp.python, " ".join(tp.arch_list)))
    else:
        out.append(t("cudaenv's tables have no arch list for torch %s on this platform.", tp.version))
    for title, fix in tp.findings:
        out.append(tr(title) + ".")
        out += [t("Fix: %s", cmd) for cmd in fix if not cmd.startswith("#")][:4]
    if tp.arch_list and not tp.findings and tp.every_gpu_known:
        out.append(t("That torch has kernels for every GPU here: the error came from another Python, machine or "
                     "extension (a custom CUDA extension built for other archs); cudaenv explain --probe imports torch to check."))
    return out


def _memory(ctx: MachineContext) -> List[str]:
    out = []
    for g in ctx.visible:
        if g.memory_total_mib is not None and g.memory_used_mib is not None:
            out.append(t("%s: %d of %d MiB in use now.", gpu_label(g), g.memory_used_mib, g.memory_total_mib))
    for p in ctx.holders:
        bits = ["pid %d" % p.pid]
        if p.name:
            bits.append(p.name)
        if p.owner:
            bits.append(t("user %s", p.owner))
        if p.state and p.state != "running":
            bits.append(p.state)
        where = t(" on GPU %d", p.gpu_index) if p.gpu_index is not None else ""
        out.append(t("%s holds %d MiB%s.", " ".join(bits), p.used_mib, where))
    if not ctx.holders:
        out.append(t("No process holds GPU memory now (the memory was given back when the failing process ended)."))
    elif ctx.holder_count > 10:
        out.append(t("... and %d more processes.", ctx.holder_count - 10))
    return out


# ------------------------------------------------------------------ nvcc refused an architecture
def _label(tk: NvccToolkit) -> str:
    from cudaenv.core.version import major_minor

    return "CUDA %s (%s)" % (major_minor(tk.version) or tk.version, tk.path) if tk.version else \
        t("a toolkit of unknown version (%s)", tk.path)


def _verdict(tk: NvccToolkit, arch: str) -> str:
    return t("compiles for %s", arch) if tk.compiles else t("cannot compile for %s", arch) if tk.compiles is False else t("not known")


_HOW = {  # how each way of picking nvcc is named: (the pick's where, value, whether CUDA_HOME/CUDA_PATH is set)
    "PATH": N_("the nvcc on PATH (%s), which make, CMake and a plain nvcc use%s"),
    "/usr/local/cuda": N_("/usr/local/cuda, torch.utils.cpp_extension's guess when neither CUDA_HOME nor an nvcc on PATH is there"),
}


def nvcc_lines(n: NvccContext) -> List[str]:
    """The sentences of :class:`cudaenv.pasted.nvcc_context.NvccContext`."""
    if n.verdict == "none":
        return [t("cudaenv found no CUDA toolkit on this machine: the nvcc that failed ran in another environment "
                  "(a conda env, a container) or is not where cudaenv looks (cudaenv list; CUDAENV_TOOLKITS).")]
    out = [t("Toolkits here: %s.", "; ".join("%s: %s" % (_label(tk), _verdict(tk, n.arch)) for tk in n.toolkits))]
    home = any(p.where in ("CUDA_HOME", "CUDA_PATH") for p in n.picks)
    for p in n.picks:
        if p.where == "PATH":
            how = t(_HOW["PATH"], p.value, "" if home else t(", and torch.utils.cpp_extension too"))
        elif p.where == "/usr/local/cuda":
            how = t(_HOW["/usr/local/cuda"])
        else:
            how = t("%s=%s, which torch.utils.cpp_extension uses", p.where, p.value)
        out.append("%s: %s." % (how[0].upper() + how[1:], t("%s, which %s", _label(p.toolkit), _verdict(p.toolkit, n.arch))
                                if p.toolkit is not None else t("no toolkit cudaenv knows")))
    if n.verdict == "none-compiles":
        out.append(t("No toolkit here compiles for %s (%s needs CUDA %s%s).",
                     n.arch, n.arch, n.cuda_range or t("%s or newer", n.first_cuda), t("; the newest here is %s", _label(n.newest)) if n.newest else ""))
    elif n.verdict == "elsewhere":
        out.append(t("The toolkit this environment picks compiles for %s, so the nvcc that failed was another one: a "
                     "build run with another PATH or CUDA_HOME (a conda env, sudo, a container, a CMake cache's "
                     "CMAKE_CUDA_COMPILER).", n.arch))
    elif n.best is not None:
        wrong = [t("%s through %s", _label(tk) if tk is not None else t("no toolkit"), t(" and ").join(wheres)) for tk, wheres in n.wrong]
        out.append(t("%s compiles for %s, but %s: another nvcc than that one ran. Point the build at it: cudaenv use %s "
                     "(sets CUDA_HOME and PATH in this shell), then build again.",
                     _label(n.best), n.arch, t("the build picks %s", t(" and ").join(wrong)) if wrong else t("nothing here picks it"), n.use))
    return out
