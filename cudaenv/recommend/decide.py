"""Pick the torch wheel index for a machine from all the facts, and say why (pure: no I/O).

The decision reads: the driver's limit (the minimum driver of each CUDA runtime, minor-version
compatibility), EVERY visible GPU's compute capability against the wheel's arch list (exact sm,
same-major binary compatibility, or PTX the driver can JIT), the OS and architecture, the Python
version, the torch version (installed one by default; ``"2.7.1"``, ``"2.7"`` or ``"latest"``) and which
variants that release was published for. Among the variants that fit, the newest wins. No NVIDIA GPU:
``cpu`` (``rocm*``/``xpu`` when the command saw those GPUs; the plain PyPI wheel on macOS).

``decide(request, index_data, tables)``: ``tables`` maps a facts-table name to its loaded JSON (None or a
missing name reads the shipped ``data/``); ``index_data`` is what `cudaenv torch refresh` learned.

This module is the decision's order (which torch, which build, the outcome and its reasons); it reads through
:mod:`~cudaenv.recommend.view`, judges builds with :mod:`~cudaenv.recommend.judge`, offers
:mod:`~cudaenv.recommend.alternatives` and hands a Jetson board to :mod:`~cudaenv.recommend.jetson`.
"""

from __future__ import annotations

from cudaenv.facts import drivers as drv
from cudaenv.model.record import replace
from cudaenv.facts import torch as tf
from cudaenv.recommend import install
from cudaenv.recommend.alternatives import alternatives_for, no_build_options
from cudaenv.recommend.jetson import decide_jetson
from cudaenv.recommend.judge import (best_fitting, evaluate, judge_variant, kind_wanted, latest_known, newest_fitting,
                                     uv_auto_pick)
from cudaenv.recommend.records import Alternative, Candidate, Recommendation, Request
from cudaenv.recommend.view import Facts, Machine, machine_of
from cudaenv.core.version import compare_pep440, pep440_release, version_key
from cudaenv.core.i18n import M, join

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, List, Mapping, Optional, Sequence, Tuple


def decide(req: Request, index_data: Any = None, tables: Optional[Mapping[str, Any]] = None) -> Recommendation:
    """The variant, index URL and install commands for the request (see the module docstring); for conda and pixi,
    their form of the same build and the solver's view (:mod:`cudaenv.recommend.conda`)."""
    rec = _decide(req, index_data, tables)
    if req.mirror:
        rec = replace(rec, index_layout=req.index_layout, mirror=req.mirror)
    if req.installer not in ("conda", "pixi"):
        return rec
    from cudaenv.recommend.conda import plan_conda, solver_view

    plan = plan_conda(rec, req, tables) if rec.commands else None
    changes = {"solver": solver_view(req, tables), "conda_install": plan}
    if plan is not None:
        changes["commands"] = plan.commands
    return replace(rec, **changes)


