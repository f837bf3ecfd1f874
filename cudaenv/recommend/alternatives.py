"""What else the user could do, beside or instead of the chosen build (pure: no I/O).

Other variants that fit, another torch release, a driver upgrade, another Python, and for a GPU no build in the
tables has kernels for: the CPU build, a source build, the last torch that had them.
"""

from __future__ import annotations

from cudaenv.facts import torch as tf
from cudaenv.facts import cuda_arch
from cudaenv.recommend.judge import best_fitting, evaluate, newest_fitting
from cudaenv.recommend.records import Alternative, Candidate
from cudaenv.recommend.view import Facts, Machine
from cudaenv.core.version import compare_pep440, compare_versions, pep440_key, version_key
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Sequence


def alternatives_for(target: str, m: Machine, facts: Facts, kind: str, cands: Sequence[Candidate], chosen: Optional[Candidate],
                  base: str, known: Sequence[str], requested: Optional[str] = None) -> List[Alternative]:
    """The other builds that fit; for an asked variant that does not, the releases that have it; when nothing fits,
    what to change (the driver, an older or newer torch, the CPU or a source build, another Python)."""
    alts: List[Alternative] = []
    for c in sorted(cands, key=lambda c: tf.variant_sort_key(c.variant), reverse=True):
        if c.fits and (chosen is None or c.variant != chosen.variant):
            if c.minor_compat:
                summary = (M("torch %s %s fits (driver %s runs its CUDA by minor-version compatibility only)", target, c.variant,
                             m.driver) if requested else
                           M("torch %s %s also fits (driver %s runs its CUDA by minor-version compatibility only)", target,
                             c.variant, m.driver))
            else:
                summary = M("torch %s %s fits", target, c.variant) if requested else M("torch %s %s also fits", target, c.variant)
            alts.append(Alternative("variant", summary, c.variant, target, "%s/%s" % (base, c.variant)))
    if requested and chosen is None:
        first, last = facts.variant_span(requested, m)
        if last and compare_pep440(target, last) > 0:
            alts.append(Alternative("torch", M("use torch <= %s to stay on %s", last, requested), requested, last, "%s/%s" % (base, requested)))
        elif first and compare_pep440(target, first) < 0:
            alts.append(Alternative("torch", M("use torch >= %s for %s", first, requested), requested, first, "%s/%s" % (base, requested)))
        return alts
    if chosen is not None and chosen.fits or kind not in ("cuda",):
        if chosen is None and kind == "default":
            newer = next((v for v in known if compare_pep440(v, target) > 0 and newest_fitting(facts, m, kind, [v])), None)
            older = newest_fitting(facts, m, kind, [v for v in known if compare_pep440(v, target) < 0])
            if newer and cands and all(c.no_wheel for c in cands):  # a Python this release has no wheel for: a newer one may
                alts.append(Alternative("torch", M("use torch >= %s (it has wheels for Python %s on %s)", newer, m.python_version, m.platform),
                                        "default", newer))
            if older:
                alts.append(Alternative("torch", M("use torch <= %s (the last release with wheels for %s)", older, m.platform), "default", older))
            if m.python_version and cands and all(c.no_wheel for c in cands):
                pys = [p for p in facts.pythons(target, m) if not p.endswith("t")]
                if pys:
                    alts.append(Alternative("python", M("use Python %s to %s for torch %s", pys[0], pys[-1], target), None, target))
        return alts
    # nothing fits (or the asked variant does not): what to change
    driver_fixes = [c for c in cands if c.driver_only and c.min_driver]
    if driver_fixes:
        best = max(driver_fixes, key=lambda c: tf.variant_sort_key(c.variant))
        low = min(driver_fixes, key=lambda c: version_key(c.min_driver))
        alts.append(Alternative("driver", M("upgrade the driver to at least %s (for torch %s %s)", low.min_driver, target, low.variant),
                                low.variant, target, "%s/%s" % (base, low.variant), low.min_driver))
        if best is not low:
            alts.append(Alternative("driver", M("upgrade the driver to at least %s (for torch %s %s)", best.min_driver, target, best.variant),
                                    best.variant, target, "%s/%s" % (base, best.variant), best.min_driver))
    older = [v for v in known if compare_pep440(v, target) < 0]
    newer = [v for v in known if compare_pep440(v, target) > 0]
    for version in reversed(older):
        best = best_fitting(evaluate(version, m, facts, kind)[0])
        if best:
            alts.append(Alternative("torch", M("use torch <= %s (torch %s %s fits this machine)", version, version, best.variant),
                                    best.variant, version, "%s/%s" % (base, best.variant)))
            break
    for version in newer:
        best = best_fitting(evaluate(version, m, facts, kind)[0])
        if best:
            alts.append(Alternative("torch", M("use torch >= %s with %s%s", version, best.variant, _why_newer(m, facts, cands)), best.variant, version,
                                    "%s/%s" % (base, best.variant)))
            break
    if not any(a.kind in ("torch", "driver") for a in alts) and cands and all(c.no_kernels for c in cands):
        alts.extend(no_build_options(m, facts))
    if m.python_version and all(c.no_wheel for c in cands) and cands:
        pys = [p for p in facts.pythons(target, m) if not p.endswith("t")]
        if pys:
            alts.append(Alternative("python", M("use Python %s to %s for torch %s", pys[0], pys[-1], target), None, target))
    return alts


