"""`cudaenv fix` changing the machine: the chosen install run through the Host's runner, then probed again.

The install runs with a timeout (``CUDAENV_INSTALL_TIMEOUT``, 1800 s) and pip's own ``--retries``/``--timeout``
so an unreachable index fails in seconds, not minutes; its output is shown when it ends. Then the doctor
looks again, and `cudaenv verify` runs (``CUDAENV_VERIFY_TIMEOUT``, 600 s).
"""

import sys
import time
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from cudaenv.core import config
from cudaenv.core.errors import UserError
from cudaenv.facts.findings import ids_where
from cudaenv.core.i18n import M

PIP_RETRIES = 1
PIP_TIMEOUT = 15.0


def install_timeout(env: Mapping[str, str]) -> float:
    return config.value(env, "CUDAENV_INSTALL_TIMEOUT")


@dataclass(frozen=True)
class InstallOutcome:
    argv: Tuple[str, ...]
    code: Optional[int]
    timed_out: bool
    seconds: float
    output: str
    timeout: float
    before: Optional[str]  # torch version before
    after: Any = None  # the Snapshot probed after the install
    remaining: Tuple[Any, ...] = ()  # torch findings still there
    unreachable: Optional[str] = None  # the index could not be reached: the install was not run

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.code == 0 and not self.unreachable


def run_install(host: Any, argv: Sequence[str], timeout: float) -> Tuple[Optional[int], bool, str, float]:
    """(exit status or None, timed out, output, seconds): through the Host's runner (the group killed on timeout)."""
    started = time.monotonic()
    result = host.run(list(argv), timeout=timeout)
    return result.returncode, result.error == "timeout", result.output, time.monotonic() - started


def install_argv(rec: Any, python: str) -> List[str]:
    """The argv of the install: conda's or pixi's own (conda-forge's build; never through a shell), else pip's or uv's.
    A pixi install that needs a manifest edit first (the CUDA it declares, a PyPI entry) is a UserError naming it."""
    from cudaenv.recommend.install import install_argv as argv_for

    plan = getattr(rec, "conda_install", None)
    if plan is not None and plan.argv:
        return list(plan.argv)
    if plan is not None and plan.installer == "pixi":
        raise UserError(M("pixi needs the manifest changed first: %s", "; ".join(plan.snippet)),
                        hint=M("add those lines (`cudaenv torch recommend` shows where), then run `%s`", "; ".join(plan.commands)))
    installer = "uv" if rec.installer == "uv" else "pip"
    return argv_for(rec.packages, rec.index_url, python, installer, PIP_RETRIES if installer == "pip" else None,
                    PIP_TIMEOUT if installer == "pip" else None, flat=getattr(rec, "index_layout", "simple") == "flat")


def apply_install(host: Any, env: Mapping[str, str], before: Any, rec: Any, started: Any = None) -> InstallOutcome:
    """Install ``rec`` into the probed interpreter and probe again; never raises for a failed install.

    ``started(argv, timeout)`` is called just before the install runs (the command says what runs)."""
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.diagnose import diagnose

    python = before.torch.python
    if rec.installer == "uv" and host.which("uv") is None:
        raise UserError(M("this environment is managed by uv, but `uv` is not on PATH"), hint=M("install uv, or run the pip command above by hand"))
    argv = install_argv(rec, python)
    if argv[0] in ("conda", "pixi") and host.which(argv[0]) is None:
        raise UserError(M("this environment is managed by %s, but `%s` is not on PATH", argv[0], argv[0]),
                        hint=M("run the command above where %s is installed", argv[0]))
    timeout = install_timeout(env)
    if rec.index_url and argv[0] not in ("conda", "pixi"):
        from cudaenv.index.client import unreachable

        why = unreachable(rec.index_url.rstrip("/") + ("/" if getattr(rec, "index_layout", "simple") == "flat" else "/torch/"))
        if why:
            return InstallOutcome(tuple(argv), None, False, 0.0, "", timeout, before.torch.version if before.torch.installed else None,
                                  before, unreachable=why)
    if started is not None:
        started(argv, timeout)
    code, timed_out, output, seconds = run_install(host, argv, timeout)
    old = before.torch.version if before.torch.installed else None
    after = collect_snapshot(host, python=python, quick=False)
    outcome = InstallOutcome(tuple(argv), code, timed_out, seconds, output, timeout, old, after)
    if not outcome.ok:
        return outcome
    remaining = tuple(f for f in diagnose(after) if f.id in ids_where("after_fix"))  # data/findings.json
    return _with(outcome, remaining=remaining)


def run_verify(host: Any, env: Mapping[str, str], python: str) -> Tuple[Optional[int], bool, str]:
    """`cudaenv verify --python PYTHON` as a child (its GPU work must not run in this process)."""
    timeout = config.value(env, "CUDAENV_VERIFY_TIMEOUT")
    code, timed_out, output, _ = run_install(host, [sys.executable, "-m", "cudaenv", "verify", "--python", python], timeout)
    return code, timed_out, output


def _with(outcome: InstallOutcome, **changes: Any) -> InstallOutcome:
    import dataclasses

    return dataclasses.replace(outcome, **changes)