def _decide(req: Request, index_data: Any = None, tables: Optional[Mapping[str, Any]] = None) -> Recommendation:
    base = req.index_base.rstrip("/")
    facts = Facts(index_data, tables)
    if req.jetson:
        return decide_jetson(req, facts)
    m = machine_of(req, facts)
    installed = tf.public_version(req.installed)
    installer, python = req.installer, req.python
    companions = dict(req.companions)
    kind = kind_wanted(m)
    reasons: List[str] = []
    notes: List[str] = list(m.notes)
    known = facts.known_versions()
    torch_version = req.torch_version

    # which torch
    explicit = torch_version not in (None, "", "installed")
    series = pep440_release(installed)  # 2.8.0rc1 -> 2.8.0
    if not explicit and installed and installed not in known and series in known:
        notes.append(M("torch %s is a nightly or pre-release: judged as its release, torch %s", req.installed, series))
        installed = series
    if torch_version == "latest":
        target = latest_known(facts, m)
        reasons.append(M("latest torch known: %s", target))
    elif explicit:
        target = facts.resolve(torch_version, known)
        if target is None and known and compare_pep440(tf.public_version(torch_version), known[0]) < 0:
            return _older_than_tables(req, tf.public_version(torch_version), m, facts, kind, known, base, notes)
        if target is None:
            return Recommendation(None, None, tf.public_version(torch_version), (), (
                M("torch %s is not in the bundled table (it knows %s to %s)", torch_version, known[0], known[-1]),
                M("run `cudaenv torch refresh` to learn newer releases from the index")), notes=tuple(notes), python=python, installer=installer)
        if not facts.released(target) and (index_data is None or target not in index_data.torch_versions()):
            notes.append(M("torch %s is not confirmed released; its table rows are unconfirmed", target))
    elif installed and installed in known:
        target = installed
        reasons.append(M("torch %s is installed in %s", req.installed, python or M("the probed Python")))
    else:
        if installed:
            notes.append(M("the installed torch %s is not in the bundled table; planning for the newest release", installed))
        fitting = newest_fitting(facts, m, kind, known)
        target = fitting or latest_known(facts, m)
        if fitting:
            reasons.append(M("no torch version asked for: the newest release that fits is %s", target))
        else:
            reasons.append(M("no torch version asked for: no release fits, so this is about the newest, %s", target))

    reasons.extend(_machine_reasons(m, kind, facts))
    cands, eval_notes = evaluate(target, m, facts, kind)
    notes.extend(n for n in eval_notes if n not in notes)
    published = [c.variant for c in cands]
    all_published = facts.variants(target, m)
    if m.python_version:
        pys = facts.pythons(target, m)
        reasons.append(M("Python %s%s", m.python_version, (M(" (torch %s has wheels for %s)", target, ", ".join(pys)) if pys else "")))
    if published:
        reasons.append(M("torch %s exists for %s", target, ", ".join(published)))

    chosen: Optional[Candidate]
    variant = req.variant
    if variant:
        chosen, extra = _requested(variant, target, m, facts, cands, all_published)
        reasons.extend(extra)
    elif kind == "default":  # macOS: one plain wheel per Python, judged like any build (a Python it lacks has none)
        judged = [c for c in cands if c.variant == "default"]
        chosen = best_fitting(judged) if judged else (Candidate("default") if "default" in all_published else None)
        for c in judged:
            reasons.extend("%s: " % c.variant + p for p in c.problems)  # p may be a marked message: kept as one
        if chosen is None and not judged:
            reasons.append(M("no torch %s wheels for %s", target, m.platform))
    else:
        chosen = best_fitting(cands)
        for c in cands:
            for p in c.problems:
                reasons.append("%s: " % c.variant + p)  # p may be a marked message: kept as one
        if chosen is None and not cands:
            reasons.append(M("torch %s has no %s wheels for %s", target, kind, m.platform))

    alternatives = alternatives_for(target, m, facts, kind, cands, chosen, base, known, variant)
    have = tf.local_tag(req.installed)
    current = next((c for c in cands if c.variant == have and c.fits), None) if installed == target and not variant else None
    if current is not None:
        return _with_uv_auto(_already_installed(req, target, current, chosen, reasons, alternatives, notes, m, facts, kind,
                                                known, base, cands), cands, m, facts, kind)
    if chosen is None:
        return Recommendation(None, None, target, (), tuple(reasons), tuple(alternatives), False, notes=tuple(notes),
                              python=python, installer=installer, candidates=tuple(cands), platform=m.platform, asked_variant=variant)
    if not variant:
        reasons.append(("-> %s" % chosen.variant if kind != "default" else M("-> the plain PyPI wheel (macOS has no CUDA builds)")))
    index_url = None if chosen.variant == "default" else "%s/%s" % (base, chosen.variant)
    pkgs, plain, pkg_notes = install.packages(target, chosen.variant, m.platform, companions, req.installed, facts.tables)
    notes.extend(pkg_notes)
    if req.python_asked and req.interpreter_version and m.python_version and m.python_version != req.interpreter_version:
        python = ("py -%s" % m.python_version) if m.system == "windows" else "python%s" % m.python_version.rstrip("t")
        notes.append(M("planned for Python %s, but %s is Python %s: run the install with a Python %s interpreter (%s)",
                       m.python_version, req.python or M("the probed interpreter"), req.interpreter_version, m.python_version, python))
    commands = tuple(install.commands(pkgs, index_url, installer, python, m.system, req.externally_managed and python == req.python,
                                      flat=req.index_layout == "flat"))
    return _with_uv_auto(Recommendation(
        chosen.variant, index_url, target, commands, tuple(reasons), tuple(alternatives), chosen.fits, tuple(pkgs),
        tuple(plain), tuple(notes), python, installer, tuple(cands), m.platform, asked_variant=variant), cands, m, facts, kind)


def _with_uv_auto(rec: Recommendation, cands, m, facts, kind: str) -> Recommendation:
    """``rec`` with the build uv's ``--torch-backend=auto`` would pick, where it is another CUDA build."""
    from cudaenv.model.record import replace

    auto = uv_auto_pick(cands, m, facts) if kind == "cuda" and rec.variant else None
    return replace(rec, uv_auto=auto.variant) if auto is not None and auto.variant != rec.variant else rec



def nearest_release(req: Request, rec: Recommendation, index_data: Any = None,
                    tables: Optional[Mapping[str, Any]] = None) -> Optional[Recommendation]:
    """The older-torch fallback, its one home: when ``rec`` (the decision for the release ``req`` asks for) does not
    fit, the decision for the nearest release that does, the first torch release its alternatives name; None when
    they name none. The doctor's fix lines and `cudaenv fix` both fall back through it."""
    alt = next((a for a in rec.alternatives if a.kind == "torch" and a.torch_version), None)
    return decide(replace(req, torch_version=alt.torch_version), index_data, tables) if alt is not None else None

