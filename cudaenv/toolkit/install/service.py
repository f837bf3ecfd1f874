"""``cudaenv install``'s one service call: a request in, an :class:`~cudaenv.toolkit.install.plan.InstallReport` out.

:func:`install` picks the way (wheels for 13.x, ``--runfile``, ``--plan``, or the plain no-wheel answer for 12.x
and older), checks the machine first (:mod:`precheck`: a driver older than the release's minimum, or GPUs it cannot
build for, stop the install unless ``--force``, which installs anyway and keeps every warning in the report), and
reports what it did. :func:`available` is ``--list`` (and ``cudaenv list --available``). Nothing here prints:
``progress`` gets a line per step, ``output`` pip's own output as it arrives (the command passes both to a terminal).
"""

from __future__ import annotations

import os
import time
from typing import Callable, Optional, Tuple

from cudaenv.model.record import Record
from cudaenv.core.errors import UserError
from cudaenv.toolkit.install import plan
from cudaenv.core.i18n import M


class InstallRequest(Record):
    """The arguments of ``cudaenv install`` (after parsing)."""

    spec: Optional[str] = None
    prefix: Optional[str] = None
    installer: Optional[str] = None  # pip (default) | uv
    reinstall: bool = False
    plan: bool = False
    runfile: Optional[str] = None
    components: Optional[str] = None  # "cublas,nvtx,cudnn"
    force: bool = False
    timeout: float = 1800.0


def _quiet(_line) -> None:
    pass


def available(env, host, timeout: float, refresh: bool = False):
    """``--list``: the releases on the package index (cached, offline first), split by how they install."""
    from cudaenv.toolkit.install.listing import releases_cached

    return releases_cached(env, host, min(timeout, 120.0), refresh)


def install(req: InstallRequest, host, env, version: str, progress: Callable[[str], None] = _quiet,
            output: Optional[Callable[[bytes], None]] = None) -> plan.InstallReport:
    from cudaenv.probes.toolkits import store as store
    from cudaenv.core.text import printable
    from cudaenv.core.version import parse_version

    if not req.spec:
        raise UserError(M("no CUDA version given"), hint=M("cudaenv install 13 (or 13.0, 13.0.2); cudaenv install --list"))
    spec = req.spec.strip()
    if parse_version(spec) is None:
        raise UserError(M("%r is not a CUDA version", printable(spec[:40])), hint=M("give 13, 13.0 or 13.0.2"))
    if req.components and (req.runfile or req.plan or plan.needs_runfile(spec)):
        raise UserError(M("--components adds NVIDIA's library wheels to a CUDA 13 install from wheels"),
                        hint=M("a runfile or repository install brings its own libraries"))
    base = os.path.abspath(req.prefix) if req.prefix else store.toolkits_dir(env, host.system)
    if req.runfile:
        return _runfile(req, host, spec, base, version)
    if req.plan:
        return _plan(host, spec)
    if plan.needs_runfile(spec):
        return no_wheels(spec)
    return _wheels(req, host, env, spec, base, version, progress, output)


def no_wheels(spec: str) -> plan.InstallReport:
    text, alternatives = plan.no_wheel_answer(spec)
    return plan.InstallReport(False, "no-wheels", spec, message=text, commands=alternatives)


def _wheels(req, host, env, spec, base, version, progress, output) -> plan.InstallReport:
    from cudaenv.toolkit.install import apply

    start = time.monotonic()
    installer = req.installer or "pip"
    apply.find_installer(host, "pip")
    if installer == "uv":
        apply.find_installer(host, "uv")
    progress(M("looking up cuda-toolkit releases"))
    release = _release(env, host, spec, req.timeout)
    if plan.needs_runfile(release):
        return no_wheels(release)
    try:
        added = plan.parse_components(req.components, release)
    except plan.PlanError as exc:
        raise UserError(exc.message, exc.hint) from None
    warnings, stops = machine_check(host, release)
    for w in warnings:
        progress(M("warning: %s", w))
    if stops and not req.force:
        return plan.InstallReport(False, "refused", spec, release, os.path.join(base, release), installer=installer,
                                  warnings=warnings, message=M("Not installing CUDA %s: nothing it builds would run on this "
                                                               "machine.", release),
                                  hint=M("--force installs it anyway (these warnings still print)"))
    missing = _missing_components(host, os.path.join(base, release), added)
    outcome = apply.install_from_wheels(host, release, base, installer, req.reinstall, progress, req.timeout, version,
                                        added, output)
    hint = None
    if outcome.status == "already-installed" and missing:
        hint = M("it was installed without %s: give --reinstall --components %s", ", ".join(missing), req.components)
    return plan.InstallReport(True, outcome.status, spec, outcome.release, outcome.path, "cudaenv", installer,
                              outcome.components, outcome.download_bytes, outcome.files,
                              round(time.monotonic() - start, 1), (), tuple(warnings) + outcome.notes,
                              forced=bool(stops and req.force), hint=hint)


