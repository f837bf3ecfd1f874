"""Judge torch builds against a machine (pure: no I/O): which variants fit, which is best, which release fits.

A variant fits when there is a wheel for the Python, the driver is new enough for its CUDA runtime (and for every
GPU's family), and every visible GPU has kernels in its arch list (exact sm, same-major binary compatibility, or
PTX the driver can JIT). Among the variants that fit, the newest the driver runs natively wins (else the newest).
"""

from __future__ import annotations

from cudaenv.facts import drivers as drv
from cudaenv.facts import torch as tf
from cudaenv.facts import torch_policy as policy
from cudaenv.recommend.records import Candidate
from cudaenv.recommend.view import Facts, Machine
from cudaenv.core.version import compare_versions
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Sequence, Tuple


def judge_variant(version: str, variant: str, m: Machine, facts: Facts) -> Tuple[Candidate, List[str]]:
    """One build against the machine: Python, the driver (CUDA minimum, per-GPU floor), kernels for every GPU."""
    problems: List[str] = []
    notes: List[str] = []
    driver_problem = False
    min_driver = None
    no_kernels = False
    minor_compat = False
    py_ok = facts.python_ok(version, variant, m)
    if py_ok is False:
        problems.append(M("no torch %s %s wheel for Python %s", version, variant, m.python_version))
    cuda = tf.variant_cuda(variant)
    if cuda:
        min_driver = facts.min_driver(cuda, m.driver_system)
        if facts.beyond_tables(cuda) and min_driver:
            notes.append(M("CUDA %s (%s) is newer than the driver tables: it needs at least driver %s (the newest known minimum), "
                         "probably more", cuda, variant, min_driver))
        if m.driver and min_driver and compare_versions(m.driver, min_driver) < 0:
            problems.append(M("needs driver >= %s (this one is %s)", min_driver, m.driver))
            driver_problem = True
        for label, cc in m.gpus:
            floor = policy.gpu_min_driver(cc, m.driver_system, facts.t(policy.TABLE)) if cc else None
            if floor and m.driver and compare_versions(m.driver, floor[0]) < 0:
                problems.append(M("no driver below %s runs %s (%s, %s): the driver is the first fix", floor[0], label, floor[1], tf.sm_name(cc)))
                driver_problem = True
                if not min_driver or compare_versions(floor[0], min_driver) > 0:
                    min_driver = floor[0]
        minor_compat = drv.minor_compat_only(m.driver, cuda, m.driver_system, facts.t(drv.TABLE))
        ptx_jit_ok = m.driver is None or (m.native_cuda is not None and compare_versions(m.native_cuda, cuda) >= 0)
        archs, ptx, note = facts.arch(version, variant, m)
        if note:
            notes.append(note)
        if archs is not None:
            for label, cc in m.gpus:
                if not cc:
                    continue
                if tf.gpu_runs(tf.arch_list_of(archs, ptx), cc, ptx_jit_ok) is None:
                    problems.append(M("%s (%s) has no kernels in torch %s %s (%s)", label, tf.sm_name(cc), version, variant, describe_archs(archs, ptx)))
                    no_kernels = True
    no_wheel = py_ok is False
    only_driver = driver_problem and not (no_wheel or no_kernels)  # every problem is the driver's
    return Candidate(variant, tuple(problems), only_driver, min_driver, no_wheel, no_kernels, minor_compat), notes


def describe_archs(archs: Sequence[str], ptx: Optional[str]) -> str:
    names = [tf.sm_name(a) for a in sorted(archs, key=tf.cc_tuple)]
    text = M("built for %s", ", ".join(names)) if len(names) <= 3 else M("built for %s ... %s", names[0], names[-1])
    return text + (M(", PTX %s", tf.sm_name(ptx).replace("sm_", "compute_")) if ptx else M(", no PTX"))


def kind_wanted(m: Machine) -> str:
    if m.platform.startswith("macos"):
        return "default"
    if m.nvidia:
        return "cuda"
    if m.accelerator in ("rocm", "xpu") and not (m.accelerator == "rocm" and m.platform != "linux-x86_64"):
        return m.accelerator
    return "cpu"


def evaluate(version: str, m: Machine, facts: Facts, kind: str) -> Tuple[List[Candidate], List[str]]:
    notes: List[str] = []
    out = []
    for variant in facts.variants(version, m):
        if tf.variant_kind(variant) != kind:
            continue
        cand, n = judge_variant(version, variant, m, facts)
        out.append(cand)
        notes.extend(x for x in n if x not in notes)
    return out, notes


def best_fitting(cands: Sequence[Candidate]) -> Optional[Candidate]:
    """The newest fitting build the driver runs natively; the newest fitting one when each needs minor-version
    compatibility (a 580 driver gets cu130, not cu132: the same kernels, without the limited feature set that the
    doctor's ``driver-minor-compat`` describes)."""
    fitting = [c for c in cands if c.fits]
    native = [c for c in fitting if not c.minor_compat] or fitting
    return max(native, key=lambda c: tf.variant_sort_key(c.variant)) if native else None


def latest_known(facts: Facts, m: Machine) -> str:
    known = [v for v in facts.known_versions() if facts.variants(v, m)]
    return known[-1] if known else tf.latest_torch(facts.t(tf.VARIANTS))


def newest_fitting(facts: Facts, m: Machine, kind: str, known: Sequence[str]) -> Optional[str]:
    for version in reversed(list(known)):
        if kind == "default":
            if "default" in facts.variants(version, m) and facts.python_ok(version, "default", m) is not False:
                return version
            continue
        cands, _ = evaluate(version, m, facts, kind)
        if best_fitting(cands):
            return version
    return None



def uv_auto_pick(cands: Sequence[Candidate], m: Machine, facts: Facts) -> Optional[Candidate]:
    """The CUDA build uv's ``--torch-backend=auto`` would take: it reads only the driver (astral-sh/uv#14742;
    crates/uv-torch/src/backend.rs offers the CUDA indexes whose minimum driver the driver meets, newest first), never
    the GPUs' compute capability, so it takes the newest variant of this release whose CUDA the driver runs. The
    minimums are cudaenv's table (data/cuda_drivers.json), the same NVIDIA minimums uv's table is made from. None
    without a driver (uv then takes the CPU build)."""
    if not m.driver:
        return None
    runs = []
    for c in cands:
        cuda = tf.variant_cuda(c.variant)
        need = facts.min_driver(cuda, m.driver_system) if cuda else None
        if cuda and (need is None or compare_versions(m.driver, need) >= 0):
            runs.append(c)
    return max(runs, key=lambda c: tf.variant_sort_key(c.variant)) if runs else None
