"""Which toolkit release a spec names and which wheels make it: pure, no I/O.

* :func:`choose_release` -- ``13`` / ``13.0`` / ``13.0.2`` against the ``cuda-toolkit`` releases on the index, matched
  by the toolkit-spec selector (:func:`cudaenv.toolkit.select.match_toolkits`), the newest match wins.
* :func:`component_pins` -- the pins of the meta-package's extras (``nvcc``, ``cudart``, ``cccl``, ``crt``, ``nvvm``)
  read from its ``Requires-Dist``: the component versions do not share one number (13.0.2 = nvcc 13.0.88,
  runtime 13.0.96, cccl 13.0.85), so they are never guessed from a version pattern.
* :func:`plan_components` -- pip's dry-run report checked against those pins: each component's exact version,
  file and sha256.
* :func:`no_wheel_answer` -- 12.x and older: no pip build of nvcc exists (``nvidia-cuda-nvcc-cu12`` holds only ptxas,
  libnvvm and headers; NVIDIA/cuda-python#2100); the ways that do work.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from cudaenv.model.record import Record
from cudaenv.parse.pip_output import ReportItem
from cudaenv.core.version import parse_version, version_key
from cudaenv.core.i18n import M

META = "cuda-toolkit"
EXTRAS = ("nvcc", "cudart", "cccl", "crt", "nvvm")  # the five wheels a toolkit that compiles and links needs
FIRST_WHEEL_MAJOR = 13  # the first CUDA whose nvcc wheel holds nvcc (toolkit-wheels facts, cuda-python#2100)


def install_command(release: str, prose: bool = True) -> str:
    """How to get CUDA ``release`` on a machine that lacks it: ``cudaenv install`` from NVIDIA's wheels for 13.x,
    the runfile or the distribution's repository (``--plan``) before. ``prose``: with the runfile alternative."""
    if version_key(release)[:1] >= (FIRST_WHEEL_MAJOR,):
        return "cudaenv install %s" % release
    if prose:
        return M("cudaenv install %s --plan, or --runfile FILE", release)
    return "cudaenv install %s --plan" % release


class PlanError(Exception):
    """The spec names no installable release, or the index's answer does not make one. ``hint``: what to do."""

    def __init__(self, message: str, hint: Optional[str] = None):
        super().__init__(message)
        self.message, self.hint = message, hint


class Component(Record):
    """One wheel of an install: the project, its pin from the meta-package, the version and file pip picked."""

    name: str
    pin: str  # the specifier of the meta-package's Requires-Dist: "==13.0.88.*"
    version: str
    filename: str
    sha256: Optional[str] = None
    extra: Optional[str] = None


class InstallPlan(Record):
    """What ``cudaenv install`` fetches for one release."""

    release: str  # the cuda-toolkit release: "13.0.2"
    components: Tuple[Component, ...] = ()


class _Release:
    """A release as the toolkit selector sees a toolkit (a version, no folder)."""

    __slots__ = ("version", "path", "is_link_target")

    def __init__(self, version: str):
        self.version, self.path, self.is_link_target = version, "", False


def needs_runfile(version: str) -> bool:
    """True for CUDA releases whose nvcc no wheel ships (12.x and older)."""
    key = version_key(version)
    return bool(key) and key[0] < FIRST_WHEEL_MAJOR


def requirement(spec: str, extras: Sequence[str] = EXTRAS) -> str:
    """The pip requirement of the meta-package for a spec: ``cuda-toolkit[nvcc,...]==13.0.2``."""
    return "%s[%s]==%s" % (META, ",".join(extras), spec)


class Extras(Record):
    """What ``--components`` adds: more extras of the meta-package (pinned by it) and projects taken at their newest."""

    extras: Tuple[str, ...] = ()  # "cublas", "nvtx": extras of cuda-toolkit
    unpinned: Tuple[str, ...] = ()  # "nvidia-cudnn-cu13": not in the meta-package; pip picks the newest


