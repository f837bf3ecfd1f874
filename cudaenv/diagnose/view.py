"""The doctor's facts view: the facts its reports show that are derived from the snapshot, computed once here.

The three renderers of the doctor's facts (``render/report.py``, the checklist; ``render/markdown.py``, the
paste-ready table; ``render/facts.py``, ``--verbose``'s every fact) each word the same :class:`ReportView` in their
own format; none calls the rules' helpers or the facts tables, or derives a fact, itself (renderers format; they do
not compute). :func:`build_view` is pure; the command builds it once and hands it to the renderer.
"""

from __future__ import annotations

from cudaenv.model.record import Record
from cudaenv.model.reports import ImageFacts
from cudaenv.model.snapshot import ToolStatus

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Mapping, Optional, Tuple


class ReportView(Record):
    driver_version: Optional[str] = None  # the driver's version when it reads as one (userspace, else the module's)
    driver_system: str = "linux"  # which column of the driver tables applies (WSL 2: windows)
    driver_cuda: Optional[str] = None  # nvidia-smi's "CUDA Version", else what that driver ships (data/cuda_drivers.json)
    torch_min_driver: Optional[str] = None  # the minimum driver for torch's CUDA (minor-version compatibility)
    static_arch_list: Optional[Tuple[str, ...]] = None  # torch's arch list from data/torch_arch.json when not imported
    checklist: Optional[Tuple[Tuple[str, Tuple[str, ...]], ...]] = None  # (checklist row, the finding ids it shows)
    driver_shown: Optional[str] = None  # the driver as reported: userspace version, else the kernel module's
    l4t: Optional[str] = None  # a Jetson: its L4T release (the driver's version when the release file is missing)
    jetpack: Optional[str] = None  # ... and its JetPack
    failed_tools: Tuple[ToolStatus, ...] = ()  # the probes' tools that did not answer (nvidia-smi, NVML, ...)
    gpu_capabilities: Tuple[str, ...] = ()  # the GPUs' compute capabilities, each once, sorted
    torch_build: Optional[str] = None  # "cuda" | "rocm" | "cpu" for an installed torch
    torch_devices: Optional[str] = None  # what torch said of its devices: "known" | "unknown" | "import-failed" | "not-imported"
    toolkit_marks: Tuple[Tuple[str, ...], ...] = ()  # per snapshot toolkit: "active", "/usr/local/cuda", "CUDA_HOME"
    toolkits_in_ld_library_path: Tuple[str, ...] = ()  # the toolkit folders LD_LIBRARY_PATH names
    cuda_home: Optional[str] = None  # CUDA_HOME, else CUDA_PATH, as set
    framework_verdicts: Tuple[Tuple[str, str], ...] = ()  # (package, verdict) of each framework (diagnose.frameworks)
    framework_findings: Tuple[Tuple[str, str], ...] = ()  # (package, the finding id its verdict is, "" for none)
    framework_min_drivers: Tuple[Tuple[str, str], ...] = ()  # (package, the lowest driver its CUDA build runs on)
    library_verdicts: Tuple[Tuple[str, str], ...] = ()  # (consumer, the id of its libraries' worst problem or "")
    extension_findings: Tuple[Tuple[str, str], ...] = ()  # (extension module's path, its finding id or "")
    import_findings: Tuple[Tuple[str, str], ...] = ()  # (module imported by doctor --import, its finding id or "")
    solver: Tuple[Tuple[str, Optional[str]], ...] = ()  # a conda or pixi env's: (virtual package, what its solver sees)
    image: Optional[ImageFacts] = None  # `doctor --image REF`: the image read
    image_need: Optional[str] = None  # ... the driver it needs (diagnose.image.image_need), None when nothing says


def build_view(snapshot: Any, tables: Optional[Mapping[str, Any]] = None, image: Optional[ImageFacts] = None) -> ReportView:
    """The derived facts of ``snapshot`` the doctor's reports show (``tables``: as for the rules; None = data/;
    ``image``: what ``doctor --image`` read)."""
    from cudaenv.diagnose import _common as c
    from cudaenv.diagnose import framework_imports as fi
    from cudaenv.diagnose import frameworks as fw
    from cudaenv.diagnose.versions import static_arch_list
    from cudaenv.facts import drivers as drv
    from cudaenv.facts.findings import checklist

    s = snapshot
    system = c.driver_system(s)
    t = s.torch
    installed = t is not None and t.installed
    frameworks = tuple(getattr(s, "frameworks", ()) or ())
    minimums = tuple((f.package, m) for f, m in ((f, fw.min_driver(s, f, tables)) for f in frameworks) if m)
    verdicts = fw.verdicts(s, tables) if frameworks else ()
    need = drv.min_driver_for_cuda(t.cuda, system) if installed and t.cuda else None
    d = s.driver
    shown = (d.version or d.kernel_module_version) if d is not None else None
    j = s.platform.jetson
    env = s.env_map
    return ReportView(
        c.driver_version(s), system, c.driver_cuda(s, tables), need, static_arch_list(s, tables), checklist(),
        driver_shown=shown or None,
        l4t=(j.l4t or shown) if j is not None else None,
        jetpack=j.jetpack if j is not None else None,
        failed_tools=tuple(x for x in s.tools if x.status != "ok"),
        gpu_capabilities=tuple(sorted({g.compute_capability for g in s.gpus if g.compute_capability})),
        torch_build=(("cuda" if t.cuda else "rocm" if t.hip else "cpu") if installed else None),
        torch_devices=_torch_devices(t) if installed else None,
        toolkit_marks=tuple(tuple(m for m, on in (("active", tk.active), ("/usr/local/cuda", tk.is_link_target),
                                                    ("CUDA_HOME", tk.is_cuda_home)) if on) for tk in s.toolkits),
        toolkits_in_ld_library_path=tuple(tk.path for tk in s.toolkits if tk.in_ld_library_path),
        cuda_home=env.get("CUDA_HOME") or env.get("CUDA_PATH"),
        framework_verdicts=verdicts,
        framework_findings=tuple((p, fw.VERDICT_FINDING.get(v, "")) for p, v in verdicts),
        framework_min_drivers=minimums,
        library_verdicts=fw.library_verdicts(s) if getattr(s, "libraries", ()) else (),
        extension_findings=tuple((e.object, "extension-abi-mismatch" if e.missing_count else "")
                                 for e in getattr(s, "extensions", ())),
        import_findings=tuple((i.module, fi.verdict(s, i)) for i in getattr(s, "framework_imports", ())),
        solver=_solver(s, tables),
        image=image,
        image_need=_image_need(s, image, tables),
    )


def _solver(s: Any, tables: Optional[Mapping[str, Any]]) -> Tuple[Tuple[str, Optional[str]], ...]:
    """What a conda or pixi solver sees on this machine, for the probed interpreter's conda or pixi env."""
    if getattr(getattr(s, "python_env", None), "kind", None) not in ("conda", "pixi"):
        return ()
    from cudaenv.recommend.conda import solver_view
    from cudaenv.recommend.request import request_from_snapshot

    return tuple((p.name, p.value) for p in solver_view(request_from_snapshot(s), tables).packages)


def _image_need(s, image, tables) -> Optional[str]:
    if image is None or not image.readable:
        return None
    from cudaenv.diagnose import _common as c
    from cudaenv.diagnose.image import image_need

    return image_need(image, c.driver_system(s), tables)["driver"]


def _torch_devices(t) -> str:
    if t.import_error:
        return "import-failed"
    if not t.dynamic:
        return "not-imported"
    return "known" if t.device_count is not None and t.cuda_available is not None else "unknown"
