"""``nvcc fatal : Unsupported gpu architecture 'compute_89'`` against this machine's toolkits (pure).

Which toolkits here compile for that architecture (:func:`cudaenv.explain_checks.nvcc_compiles_for`: the first CUDA
that knows it, ``data/cuda_arch.json``, and the oldest one each CUDA still builds for, ``data/toolkit_install.json``)
and which toolkit each way of picking nvcc gives:

* ``CUDA_HOME`` (else ``CUDA_PATH``): what torch.utils.cpp_extension (``setup.py``, ``pip install`` of an extension,
  a JIT build) uses, before anything else;
* the nvcc on ``PATH``: what a plain ``nvcc``, ``make`` and CMake use, and cpp_extension when ``CUDA_HOME`` is unset;
* ``/usr/local/cuda``: cpp_extension's last guess.

When a toolkit here does compile for it, the nvcc that failed was another one: the one a variable above picks,
or, when those compile for it too, one of another environment (a conda env, ``sudo``, a container, a CMake cache).
"""

from typing import List, Optional

from cudaenv.snapshot import Snapshot

MAX_LISTED = 8  # toolkits named


def _label(version: Optional[str], path: str) -> str:
    from cudaenv.version import major_minor

    return "CUDA %s (%s)" % (major_minor(version) or version, path) if version else "a toolkit of unknown version (%s)" % path


def nvcc_lines(s: Snapshot, arch: Optional[str]) -> List[str]:
    """The sentences for the ``nvcc`` kind of :mod:`cudaenv.pasted.context`, from the toolkit part of a Snapshot."""
    from cudaenv.diagnose import _common as c
    from cudaenv.explain_checks import first_cuda_for, nvcc_compiles_for
    from cudaenv.version import cc_tuple, split_arch

    cc = cc_tuple(arch) if arch and split_arch(arch) else None
    first = first_cuda_for(cc) if cc else None
    if cc is None or first is None:
        return []
    toolkits = c.distinct_toolkits(s, lambda t: True)[:MAX_LISTED]
    if not toolkits:
        return ["cudaenv found no CUDA toolkit on this machine: the nvcc that failed ran in another environment "
                "(a conda env, a container) or is not where cudaenv looks (cudaenv list; CUDAENV_TOOLKITS)."]

    def can(version: Optional[str]) -> Optional[bool]:
        return nvcc_compiles_for(version, cc)

    def verdict(version: Optional[str]) -> str:
        ok = can(version)
        return "compiles for %s" % arch if ok else "cannot compile for %s" % arch if ok is False else "not known"

    out = ["Toolkits here: %s." % "; ".join("%s: %s" % (_label(t.version, t.path), verdict(t.version)) for t in toolkits)]
    picks = []  # (the variable or place, how it picks nvcc, the toolkit there or None)
    env = s.env_map
    home = "CUDA_HOME" if env.get("CUDA_HOME") else "CUDA_PATH" if env.get("CUDA_PATH") else None
    if home is not None:
        tk = c.toolkit_at(s, env[home])
        picks.append((home, "%s=%s, which torch.utils.cpp_extension uses" % (home, env[home]), tk))
    a = s.active_toolkit
    nvcc = a.nvcc_on_path[0] if a is not None and a.nvcc_on_path else (a.nvcc if a is not None and a.via == "PATH" else None)
    if nvcc:
        tk = c.toolkit_at(s, c.toolkit_root_of_nvcc(a.nvcc or nvcc))
        picks.append(("PATH", "the nvcc on PATH (%s), which make, CMake and a plain nvcc use%s" % (
            nvcc, "" if home else ", and torch.utils.cpp_extension too"), tk))
    link = s.cuda_symlink
    if home is None and not nvcc and link is not None and link.resolved:
        picks.append(("/usr/local/cuda", "/usr/local/cuda, torch.utils.cpp_extension's guess when neither CUDA_HOME "
                      "nor an nvcc on PATH is there", c.toolkit_at(s, link.path)))
    for _, how, tk in picks:
        out.append("%s: %s." % (how[0].upper() + how[1:], "%s, which %s" % (_label(tk.version, tk.path), verdict(tk.version))
                                if tk is not None else "no toolkit cudaenv knows"))
    fits = [t for t in toolkits if can(t.version)]
    if not fits:
        newest = next((t for t in toolkits if t.version), None)
        out.append("No toolkit here compiles for %s (%s needs CUDA %s or newer%s)." % (
            arch, arch, first[0], "; the newest here is %s" % _label(newest.version, newest.path) if newest else ""))
        return out
    picked = [tk for _, _, tk in picks if tk is not None]
    if picked and all(can(tk.version) for tk in picked):
        out.append("The toolkit this environment picks compiles for %s, so the nvcc that failed was another one: a "
                   "build run with another PATH or CUDA_HOME (a conda env, sudo, a container, a CMake cache's "
                   "CMAKE_CUDA_COMPILER)." % arch)
    else:
        best = next((tk for tk in picked if can(tk.version)), fits[0])
        by: dict = {}  # the toolkit a wrong pick gives -> the variables or places that pick it
        for where, _, tk in picks:
            if tk is None or not can(tk.version):
                by.setdefault(_label(tk.version, tk.path) if tk is not None else "no toolkit", []).append(where)
        wrong = ["%s through %s" % (label, " and ".join(wheres)) for label, wheres in by.items()]
        out.append("%s compiles for %s, but %s: another nvcc than that one ran. Point the build at it: cudaenv use %s "
                   "(sets CUDA_HOME and PATH in this shell), then build again." % (
                       _label(best.version, best.path), arch,
                       "the build picks %s" % " and ".join(wrong) if wrong else "nothing here picks it",
                       c.short(best.version)))
    return out
