"""`cudaenv torch guard -- INSTALLER ARGS...`, its pure core: what torch build an install would replace or did replace,
and the line that keeps or brings back the build that was there.

An install is first asked for its plan where the installer has a dry run that says it: pip (``--dry-run --report -``:
pip resolves and prints what it would install, changing nothing; ``PY -m pip`` too), ``uv pip install|sync --dry-run``
(its `` + torch==X`` lines; ``PY -m uv pip ...`` too) and ``conda install --dry-run --json`` (the transaction's LINK records: conda's package is ``pytorch``; a
LINK of it is a replacement, another version or another build of the same one); ``mamba`` and ``micromamba``
``install``/``create``/``update`` print the same document for the same two flags (:data:`CONDA_FAMILY`). When that plan
installs another torch, or uninstalls torch and installs none (``uv pip sync``'s `` - torch==X`` alone, an UNLINK of
pytorch alone), nothing runs and the answer is the same command with the installed torch pinned (``torch==2.8.0+cu128`` from
its own index; for conda ``pytorch=VERSION=BUILD``, the build its plan would unlink), which keeps it or makes the
installer say why it cannot. Any other installer (a script, ``uv sync``) runs; then torch is read again (the
site-packages reader, nothing imported): a torch replaced (another version, another CUDA build, a CPU build, or
gone) is said with the command that restores it.
"""

import ntpath
import posixpath
from typing import Mapping, Optional, Sequence, Tuple

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
    planner: Optional[str] = None  # whose dry run said it (or would have): pip | uv | conda | mamba | micromamba; None: no dry run known
    dry_code: Optional[int] = None  # the dry run's exit status where it failed (the install then ran unguarded)
    dry_error: Optional[str] = None  # or why it gave none: timeout | missing | oserror | interrupted
    blocked: bool = False  # the dry run said torch would change: nothing ran
    removes: bool = False  # the dry run would uninstall torch and install none (uv pip sync, a conda plan's UNLINK alone)
    code: Optional[int] = None  # the installer's exit status (None: did not run, or timed out)
    timed_out: bool = False
    error: Optional[str] = None  # why the installer could not be started
    keep: Tuple[str, ...] = ()  # the command that keeps torch (after a blocked dry run)
    keep_requirements: Tuple[str, ...] = ()  # or the lines to add to the requirements file it syncs (uv pip sync)
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
            if n > 0 and ntpath.basename(words[n - 1]) in ("uv", "uv.exe"):
                return None  # uv pip has --dry-run but no --report
            return n + 1 if words[n + 1] == "install" else None
    return None


UV_SUBCOMMANDS = ("install", "sync")  # `uv pip install|sync --help`: "--dry-run  Perform a dry run, i.e., don't actually
# install anything but resolve the dependencies and print the resulting plan" (uv 0.13.9); sync also uninstalls what
# its requirement files leave out (tests/recorded/uv-pip-sync-dry-run-0.13.9.txt: ` - torch==2.8.0+cu128`)


def uv_at(argv: Sequence[str]) -> Optional[int]:
    """Where ``uv`` is in a command line: 0 for ``uv ...`` (``/path/uv``, ``uv.exe``), 2 for ``PY -m uv ...`` (the
    uv package's own ``__main__``, which runs its uv binary: astral-sh/uv python/uv/__main__.py); None otherwise."""
    words = list(argv)
    if words and ntpath.basename(words[0]) in ("uv", "uv.exe"):  # both separators
        return 0
    if len(words) >= 3 and words[1:3] == ["-m", "uv"]:
        return 2
    return None


def uv_install_at(argv: Sequence[str]) -> Optional[int]:
    """Where ``install`` (or ``sync``) is in ``uv pip install ...`` / ``uv pip sync ...`` (or ``PY -m uv pip ...``);
    None otherwise."""
    words = list(argv)
    at = uv_at(words)
    if at is not None and len(words) >= at + 3 and words[at + 1] == "pip" and words[at + 2] in UV_SUBCOMMANDS:
        return at + 2
    return None