def _older_than_tables(req: Request, asked: str, m: Machine, facts: Facts, kind: str, known: Sequence[str], base: str,
                       notes: List[str]) -> Recommendation:
    """A release older than every row: the oldest release that does fit, as a real answer."""
    reasons = [M("torch %s is older than the bundled tables (they start at torch %s)", asked, known[0])]
    for version in known:
        best = best_fitting(evaluate(version, m, facts, kind)[0])
        if best:
            gpus = ", ".join(tf.sm_name(cc) for _, cc in m.gpus if cc)
            reasons.append(M("the oldest release with a build for this machine (%s) is torch %s %s", gpus, version, best.variant)
                           if gpus else M("the oldest release with a build for this machine is torch %s %s", version, best.variant))
            alt = Alternative("torch", M("install torch >= %s with %s or newer", version, best.variant), best.variant, version,
                              "%s/%s" % (base, best.variant))
            return Recommendation(None, None, asked, (), tuple(reasons), (alt,), False, notes=tuple(notes), python=req.python,
                                  installer=req.installer, platform=m.platform)
    reasons.append(M("no release in the tables fits this machine either"))
    return Recommendation(None, None, asked, (), tuple(reasons), tuple(no_build_options(m, facts)), False, notes=tuple(notes),
                          python=req.python, installer=req.installer, platform=m.platform)


def _already_installed(req: Request, target: str, current: Candidate, chosen: Optional[Candidate], reasons: List[str],
                       alternatives: List[Alternative], notes: List[str], m: Machine, facts: Facts, kind: str,
                       known: Sequence[str], base: str, cands: Sequence[Candidate]) -> Recommendation:
    """The installed build runs here: nothing to install; a newer build or release is an option, never an order."""
    reasons = list(reasons) + [M("torch %s is installed and runs on this machine: nothing to install", req.installed)]
    options = [a for a in alternatives if not (a.kind == "variant" and a.variant == current.variant)]
    if chosen is not None and chosen.variant != current.variant:
        options.insert(0, Alternative("variant", M("torch %s %s also fits (a newer CUDA), if you want it", target, chosen.variant),
                                      chosen.variant, target, "%s/%s" % (base, chosen.variant)))
    for version in reversed([v for v in known if compare_pep440(v, target) > 0]):
        best = best_fitting(evaluate(version, m, facts, kind)[0])
        if best:
            options.append(Alternative("torch", M("torch %s %s is newer and fits, if you want to upgrade", version, best.variant),
                                       best.variant, version, "%s/%s" % (base, best.variant)))
            break
    options = [a for a in options if a.kind in ("variant", "torch")]
    return Recommendation(current.variant, "%s/%s" % (base, current.variant) if current.variant != "default" else None, target, (),
                          tuple(reasons), tuple(options), True, notes=tuple(notes), python=req.python, installer=req.installer,
                          candidates=tuple(cands), platform=m.platform, installed_fits=True)


def _machine_reasons(m: Machine, kind: str, facts: Facts) -> List[str]:
    out = []
    if kind == "cuda":
        if m.driver:
            top = drv.max_cuda_for_driver(m.driver, m.driver_system, facts.t(drv.TABLE))
            if top:
                major = version_key(top)[0]
                nxt_cuda = "%d.0" % (major + 1)
                nxt = None if facts.beyond_tables(nxt_cuda) else facts.min_driver(nxt_cuda, m.driver_system)
                line = M("driver %s runs CUDA <= %d.x wheels", m.driver, major)
                out.append(line + (M("; CUDA %d needs driver >= %s", major + 1, nxt) if nxt else ""))
            else:
                out.append(M("driver %s is too old for any CUDA wheel in the tables", m.driver))
        else:
            out.append(M("no driver version known: not checked (give --driver or CUDAENV_DRIVER_VERSION)"))
        for label, cc in m.gpus:
            out.append(M("%s is %s", label, tf.sm_name(cc)) if cc else M("%s: compute capability unknown, not checked", label))
    elif kind == "cpu":
        out.append(M("no NVIDIA GPU seen: the CPU build"))
    elif kind in ("rocm", "xpu"):
        out.append(M("an %s GPU was detected: the %s build", "AMD" if kind == "rocm" else "Intel", "ROCm" if kind == "rocm" else "XPU"))
    return out


def _requested(variant: str, target: str, m: Machine, facts: Facts, cands: Sequence[Candidate],
               published: Sequence[str]) -> Tuple[Optional[Candidate], List[str]]:
    reasons = []
    same_kind = [v for v in published if tf.variant_kind(v) == tf.variant_kind(variant)] or list(published)
    if variant not in published:
        first, last = facts.variant_span(variant, m)
        if last and compare_pep440(target, last) > 0:
            reasons.append(M("%s stops at torch %s: torch %s was not built for it (it has %s)", variant, last, target, ", ".join(same_kind)))
        elif first and compare_pep440(target, first) < 0:
            reasons.append(M("%s starts at torch %s: torch %s was not built for it (it has %s)", variant, first, target, ", ".join(same_kind)))
        else:
            reasons.append(M("torch %s was not published for %s on %s (it has %s)", target, variant, m.platform, ", ".join(same_kind)))
        return None, reasons
    cand = next((c for c in cands if c.variant == variant), None)
    if cand is None:
        cand, _ = judge_variant(target, variant, m, facts)
    if cand.fits:
        reasons.append(M("-> %s, as asked", variant))
    else:
        reasons.append(M("%s was asked for, but it does not fit this machine: %s", variant, join("; ", cand.problems)))
    return cand, reasons

