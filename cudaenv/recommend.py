"""Pick the torch wheel index for a machine from all the facts, and say why (pure: no I/O).

The decision reads: the driver's limit (the minimum driver of each CUDA runtime, minor-version
compatibility), EVERY visible GPU's compute capability against the wheel's arch list (exact sm,
same-major binary compatibility, or PTX the driver can JIT), the OS and architecture, the Python
version, the torch version (installed one by default; ``"2.7.1"``, ``"2.7"`` or ``"latest"``) and which
variants that release was published for. Among the variants that fit, the newest wins. No NVIDIA GPU:
``cpu`` (``rocm*``/``xpu`` when the command saw those GPUs; the plain PyPI wheel on macOS).

``recommend(...)`` returns a :class:`Recommendation`; ``render_text``, ``render_requirements`` and
``render_pyproject`` make the text forms.
"""

import shlex
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from cudaenv._record import Record
from cudaenv.facts import drivers as drv
from cudaenv.facts import torch as tf

DEFAULT_BASE = "https://download.pytorch.org/whl"


class Alternative(Record):
    kind: str  # variant | torch | driver | python
    summary: str
    variant: Optional[str] = None
    torch_version: Optional[str] = None
    index_url: Optional[str] = None
    driver: Optional[str] = None



class Candidate(Record):
    variant: str
    problems: Tuple[str, ...] = ()
    driver_only: bool = False  # the only problem is the driver (an upgrade fixes it)
    min_driver: Optional[str] = None

    @property
    def fits(self) -> bool:
        return not self.problems


class Recommendation(Record):
    """``cudaenv torch recommend --json`` (without the working values ``plain_packages`` and ``candidates``)."""

    _json_envelope = True
    _json_omit = ("plain_packages", "candidates")

    variant: Optional[str]  # None when nothing fits
    index_url: Optional[str]  # None for the plain PyPI wheel
    torch_version: Optional[str]
    commands: Tuple[str, ...] = ()
    reasons: Tuple[str, ...] = ()
    alternatives: Tuple[Alternative, ...] = ()
    ok: bool = False  # the variant fits this machine
    packages: Tuple[str, ...] = ()  # "torch==2.7.1", "torchvision==0.22.1"
    plain_packages: Tuple[str, ...] = ()  # without local tags (for pyproject)
    notes: Tuple[str, ...] = ()
    python: Optional[str] = None
    installer: str = "pip"
    candidates: Tuple[Candidate, ...] = ()
    platform: Optional[str] = None  # linux-x86_64 | linux-aarch64 | windows-x86_64 | macos-arm64 | ...


@dataclass
class _Machine:
    system: str
    machine: str
    platform: str
    driver: Optional[str]
    driver_system: str
    gpus: List[Tuple[str, Optional[str]]]  # (label, compute capability)
    nvidia: bool
    python_version: Optional[str]
    accelerator: Optional[str]
    notes: List[str] = field(default_factory=list)
    native_cuda: Optional[str] = None  # the newest CUDA whose PTX this driver can JIT (what nvidia-smi calls "CUDA Version")


# ------------------------------------------------------------------ reading the inputs
def _mm(version: Optional[str]) -> Optional[str]:
    t = drv.version_tuple(version)
    return "%d.%d" % t[:2] if len(t) >= 2 else None


def _visible_gpus(snapshot: Any) -> Tuple[List[Tuple[str, Optional[str]]], bool]:
    """(label, capability) of the GPUs CUDA_VISIBLE_DEVICES leaves visible; and whether it hides every GPU."""
    gpus = list(getattr(snapshot, "gpus", ()) or ())
    vis = getattr(snapshot, "visible_devices", None)
    if gpus and vis is not None and vis.cuda_visible_devices is not None:
        physical = {m.physical for m in vis.mapping}
        hidden_all = not physical
        gpus = [g for g in gpus if g.index in physical]
        if hidden_all:
            return [], True
    if not gpus:
        torch = getattr(snapshot, "torch", None)
        devices = list(getattr(torch, "devices", ()) or ()) if torch else []
        return [(d.name or "cuda:%d" % i, d.capability) for i, d in enumerate(devices)], False
    return [(g.name or "GPU %d" % g.index, g.compute_capability) for g in gpus], False


