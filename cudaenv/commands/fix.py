"""`cudaenv fix`: a guided fix for a torch that cannot use the GPU.

Runs the doctor (probe + diagnose). For each fixable torch finding (torch-cpu-only,
driver-too-old-for-torch, gpu-arch-unsupported, torch-missing) it shows the diagnosis and offers the
recommended variant, the other builds that fit, or "fix the driver instead" (the steps for this
platform). It confirms, runs the install in the probed interpreter with its output streaming, probes
again and shows the result, then runs `cudaenv verify`.

``--yes`` takes the recommendation, ``--dry-run`` only prints the plan; with no terminal and no ``--yes``
it prints the plan and exits 1. An externally managed system Python (PEP 668) is refused.
"""

import argparse
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from cudaenv.errors import UserError

HELP = "guided fix for a CPU-only or wrong-CUDA torch"
FIXABLE = ("torch-cpu-only", "driver-too-old-for-torch", "gpu-arch-unsupported", "torch-missing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.options import add_host_options

    add_host_options(parser)
    parser.add_argument("--yes", "-y", action="store_true", help="take the recommendation without asking")
    parser.add_argument("--dry-run", action="store_true", help="only print the plan")
    parser.add_argument("--torch", metavar="VERSION", help="install this torch release instead of the installed one (2.7.1, 2.7, latest)")
    parser.add_argument("--index-base", metavar="URL", help="wheel index base instead of https://download.pytorch.org/whl (env: CUDAENV_TORCH_INDEX)")
    parser.add_argument("--refresh", action="store_true", help="read the live index before deciding")
    parser.add_argument("--no-verify", action="store_true", help="do not run `cudaenv verify` after the install")


# ------------------------------------------------------------------ the plan (pure)
@dataclass(frozen=True)
class Choice:
    key: str  # "install" | "driver" | "quit"
    title: str
    recommendation: Any = None  # the Recommendation to install
    steps: Tuple[str, ...] = ()  # driver steps


def driver_steps(snapshot: Any, min_driver: Optional[str]) -> Tuple[str, ...]:
    """How to upgrade the NVIDIA driver on this platform (WSL2: on Windows, never inside WSL)."""
    platform = snapshot.platform
    want = "at least %s" % min_driver if min_driver else "a newer one"
    if platform.wsl == 1:
        return (
            "WSL1 cannot use the GPU at all: convert this distribution to WSL2; never install a Linux NVIDIA driver inside WSL.",
            "In Windows PowerShell: wsl -l -v   (find this distribution), then: wsl --set-version DISTRO 2",
            "Install driver %s on Windows from https://www.nvidia.com/Download/index.aspx (or the NVIDIA App)." % want,
            "Check inside WSL2: /usr/lib/wsl/lib/nvidia-smi",
        )
    if platform.wsl == 2:
        return (
            "The GPU driver of WSL2 is the Windows driver: install %s on Windows, never a Linux NVIDIA driver inside WSL." % want,
            "On Windows: download it from https://www.nvidia.com/Download/index.aspx (or the NVIDIA App) and install it.",
            "Then, in Windows PowerShell: wsl --shutdown   (and reopen the WSL terminal)",
            "Check inside WSL: /usr/lib/wsl/lib/nvidia-smi",
        )
    if platform.system == "windows":
        return (
            "Install driver %s from https://www.nvidia.com/Download/index.aspx (or the NVIDIA App)." % want,
            "Reboot, then check: nvidia-smi",
        )
    distro = (platform.distro_id or "").lower()
    branch = (min_driver or "").split(".")[0]
    if distro == "ubuntu":
        return (
            "sudo apt-get update",
            "ubuntu-drivers list   (pick nvidia-driver-N with N >= %s)" % (branch or "the version you need"),
            "sudo ubuntu-drivers install%s" % (" nvidia:%s" % branch if branch else ""),
            "sudo reboot",
            "Check: nvidia-smi   (driver %s)" % want,
        )
    if distro == "debian":
        return (
            "Enable the non-free and non-free-firmware components in /etc/apt/sources.list, then:",
            "sudo apt-get update && sudo apt-get install nvidia-driver firmware-misc-nonfree",
            "If Debian's packaged driver is older than %s, use NVIDIA's CUDA repository for Debian (cuda-drivers)." % (min_driver or "what you need"),
            "sudo reboot",
            "Check: nvidia-smi",
        )
    return (
        "Install NVIDIA driver %s with your distribution's packages (or NVIDIA's CUDA repository: cuda-drivers)." % want,
        "Reboot, then check: nvidia-smi",
    )


def plan_choices(snapshot: Any, rec: Any, others: Sequence[Any], findings: Sequence[Any], wanted: Any = None) -> List[Choice]:
    """Recommended install first, then the other builds that fit, then the driver, then quit.

    ``wanted`` is the recommendation for the torch release asked for when ``rec`` fell back to an older one:
    its driver upgrade is still offered (a newer driver gets the wanted release)."""
    choices: List[Choice] = []
    if rec is not None and rec.ok and rec.commands:
        choices.append(Choice("install", "Install torch %s %s (recommended)" % (rec.torch_version, rec.variant), rec))
    for other in others:
        if other.ok and other.commands:
            choices.append(Choice("install", "Install torch %s %s" % (other.torch_version, other.variant), other))
    driver_alt = next((a for r in (rec, wanted) if r is not None for a in r.alternatives if a.kind == "driver"), None)
    if driver_alt is not None or any(f.id == "driver-too-old-for-torch" for f in findings):
        min_driver = driver_alt.driver if driver_alt is not None else None
        goal = " for torch %s" % driver_alt.torch_version if driver_alt is not None and driver_alt.torch_version else ""
        choices.append(Choice("driver", "Fix the driver instead%s" % (" (>= %s%s)" % (min_driver, goal) if min_driver else ""),
                              steps=driver_steps(snapshot, min_driver)))
    choices.append(Choice("quit", "Do nothing"))
    return choices


def venv_steps(python: str, rec: Any) -> List[str]:
    tail = " ".join(rec.packages) if rec is not None and rec.packages else "torch"
    idx = " --index-url %s" % rec.index_url if rec is not None and rec.index_url else ""
    return [
        "%s -m venv ~/.venvs/torch" % python,
        "~/.venvs/torch/bin/python -m pip install %s%s" % (tail, idx),
        "then use ~/.venvs/torch/bin/python (or `source ~/.venvs/torch/bin/activate`)",
    ]


# ------------------------------------------------------------------ the command
def run(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv.collect import collect_snapshot
    from cudaenv.commands.torch import build_recommendation, index_timeout, load_index_data, split_python
    from cudaenv.torch_index import index_base

    interpreter, what_if = split_python(args.python)
    if what_if:
        raise UserError("`cudaenv fix --python` needs an interpreter, not a version", hint="for example --python .venv/bin/python")
    host = ctx.host(args)
    out = ctx.out
    out.write("Probing this machine...\n")
    out.flush()
    snapshot = collect_snapshot(host, python=interpreter, quick=False)
    findings = _diagnose(snapshot)
    fixable = [f for f in findings if f.id in FIXABLE]
    torch = snapshot.torch
    if not fixable:
        state = "torch %s" % torch.version if torch is not None and torch.installed else "no torch"
        out.write("Nothing to fix: the doctor found no torch problem (%s in %s).\n" % (state, getattr(torch, "python", None) or "?"))
        return 0
    for f in fixable:
        out.write("\n[%s] %s\n  %s\n" % (f.id, f.title, f.detail))
    if torch is None or not torch.python:
        raise UserError("no Python interpreter to fix", hint="give one with --python PATH")

    base = index_base(ctx.env, args.index_base)
    index_data, notes = load_index_data(ctx.env, base, args.refresh, index_timeout(ctx.env))
    rec = wanted = build_recommendation(args, ctx, host, snapshot, index_data, None)
    if not rec.ok:
        # nothing fits the installed release: the nearest release that does
        alt = next((a for a in rec.alternatives if a.kind == "torch" and a.torch_version), None)
        if alt is not None:
            rec = build_recommendation(_with(args, torch=alt.torch_version), ctx, host, snapshot, index_data, None)
    others = []
    for a in rec.alternatives:
        if a.kind == "variant" and a.variant:
            others.append(build_recommendation(_with(args, torch=a.torch_version, variant=a.variant), ctx, host, snapshot, index_data, None))
    wanted = wanted if wanted is not rec else None
    if wanted is None and not getattr(args, "torch", None):
        # no release asked for and the newest that fits is older than the latest: a newer driver may get the latest
        latest = build_recommendation(_with(args, torch="latest"), ctx, host, snapshot, index_data, None)
        wanted = latest if latest.torch_version != rec.torch_version else None
    choices = plan_choices(snapshot, rec, others, fixable, wanted)
    for n in list(notes) + list(rec.notes):
        out.write("note: %s\n" % n)

    out.write("\nPlan for %s:\n" % torch.python)
    for r in rec.reasons:
        out.write("  - %s\n" % r)
    for i, choice in enumerate(choices, 1):
        out.write("  %d. %s\n" % (i, choice.title))
        if choice.recommendation is not None:
            for cmd in choice.recommendation.commands:
                out.write("       %s\n" % cmd)
        for step in choice.steps:
            out.write("       %s\n" % step)

    installable = [c for c in choices if c.key == "install"]
    if torch.externally_managed and not torch.in_virtualenv:
        out.write("\n%s is an externally managed system Python (PEP 668): cudaenv will not install into it.\n" % torch.python)
        out.write("Make a virtual environment instead:\n")
        for step in venv_steps(torch.python, installable[0].recommendation if installable else None):
            out.write("  %s\n" % step)
        return 1
    if args.dry_run:
        out.write("\n--dry-run: nothing was changed.\n")
        return 0 if installable else 1

    if args.yes:
        if not installable:
            out.write("\nNo torch build fits this machine; nothing was installed. See the plan above.\n")
            return 1
        choice = installable[0]
    elif not _interactive(ctx):
        out.write("\nNo terminal to ask on: run `cudaenv fix --yes` to apply the recommendation, or --dry-run.\n")
        return 1
    else:
        choice = _ask(choices)
        if choice is None or choice.key == "quit":
            out.write("Nothing was changed.\n")
            return 0 if choice is not None else 130
        if choice.key == "driver":
            out.write("\nFix the driver:\n")
            for step in choice.steps:
                out.write("  %s\n" % step)
            out.write("Then run `cudaenv fix` again.\n")
            return 0
        if not _confirm("Run: %s ?" % " && ".join(choice.recommendation.commands)):
            out.write("Nothing was changed.\n")
            return 0
    return _apply(args, ctx, host, snapshot, choice.recommendation)


def _with(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    data = dict(vars(args))
    data.update(changes)
    return argparse.Namespace(**data)


def _diagnose(snapshot: Any) -> Sequence[Any]:
    from cudaenv.diagnose import diagnose

    return diagnose(snapshot)


def _interactive(ctx: Any) -> bool:
    stdin = ctx.stdin if ctx.stdin is not None else sys.stdin
    try:
        return bool(stdin.isatty()) and ctx.is_tty
    except (AttributeError, ValueError):
        return False


def _ask(choices: Sequence[Choice]) -> Optional[Choice]:
    import questionary

    answer = questionary.select(
        "What should cudaenv do?", choices=[questionary.Choice(c.title, value=i) for i, c in enumerate(choices)]
    ).ask()
    return None if answer is None else choices[answer]


def _confirm(message: str) -> bool:
    import questionary

    return bool(questionary.confirm(message, default=True).ask())


# ------------------------------------------------------------------ applying
def install_timeout(env: Any) -> float:
    from cudaenv import config

    return config.value(env, "CUDAENV_INSTALL_TIMEOUT")


def stream(argv: Sequence[str], env: Any, out: Any, timeout: float) -> Tuple[Optional[int], bool]:
    """Run ``argv`` with its output streaming to ``out``; (exit status or None, timed out). Kills the group on timeout."""
    kwargs: dict = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    try:
        # bounded: proc.wait(timeout=timeout) below kills the whole group when the install runs too long
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=dict(env), **kwargs)
    except OSError as exc:
        out.write("could not run %s: %s\n" % (argv[0], exc))
        return None, False

    def pump() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            out.write("  | " + raw.decode("utf-8", errors="replace"))
            try:
                out.flush()
            except (OSError, ValueError):
                pass

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill(proc)
        code, timed_out = None, True
    reader.join(timeout=5)
    return code, timed_out


def _kill(proc: "subprocess.Popen[bytes]") -> None:
    from cudaenv.host import kill_process_group

    kill_process_group(proc)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _apply(args: argparse.Namespace, ctx: Any, host: Any, before: Any, rec: Any) -> int:
    from cudaenv import config
    from cudaenv.collect import collect_snapshot
    from cudaenv.recommend import install_argv

    out = ctx.out
    verify_timeout = config.value(ctx.env, "CUDAENV_VERIFY_TIMEOUT")
    python = before.torch.python
    installer = rec.installer
    if installer == "uv" and host.which("uv") is None:
        raise UserError("this environment is managed by uv, but `uv` is not on PATH", hint="install uv, or run the pip command above by hand")
    argv = install_argv(rec, python, "uv" if installer == "uv" else "pip")
    old = before.torch.version if before.torch.installed else None
    timeout = install_timeout(ctx.env)
    out.write("\nRunning (timeout %d s): %s\n" % (timeout, " ".join(argv)))
    out.flush()
    started = time.monotonic()
    code, timed_out = stream(argv, ctx.env, out, timeout)
    seconds = time.monotonic() - started

    after = collect_snapshot(host, python=python, quick=False)
    t = after.torch
    now = t.version if t is not None and t.installed else None
    if timed_out or code != 0:
        if timed_out:
            out.write("\nThe install was stopped after %d s (CUDAENV_INSTALL_TIMEOUT).\n" % timeout)
        else:
            out.write("\nThe install failed: %s exited with status %s after %.0f s.\n" % (argv[0] if installer != "uv" else "uv", code, seconds))
        out.write("torch in %s is now: %s (before: %s).\n" % (python, now or "not installed", old or "not installed"))
        if installer == "uv":
            out.write("uv does not promise to restore the previous torch after a failure: check it before use.\n")
        elif timed_out:
            out.write("pip was killed mid-way, so the environment may be half-installed: "
                      "run `%s -m pip install --force-reinstall %s` to repair it.\n" % (python, "torch==%s" % old if old else "torch"))
        else:
            out.write("pip resolves and downloads everything before it removes the old torch, and puts the old one back "
                      "when installing the new one fails; it cannot promise that for a process that is killed.\n")
        return 1

    out.write("\nInstalled in %.0f s. torch in %s: %s -> %s" % (seconds, python, old or "not installed", now or "not installed"))
    if t is not None and t.installed:
        out.write(" (CUDA %s, cuda.is_available() = %s)" % (t.cuda or "none", t.cuda_available))
    out.write("\n")
    remaining = [f for f in _diagnose(after) if f.id in FIXABLE or f.id in ("torch-cuda-unavailable", "torch-import-error")]
    for f in remaining:
        out.write("still: [%s] %s\n" % (f.id, f.title))
    if not remaining:
        out.write("The doctor finds no torch problem now.\n")
    verify_code = 0
    if not args.no_verify:
        out.write("\nRunning the GPU check: cudaenv verify --python %s\n" % python)
        out.flush()
        verify_code, verify_timed_out = stream([sys.executable, "-m", "cudaenv", "verify", "--python", python], ctx.env, out,
                                               verify_timeout)
        if verify_timed_out:
            out.write("cudaenv verify timed out.\n")
    return 1 if any(f.severity == "error" for f in remaining) or verify_code else 0

