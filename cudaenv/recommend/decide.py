"""Pick the torch wheel index for a machine from all the facts, and say why (pure: no I/O).

The decision reads: the driver's limit (the minimum driver of each CUDA runtime, minor-version
compatibility), EVERY visible GPU's compute capability against the wheel's arch list (exact sm,
same-major binary compatibility, or PTX the driver can JIT), the OS and architecture, the Python
version, the torch version (installed one by default; ``"2.7.1"``, ``"2.7"`` or ``"latest"``) and which
variants that release was published for. Among the variants that fit, the newest wins. No NVIDIA GPU:
``cpu`` (``rocm*``/``xpu`` when the command saw those GPUs; the plain PyPI wheel on macOS).

``decide(request, index_data, tables)``: ``tables`` maps a facts-table name to its loaded JSON (None or a
missing name reads the shipped ``data/``); ``index_data`` is what `cudaenv torch refresh` learned.
"""

from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from cudaenv.facts import drivers as drv
from cudaenv.facts import torch as tf
from cudaenv.facts import torch_policy as policy
from cudaenv.recommend import install
from cudaenv.recommend.records import Alternative, Candidate, Recommendation, Request


@dataclass
class _Machine:
    system: str
    machine: str
    platform: str
    driver: Optional[str]
    driver_system: str
    gpus: Sequence[Tuple[str, Optional[str]]]
    nvidia: bool
    python_version: Optional[str]
    accelerator: Optional[str]
    notes: List[str] = field(default_factory=list)
    native_cuda: Optional[str] = None  # the newest CUDA whose PTX this driver can JIT (nvidia-smi's "CUDA Version")


class _Facts:
    """The bundled tables (or the caller's) with the live index data folded in."""

    def __init__(self, index_data: Any = None, tables: Optional[Mapping[str, Any]] = None):
        self.index = index_data
        self.tables = dict(tables or {})

    def t(self, name: str) -> Any:
        return self.tables.get(name)

    def known_versions(self) -> Tuple[str, ...]:
        seen = set(tf.known_torch_versions(self.t(tf.VARIANTS)))
        if self.index is not None:
            seen.update(self.index.torch_versions())
        return tuple(sorted(seen, key=drv.version_tuple))

    def variants(self, version: str, m: _Machine) -> Tuple[str, ...]:
        if self.index is not None:
            live = self.index.variants_for(version, m.platform)
            if live:
                return live
        return tf.variants_for(version, m.system, m.machine, self.t(tf.VARIANTS))

    def python_ok(self, version: str, variant: str, m: _Machine) -> Optional[bool]:
        if not m.python_version:
            return None
        if self.index is not None:
            pys = self.index.pythons_for(version, m.platform, variant)
            if pys:
                return m.python_version in pys or "any" in pys
        pys = tf.pythons_for(version, self.t(tf.PYTHONS), system=m.system)
        return (m.python_version in pys) if pys else None

    def pythons(self, version: str, m: _Machine) -> Tuple[str, ...]:
        return tf.pythons_for(version, self.t(tf.PYTHONS), system=m.system)

    def arch(self, version: str, variant: str, m: _Machine) -> Tuple[Optional[Tuple[str, ...]], Optional[str], Optional[str]]:
        """(archs, ptx, note); a variant the table does not know borrows the newest known CUDA row, with a note."""
        found = tf.arch_list_for(version, variant, m.system, m.machine, self.t(tf.ARCH))
        if found:
            return found[0], found[1], None
        row = tf.newest_arch_row("cuda", m.system, m.machine, self.t(tf.ARCH), variant=variant) or \
            tf.newest_arch_row("cuda", m.system, m.machine, self.t(tf.ARCH))
        if row is None:
            return None, None, "the arch list of torch %s %s is not known" % (version, variant)
        return (tuple(row["archs"]), row.get("ptx"),
                "the arch list of torch %s %s is not in the bundled table; assumed like %s (torch %s)" % (version, variant, row["variant"], row["to"]))

    def arch_rows(self, m: _Machine) -> List[Any]:
        from cudaenv.resources import load_table

        table = self.t(tf.ARCH) or load_table(tf.ARCH)
        return [r for r in table["rows"] if r["platform"] == m.platform]

    def resolve(self, spec: str, known: Tuple[str, ...]) -> Optional[str]:
        return tf.resolve_torch_version(spec, known) or tf.resolve_torch_version(
            spec, tf.known_torch_versions(self.t(tf.VARIANTS), include_unreleased=True))

    def released(self, version: str) -> bool:
        return tf.is_released(version, self.t(tf.VARIANTS))

    def variant_span(self, variant: str, m: _Machine) -> Tuple[Optional[str], Optional[str]]:
        return tf.last_torch_for_variant(variant, m.system, m.machine, self.t(tf.VARIANTS))

    def min_driver(self, cuda: Optional[str], system: str) -> Optional[str]:
        return drv.min_driver_for_cuda(cuda, system, self.t(drv.TABLE))

    def beyond_tables(self, cuda: Optional[str]) -> bool:
        return drv.beyond_tables(cuda, self.t(drv.TABLE))


