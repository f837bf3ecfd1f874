"""Each command's JSON output as one record (an envelope: ``schema_version`` first), and the finding record.

The snapshot records live in :mod:`cudaenv.model.snapshot` (they are on the ``cudaenv use`` path); the envelopes here
hold them. Every record is written and read by the one codec (``to_dict()`` / ``from_dict()``,
:mod:`cudaenv.model.codec`)::

    report = DoctorReport.from_dict(json.loads(text))   # checks schema_version, ignores unknown keys
"""

from __future__ import annotations

from cudaenv.model.record import Record
from cudaenv.model.snapshot import ActiveToolkit, CudaSymlink, Note, Snapshot, Toolkit

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Optional, Tuple


class Finding(Record):
    """One thing the doctor found: a stable id (shared with explain and verify), the cause, the exact fix."""

    id: str
    severity: str  # error | warning | info
    title: str  # one line
    detail: str  # the cause in plain words, with this machine's values
    fix: Tuple[str, ...] = ()  # concrete commands or code, this machine's values filled in
    section: str = "environment"
    fix_kind: Optional[str] = None  # who applies the fix: command | host | reboot | user-code (data/findings.json)


class StackDifference(Record):
    """One requirement of the stack this machine does not meet, and what converges it."""

    what: str  # driver | gpu-arch | cuda-major | torch | wheel | toolkit
    wanted: Optional[str] = None
    have: Optional[str] = None
    commands: Tuple[str, ...] = ()  # shell commands; an item starting with "# " is an instruction in words


class StackCheck(Record):
    """``doctor --against FILE``: the stack file and the differences (none: the machine holds the stack)."""

    file: str
    locked_on: Optional[str] = None
    differences: Tuple[StackDifference, ...] = ()


class ImageFacts(Record):
    """``doctor --image REF``: what a container image says about its CUDA, read from its files without running it (a
    ``docker save`` tarball, an OCI layout folder, ``docker image inspect`` output or an image config saved as JSON), or
    from the local engine's ``docker image inspect`` (podman's) of an image it holds."""

    ref: str  # the path given
    kind: str  # docker-save | oci-layout | inspect-json | config-json | engine-inspect (the local engine's) | unknown
    readable: bool = True
    why: Optional[str] = None  # why it could not be read (readable False)
    tags: Tuple[str, ...] = ()  # RepoTags / the manifest's tags ("nvidia/cuda:12.4.1-base-ubuntu22.04")
    cuda_version: Optional[str] = None  # the CUDA it ships: CUDA_VERSION (NVIDIA's images), else a version.json
    cuda_from: Optional[str] = None  # where that came from: "CUDA_VERSION" | "NV_CUDA_CUDART_VERSION" | a version.json path
    require_cuda: Optional[str] = None  # NVIDIA_REQUIRE_CUDA as set (the runtime's check before the container starts)
    require_disabled: bool = False  # NVIDIA_DISABLE_REQUIRE set in the image (the runtime skips the check)
    compat_package: Optional[str] = None  # NV_CUDA_COMPAT_PACKAGE ("cuda-compat-12-4"): forward compatibility inside
    toolkits: Tuple[str, ...] = ()  # version.json's of every usr/local/cuda-X.Y in the layers ("12.4.131")
    torch: Optional[str] = None  # torch's version from a site-packages dist-info in the layers ("2.5.1+cu124")
    layers_read: int = 0  # layers walked (0: the config alone)
    notes: Tuple[str, ...] = ()  # what was left unread (a cap, an unknown compression, a link out)


class DoctorReport(Record):
    """``cudaenv doctor --json``: the snapshot's keys (schema_version first, ``cudaenv_version`` among them), the
    node's ``hostname`` (the inspected root's /etc/hostname under ``--root``) and ``generated_at`` (UTC, ISO 8601:
    ``2026-12-03T05:53:48Z``; both null in reports of cudaenv versions before them), then ``findings``."""

    _json_envelope = True
    _json_flatten = ("snapshot",)
    _json_skip_none = ("against", "image")

    snapshot: Snapshot
    findings: Tuple[Finding, ...] = ()
    hostname: Optional[str] = None
    generated_at: Optional[str] = None
    against: Optional[StackCheck] = None  # `doctor --against FILE` only: the machine checked against a stack file
    image: Optional[ImageFacts] = None  # `doctor --image REF` only: the image read, its findings among ``findings``

    def _json_adjust(self, data):
        data["findings"] = data.pop("findings")  # the long list last, after the node's name and time
        for key in ("against", "image"):
            if key in data:
                data[key] = data.pop(key)


class ToolkitList(Record):
    """``cudaenv list --json``."""

    _json_envelope = True

    toolkits: Tuple[Toolkit, ...] = ()
    cuda_symlink: Optional[CudaSymlink] = None
    active_toolkit: Optional[ActiveToolkit] = None
    notes: Tuple[Note, ...] = ()


class RefreshReport(Record):
    """``cudaenv torch refresh --json``: what was learned from the index (the counts only when it was read)."""

    _json_envelope = True
    _json_skip_none = ("pages_read", "pages_failed", "variants", "new_variants", "torch_versions", "new_torch_versions")

    ok: bool
    index_base: str
    cache_file: Optional[str] = None
    pages_read: Optional[int] = None
    pages_failed: Optional[int] = None
    variants: Optional[Tuple[str, ...]] = None
    new_variants: Optional[Tuple[str, ...]] = None
    torch_versions: Optional[Tuple[str, ...]] = None
    new_torch_versions: Optional[Tuple[str, ...]] = None
    notes: Tuple[str, ...] = ()
