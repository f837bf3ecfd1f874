"""`cudaenv fix`'s plan (pure): the recommended install, the other builds that fit, the driver, or nothing.

``plan_fix(request, findings, index_data, platform)`` makes the decisions the plan needs (the installed or
asked release; when nothing fits it, the nearest release that does; the newest release a driver upgrade
would get) and returns a :class:`FixPlan`.
"""

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from cudaenv.model.record import replace
from cudaenv.facts import driver_install
from cudaenv.recommend.decide import decide, nearest_release
from cudaenv.core.i18n import M

@dataclass(frozen=True)
class Choice:
    key: str  # "install" | "driver" | "quit"
    title: str
    recommendation: Any = None  # the Recommendation to install
    steps: Tuple[str, ...] = ()  # driver steps


@dataclass(frozen=True)
class FixPlan:
    recommendation: Any
    choices: Tuple[Choice, ...]

    @property
    def installable(self) -> List[Choice]:
        return [c for c in self.choices if c.key == "install"]


def pep668_recipe(python: str, plan: FixPlan) -> List[str]:
    """The commands beside an externally managed system Python (PEP 668): a venv, and the recommended build (or
    plain torch when none fits) installed into it."""
    from cudaenv.recommend.install import quote, venv_recipe

    choice = plan.installable[0] if plan.installable else None
    rec = choice.recommendation if choice else None
    args = " ".join(rec.packages) if rec is not None and rec.packages else "torch"
    if rec is not None and rec.index_url:
        args += " --index-url %s" % rec.index_url
    return venv_recipe(quote(python, "linux"), args)


def driver_steps(platform: Any, min_driver: Optional[str], table: Any = None) -> Tuple[str, ...]:
    """How to upgrade the NVIDIA driver on this platform (one table with the doctor: data/driver_install.json)."""
    from cudaenv.toolkit.sudo import sudo_printed, without_sudo

    kind = driver_install.where(getattr(platform, "system", None), getattr(platform, "wsl", None))
    steps = driver_install.install_steps(kind, getattr(platform, "distro_id", None), min_driver, table,
                                         getattr(platform, "distro_like", None) or ())
    return steps if sudo_printed(platform) else tuple(without_sudo(x) for x in steps)


def plan_choices(platform: Any, rec: Any, others: Sequence[Any], findings: Sequence[Any], wanted: Any = None) -> List[Choice]:
    """Recommended install first, then the other builds that fit, then the driver, then quit.

    ``wanted`` is the recommendation for the torch release asked for when ``rec`` fell back to an older one:
    its driver upgrade is still offered (a newer driver gets the wanted release)."""
    choices: List[Choice] = []
    if rec is not None and rec.ok and rec.commands:
        choices.append(Choice("install", M("Install torch %s %s (recommended)", rec.torch_version, rec.variant), rec))
    seen = {tuple(rec.commands)} if rec is not None and rec.ok and rec.commands else set()
    for other in others:
        if other.ok and other.commands and tuple(other.commands) not in seen:  # conda/pixi: one line for several wheels
            seen.add(tuple(other.commands))
            choices.append(Choice("install", M("Install torch %s %s", other.torch_version, other.variant), other))
    driver_alt = next((a for r in (rec, wanted) if r is not None for a in r.alternatives if a.kind == "driver"), None)
    if driver_alt is not None or any(f.id == "driver-too-old-for-torch" for f in findings):
        min_driver = driver_alt.driver if driver_alt is not None else None
        goal = M(" for torch %s", driver_alt.torch_version) if driver_alt is not None and driver_alt.torch_version else ""
        choices.append(Choice("driver", M("Fix the driver instead%s", M(" (>= %s%s)", min_driver, goal) if min_driver else ""),
                              steps=driver_steps(platform, min_driver)))
    choices.append(Choice("quit", M("Do nothing")))
    return choices


def plan_fix(req: Any, findings: Sequence[Any], index_data: Any, platform: Any, tables: Any = None) -> FixPlan:
    rec = wanted = decide(req, index_data, tables)
    if not rec.ok:  # nothing fits the installed release: the nearest release that does
        older = nearest_release(req, rec, index_data, tables)
        rec = older if older is not None else rec
    others = [decide(replace(req, torch_version=a.torch_version, variant=a.variant), index_data, tables)
              for a in rec.alternatives if a.kind == "variant" and a.variant]
    wanted = wanted if wanted is not rec else None
    if wanted is None and not req.torch_version:
        # no release asked for and the newest that fits is older than the latest: a newer driver may get the latest
        latest = decide(replace(req, torch_version="latest"), index_data, tables)
        wanted = latest if latest.torch_version != rec.torch_version else None
    return FixPlan(rec, tuple(plan_choices(platform, rec, others, findings, wanted)))
