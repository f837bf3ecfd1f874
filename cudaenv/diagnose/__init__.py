"""Turn a :class:`~cudaenv.model.snapshot.Snapshot` into an expert's findings: what is wrong, why, and the exact fix.

Rules are pure functions ``(snapshot, tables) -> list of Finding``, one module per section, run in the order an
expert checks a machine: environment -> driver -> containers (a container host's runtime) -> visibility -> versions ->
toolkits -> frameworks -> resources -> hints.
``tables`` maps a facts-table name (``"cuda_drivers"``) to its loaded JSON; None reads the shipped ``data/``.

Every finding id is stable and shared with ``cudaenv explain`` and ``cudaenv verify`` (see README).
"""

from __future__ import annotations

SEVERITIES = ("error", "warning", "info")
SECTIONS = ("environment", "driver", "containers", "visibility", "versions", "toolkits", "frameworks", "resources", "hints")


TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

    from cudaenv.model.reports import Finding  # the finding record lives with the JSON contract (imported by the
    # rules: the doctor starts its torch child before it, issue 35)

    Rule = Callable[[Any, Optional[Mapping[str, Any]]], List[Finding]]


def rules() -> Sequence[Tuple[str, Rule]]:
    """(section, rule) in the expert's order (imported lazily: nothing happens at import time)."""
    from cudaenv.diagnose import containers, driver, environment, frameworks, hints, resources, toolkits, versions, visibility

    return (
        ("environment", environment.check),
        ("driver", driver.check),
        ("containers", containers.check),
        ("visibility", visibility.check),
        ("versions", versions.check),
        ("toolkits", toolkits.check),
        ("frameworks", frameworks.check),
        ("resources", resources.check),
        ("hints", hints.check),
    )


def diagnose(snapshot, tables: Optional[Mapping[str, Any]] = None) -> Tuple[Finding, ...]:
    """Every finding for ``snapshot``, sections in order; a hint comes after what it hints about."""
    found: List[Finding] = []
    seen = set()
    for section, rule in rules():
        for f in rule(snapshot, tables, found) if section == "hints" else rule(snapshot, tables):
            if f.id in seen:  # an id is reported once
                continue
            seen.add(f.id)
            found.append(f)
    return tuple(_for_this_user(snapshot, found))


def _for_this_user(snapshot, found: List[Finding]) -> List[Finding]:
    """Root, or a user without sudo, gets every fix without a leading ``sudo`` (the rules and the driver tables write
    it for the usual user; cudaenv.toolkit.sudo decides)."""
    from cudaenv.toolkit.sudo import sudo_printed, without_sudo

    if sudo_printed(snapshot.platform):
        return found
    from cudaenv.model.record import replace

    return [replace(f, fix=tuple(without_sudo(x) for x in f.fix)) if any("sudo" in x for x in f.fix) else f for f in found]


def in_section_order(findings: Sequence[Finding]) -> Tuple[Finding, ...]:
    """``findings`` sorted by section in the expert's order, each section's own order kept (a rule's findings added
    after :func:`diagnose`, such as ``doctor --image``'s, join their section)."""
    order = {name: i for i, name in enumerate(SECTIONS)}
    return tuple(sorted(findings, key=lambda f: order.get(f.section, len(SECTIONS))))


def exit_code(findings: Sequence[Finding], strict: bool = False) -> int:
    """0 when nothing is an error (and, with ``strict``, nothing is a warning); else 1."""
    if any(f.severity == "error" for f in findings):
        return 1
    if strict and any(f.severity == "warning" for f in findings):
        return 1
    return 0
