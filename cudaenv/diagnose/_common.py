"""Small questions the rules share: which driver column applies, is the GPU usable, how to call pip."""

from __future__ import annotations

import posixpath
import shlex

from cudaenv.model.reports import Finding
from cudaenv.facts import drivers as drv
from cudaenv.core.version import compare_versions, major_minor, version_key
from cudaenv.core.i18n import M, join

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, List, Mapping, Optional, Sequence, Tuple

BROKEN_FAILURES = ("driver-not-loaded", "driver-library-mismatch", "gpu-lost", "no-devices", "no-permission")


def sudo(s) -> str:
    """``"sudo "`` before a command that needs root, except where the doctor ran as root or no sudo is installed
    (root in a container gets the bare command); ``"sudo "`` where that is not known (``--root``, an old report)."""
    from cudaenv.toolkit.sudo import sudo_printed

    return "sudo " if sudo_printed(s.platform) else ""


def make(section: str):
    """A finding builder of one section's rules: ``F(id, severity, title, detail, fix)``. The finding's section is
    its row's in ``data/findings.json`` (tests/facts/test_data_findings.py: each module's ids are rows of its section),
    and so is the kind of its fix (who applies it), where it has one."""
    from cudaenv.facts.findings import fix_kind, section_of

    def build(id: str, severity: str, title: str, detail: str, fix=()) -> Finding:
        fix = tuple(x for x in fix if x)
        return Finding(id=id, severity=severity, title=title, detail=detail, fix=fix, section=section_of(id, section),
                       fix_kind=fix_kind(id) if fix else None)

    return build


def table(tables: Optional[Mapping[str, Any]], name: str = "cuda_drivers") -> Optional[Mapping[str, Any]]:
    """The facts table ``name`` the caller passed, or None (the facts module then reads the shipped one)."""
    if tables is None:
        return None
    return tables.get(name)


def driver_system(s) -> str:
    """Which column of the driver tables applies: WSL2 reports the Windows host's driver."""
    p = s.platform
    if p.system == "windows" or p.wsl == 2 or (s.driver is not None and s.driver.wsl_windows_side):
        return "windows"
    return "linux"


def driver_version(s) -> Optional[str]:
    d = s.driver
    if d is None:
        return None
    v = d.version or d.kernel_module_version
    return v if version_key(v) else None


def driver_cuda(s, tables=None) -> Optional[str]:
    """The CUDA version the driver reports (nvidia-smi's "CUDA Version"), else what the tables say it ships."""
    d = s.driver
    if d is not None and version_key(d.cuda_version):
        return major_minor(d.cuda_version)
    return drv.native_cuda_for_driver(driver_version(s), driver_system(s), table(tables))


def tool(s, name: str):
    return next((t for t in s.tools if t.tool == name), None)


def failures(s) -> Tuple[str, ...]:
    """The failure kinds NVML / nvidia-smi reported, in tool order, without repeats."""
    out: List[str] = []
    for t in s.tools:
        kind = t.failure
        if kind and kind not in out:
            out.append(kind)
    return tuple(out)


def hung(s) -> bool:
    return any(t.status == "timeout" for t in s.tools)


def driver_broken(s) -> bool:
    """The driver is installed but does not answer (not loaded, mismatch, GPU lost, a hang...)."""
    return bool(set(failures(s)) & set(BROKEN_FAILURES)) or hung(s)


def usable_gpu(s) -> bool:
    """An NVIDIA GPU that CUDA should be able to use: seen by NVML/nvidia-smi with a working driver."""
    return bool(s.gpus) and driver_version(s) is not None and not driver_broken(s)


def gpu_label(g) -> str:
    """``GPU 1 (NVIDIA GeForce RTX 2080 Ti, compute 7.5)``, a marked message (said in the reader's language)."""
    bits = [b for b in (g.name, M("compute %s", g.compute_capability) if g.compute_capability else None) if b]
    return M("GPU %d (%s)", g.index, join(M(", "), bits)) if bits else "GPU %d" % g.index


def gpu_by_index(s, index: int):
    return next((g for g in s.gpus if g.index == index), None)


def python_cmd(s) -> str:
    """The probed interpreter, quoted for a shell (``python3`` when unknown)."""
    t = s.torch
    exe = t.python if t is not None and t.python else "python3"
    return shlex.quote(exe)


def pip_cmd(s) -> str:
    t = s.torch
    if t is not None and t.installer == "uv":
        return "uv pip --python %s" % python_cmd(s)
    return "%s -m pip" % python_cmd(s)


def torch_installed(s) -> bool:
    return s.torch is not None and s.torch.installed


def torch_cuda_build(s) -> bool:
    t = s.torch
    return t is not None and t.installed and bool(t.cuda)


def torch_cpu_build(s) -> bool:
    t = s.torch
    if t is None or not t.installed or t.cuda or t.hip:
        return False
    return True