def component_names(added: Optional[Extras]) -> Tuple[str, ...]:
    """The ``--components`` names ``added`` stands for (``cudnn`` for the unpinned cuDNN project)."""
    if added is None:
        return ()
    return tuple(added.extras) + (("cudnn",) if added.unpinned else ())


def parse_components(text: Optional[str], release: str, table=None) -> Extras:
    """``--components cublas,nvtx,cudnn`` -> :class:`Extras` for ``release`` (the names of data/toolkit_install.json's
    components row, and ``cudnn``); an unknown name is a :class:`PlanError` that lists the known ones."""
    from cudaenv.toolkit.install.repos import row

    known = tuple(row("components", table)["extras"])
    names = [n.strip().lower() for n in (text or "").split(",") if n.strip()]
    bad = [n for n in names if n not in known and n != "cudnn"]
    if bad:
        raise PlanError(M("unknown component %s", ", ".join(repr(n[:40]) for n in bad[:5])),
                        hint=M("--components takes %s, cudnn", ",".join(known)))
    extras = tuple(n for n in known if n in names)  # the table's order, each once
    unpinned = ()
    if "cudnn" in names:
        unpinned = (row("cudnn", table)["project"].format(major=version_key(release)[0]),)
    return Extras(extras, unpinned)


def choose_release(spec: str, releases: Sequence[str]) -> str:
    """The newest release of ``releases`` that ``spec`` names (``13`` -> the newest 13.x); :class:`PlanError` if none."""
    from cudaenv.toolkit.select import SelectError, match_toolkits

    spec = (spec or "").strip()
    if parse_version(spec) is None:
        raise PlanError(M("%r is not a CUDA version", spec[:40]), hint=M("give 13, 13.0 or 13.0.2"))
    try:
        hits = match_toolkits([_Release(v) for v in releases if parse_version(v)], spec)
    except SelectError as exc:
        raise PlanError(exc.message) from None
    if not hits:
        newest = sorted({v for v in releases if parse_version(v)}, key=version_key)[-3:]
        raise PlanError(M("the package index has no cuda-toolkit release %s", spec),
                        hint=M("newest there: %s (`cudaenv install --list`)", ", ".join(reversed(newest)) or "none"))
    return max((h.version for h in hits), key=version_key)


def component_pins(requires_dist: Sequence[str], extras: Sequence[str] = EXTRAS) -> Dict[str, Tuple[str, str]]:
    """project -> (specifier, extra) for each of ``extras``, from the meta-package's ``Requires-Dist`` lines.

    Only Linux rows count (the markers are evaluated for Linux with each extra). An extra with no row is a
    :class:`PlanError` (12.x metas have no ``crt`` or ``nvvm`` extra)."""
    from packaging.markers import default_environment
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    base = dict(default_environment())
    base.update(sys_platform="linux", platform_system="Linux", os_name="posix")
    pins: Dict[str, Tuple[str, str]] = {}
    for extra in extras:
        found = False
        for line in requires_dist:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is None or "extra" not in str(req.marker):
                continue
            env = dict(base, extra=extra)
            try:
                if not req.marker.evaluate(env):
                    continue
            except Exception:  # noqa: BLE001 - an undefined marker variable: not a row for us
                continue
            name = canonicalize_name(req.name)
            if name not in pins or _named_for(name, extra):
                pins[name] = (str(req.specifier), extra)  # the extra named after the project wins (nvcc pulls nvvm too)
            found = True
        if not found:
            raise PlanError(M("the cuda-toolkit metadata has no %r component for Linux", extra))
    return pins


def _named_for(project: str, extra: str) -> bool:
    return project.rsplit("-", 1)[-1] in (extra, {"cudart": "runtime"}.get(extra, extra))


