"""Frameworks: the other CUDA consumers in the probed interpreter (TensorFlow, JAX, ONNX Runtime, CuPy, PaddlePaddle,
vLLM, torch extensions), each with a verdict from its build and this machine: a CPU build on a GPU machine, a CUDA
the driver is too old for, packages that must not be installed together, no GPU on this platform by design.

:func:`verdicts` gives one verdict per package (the report's lines); :func:`check` the findings, one per kind,
naming every package it is about (a finding id is reported once). :func:`check_libraries` judges the CUDA libraries
torch's and the frameworks' libraries load (``Snapshot.libraries``, resolved as the loader does): a system library
on LD_LIBRARY_PATH shadowing the pip wheel's, a library found nowhere, two NCCLs in one process, and nvidia wheels
of two CUDA majors side by side; the Windows DLL rules are :mod:`cudaenv.diagnose.dlls`'s.
"""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.diagnose import dlls
from cudaenv.core.version import compare_versions, version_key
from cudaenv.core.i18n import M, N_, join
from cudaenv.facts import drivers as drv

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

F = c.make("frameworks")

VERDICT_FINDING = {"conflict": "framework-conflict", "no-gpu-platform": "framework-no-gpu-on-platform",
                   "cpu-build": "framework-cpu-build", "driver-too-old": "framework-driver-too-old"}
CUDA_EVIDENCE = {"name": N_("its package name"), "build-info": N_("its build-info file"), "local-tag": N_("its version tag"),
                 "requires": N_("the nvidia wheels it requires"), "needed": N_("its libraries' NEEDED entries")}


def _tables(tables: Optional[Mapping[str, Any]]):
    from cudaenv.facts import frameworks as facts

    return c.table(tables, facts.TABLE)


def _cuda_version(cuda: Optional[str]) -> Optional[str]:
    """``12`` -> ``12.0`` (a major alone needs that major's minimum driver), ``12.8`` as is."""
    if not cuda or not version_key(cuda):
        return None
    return cuda if "." in cuda else cuda + ".0"


def min_driver(s, fw, tables=None) -> Optional[str]:
    """The lowest driver that runs ``fw``'s CUDA build on this platform (None when its CUDA is not known)."""
    cuda = _cuda_version(fw.cuda)
    return drv.min_driver_for_cuda(cuda, c.driver_system(s), c.table(tables)) if cuda else None


def _major_for(s, majors: Sequence[int], tables=None) -> Optional[int]:
    """The newest of ``majors`` the driver runs (the newest of them all when the driver is not known)."""
    if not majors:
        return None
    top = version_key(c.driver_cuda(s, tables) or "")
    fitting = [m for m in majors if not top or m <= top[0]]
    return max(fitting or majors)


def _fill(s, lines: Sequence[str], majors: Sequence[int] = (), tables=None) -> List[str]:
    """The table's lines with ``{pip}`` and ``{major}`` filled in (a comment's words said in the reader's language)."""
    from cudaenv.core.i18n import filled_message

    major = _major_for(s, majors, tables)
    out = []
    for template in lines:
        values = {"pip": c.pip_cmd(s)}
        line = template.replace("{pip}", values["pip"])
        if "{major}" in line:
            values["major"] = str(major) if major is not None else "XX"
            line = line.replace("{major}", values["major"])
        out.append(filled_message(template, line, values) if "#" in template else line)
    return out


def _conflicts(s, tables=None) -> List[Tuple[Dict[str, Any], List[str]]]:
    from cudaenv.facts import frameworks as facts

    present = {fw.package for fw in s.frameworks}
    out = []
    for row in facts.conflicts(_tables(tables)):
        both = [p for p in row["packages"] if p in present]
        if len(both) > 1:
            out.append((row, both))
    return out


