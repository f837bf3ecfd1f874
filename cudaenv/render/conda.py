"""The conda and pixi parts of a torch recommendation as a person reads them: where the packages come from, the
manifest lines to add first, and the machine as a conda or pixi solver sees it (its virtual packages)."""

from typing import Any, List, Optional

from cudaenv.core.text import printable

SOLVER_SOURCES = {
    "driver": "the driver's own CUDA",
    "CONDA_OVERRIDE_CUDA": "set by CONDA_OVERRIDE_CUDA",
    "GPUs": "the lowest compute capability; only with the nvidia-virtual-packages plugin",
    "libc": "the C library",
    "kernel": "the kernel release",
    "system": "",
    "unknown": "not known here",
}


def _note(kind: str, plan: Any, rec: Any, solver: Optional[str]) -> str:
    builds = plan.cuda_version or "none"
    manifest = getattr(getattr(rec, "solver", None), "manifest", None) or "the manifest"
    return {
        "minor-compat": "the driver's own CUDA is %s; cuda-version %s is the oldest conda-forge build of this release, and "
                        "it runs here through CUDA minor-version compatibility" % (solver or "?", builds),
        "no-build": "conda-forge has no CUDA build of torch %s this driver runs (data/conda_torch.json): this is the PyPI "
                    "wheel of the %s index, installed by %s" % (rec.torch_version, rec.variant, plan.installer),
        "arch-too-old": "conda-forge's CUDA 13 builds need compute capability 7.5 (sm_75) or newer: left out for this GPU",
        "channel-missing": "%s does not list the conda-forge channel: add it to the workspace's channels first" % manifest,
        "declare-cuda": "%s declares no CUDA for the solver, so pixi would refuse pytorch-gpu (or solve the CPU build): "
                        "add the lines below first, then run the command" % manifest,
        "manifest-above-driver": "%s declares a CUDA above the build chosen: set it to the lines below first" % manifest,
        "no-manifest": "no pixi manifest was found above the probed interpreter: run the command in your workspace",
    }.get(kind, kind)


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
            only = " (--override-channels: no other channel may supply them)" if plan.installer == "conda" else ""
            lines += prose("from the %s channel%s: %s" % (plan.channel, only, pins), "%s: " % plan.installer, "    ")
        else:
            lines += prose("the PyPI wheel (%s)" % ", ".join(plan.packages), "%s: " % plan.installer, "    ")
        for kind in plan.notes:
            lines += prose(_note(kind, plan, rec, solver), "note: ", "      ")
        if plan.snippet:
            where = (view.manifest if view is not None and view.manifest else "pixi.toml (or [tool.pixi.*] in pyproject.toml)")
            lines += ["", "Add to %s:" % printable(where)] + ["  " + printable(s) for s in plan.snippet]
    if view is not None:
        lines += ["", "What a conda or pixi solver sees here (virtual packages):"]
        for p in view.packages:
            why = SOLVER_SOURCES.get(p.source, p.source)
            lines += prose("%-12s %s%s" % (p.name, p.value or "none", "  (%s)" % why if why else ""), "  ", "    ")
        if view.declare_cuda:
            lines += prose('a pixi manifest for this machine declares [system-requirements] cuda = "%s" (the driver\'s CUDA '
                           'major: a higher one makes pixi refuse to run here)' % view.declare_cuda, "  ", "    ")
        if view.problem:
            lines += prose(solver_problem(view, solver), "problem: ", "    ")
    return lines


def solver_problem(view: Any, solver: Optional[str]) -> str:
    """The sentence for a SolverView's problem (also the doctor's finding detail)."""
    if view.problem == "manifest-above-driver":
        return ('%s declares cuda = "%s", above this driver\'s CUDA %s: pixi refuses to install or run the environment '
                'here ("the current system has a mismatching virtual package"); lower it to "%s" or update the driver'
                % (view.manifest, view.manifest_cuda, solver or "?", view.declare_cuda or "?"))
    if view.problem == "manifest-missing-cuda":
        return ('%s declares no CUDA ([system-requirements] cuda): pixi solves CPU-only builds of torch on this GPU '
                'machine; add cuda = "%s"' % (view.manifest, view.declare_cuda or "12"))
    if view.problem == "override-above-driver":
        return ("CONDA_OVERRIDE_CUDA=%s is above this driver's CUDA: the solver will install builds the driver cannot run"
                % solver)
    return view.problem or ""