def _uv_sync(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is ``uv pip sync ...`` (its arguments are requirement files, not packages)."""
    at = uv_install_at(argv)
    return at is not None and argv[at] == "sync"


# The installers whose ``--dry-run --json`` is conda's transaction document, and the subcommands that install:
# - conda: install, update, upgrade, create (tests/recorded/conda-update-dry-run-json-4.4.txt);
# - mamba 1.x is conda's own command line (its plan printed by conda's JSON printer, mamba-org/mamba#207);
# - micromamba and mamba 2.x: install, create, update, with the global options ``--dry-run`` ("Only display what would
#   have been done") and ``--json`` ("Report all output as json"), and the prefix options ``-r,--root-prefix``,
#   ``-p,--prefix``, ``-n,--name`` (mamba-org/mamba docs/source/user_guide/commands_micromamba/install.rst). Its
#   ``-y,--yes`` is not needed: a dry run returns before the "Confirm changes" prompt (libmamba's
#   MTransaction::prompt: ``if (dry_run || empty()) return true``). Real documents: tests/recorded/
#   micromamba-create-dry-run-json-1.5.12.txt and mamba-create-dry-run-json-2.6.0.txt.
CONDA_FAMILY = {"conda": ("install", "update", "upgrade", "create"), "mamba": ("install", "update", "create"),
                "micromamba": ("install", "update", "create")}
CONDA_TOOLS = tuple(CONDA_FAMILY)
CONDA_PACKAGES = ("pytorch", "torch")  # the conda packages that are torch (conda-forge and the pytorch channel: pytorch)


def conda_tool(word: str) -> Optional[str]:
    """conda | mamba | micromamba for a program path (``/opt/conda/bin/mamba``, ``micromamba.exe``, Windows'
    ``condabin\\conda.bat``); None otherwise."""
    base = ntpath.basename(word)  # both separators
    base = base[:-4] if base.lower().endswith((".exe", ".bat")) else base
    return base if base in CONDA_FAMILY else None


def conda_install_at(argv: Sequence[str]) -> Optional[int]:
    """Where the installing subcommand (install, update, create; conda's upgrade) is in a conda, mamba or micromamba
    command line; None otherwise."""
    words = list(argv)
    tool = conda_tool(words[0]) if len(words) >= 2 else None
    return 1 if tool is not None and words[1] in CONDA_FAMILY[tool] else None


def _option(words: Sequence[str], short: str, long: str) -> Optional[str]:
    """The value of ``-p PATH``, ``--prefix PATH`` or ``--prefix=PATH`` (the last one given), or None."""
    found = None
    for n, word in enumerate(words):
        if word in (short, long) and n + 1 < len(words):
            found = words[n + 1]
        elif word.startswith(long + "="):
            found = word[len(long) + 1:]
    return found or None


def conda_target_python(argv: Sequence[str], env: Mapping[str, str], system: str = "linux",
                        program: Optional[str] = None) -> Tuple[Optional[str], bool]:
    """(the Python of the environment a conda/mamba/micromamba install goes into, whether the command line names that
    environment): ``-p/--prefix PREFIX``; ``-n/--name NAME`` under the root prefix (``-r/--root-prefix``, else
    ``MAMBA_ROOT_PREFIX`` for micromamba and mamba, else for conda and mamba the root the program lives in,
    ``ROOT/bin/conda``: ``program`` is where the bare name was found on PATH; micromamba's single binary lives anywhere,
    and its default root differs between releases, so it is not guessed); ``base`` is the root itself; neither: the active environment,
    ``CONDA_PREFIX``, as the tools themselves take it. (None, True): it names one whose root is not known."""
    words = list(argv)
    tool = conda_tool(words[0]) if words else None
    if tool is None:
        return None, False
    path = ntpath if system == "windows" else posixpath
    prefix = _option(words, "-p", "--prefix")
    name = _option(words, "-n", "--name") if prefix is None else None
    named = prefix is not None or name is not None
    if name is not None:
        root = _option(words, "-r", "--root-prefix")
        if root is None and tool != "conda":
            root = env.get("MAMBA_ROOT_PREFIX") or None
        where = words[0] if path.dirname(words[0]) else program
        if root is None and tool != "micromamba" and where and path.dirname(where):  # micromamba's binary lives anywhere
            root = path.dirname(path.dirname(where))  # ROOT/bin/conda (ROOT\\Scripts\\conda.exe)
        if not root:
            return None, True
        prefix = root if name == "base" else path.join(root, "envs", name)
    elif prefix is None:
        prefix = env.get("CONDA_PREFIX") or None
        if prefix is None:
            return None, False
    return (path.join(prefix, "python.exe") if system == "windows" else path.join(prefix, "bin", "python")), named


def installer_of(argv: Sequence[str]) -> Optional[str]:
    """pip | uv | conda | mamba | micromamba: whose dry run says what an install would do; None for anything else (it
    just runs)."""
    if pip_install_at(argv) is not None:
        return "pip"
    if uv_install_at(argv) is not None:
        return "uv"
    if conda_install_at(argv) is not None:
        return conda_tool(argv[0])
    return None


def installer_python(argv: Sequence[str]) -> Optional[str]:
    """The interpreter an install command line installs into, where it says: ``PY -m pip ...`` -> PY,
    ``/venv/bin/pip ...`` -> /venv/bin/python, ``uv pip install --python PY`` -> PY, ``PY -m uv pip ...`` -> PY (an
    active VIRTUAL_ENV of another environment would win there, as uv's __main__ only sets one that is unset); None otherwise (a bare ``pip``:
    the one on PATH, as the doctor finds it)."""
    words = list(argv)
    if len(words) >= 3 and words[1:3] == ["-m", "pip"]:
        return words[0]
    if uv_at(words) is not None and "--python" in words[:-1]:
        return words[words.index("--python") + 1]
    if uv_at(words) == 2:  # PY -m uv pip ...: uv's __main__ points uv at PY (its venv as VIRTUAL_ENV, PY as the parent)
        return words[0]
    if words and posixpath.basename(words[0]).startswith("pip") and posixpath.dirname(words[0]):
        return posixpath.join(posixpath.dirname(words[0]), "python")
    return None


def dry_run_argv(argv: Sequence[str]) -> Optional[Tuple[str, ...]]:
    """The same install asked for its plan only (pip 22.2 and later, uv, conda, mamba, micromamba), or None when it is
    none of theirs or already a dry run."""
    kind = installer_of(argv)
    if kind is None or any(a in ("--dry-run", "--report", "--json") for a in argv):
        return None
    words = list(argv)
    conda = kind in CONDA_FAMILY
    at = conda_install_at(argv) if conda else {"pip": pip_install_at, "uv": uv_install_at}[kind](argv)
    extra = ["--dry-run", "--json"] if conda else {"pip": ["--dry-run", "--quiet", "--report", "-"], "uv": ["--dry-run"]}[kind]
    return tuple(words[:at + 1] + extra + words[at + 1:])


def planned_torch(items) -> str:
    """The torch version in pip's report's install list ("" when it installs no torch)."""
    return next((item.version for item in items if item.name.lower() == "torch"), "")


def read_plan(kind: str, stdout: str, stderr: str) -> Tuple[str, Optional[str], bool]:
    """(the torch the dry run of installer ``kind`` would install, "" for none; for conda, mamba and micromamba, the
    spec that pins the torch it would unlink, ``pytorch=2.5.1=cuda126_py312h...``, else None; whether it would
    uninstall torch and install none)."""
    if kind == "pip":
        from cudaenv.parse.pip_output import parse_install_report

        return planned_torch(parse_install_report(stdout)), None, False  # pip install uninstalls only what it replaces
    if kind == "uv":
        from cudaenv.parse.install_plans import parse_uv_plan

        plan = parse_uv_plan(stderr + "\n" + stdout)  # uv prints its plan on stderr
        new = next((v for sign, name, v in plan if sign == "+" and name.lower() == "torch"), "")
        return new, None, not new and any(sign == "-" and name.lower() == "torch" for sign, name, v in plan)
    from cudaenv.parse.install_plans import parse_conda_plan

    plan = parse_conda_plan(stdout)
    if plan is None:
        return "", None, False
    link, unlink = plan
    new = next(((v, b) for name, v, b in link if name.lower() in CONDA_PACKAGES), None)
    old = next(((name, v, b) for name, v, b in unlink if name.lower() in CONDA_PACKAGES), None)
    pin = "%s=%s=%s" % old if old and old[2] else ("%s==%s" % old[:2] if old else None)
    return ("%s (%s)" % new if new and new[1] else new[0] if new else ""), pin, new is None and old is not None


def _index(version: str) -> Optional[str]:
    tag = version.split("+", 1)[1] if "+" in version else ""
    return "%s/%s" % (TORCH_INDEX, tag) if tag.startswith(INDEX_TAGS) else None


def keep_argv(argv: Sequence[str], version: str, kind: str = "pip", pin: Optional[str] = None) -> Tuple[str, ...]:
    """The install with the installed torch pinned beside it (and its index as an extra one, for a local tag); conda,
    mamba, micromamba: ``pin`` (the build its plan would unlink), else ``pytorch==VERSION``. None for ``uv pip sync``,
    whose arguments are requirement files, not packages (:func:`keep_requirements`)."""
    if kind in CONDA_FAMILY:
        return tuple(list(argv) + [pin or "pytorch==%s" % version])
    if kind == "uv" and _uv_sync(argv):
        return ()
    index = _index(version)
    return tuple(list(argv) + ["torch==%s" % version] + (["--extra-index-url", index] if index else []))


def keep_requirements(argv: Sequence[str], version: str, kind: str) -> Tuple[str, ...]:
    """For ``uv pip sync``: the lines that keep torch ``version`` in the requirement files it syncs (the pin, and its
    index for a local tag, an option line a requirements file takes); () for any other install."""
    if kind != "uv" or not _uv_sync(argv):
        return ()
    index = _index(version)
    return ("torch==%s" % version,) + (("--extra-index-url %s" % index,) if index else ())


def conda_restore_command(argv: Sequence[str], version: str, pin: Optional[str] = None) -> Tuple[str, ...]:
    """The conda/mamba/micromamba line that installs torch ``version`` again into the environment ``argv`` installed
    into (its ``-n``/``-p``/``-r`` options kept): ``pin`` (the build its dry run said it would unlink) where known."""
    import shlex

    words, keep = list(argv), []
    for n, word in enumerate(words):
        if word in ("-n", "--name", "-p", "--prefix", "-r", "--root-prefix") and n + 1 < len(words):
            keep += [word, words[n + 1]]
        elif word.startswith(("--name=", "--prefix=", "--root-prefix=")):
            keep.append(word)
    return (" ".join(shlex.quote(w) for w in [words[0], "install"] + keep + [pin or "pytorch==%s" % version]),)


def restore_command(version: str, python: Optional[str], installer: Optional[str], system: str = "linux") -> Tuple[str, ...]:
    """The command that installs ``version`` of torch again, from its own index."""
    from cudaenv.recommend.install import commands

    return tuple(commands(["torch==%s" % version], _index(version), "uv" if installer == "uv" else "pip", python, system))
