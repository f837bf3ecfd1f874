"""What this machine says about a pasted error, cheaply: ``cudaenv explain`` without ``--offline``.

Only the probes an error's kind needs run, through the Host (nvidia-smi's queries, CUDA_VISIBLE_DEVICES, the static
torch pass: never ``import torch``, that is ``--probe``):

* a device number (``invalid device ordinal``, ``cuda:2``, a checkpoint saved on another GPU): which ``cuda:N``
  exist here and which physical GPUs (index, name, bus id) they are under ``CUDA_VISIBLE_DEVICES``; for
  ``Attempting to deserialize object on CUDA device 2 but torch.cuda.device_count() is 1``, the ``torch.load`` line
  that works here;
* ``no kernel image``: this GPU's compute capability, the arch list of the torch in the user's Python (cudaenv's
  tables, the static pass) and, when it lacks the GPU, the doctor's own finding with the build that fits;
* out of memory: the processes holding GPU memory now;
* ``nvcc fatal : Unsupported gpu architecture 'compute_89'``: the toolkits of this machine (the toolkit probe), which
  of them compile for that architecture (``data/cuda_arch.json`` and the nvcc_arch rows of
  ``data/toolkit_install.json``), and the one each way of picking nvcc gives (``CUDA_HOME``/``CUDA_PATH`` for
  torch.utils.cpp_extension, the nvcc on PATH, ``/usr/local/cuda``): when one here does compile for it, another
  nvcc than that one ran.

:func:`wanted` is pure (text and match ids -> the kinds to gather); :func:`machine_context` does the I/O and returns
sentences (the renderer escapes them).
"""

import re
from typing import Any, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from cudaenv.snapshot import Note, Snapshot

DEVICE_IDS = frozenset({"invalid-device-ordinal", "checkpoint-device-missing", "checkpoint-needs-cuda",
                        "tensors-on-different-devices", "torch-cuda-unavailable"})
ARCH_IDS = frozenset({"gpu-arch-unsupported"})
MEMORY_IDS = frozenset({"cuda-oom", "gpu-memory-busy"})
NVCC_IDS = frozenset({"nvcc-arch-unsupported"})
KINDS = ("devices", "load", "arch", "memory", "nvcc")
GPU_KINDS = frozenset({"devices", "load", "arch", "memory"})  # the kinds nvidia-smi answers
MAX_SCAN = 1_000_000  # characters of the error looked at for device numbers

_CUDA_N = re.compile(r"\bcuda:(\d{1,4})\b")
_LOAD = re.compile(r"deserialize object on CUDA device (\d{1,6}) but torch\.cuda\.device_count\(\) is (\d{1,6})")


def wanted(text: str, match_ids: Iterable[str]) -> FrozenSet[str]:
    """The kinds of machine context (:data:`KINDS`) that sharpen this error."""
    ids = set(match_ids)
    body = text[-MAX_SCAN:] if isinstance(text, str) else ""
    low = body.lower()
    kinds = set()
    if ids & DEVICE_IDS or "invalid device ordinal" in low:
        kinds.add("devices")
    if _LOAD.search(body):
        kinds.update(("devices", "load"))
    if ids & ARCH_IDS or "no kernel image is available" in low:
        kinds.add("arch")
    if ids & MEMORY_IDS or "out of memory" in low:
        kinds.add("memory")
    if ids & NVCC_IDS:
        kinds.add("nvcc")
    return frozenset(kinds)


def mentioned_devices(text: str) -> Tuple[int, ...]:
    """The ``cuda:N`` numbers and the checkpoint's device an error names, sorted."""
    body = text[-MAX_SCAN:] if isinstance(text, str) else ""
    found = {int(m.group(1)) for m in _CUDA_N.finditer(body)}
    load = _LOAD.search(body)
    if load:
        found.add(int(load.group(1)))
    return tuple(sorted(found))[:16]


def _gpu_label(g) -> str:
    bits = [b for b in (g.name, g.pci_bus_id) if b]
    return "GPU %d%s" % (g.index, (" (%s)" % ", ".join(bits)) if bits else "")


