"""Versions: torch against the driver and the GPUs (missing, CPU-only, too new for the driver, no kernel image)."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M
from cudaenv.facts import drivers as drv
from cudaenv.core.version import cc_tuple, compare_versions
from cudaenv.facts import torch as tf
from cudaenv.diagnose.driver import upgrade_driver_fix

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple

F = c.make("versions")


def check(s, tables=None) -> List:
    out = []
    out += torch_missing(s, tables)
    out += torch_import_error(s, tables)
    out += torch_cpu_only(s, tables)
    too_old = driver_too_old(s, tables)
    out += too_old
    out += gpu_arch(s, tables)
    if not any(f.id == "driver-too-old-for-torch" for f in too_old):
        out += torch_cuda_unavailable(s, tables)
    out += pixi_cuda_above_driver(s, tables)
    out += conda_cuda_above_driver(s, tables)
    return out


def _driver_cuda(s, tables) -> Optional[str]:
    d = s.driver
    if d is None or not d.version:
        return None
    return d.cuda_version or drv.native_cuda_for_driver(d.version, "windows" if s.platform.wsl == 2 else "linux",
                                                        (tables or {}).get(drv.TABLE))


def conda_cuda_above_driver(s, tables=None) -> List:
    """A conda or pixi env whose ``cuda-version`` package (the CUDA its libraries were built for) is above the driver's own
    CUDA: another major cannot run at all; a newer minor runs by minor-version compatibility (no PTX JIT)."""
    e = getattr(s, "python_env", None)
    if e is None or e.kind not in ("conda", "pixi"):
        return []
    pinned = next((p.split("=")[1] for p in e.cuda_packages if p.startswith("cuda-version=")), None)
    have = _driver_cuda(s, tables)
    want, got = cc_tuple(pinned), cc_tuple(have)
    if not want or not got or want[:2] <= got[:2]:
        return []
    other_major = want[0] > got[0]
    need = drv.min_driver_for_cuda(pinned, "windows" if s.platform.wsl == 2 else "linux", (tables or {}).get(drv.TABLE))
    where = "--prefix %s" % c.quote(e.prefix) if e.kind == "conda" and e.prefix else ""
    if e.kind == "pixi":
        fix = [M('pixi add %s"cuda-version<=%s"    # CUDA packages the driver runs, in the manifest',
                 "--manifest-path %s " % c.quote(e.manifest) if e.manifest else "", have)]
    else:
        fix = [M('conda install %s"cuda-version<=%s"    # CUDA packages the driver runs', where + " " if where else "", have)]
    if need:
        fix.append(M("# or update the NVIDIA driver to %s or newer (it runs CUDA %s)", need, pinned))
    title = M("the %s environment's CUDA packages are built for CUDA %s, above this driver's CUDA %s", e.kind, pinned, have)
    detail = M("%s holds cuda-version %s: its CUDA libraries (and a conda-forge torch's) are built for CUDA %s. %s",
               e.prefix, pinned, pinned,
               M("The driver runs CUDA %s: a CUDA %d library cannot run on it at all (\"CUDA driver version is "
                 "insufficient\").", have, want[0]) if other_major else
               M("The driver runs CUDA %s: within one major they run by minor-version compatibility, but PTX cannot be "
                 "JIT-compiled and a few newer APIs fail.", have))
    return [F("conda-cuda-above-driver", "error" if other_major else "warning", title, detail, fix)]


def pixi_cuda_above_driver(s, tables=None) -> List:
    """A pixi env whose manifest declares ``[system-requirements] cuda`` above the driver's own CUDA (conda's
    ``__cuda``): pixi refuses to install or run it here ("the current system has a mismatching virtual package")."""
    e = getattr(s, "python_env", None)
    d = s.driver
    if e is None or e.kind != "pixi" or not e.manifest_cuda or d is None or not d.version:
        return []
    have = d.cuda_version or drv.native_cuda_for_driver(d.version, "windows" if s.platform.wsl == 2 else "linux",
                                                         (tables or {}).get(drv.TABLE))
    want = cc_tuple(e.manifest_cuda)
    if not have or not want or want[:2] <= cc_tuple(have)[:2]:
        return []
    need = drv.min_driver_for_cuda(e.manifest_cuda if "." in e.manifest_cuda else e.manifest_cuda + ".0",
                                   "windows" if s.platform.wsl == 2 else "linux", (tables or {}).get(drv.TABLE))
    fix = [M('# in %s: set cuda = "%d" under [system-requirements] (the driver\'s CUDA %s), then: pixi install',
             e.manifest, cc_tuple(have)[0], have)]
    if need:
        fix.append(M("# or update the NVIDIA driver to %s or newer (it runs CUDA %s)", need, e.manifest_cuda))
    return [F("pixi-cuda-above-driver", "error", M("the pixi manifest declares CUDA %s, above this driver's CUDA %s",
                                                   e.manifest_cuda, have),
              M("%s declares [system-requirements] cuda = \"%s\" for the environment '%s'; pixi solves against that and "
                "checks it against the machine's __cuda (the driver's CUDA, %s), so it refuses to install or run the "
                "environment here. CONDA_OVERRIDE_CUDA would hide the mismatch, not fix it: the driver cannot run those "
                "builds.", e.manifest, e.manifest_cuda, e.name, have), fix)]


# ------------------------------------------------------------------ the fix: which torch to install
def install_commands(s, tables, reinstall: bool = True) -> Tuple[List[str], Optional[str]]:
    """(commands, variant) that put the right torch into the probed interpreter. Beside a PEP 668 system Python the
    decision itself gives the one venv recipe (cudaenv.recommend.install.venv_recipe), as `torch recommend` and `fix` do.

    recommend() decides: the installed torch version first; when no build of it fits this
    machine, the newest older torch it names that does ("cu118 (torch 2.7.1)"); nothing when nothing fits.
    """
    from cudaenv.recommend.decide import decide, nearest_release
    from cudaenv.recommend.request import request_from_snapshot

    req = request_from_snapshot(s, c.torch_public_version(s))
    rec = decide(req, None, tables)
    if rec.ok and rec.commands:
        return _manifest_first(rec) + list(rec.commands), rec.variant
    older = nearest_release(req, rec, None, tables)
    if older is not None and older.ok and older.commands:
        return _manifest_first(older) + list(older.commands), "%s (torch %s)" % (older.variant, older.torch_version)
    return [], None


def _manifest_first(rec) -> List[str]:
    """A pixi install whose manifest needs lines first (the CUDA it declares, PyPI entries): that, as an instruction."""
    plan = getattr(rec, "conda_install", None)
    if plan is None or not plan.snippet:
        return []
    where = getattr(getattr(rec, "solver", None), "manifest", None) or "pixi.toml"
    return [M("# first add to %s: %s", where, "; ".join(line for line in plan.snippet if line))]


def reinstall_commands(s, tables) -> List[str]:
    """The installed build again, forced (its nvidia-* libraries too), when that build fits this machine: a broken
    import of a pinned torch is repaired before anything is upgraded. [] when it does not fit or is unknown."""
    t = s.torch
    version, tag = c.torch_public_version(s), tf.local_tag(t.version if t is not None else None)
    if not version or not tag:
        return []
    from cudaenv.recommend.decide import decide
    from cudaenv.recommend.request import request_from_snapshot

    rec = decide(request_from_snapshot(s, version, variant=tag), None, tables)
    if not (rec.ok and rec.commands and rec.variant == tag):
        return []
    out = []
    for cmd in rec.commands:
        if " -m pip install " in cmd:
            cmd = cmd.replace(" -m pip install ", " -m pip install --force-reinstall ", 1)
        elif cmd.startswith("uv pip install "):
            cmd = cmd.replace("uv pip install ", "uv pip install --reinstall ", 1)
        out.append(cmd)
    return out


# ------------------------------------------------------------------ rules
def torch_missing(s, tables) -> List:
    t = s.torch
    if t is not None and (t.installed or t.import_error):
        return []
    fix, variant = install_commands(s, tables, reinstall=False)
    if t is not None and t.python:
        detail = M("torch is not installed in %s.", t.python)
    else:
        detail = M("torch is not installed (no Python interpreter found: give one with --python).")
    if variant:
        detail += M(" For this machine the %s build fits.", variant)
    return [F("torch-missing", "info", M("torch is not installed"), detail, fix)]


def torch_import_error(s, tables) -> List:
    t = s.torch
    if t is None or not t.import_error:
        return []
    fix = reinstall_commands(s, tables)
    other, variant = install_commands(s, tables)
    if other and other != fix:
        fix += ([M("# or, if the same build fails again, the %s build cudaenv picks for this machine:", variant)] if fix else []) + other
    first = t.import_error.strip().splitlines()[0] if t.import_error.strip() else t.import_error
    return [
        F(
            "torch-import-error",
            "error",
            M("torch is installed but `import torch` fails"),
            M("In %s, `import torch` raised:\n%s\nA torch whose CUDA libraries (nvidia-* wheels) are missing or from "
              "another CUDA, or a half-finished install, does this.", t.python, first),
            fix or ["%s install --force-reinstall torch==%s" % (c.pip_cmd(s), c.torch_public_version(s))],
        )
    ]


def torch_cpu_only(s, tables) -> List:
    if not c.torch_cpu_build(s) or not c.usable_gpu(s):
        return []
    t = s.torch
    g = s.gpus[0]
    fix, variant = install_commands(s, tables)
    return [
        F(
            "torch-cpu-only",
            "error",
            M("torch %s is a CPU-only build, but this machine has an NVIDIA GPU", t.version),
            M("torch %s in %s has no CUDA (torch.version.cuda is None), so torch.cuda.is_available() is False. "
              "The machine has %s with driver %s (CUDA %s)%s.",
              t.version, t.python, c.gpu_label(g) + (M(" and %d more", len(s.gpus) - 1) if len(s.gpus) > 1 else ""),
              c.driver_version(s), c.driver_cuda(s, tables) or "?",
              M("; the %s build fits it", variant) if variant else ""),
            fix,
        )
    ]


def driver_too_old(s, tables) -> List:
    t = s.torch
    version = c.driver_version(s)
    if not c.torch_cuda_build(s) or version is None or c.driver_broken(s):
        return []
    if s.platform.jetson is not None:
        return []  # an L4T release, not a driver series: the JetPack decides which CUDA runs (recommend says which torch)
    system = c.driver_system(s)
    tbl = c.table(tables)
    minimum = drv.min_driver_for_cuda(t.cuda, system, tbl)
    bundled = drv.toolkit_driver(t.cuda, system, tbl)
    if minimum and compare_versions(version, minimum) < 0:
        top = drv.max_cuda_for_driver(version, system, tbl)
        fix, variant = install_commands(s, tables)
        fixes = upgrade_driver_fix(s, bundled or minimum, t.cuda)
        if fix:
            fixes += [M("# or keep driver %s and install the %s build:", version, variant)] + fix
        return [
            F(
                "driver-too-old-for-torch",
                "error",
                M("driver %s is too old for torch %s (CUDA %s)", version, t.version, t.cuda),
                M("torch %s is built with CUDA %s, which needs NVIDIA driver %s or newer (minor-version compatibility; "
                  "%s is what CUDA %s ships), so CUDA initialisation fails with \"The NVIDIA driver on your system is "
                  "too old\". This driver, %s, runs CUDA up to %s%s.",
                  t.version, t.cuda, minimum, bundled or "?", c.short(t.cuda), version, top or M("none of the torch builds"),
                  M("; the newest torch variant it can run is %s", variant) if variant else ""),
                fixes,
            )
        ]
    if drv.minor_compat_only(version, t.cuda, system, tbl):
        cubins = _all_gpus_have_cubins(s, tables)
        return [
            F(
                "driver-minor-compat",
                "info" if cubins else "warning",
                M("torch's CUDA %s is newer than driver %s: minor-version compatibility only", t.cuda, version),
                M("torch %s is built with CUDA %s, whose own driver is %s; driver %s (CUDA %s) runs it through "
                  "minor-version compatibility (needs %s), with a limited feature set: PTX newer than the driver cannot "
                  "be JIT-compiled (\"the provided PTX was compiled with an unsupported toolchain\"), which hits GPUs "
                  "without a matching cubin and code that JITs PTX.%s",
                  t.version, t.cuda, bundled, version, c.driver_cuda(s, tables) or "?", minimum or "?",
                  M(" Every GPU here has a cubin in this build, so torch's own kernels are not affected.") if cubins else ""),
                upgrade_driver_fix(s, bundled, t.cuda),
            )
        ]
    return []


def _kernel_gpus(s) -> List[Tuple[str, Tuple[int, int], Optional[str]]]:
    """(label, capability, name) of the GPUs torch's kernels must run on: the visible ones, else torch's devices."""
    from cudaenv.model.visible import visible_gpus

    gpus = [("%s (GPU %d)" % (g.name or "GPU", g.index), cc_tuple(g.compute_capability), g.name)
            for g in visible_gpus(s) if cc_tuple(g.compute_capability)]
    if not gpus and s.torch is not None:
        gpus = [("%s (cuda:%d)" % (d.name or "GPU", i), cc_tuple(d.capability), d.name)
                for i, d in enumerate(s.torch.devices) if cc_tuple(d.capability)]
    return gpus


def _all_gpus_have_cubins(s, tables) -> bool:
    """True when the torch build's arch list is known and every GPU runs one of its cubins (no PTX JIT needed)."""
    t = s.torch
    arch_list = t.arch_list if t.dynamic and t.arch_list else static_arch_list(s, tables)
    gpus = _kernel_gpus(s)
    if not arch_list or not gpus:
        return False
    return all((tf.gpu_runs(arch_list, cap, ptx_jit_ok=False) is not None) for _, cap, _ in gpus)