def _why_newer(m: Machine, facts: Facts, cands: Sequence[Candidate]) -> str:
    """Why a newer torch, when it is the GPU's: this release's builds have no kernels for it, and all of them are of
    a CUDA older than the first whose builds can run on it (``data/cuda_arch.json``)."""
    lacking = [c for c in cands if c.no_kernels]
    if not lacking:
        return ""
    for _, cc in m.gpus:
        family = cuda_arch.gpu_min_cuda(cc, facts.t(cuda_arch.TABLE)) if cc else None
        if family and all(compare_versions(tf.variant_cuda(c.variant) or "0", family[0]) < 0 for c in lacking):
            return M(" (%s GPUs need CUDA >= %s builds)", family[1], family[0])
    return ""


def no_build_options(m: Machine, facts: Facts) -> List[Alternative]:
    """For GPUs no build in the tables has kernels for: the CPU build, a source build, the last torch with them (sm_35),
    or for a GPU newer than every build (sm_110) the first CUDA whose builds can have them (``data/cuda_arch.json``)."""
    ccs = [cc for _, cc in m.gpus if cc]
    names = ", ".join(tf.sm_name(cc) for cc in ccs) or M("this GPU")
    last = tf.last_torch_with_kernels(ccs, m.platform, facts.arch_table()) if ccs else None
    rows = facts.arch_rows(m)
    latest = max((r["to"] for r in rows), key=pep440_key, default=None)
    oldest = min((tf.cc_tuple(a) for r in rows if r["to"] == latest for a in r["archs"] if tf.cc_tuple(a)), default=None)
    # not older than what the newest builds still target: a GPU the builds do not know yet (sm_110), not one they dropped
    newer = [(cc, cuda_arch.gpu_min_cuda(cc, facts.t(cuda_arch.TABLE))) for cc in ccs if oldest and (tf.cc_tuple(cc) or (0, 0)) > oldest]
    newer = [(cc, family) for cc, family in newer if family]
    toolkit = (M("a CUDA toolkit >= %s", max((f[0] for _, f in newer), key=version_key)) if newer
               else M("a CUDA toolkit that still targets it"))
    out = [Alternative("variant", M("use the CPU build (torch with the cpu variant): it runs everywhere, without the GPU"), "cpu")]
    out.append(Alternative("source", M("build torch from source with TORCH_CUDA_ARCH_LIST=\"%s\" (and %s)",
                                       ";".join(".".join(str(x) for x in tf.cc_tuple(cc)) for cc in ccs), toolkit)))
    if last:
        out.append(Alternative("torch", M("the last torch with kernels for %s is torch %s %s", names, last[0], last[1]), last[1], last[0]))
    elif newer:
        out.append(Alternative("torch", M("no torch in the tables (up to %s) has kernels for %s yet: %s GPUs need builds of CUDA >= %s "
                                          "that target %s", facts.known_versions()[-1], names, newer[0][1][1], newer[0][1][0],
                                          tf.sm_name(newer[0][0]))))
    else:
        out.append(Alternative("torch", M("no torch in the tables (from %s) has kernels for %s: only older official builds did",
                                          facts.known_versions()[0], names)))
    return out