def _machine(snapshot: Any, driver: Optional[str], ccs: Optional[Sequence[str]], system: Optional[str],
             machine: Optional[str], python_version: Optional[str], accelerator: Optional[str]) -> _Machine:
    platform = getattr(snapshot, "platform", None)
    sys_name = (system or getattr(platform, "system", None) or "linux").lower()
    if sys_name.startswith("win"):
        sys_name = "windows"
    elif sys_name in ("mac", "macos", "osx"):
        sys_name = "darwin"
    mach = machine or getattr(platform, "machine", None) or "x86_64"
    snap_driver = getattr(snapshot, "driver", None)
    drv_version = driver or getattr(snap_driver, "version", None)
    wsl = getattr(platform, "wsl", None) == 2 or bool(getattr(snap_driver, "wsl_windows_side", False))
    driver_system = "windows" if (sys_name == "windows" or (wsl and system is None)) else "linux"
    notes: List[str] = []
    if ccs:
        gpus = [("compute capability %s" % cc, cc) for cc in ccs]
        hidden = False
    else:
        gpus, hidden = _visible_gpus(snapshot)
    if hidden:
        notes.append("CUDA_VISIBLE_DEVICES hides every GPU: planning for no visible GPU")
    nvidia = bool(gpus) or (drv_version is not None and not hidden)
    torch = getattr(snapshot, "torch", None)
    py = _mm(python_version or getattr(torch, "python_version", None))
    if python_version and python_version.rstrip().endswith("t") and py:
        py += "t"
    native = drv.native_cuda_for_driver(drv_version, driver_system) if drv_version else None
    return _Machine(sys_name, mach, tf.platform_key(sys_name, mach), drv_version, driver_system, gpus, nvidia, py, accelerator, notes, native)


# ------------------------------------------------------------------ facts with the live data folded in
class _Facts:
    def __init__(self, index_data: Any = None):
        self.index = index_data

    def known_versions(self) -> Tuple[str, ...]:
        seen = set(tf.known_torch_versions())
        if self.index is not None:
            seen.update(self.index.torch_versions())
        return tuple(sorted(seen, key=drv.version_tuple))

    def variants(self, version: str, m: _Machine) -> Tuple[str, ...]:
        if self.index is not None:
            live = self.index.variants_for(version, m.platform)
            if live:
                return live
        return tf.variants_for(version, m.system, m.machine)

    def python_ok(self, version: str, variant: str, m: _Machine) -> Optional[bool]:
        if not m.python_version:
            return None
        if self.index is not None:
            pys = self.index.pythons_for(version, m.platform, variant)
            if pys:
                return m.python_version in pys or "any" in pys
        pys = tf.pythons_for(version)
        return (m.python_version in pys) if pys else None

    def arch(self, version: str, variant: str, m: _Machine) -> Tuple[Optional[Tuple[str, ...]], Optional[str], Optional[str]]:
        """(archs, ptx, note); a variant the table does not know borrows the newest known CUDA row, with a note."""
        found = tf.arch_list_for(version, variant, m.system, m.machine)
        if found:
            return found[0], found[1], None
        row = tf.newest_arch_row("cuda", m.system, m.machine, variant=variant) or tf.newest_arch_row("cuda", m.system, m.machine)
        if row is None:
            return None, None, "the arch list of torch %s %s is not known" % (version, variant)
        return (tuple(row["archs"]), row.get("ptx"),
                "the arch list of torch %s %s is not in the bundled table; assumed like %s (torch %s)" % (version, variant, row["variant"], row["to"]))