def static_arch_list(s, tables=None) -> Optional[Tuple[str, ...]]:
    """The arch list of the installed torch build from ``data/torch_arch.json``, for when torch was not imported
    (``--quick``, a failed import): ``2.8.0+cu128`` on linux-x86_64 -> ("sm_70", ..., "sm_120"). None when torch
    was imported (its own list counts), is no CUDA build, runs on a Jetson, or the table has no row for it."""
    t = s.torch
    if not c.torch_cuda_build(s) or (t.dynamic and t.arch_list) or s.platform.jetson is not None:
        return None
    variant = tf.local_tag(t.version) or "cu" + (t.cuda or "").replace(".", "")
    if tf.variant_cuda(variant) is None:
        return None
    row = tf.arch_list_for(t.version, variant, s.platform.system, s.platform.machine, c.table(tables, "torch_arch"))
    return tf.arch_list_of(*row) if row else None


def gpu_arch(s, tables) -> List:
    t = s.torch
    if not c.torch_cuda_build(s):
        return []
    arch_list = t.arch_list if t.dynamic and t.arch_list else static_arch_list(s, tables)
    if not arch_list:
        return []
    static = not (t.dynamic and t.arch_list)
    gpus = _kernel_gpus(s)
    bad, jit = [], []
    for label, cap, name in gpus:
        how = tf.gpu_runs(arch_list, cap)
        if how is None:
            bad.append((label, cap, name))
        elif how.kind == "ptx":
            jit.append((label, cap, how.describe()))
    out = []
    if bad:
        label, cap, name = bad[0]
        fix, variant = install_commands(s, tables)
        archs = " ".join(arch_list)
        if static:
            why = M("import torch failed") if t.import_error else "--quick"
            archs += M(" (its arch list in cudaenv's tables: torch was not imported, %s)", why)
        out.append(
            F(
                "gpu-arch-unsupported",
                "error",
                M("torch %s has no kernels for %s", t.version, label),
                M("%s has compute capability %d.%d; torch %s was built for %s. No cubin of the same major at or below "
                  "sm_%d%d and no PTX at or below compute_%d%d is in it, so every CUDA kernel fails with \"no kernel image "
                  "is available for execution on the device\" (torch.cuda.is_available() still says True)%s.",
                  ", ".join(b[0] for b in bad), cap[0], cap[1], t.version, archs, cap[0], cap[1], cap[0], cap[1],
                  M("; the %s build has kernels for it", variant) if variant else ""),
                fix,
            )
        )
    elif jit and c.driver_version(s):
        bundled = drv.toolkit_driver(t.cuda, c.driver_system(s), c.table(tables))
        version = c.driver_version(s)
        if bundled and compare_versions(version, bundled) < 0:
            label, cap, how = jit[0]
            out.append(
                F(
                    "gpu-arch-unsupported",
                    "error",
                    M("%s needs PTX JIT, and driver %s is too old to JIT CUDA %s PTX", label, version, t.cuda),
                    M("torch %s has no cubin for compute %d.%d, only %s; JIT-compiling that PTX needs the driver of CUDA %s "
                      "(%s or newer), this one is %s.", t.version, cap[0], cap[1], how, t.cuda, bundled, version),
                    upgrade_driver_fix(s, bundled, t.cuda),
                )
            )
    return out


