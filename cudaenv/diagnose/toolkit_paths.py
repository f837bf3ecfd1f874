"""Toolkits on the machine's paths: the /usr/local/cuda link (dangling, or another CUDA than the nvcc on PATH) and
several toolkits' bin folders on PATH (the toolkits section)."""

from __future__ import annotations

import posixpath

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M
from cudaenv.core.version import compare_versions, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional

F = c.make("toolkits")


def _newest(s):
    best = None
    for t in s.toolkits:
        if version_key(t.version) and (best is None or compare_versions(t.version, best.version) > 0):
            if c.norm(t.path) != c.norm(s.cuda_symlink.path if s.cuda_symlink else None):
                best = t
    return best


def link_dangling(s) -> List:
    link = s.cuda_symlink
    if link is None or not link.dangling:
        return []
    path, version, _ = c.active_toolkit(s)
    target = path if path and c.norm(path) != c.norm(link.path) else (_newest(s).path if _newest(s) else None)
    fix = []
    if link.alternatives:
        fix.append("%supdate-alternatives --config cuda" % c.sudo(s))
    if target:
        fix.append(M("%sln -sfn %s %s    # or: cudaenv link %s", c.sudo(s), c.quote(target), c.quote(link.path),
                     c.short(version) if version and path == target else target))
    fix.append(M("%srm %s    # if no toolkit should be the default", c.sudo(s), c.quote(link.path)))
    return [
        F(
            "cuda-link-dangling",
            "warning",
            M("%s points at %s, which does not exist", link.path, link.target),
            M("The %s link%s points at %s, which is gone (a toolkit was removed). Builds and scripts that use %s "
            "(CUDA_HOME defaults, CMake's FindCUDAToolkit, rc files) find no toolkit.", link.path, (M(" (through /etc/alternatives/cuda)") if link.alternatives else ""), link.target, link.path),
            fix,
        )
    ]


def link_not_active(s) -> List:
    link = s.cuda_symlink
    if link is None or link.dangling or not link.resolved:
        return []
    path, version, via = c.active_toolkit(s)
    if not path or via != "PATH":
        return []
    if c.canonical(s, path) == c.canonical(s, link.path):
        return []
    target = c.toolkit_at(s, link.resolved)
    tv = target.version if target is not None else None
    if tv and version and c.short(tv) == c.short(version):
        return []  # the same CUDA X.Y both ways (`cudaenv install 13.0` beside a system 13.0): builds agree
    nvcc = s.active_toolkit.nvcc if s.active_toolkit is not None and s.active_toolkit.nvcc else posixpath.join(path, "bin", "nvcc")
    on_path = c.toolkit_at(s, path)
    private = (on_path is not None and on_path.install_method == "cudaenv") or _in_a_home(path)
    return [
        F(
            "cuda-link-not-active",
            "warning",
            M("%s is CUDA %s, but the nvcc on PATH is CUDA %s", link.path, (c.short(tv) if tv else link.target), c.short(version)),
            M("%s points at %s%s, while PATH finds %s (%s%s). Tools that use the link (CMake, CUDA_HOME=%s) and tools "
            "that run nvcc from PATH build with different toolkits.", link.path, link.resolved, (M(" (CUDA %s)", tv) if tv else ""), nvcc, path, (M(", CUDA %s", version) if version else ""), link.path),
            [
                c.use_fix(tv, M("use the link's toolkit in this shell")) if tv else None,
                # the system-wide link never points into one user's home (a cudaenv install is that user's)
                None if private or not version else
                M("cudaenv link %s    # or point the link at the one on PATH", c.short(version)),
            ],
        )
    ]


def _in_a_home(path: Optional[str]) -> bool:
    p = c.norm(path) or ""
    return p == "/root" or p.startswith(("/root/", "/home/"))


def several_on_path(s) -> List:
    tks = c.distinct_toolkits(s, lambda t: t.on_path and (t.active or _bin_on_path(s, t)))
    if len(tks) < 2:
        return []
    path, version, _ = c.active_toolkit(s)
    listing = ", ".join("%s (%s)" % (t.path, c.short(t.version)) for t in tks)
    keep = version or tks[0].version
    return [
        F(
            "multiple-toolkits-on-path",
            "warning",
            M("%d CUDA toolkits are on PATH", len(tks)),
            M("PATH holds the bin folders of %s. The first one wins for nvcc, but other tools (ptxas, nvdisasm, "
            "cuda-gdb) and build systems may pick another, mixing CUDA versions.", listing),
            [c.use_fix(keep, M("keeps one toolkit on PATH, removes the others"))] if keep else [],
        )
    ]


def _bin_on_path(s, t) -> bool:
    """The toolkit's own bin folder is on PATH (an nvcc listed there): `cudaenv use` can take it off. A toolkit
    reached only through exec wrappers or links in a shared folder (/usr/local/bin), behind the active one, is
    shadowed by it and is not a second toolkit on PATH."""
    a = s.active_toolkit
    listed = a.nvcc_on_path if a is not None else ()
    if not listed:
        return True  # which nvccs PATH lists is not known: its on_path flag stands
    own = c.canonical(s, posixpath.join(t.path, "bin"))
    return any(c.canonical(s, posixpath.dirname(n)) == own for n in listed)