# ------------------------------------------------------------------ judging one variant
def _judge(version: str, variant: str, m: _Machine, facts: _Facts) -> Tuple[Candidate, List[str]]:
    problems: List[str] = []
    notes: List[str] = []
    driver_problem = False
    min_driver = None
    py_ok = facts.python_ok(version, variant, m)
    if py_ok is False:
        problems.append("no torch %s %s wheel for Python %s" % (version, variant, m.python_version))
    cuda = tf.variant_cuda(variant)
    if cuda:
        min_driver = drv.min_driver_for_cuda(cuda, m.driver_system)
        if m.driver and min_driver and drv.compare_versions(m.driver, min_driver) < 0:
            problems.append("needs driver >= %s (this one is %s)" % (min_driver, m.driver))
            driver_problem = True
        ptx_jit_ok = m.driver is None or (m.native_cuda is not None and drv.compare_versions(m.native_cuda, cuda) >= 0)
        archs, ptx, note = facts.arch(version, variant, m)
        if note:
            notes.append(note)
        if archs is not None:
            for label, cc in m.gpus:
                if not cc:
                    continue
                if tf.gpu_runs(tf.arch_list_of(archs, ptx), cc, ptx_jit_ok) is None:
                    problems.append("%s (%s) has no kernels in torch %s %s (%s)" % (label, tf.sm_name(cc), version, variant, _describe_archs(archs, ptx)))
    only_driver = driver_problem and len(problems) == 1
    return Candidate(variant, tuple(problems), only_driver, min_driver), notes


def _describe_archs(archs: Sequence[str], ptx: Optional[str]) -> str:
    names = [tf.sm_name(a) for a in sorted(archs, key=tf.cc_tuple)]
    text = "built for %s" % ", ".join(names) if len(names) <= 3 else "built for %s ... %s" % (names[0], names[-1])
    return text + (", PTX %s" % tf.sm_name(ptx).replace("sm_", "compute_") if ptx else ", no PTX")


def _kind_wanted(m: _Machine) -> str:
    if m.platform.startswith("macos"):
        return "default"
    if m.nvidia:
        return "cuda"
    if m.accelerator in ("rocm", "xpu") and not (m.accelerator == "rocm" and m.platform != "linux-x86_64"):
        return m.accelerator
    return "cpu"


def _evaluate(version: str, m: _Machine, facts: _Facts, kind: str) -> Tuple[List[Candidate], List[str]]:
    notes: List[str] = []
    out = []
    for variant in facts.variants(version, m):
        if tf.variant_kind(variant) != kind:
            continue
        cand, n = _judge(version, variant, m, facts)
        out.append(cand)
        notes.extend(x for x in n if x not in notes)
    return out, notes


def _best(cands: Sequence[Candidate]) -> Optional[Candidate]:
    fitting = [c for c in cands if c.fits]
    return max(fitting, key=lambda c: tf.variant_sort_key(c.variant)) if fitting else None


