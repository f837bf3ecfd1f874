"""`cudaenv uninstall`'s one service: what to remove (or what is left), read from the machine through the Host.

:func:`uninstall` routes a request to one of three outcomes: ``"plan"`` (the removal plan, never run by cudaenv),
``"residue"`` (``--check``: what is still left) or ``"own"`` (toolkits ``cudaenv install`` made, which cudaenv
removes itself on the machine it runs on, after the caller's ``confirm`` says yes). :func:`write_script` writes
``--script`` atomically. The words are :mod:`cudaenv.render.plan`'s and :mod:`cudaenv.render.uninstall_script`'s.
"""

import os
import stat
from typing import Callable, List, Optional, Sequence, Tuple

from cudaenv.core.errors import UserError
from cudaenv.core.text import printable
from cudaenv.core.i18n import M


class Request:
    """What the command line asked for (``cudaenv uninstall --help``)."""

    __slots__ = ("spec", "everything", "driver", "check", "script", "json", "yes", "repoint", "remove_link", "python")

    def __init__(self, spec: Optional[str] = None, everything: bool = False, driver: bool = False, check: bool = False,
                 script: Optional[str] = None, json: bool = False, yes: bool = False, repoint: Optional[str] = None,
                 remove_link: bool = False, python: Optional[str] = None):
        self.spec, self.everything, self.driver, self.check, self.script = spec, everything, driver, check, script
        self.json, self.yes, self.repoint, self.remove_link, self.python = json, yes, repoint, remove_link, python


class OwnInstall:
    """A toolkit ``cudaenv install`` made: its folder (as the inspected system names it), version, file count."""

    __slots__ = ("path", "version", "files")

    def __init__(self, path: str, version: Optional[str], files: int):
        self.path, self.version, self.files = path, version, files


class UninstallOutcome:
    """The result: ``kind`` "plan" (``plan``), "residue" (``names``, ``residue``) or "own" (``installs``, then
    ``removed`` when ``confirm`` said yes, ``declined`` when it said no); ``exit_code`` follows from it."""

    __slots__ = ("kind", "plan", "names", "residue", "installs", "removed", "declined")

    def __init__(self, kind: str, plan=None, names: Sequence[str] = (), residue: Sequence = (),
                 installs: Sequence[OwnInstall] = (), removed: Sequence[str] = (), declined: bool = False):
        self.kind, self.plan, self.names, self.residue = kind, plan, tuple(names), tuple(residue)
        self.installs, self.removed, self.declined = tuple(installs), tuple(removed), declined

    @property
    def exit_code(self) -> int:
        if self.kind == "residue":
            return 1 if self.residue else 0
        return 1 if self.declined else 0


def _site_packages(host, python: Optional[str]) -> Tuple[str, ...]:
    from cudaenv.probes.site_packages import probe_site_packages

    if not python:
        return ()
    if not os.path.exists(python):
        raise UserError(M("--python %s does not exist", python), hint=M("give the interpreter of the environment holding the nvidia-* wheels"))
    dirs, why = probe_site_packages(host, python, timeout=max(host.timeout, 10.0))
    if why is not None:
        raise UserError(M("--python %s could not be run: %s", python, why))
    return dirs


def uninstall(host, request: Request, confirm: Callable[[Sequence[OwnInstall]], bool]) -> UninstallOutcome:
    """The outcome of ``request`` on ``host``. ``confirm(installs)`` is asked only before cudaenv removes toolkits
    it installed itself (the command shows them and asks; ``--yes`` answers for it)."""
    from cudaenv.toolkit.uninstall.inspect import inspect_uninstall
    from cudaenv.toolkit.uninstall.plan import plan_uninstall
    from cudaenv.toolkit.uninstall.records import Options
    from cudaenv.toolkit.uninstall.residue import find_residue
    from cudaenv.toolkit.uninstall.targets import load_toolkits, repoint_target, select_targets

    notes: List = []
    toolkits, link = load_toolkits(host, notes, site_packages=_site_packages(host, request.python))
    targets = select_targets(host, request.spec, toolkits, request.everything, notes)
    active = next((t.path for t in toolkits if t.active), None)
    inspection = inspect_uninstall(
        host, targets, toolkits, link, notes, driver=request.driver, python=request.python, active_path=active
    )
    if _own_installs(host, targets, request):
        return _remove_own(host, targets, confirm)
    if request.check:
        return UninstallOutcome("residue", names=[t.path for t in targets], residue=find_residue(inspection))
    repoint = repoint_target(request.repoint, toolkits, targets, host.system) if request.repoint else None
    plan = plan_uninstall(inspection, Options(driver=request.driver, repoint=repoint, remove_link=request.remove_link,
                                              python=request.python))
    ghosts = [t for t in targets if t.source == "residue"]
    if ghosts and not plan.steps:  # a version named that was never here, and nothing of it is left either
        found = ", ".join("%s (%s)" % (t.version or "?", t.path) for t in toolkits) or "none"
        raise UserError(M("no CUDA %s toolkit was found here, and nothing of it is left", request.spec), hint=M("toolkits found: %s", found))
    if request.script and plan.system == "windows":
        raise UserError(M("--script writes a bash script; on Windows follow the printed steps"), hint=M("drop --script"))
    return UninstallOutcome("plan", plan=plan)


def _own_installs(host, targets, request: Request) -> bool:
    """Every target is a ``cudaenv install`` of the machine cudaenv runs on, and no plan, check or JSON was asked."""
    return bool(targets) and all(t.install_method == "cudaenv" for t in targets) and not host.rooted and not (
        request.check or request.script or request.json)


def _remove_own(host, targets, confirm) -> UninstallOutcome:
    from cudaenv.host.tree import count_files
    from cudaenv.probes.toolkits.store import is_cudaenv_install
    from cudaenv.toolkit.install.apply import remove_install

    installs = tuple(OwnInstall(t.path, t.version, count_files(host, t.path)) for t in targets)
    if not confirm(installs):
        return UninstallOutcome("own", installs=installs, declined=True)
    removed = []
    for t in targets:
        if not is_cudaenv_install(host, t.path):
            raise UserError(M("%s is no longer a cudaenv install; not removed", printable(t.path)))
        try:
            remove_install(host.local(t.path))
        except OSError as exc:
            raise UserError(M("could not remove %s: %s", printable(t.path), printable(exc.strerror or exc)), exit_code=1)
        removed.append(t.path)
    return UninstallOutcome("own", installs=installs, removed=removed)


def write_script(path: str, text: str) -> None:
    """``--script FILE``: the script written atomically (a reader never sees half of it), executable by its owner."""
    from cudaenv.core.fs import atomic_write_text, usual_mode

    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = usual_mode()
    try:
        atomic_write_text(path, text, mode=mode | stat.S_IXUSR)
    except OSError as exc:
        raise UserError(M("cannot write %s: %s", path, exc.strerror or exc))
