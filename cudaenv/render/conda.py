"""The conda and pixi parts of a torch recommendation as a person reads them: where the packages come from, the
manifest lines to add first, and the machine as a conda or pixi solver sees it (its virtual packages)."""

from typing import Any, List, Optional

from cudaenv.core.i18n import N_, t
from cudaenv.core.text import printable

SOLVER_SOURCES = {
    "driver": N_("the driver's own CUDA"),
    "CONDA_OVERRIDE_CUDA": N_("set by CONDA_OVERRIDE_CUDA"),
    "GPUs": N_("the lowest compute capability; only with the nvidia-virtual-packages plugin"),
    "libc": N_("the C library"),
    "kernel": N_("the kernel release"),
    "system": "",
    "unknown": N_("not known here"),
}


def _note(kind: str, plan: Any, rec: Any, solver: Optional[str]) -> str:
    builds = plan.cuda_version or t("none")
    manifest = getattr(getattr(rec, "solver", None), "manifest", None) or t("the manifest")
    if kind == "minor-compat":
        return t("the driver's own CUDA is %s; cuda-version %s is the oldest conda-forge build of this release, and it runs "
                 "here through CUDA minor-version compatibility", solver or "?", builds)
    if kind == "no-build":
        return t("conda-forge has no CUDA build of torch %s this driver runs (data/conda_torch.json): this is the PyPI wheel "
                 "of the %s index, installed by %s", rec.torch_version, rec.variant, plan.installer)
    if kind == "arch-too-old":
        return t("conda-forge's CUDA 13 builds need compute capability 7.5 (sm_75) or newer: left out for this GPU")
    if kind == "channel-missing":
        return t("%s does not list the conda-forge channel: add it to the workspace's channels first", manifest)
    if kind == "declare-cuda":
        return t("%s declares no CUDA for the solver, so pixi would refuse pytorch-gpu (or solve the CPU build): add the "
                 "lines below first, then run the command", manifest)
    if kind == "manifest-above-driver":
        return t("%s declares a CUDA above the build chosen: set it to the lines below first", manifest)
    if kind == "no-manifest":
        return t("no pixi manifest was found above the probed interpreter: run the command in your workspace")
    return kind


def render_conda(rec: Any, width: int = 80) -> List[str]:
    """The lines after the install command: source, notes, manifest snippet, then the solver's view."""
    from cudaenv.render.text import wrap

    def prose(text: str, first: str, rest: str) -> List[str]:
        return wrap(printable(text), first, rest, width, long_words="keep")

    lines: List[str] = []
    plan = getattr(rec, "conda_install", None)
    view = getattr(rec, "solver", None)
    solver = next((p.value for p in (view.packages if view else ()) if p.name == "__cuda"), None)
    if plan is not None:
        lines.append("")
        if plan.route == "conda-forge":
            pins = ", ".join(plan.packages)
            said = (t("from the %s channel (--override-channels: no other channel may supply them): %s", plan.channel, pins)
                    if plan.installer == "conda" else t("from the %s channel: %s", plan.channel, pins))
            lines += prose(said, "%s: " % plan.installer, "    ")
        else:
            lines += prose(t("the PyPI wheel (%s)", ", ".join(plan.packages)), "%s: " % plan.installer, "    ")
        for kind in plan.notes:
            lines += prose(_note(kind, plan, rec, solver), t("note: "), "      ")
        if plan.snippet:
            where = (view.manifest if view is not None and view.manifest else t("pixi.toml (or [tool.pixi.*] in pyproject.toml)"))
            lines += ["", t("Add to %s:", printable(where))] + ["  " + printable(s) for s in plan.snippet]
    if view is not None:
        lines += ["", t("What a conda or pixi solver sees here (virtual packages):")]
        for p in view.packages:
            why = SOLVER_SOURCES.get(p.source, p.source)
            lines += prose("%-12s %s%s" % (p.name, p.value or t("none"), t("  (%s)", t(why)) if why else ""), "  ", "    ")
        if view.declare_cuda:
            lines += prose(t('a pixi manifest for this machine declares [system-requirements] cuda = "%s" (the driver\'s CUDA '
                             'major: a higher one makes pixi refuse to run here)', view.declare_cuda), "  ", "    ")
        if view.problem:
            lines += prose(solver_problem(view, solver), t("problem: "), "    ")
    return lines


def solver_problem(view: Any, solver: Optional[str]) -> str:
    """The sentence for a SolverView's problem (also the doctor's finding detail)."""
    if view.problem == "manifest-above-driver":
        return t('%s declares cuda = "%s", above this driver\'s CUDA %s: pixi refuses to install or run the environment '
                 'here ("the current system has a mismatching virtual package"); lower it to "%s" or update the driver',
                 view.manifest, view.manifest_cuda, solver or "?", view.declare_cuda or "?")
    if view.problem == "manifest-missing-cuda":
        return t('%s declares no CUDA ([system-requirements] cuda): pixi solves CPU-only builds of torch on this GPU '
                 'machine; add cuda = "%s"', view.manifest, view.declare_cuda or "12")
    if view.problem == "override-above-driver":
        return t("CONDA_OVERRIDE_CUDA=%s is above this driver's CUDA: the solver will install builds the driver cannot run",
                 solver)
    return view.problem or ""
