"""``cudaenv doctor --format prometheus``: one node's report in the Prometheus text exposition format, for
node_exporter's textfile collector (``--collector.textfile.directory``; write it with ``--output DIR/``: the file
appears atomically, as the collector asks).

Every family has its ``# HELP`` and ``# TYPE`` lines and is written once, its samples together; every metric is a
gauge (the state when the doctor ran). Label values are strings from outside (a GPU name, a path): escaped for the
terminal first (:func:`cudaenv.core.text.printable`: no control characters at all), then as the format asks (backslash,
double quote, newline)::

    # HELP cudaenv_finding A finding of the doctor on this node (1 per finding id).
    # TYPE cudaenv_finding gauge
    cudaenv_finding{id="torch-cpu-only",severity="error"} 1
"""

from __future__ import annotations

import calendar
import time
from typing import List, Optional, Sequence, Tuple

from cudaenv.diagnose import SEVERITIES
from cudaenv.model.schema import SCHEMA_VERSION
from cudaenv.core.text import printable


def label_value(value: object) -> str:
    """A label value as the exposition format writes it between double quotes: a newline as ``\\n`` (the format's
    own escape), every other control character as :func:`cudaenv.core.text.printable` shows it, then backslashes and
    double quotes escaped (so printable's ``\\x1b`` reads back as those four characters)."""
    text = "\n".join(printable(part) for part in str("" if value is None else value).split("\n"))
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sample(name: str, labels: Sequence[Tuple[str, object]], value: object) -> str:
    if labels:
        name += "{" + ",".join('%s="%s"' % (k, label_value(v)) for k, v in labels) + "}"
    return "%s %s" % (name, value)


def _bool(value: Optional[bool]) -> str:
    return "unknown" if value is None else ("true" if value else "false")


def _epoch(stamp: Optional[str]) -> Optional[int]:
    try:
        return calendar.timegm(time.strptime(stamp or "", "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


def render_prometheus(report) -> str:
    """The report (:class:`cudaenv.model.reports.DoctorReport`) as exposition text, ending with a newline."""
    s = report.snapshot
    families: List[Tuple[str, str, List[str]]] = []

    def family(name: str, help_text: str, samples: List[str]) -> None:
        families.append((name, help_text, samples))

    family("cudaenv_info", "The cudaenv that wrote this report (version, schema_version) and the node's host name.",
           [_sample("cudaenv_info", (("version", s.cudaenv_version or ""), ("schema_version", SCHEMA_VERSION),
                                     ("hostname", report.hostname or "")), 1)])
    stamp = _epoch(report.generated_at)
    if stamp is not None:
        family("cudaenv_report_timestamp_seconds", "When the doctor ran, in seconds since the epoch (UTC).",
               [_sample("cudaenv_report_timestamp_seconds", (), stamp)])
    driver = s.driver
    family("cudaenv_driver_info", "The NVIDIA driver (1 when one answered): its version and the highest CUDA it supports.",
           [_sample("cudaenv_driver_info", (("version", driver.version or ""), ("cuda", driver.cuda_version or ""),
                                            ("kernel_module", driver.kernel_module or "")), 1)]
           if driver is not None and driver.version else [])
    family("cudaenv_gpu_count", "GPUs the driver reports.", [_sample("cudaenv_gpu_count", (), len(s.gpus))])
    family("cudaenv_gpu_info", "One per GPU the driver reports: its index, model and compute capability.",
           [_sample("cudaenv_gpu_info", (("index", g.index), ("name", g.name or ""),
                                         ("compute_capability", g.compute_capability or "")), 1) for g in s.gpus])
    family("cudaenv_toolkit_info", "One per CUDA toolkit found: its version, folder and whether it is the active one.",
           [_sample("cudaenv_toolkit_info", (("version", t.version or ""), ("path", t.path), ("active", _bool(t.active))), 1)
            for t in s.toolkits])
    family("cudaenv_cudnn_info", "One per cuDNN found: its version and where it comes from.",
           [_sample("cudaenv_cudnn_info", (("version", c.version or ""), ("source", c.source)), 1) for c in s.cudnn])
    torch = s.torch
    family("cudaenv_torch_info", "The torch of the inspected Python (1 when installed): its build, its CUDA and "
           "whether CUDA worked.",
           [_sample("cudaenv_torch_info", (("version", torch.version or ""), ("cuda", torch.cuda or ""),
                                           ("cuda_available", _bool(torch.cuda_available))), 1)]
           if torch is not None and torch.installed else [])
    counts = {sev: 0 for sev in SEVERITIES}
    for f in report.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    family("cudaenv_findings", "How many findings the doctor has on this node, by severity.",
           [_sample("cudaenv_findings", (("severity", sev),), n) for sev, n in counts.items()])
    seen = set()
    rows = []
    for f in report.findings:
        if (f.id, f.severity) not in seen:  # one sample per label set
            seen.add((f.id, f.severity))
            rows.append(_sample("cudaenv_finding", (("id", f.id), ("severity", f.severity)), 1))
    family("cudaenv_finding", "A finding of the doctor on this node (1 per finding id).", rows)
    family("cudaenv_healthy", "1 when the doctor found no error on this node, 0 otherwise.",
           [_sample("cudaenv_healthy", (), 0 if counts.get("error") else 1)])
    out: List[str] = []
    for name, help_text, samples in families:
        out.append("# HELP %s %s" % (name, help_text))
        out.append("# TYPE %s gauge" % name)
        out.extend(samples)
    return "\n".join(out) + "\n"
