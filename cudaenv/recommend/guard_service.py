"""`cudaenv torch guard`'s I/O: torch read from the interpreter's site-packages before and after (the torch probe's
static pass: nothing imported), the installer's dry run, and the install itself, each through Host.run (an argument vector, no
shell) with a timeout. The decisions are :mod:`cudaenv.recommend.guard`'s."""

from typing import Callable, List, Mapping, Optional, Sequence

from cudaenv.core import config
from cudaenv.core.errors import UserError
from cudaenv.core.text import printable
from cudaenv.recommend.guard import (CONDA_FAMILY, GuardOutcome, TorchState, conda_restore_command, conda_target_python,
                                     dry_run_argv, installer_of, installer_python, keep_argv, keep_requirements, read_plan,
                                     restore_command)
from cudaenv.core.i18n import M


def _state(host, interpreter) -> TorchState:
    from cudaenv.probes.torch import probe_torch_static

    t = probe_torch_static(host, interpreter, [])
    return TorchState(version=t.version if t.installed else None, nvidia=tuple(t.nvidia_packages))


def guard_install(env: Mapping[str, str], host, python: Optional[str], argv: Sequence[str], allow_change: bool = False,
                  on_output: Optional[Callable[[bytes], None]] = None) -> GuardOutcome:
    """Run the install ``argv`` guarding the torch of ``python`` (default: the Python the command line installs into
    where it says, ``PY -m pip``, ``/venv/bin/pip``, a conda/mamba/micromamba ``-p``/``-n`` environment or the active
    one; else the one the doctor would probe)."""
    from cudaenv.probes.python import find_interpreter
    from cudaenv.probes.torch import probe_torch_static

    if not argv:
        raise UserError(M("say which install to guard: `cudaenv torch guard -- pip install PACKAGE`"))
    own = installer_python(argv)
    kind = installer_of(argv)
    if python is None and own is not None and (host.is_file(own) or host.which(own)):
        python = own  # the install says which Python it installs into
    elif python is None and own is None and kind in CONDA_FAMILY:
        target, named = conda_target_python(argv, env, host.system, host.which(argv[0]))
        if target is None and named:
            raise UserError(M("`%s` names an environment whose root prefix is not known: no Python found whose torch to guard", printable(argv[0])),
                            hint=M("pass --python PATH, or -r/--root-prefix ROOT (micromamba: MAMBA_ROOT_PREFIX)"))
        if target is not None and host.is_file(target):
            python = target  # the environment the install goes into
        elif target is not None and named:
            return _unguarded(host, argv, target, kind, config.value(env, "CUDAENV_INSTALL_TIMEOUT"), on_output)
    interpreter = find_interpreter(host, python, notes=[])
    if interpreter is None:
        raise UserError(M("no Python found whose torch to guard"), hint=M("pass --python PATH"))
    first = probe_torch_static(host, interpreter, [])
    before = TorchState(version=first.version if first.installed else None, nvidia=tuple(first.nvidia_packages))
    timeout = config.value(env, "CUDAENV_INSTALL_TIMEOUT")
    base = dict(argv=tuple(argv), python=interpreter.path, before=before)
    planned = pin = None
    dry = dry_run_argv(argv) if before.version else None
    if dry is not None:
        result = host.run(list(dry), timeout=timeout)
        if result.returncode == 0:
            planned, pin, removes = read_plan(kind, result.stdout, result.stderr)
            if ((planned and planned != before.version) or removes) and not allow_change:
                return GuardOutcome(planned=planned, planner=kind, blocked=True, removes=removes,
                                    keep=keep_argv(argv, before.version, kind, pin),
                                    keep_requirements=keep_requirements(argv, before.version, kind), **base)
        else:
            base["dry_code"], base["dry_error"] = result.returncode, result.error
    base["planner"] = kind
    result = host.run(list(argv), timeout=timeout, on_output=on_output)
    if result.returncode is None and result.error != "timeout":
        return GuardOutcome(planned=planned, error=result.error or "could not start", **base)
    after = _state(host, interpreter)
    restore: List[str] = []
    if before.version and after.version != before.version:
        restore = list(conda_restore_command(argv, before.version, pin) if kind in CONDA_FAMILY else
                       restore_command(before.version, interpreter.path, first.installer, host.system))
    return GuardOutcome(planned=planned, after=after, code=result.returncode, timed_out=result.error == "timeout",
                        restore=tuple(restore), **base)


def _unguarded(host, argv, target: str, kind: Optional[str], timeout, on_output) -> GuardOutcome:
    """An install into an environment that has no Python yet (``micromamba create -n NEW``, a new ``-p`` prefix): no
    torch there to guard, so it runs as given and is said so."""
    base = dict(argv=tuple(argv), python=target, before=TorchState(), planner=kind)
    result = host.run(list(argv), timeout=timeout, on_output=on_output)
    if result.returncode is None and result.error != "timeout":
        return GuardOutcome(error=result.error or "could not start", **base)
    return GuardOutcome(code=result.returncode, timed_out=result.error == "timeout", **base)