def gather(host, kinds: FrozenSet[str], python: Optional[str] = None) -> Snapshot:
    """The part of the doctor's Snapshot the kinds need (never imports torch)."""
    from cudaenv.probes.nvidia import probe_nvidia
    from cudaenv.probes.platform import probe_platform
    from cudaenv.probes.visibility import probe_visibility

    notes: List[Note] = []
    platform = probe_platform(host, notes)
    parts: dict = {}
    if kinds & GPU_KINDS:
        nvidia = probe_nvidia(host, notes, platform=platform)
        parts.update(driver=nvidia.driver, gpus=nvidia.gpus, visible_devices=probe_visibility(host, nvidia.gpus),
                     processes=nvidia.processes, tools=nvidia.tools)
    if "arch" in kinds:
        from cudaenv.probes.python import find_interpreter
        from cudaenv.probes.torch import probe_torch_static

        parts["torch"] = probe_torch_static(host, find_interpreter(host, python, notes=notes), notes)
    if "nvcc" in kinds:
        from cudaenv.probes.env import probe_env
        from cudaenv.probes.toolkits import probe_toolkits

        state = probe_toolkits(host, notes, install_methods=False)  # paths and versions: no dpkg database
        parts.update(toolkits=state.toolkits, cuda_symlink=state.cuda_symlink, active_toolkit=state.active_toolkit,
                     env=probe_env(host))
    return Snapshot(platform=platform, notes=tuple(notes), root=str(host.root), **parts)


def machine_context(host, text: str, match_ids: Sequence[str], python: Optional[str] = None,
                    values: Optional[Mapping[str, Mapping[str, str]]] = None) -> Tuple[str, ...]:
    """Sentences about this machine that sharpen the error (none when its kind needs none). ``values``: each
    match's values by id (the ``nvcc`` kind needs the architecture nvcc refused)."""
    kinds = wanted(text, match_ids)
    if not kinds:
        return ()
    nvcc = (values or {}).get("nvcc-arch-unsupported") or {}
    return context_lines(gather(host, kinds, python), kinds, mentioned_devices(text), text, nvcc.get("arch"))


def context_lines(s: Snapshot, kinds: FrozenSet[str], devices: Sequence[int] = (), text: str = "",
                  arch: Optional[str] = None) -> Tuple[str, ...]:
    """The sentences for ``kinds`` from a (partial) Snapshot of this machine (pure). ``arch``: the architecture
    nvcc refused (``compute_89``), for the ``nvcc`` kind."""
    from cudaenv.pasted.nvcc_context import nvcc_lines

    out = list(nvcc_lines(s, arch)) if "nvcc" in kinds else []
    if kinds & GPU_KINDS:
        out += _gpu_lines(s, kinds, devices)
    return tuple(out)


def _gpu_lines(s: Snapshot, kinds: FrozenSet[str], devices: Sequence[int]) -> List[str]:
    from cudaenv.diagnose.visibility import visible_gpus

    out: List[str] = []
    smi = next((t for t in s.tools if t.tool == "nvidia-smi"), None)
    if not s.gpus:
        said = "nvidia-smi is not installed" if smi is not None and smi.status == "missing" else "nvidia-smi and NVML show no GPU"
        out.append("This machine: %s, so CUDA has no device here." % said)
        if "load" in kinds:
            out.append('Load the checkpoint here with: torch.load(path, map_location="cpu")')
        return out
    seen = visible_gpus(s)
    if "devices" in kinds:
        out += _devices(s, seen, devices)
    if "load" in kinds:
        target = "cuda:0" if seen else "cpu"
        out.append('Load the checkpoint here with: torch.load(path, map_location="%s")%s' % (
            target, "    # every tensor onto the first visible GPU" if seen else "    # no GPU is visible here"))
    if "arch" in kinds:
        out += _arch(s, seen)
    if "memory" in kinds:
        out += _memory(s, seen)
    return out