# ------------------------------------------------------------------ reading the request
def _machine(req: Request, facts: _Facts) -> _Machine:
    native = drv.native_cuda_for_driver(req.driver, req.driver_system, facts.t(drv.TABLE)) if req.driver else None
    return _Machine(req.system, req.machine, tf.platform_key(req.system, req.machine), req.driver, req.driver_system, req.gpus,
                    req.nvidia, req.python_version, req.accelerator, list(req.notes), native)


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
        min_driver = facts.min_driver(cuda, m.driver_system)
        if facts.beyond_tables(cuda) and min_driver:
            notes.append("CUDA %s (%s) is newer than the driver tables: it needs at least driver %s (the newest known minimum), "
                         "probably more" % (cuda, variant, min_driver))
        if m.driver and min_driver and drv.compare_versions(m.driver, min_driver) < 0:
            problems.append("needs driver >= %s (this one is %s)" % (min_driver, m.driver))
            driver_problem = True
        for label, cc in m.gpus:
            floor = policy.gpu_min_driver(cc, m.driver_system, facts.t(policy.TABLE)) if cc else None
            if floor and m.driver and drv.compare_versions(m.driver, floor[0]) < 0:
                problems.append("no driver below %s runs %s (%s, %s): the driver is the first fix" % (floor[0], label, floor[1], tf.sm_name(cc)))
                driver_problem = True
                if not min_driver or drv.compare_versions(floor[0], min_driver) > 0:
                    min_driver = floor[0]
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
    only_driver = driver_problem and all("driver" in p for p in problems)
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
def decide(req: Request, index_data: Any = None, tables: Optional[Mapping[str, Any]] = None) -> Recommendation:
    """The variant, index URL and install commands for the request (see the module docstring)."""
    base = req.index_base.rstrip("/")
    facts = _Facts(index_data, tables)
    if req.jetson:
        return _jetson(req, facts)
    m = _machine(req, facts)
    installed = tf.public_version(req.installed)
    installer, python = req.installer, req.python
    companions = dict(req.companions)
    kind = _kind_wanted(m)
    reasons: List[str] = []
    notes: List[str] = list(m.notes)
    known = facts.known_versions()
    torch_version = req.torch_version

    # which torch
    explicit = torch_version not in (None, "", "installed")
    series = _release_of(installed)
    if not explicit and installed and installed not in known and series in known:
        notes.append("torch %s is a nightly or pre-release: judged as its release, torch %s" % (req.installed, series))
        installed = series
    if torch_version == "latest":
        target = _latest(facts, m)
        reasons.append("latest torch known: %s" % target)
    elif explicit:
        target = facts.resolve(torch_version, known)
        if target is None and known and drv.compare_versions(tf.public_version(torch_version), known[0]) < 0:
            return _older_than_tables(req, tf.public_version(torch_version), m, facts, kind, known, base, notes)
        if target is None:
            return Recommendation(None, None, tf.public_version(torch_version), (), (
                "torch %s is not in the bundled table (it knows %s to %s)" % (torch_version, known[0], known[-1]),
                "run `cudaenv torch refresh` to learn newer releases from the index"), notes=tuple(notes), python=python, installer=installer)
        if not facts.released(target) and (index_data is None or target not in index_data.torch_versions()):
            notes.append("torch %s is not confirmed released; its table rows are unconfirmed" % target)
    elif installed and installed in known:
        target = installed
        reasons.append("torch %s is installed in %s" % (req.installed, python or "the probed Python"))
    else:
        if installed:
            notes.append("the installed torch %s is not in the bundled table; planning for the newest release" % installed)
        fitting = _newest_fitting(facts, m, kind, known)
        target = fitting or _latest(facts, m)
        if fitting:
            reasons.append("no torch version asked for: the newest release that fits is %s" % target)
        else:
            reasons.append("no torch version asked for: no release fits, so this is about the newest, %s" % target)

    reasons.extend(_machine_reasons(m, kind, facts))
    cands, eval_notes = _evaluate(target, m, facts, kind)
    notes.extend(n for n in eval_notes if n not in notes)
    published = [c.variant for c in cands]
    all_published = facts.variants(target, m)
    if m.python_version:
        pys = facts.pythons(target, m)
        reasons.append("Python %s%s" % (m.python_version, " (torch %s has wheels for %s)" % (target, ", ".join(pys)) if pys else ""))
    if published:
        reasons.append("torch %s exists for %s" % (target, ", ".join(published)))

    chosen: Optional[Candidate]
    variant = req.variant
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
    have = tf.local_tag(req.installed)
    current = next((c for c in cands if c.variant == have and c.fits), None) if installed == target and not variant else None
    if current is not None:
        return _already_installed(req, target, current, chosen, reasons, alternatives, notes, m, facts, kind, known, base, cands)
    if chosen is None:
        return Recommendation(None, None, target, (), tuple(reasons), tuple(alternatives), False, notes=tuple(notes),
                              python=python, installer=installer, candidates=tuple(cands), platform=m.platform, asked_variant=variant)
    if not variant:
        reasons.append("-> %s" % chosen.variant if kind != "default" else "-> the plain PyPI wheel (macOS has no CUDA builds)")
    index_url = None if chosen.variant == "default" else "%s/%s" % (base, chosen.variant)
    pkgs, plain, pkg_notes = install.packages(target, chosen.variant, m.platform, companions, req.installed, facts.tables)
    notes.extend(pkg_notes)
    if req.python_asked and req.interpreter_version and m.python_version and m.python_version != req.interpreter_version:
        python = ("py -%s" % m.python_version) if m.system == "windows" else "python%s" % m.python_version.rstrip("t")
        notes.append("planned for Python %s, but %s is Python %s: run the install with a Python %s interpreter (%s)"
                      % (m.python_version, req.python or "the probed interpreter", req.interpreter_version, m.python_version, python))
    commands = tuple(install.commands(pkgs, index_url, installer, python, m.system, req.externally_managed and python == req.python))
    if installer == "conda":
        notes.append("conda no longer gets torch packages from the pytorch channel: this installs the pip wheel into the conda env")
    return Recommendation(chosen.variant, index_url, target, commands, tuple(reasons), tuple(alternatives), chosen.fits, tuple(pkgs),
                          tuple(plain), tuple(notes), python, installer, tuple(cands), m.platform, asked_variant=variant)