def _no_gpu_platform(s, fw, tables=None) -> Optional[Dict[str, Any]]:
    from cudaenv.facts import frameworks as facts

    system = (s.platform.system or "").lower()
    for row in facts.platform_rules(_tables(tables)):
        if row["package"] == fw.package and row["system"] == system and fw.version and \
                compare_versions(fw.version.split("+", 1)[0], row["from_version"]) >= 0:
            return row
    return None


def too_old(s, fw, tables=None) -> bool:
    """The driver is known and older than the lowest one that runs ``fw``'s CUDA build."""
    driver, need = c.driver_version(s), min_driver(s, fw, tables)
    return bool(fw.gpu_build is not False and driver and need and compare_versions(driver, need) < 0)


def verdicts(s, tables=None) -> Tuple[Tuple[str, str], ...]:
    """(package, verdict) for every framework seen: ``conflict``, ``no-gpu-platform``, ``cpu-build``,
    ``driver-too-old``, ``gpu`` (a CUDA build this driver runs, or no driver to judge by), ``plugin``
    (a part of another package) or ``unknown`` (its files do not say its CUDA)."""
    from cudaenv.facts import frameworks as facts

    rows = facts.package_rows(_tables(tables))
    conflicted = {p for _, both in _conflicts(s, tables) for p in both}
    out = []
    for fw in s.frameworks:
        row = rows.get(fw.package, {})
        if fw.package in conflicted:
            verdict = "conflict"
        elif _no_gpu_platform(s, fw, tables) is not None:
            verdict = "no-gpu-platform"
        elif fw.gpu_build is False:
            verdict = "cpu-build"
        elif too_old(s, fw, tables):
            verdict = "driver-too-old"
        elif row.get("role") in ("plugin", "companion") and not fw.cuda:
            verdict = "plugin"
        elif fw.cuda:
            verdict = "gpu"
        else:
            verdict = "unknown"
        out.append((fw.package, verdict))
    return tuple(out)


def _and(items: Sequence[str]) -> str:
    """``a and b and c``, marked (said in the reader's language)."""
    out = items[0]
    for item in items[1:]:
        out = M("%s and %s", out, item)
    return out


def _label(fw, rows) -> str:
    return "%s %s" % (fw.package, fw.version or "?")


