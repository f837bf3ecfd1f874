"""What the doctor's renderers show besides the snapshot: the derived facts, computed once by the diagnosis side.

``render/report.py`` (text) and ``render/markdown.py`` read a :class:`ReportView` instead of calling the rules'
helpers and the facts tables themselves (renderers format; they do not compute facts).
"""

from typing import Any, Mapping, Optional, Tuple

from cudaenv.model.record import Record


class ReportView(Record):
    driver_version: Optional[str] = None  # the driver's version when it reads as one (userspace, else the module's)
    driver_system: str = "linux"  # which column of the driver tables applies (WSL 2: windows)
    driver_cuda: Optional[str] = None  # nvidia-smi's "CUDA Version", else what that driver ships (data/cuda_drivers.json)
    torch_min_driver: Optional[str] = None  # the minimum driver for torch's CUDA (minor-version compatibility)
    static_arch_list: Optional[Tuple[str, ...]] = None  # torch's arch list from data/torch_arch.json when not imported
    checklist: Optional[Tuple[Tuple[str, Tuple[str, ...]], ...]] = None  # (checklist row, the finding ids it shows)
    framework_verdicts: Tuple[Tuple[str, str], ...] = ()  # (package, verdict) of each framework (diagnose.frameworks)
    framework_findings: Tuple[Tuple[str, str], ...] = ()  # (package, the finding id its verdict is, "" for none)
    framework_min_drivers: Tuple[Tuple[str, str], ...] = ()  # (package, the lowest driver its CUDA build runs on)
    library_verdicts: Tuple[Tuple[str, str], ...] = ()  # (consumer, the id of its libraries' worst problem or "")


def build_view(snapshot: Any, tables: Optional[Mapping[str, Any]] = None) -> ReportView:
    """The derived facts of ``snapshot`` the doctor's reports show (``tables``: as for the rules; None = data/)."""
    from cudaenv.diagnose import _common as c
    from cudaenv.diagnose import frameworks as fw
    from cudaenv.diagnose.versions import static_arch_list
    from cudaenv.facts import drivers as drv
    from cudaenv.facts.findings import checklist

    s = snapshot
    system = c.driver_system(s)
    t = s.torch
    need = drv.min_driver_for_cuda(t.cuda, system) if t is not None and t.installed and t.cuda else None
    frameworks = tuple(getattr(s, "frameworks", ()) or ())
    minimums = tuple((f.package, m) for f, m in ((f, fw.min_driver(s, f, tables)) for f in frameworks) if m)
    verdicts = fw.verdicts(s, tables) if frameworks else ()
    return ReportView(c.driver_version(s), system, c.driver_cuda(s, tables), need, static_arch_list(s, tables), checklist(),
                      verdicts, tuple((p, fw.VERDICT_FINDING.get(v, "")) for p, v in verdicts), minimums,
                      fw.library_verdicts(s) if getattr(s, "libraries", ()) else ())
