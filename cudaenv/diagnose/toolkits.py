"""Toolkits: nvcc against torch and the driver, the /usr/local/cuda link, PATH, CUDA_HOME, LD_LIBRARY_PATH, cuDNN."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M, join
from cudaenv.diagnose import toolkit_paths as paths
from cudaenv.diagnose.driver import upgrade_driver_fix
from cudaenv.facts import drivers as drv
from cudaenv.core.version import compare_versions, is_version, sm_name, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional

F = c.make("toolkits")


def check(s, tables=None) -> List:
    out = []
    out += nvcc_torch(s, tables)
    out += newer_than_driver(s, tables)
    out += paths.link_dangling(s)
    out += paths.link_not_active(s)
    out += paths.several_on_path(s)
    out += cuda_home(s)
    out += ld_library_path(s)
    out += ld_library_path_missing(s)
    out += cudnn(s, tables)
    return out


def _startup_files() -> str:
    """The shell startup files a line setting a variable may be in, as the user's shell resolves them (``~/.bashrc
    ${ZDOTDIR:-~}/.zshrc ...``): the rule `cudaenv uninstall`, `cudaenv link` and `cudaenv init --install` use
    (cudaenv.shells.startup), and the system files uninstall searches (cudaenv.toolkit.uninstall.rcfiles)."""
    from cudaenv.shells.startup import startup_words
    from cudaenv.toolkit.uninstall.rcfiles import PROFILE_D, SYSTEM_FILES

    return " ".join(list(startup_words()) + list(SYSTEM_FILES) + [PROFILE_D + "/*.sh"])


def _install_toolkit(s, mm: str, tables=None) -> str:
    """The one command that installs CUDA ``mm``'s toolkit here: the package step of this platform's row of
    data/toolkit_install.json (the table `cudaenv install VERSION --plan` prints in full), else its conda step."""
    from cudaenv.toolkit.install import repos

    table = c.table(tables, repos.TABLE)
    steps = repos.distro_row(c.distro_id(s), c.distro_like(s), s.platform.wsl, table)[0]["steps"]
    step = next((x for x in steps if "{pkg}" in x), None)
    if step is None:
        return repos.row("conda", table)["steps"][0].format(mm=mm)
    return M("%s    # from NVIDIA's repository (`cudaenv install %s --plan`)",
             step.split("#")[0].strip().format(pkg=repos.package(mm)), mm)


def nvcc_torch(s, tables=None) -> List:
    if not c.torch_cuda_build(s):
        return []
    path, version, via = c.active_toolkit(s)
    if not version or not path:
        return []
    t = s.torch
    tv, nv = version_key(t.cuda), version_key(version)
    if not tv or not nv or tv[0] == nv[0]:
        return []
    mm = c.short(t.cuda)
    match = c.installed_toolkit(s, mm) or c.installed_toolkit(s, major=tv[0])
    fix = [c.use_fix(match.version)] if match is not None else [_install_toolkit(s, mm, tables), c.use_fix(mm)]
    return [
        F(
            "nvcc-torch-mismatch",
            "warning",
            M("nvcc is CUDA %s but torch is built with CUDA %s", c.short(version), t.cuda),
            M("The active toolkit (%s, via %s) is CUDA %s; torch %s is built with CUDA %s. Building a CUDA extension "
            "(torch.utils.cpp_extension, pip install of flash-attn, apex, ...) stops with \"The detected CUDA version "
            "(%s) mismatches the version that was used to compile PyTorch (%s)\".%s", path, via, c.short(version), t.version, t.cuda, c.short(version), t.cuda, (M(" CUDA %s is installed at %s.", c.short(match.version), match.path) if match is not None else "")),
            fix,
        )
    ]


def newer_than_driver(s, tables) -> List:
    dv = c.driver_version(s)
    if dv is None or c.driver_broken(s) or s.platform.jetson is not None:
        return []  # a Jetson's version is an L4T release, not a driver series (its JetPack fixes the CUDA)
    path, version, via = c.active_toolkit(s)
    if not version:
        return []
    system = c.driver_system(s)
    tbl = c.table(tables)
    minimum = drv.min_driver_for_cuda(version, system, tbl)
    bundled = drv.toolkit_driver(version, system, tbl)
    older = [t for t in s.toolkits if version_key(t.version) and (
        drv.min_driver_for_cuda(t.version, system, tbl) and compare_versions(dv, drv.min_driver_for_cuda(t.version, system, tbl)) >= 0)
        and compare_versions(t.version, version) < 0]
    older.sort(key=lambda t: version_key(t.version))
    alt = [c.use_fix(older[-1].version)] if older else _older_release(dv, system, tbl)
    cap = next((g.compute_capability for g in s.gpus if g.compute_capability), None)
    sm = sm_name(cap) if cap else None
    if minimum and compare_versions(dv, minimum) < 0:
        return [
            F(
                "toolkit-newer-than-driver",
                "error",
                M("CUDA %s toolkit needs driver %s or newer; this one is %s", c.short(version), minimum, dv),
                M("Programs built with the active toolkit (%s, CUDA %s) fail on driver %s (CUDA %s) with \"CUDA driver "
                "version is insufficient for CUDA runtime version\": CUDA %s needs driver %s or newer.", path, c.short(version), dv, c.driver_cuda(s, tables) or "?", c.short(version), minimum),
                upgrade_driver_fix(s, bundled or minimum, version)
                + ([M("# or build with an older toolkit:")] + alt if alt else []),
            )
        ]
    if bundled and compare_versions(dv, bundled) < 0:
        return [
            F(
                "toolkit-newer-than-driver",
                "warning",
                M("CUDA %s toolkit is newer than driver %s (CUDA %s)", c.short(version), dv, c.driver_cuda(s, tables) or "?"),
                M("Programs built with %s (CUDA %s) run on driver %s only through minor-version compatibility: PTX they "
                "embed cannot be JIT-compiled by this driver (cudaErrorUnsupportedPtxVersion, \"the provided PTX was "
                "compiled with an unsupported toolchain\"). CUDA %s ships driver %s.", path, c.short(version), dv, c.short(version), bundled),
                ([M("nvcc -arch=%s ...    # build real code for this GPU, no PTX JIT needed", sm)] if sm else [])
                + upgrade_driver_fix(s, bundled, version)
                + ([M("# or build with an older toolkit:")] + alt if alt else []),
            )
        ]
    return []


def _older_release(dv: str, system: str, tbl) -> List[str]:
    """No older toolkit here: the newest CUDA release this driver runs natively, and how to get it (a driver out of
    reach, in a container or on a shared machine, is no reason to stay without a toolkit that works)."""
    from cudaenv.toolkit.install.plan import install_command

    mm = drv.native_cuda_for_driver(dv, system, tbl)
    if not mm:
        return []
    return [M("%s    # CUDA %s: the newest this driver runs natively", install_command(mm, prose=False), mm), c.use_fix(mm)]


def cuda_home(s) -> List:
    env = s.env_map
    name = "CUDA_HOME" if "CUDA_HOME" in env else ("CUDA_PATH" if "CUDA_PATH" in env else None)
    if name is None:
        return []
    value = env[name]
    path, version, via = c.active_toolkit(s)
    home = c.toolkit_at(s, value)
    if home is None:
        fix = ["export %s=%s" % (name, c.quote(path))] if path else ["unset %s" % name]
        return [
            F(
                "cuda-home-mismatch",
                "warning",
                M("%s=%s is not a CUDA toolkit", name, value),
                M("%s points at %s, where cudaenv found no toolkit. torch.utils.cpp_extension, CMake and setup.py files "
                "read %s first and fail or fall back to guessing.%s", name, value, name, (M(" The nvcc on PATH is in %s.", path) if path else "")),
                fix,
            )
        ]
    if not path or via != "PATH" or c.canonical(s, home.path) == c.canonical(s, path):
        return []
    return [
        F(
            "cuda-home-mismatch",
            "warning",
            M("%s is CUDA %s, the nvcc on PATH is CUDA %s", name, c.short(home.version), c.short(version)),
            M("%s=%s (CUDA %s) while PATH finds nvcc in %s (CUDA %s). torch.utils.cpp_extension uses %s; a Makefile "
            "that calls nvcc uses PATH: the two builds disagree.", name, value, home.version, path, version, name),
            [M("export %s=%s    # match the nvcc on PATH", name, c.quote(path)), c.use_fix(home.version, M("or switch PATH to %s's toolkit", name))],
        )
    ]


def ld_library_path(s) -> List:
    path, version, _ = c.active_toolkit(s)
    in_ld = c.distinct_toolkits(s, lambda t: t.in_ld_library_path)
    if not in_ld:
        return []
    others = [t for t in in_ld if path is None or c.canonical(s, t.path) != c.canonical(s, path)]
    if path is None and len(in_ld) < 2:
        return []
    if not others:
        return []
    value = s.env_map.get("LD_LIBRARY_PATH", "")
    roots = set()
    for t in others:
        roots.add(c.norm(t.path))
        roots.add(c.canonical(s, t.path))
    link = s.cuda_symlink
    if link is not None and link.resolved and c.norm(link.resolved) in roots:
        roots.add(c.norm(link.path))
    kept = [e for e in value.split(":") if e and not any(c.norm(e) == r or (c.norm(e) or "").startswith(r + "/") for r in roots if r)]
    listing = ", ".join("%s (CUDA %s)" % (t.path, c.short(t.version)) for t in others)
    return [
        F(
            "ld-library-path-mismatch",
            "warning",
            M("LD_LIBRARY_PATH holds another toolkit's libraries"),
            M("LD_LIBRARY_PATH has the lib folder of %s%s. Programs then load libcudart/libcublas of a different CUDA "
            "than the one they were built with (\"undefined symbol\", \"version `libcublas.so.12' not found\").", listing, (M(", but the active toolkit is %s (CUDA %s)", path, c.short(version)) if path else "")),
            [c.set_ld_library_path(kept),
             c.use_fix(version, M("sets PATH and LD_LIBRARY_PATH together")) if version else None],
        )
    ]


def _toolkit_root(entry: str) -> Optional[str]:
    """``/usr/local/cuda-11.8/lib64`` -> ``/usr/local/cuda-11.8``: the folder of an entry named like a toolkit
    (``cuda-11.8``, ``CUDA-12``, ``cuda-v12.4``), or None."""
    parts = (c.norm(entry) or "").split("/")
    for i, part in enumerate(parts):
        name = part[5:] if part[:5].lower() == "cuda-" else ""
        name = name[1:] if name[:1] in ("v", "V") else name
        if name and is_version(name):
            return "/".join(parts[: i + 1])
    return None


def ld_library_path_missing(s) -> List:
    """LD_LIBRARY_PATH entries inside a toolkit folder that is not here (removed, or never installed on this machine)."""
    if c.driver_system(s) == "windows":
        return []
    value = s.env_map.get("LD_LIBRARY_PATH", "")
    entries = [e for e in value.split(":") if e]
    missing = []
    for e in entries:
        root = _toolkit_root(e) if e.startswith("/") else None
        if root and c.toolkit_at(s, root) is None and root not in missing:
            missing.append(root)
    if not missing:
        return []
    path, version, _ = c.active_toolkit(s)
    kept = [e for e in entries if not any(c.norm(e) == r or (c.norm(e) or "").startswith(r + "/") for r in missing)]
    named = ", ".join(missing)
    return [
        F(
            "ld-library-path-missing-toolkit",
            "warning",
            M("LD_LIBRARY_PATH names a toolkit that is not installed here: %s", named),
            M("LD_LIBRARY_PATH has entries inside %s, where cudaenv found no CUDA toolkit (it was removed, or the line was "
            "copied from another machine). The loader skips them, so they do no harm now, but a toolkit installed "
            "there later would be picked up silently; a startup file probably still sets them.", named),
            [c.set_ld_library_path(kept),
             M("grep -n %s %s 2>/dev/null    # the line that sets it", c.quote(missing[0]), _startup_files()),
             c.use_fix(version, M("sets PATH and LD_LIBRARY_PATH together")) if version and path else None],
        )
    ]


def cudnn(s, tables) -> List:
    entries = [d for d in s.cudnn if d.source != "pip" and d.major is not None]
    out = []
    majors = sorted({d.major for d in entries})
    if len(majors) > 1:
        listing = join(", ", (M("cuDNN %s in %s", d.version, d.header) for d in entries))
        out.append(
            F(
                "cudnn-mismatch",
                "warning",
                M("several cuDNN majors are installed: %s", ", ".join(str(m) for m in majors)),
                M("Found %s. A build picks whichever header comes first on its include path and may link the other "
                "library (\"cuDNN version incompatibility\" at run time). torch wheels bring their own cuDNN; these "
                "matter for builds.", listing),
                [M("dpkg -l | grep -i cudnn    # then remove the package of the major you do not build with"),
                 M("sudo update-alternatives --config libcudnn    # Debian packages: choose the header in use")],
            )
        )
        return out
    tbl = c.table(tables)
    for d in entries:
        if not d.toolkit:
            continue
        tk = c.toolkit_at(s, d.toolkit)
        if tk is None or not tk.version:
            continue
        if drv.cudnn_fits_cuda(d.major, tk.version, tbl) is False:
            out.append(
                F(
                    "cudnn-mismatch",
                    "warning",
                    M("cuDNN %s does not fit the CUDA %s toolkit it sits in", d.version, c.short(tk.version)),
                    M("%s (cuDNN %s) is inside %s, a CUDA %s toolkit; NVIDIA builds cuDNN %d for other CUDA versions, "
                    "so builds against this toolkit link a cuDNN that cannot load.", d.header, d.version, tk.path, tk.version, d.major),
                    [_cudnn_install(tk.version, d.header, tbl)],
                )
            )
            break
    return out


def _cudnn_install(cuda: str, header: str, tbl) -> str:
    """Which cuDNN to put in place of one that does not fit toolkit ``cuda`` (the newest major built for it)."""
    major = version_key(cuda)[0]
    fits = drv.cudnn_majors_for_cuda(cuda, tbl)
    if not fits:
        return M("# install a cuDNN built for CUDA %d (NVIDIA's cuDNN support matrix) and remove %s", major, header)
    return M("# install cuDNN %d for CUDA %d (package cudnn%d-cuda-%d, or the cuDNN tarball for CUDA %d.x) and remove %s",
             fits[0], major, fits[0], major, major, header)