def _jetson(req: Request, facts: _Facts) -> Recommendation:
    """A Jetson board: NVIDIA's wheels for its JetPack release; never PyTorch's aarch64 index, never a driver upgrade."""
    from cudaenv.resources import load_table

    table = facts.t("jetson_torch") or load_table("jetson_torch")
    where = "L4T %s%s" % (req.jetson, ", JetPack %s" % req.jetpack if req.jetpack else "")
    reasons = ["this is a Jetson board (%s): PyTorch's indexes have no build for it (their aarch64 wheels are for SBSA "
               "servers), and its driver and CUDA come with JetPack (never a desktop driver upgrade)" % where]
    row = next((r for r in sorted(table["rows"], key=lambda r: drv.version_tuple(r["jetpack"]), reverse=True)
                if req.jetpack and (req.jetpack + ".").startswith(r["jetpack"] + ".")), None)
    alts: List[Alternative] = []
    notes = list(req.notes)
    if row is None:
        reasons.append("the tables have no torch for %s: see NVIDIA's PyTorch for Jetson page" % (("JetPack " + req.jetpack) if req.jetpack else "this JetPack"))
        alts.append(Alternative("jetpack", "NVIDIA's torch wheels for Jetson: https://docs.nvidia.com/deeplearning/frameworks/install-pytorch-jetson-platform/index.html"))
    else:
        pys = ", ".join(row["python"])
        alts.append(Alternative("jetpack", "install NVIDIA's torch %s for JetPack %s (Python %s) from %s" % (row["torch"], row["jetpack"], pys, row["where"]),
                                torch_version=row["torch"], index_url=row["where"]))
        if req.python_version and req.python_version not in row["python"]:
            notes.append("those wheels are for Python %s (the JetPack's system Python), not %s" % (pys, req.python_version))
        if not row.get("confirmed", True):
            notes.append("the JetPack %s row of the Jetson table is not confirmed against NVIDIA's page" % row["jetpack"])
    return Recommendation(None, None, None, (), tuple(reasons), tuple(alts), False, notes=tuple(notes), python=req.python,
                          installer=req.installer, platform="linux-aarch64")