def _release(env, host, spec: str, timeout: float) -> str:
    """The release ``spec`` names: from the cached release list, read again once when the cache does not have it."""
    listed = available(env, host, timeout)
    try:
        return plan.choose_release(spec, listed.releases)
    except plan.PlanError:
        if listed.source == "cache":
            try:
                return plan.choose_release(spec, available(env, host, timeout, refresh=True).releases)
            except plan.PlanError as again:
                exc = again
        raise UserError(exc.message, exc.hint, exit_code=1) from None


def _missing_components(host, target: str, added) -> tuple:
    """The ``--components`` a finished install at ``target`` was made without (its marker's ``extras``)."""
    import json

    from cudaenv.probes.toolkits import store as store

    wanted = plan.component_names(added)
    if not wanted or not store.is_cudaenv_install(host, target):
        return ()
    try:
        have = json.loads(host.read_text(host.join(target, store.MARKER), limit=1024 * 1024) or "{}").get("extras") or []
    except (ValueError, AttributeError):
        have = []
    return tuple(n for n in wanted if n not in have)


def _plan(host, spec) -> plan.InstallReport:
    from cudaenv.probes.platform import probe_platform
    from cudaenv.toolkit.install.repos import plan_commands

    if not plan.needs_runfile(spec):
        raise UserError(M("--plan is for CUDA 12.x and older"), hint=M("cudaenv install %s installs it from wheels, without root", spec))
    platform = probe_platform(host, [])
    commands, source = plan_commands(spec, platform.distro_id, platform.distro_version, platform.wsl, platform.machine or host.machine,
                                     like=platform.distro_like)
    if not host.rooted:  # the commands run here: `sudo` only where it is needed and present (toolkit/sudo.py's rule)
        from cudaenv.toolkit.sudo import has_sudo, is_root, sudo_prefix

        if not sudo_prefix(not is_root(), has_sudo(host)):
            commands = tuple(_without_sudo(c) for c in commands)
    where = "WSL2 " if platform.wsl == 2 else ""
    title = M("CUDA %s toolkit, system-wide, without a driver, on %s%s (cudaenv runs none of this):",
              spec, where, platform.distro or platform.distro_id or M("this system"))
    return plan.InstallReport(True, "planned", spec, spec, installer="repository", commands=commands,
                              message=title, source=source)


def _without_sudo(command: str) -> str:
    """``sudo apt-get update`` -> ``apt-get update``; ``... | sudo tee F`` -> ``... | tee F`` (for root, or where no
    sudo is installed: the commands are then run as root as they are)."""
    if command.startswith("sudo "):
        command = command[5:]
    return command.replace("| sudo ", "| ").replace("&& sudo ", "&& ")


def _runfile(req, host, spec, base, version) -> plan.InstallReport:
    from cudaenv.toolkit.install.runfile import install_runfile

    start = time.monotonic()
    path = os.path.abspath(req.runfile)
    outcome = install_runfile(host, path, spec, base, req.reinstall, req.timeout, version)
    return plan.InstallReport(True, outcome.status, spec, outcome.release, outcome.path, installer="runfile",
                              seconds=round(time.monotonic() - start, 1), message=path)


def machine_check(host, release: str) -> Tuple[Tuple[str, ...], bool]:
    """(the warnings, whether they stop the install unless ``--force``).

    They stop it when nothing built with ``release`` could run here: the driver is older than its minimum, or every
    GPU is older than its oldest target. One old GPU among newer ones, or no driver at all (a container build), is a
    warning only. A probe that fails is no warning (the check is advice)."""
    from cudaenv.probes.nvidia import probe_nvidia
    from cudaenv.toolkit.install import precheck

    notes: list = []
    try:
        state = probe_nvidia(host, notes)
    except Exception:  # noqa: BLE001 - the check is advice
        return (), False
    driver = state.driver.version if state.driver is not None else None
    on_driver = precheck.driver_warnings(driver, release)
    on_gpus = precheck.gpu_warnings(state.gpus, release)
    stops = bool(on_driver) or (bool(state.gpus) and len(on_gpus) == len(state.gpus))
    return tuple(on_driver + on_gpus), stops