def torch_cuda_unavailable(s, tables) -> List:
    t = s.torch
    if not c.torch_cuda_build(s) or not t.dynamic or t.cuda_available is not False or t.import_error:
        return []
    if not c.usable_gpu(s):
        return []
    v = s.visible_devices
    if v.cuda_visible_devices is not None and not v.mapping:
        return []  # explained by visible-devices-empty / -invalid
    if s.platform.container and not s.platform.dev_nvidia and not s.platform.dev_dxg:
        return []  # explained by container-no-gpu
    said = (t.cuda_error or "").strip()
    detail = M("torch %s is a CUDA %s build and driver %s should run it, yet torch.cuda.is_available() is False in %s.",
               t.version, t.cuda, c.driver_version(s), t.python)
    detail += M(" torch said: %s", said.splitlines()[0]) if said else M(" torch gave no warning.")
    fix = [M("%s -c \"import torch; torch.cuda.init()\"    # shows the real CUDA error", c.python_cmd(s))]
    known = torch_error_kind(said)
    if known is not None:
        detail += M(" cudaenv explain reads it as %s (%s).", known.id, known.title)
        fix += cuda_error_fix(known)
    if not s.platform.dev_nvidia and s.platform.wsl != 2:
        fix.append(M("sudo nvidia-modprobe -u -c=0    # creates /dev/nvidia-uvm and /dev/nvidia0"))
    fix.append(M("env | grep -E '^(CUDA|NVIDIA)_'    # a stray CUDA_VISIBLE_DEVICES in the job's environment"))
    return [F("torch-cuda-unavailable", "error", M("torch.cuda.is_available() is False on a working GPU"), detail, fix)]


