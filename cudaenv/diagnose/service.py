"""`cudaenv doctor`'s one service: probe the machine, diagnose the snapshot, build the facts view.

:func:`doctor` collects the snapshot through the Host (:mod:`cudaenv.probes.collect`), runs the pure rules and
builds the doctor's facts view (:mod:`cudaenv.diagnose.view`) once for whichever renderer formats it. The exit code
is the outcome's (:func:`cudaenv.diagnose.exit_code`: 1 on an error finding, with ``strict`` on a warning too).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
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
           sections: Optional[Sequence[str]] = None, import_order: Sequence[str] = ()) -> DoctorOutcome:
    """Probe ``host`` (``python``: the interpreter whose torch to inspect; ``quick``: never import torch; ``image``: a
    saved image, OCI layout or inspect JSON to check against this machine's driver, a path relative to ``cwd``;
    ``import_frameworks``: import each framework found in a child of that interpreter; ``sections``: keep only the
    findings of these doctor sections, ``("frameworks",)`` for ``doctor --frameworks``; ``import_order``: the modules
    the user's program imports, in order, whose DLL loads Windows replays)."""
    from cudaenv.probes.collect import collect_snapshot

    snapshot = collect_snapshot(host, python=python, quick=quick, progress=progress,
                                beside=_load_rules if quick else _load_rules_and_advice, import_frameworks=import_frameworks,
                                import_order=tuple(import_order))
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
    """Import the rules (every section's module), the view and the finishing step while the probes' children run: the
    import time goes beside the torch child's instead of after it (:func:`cudaenv.diagnose.rules` imports the modules)."""
    import cudaenv.core.resources  # noqa: F401  # the facts tables' reader
    import cudaenv.diagnose
    import cudaenv.diagnose.extensions  # noqa: F401  # the frameworks section's, imported when it runs
    import cudaenv.diagnose.framework_imports  # noqa: F401
    import cudaenv.diagnose.view  # noqa: F401
    import cudaenv.facts.frameworks  # noqa: F401
    import cudaenv.parse.frameworks  # noqa: F401  # its table's reader
    import cudaenv.toolkit.sudo  # noqa: F401  # diagnose's last step

    cudaenv.diagnose.rules()


def _load_rules_and_advice() -> None:
    """:func:`_load_rules`, and the torch advice some rules give (recommend: a missing, CPU-only or unimportable torch,
    a driver too old for it), while `import torch` runs in its child for a second or more: free there, where `--quick`
    (whose child takes tens of milliseconds) imports it only when a rule asks."""
    _load_rules()
    import cudaenv.model.codec  # noqa: F401  # the JSON report's
    import cudaenv.recommend.decide
    import cudaenv.recommend.request  # noqa: F401
    from cudaenv.core.version import pep440

    pep440("0")  # the PEP 440 pattern, which the facts tables' torch versions are sorted by
