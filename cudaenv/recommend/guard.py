"""`cudaenv torch guard -- INSTALLER ARGS...`, its pure core: what torch build an install would replace or did replace,
and the line that keeps or brings back the build that was there.

An install is first asked for its plan where the installer has a dry run that says it: pip (``--dry-run --report -``:
pip resolves and prints what it would install, changing nothing), ``uv pip install --dry-run`` (its `` + torch==X``
lines) and ``conda install --dry-run --json`` (the transaction's LINK records: conda's package is ``pytorch``; a
LINK of it is a replacement, another version or another build of the same one). When that plan installs another
torch, nothing runs and the answer is the same command with the installed torch pinned (``torch==2.8.0+cu128`` from
its own index; for conda ``pytorch=VERSION=BUILD``, the build its plan would unlink), which keeps it or makes the
installer say why it cannot. Any other installer (a script, ``uv sync``) runs; then torch is read again (the
site-packages reader, nothing imported): a torch replaced (another version, another CUDA build, a CPU build, or
gone) is said with the command that restores it.
"""

import posixpath
from typing import Optional, Sequence, Tuple

from cudaenv.core.config import TORCH_INDEX
from cudaenv.model.record import Record, factory

INDEX_TAGS = ("cu", "rocm", "cpu", "xpu")  # local tags whose wheels live on their own index (TORCH_INDEX/<tag>)


class TorchState(Record):
    """torch as the site-packages reader saw it."""

    version: Optional[str] = None  # "2.8.0+cu128"; None: not installed
    nvidia: Tuple[str, ...] = ()  # the nvidia-* wheels: "nvidia-cudnn-cu12==9.10.2.21"


class GuardOutcome(Record):
    argv: Tuple[str, ...]
    python: Optional[str] = None
    before: TorchState = factory(TorchState)
    after: Optional[TorchState] = None  # None: the install did not run
    planned: Optional[str] = None  # the torch version the dry run would install ("" : it would install none)
    planner: Optional[str] = None  # whose dry run said it: pip | uv | conda
    blocked: bool = False  # the dry run said torch would change: nothing ran
    code: Optional[int] = None  # the installer's exit status (None: did not run, or timed out)
    timed_out: bool = False
    error: Optional[str] = None  # why the installer could not be started
    keep: Tuple[str, ...] = ()  # the command that keeps torch (after a blocked dry run)
    restore: Tuple[str, ...] = ()  # the command that brings torch back (after it changed)

    @property
    def changed(self) -> bool:
        return self.after is not None and self.after.version != self.before.version

    @property
    def nvidia_changed(self) -> bool:
        return self.after is not None and set(self.after.nvidia) != set(self.before.nvidia)

    @property
    def exit_code(self) -> int:
        """3: torch changed or would change; 1: the installer failed; 0: torch is as it was."""
        if self.blocked or self.changed:
            return 3
        if self.error or self.timed_out or (self.code not in (0, None)):
            return 1
        return 0


def pip_install_at(argv: Sequence[str]) -> Optional[int]:
    """Where ``install`` is in a pip command line (``pip install``, ``pip3 install``, ``python -m pip install``); None
    for any other command (uv, conda, a script: run as they are, no dry run)."""
    words = list(argv)
    for n, word in enumerate(words[:-1]):
        base = posixpath.basename(word)
        if base in ("pip", "pip3") or base.startswith("pip3."):
            if n > 0 and posixpath.basename(words[n - 1]) == "uv":
                return None  # uv pip has --dry-run but no --report
            return n + 1 if words[n + 1] == "install" else None
    return None


def uv_install_at(argv: Sequence[str]) -> Optional[int]:
    """Where ``install`` is in ``uv pip install ...``; None otherwise."""
    words = list(argv)
    if len(words) >= 3 and posixpath.basename(words[0]) == "uv" and words[1:3] == ["pip", "install"]:
        return 2
    return None


CONDA_TOOLS = ("conda",)  # whose --dry-run --json is read (tests/recorded/conda-update-dry-run-json-4.4.txt)
CONDA_PACKAGES = ("pytorch", "torch")  # the conda packages that are torch (conda-forge and the pytorch channel: pytorch)


def conda_install_at(argv: Sequence[str]) -> Optional[int]:
    """Where ``install`` (or ``update``/``upgrade``) is in ``conda install ...``; None otherwise."""
    words = list(argv)
    if len(words) >= 2 and posixpath.basename(words[0]) in CONDA_TOOLS and words[1] in ("install", "update", "upgrade"):
        return 1
    return None


