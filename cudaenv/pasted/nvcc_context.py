"""``nvcc fatal : Unsupported gpu architecture 'compute_89'`` against this machine's toolkits (pure).

Which toolkits here compile for that architecture (:func:`cudaenv.toolkit.install.precheck.nvcc_compiles_for`: the first CUDA
that knows it, ``data/cuda_arch.json``, and the oldest one each CUDA still builds for, ``data/toolkit_install.json``)
and which toolkit each way of picking nvcc gives:

* ``CUDA_HOME`` (else ``CUDA_PATH``): what torch.utils.cpp_extension (``setup.py``, ``pip install`` of an extension,
  a JIT build) uses, before anything else;
* the nvcc on ``PATH``: what a plain ``nvcc``, ``make`` and CMake use, and cpp_extension when ``CUDA_HOME`` is unset;
* ``/usr/local/cuda``: cpp_extension's last guess.

When a toolkit here does compile for it, the nvcc that failed was another one: the one a variable above picks,
or, when those compile for it too, one of another environment (a conda env, ``sudo``, a container, a CMake cache).

:func:`nvcc_context` gives this as data (:class:`NvccContext`); the sentences are
:func:`cudaenv.render.pasted_context.nvcc_lines`.
"""

from typing import Dict, List, NamedTuple, Optional, Tuple

from cudaenv.model.snapshot import Snapshot

MAX_LISTED = 8  # toolkits named


class NvccToolkit(NamedTuple):
    version: Optional[str]  # None: a toolkit of unknown version
    path: str
    compiles: Optional[bool]  # for the refused architecture (None: not known)


class NvccPick(NamedTuple):
    """One way of picking nvcc and the toolkit it gives (None: no toolkit cudaenv knows)."""

    where: str  # CUDA_HOME | CUDA_PATH | PATH | /usr/local/cuda
    value: str  # the variable's value, the nvcc found on PATH, or the link's path
    toolkit: Optional[NvccToolkit]


class NvccContext(NamedTuple):
    """What this machine's toolkits say about ``nvcc fatal : Unsupported gpu architecture``. ``verdict``: ``none``
    (no toolkit here), ``none-compiles`` (``newest``: the newest here), ``elsewhere`` (what this environment picks
    compiles for it), ``repoint`` (``best`` does, ``wrong``: the toolkits the picks give instead, each with the
    picks that give it; ``use``: the spec of ``cudaenv use``)."""

    arch: str  # as nvcc refused it: compute_89
    first_cuda: str  # the first CUDA that compiles for it
    verdict: str
    toolkits: Tuple[NvccToolkit, ...] = ()
    picks: Tuple[NvccPick, ...] = ()
    newest: Optional[NvccToolkit] = None
    best: Optional[NvccToolkit] = None
    wrong: Tuple[Tuple[Optional[NvccToolkit], Tuple[str, ...]], ...] = ()
    use: Optional[str] = None
    cuda_range: Optional[str] = None  # the CUDA releases whose nvcc compiles for it: "8.0 to 12.9", "12.8 or newer"


def nvcc_context(s: Snapshot, arch: Optional[str]) -> Optional[NvccContext]:
    """The ``nvcc`` kind of :mod:`cudaenv.pasted.context`, from the toolkit part of a Snapshot (None when ``arch`` is
    no architecture cudaenv's tables know)."""
    from cudaenv.diagnose import _common as c
    from cudaenv.explain.checks import first_cuda_for, nvcc_arch
    from cudaenv.toolkit.install.precheck import nvcc_compiles_for
    from cudaenv.core.version import cc_tuple, split_arch

    cc = cc_tuple(arch) if arch and split_arch(arch) else None
    first = first_cuda_for(cc) if cc else None
    if cc is None or first is None or arch is None:
        return None

    def record(tk) -> Optional[NvccToolkit]:
        return NvccToolkit(tk.version, tk.path, nvcc_compiles_for(tk.version, cc)) if tk is not None else None

    toolkits = tuple(record(t) for t in c.distinct_toolkits(s, lambda t: True)[:MAX_LISTED])
    cuda_range = nvcc_arch({"arch": arch}, "").get("cuda_range")
    if not toolkits:
        return NvccContext(arch, first[0], "none", cuda_range=cuda_range)
    picks: List[NvccPick] = []
    env = s.env_map
    home = "CUDA_HOME" if env.get("CUDA_HOME") else "CUDA_PATH" if env.get("CUDA_PATH") else None
    if home is not None:
        picks.append(NvccPick(home, env[home], record(c.toolkit_at(s, env[home]))))
    a = s.active_toolkit
    nvcc = a.nvcc_on_path[0] if a is not None and a.nvcc_on_path else (a.nvcc if a is not None and a.via == "PATH" else None)
    if nvcc:
        picks.append(NvccPick("PATH", nvcc, record(c.toolkit_at(s, c.toolkit_root_of_nvcc(a.nvcc or nvcc)))))
    link = s.cuda_symlink
    if home is None and not nvcc and link is not None and link.resolved:
        picks.append(NvccPick("/usr/local/cuda", link.path, record(c.toolkit_at(s, link.path))))
    out = NvccContext(arch, first[0], "", toolkits, tuple(picks), cuda_range=cuda_range)
    fits = [t for t in toolkits if t.compiles]
    if not fits:
        return out._replace(verdict="none-compiles", newest=next((t for t in toolkits if t.version), None))
    picked = [p.toolkit for p in picks if p.toolkit is not None]
    if picked and all(tk.compiles for tk in picked):
        return out._replace(verdict="elsewhere")
    best = next((tk for tk in picked if tk.compiles), fits[0])
    by: Dict[Optional[Tuple[Optional[str], str]], Tuple[Optional[NvccToolkit], List[str]]] = {}
    for p in picks:  # the toolkit a wrong pick gives -> the variables or places that pick it
        if p.toolkit is None or not p.toolkit.compiles:
            key = (p.toolkit.version, p.toolkit.path) if p.toolkit is not None else None
            by.setdefault(key, (p.toolkit, []))[1].append(p.where)
    wrong = tuple((tk, tuple(wheres)) for tk, wheres in by.values())
    return out._replace(verdict="repoint", best=best, wrong=wrong, use=c.short(best.version))