def torch_public_version(s) -> Optional[str]:
    """``2.13.0+cpu`` -> ``2.13.0``."""
    t = s.torch
    if t is None or not t.version:
        return None
    return t.version.split("+", 1)[0]


def norm(p: Optional[str]) -> Optional[str]:
    if not p:
        return None
    return posixpath.normpath(p.replace("\\", "/")).rstrip("/") or "/"


def canonical(s, p: Optional[str]) -> Optional[str]:
    """A toolkit path with the /usr/local/cuda link replaced by its target (so the two compare equal)."""
    p = norm(p)
    link = s.cuda_symlink
    if p and link is not None and link.resolved:
        lp, lr = norm(link.path), norm(link.resolved)
        if p == lp or p.startswith(lp + "/"):
            p = lr + p[len(lp):]
    return p


def toolkit_root_of_nvcc(nvcc: Optional[str]) -> Optional[str]:
    """``/usr/local/cuda-12.1/bin/nvcc`` -> ``/usr/local/cuda-12.1``."""
    n = norm(nvcc)
    if not n:
        return None
    d = posixpath.dirname(n)
    return posixpath.dirname(d) if posixpath.basename(d) == "bin" else d


def active_toolkit(s):
    """(path, version) of the toolkit a build would use now, from ActiveToolkit or the Toolkit flags."""
    a = s.active_toolkit
    if a is not None and (a.path or a.nvcc):
        path = a.path or toolkit_root_of_nvcc(a.nvcc)
        version = a.version
        if version is None:
            tk = toolkit_at(s, path)
            version = tk.version if tk is not None else None
        return canonical(s, path), version, a.via
    tk = next((t for t in s.toolkits if t.active), None)
    if tk is not None:
        return canonical(s, tk.path), tk.version, "PATH" if tk.on_path else "CUDA_HOME"
    return None, None, None


def toolkit_at(s, path: Optional[str]):
    c = canonical(s, path)
    if c is None:
        return None
    return next((t for t in s.toolkits if canonical(s, t.path) == c), None)


def distinct_toolkits(s, pred) -> List[Any]:
    """Toolkits matching ``pred``, one per canonical path."""
    out, seen = [], set()
    for t in s.toolkits:
        c = canonical(s, t.path)
        if pred(t) and c not in seen:
            seen.add(c)
            out.append(t)
    return out


def installed_toolkit(s, mm: Optional[str] = None, major: Optional[int] = None):
    """The newest installed toolkit of that major.minor ``mm`` (or ``major``), or None."""
    best = None
    for t in s.toolkits:
        v = version_key(t.version)
        if not v:
            continue
        if mm is not None and major_minor(t.version) != mm:
            continue
        if major is not None and v[0] != major:
            continue
        if best is None or compare_versions(t.version, best.version) > 0:
            best = t
    return best


def short(version: Optional[str]) -> str:
    return major_minor(version) or str(version)


def quote(p: str) -> str:
    return shlex.quote(p)


def set_ld_library_path(entries: Sequence[str]) -> str:
    """The fix line that sets LD_LIBRARY_PATH to ``entries`` (quoted), or unsets it when there are none."""
    return "export LD_LIBRARY_PATH=%s" % quote(":".join(entries)) if entries else "unset LD_LIBRARY_PATH"


def distro_id(s) -> str:
    return (s.platform.distro_id or "").lower()


def distro_like(s) -> Tuple[str, ...]:
    """os-release's ID_LIKE of the machine (older reports have none: cudaenv.facts.distro uses its table then)."""
    return tuple(getattr(s.platform, "distro_like", None) or ())


def driver_chore(s, topic: str, tables=None, kernel: Optional[str] = None) -> List[str]:
    """One of the distribution's driver chores (``module_rebuild``, ``initramfs``, ``remove_linux_driver``), from the
    same table as :func:`driver_install_commands`."""
    from cudaenv.facts import driver_install

    return list(driver_install.chore_steps(topic, distro_id(s), table(tables, driver_install.TABLE), kernel, distro_like(s)))


def driver_install_commands(s, series: Optional[str] = None, tables=None) -> List[str]:
    """How this platform installs (or upgrades) the NVIDIA driver; ``series`` like ``"570"`` (or a full minimum) when known.

    The one table shared with `cudaenv fix`: ``data/driver_install.json``."""
    from cudaenv.facts import driver_install

    kind = driver_install.where(s.platform.system, s.platform.wsl)
    return list(driver_install.install_steps(kind, distro_id(s), series, table(tables, driver_install.TABLE), distro_like(s)))


def use_fix(version, why: str = "") -> str:
    """The shell command that switches to ``version``; the trailing comment says why, then the fish form."""
    v = short(version)
    if why:
        return M("source <(cudaenv use %s)    # %s; fish: cudaenv use %s --shell fish | source", v, why, v)
    return M("source <(cudaenv use %s)    # fish: cudaenv use %s --shell fish | source", v, v)