# ------------------------------------------------------------------ the decision
def recommend(
    snapshot: Any = None,
    torch_version: Optional[str] = None,
    driver: Optional[str] = None,
    compute_capabilities: Optional[Sequence[str]] = None,
    system: Optional[str] = None,
    python_version: Optional[str] = None,
    index_base: Optional[str] = None,
    index_data: Any = None,
    machine: Optional[str] = None,
    variant: Optional[str] = None,
    companions: Optional[Mapping[str, str]] = None,
    accelerator: Optional[str] = None,
    installer: Optional[str] = None,
    python: Optional[str] = None,
) -> Recommendation:
    """The variant, index URL and install commands for this machine (see the module docstring)."""
    base = (index_base or DEFAULT_BASE).rstrip("/")
    m = _machine(snapshot, driver, compute_capabilities, system, machine, python_version, accelerator)
    facts = _Facts(index_data)
    torch = getattr(snapshot, "torch", None)
    installed = tf.public_version(getattr(torch, "version", None)) if getattr(torch, "installed", False) else None
    installed_local = tf.local_tag(getattr(torch, "version", None)) if installed else None
    installer = installer or getattr(torch, "installer", None) or "pip"
    python = python or getattr(torch, "python", None)
    kind = _kind_wanted(m)
    reasons: List[str] = []
    notes: List[str] = list(m.notes)
    known = facts.known_versions()

    # which torch
    explicit = torch_version not in (None, "", "installed")
    if torch_version == "latest":
        target = _latest(facts, m)
        reasons.append("latest torch known: %s" % target)
    elif explicit:
        target = tf.resolve_torch_version(torch_version, known) or tf.resolve_torch_version(
            torch_version, tf.known_torch_versions(include_unreleased=True)
        )
        if target is None:
            return Recommendation(None, None, tf.public_version(torch_version), (), (
                "torch %s is not in the bundled table (it knows %s to %s)" % (torch_version, known[0], known[-1]),
                "run `cudaenv torch refresh` to learn newer releases from the index"), notes=tuple(notes), python=python, installer=installer)
        if not tf.is_released(target) and (index_data is None or target not in index_data.torch_versions()):
            notes.append("torch %s is not confirmed released; its table rows are unconfirmed" % target)
    elif installed and installed in known:
        target = installed
        reasons.append("torch %s is installed in %s" % (getattr(torch, "version", installed), python or "the probed Python"))
    else:
        if installed:
            notes.append("the installed torch %s is not in the bundled table; planning for the newest release" % installed)
        target = _newest_fitting(facts, m, kind, known) or _latest(facts, m)
        reasons.append("no torch version asked for: the newest release that fits is %s" % target)

    reasons.extend(_machine_reasons(m, kind))
    cands, eval_notes = _evaluate(target, m, facts, kind)
    notes.extend(n for n in eval_notes if n not in notes)
    published = [c.variant for c in cands]
    all_published = facts.variants(target, m)
    if m.python_version:
        pys = tf.pythons_for(target)
        reasons.append("Python %s%s" % (m.python_version, " (torch %s has wheels for %s)" % (target, ", ".join(pys)) if pys else ""))
    if published:
        reasons.append("torch %s exists for %s" % (target, ", ".join(published)))

    chosen: Optional[Candidate]
    if variant:
        chosen, extra = _requested(variant, target, m, facts, cands, all_published)
        reasons.extend(extra)
    elif kind == "default":
        chosen = Candidate("default") if "default" in all_published else None
        if chosen is None:
            reasons.append("no torch %s wheels for %s" % (target, m.platform))
    else:
        chosen = _best(cands)
        for c in cands:
            for p in c.problems:
                reasons.append("%s: %s" % (c.variant, p))
        if chosen is None and not cands:
            reasons.append("torch %s has no %s wheels for %s" % (target, kind, m.platform))

    alternatives = _alternatives(target, m, facts, kind, cands, chosen, base, known, variant)
    if chosen is None:
        return Recommendation(None, None, target, (), tuple(reasons), tuple(alternatives), False, notes=tuple(notes),
                              python=python, installer=installer, candidates=tuple(cands), platform=m.platform)
    if not variant:
        reasons.append("-> %s" % chosen.variant if kind != "default" else "-> the plain PyPI wheel (macOS has no CUDA builds)")
    index_url = None if chosen.variant == "default" else "%s/%s" % (base, chosen.variant)
    pkgs, plain, pkg_notes = _packages(target, chosen.variant, m, installed, installed_local, companions or {})
    notes.extend(pkg_notes)
    commands = tuple(_commands(pkgs, index_url, installer, python, m.system))
    if installer == "conda":
        notes.append("conda no longer gets torch packages from the pytorch channel: this installs the pip wheel into the conda env")
    return Recommendation(chosen.variant, index_url, target, commands, tuple(reasons), tuple(alternatives), chosen.fits, tuple(pkgs),
                          tuple(plain), tuple(notes), python, installer, tuple(cands), m.platform)


def _latest(facts: _Facts, m: _Machine) -> str:
    known = [v for v in facts.known_versions() if facts.variants(v, m)]
    return known[-1] if known else tf.latest_torch()


def _newest_fitting(facts: _Facts, m: _Machine, kind: str, known: Sequence[str]) -> Optional[str]:
    for version in reversed(list(known)):
        if kind == "default":
            if "default" in facts.variants(version, m) and facts.python_ok(version, "default", m) is not False:
                return version
            continue
        cands, _ = _evaluate(version, m, facts, kind)
        if _best(cands):
            return version
    return None


