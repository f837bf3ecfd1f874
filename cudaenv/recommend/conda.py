"""The conda and pixi forms of the torch decision, and what their solver sees on this machine (pure).

:func:`plan_conda` turns the pip decision (torch X, built for cuXY, for these GPUs) into conda-forge's packages:
``pytorch-gpu==X`` (the metapackage that holds the CUDA build) and ``cuda-version==A.B``, the newest CUDA
conda-forge builds that release for which the driver's own CUDA (conda's ``__cuda``) reaches and every GPU has
kernels; conda installs them with ``conda install --override-channels -c conda-forge``, pixi with ``pixi add`` into
its manifest, whose ``[system-requirements] cuda`` must let the solver take a CUDA build at all. Where conda-forge has
no build for that release (the table ``data/conda_torch.json``), the PyPI wheel: pip into the conda env, and for pixi
the ``[pypi-dependencies]`` entry with the variant's index.

:func:`solver_view` is the machine as the solver sees it: ``__cuda`` (the driver's CUDA, or ``CONDA_OVERRIDE_CUDA``),
``__cuda_arch`` (the lowest compute capability, where the nvidia-virtual-packages plugin is installed), ``__glibc``,
``__linux``, ``__unix``, and the ``[system-requirements] cuda`` a pixi manifest should declare.
"""

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from cudaenv.core.version import version_key
from cudaenv.facts import conda as cf
from cudaenv.facts import drivers as drv
from cudaenv.facts import torch as tf
from cudaenv.recommend.install import quote
from cudaenv.recommend.records import CondaInstall, Request, SolverView, VirtualPackage

PYPI_NOTE = "no-build"


def _mm(version: Optional[str]) -> Tuple[int, ...]:
    return tuple(version_key(version)[:2])


def solver_cuda(req: Request, tables: Optional[Mapping[str, Any]] = None) -> Tuple[Optional[str], str]:
    """(``__cuda`` as conda would compute it, where it came from): ``CONDA_OVERRIDE_CUDA`` when set (empty: none),
    else the driver's own CUDA (probed, or the table's for a ``--driver`` what-if)."""
    if req.cuda_override is not None:
        return (req.cuda_override.strip() or None), "CONDA_OVERRIDE_CUDA"
    if req.driver_cuda:
        return req.driver_cuda, "driver"
    native = drv.native_cuda_for_driver(req.driver, req.driver_system, (tables or {}).get(drv.TABLE)) if req.driver else None
    return native, "driver"


def _lowest_cc(gpus: Sequence[Tuple[str, Optional[str]]]) -> Optional[str]:
    ccs = [cc for _, cc in gpus if cc and version_key(cc)]
    return min(ccs, key=version_key) if ccs else None


def solver_view(req: Request, tables: Optional[Mapping[str, Any]] = None) -> SolverView:
    cuda, source = solver_cuda(req, tables)
    lowest = _lowest_cc(req.gpus)
    packages = [VirtualPackage("__cuda", cuda, source if cuda or source == "CONDA_OVERRIDE_CUDA" else "unknown"),
                VirtualPackage("__cuda_arch", lowest, "GPUs" if lowest else "unknown")]
    if req.system == "linux":
        libc = req.libc.split()[-1] if req.libc and req.libc.split() else None
        kernel = req.kernel.split("-")[0] if req.kernel else None
        packages += [VirtualPackage("__glibc", libc, "libc" if libc else "unknown"),
                     VirtualPackage("__linux", kernel, "kernel" if kernel else "unknown")]
    if req.system in ("linux", "darwin"):
        packages.append(VirtualPackage("__unix", "0", "system"))
    declare = str(version_key(cuda)[0]) if cuda and version_key(cuda) else None
    problem = None
    if req.env_kind == "pixi" and req.env_manifest:
        if not req.env_cuda:
            problem = "manifest-missing-cuda" if req.nvidia else None
        elif cuda and _mm(req.env_cuda) > _mm(cuda):
            problem = "manifest-above-driver"
    native = solver_cuda(Request(driver=req.driver, driver_system=req.driver_system, driver_cuda=req.driver_cuda), tables)[0]
    if problem is None and req.cuda_override and native and _mm(req.cuda_override) > _mm(native):
        problem = "override-above-driver"
    return SolverView(tuple(packages), declare, req.env_manifest if req.env_kind == "pixi" else None,
                      req.env_cuda if req.env_kind == "pixi" else None, problem)


def pick_cuda_version(cuda_versions: Sequence[str], solver: Optional[str], gpus: Sequence[Tuple[str, Optional[str]]],
                      min_cc: Mapping[str, str]) -> Tuple[Optional[str], List[str]]:
    """(the cuda-version to pin, note kinds): the newest build at or below the solver's ``__cuda`` whose GPUs have
    kernels (``min_cc``); else the oldest of the same major, which runs through minor-version compatibility."""
    lowest = _lowest_cc(gpus)
    usable = [c for c in cuda_versions if not (lowest and c in min_cc and version_key(lowest) < version_key(min_cc[c]))]
    notes = [] if len(usable) == len(cuda_versions) else ["arch-too-old"]
    if not solver:
        return (max(usable, key=version_key) if usable else None), notes
    below = [c for c in usable if _mm(c) <= _mm(solver)]
    if below:
        return max(below, key=version_key), notes
    same = [c for c in usable if version_key(c)[:1] == version_key(solver)[:1]]
    if same:
        return min(same, key=version_key), notes + ["minor-compat"]
    return None, notes