def check(s, tables=None) -> List:
    """The findings of the Frameworks section (pure)."""
    from cudaenv.facts import frameworks as facts

    from cudaenv.diagnose import extensions, framework_imports

    if not s.frameworks:
        return check_libraries(s, tables) + extensions.check(s, tables) + framework_imports.check(s, tables)
    rows = facts.package_rows(_tables(tables))
    by = {fw.package: fw for fw in s.frameworks}
    found = dict(verdicts(s, tables))
    gpu_machine = bool(s.gpus) or c.driver_version(s) is not None
    out = []
    conflicts = _conflicts(s, tables)
    if conflicts:
        fix: List[str] = []
        parts = []
        for row, both in conflicts:
            keep = _fill(s, [row["keep"]], row.get("gpu_majors") or (), tables)[0]
            parts.append(M("%s (keep %s)", _and([_label(by[p], rows) for p in both]), keep))
            fix.append("%s uninstall -y %s" % (c.pip_cmd(s), " ".join(both)))
            fix.append("%s install %s" % (c.pip_cmd(s), keep))
        out.append(F(
            "framework-conflict", "warning",
            M("packages that must not be installed together: %s", "; ".join(" + ".join(b) for _, b in conflicts)),
            M("These packages install into the same import folder, so whichever was installed last provides the files and "
              "the GPU build can silently be the CPU one: %s. Remove them all and install the one you need.", join("; ", parts)),
            fix,
        ))
    platform = [by[p] for p, v in found.items() if v == "no-gpu-platform"]
    if platform:
        fw = platform[0]
        row = _no_gpu_platform(s, fw, tables) or {}
        out.append(F(
            "framework-no-gpu-on-platform", "warning" if gpu_machine else "info",
            M("%s has no GPU support on native %s", ", ".join(_label(f, rows) for f in platform), s.platform.system),
            M("From version %s on, %s builds for native %s run on the CPU only, by design; the GPU build runs under WSL2.",
              row.get("from_version", "?"), fw.package, s.platform.system) if row.get("from_version") != "0" else
            M("%s builds for native %s run on the CPU only, by design; the GPU build runs under WSL2.", fw.package, s.platform.system),
            _fill(s, row.get("fix") or (), (), tables),
        ))
    cpu = [by[p] for p, v in found.items() if v == "cpu-build" and rows.get(p, {}).get("role") in ("framework", "extension")]
    if cpu and gpu_machine:
        fix = []
        for fw in cpu:
            row = rows.get(fw.package, {})
            fix += _fill(s, row.get("gpu_fix") or [M("# reinstall %s built for CUDA (the project's install page names the index)", fw.package)],
                         row.get("gpu_majors") or (), tables)
        out.append(F(
            "framework-cpu-build", "warning",
            M("CPU-only build%s on a GPU machine: %s", "s" if len(cpu) > 1 else "", ", ".join(_label(f, rows) for f in cpu)),
            M("%s will not use the GPU: %s.", ", ".join(fw.package for fw in cpu),
              join("; ", (M("%s is a CPU build (%s)", fw.package, _cpu_evidence(fw, rows.get(fw.package, {}))) for fw in cpu))),
            fix,
        ))
    old = [f for f in s.frameworks if too_old(s, f, tables)]  # a conflicting package's CUDA counts too
    if old:
        need = max((min_driver(s, fw, tables) for fw in old), key=lambda v: version_key(v or "0"))
        from cudaenv.diagnose.driver import upgrade_driver_fix

        out.append(F(
            "framework-driver-too-old", "warning",
            M("driver %s is too old for %s", c.driver_version(s), ", ".join("%s (CUDA %s)" % (_label(f, rows), f.cuda) for f in old)),
            M("%s. Driver %s runs CUDA up to %s, so these fail to initialise CUDA (\"CUDA driver version is insufficient\") "
              "and fall back to the CPU or stop.",
              join("; ", (M("%s is built for CUDA %s (from %s), which needs driver %s or newer", f.package, f.cuda,
                            M(CUDA_EVIDENCE.get(f.cuda_from or "", N_("its files"))), min_driver(s, f, tables) or "?") for f in old)),
              c.driver_version(s), c.driver_cuda(s, tables) or "?"),
            upgrade_driver_fix(s, need or "?", _cuda_version(old[0].cuda)) + _older_builds(s, old, rows, tables),
        ))
    return out + check_libraries(s, tables) + extensions.check(s, tables) + framework_imports.check(s, tables)


def _older_builds(s, old, rows, tables=None) -> List[str]:
    """The lines that keep this driver: each package's build of an older CUDA major the driver runs (its row's
    ``older_fix``), for the packages that have one."""
    top = version_key(c.driver_cuda(s, tables) or "")
    out: List[str] = []
    for fw in old:
        row = rows.get(fw.package, {})
        majors = [m for m in row.get("older_majors") or () if top and m <= top[0]]
        if row.get("older_fix") and majors:
            out.append(M("# or keep this driver: %s's build for CUDA %d", fw.package, max(majors)))
            out += _fill(s, row["older_fix"], majors, tables)
    return out


def _cpu_evidence(fw, row) -> str:
    if row.get("cpu_only"):
        return M("the %s package is CPU-only", fw.package)
    if row.get("gpu_via"):
        return M("none of %s is installed", ", ".join(row["gpu_via"]))
    if fw.version and "+cpu" in fw.version:
        return M("its version %s says so", fw.version)
    if row.get("build_file"):
        return M("its %s names no CUDA", row["build_file"].rsplit("/", 1)[-1])
    return M("its files name no CUDA")


