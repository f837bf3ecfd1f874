"""The snapshot's records of the toolkits: a toolkit found, the /usr/local/cuda link, the active toolkit, and a probe's
note. Part of the snapshot's JSON contract (:mod:`cudaenv.model.snapshot` re-exports each, so every import of them
from there and the codec are unchanged); a module of their own because `cudaenv use`, which builds only these, must not
define the snapshot's other records on its start-up path (issue 35).
"""

from __future__ import annotations

from cudaenv.model.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing is not imported on the fast path
    from typing import Optional, Tuple


class Note(Record):
    """Something a probe could not do, or saw fail ("nvidia-smi timed out after 5 s")."""

    probe: str
    message: str


class Toolkit(Record):
    version: Optional[str]  # "12.4.131" or "12.4" where only major.minor is known
    path: str  # the toolkit root, as the inspected system names it
    source: str  # where it was found: "/usr/local/cuda-*", "CUDA_HOME", "PATH", "conda", "pip", ...
    install_method: str = "unknown"  # runfile | deb | rpm | conda | pip | pip-wheels | cudaenv | windows-installer | distro | unknown
    active: bool = False  # the toolkit a build would use now (nvcc on PATH, else CUDA_HOME)
    version_source: Optional[str] = None  # version.json | version.txt | dist-info | conda-meta | cuda.h | nvcc-file (read from nvcc's bytes) | nvcc (run)
    nvcc: Optional[str] = None  # path of bin/nvcc when present
    lib_dir: Optional[str] = None  # lib64 or lib (targets/*/lib on some)
    on_path: bool = False  # its bin is on PATH
    in_ld_library_path: bool = False
    is_cuda_home: bool = False  # CUDA_HOME (or CUDA_PATH) points at it
    is_link_target: bool = False  # /usr/local/cuda points at it
    bundled_driver: Optional[str] = None  # version.json's nvidia_driver (the installer's, not the installed one)
    sources: Tuple[str, ...] = ()  # every source that found it


class CudaSymlink(Record):
    path: str  # "/usr/local/cuda"
    target: Optional[str]  # the link's text as written ("/usr/local/cuda-13.0" or "cuda-12.1")
    resolved: Optional[str] = None  # the final path, None when dangling or looping
    dangling: bool = False
    alternatives: bool = False  # managed through /etc/alternatives/cuda


class ActiveToolkit(Record):
    path: Optional[str]
    nvcc: Optional[str] = None  # the nvcc PATH resolves (a wrapper's exec target followed)
    version: Optional[str] = None
    via: str = "PATH"  # PATH | CUDA_HOME | CUDA_PATH
    nvcc_on_path: Tuple[str, ...] = ()  # every nvcc on PATH, in PATH order, before resolving