def _devices(s: Snapshot, seen: Sequence[Any], devices: Sequence[int]) -> List[str]:
    v = s.visible_devices
    out = []
    names = ["cuda:%d is %s" % (i, _gpu_label(g)) for i, g in enumerate(seen[:16])]
    if v.cuda_visible_devices is not None:
        if seen:
            exist = ", ".join("cuda:%d" % i for i in range(len(seen[:16])))
            out.append("Here CUDA_VISIBLE_DEVICES=%s: CUDA numbers the visible GPUs from 0, so only %s exist%s: %s."
                       % (v.cuda_visible_devices, exist, "s" if len(seen) == 1 else "", "; ".join(names)))
        else:
            out.append("Here CUDA_VISIBLE_DEVICES=%s hides every GPU: CUDA sees none of the %d GPU(s) of this machine."
                       % (v.cuda_visible_devices, len(s.gpus)))
    else:
        out.append("This machine has %d GPU(s), all visible (CUDA_VISIBLE_DEVICES is unset): %s." % (len(seen), "; ".join(names)))
    missing = [d for d in devices if d >= len(seen)]
    if missing:
        out.append("%s does not exist here (valid: %s)." % (
            ", ".join("cuda:%d" % d for d in missing),
            ", ".join("cuda:%d" % i for i in range(min(len(seen), 16))) or "none"))
    return out


def _arch(s: Snapshot, seen: Sequence[Any]) -> List[str]:
    from cudaenv.diagnose.versions import gpu_arch, static_arch_list
    from cudaenv.version import sm_name

    out = []
    for g in seen[:16]:
        if g.compute_capability:
            out.append("%s has compute capability %s (%s)." % (_gpu_label(g), g.compute_capability, sm_name(g.compute_capability)))
        else:
            out.append("%s: nvidia-smi did not say its compute capability (drivers before 510 do not)." % _gpu_label(g))
    t = s.torch
    if t is None or not t.installed:
        where = t.python if t is not None and t.python else "the Python found here"
        out.append("No torch is installed in %s (give the one that failed with --python)." % where)
        return out
    if not t.cuda:
        out.append("torch %s in %s is a CPU build." % (t.version, t.python))
        return out
    arch = static_arch_list(s)
    if arch:
        out.append("torch %s in %s has kernels for: %s (cudaenv's tables; torch was not imported)." % (
            t.version, t.python, " ".join(arch)))
    else:
        out.append("cudaenv's tables have no arch list for torch %s on this platform." % t.version)
    found = gpu_arch(s, None)
    for f in found:
        out.append(f.title + ".")
        out += ["Fix: %s" % cmd for cmd in f.fix if not cmd.startswith("#")][:4]
    if arch and not found and all(g.compute_capability for g in seen):
        out.append("That torch has kernels for every GPU here: the error came from another Python, machine or "
                   "extension (a custom CUDA extension built for other archs); cudaenv explain --probe imports torch to check.")
    return out


def _memory(s: Snapshot, seen: Sequence[Any]) -> List[str]:
    out = []
    for g in seen[:16]:
        if g.memory_total_mib is not None and g.memory_used_mib is not None:
            out.append("%s: %d of %d MiB in use now." % (_gpu_label(g), g.memory_used_mib, g.memory_total_mib))
    holders = sorted((p for p in s.processes if p.used_memory_mib), key=lambda p: -(p.used_memory_mib or 0))
    for p in holders[:10]:
        bits = ["pid %d" % p.pid]
        if p.name:
            bits.append(p.name)
        if p.owner:
            bits.append("user %s" % p.owner)
        if p.state and p.state != "running":
            bits.append(p.state)
        where = " on GPU %d" % p.gpu_index if p.gpu_index is not None else ""
        out.append("%s holds %d MiB%s." % (" ".join(bits), p.used_memory_mib, where))
    if not holders:
        out.append("No process holds GPU memory now (the memory was given back when the failing process ended).")
    elif len(holders) > 10:
        out.append("... and %d more processes." % (len(holders) - 10))
    return out
