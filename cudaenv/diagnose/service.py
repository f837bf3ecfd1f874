"""`cudaenv doctor`'s one service: probe the machine, diagnose the snapshot, build the facts view.

:func:`doctor` collects the snapshot through the Host (:mod:`cudaenv.probes.collect`), runs the pure rules and
builds the doctor's facts view (:mod:`cudaenv.diagnose.view`) once for whichever renderer formats it. The exit code
is the outcome's (:func:`cudaenv.diagnose.exit_code`: 1 on an error finding, with ``strict`` on a warning too).
"""

from typing import Any, Optional, Sequence


class DoctorOutcome:
    """The snapshot, its findings, the host name, the facts view, whether warnings fail (``strict``), and the check
    against a stack file (``against``: a :class:`cudaenv.model.reports.StackCheck`, set by ``doctor --against``)."""

    __slots__ = ("snapshot", "findings", "hostname", "view", "strict", "against", "image", "sections")

    def __init__(self, snapshot, findings: Sequence, hostname: Optional[str], view, strict: bool = False, image=None,
                 sections: Optional[Sequence[str]] = None):
        self.snapshot, self.findings, self.hostname = snapshot, tuple(findings), hostname
        self.view, self.strict = view, strict
        self.sections = tuple(sections) if sections else None  # `doctor --frameworks`: the sections shown, None: all
        self.against = None
        self.image = image  # `doctor --image REF`: the ImageFacts read

    @property
    def exit_code(self) -> int:
        from cudaenv.diagnose import exit_code

        differs = 1 if self.against is not None and self.against.differences else 0
        return max(exit_code(self.findings, strict=self.strict), differs)

    def report(self):
        """The JSON contract's DoctorReport (the snapshot, findings, host name, and when it was made, in UTC)."""
        import time

        from cudaenv.model.reports import DoctorReport

        return DoctorReport(self.snapshot, hostname=self.hostname, findings=self.findings, against=self.against, image=self.image,
                            generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def doctor(host, python: Optional[str] = None, quick: bool = False, strict: bool = False, progress: Any = None,
           image: Optional[str] = None, cwd: str = ".", import_frameworks: bool = False,
           sections: Optional[Sequence[str]] = None) -> DoctorOutcome:
    """Probe ``host`` (``python``: the interpreter whose torch to inspect; ``quick``: never import torch; ``image``: a
    saved image, OCI layout or inspect JSON to check against this machine's driver, a path relative to ``cwd``;
    ``import_frameworks``: import each framework found in a child of that interpreter; ``sections``: keep only the
    findings of these doctor sections, ``("frameworks",)`` for ``doctor --frameworks``)."""
    from cudaenv.probes.collect import collect_snapshot

    snapshot = collect_snapshot(host, python=python, quick=quick, progress=progress, beside=_load_rules,
                                import_frameworks=import_frameworks)
    from cudaenv.diagnose import diagnose, in_section_order
    from cudaenv.diagnose.view import build_view

    findings = diagnose(snapshot)
    facts = None
    if image is not None:
        from cudaenv.diagnose import image as image_rules
        from cudaenv.probes.image import probe_image

        facts = probe_image(image, cwd, host=host)
        findings = in_section_order(findings + tuple(image_rules.check(snapshot, facts)))
    if sections:
        findings = tuple(f for f in findings if f.section in sections)
    return DoctorOutcome(snapshot, findings, host.hostname(), build_view(snapshot, image=facts), strict, image=facts,
                         sections=sections)


def _load_rules() -> None:
    """Import the rules, the view and what they import (recommend, the facts tables' readers) while the probes' children
    run: the import time goes beside the torch child's instead of after it."""
    import cudaenv.diagnose
    import cudaenv.diagnose.view  # noqa: F401