def _machine_reasons(m: _Machine, kind: str) -> List[str]:
    out = []
    if kind == "cuda":
        if m.driver:
            top = drv.max_cuda_for_driver(m.driver, m.driver_system)
            if top:
                major = drv.version_tuple(top)[0]
                nxt = drv.min_driver_for_cuda("%d.0" % (major + 1), m.driver_system)
                line = "driver %s runs CUDA <= %d.x wheels" % (m.driver, major)
                out.append(line + ("; CUDA %d needs driver >= %s" % (major + 1, nxt) if nxt else ""))
            else:
                out.append("driver %s is too old for any CUDA wheel in the tables" % m.driver)
        else:
            out.append("no driver version known: not checked (give --driver or CUDAENV_DRIVER_VERSION)")
        for label, cc in m.gpus:
            out.append("%s is %s" % (label, tf.sm_name(cc)) if cc else "%s: compute capability unknown, not checked" % label)
    elif kind == "cpu":
        out.append("no NVIDIA GPU seen: the CPU build")
    elif kind in ("rocm", "xpu"):
        out.append("an %s GPU was detected: the %s build" % ("AMD" if kind == "rocm" else "Intel", "ROCm" if kind == "rocm" else "XPU"))
    return out


def _requested(variant: str, target: str, m: _Machine, facts: _Facts, cands: Sequence[Candidate],
               published: Sequence[str]) -> Tuple[Optional[Candidate], List[str]]:
    reasons = []
    same_kind = [v for v in published if tf.variant_kind(v) == tf.variant_kind(variant)] or list(published)
    if variant not in published:
        first, last = tf.last_torch_for_variant(variant, m.system, m.machine)
        if last and drv.compare_versions(target, last) > 0:
            reasons.append("%s stops at torch %s: torch %s was not built for it (it has %s)" % (variant, last, target, ", ".join(same_kind)))
        elif first and drv.compare_versions(target, first) < 0:
            reasons.append("%s starts at torch %s: torch %s was not built for it (it has %s)" % (variant, first, target, ", ".join(same_kind)))
        else:
            reasons.append("torch %s was not published for %s on %s (it has %s)" % (target, variant, m.platform, ", ".join(same_kind)))
        return None, reasons
    cand = next((c for c in cands if c.variant == variant), None)
    if cand is None:
        cand, _ = _judge(target, variant, m, facts)
    if cand.fits:
        reasons.append("-> %s, as asked" % variant)
    else:
        reasons.append("%s was asked for, but it does not fit this machine: %s" % (variant, "; ".join(cand.problems)))
    return cand, reasons


