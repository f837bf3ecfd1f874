"""`cudaenv doctor`'s one service: probe the machine, diagnose the snapshot, build the facts view.

:func:`doctor` collects the snapshot through the Host (:mod:`cudaenv.probes.collect`), runs the pure rules and
builds the doctor's facts view (:mod:`cudaenv.diagnose.view`) once for whichever renderer formats it. The exit code
is the outcome's (:func:`cudaenv.diagnose.exit_code`: 1 on an error finding, with ``strict`` on a warning too).
"""

from typing import Any, Optional, Sequence


class DoctorOutcome:
    """The snapshot, its findings, the host name, the facts view, whether warnings fail (``strict``), and the check
    against a stack file (``against``: a :class:`cudaenv.model.reports.StackCheck`, set by ``doctor --against``)."""

    __slots__ = ("snapshot", "findings", "hostname", "view", "strict", "against")

    def __init__(self, snapshot, findings: Sequence, hostname: Optional[str], view, strict: bool = False):
        self.snapshot, self.findings, self.hostname = snapshot, tuple(findings), hostname
        self.view, self.strict = view, strict
        self.against = None

    @property
    def exit_code(self) -> int:
        from cudaenv.diagnose import exit_code

        differs = 1 if self.against is not None and self.against.differences else 0
        return max(exit_code(self.findings, strict=self.strict), differs)

    def report(self):
        """The JSON contract's DoctorReport (the snapshot, findings, host name, and when it was made, in UTC)."""
        import time

        from cudaenv.model.reports import DoctorReport

        return DoctorReport(self.snapshot, hostname=self.hostname, findings=self.findings, against=self.against,
                            generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def doctor(host, python: Optional[str] = None, quick: bool = False, strict: bool = False, progress: Any = None,
           import_frameworks: bool = False) -> DoctorOutcome:
    """Probe ``host`` (``python``: the interpreter whose torch to inspect; ``quick``: never import torch;
    ``import_frameworks``: import each framework found in a child of that interpreter)."""
    from cudaenv.diagnose import diagnose
    from cudaenv.diagnose.view import build_view
    from cudaenv.probes.collect import collect_snapshot

    snapshot = collect_snapshot(host, python=python, quick=quick, progress=progress, import_frameworks=import_frameworks)
    findings = diagnose(snapshot)
    return DoctorOutcome(snapshot, findings, host.hostname(), build_view(snapshot), strict)