# ------------------------------------------------------------------ the libraries they load (probes/libraries.py)
def shadowed(s) -> List:
    """The loaded libraries LD_LIBRARY_PATH takes from outside site-packages while the object's own search would have
    found a pip wheel's copy further down."""
    return [lib for lib in s.libraries if lib.via == "LD_LIBRARY_PATH" and lib.path and not lib.from_wheel and lib.wheel_copy]


def _nccl_copies(s) -> List[str]:
    out: List[str] = []
    for lib in s.libraries:
        if lib.needed.startswith("libnccl.so.") and lib.path and (lib.real or lib.path) not in out:
            out.append(lib.real or lib.path)
    return out


def _mixed_wheels(s) -> Tuple[List[int], List[str]]:
    """(the CUDA majors of the installed nvidia-*-cuXX wheels, the stray wheels to remove) when there are several."""
    from cudaenv.parse.frameworks import nvidia_cuda_major

    t = s.torch
    names = [p.split("==", 1)[0] for p in (t.nvidia_packages if t is not None else ())]
    majors = {n: nvidia_cuda_major(n) for n in names}
    found = sorted({m for m in majors.values() if m})
    if len(found) < 2:
        return found, []
    keep = int(t.cuda.split(".")[0]) if t is not None and t.cuda and t.cuda.split(".")[0].isdigit() else found[-1]
    return found, [n for n, m in majors.items() if m and m != keep]


LIBCUDA = "libcuda.so.1"  # the driver's library, which libcudart loads itself (data/loader_search.json)


def _cudnn(s):
    """:mod:`cudaenv.diagnose.framework_cudnn` where a framework's runtime opens cuDNN itself (the probe filled its
    ``cudnn_soname``), else None: the module stays off the path of the doctors without one (issue 35)."""
    if not any(fw.cudnn_soname for fw in s.frameworks):
        return None
    from cudaenv.diagnose import framework_cudnn

    return framework_cudnn


def _missing(s) -> List:
    """The CUDA libraries found nowhere, but the driver's libcuda.so.1 (:func:`_libcuda_unreachable` says when that is a
    problem), NCCL's network plugin (:func:`_plugin_missing`) and a framework's own cuDNN major
    (:func:`cudaenv.diagnose.framework_cudnn.cudnn_missing`),
    which have findings of their own."""
    cudnn = {(fw.package, fw.cudnn_soname) for fw in _cudnn(s).cudnn_missing(s)} if _cudnn(s) else set()
    return [lib for lib in s.libraries if lib.path is None and lib.needed != LIBCUDA and lib.loaded_by != "plugin"
            and (lib.consumer, lib.needed) not in cudnn]



def _libcuda_unreachable(s) -> Tuple[List, List[str]]:
    """(libcudart's libcuda.so.1 loads that find nothing, the libcuda.so.1 files that are on this machine) when the
    driver's library is installed but outside the loader's search (WSL 2's /usr/lib/wsl/lib missing from the loader
    cache, a container's /usr/local/nvidia/lib64 never added); no driver library at all is the driver rules' matter."""
    lost = [lib for lib in s.libraries if lib.needed == LIBCUDA and lib.path is None]
    files = [f for f in (s.platform.libcuda if s.platform is not None else ()) if f.rsplit("/", 1)[-1] == LIBCUDA]
    return (lost, files) if lost and files else ([], [])


def _plugin_missing(s) -> List:
    return [lib for lib in s.libraries if lib.loaded_by == "plugin" and lib.path is None]


