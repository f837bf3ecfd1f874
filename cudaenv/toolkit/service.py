"""`cudaenv link`'s one service: the toolkit a spec names on the inspected system, and the plan that repoints
/usr/local/cuda at it (:func:`cudaenv.toolkit.link.plan_link_for`). The words are :mod:`cudaenv.render.switch`'s."""

from typing import Mapping, Optional


class LinkOutcome:
    """``report`` (the plan and its notes) for ``toolkit``; or, when the spec names no single toolkit,
    ``error`` (the selection's message) and the ``toolkits`` found. ``root``: the inspected folder (``--root``),
    None for this machine."""

    __slots__ = ("toolkit", "report", "error", "toolkits", "system", "root")

    def __init__(self, toolkit=None, report=None, error: Optional[str] = None, toolkits=(), system: str = "linux",
                 root: Optional[str] = None):
        self.toolkit, self.report, self.error, self.toolkits = toolkit, report, error, tuple(toolkits)
        self.system, self.root = system, root

    @property
    def exit_code(self) -> int:
        return 1 if self.error is not None or not self.report.plan.ok else 0


def link(host, spec: str, env: Mapping[str, str]) -> LinkOutcome:
    """Plan pointing /usr/local/cuda at the toolkit ``spec`` names (``~`` is the user's home)."""
    from cudaenv.core.errors import UserError
    from cudaenv.probes.toolkits import probe_toolkits
    from cudaenv.toolkit.link import plan_link_for
    from cudaenv.toolkit.select import SelectError, select_toolkit

    if host.system == "windows":
        raise UserError("Windows has no /usr/local/cuda link", hint="switch with `cudaenv use VERSION --shell pwsh` (it sets CUDA_PATH)")
    if spec.startswith("~") and env.get("HOME"):
        spec = env["HOME"] + spec[1:]
    state = probe_toolkits(host, [])
    root = (host.local("/").rstrip("/") or "/") if host.rooted else None
    try:
        toolkit = select_toolkit(state.toolkits, spec, host.system)
    except SelectError as exc:
        return LinkOutcome(error=exc.message, toolkits=state.toolkits, system=host.system, root=root)
    return LinkOutcome(toolkit, plan_link_for(host, toolkit, env), system=host.system, root=root)