def _alternatives(target: str, m: _Machine, facts: _Facts, kind: str, cands: Sequence[Candidate], chosen: Optional[Candidate],
                  base: str, known: Sequence[str], requested: Optional[str] = None) -> List[Alternative]:
    alts: List[Alternative] = []
    for c in sorted(cands, key=lambda c: tf.variant_sort_key(c.variant), reverse=True):
        if c.fits and (chosen is None or c.variant != chosen.variant):
            alts.append(Alternative("variant", "torch %s %s %s" % (target, c.variant, "fits" if requested else "also fits"), c.variant, target,
                                    "%s/%s" % (base, c.variant)))
    if requested and chosen is None:
        first, last = tf.last_torch_for_variant(requested, m.system, m.machine)
        if last and drv.compare_versions(target, last) > 0:
            alts.append(Alternative("torch", "use torch <= %s to stay on %s" % (last, requested), requested, last, "%s/%s" % (base, requested)))
        elif first and drv.compare_versions(target, first) < 0:
            alts.append(Alternative("torch", "use torch >= %s for %s" % (first, requested), requested, first, "%s/%s" % (base, requested)))
        return alts
    if chosen is not None and chosen.fits or kind not in ("cuda",):
        if chosen is None and kind == "default":
            older = _newest_fitting(facts, m, kind, [v for v in known if drv.compare_versions(v, target) < 0])
            if older:
                alts.append(Alternative("torch", "use torch <= %s (the last release with wheels for %s)" % (older, m.platform), "default", older))
        return alts
    # nothing fits (or the asked variant does not): what to change
    driver_fixes = [c for c in cands if c.driver_only and c.min_driver]
    if driver_fixes:
        best = max(driver_fixes, key=lambda c: tf.variant_sort_key(c.variant))
        low = min(driver_fixes, key=lambda c: drv.version_tuple(c.min_driver))
        alts.append(Alternative("driver", "upgrade the driver to at least %s (for torch %s %s)" % (low.min_driver, target, low.variant),
                                low.variant, target, "%s/%s" % (base, low.variant), low.min_driver))
        if best is not low:
            alts.append(Alternative("driver", "upgrade the driver to at least %s (for torch %s %s)" % (best.min_driver, target, best.variant),
                                    best.variant, target, "%s/%s" % (base, best.variant), best.min_driver))
    older = [v for v in known if drv.compare_versions(v, target) < 0]
    newer = [v for v in known if drv.compare_versions(v, target) > 0]
    for version in reversed(older):
        best = _best(_evaluate(version, m, facts, kind)[0])
        if best:
            alts.append(Alternative("torch", "use torch <= %s (torch %s %s fits this machine)" % (version, version, best.variant),
                                    best.variant, version, "%s/%s" % (base, best.variant)))
            break
    for version in newer:
        best = _best(_evaluate(version, m, facts, kind)[0])
        if best:
            why = ""
            if any(tf.cc_tuple(cc) and tf.cc_tuple(cc)[0] >= 10 for _, cc in m.gpus if cc):
                why = " (Blackwell GPUs need CUDA >= 12.8 builds)"
            alts.append(Alternative("torch", "use torch >= %s with %s%s" % (version, best.variant, why), best.variant, version,
                                    "%s/%s" % (base, best.variant)))
            break
    if m.python_version and all(any("Python" in p for p in c.problems) for c in cands) and cands:
        pys = [p for p in tf.pythons_for(target) if not p.endswith("t")]
        if pys:
            alts.append(Alternative("python", "use Python %s to %s for torch %s" % (pys[0], pys[-1], target), None, target))
    return alts


# ------------------------------------------------------------------ packages and commands
def _local_pins(variant: str, platform: str) -> bool:
    """Whether wheels of this variant carry the variant as a local tag (``2.7.1+cu126``)."""
    kind = tf.variant_kind(variant)
    if kind in ("cuda", "rocm", "xpu"):
        return True
    return kind == "cpu" and platform in ("linux-x86_64", "windows-x86_64")


def _packages(target: str, variant: str, m: _Machine, installed: Optional[str], installed_local: Optional[str],
              companions: Mapping[str, str]) -> Tuple[List[str], List[str], List[str]]:
    """("torch==2.7.1", ...) plus the same without local tags, and notes.

    A local tag is pinned only where a plain pin would leave the wrong build in place: the same public version
    installed with another local tag (pip calls ``torch==2.7.1`` already satisfied by ``2.7.1+cpu``).
    """
    notes: List[str] = []
    local = variant if _local_pins(variant, m.platform) else None
    wanted = [("torch", target, installed, installed_local)]
    table = tf.companions_for(target) or {}
    for name in ("torchvision", "torchaudio"):
        have = companions.get(name)
        if not have:
            continue
        version = table.get(name)
        if not version:
            notes.append("the %s matching torch %s is not in the tables: pin it yourself" % (name, target))
            wanted.append((name, None, tf.public_version(have), tf.local_tag(have)))
            continue
        wanted.append((name, version, tf.public_version(have), tf.local_tag(have)))
    pkgs, plain = [], []
    for name, version, have, have_local in wanted:
        if version is None:
            pkgs.append(name)
            plain.append(name)
            continue
        pin_local = local and have == version and have_local != local and not _unrebuilt_audio("%s==%s" % (name, version), target)
        pkgs.append("%s==%s%s" % (name, version, "+" + local if pin_local else ""))
        plain.append("%s==%s" % (name, version))
    return pkgs, plain, notes


def _quote(text: str, system: str) -> str:
    if system == "windows":
        return '"%s"' % text if (" " in text or not text) else text
    return shlex.quote(text)