def library_verdicts(s) -> Tuple[Tuple[str, str], ...]:
    """(consumer, the finding id of its worst library problem, "" when none), once per consumer, in order."""
    bad_shadow = {id(lib) for lib in shadowed(s)}
    nccl = len(_nccl_copies(s)) > 1
    missing = {id(lib) for lib in _missing(s)}
    driver = {id(lib) for lib in _libcuda_unreachable(s)[0]}
    plugin = {id(lib) for lib in _plugin_missing(s)}
    path_only = {id(lib) for lib in dlls.path_only(s)}
    copies = dlls.dll_copies(s)
    order_only = {id(lib) for lib in dlls.import_order_only(s)}
    rules = _cudnn(s)
    cudnn = {(fw.package, fw.cudnn_soname) for fw in rules.cudnn_missing(s)} if rules else set()
    old_cudnn = {(fw.package, fw.cudnn_soname) for fw in rules.cudnn_too_old(s)} if rules else set()
    out: Dict[str, str] = {}
    for lib in s.libraries:
        kind = ("library-shadowed" if id(lib) in bad_shadow else "library-not-found" if id(lib) in missing
                else "framework-cudnn-not-found" if (lib.consumer, lib.needed) in cudnn
                else "framework-cudnn-too-old" if (lib.consumer, lib.needed) in old_cudnn
                else "dll-only-on-path" if id(lib) in path_only
                else "dll-two-copies" if lib.needed.lower() in copies
                else "dll-import-order" if id(lib) in order_only
                else "libcuda-not-found" if id(lib) in driver else "nccl-net-plugin-not-found" if id(lib) in plugin
                else "nccl-two-copies" if nccl and lib.needed.startswith("libnccl.so.") else "")
        if lib.consumer not in out or (kind and not out[lib.consumer]):
            out[lib.consumer] = kind
    return tuple(out.items())


def _reinstall(s, consumer: str, tables=None) -> List[str]:
    """The same build of ``consumer`` again, forced, with the pip that installed it (its nvidia-* wheels come back):
    torch's pinned build where it fits this machine, the line that brings a ``runtime`` row's libraries, a framework's
    installed version; else the step in words."""
    if consumer == "torch":
        from cudaenv.diagnose.versions import reinstall_commands

        lines = reinstall_commands(s, tables)
        if lines:
            return lines
    brings = _cudnn(s).runtime_fix(s, consumer) if _cudnn(s) else []  # XLA's plugin: jax[cudaNN] brings its libraries
    if brings:
        return brings
    fw = next((f for f in s.frameworks if f.package == consumer), None)
    if fw is not None and fw.version:
        return ["%s install --force-reinstall %s" % (c.pip_cmd(s), c.quote("%s==%s" % (fw.package, fw.version)))]
    return [M("# reinstall %s with the pip that installed it (its nvidia-* wheels come back)", consumer)]