def installer_of(argv: Sequence[str]) -> Optional[str]:
    """pip | uv | conda: whose dry run says what an install would do; None for anything else (it just runs)."""
    if pip_install_at(argv) is not None:
        return "pip"
    if uv_install_at(argv) is not None:
        return "uv"
    if conda_install_at(argv) is not None:
        return "conda"
    return None


def installer_python(argv: Sequence[str]) -> Optional[str]:
    """The interpreter an install command line installs into, where it says: ``PY -m pip ...`` -> PY,
    ``/venv/bin/pip ...`` -> /venv/bin/python, ``uv pip install --python PY`` -> PY; None otherwise (a bare ``pip``:
    the one on PATH, as the doctor finds it)."""
    words = list(argv)
    if len(words) >= 3 and words[1:3] == ["-m", "pip"]:
        return words[0]
    if words and posixpath.basename(words[0]) == "uv" and "--python" in words[:-1]:
        return words[words.index("--python") + 1]
    if words and posixpath.basename(words[0]).startswith("pip") and posixpath.dirname(words[0]):
        return posixpath.join(posixpath.dirname(words[0]), "python")
    return None


def dry_run_argv(argv: Sequence[str]) -> Optional[Tuple[str, ...]]:
    """The same install asked for its plan only (pip 22.2 and later, uv, conda), or None when it is none of theirs
    or already a dry run."""
    kind = installer_of(argv)
    if kind is None or any(a in ("--dry-run", "--report", "--json") for a in argv):
        return None
    words = list(argv)
    at = {"pip": pip_install_at, "uv": uv_install_at, "conda": conda_install_at}[kind](argv)
    extra = {"pip": ["--dry-run", "--quiet", "--report", "-"], "uv": ["--dry-run"], "conda": ["--dry-run", "--json"]}[kind]
    return tuple(words[:at + 1] + extra + words[at + 1:])


def planned_torch(items) -> str:
    """The torch version in pip's report's install list ("" when it installs no torch)."""
    return next((item.version for item in items if item.name.lower() == "torch"), "")


def read_plan(kind: str, stdout: str, stderr: str) -> Tuple[str, Optional[str]]:
    """(the torch the dry run of installer ``kind`` would install, "" for none; for conda, the spec that pins the
    torch it would unlink, ``pytorch=2.5.1=cuda126_py312h...``, else None)."""
    if kind == "pip":
        from cudaenv.parse.pip_output import parse_install_report

        return planned_torch(parse_install_report(stdout)), None
    if kind == "uv":
        from cudaenv.parse.install_plans import parse_uv_plan

        plan = parse_uv_plan(stderr + "\n" + stdout)  # uv prints its plan on stderr
        return next((v for sign, name, v in plan if sign == "+" and name.lower() == "torch"), ""), None
    from cudaenv.parse.install_plans import parse_conda_plan

    plan = parse_conda_plan(stdout)
    if plan is None:
        return "", None
    link, unlink = plan
    new = next(((v, b) for name, v, b in link if name.lower() in CONDA_PACKAGES), None)
    old = next(((name, v, b) for name, v, b in unlink if name.lower() in CONDA_PACKAGES), None)
    pin = "%s=%s=%s" % old if old and old[2] else ("%s==%s" % old[:2] if old else None)
    return ("%s (%s)" % new if new and new[1] else new[0] if new else ""), pin


def _index(version: str) -> Optional[str]:
    tag = version.split("+", 1)[1] if "+" in version else ""
    return "%s/%s" % (TORCH_INDEX, tag) if tag.startswith(INDEX_TAGS) else None


def keep_argv(argv: Sequence[str], version: str, kind: str = "pip", pin: Optional[str] = None) -> Tuple[str, ...]:
    """The install with the installed torch pinned beside it (and its index as an extra one, for a local tag); conda:
    ``pin`` (the build its plan would unlink), else ``pytorch==VERSION``."""
    if kind == "conda":
        return tuple(list(argv) + [pin or "pytorch==%s" % version])
    index = _index(version)
    return tuple(list(argv) + ["torch==%s" % version] + (["--extra-index-url", index] if index else []))


def restore_command(version: str, python: Optional[str], installer: Optional[str], system: str = "linux") -> Tuple[str, ...]:
    """The command that installs ``version`` of torch again, from its own index."""
    from cudaenv.recommend.install import commands

    return tuple(commands(["torch==%s" % version], _index(version), "uv" if installer == "uv" else "pip", python, system))
