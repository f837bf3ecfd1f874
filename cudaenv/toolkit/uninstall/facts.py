"""What was inspected before planning a removal: plain frozen records, no I/O.

:func:`cudaenv.toolkit.uninstall.inspect.inspect_uninstall` fills them from a Host; tests build them by hand;
:func:`cudaenv.toolkit.uninstall.plan.plan_uninstall` and :func:`cudaenv.toolkit.uninstall.residue.find_residue` read them.
Every path is the inspected system's path (``/usr/local/cuda-11.8``), never the path on this machine.
"""

from dataclasses import dataclass, field
from typing import Optional, Tuple

from cudaenv.model.snapshot import CudaSymlink, Note, Toolkit
from cudaenv.toolkit.uninstall.rcfiles import RcLine
from cudaenv.toolkit.uninstall.wrappers import Wrapper


@dataclass(frozen=True)
class LdConf:
    file: str  # /etc/ld.so.conf.d/cuda-11-8.conf
    lines: Tuple[Tuple[int, str], ...]  # (line number, exact text) of the lines naming a target
    whole: bool  # every non-comment line names a target: the file goes
    owner: Optional[str] = None  # the dpkg package that owns the file, if any
    targets: Tuple[str, ...] = ()


@dataclass(frozen=True)
class AltEntry:
    name: str  # update-alternatives group: "cuda", "cuda-12"
    path: str  # the alternative (a toolkit folder)
    admin_file: str  # /var/lib/dpkg/alternatives/cuda
    link: Optional[str] = None  # the group's master link: /usr/local/cuda
    others: Tuple[str, ...] = ()  # the group's other alternatives


@dataclass(frozen=True)
class PipEnv:
    site_packages: str
    python: Optional[str]  # the interpreter to run pip with (--python, else the env's own bin/python)
    dists: Tuple[str, ...]  # exact distribution names: "nvidia-cuda-nvcc-cu12"
    dist_dirs: Tuple[str, ...] = ()  # their .dist-info folders
    torch: bool = False  # torch is installed there (it needs these wheels)


@dataclass(frozen=True)
class TargetFacts:
    toolkit: Toolkit
    present: bool  # the folder exists
    is_link: bool = False  # the toolkit path itself is a symbolic link
    entries: Tuple[str, ...] = ()  # top-level names in the folder now
    uninstaller: Optional[str] = None  # bin/cuda-uninstaller or bin/uninstall_cuda_*.pl
    package_manager: Optional[str] = None  # dpkg | rpm
    packages: Tuple[str, ...] = ()  # exact names of the packages owning files in the folder
    dependents: Tuple[str, ...] = ()  # installed packages that depend on them (apt removes them too)
    packages_unknown: bool = False  # rpm install but rpm cannot be asked
    unowned_entries: Tuple[str, ...] = ()  # top-level names holding something no package owns
    conda_prefix: Optional[str] = None
    conda_packages: Tuple[str, ...] = ()
    conda_meta_files: Tuple[str, ...] = ()  # conda-meta/*.json of those packages
    pip: Optional[PipEnv] = None
    windows_entries: Tuple[str, ...] = ()  # Apps & features names
    alternatives: Tuple[AltEntry, ...] = ()
    link_points_here: bool = False  # /usr/local/cuda (its text or where it resolves) is this toolkit
    active: bool = False  # it is the active toolkit (the nvcc a build uses now), also when the record does not say so
    related_packages: Tuple[str, ...] = ()  # installed cuda-*-X-Y style names (reported by --check, never removed)


@dataclass(frozen=True)
class DriverFacts:
    wsl: bool = False
    system: str = "linux"
    package_manager: Optional[str] = None  # dpkg | rpm
    packages: Tuple[str, ...] = ()  # exact installed driver package names
    runfile_uninstaller: Optional[str] = None  # /usr/bin/nvidia-uninstall


@dataclass(frozen=True)
class Inspection:
    system: str  # linux | windows | darwin
    targets: Tuple[TargetFacts, ...]
    toolkits: Tuple[Toolkit, ...] = ()  # every toolkit found (for --repoint choices)
    cuda_symlink: Optional[CudaSymlink] = None
    ldconf: Tuple[LdConf, ...] = ()
    rc_lines: Tuple[RcLine, ...] = ()
    wrappers: Tuple[Wrapper, ...] = ()  # links and wrapper scripts on PATH leading into a target
    driver: Optional[DriverFacts] = None
    home: Optional[str] = None
    root: str = "/"
    sudo: bool = True  # print `sudo` before commands that need root (not root, and a sudo is there)
    notes: Tuple[Note, ...] = field(default=())
