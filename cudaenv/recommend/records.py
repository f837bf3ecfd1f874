"""The records of the torch decision: the frozen request in, the recommendation out."""

from __future__ import annotations

from cudaenv.model.record import Record
from cudaenv.core.config import TORCH_INDEX

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Optional, Tuple


class Request(Record):
    """Everything the decision reads, frozen: the machine (probed, or what-if flags) and what was asked.

    ``gpus`` are (label, compute capability) of the GPUs CUDA would see; ``installed`` is the installed torch
    version with its local tag (``2.7.1+cpu``); ``companions`` are (name, installed version) pairs.
    """

    system: str = "linux"  # linux | windows | darwin
    machine: str = "x86_64"
    driver: Optional[str] = None
    driver_system: str = "linux"  # the driver table column: windows for Windows and WSL2
    gpus: Tuple[Tuple[str, Optional[str]], ...] = ()
    nvidia: bool = False
    python_version: Optional[str] = None  # "3.11", "3.13t"
    accelerator: Optional[str] = None  # rocm | xpu (non-NVIDIA GPUs seen)
    torch_version: Optional[str] = None  # asked for: "2.7.1", "2.7", "latest"; None = the installed one
    variant: Optional[str] = None  # asked for: "cu126"
    installed: Optional[str] = None  # "2.7.1+cpu" when torch is installed
    installer: str = "pip"  # pip | uv | conda | pixi
    python: Optional[str] = None  # the interpreter that gets the install
    companions: Tuple[Tuple[str, str], ...] = ()
    index_base: str = TORCH_INDEX
    externally_managed: bool = False  # PEP 668 and not a virtual environment
    jetson: Optional[str] = None  # the L4T release ("36.4.3") on a Jetson board
    jetpack: Optional[str] = None  # its JetPack release ("6.2"), where the tables know it
    python_asked: bool = False  # the Python version is a what-if, not the interpreter's
    interpreter_version: Optional[str] = None  # the probed interpreter's major.minor
    notes: Tuple[str, ...] = ()
    env_kind: Optional[str] = None  # the probed interpreter's environment: uv | venv | virtualenv | conda | pixi | system
    env_prefix: Optional[str] = None
    env_manifest: Optional[str] = None  # a pixi env's manifest
    env_cuda: Optional[str] = None  # the CUDA it declares for the solver
    env_channels: Tuple[str, ...] = ()
    driver_cuda: Optional[str] = None  # the driver's own CUDA (nvidia-smi's "CUDA Version"): conda's __cuda
    cuda_override: Optional[str] = None  # CONDA_OVERRIDE_CUDA as set ("" hides __cuda); None when unset
    libc: Optional[str] = None  # "glibc 2.36" in the interpreter
    kernel: Optional[str] = None  # the kernel release
    index_layout: str = "simple"  # simple (--index-url) | flat (--find-links: a mirror's one page of wheels) | upstream
    mirror: Optional[str] = None  # --mirror NAME (data/torch_mirrors.json) or URL


class Alternative(Record):
    kind: str  # variant | torch | driver | python | source
    summary: str
    variant: Optional[str] = None
    torch_version: Optional[str] = None
    index_url: Optional[str] = None
    driver: Optional[str] = None


class Candidate(Record):
    variant: str
    problems: Tuple[str, ...] = ()
    driver_only: bool = False  # the only problem is the driver (an upgrade fixes it)
    min_driver: Optional[str] = None
    no_wheel: bool = False  # a problem is that no wheel of it exists for the Python
    no_kernels: bool = False  # a problem is that a GPU has no kernels in it
    minor_compat: bool = False  # the driver runs its CUDA only through minor-version compatibility (below its bundled driver)

    @property
    def fits(self) -> bool:
        return not self.problems


class CondaInstall(Record):
    """The conda or pixi form of the decision (:mod:`cudaenv.recommend.conda`): conda-forge's ``pytorch-gpu`` pinned to a
    ``cuda-version`` the driver runs, or, where conda-forge has no such build, the PyPI wheel through the installer."""

    installer: str  # conda | pixi
    route: str  # conda-forge | pypi
    channel: Optional[str] = None  # "conda-forge" on the conda-forge route
    packages: Tuple[str, ...] = ()  # "pytorch-gpu==2.12.0", "cuda-version==12.9" (MatchSpecs)
    cuda_version: Optional[str] = None  # the cuda-version pinned
    argv: Tuple[str, ...] = ()  # what `cudaenv fix --yes` runs; () when nothing may run (the manifest needs an edit first)
    snippet: Tuple[str, ...] = ()  # manifest lines to add (pixi: [system-requirements], [pypi-dependencies])
    notes: Tuple[str, ...] = ()  # kinds: minor-compat | no-build | arch-too-old | channel-missing | declare-cuda | manifest-above-driver | no-manifest
    commands: Tuple[str, ...] = ()  # the line(s) a person runs (after the snippet, when there is one)


class VirtualPackage(Record):
    name: str  # __cuda | __cuda_arch | __glibc | __linux | __unix
    value: Optional[str] = None  # None: the solver sees none
    source: str = ""  # driver | CONDA_OVERRIDE_CUDA | GPUs | libc | kernel | system | unknown


class SolverView(Record):
    """What a conda or pixi solver sees on this machine, and what a pixi manifest should declare."""

    packages: Tuple[VirtualPackage, ...] = ()
    declare_cuda: Optional[str] = None  # the [system-requirements] cuda a pixi manifest should declare ("12")
    manifest: Optional[str] = None  # the pixi manifest of the probed environment
    manifest_cuda: Optional[str] = None  # what it declares
    problem: Optional[str] = None  # manifest-above-driver | manifest-missing-cuda | override-above-driver | None


class Recommendation(Record):
    """``cudaenv torch recommend --json`` (without the working values ``plain_packages`` and ``candidates``)."""

    _json_envelope = True
    _json_omit = ("plain_packages", "candidates")

    variant: Optional[str]  # None when nothing fits
    index_url: Optional[str]  # None for the plain PyPI wheel
    torch_version: Optional[str]
    commands: Tuple[str, ...] = ()
    reasons: Tuple[str, ...] = ()
    alternatives: Tuple[Alternative, ...] = ()
    ok: bool = False  # the variant fits this machine
    packages: Tuple[str, ...] = ()  # "torch==2.7.1+cu126", "torchvision==0.22.1+cu126"
    plain_packages: Tuple[str, ...] = ()  # without local tags (for pyproject)
    notes: Tuple[str, ...] = ()
    python: Optional[str] = None
    installer: str = "pip"
    candidates: Tuple[Candidate, ...] = ()
    platform: Optional[str] = None  # linux-x86_64 | linux-aarch64 | windows-x86_64 | macos-arm64 | ...
    installed_fits: bool = False  # the installed build already runs on this machine: nothing to install
    asked_variant: Optional[str] = None  # --variant, when it was asked for
    uv_auto: Optional[str] = None  # the build uv's --torch-backend=auto would pick instead (driver only), when it differs
    index_layout: str = "simple"  # how the index is named in the install line: simple (--index-url) | flat (--find-links) | upstream
    mirror: Optional[str] = None  # the --mirror the line names
    conda_install: Optional[CondaInstall] = None  # --installer conda|pixi: conda-forge's build (or the PyPI route)
    solver: Optional[SolverView] = None  # --installer conda|pixi: the virtual packages a solver sees here