def check_libraries(s, tables=None) -> List:
    out = []
    shadows = shadowed(s)
    if shadows:
        dirs = []
        for lib in shadows:
            folder = lib.path.rsplit("/", 1)[0]
            if folder not in dirs:
                dirs.append(folder)
        current = s.env_map.get("LD_LIBRARY_PATH", "")
        kept = [e for e in current.split(":") if e and e.rstrip("/") not in dirs]
        out.append(F(
            "library-shadowed", "warning",
            M("LD_LIBRARY_PATH shadows the CUDA libraries %s was built with: %s",
              ", ".join(dict.fromkeys(lib.consumer for lib in shadows)), ", ".join(dict.fromkeys(lib.needed for lib in shadows))),
            M("The loader searches LD_LIBRARY_PATH before a library's own RUNPATH, so %s. A toolkit's library of another "
              "minor or major than the wheel's gives \"undefined symbol\" or \"version `libcublasLt.so.12' not found\" at "
              "import, or runs with the wrong library.", join("; ", (
                  M("%s's %s loads %s%s instead of %s", lib.consumer, lib.needed, lib.path, (" (%s)" % lib.version) if lib.version else "",
                    lib.wheel_copy) for lib in shadows))),
            [c.set_ld_library_path(kept),
             M("# and drop %s from the script that sets it (a module file, ~/.bashrc, an activate script)", ", ".join(dirs))],
        ))
    missing = _missing(s)
    outside = [lib for lib in missing if lib.wheel_copy and lib.path is None]
    if outside and not (s.platform is not None and s.platform.system == "windows"):
        out.append(_wheel_outside_search(s, outside, [lib for lib in missing if lib not in outside], tables))
    elif missing:
        windows = s.platform is not None and s.platform.system == "windows"
        where = (dlls.windows_where(missing[0].consumer) if windows else
                 M("not in its RUNPATH, LD_LIBRARY_PATH, the loader cache's configured folders or the default folders, so loading "
                   "it fails with \"%s: cannot open shared object file\" (unless something loaded it first)", missing[0].needed))
        out.append(F(
            "library-not-found", "warning",
            M("CUDA libraries the loader finds nowhere: %s", ", ".join("%s (%s)" % (lib.needed, lib.consumer) for lib in missing)),
            M("%s: %s.", join("; ", (M("%s loads (dlopen) %s", lib.object, lib.needed) if lib.loaded_by == "dlopen" else
                                      M("%s needs %s", lib.object, lib.needed) for lib in missing)), where),
            (dlls.windows_fix(s, missing[0]) if windows and missing[0].consumer.startswith(("cupy-", "onnxruntime-gpu", "paddlepaddle-gpu", "tensorflow")) else _reinstall(s, missing[0].consumer, tables)
             + [M("# or install the toolkit or library that provides %s and put its bin folder on PATH", missing[0].needed) if windows
                else M("# or install the toolkit or library that provides %s and put its lib folder on LD_LIBRARY_PATH", missing[0].needed)]),
        ))
    out += _cudnn(s).check(s) if _cudnn(s) else []
    out += dlls.check(s, lambda consumer: _reinstall(s, consumer, tables))
    out += _driver_and_plugin(s)
    copies = _nccl_copies(s)
    if len(copies) > 1:
        users = {}
        for lib in s.libraries:
            if lib.needed.startswith("libnccl.so.") and lib.path:
                users.setdefault(lib.real or lib.path, []).append(lib.consumer)
        out.append(F(
            "nccl-two-copies", "warning",
            M("two NCCL libraries for one process: %s", ", ".join(copies)),
            M("One process loads one libnccl.so.2: the first consumer imported decides which copy all of them get, and the "
              "others run with an NCCL they were not built with (hangs and \"unhandled cuda error\" in collectives). %s.",
              join("; ", (M("%s resolves %s", ", ".join(dict.fromkeys(u)), path) for path, u in users.items()))),
            [M("# keep one NCCL: install the consumers from builds that use the same nvidia-nccl wheel, or import the one "
               "whose NCCL you want first")],
        ))
    majors, stray = _mixed_wheels(s)
    if stray:
        out.append(F(
            "nvidia-wheels-mixed", "warning",
            M("nvidia wheels of CUDA %s installed together", _and([str(m) for m in majors])),
            M("The nvidia-*-cuXX wheels of different CUDA majors share one nvidia/ folder of the environment; a library of "
              "one major can load another's (%s).", ", ".join(stray)),
            ["%s uninstall -y %s" % (c.pip_cmd(s), " ".join(stray))],
        ))
    return out


def _wheel_outside_search(s, outside: List, rest: List, tables=None):
    """library-not-found where the nvidia wheel holding the file is installed, in a folder the calling object's search
    does not include (TensorFlow 2.21.0's cuSOLVER: TSL's dlopen is made from libtensorflow_framework.so.2, whose RUNPATH
    names no nvidia/cusolver/lib; data/loader_search.json's TF-CUSOLVER): the fix puts those folders on LD_LIBRARY_PATH,
    which the loader searches first; the libraries found nowhere at all (``rest``) get the reinstall line too."""
    folders = list(dict.fromkeys(lib.wheel_copy.rsplit("/", 1)[0] for lib in outside))
    current = [e for e in s.env_map.get("LD_LIBRARY_PATH", "").split(":") if e and e.rstrip("/") not in folders]
    libs = outside + rest
    return F(
        "library-not-found", "warning",
        M("CUDA libraries the loader finds nowhere: %s", ", ".join("%s (%s)" % (lib.needed, lib.consumer) for lib in libs)),
        M("%s. The nvidia wheel's file is installed (%s), but in a folder the search from that object does not include: "
          "a library opened with dlopen is searched for in LD_LIBRARY_PATH, the RUNPATH of the object that calls dlopen "
          "(not of the one that asked for it), the loader cache and the default folders. Loading it fails with \"%s: "
          "cannot open shared object file\" (unless something loaded it first).",
          join("; ", (M("%s loads (dlopen) %s", lib.object, lib.needed) for lib in outside)),
          ", ".join(lib.wheel_copy for lib in outside), outside[0].needed),
        [c.set_ld_library_path(folders + current),
         M("# and set it where the environment is set up (its activate script, a module file, ~/.bashrc): a new shell "
           "starts without it")] + (_reinstall(s, rest[0].consumer, tables) if rest else []),
    )


