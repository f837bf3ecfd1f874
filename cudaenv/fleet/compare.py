"""The one comparison of doctor reports: what differs between two sets of facts, used by ``cudaenv diff A.json B.json``
(every fact, grouped by the doctor's sections) and by ``fleet summarize`` (a node's configuration against the majority
or ``--baseline``).

Pure: a report's facts are ``(section, fact, value)`` strings (:func:`report_facts`), compared by
:func:`differences`; :func:`compare_reports` adds the findings that appeared and went. Values come from report files,
untrusted: a renderer escapes them.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from cudaenv.fleet.records import FactChange, FindingChange, ReportDiff

# The doctor's sections, in its order (render.report's checklist): the facts of a report are grouped by them.
SECTIONS = ("environment", "driver", "visibility", "versions", "toolkits")
_MAX_VALUE = 200  # a longer value (a hostile report) is cut


def differences(before: Iterable[Tuple[str, str]], after: Iterable[Tuple[str, str]]
                ) -> Tuple[Tuple[str, Optional[str], Optional[str]], ...]:
    """``(key, before's value, after's value)`` for each key whose value differs, None where a side lacks the key:
    ``before``'s keys in their order, then the keys only ``after`` has, in theirs."""
    old: Dict[str, str] = dict(before)
    new: Dict[str, str] = dict(after)
    out = [(k, v, new.get(k)) for k, v in old.items() if new.get(k) != v]
    out += [(k, None, v) for k, v in new.items() if k not in old]
    return tuple(out)


def _s(value) -> str:
    text = value if isinstance(value, str) else str(value)
    return text[:_MAX_VALUE]


def _package(spec: str) -> Tuple[str, str]:
    """``nvidia-cudnn-cu12==9.1.0.70`` -> (``nvidia-cudnn-cu12``, ``9.1.0.70``)."""
    name, _, version = spec.partition("==")
    return name.strip(), version.strip() or "installed"


def report_facts(report) -> Tuple[Tuple[str, str, str], ...]:
    """Every fact of a doctor report a comparison looks at, as ``(section, fact, value)`` (the doctor's sections).
    Values that change by the minute (memory in use, processes, the time) are left out: they are no change of the
    setup."""
    s = report.snapshot
    out: List[Tuple[str, str, str]] = []

    def add(section, fact, value):
        if value is not None and value != "":
            out.append((section, fact, _s(value)))

    p = s.platform
    add("environment", "system", p.distro or p.system)
    add("environment", "machine", p.machine)
    add("environment", "kernel", p.kernel)
    add("environment", "WSL", ("WSL %d" % p.wsl) if isinstance(p.wsl, int) and p.wsl else "no")
    add("environment", "container", p.container or "no")
    d = s.driver
    add("driver", "driver", d.version if d is not None and d.version else "none")
    if d is not None:
        add("driver", "driver CUDA", d.cuda_version)
        if d.kernel_module or d.kernel_module_version:
            add("driver", "kernel module", " ".join(_s(x) for x in (d.kernel_module, d.kernel_module_version) if x))
    for g in s.gpus or ():
        add("driver", "GPU %s" % _s(g.index), "%s, compute %s" % (_s(g.name or "?"), _s(g.compute_capability or "?")))
    v = s.visible_devices
    add("visibility", "CUDA_VISIBLE_DEVICES", "unset" if v.cuda_visible_devices is None else v.cuda_visible_devices)
    add("visibility", "CUDA_DEVICE_ORDER", v.device_order or "unset")
    t = s.torch
    if t is None or not t.installed:
        add("versions", "torch", "not installed")
    else:
        add("versions", "torch", t.version or "unknown")
        add("versions", "torch CUDA", t.cuda or ("ROCm %s" % t.hip if t.hip else "none (CPU-only)"))
        add("versions", "torch cuDNN", t.cudnn)
        add("versions", "torch NCCL", t.nccl)
        for spec in tuple(t.companions or ()) + tuple(t.nvidia_packages or ()):
            name, version = _package(_s(spec))
            add("versions", name, version)
    if t is not None:
        add("versions", "Python", t.python_version)
        add("versions", "interpreter", t.python)
        add("versions", "installer", t.installer)
    a = s.active_toolkit
    add("toolkits", "active toolkit",
        "%s (CUDA %s)" % (_s(a.path or a.nvcc), _s(a.version or "?")) if a is not None and (a.path or a.nvcc) else "none")
    for k in s.toolkits or ():
        add("toolkits", "toolkit %s" % _s(k.path), "%s (%s)" % (_s(k.version or "?"), _s(k.install_method)))
    link = s.cuda_symlink
    if link is not None:
        add("toolkits", link.path, "-> %s%s" % (_s(link.target), " (dangling)" if link.dangling else ""))
    env = s.env_map
    add("toolkits", "CUDA_HOME", env.get("CUDA_HOME") or env.get("CUDA_PATH") or "unset")
    for c in s.cudnn or ():
        add("toolkits", "cuDNN %s" % _s(c.header or c.source), _s(c.version or "?"))
    return tuple(out)


def _keyed(facts: Sequence[Tuple[str, str, str]]) -> List[Tuple[str, str]]:
    return [("%s\0%s" % (section, fact), value) for section, fact, value in facts]


def compare_reports(before, after, before_file: str = "", after_file: str = "") -> ReportDiff:
    """What changed from ``before`` to ``after`` (two :class:`DoctorReport`): the facts, section by section in the
    doctor's order, and the findings that appeared or went (by id)."""
    changes = []
    for key, old, new in differences(_keyed(report_facts(before)), _keyed(report_facts(after))):
        section, _, fact = key.partition("\0")
        changes.append(FactChange(section=section, fact=fact, before=old, after=new))
    order = {name: i for i, name in enumerate(SECTIONS)}
    changes.sort(key=lambda c: order.get(c.section, len(SECTIONS)))  # stable: each section's facts keep their order
    was = {_s(f.id): f for f in before.findings or ()}
    now = {_s(f.id): f for f in after.findings or ()}
    appeared = tuple(FindingChange(id=i, severity=_s(f.severity), title=_s(f.title)) for i, f in now.items() if i not in was)
    gone = tuple(FindingChange(id=i, severity=_s(f.severity), title=_s(f.title)) for i, f in was.items() if i not in now)
    return ReportDiff(before_file=before_file, after_file=after_file,
                      before_host=_s(before.hostname) if before.hostname else None,
                      after_host=_s(after.hostname) if after.hostname else None,
                      before_at=_s(before.generated_at) if before.generated_at else None,
                      after_at=_s(after.generated_at) if after.generated_at else None,
                      changes=tuple(changes), findings_new=appeared, findings_gone=gone)
