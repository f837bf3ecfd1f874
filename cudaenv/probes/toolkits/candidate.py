"""A folder some place proposes as a CUDA toolkit, with the place that proposed it: what
:mod:`cudaenv.probes.toolkits.candidates` makes and :mod:`cudaenv.probes.toolkits.folder` reads."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


class ToolkitCandidate:
    """A folder some place proposes as a toolkit."""

    __slots__ = ("path", "source", "method", "version", "version_source", "strict", "force", "label", "key")

    def __init__(
        self,
        path: str,  # as the inspected system names it
        source: str,
        method: Optional[str] = None,  # an install method the place itself tells (conda, pip, windows-installer)
        version: Optional[str] = None,  # from package metadata (pip dist-info, conda-meta)
        version_source: Optional[str] = None,
        strict: bool = False,  # note it when the folder holds no toolkit (named like one, or given by the user)
        force: bool = False,  # keep it even without toolkit markers (a pip runtime wheel)
        label: Optional[str] = None,  # how to name it in a note ("CUDA_HOME=/x")
        key: Optional[str] = None,  # its resolved path when the place already knows it (a real folder in a known one)
    ):
        self.path, self.source, self.method, self.version = path, source, method, version
        self.version_source, self.strict, self.force, self.label = version_source, strict, force, label
        self.key = key


class FolderListing:
    """A folder of toolkit folders (a cluster's module tree) as the names of its subfolders, proposed without a candidate each (`cudaenv use` on a tree
    of a thousand toolkits reads the names first; :func:`cudaenv.probes.toolkits.named.probe_toolkits_named` makes a
    :class:`ToolkitCandidate` only for the few it reads). ``names``: sorted ``(name, is_link)``; ``at``: the folder
    as given, with a trailing ``/``; ``real_at``: its resolved path with a trailing ``/`` (None when it has none)."""

    __slots__ = ("at", "real_at", "names", "source")

    def __init__(self, at: str, real_at: Optional[str], names: list, source: str):
        self.at, self.real_at, self.names, self.source = at, real_at, names, source

    def candidate(self, name: str, is_link: bool) -> ToolkitCandidate:
        """The candidate of one subfolder, as the folder-by-folder listing proposes it."""
        real_at = self.real_at
        return ToolkitCandidate(self.at + name, self.source, key=None if is_link or real_at is None else real_at + name)