def _driver_and_plugin(s) -> List:
    """libcuda-not-found: the driver's library is on this machine but libcudart's dlopen of libcuda.so.1 would not
    find it; nccl-net-plugin-not-found: NCCL_NET_PLUGIN names a plugin NCCL's dlopen finds nowhere."""
    from cudaenv.core.resources import load_table

    out = []
    lost, files = _libcuda_unreachable(s)
    if lost:
        folder = files[0].rsplit("/", 1)[0]
        wsl = s.platform.wsl == 2 and c.norm(folder) == "/usr/lib/wsl/lib"
        row = next(r for r in load_table("loader_search")["rows"] if r.get("kind") == "driver-conf")
        conf = row["wsl" if wsl else "other"]
        out.append(F(
            "libcuda-not-found", "error",
            M("the driver's libcuda.so.1 is in %s, where the loader does not look", folder),
            M("%s loads the driver's library itself (dlopen of libcuda.so.1, searched through LD_LIBRARY_PATH, the "
              "loader cache and the default folders), and finds none there, so every CUDA call fails with \"no CUDA-capable "
              "device is detected\" or \"CUDA driver version is insufficient\" while nvidia-smi works.%s",
              ", ".join(dict.fromkeys(lib.object.rsplit("/", 1)[-1] for lib in lost)),
              M(" Under WSL 2 the Windows driver's libraries are in /usr/lib/wsl/lib, which %s lists for ldconfig.", conf) if wsl else ""),
            ["echo %s | %stee %s && %sldconfig" % (c.quote(folder), c.sudo(s), conf, c.sudo(s)),
             M("# or, without root, for this shell: export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}", c.quote(folder))],
        ))
    plugins = _plugin_missing(s)
    if plugins:
        value = s.env_map.get("NCCL_NET_PLUGIN", "")
        tried = list(dict.fromkeys((value, "libnccl-net-%s.so" % value)))  # NCCL's order (data/loader_search.json)
        out.append(F(
            "nccl-net-plugin-not-found", "warning",
            M("NCCL_NET_PLUGIN=%s names a network plugin NCCL will not find", value),
            M("NCCL loads its network plugin with dlopen from %s: it tries %s, finds neither in its RUNPATH, "
              "LD_LIBRARY_PATH, the loader cache or the default folders, and falls back to its internal transports "
              "(\"NET/Plugin: No plugin found\" in NCCL_DEBUG=INFO) without an error: multi-node collectives then run "
              "over sockets or plain IB verbs, several times slower, instead of the fabric's plugin (AWS OFI, HPC-X, "
              "Spectrum-X).", ", ".join(dict.fromkeys(lib.object for lib in plugins)), " then ".join(tried)),
            [M("unset NCCL_NET_PLUGIN    # NCCL's own transports, knowingly, until the plugin is installed"),
             M("# or put the folder holding %s on LD_LIBRARY_PATH (the plugin's lib folder, e.g. in HPC-X or the aws-ofi-nccl "
               "install) in the job script", tried[-1])],
        ))
    return out