def _companions(pkgs: Sequence[str]) -> List[str]:
    return [p.split("==")[0] for p in pkgs if p.split("==")[0] in ("torchvision", "torchaudio")]


def plan_conda(rec: Any, req: Request, tables: Optional[Mapping[str, Any]] = None) -> Optional[CondaInstall]:
    """The conda or pixi install of ``rec`` (a pip Recommendation with a build), or None when there is none."""
    installer = req.installer
    if installer not in ("conda", "pixi") or not rec.variant or not rec.torch_version:
        return None
    table = (tables or {}).get(cf.TABLE)
    chan = cf.channel(table)
    platform = cf.subdir(req.system, req.machine)
    kind = tf.variant_kind(rec.variant)
    row = cf.builds(rec.torch_version, platform, table) if kind == "cuda" else None
    solver, _ = solver_cuda(req, tables)
    asked = tf.variant_cuda(req.variant) if req.variant and kind == "cuda" else None
    limit = min((c for c in (solver, asked) if c), key=version_key, default=None)  # --variant cu126: no newer CUDA
    notes: List[str] = []
    cuda = None
    if row is not None:
        cuda, notes = pick_cuda_version(row["cuda_versions"], limit, req.gpus, row.get("min_cc") or {})
    if kind in ("cuda", "cpu", "default") and (kind != "cuda" or cuda):
        pkg = chan["gpu_package"] if kind == "cuda" else chan["cpu_package"]
        specs = ["%s==%s" % (pkg, rec.torch_version)] + (["%s==%s" % (chan["pin"], cuda)] if cuda else [])
        specs += _companions(rec.packages)
        return _conda_forge(req, chan["name"], tuple(specs), cuda, notes)
    return _pypi(rec, req, notes + [PYPI_NOTE] if kind == "cuda" else notes)


def _line(argv: Sequence[str], system: str) -> Tuple[str, ...]:
    return (" ".join(quote(a, system) for a in argv),)


def _conda_forge(req: Request, channel: str, specs: Tuple[str, ...], cuda: Optional[str], notes: List[str]) -> CondaInstall:
    if req.installer == "conda":
        where = ["--prefix", req.env_prefix] if req.env_kind == "conda" and req.env_prefix else []
        argv = ("conda", "install", "--yes") + tuple(where) + ("--override-channels", "-c", channel) + specs
        return CondaInstall("conda", "conda-forge", channel, specs, cuda, argv, (), tuple(notes), _line(argv, req.system))
    where = ("--manifest-path", req.env_manifest) if req.env_manifest else ()
    argv = ("pixi", "add") + where + specs
    line = _line(argv, req.system)
    snippet: Tuple[str, ...] = ()
    if channel not in req.env_channels and req.env_manifest:
        notes.append("channel-missing")
    if cuda and (not req.env_cuda or _mm(req.env_cuda) > _mm(cuda)):
        notes.append("declare-cuda" if not req.env_cuda else "manifest-above-driver")
        snippet = ("[system-requirements]", 'cuda = "%d"' % version_key(cuda)[0])
        argv = ()  # the solver would refuse (or pick the CPU build) until the manifest says it
    if not req.env_manifest:
        notes.append("no-manifest")
    return CondaInstall("pixi", "conda-forge", channel, specs, cuda, argv, snippet, tuple(notes), line)


def _pypi(rec: Any, req: Request, notes: List[str]) -> CondaInstall:
    """conda: the pip line into the env (the Recommendation's own commands); pixi: the [pypi-dependencies] entries."""
    if req.installer == "conda":
        return CondaInstall("conda", "pypi", None, tuple(rec.packages), None, (), (), tuple(notes), tuple(rec.commands))
    lines = pypi_snippet(rec.packages, rec.index_url, getattr(rec, "index_layout", "simple") == "flat")
    where = ("--manifest-path", req.env_manifest) if req.env_manifest else ()
    return CondaInstall("pixi", "pypi", None, tuple(rec.packages), None, (), tuple(lines), tuple(notes),
                        _line(("pixi", "install") + where, req.system))


def pypi_snippet(packages: Sequence[str], index_url: Optional[str], flat: bool = False) -> Tuple[str, ...]:
    """pixi's manifest lines for PyPI wheels from one index: ``[pypi-dependencies]`` entries naming it (a simple
    index), or a flat listing in ``[pypi-options] find-links`` (a pixi ``index =`` cannot read one)."""
    flat = bool(flat and index_url)
    lines = ["[pypi-options]", 'find-links = [{ url = "%s" }]' % index_url, ""] if flat else []
    lines.append("[pypi-dependencies]")
    for spec in packages:
        name, _, version = spec.partition("==")
        index = (', index = "%s"' % index_url) if index_url and not flat else ""
        lines.append('%s = { version = "==%s"%s }' % (name, version, index))
    return tuple(lines)