# What torch's CUDA error means is the error table's to say (data/error_patterns.json, classified by
# cudaenv.explain.classify_error, the classifier `cudaenv explain` and `verify` use): the doctor adds the check that
# fits the row it names, and nothing for a text the table does not know.
DEVICE_NODE_IDS = ("driver-no-permission", "cuda-unknown-error")  # rows whose advice is to check the /dev/nvidia* nodes
LOADER_IDS = ("cuda-library-missing", "libcudart-missing", "libcuda-not-found", "library-not-found")  # rows of a library
# the dynamic loader could not find


def torch_error_kind(text: str):
    """The error table's row for torch's CUDA error text (an :class:`~cudaenv.explain.ErrorMatch`), or None."""
    if not text:
        return None
    from cudaenv.explain import classify_error

    return classify_error(text)


def cuda_error_fix(match) -> List[str]:
    """The doctor's check for a CUDA error the table named (``match``: :func:`torch_error_kind`'s answer)."""
    if match.id in LOADER_IDS:
        library = dict(match.values).get("library") or "libcuda.so.1"
        whose = M("the driver's libcuda") if library.startswith("libcuda.") else library
        return [M("ldconfig -p | grep %s    # %s must be on the loader path", library, whose)]
    if match.id in DEVICE_NODE_IDS:
        return [M("ls -l /dev/nvidia*    # every node must be readable and writable by you")]
    return []
