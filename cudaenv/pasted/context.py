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
what was found as data (:class:`MachineContext`, built by the pure :func:`context_of`); the sentences are
:func:`cudaenv.render.pasted_context.machine_context_lines` (which the command escapes as it shows them).
"""

import re
from typing import Any, FrozenSet, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from cudaenv.pasted.nvcc_context import NvccContext
from cudaenv.model.snapshot import Note, Snapshot

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
    found = set()
    at = body.find("cuda:")  # each match starts there: the pattern is tried only at those places (a 1 MB log without
    while at >= 0:  # one costs one pass of str.find, not a regular-expression scan)
        m = _CUDA_N.match(body, at)
        if m:
            found.add(int(m.group(1)))
        at = body.find("cuda:", at + 1)
    load = _LOAD.search(body)
    if load:
        found.add(int(load.group(1)))
    return tuple(sorted(found))[:16]


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
    if "arch" in kinds and parts.get("gpus"):  # without a GPU the context says only that (context_of): no child runs
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


class Gpu(NamedTuple):
    """A GPU of this machine as the context names it."""

    index: int
    name: Optional[str] = None
    bus_id: Optional[str] = None
    compute_capability: Optional[str] = None  # None: nvidia-smi did not say (drivers before 510)
    sm: Optional[str] = None  # sm_86
    memory_used_mib: Optional[int] = None
    memory_total_mib: Optional[int] = None


class Holder(NamedTuple):
    """A process holding GPU memory now."""

    pid: int
    used_mib: int
    name: Optional[str] = None
    owner: Optional[str] = None
    state: Optional[str] = None  # shown when not "running"
    gpu_index: Optional[int] = None


class TorchArch(NamedTuple):
    """The torch of the user's Python against the GPUs here (the ``arch`` kind; torch is never imported)."""

    python: Optional[str]
    installed: bool
    version: Optional[str] = None
    cuda: bool = False  # a CUDA build
    arch_list: Tuple[str, ...] = ()  # from cudaenv's tables (empty: no row for it)
    findings: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()  # the doctor's gpu-arch findings: (title, fix)
    every_gpu_known: bool = False  # each visible GPU's compute capability is known


class MachineContext(NamedTuple):
    """What this machine says about a pasted error, as data (the kinds asked for only)."""

    kinds: FrozenSet[str]
    nvcc: Optional[NvccContext] = None  # the ``nvcc`` kind
    no_gpu: Optional[str] = None  # the GPU kinds on a machine without one: "no-smi" | "none"
    gpu_count: int = 0  # every GPU of the machine
    visible: Tuple[Gpu, ...] = ()  # what CUDA numbers cuda:0, cuda:1, ... (the first 16)
    visible_count: int = 0  # all of them
    visible_setting: Optional[str] = None  # CUDA_VISIBLE_DEVICES as set (None: unset)
    missing: Tuple[int, ...] = ()  # the error's cuda:N that do not exist here
    torch: Optional[TorchArch] = None  # the ``arch`` kind
    holders: Tuple[Holder, ...] = ()  # the ``memory`` kind: the 10 biggest
    holder_count: int = 0


def machine_context(host, text: str, match_ids: Sequence[str], python: Optional[str] = None,
                    values: Optional[Mapping[str, Mapping[str, str]]] = None) -> Optional[MachineContext]:
    """What this machine says that sharpens the error (None when its kind needs nothing). ``values``: each match's
    values by id (the ``nvcc`` kind needs the architecture nvcc refused)."""
    kinds = wanted(text, match_ids)
    if not kinds:
        return None
    nvcc = (values or {}).get("nvcc-arch-unsupported") or {}
    return context_of(gather(host, kinds, python), kinds, mentioned_devices(text), nvcc.get("arch"))


def context_of(s: Snapshot, kinds: FrozenSet[str], devices: Sequence[int] = (), arch: Optional[str] = None) -> MachineContext:
    """The context for ``kinds`` from a (partial) Snapshot of this machine (pure). ``arch``: the architecture nvcc
    refused (``compute_89``), for the ``nvcc`` kind."""
    from cudaenv.pasted.nvcc_context import nvcc_context

    out = MachineContext(frozenset(kinds), nvcc=nvcc_context(s, arch) if "nvcc" in kinds else None)
    if not kinds & GPU_KINDS:
        return out
    if not s.gpus:
        smi = next((t for t in s.tools if t.tool == "nvidia-smi"), None)
        return out._replace(no_gpu="no-smi" if smi is not None and smi.status == "missing" else "none")
    from cudaenv.model.visible import visible_gpus

    seen = visible_gpus(s)
    out = out._replace(gpu_count=len(s.gpus), visible=tuple(_gpu(g) for g in seen[:16]), visible_count=len(seen),
                       visible_setting=s.visible_devices.cuda_visible_devices,
                       missing=tuple(d for d in devices if d >= len(seen)))
    if "arch" in kinds:
        out = out._replace(torch=_torch(s, seen))
    if "memory" in kinds:
        holders = sorted((p for p in s.processes if p.used_memory_mib), key=lambda p: -(p.used_memory_mib or 0))
        out = out._replace(holders=tuple(Holder(p.pid, p.used_memory_mib, p.name, p.owner, p.state, p.gpu_index)
                                         for p in holders[:10]), holder_count=len(holders))
    return out


def _gpu(g) -> Gpu:
    from cudaenv.core.version import sm_name

    cc = g.compute_capability or None
    return Gpu(g.index, g.name, g.pci_bus_id, cc, sm_name(cc) if cc else None, g.memory_used_mib, g.memory_total_mib)


def _torch(s: Snapshot, seen: Sequence[Any]) -> TorchArch:
    from cudaenv.diagnose.versions import gpu_arch, static_arch_list

    t = s.torch
    if t is None or not t.installed:
        return TorchArch(t.python if t is not None else None, False)
    if not t.cuda:
        return TorchArch(t.python, True, t.version)
    found = tuple((f.title, tuple(f.fix)) for f in gpu_arch(s, None))
    return TorchArch(t.python, True, t.version, True, tuple(static_arch_list(s) or ()), found,
                     all(g.compute_capability for g in seen))