def _release_of(version: Optional[str]) -> Optional[str]:
    """``2.7.0.dev20250310`` -> ``2.7.0``; ``2.8.0rc1`` -> ``2.8.0``."""
    import re

    m = re.match(r"^(\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)", version or "")
    return m.group(1) if m else None


def _older_than_tables(req: Request, asked: str, m: _Machine, facts: _Facts, kind: str, known: Sequence[str], base: str,
                       notes: List[str]) -> Recommendation:
    """A release older than every row: the oldest release that does fit, as a real answer."""
    reasons = ["torch %s is older than the bundled tables (they start at torch %s)" % (asked, known[0])]
    for version in known:
        best = _best(_evaluate(version, m, facts, kind)[0])
        if best:
            gpus = ", ".join(tf.sm_name(cc) for _, cc in m.gpus if cc)
            reasons.append("the oldest release with a build for this machine%s is torch %s %s"
                           % (" (%s)" % gpus if gpus else "", version, best.variant))
            alt = Alternative("torch", "install torch >= %s with %s or newer" % (version, best.variant), best.variant, version,
                              "%s/%s" % (base, best.variant))
            return Recommendation(None, None, asked, (), tuple(reasons), (alt,), False, notes=tuple(notes), python=req.python,
                                  installer=req.installer, platform=m.platform)
    reasons.append("no release in the tables fits this machine either")
    return Recommendation(None, None, asked, (), tuple(reasons), tuple(_no_build_options(m, facts)), False, notes=tuple(notes),
                          python=req.python, installer=req.installer, platform=m.platform)


def _no_build_options(m: _Machine, facts: _Facts) -> List[Alternative]:
    """For GPUs no build in the tables has kernels for (sm_35): the CPU build, a source build, the last torch with them."""
    ccs = [cc for _, cc in m.gpus if cc]
    names = ", ".join(tf.sm_name(cc) for cc in ccs) or "this GPU"
    last = None
    for row in facts.arch_rows(m):
        if all(tf.gpu_runs(tf.arch_list_of(row["archs"], row.get("ptx")), cc) for cc in ccs):
            if last is None or drv.compare_versions(row["to"], last[0]) > 0:
                last = (row["to"], row["variant"])
    out = [Alternative("variant", "use the CPU build (torch with the cpu variant): it runs everywhere, without the GPU", "cpu")]
    out.append(Alternative("source", "build torch from source with TORCH_CUDA_ARCH_LIST=\"%s\" (and a CUDA toolkit that still "
                                     "targets it)" % ";".join(".".join(str(x) for x in tf.cc_tuple(cc)) for cc in ccs)))
    if last:
        out.append(Alternative("torch", "the last torch with kernels for %s is torch %s %s" % (names, last[0], last[1]), last[1], last[0]))
    else:
        out.append(Alternative("torch", "no torch in the tables (from %s) has kernels for %s: only older official builds did"
                               % (facts.known_versions()[0], names)))
    return out