def plan_components(spec: str, report: Sequence[ReportItem], added: Optional[Extras] = None) -> InstallPlan:
    """pip's dry-run report of :func:`requirement` -> the release and its components, each checked against its pin.

    ``added``: the ``--components`` extras (pinned by the meta-package like the core five) and the unpinned
    projects (cuDNN), whose version is the one pip picked (the newest for that CUDA major)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import canonicalize_name

    meta = [item for item in report if canonicalize_name(item.name) == META]
    if len(meta) != 1:
        raise PlanError(M("pip's report holds no %s release for %s", META, spec))
    release = parse_version(meta[0].version)
    if release is None:
        raise PlanError(M("pip picked %s %r, which is not a plain release", META, meta[0].version[:40]))
    extras = EXTRAS + (added.extras if added else ())
    pins = component_pins(meta[0].requires_dist, extras)
    for project in (added.unpinned if added else ()):
        pins[canonicalize_name(project)] = ("", "")
    by_name = {canonicalize_name(item.name): item for item in report}
    components = []
    order = extras + ("",)
    for name, (pin, extra) in sorted(pins.items(), key=lambda kv: order.index(kv[1][1])):
        item = by_name.get(name)
        if item is None:
            raise PlanError(M("pip's report holds no %s (pinned %s by %s %s)", name, pin, META, release))
        try:
            fits = SpecifierSet(pin).contains(item.version, prereleases=True) if pin else parse_version(item.version) is not None
        except InvalidSpecifier:
            fits = False
        if not fits:
            raise PlanError(M("pip picked %s %s, but %s %s pins %s", name, item.version, META, release, pin))
        if not item.filename.endswith(".whl"):
            raise PlanError(M("pip would build %s from %s, not install a wheel", name, item.filename[:80]))
        if item.sha256 is None:
            raise PlanError(M("the index gave no sha256 for %s", item.filename[:80]),
                            hint=M("cudaenv installs only files whose hash it can check"))
        components.append(Component(name, pin, item.version, item.filename, item.sha256, extra or None))
    return InstallPlan(release, tuple(components))


def no_wheel_answer(version: str) -> Tuple[str, Tuple[str, ...]]:
    """(the plain answer, the alternatives in order) for a release no wheel can install."""
    mm = ".".join(str(x) for x in version_key(version)[:2])
    text = M("CUDA %s cannot be installed from wheels: no pip build of nvcc exists for CUDA 12.x and older "
             "(the nvidia-cuda-nvcc-cu12 wheels hold only ptxas, libnvvm and headers; NVIDIA/cuda-python#2100).", version)
    alternatives = (
        M("cudaenv install %s --runfile FILE   (NVIDIA's runfile you downloaded: toolkit only, no root, no driver)", version),
        M("cudaenv install %s --plan           (the repository commands for this distribution, system-wide, toolkit only)", version),
        M("conda install -c nvidia cuda-toolkit=%s   (in a conda environment)", mm),
        M("cudaenv install 13   (CUDA 13 installs from wheels; it needs driver >= 580 and builds for sm_75 and newer)"),
    )
    return text, alternatives


class InstallReport(Record):
    """``cudaenv install --json``: what was done (``status``), where, and from which wheels."""

    _json_envelope = True

    ok: bool
    status: str  # installed | already-installed | no-wheels | planned | refused (a machine check; --force) | failed
    spec: str
    release: Optional[str] = None
    path: Optional[str] = None
    method: str = "cudaenv"
    installer: Optional[str] = None  # pip | uv | runfile
    components: Tuple[Component, ...] = ()
    download_bytes: int = 0
    files: int = 0
    seconds: Optional[float] = None
    commands: Tuple[str, ...] = ()  # --plan: the commands to run (never run by cudaenv)
    warnings: Tuple[str, ...] = ()
    message: Optional[str] = None
    source: Optional[str] = None  # --plan: the guide the commands come from
    forced: bool = False  # --force: installed although the machine checks warned (the warnings are still here)
    hint: Optional[str] = None