def _commands(pkgs: Sequence[str], index_url: Optional[str], installer: str, python: Optional[str], system: str) -> List[str]:
    py = _quote(python or ("python" if system == "windows" else "python3"), system)
    tail = " ".join(_quote(p, system) for p in pkgs)
    idx = " --index-url %s" % index_url if index_url else ""
    if installer == "uv":
        return ["uv pip install --python %s %s%s" % (py, tail, idx)]
    return ["%s -m pip install %s%s" % (py, tail, idx)]


def install_argv(rec: Recommendation, python: str, installer: Optional[str] = None) -> List[str]:
    """The argv that runs the recommended install in ``python`` (for `cudaenv fix`)."""
    installer = installer or rec.installer
    tail = list(rec.packages) + (["--index-url", rec.index_url] if rec.index_url else [])
    if installer == "uv":
        return ["uv", "pip", "install", "--python", python] + tail
    return [python, "-m", "pip", "install"] + tail


# ------------------------------------------------------------------ renderers
def render_text(rec: Recommendation) -> str:
    lines = []
    if rec.variant:
        head = "torch %s, %s" % (rec.torch_version, rec.variant if rec.variant != "default" else "plain PyPI wheel")
        lines.append(("Recommended: " if rec.ok else "Asked for (does not fit): ") + head + (" (%s)" % rec.index_url if rec.index_url else ""))
    else:
        lines.append("No torch %s build fits this machine." % (rec.torch_version or ""))
    lines.append("")
    lines.append("Why:")
    lines.extend("  - %s" % r for r in rec.reasons)
    if rec.commands:
        lines.append("")
        lines.append("Install:")
        lines.extend("  %s" % c for c in rec.commands)
    if rec.alternatives:
        lines.append("")
        lines.append("Alternatives:" if rec.variant else "What to change:")
        lines.extend("  - %s" % a.summary for a in rec.alternatives)
    if rec.notes:
        lines.append("")
        lines.extend("note: %s" % n for n in rec.notes)
    return "\n".join(lines) + "\n"


def render_requirements(rec: Recommendation) -> str:
    """A requirements.txt snippet. Local tags pinned with --extra-index-url, so PyPI's build of the same version cannot win."""
    if not rec.variant:
        return "# no torch build fits this machine: see `cudaenv torch recommend`\n"
    out = ["# torch %s, %s (cudaenv torch recommend)" % (rec.torch_version, rec.variant)]
    if rec.index_url and _local_pins(rec.variant, rec.platform or "linux-x86_64"):
        out.append("--extra-index-url %s" % rec.index_url)
        for pkg in rec.plain_packages:
            if "==" in pkg and not _unrebuilt_audio(pkg, rec.torch_version):
                pkg = "%s+%s" % (pkg, rec.variant)
            out.append(pkg)
    else:
        if rec.index_url:
            out.append("--index-url %s" % rec.index_url)
        out.extend(rec.plain_packages)
    return "\n".join(out) + "\n"


def _unrebuilt_audio(pkg: str, torch_version: Optional[str]) -> bool:
    """torchaudio >= 2.11 is not rebuilt per torch release (it declares torch>=2.11)."""
    if not pkg.startswith("torchaudio=="):
        return False
    return drv.compare_versions(pkg.split("==", 1)[1], "2.11.0") >= 0 and drv.compare_versions(torch_version, "2.11.0") > 0


def render_pyproject(rec: Recommendation) -> str:
    if not rec.variant:
        return "# no torch build fits this machine: see `cudaenv torch recommend`\n"
    deps = ", ".join('"%s"' % p for p in rec.plain_packages)
    out = ["# torch %s, %s (cudaenv torch recommend)" % (rec.torch_version, rec.variant), "[project]", "dependencies = [%s]" % deps]
    if rec.index_url:
        name = "pytorch-%s" % rec.variant
        out += ["", "[[tool.uv.index]]", 'name = "%s"' % name, 'url = "%s"' % rec.index_url, "explicit = true", "", "[tool.uv.sources]"]
        out += ['%s = [{ index = "%s" }]' % (p.split("==", 1)[0], name) for p in rec.plain_packages]
    return "\n".join(out) + "\n"