def _already_installed(req: Request, target: str, current: Candidate, chosen: Optional[Candidate], reasons: List[str],
                       alternatives: List[Alternative], notes: List[str], m: _Machine, facts: _Facts, kind: str,
                       known: Sequence[str], base: str, cands: Sequence[Candidate]) -> Recommendation:
    """The installed build runs here: nothing to install; a newer build or release is an option, never an order."""
    reasons = list(reasons) + ["torch %s is installed and runs on this machine: nothing to install" % req.installed]
    options = [a for a in alternatives if not (a.kind == "variant" and a.variant == current.variant)]
    if chosen is not None and chosen.variant != current.variant:
        options.insert(0, Alternative("variant", "torch %s %s also fits (a newer CUDA), if you want it" % (target, chosen.variant),
                                      chosen.variant, target, "%s/%s" % (base, chosen.variant)))
    for version in reversed([v for v in known if drv.compare_versions(v, target) > 0]):
        best = _best(_evaluate(version, m, facts, kind)[0])
        if best:
            options.append(Alternative("torch", "torch %s %s is newer and fits, if you want to upgrade" % (version, best.variant),
                                       best.variant, version, "%s/%s" % (base, best.variant)))
            break
    options = [a for a in options if a.kind in ("variant", "torch")]
    return Recommendation(current.variant, "%s/%s" % (base, current.variant) if current.variant != "default" else None, target, (),
                          tuple(reasons), tuple(options), True, notes=tuple(notes), python=req.python, installer=req.installer,
                          candidates=tuple(cands), platform=m.platform, installed_fits=True)


def _latest(facts: _Facts, m: _Machine) -> str:
    known = [v for v in facts.known_versions() if facts.variants(v, m)]
    return known[-1] if known else tf.latest_torch(facts.t(tf.VARIANTS))


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


def _machine_reasons(m: _Machine, kind: str, facts: _Facts) -> List[str]:
    out = []
    if kind == "cuda":
        if m.driver:
            top = drv.max_cuda_for_driver(m.driver, m.driver_system, facts.t(drv.TABLE))
            if top:
                major = drv.version_tuple(top)[0]
                nxt_cuda = "%d.0" % (major + 1)
                nxt = None if facts.beyond_tables(nxt_cuda) else facts.min_driver(nxt_cuda, m.driver_system)
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
        first, last = facts.variant_span(variant, m)
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
        first, last = facts.variant_span(requested, m)
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
            family = next((policy.gpu_min_cuda(cc, facts.t(policy.TABLE)) for _, cc in m.gpus if cc and policy.gpu_min_cuda(cc, facts.t(policy.TABLE))), None)
            if family:
                why = " (%s GPUs need CUDA >= %s builds)" % (family[1], family[0])
            alts.append(Alternative("torch", "use torch >= %s with %s%s" % (version, best.variant, why), best.variant, version,
                                    "%s/%s" % (base, best.variant)))
            break
    if not any(a.kind in ("torch", "driver") for a in alts) and cands and all(
            any("has no kernels" in p for p in c.problems) for c in cands):
        alts.extend(_no_build_options(m, facts))
    if m.python_version and all(any("Python" in p for p in c.problems) for c in cands) and cands:
        pys = [p for p in facts.pythons(target, m) if not p.endswith("t")]
        if pys:
            alts.append(Alternative("python", "use Python %s to %s for torch %s" % (pys[0], pys[-1], target), None, target))
    return alts
