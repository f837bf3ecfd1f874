"""Driver, GPU and GPU-process probe: NVML (in a child process), /proc and /sys, and nvidia-smi.

Only Host I/O lives here; what is read is understood by the pure parsers of :mod:`cudaenv.parse.nvidia_smi`
(banner, CSV queries, failure texts), :mod:`cudaenv.parse.nvml` (the NVML child's JSON) and
:mod:`cudaenv.parse.proc` (``/proc/driver/nvidia/version``, ``/proc/PID/status``, ``/etc/passwd``). The
failure texts are the rows of ``data/error_patterns.json`` with a ``tool_failure`` (one table for the doctor
and ``cudaenv explain``).

:func:`probe_nvidia` runs NVML and nvidia-smi concurrently, each once, with the host timeout: a hung
nvidia-smi costs one timeout, never one per query. A tool killed by a signal (a segfaulting nvidia-smi)
is the failure ``crashed``, with the signal named.
"""

from __future__ import annotations

import signal as _signal
import sys
from cudaenv.core.i18n import M
from cudaenv.core.text import seconds_text
from cudaenv.model.record import Record

from cudaenv.parse._lines import excerpt
# nvidia-smi's and NVML's parsers (cudaenv.parse.nvidia_smi, cudaenv.parse.nvml) are imported where there is one of
# them to read: a machine without either (a login node, a CI runner: `doctor --quick`'s usual case) loads neither
from cudaenv.parse.proc import parse_passwd, parse_proc_driver_version, parse_proc_status, parse_sys_module_version
from cudaenv.probes.nvidia_smi_path import MOUNTED_SMI, WSL_SMI, find_nvidia_smi
from cudaenv.probes.platform import driver_library_dirs
from cudaenv.model.snapshot import Driver, Gpu, GpuCondition, GpuProcess, Note, ToolStatus

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Sequence, Tuple

    from cudaenv.parse.nvml import NvmlResult

NVML_LIBRARIES_WINDOWS = (
    "C:\\Windows\\System32\\nvml.dll",
    "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvml.dll",
)

# Kernel files (/proc, /sys) refuse very large reads on some kernels (ENOMEM): read them in small pieces.
SMALL = 65536


class NvidiaState(Record):
    """What the driver probe saw: the driver (None when no source named a version), GPUs, processes, tools."""

    driver: Optional[Driver]
    gpus: Tuple[Gpu, ...] = ()
    processes: Tuple[GpuProcess, ...] = ()
    tools: Tuple[ToolStatus, ...] = ()
    conditions: Tuple[GpuCondition, ...] = ()  # nvidia-smi -q's ECC, retired pages, remapped rows, slowdowns


# nvidia-smi -q's sections the GPU condition read asks for (one run, beside the queries: cudaenv.parse.smi_conditions)
CONDITION_SECTIONS = "ECC,PAGE_RETIREMENT,ROW_REMAPPER,PERFORMANCE"


def _failure_patterns():
    """The failure rows of data/error_patterns.json, compiled once."""
    global _PATTERNS
    if _PATTERNS is None:
        from cudaenv.core.resources import load_table
        from cudaenv.parse.nvidia_smi import failure_patterns

        _PATTERNS = failure_patterns(load_table("error_patterns")["rows"])
    return _PATTERNS


_PATTERNS = None


def classify_smi_failure(text: Optional[str]) -> Optional[str]:
    """The failure id a known nvidia-smi/NVML error text stands for (the error table's rows), or None."""
    from cudaenv.parse.nvidia_smi import classify_failure

    return classify_failure(text, _failure_patterns())


def crash_signal(run) -> Optional[str]:
    """The signal (``SIGSEGV``) that killed a command: Host's ``signal`` field (a kill, or a shell's exit status
    128+N), not cudaenv's own timeout kill."""
    return run.signal if getattr(run, "crashed", False) else None


def crash_message(run, sig: str, name=None) -> str:
    """``nvidia-smi crashed: SIGSEGV (signal 11, exit status 139)``, a marked message; ``name``: what crashed, when not
    the program ``run`` ran (the NVML probe)."""
    name = run.name if name is None else name
    try:
        number = _signal.Signals[sig]
    except KeyError:
        number = None
    if number is None:
        return M("%s crashed: %s", name, sig)
    if isinstance(run.returncode, int) and run.returncode > 0:
        return M("%s crashed: %s (signal %d, exit status %d)", name, sig, number.value, run.returncode)
    return M("%s crashed: %s (signal %d)", name, sig, number.value)


# ------------------------------------------------------------------------------ probe
def find_nvml_library(host) -> Optional[str]:
    """The NVML library to load: ``CUDAENV_NVML_LIBRARY``, else the first of the driver's library folders (the
    platform probe's, WSL 2's first) that holds it, inside the root."""
    from cudaenv.core import config

    override = config.value(host.env, "CUDAENV_NVML_LIBRARY")
    if override:
        return str(host.path(override))
    from cudaenv.host import current_system

    if host.system == "darwin" or host.system != current_system():
        return None  # a library of another OS cannot be loaded here
    if host.system == "windows":
        candidates: Sequence[str] = NVML_LIBRARIES_WINDOWS
    else:
        candidates = [folder + "/libnvidia-ml.so.1" for folder in driver_library_dirs(host)]
    for candidate in candidates:
        if host.exists(candidate):
            real = host.real(candidate)
            return str(real) if real is not None else str(host.path(candidate))
    return None


def probe_nvidia(host, notes: list, platform=None) -> NvidiaState:
    """Ask every driver source once (NVML and nvidia-smi concurrently), then merge what they said."""
    from cudaenv.core.jobs import Job  # plain threads: concurrent.futures costs more to import than this takes

    smi = find_nvidia_smi(host)
    lib = find_nvml_library(host)
    if smi and smi == str(host.path(MOUNTED_SMI)):
        notes.append(Note("nvidia-smi", M("nvidia-smi is at %s (a container's driver mount) but not on PATH: "
                          "export PATH=/usr/local/nvidia/bin:$PATH", MOUNTED_SMI)))
    tools: List[ToolStatus] = []
    image_lib, image_smi = bool(lib) and host.inspected_only(lib), bool(smi) and host.inspected_only(smi)
    if image_lib or image_smi:
        notes.append(Note("nvidia", M("the inspected root's driver (%s) is read as files, never run or loaded: its GPUs "
                          "are not known from here", ", ".join(n for n, image in (("libnvidia-ml", image_lib), ("nvidia-smi", image_smi)) if image))))
    if smi and not image_smi:
        from cudaenv.parse.nvidia_smi import APPS_FIELDS, QUERY_FIELDS
    nvml_job = Job(_run_nvml, host, lib) if lib and not image_lib else None
    query_job = Job(host.run, [smi, "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits"]) if smi and not image_smi else None
    apps_job = Job(host.run, [smi, "--query-compute-apps=" + ",".join(APPS_FIELDS), "--format=csv,noheader,nounits"]) if smi and not image_smi else None
    condition_job = Job(host.run, [smi, "-q", "-d", CONDITION_SECTIONS]) if smi and not image_smi else None
    nvml_run = nvml_job.result() if nvml_job else None
    query_run = query_job.result() if query_job else None
    apps_run = apps_job.result() if apps_job else None

    if image_lib:
        tools.append(ToolStatus("nvml", lib, "not run"))
        nvml = None
    else:
        nvml = _nvml_status(host, lib, nvml_run, notes, tools)
    smi_state = _SmiState(smi)
    if image_smi:
        tools.append(ToolStatus("nvidia-smi", smi, "not run"))
    elif smi:
        _smi_queries(host, smi, query_run, apps_run, nvml, smi_state, notes)
        tools.append(smi_state.status())
    else:
        tools.append(ToolStatus("nvidia-smi", None, "missing"))

    module = kmod_version = None
    if host.system == "linux":
        module = parse_proc_driver_version(host.read_text("/proc/driver/nvidia/version", limit=SMALL))
        kmod_version = module.version if module else parse_sys_module_version(host.read_text("/sys/module/nvidia/version", limit=SMALL))

    gpus = _merge_gpus(smi_state.gpus, nvml.gpus if nvml and nvml.ok else ())
    processes = _processes(host, smi_state.processes, gpus, platform)
    driver = _driver(host, nvml, smi_state, module, kmod_version, smi, lib, platform)
    return NvidiaState(driver=driver, gpus=gpus, processes=processes, tools=tuple(tools),
                       conditions=_conditions(condition_job.result() if condition_job else None, smi_state))


def _conditions(run, smi_state) -> Tuple[GpuCondition, ...]:
    """The GPUs' conditions from ``nvidia-smi -q -d ...``, where nvidia-smi answered its query; () otherwise (a driver
    too old for one of the sections refuses them all: nothing is said)."""
    if run is None or not run.ok or not smi_state.gpus:
        return ()
    from cudaenv.parse.smi_conditions import parse_smi_conditions

    return parse_smi_conditions(run.stdout)


def _run_nvml(host, lib: str):
    from cudaenv._child import source

    script = source("nvml_probe.py")
    return host.run([sys.executable, "-c", script, lib])


def _nvml_status(host, lib, run, notes, tools) -> Optional[NvmlResult]:
    if not lib:
        tools.append(ToolStatus("nvml", None, "missing"))
        return None
    from cudaenv.parse.nvidia_smi import classify_failure, failure_for_nvml_code
    from cudaenv.parse.nvml import NvmlResult, parse_nvml_output

    if run.error == "timeout":
        tools.append(ToolStatus("nvml", lib, "timeout", None, None, run.seconds))
        notes.append(Note("nvml", M("the NVML probe timed out after %s (a hung driver or GPU)", seconds_text(run.timeout))))
        return None
    sig = crash_signal(run)
    if sig is not None:
        message = crash_message(run, sig, M("the NVML probe"))
        tools.append(ToolStatus("nvml", lib, "failed", "crashed", message, run.seconds))
        notes.append(Note("nvml", message))
        return NvmlResult(False, message=message, stage="run")
    result = parse_nvml_output(run.stdout) if run.error is None else NvmlResult(False, message=excerpt(run.describe()), stage="run")
    if result.ok:
        lost = next((e for e in result.device_errors if "GPU_IS_LOST" in e), None)
        tools.append(ToolStatus("nvml", lib, "ok", "gpu-lost" if lost else None, lost, run.seconds))
        notes.extend(Note("nvml", M("NVML could not read %s", e)) for e in result.device_errors)
        return result
    patterns = _failure_patterns()
    failure = failure_for_nvml_code(result.error_code, patterns) if result.error_code is not None else classify_failure(result.message, patterns)
    message = excerpt(result.message) or "NVML failed"
    tools.append(ToolStatus("nvml", lib, "failed", failure, message, run.seconds))
    detail = " (%s, %s)" % (result.error_name, result.error_code) if result.error_name else ""
    notes.append(Note("nvml", M("NVML %s failed: %s%s", result.stage or "probe", message, detail)))
    return result


class _SmiState:
    """What nvidia-smi said, gathered over its (at most four) runs."""

    def __init__(self, path: Optional[str]):
        self.path = path
        self.gpus: Tuple[Gpu, ...] = ()
        self.processes: Tuple[GpuProcess, ...] = ()
        self.driver: Optional[str] = None
        self.cuda: Optional[str] = None
        self.status_text = "ok"
        self.failure: Optional[str] = None
        self.message: Optional[str] = None
        self.seconds = 0.0
        self.timed_out = False

    def fail(self, failure: Optional[str], message: str) -> None:
        if self.status_text == "ok":
            self.status_text, self.failure, self.message = "failed", failure, message

    def status(self) -> ToolStatus:
        if self.timed_out:
            return ToolStatus("nvidia-smi", self.path, "timeout", None, self.message, self.seconds)
        return ToolStatus("nvidia-smi", self.path, self.status_text, self.failure, self.message, self.seconds)


def _smi_queries(host, smi, query_run, apps_run, nvml, state: _SmiState, notes) -> None:
    from cudaenv.parse.nvidia_smi import QUERY_FIELDS_OLD, SmiQuery, parse_apps_csv, parse_banner, parse_query_csv

    state.seconds = max(query_run.seconds, apps_run.seconds)
    if query_run.error == "timeout" or apps_run.error == "timeout":
        state.timed_out = True
        state.message = M("nvidia-smi timed out after %s", seconds_text(query_run.timeout))
        notes.append(Note("nvidia-smi", M("nvidia-smi timed out after %s: the driver or a GPU may be hung; "
                          "it was not asked again", seconds_text(query_run.timeout))))
        return
    crashed = next((r for r in (query_run, apps_run) if crash_signal(r) is not None), None)
    if crashed is not None:
        message = crash_message(crashed, crash_signal(crashed))
        state.fail("crashed", message)
        notes.append(Note("nvidia-smi", message))
        return
    run = query_run
    parsed = parse_query_csv(run.stdout) if run.ok else SmiQuery((), None)
    if not run.ok and 'Field "compute_cap" is not a valid field' in run.output[:4096]:
        run = host.run([smi, "--query-gpu=" + ",".join(QUERY_FIELDS_OLD), "--format=csv,noheader,nounits"])
        state.seconds += run.seconds
        if run.error == "timeout":
            state.timed_out, state.message = True, run.describe()
            notes.append(Note("nvidia-smi", M("%s: the driver or a GPU may be hung; it was not asked again", run.describe())))
            return
        if crash_signal(run) is not None:
            message = crash_message(run, crash_signal(run))
            state.fail("crashed", message)
            notes.append(Note("nvidia-smi", message))
            return
        parsed = parse_query_csv(run.stdout, QUERY_FIELDS_OLD) if run.ok else SmiQuery((), None)
    state.gpus, state.driver = parsed.gpus, parsed.driver_version
    if not parsed.gpus:
        _record_failure(run, state, notes)
    if apps_run.ok:
        state.processes = parse_apps_csv(apps_run.stdout)
    need_banner = not parsed.gpus or not (nvml and nvml.ok and nvml.cuda_version)
    if need_banner and state.failure not in ("driver-not-loaded", "driver-library-mismatch", "no-permission"):
        banner_run = host.run([smi])
        state.seconds += banner_run.seconds
        if banner_run.error == "timeout":
            state.timed_out, state.message = True, banner_run.describe()
            notes.append(Note("nvidia-smi", M("%s: the driver or a GPU may be hung; it was not asked again", banner_run.describe())))
            return
        if crash_signal(banner_run) is not None:
            message = crash_message(banner_run, crash_signal(banner_run))
            state.fail("crashed", message)
            notes.append(Note("nvidia-smi", message))
            return
        banner = parse_banner(banner_run.stdout)
        state.cuda = banner.cuda_version
        state.driver = state.driver or banner.driver_version
        if banner.cuda_raw and not banner.cuda_version:
            notes.append(Note("nvidia-smi", M("nvidia-smi prints CUDA Version: %s", banner.cuda_raw)))
        if not state.gpus and banner.gpus:
            state.gpus = banner.gpus
        if not apps_run.ok and banner.processes:
            state.processes = banner.processes
        if not state.gpus and not state.failure:
            _record_failure(banner_run, state, notes)


def _record_failure(run, state: _SmiState, notes) -> None:
    text = run.output
    failure = classify_smi_failure(text)
    line = excerpt(text) or excerpt(run.describe())
    if failure is None and run.ok and not text.strip():
        return  # ran fine and listed nothing: no GPU, no failure
    if state.failure is None and state.status_text == "ok":
        state.fail(failure, line)
        notes.append(Note("nvidia-smi", line if failure else M("nvidia-smi gave no GPU list: %s", line)))


def _merge_gpus(smi_gpus: Sequence[Gpu], nvml_gpus: Sequence[Gpu]) -> Tuple[Gpu, ...]:
    """nvidia-smi's rows, completed by NVML's (compute capability on old drivers, MIG uuids); else NVML's."""
    if not smi_gpus:
        return tuple(nvml_gpus)
    by_uuid = {g.uuid: g for g in nvml_gpus if g.uuid}
    by_index = {g.index: g for g in nvml_gpus}
    merged = []
    for g in smi_gpus:
        other = by_uuid.get(g.uuid) if g.uuid else by_index.get(g.index)
        if other is None:
            merged.append(g)
            continue
        from cudaenv.model.record import replace

        merged.append(
            replace(
                g,
                name=g.name if g.name and not g.name.endswith("...") else other.name or g.name,
                uuid=g.uuid or other.uuid,
                pci_bus_id=g.pci_bus_id or other.pci_bus_id,
                memory_total_mib=g.memory_total_mib if g.memory_total_mib is not None else other.memory_total_mib,
                memory_used_mib=g.memory_used_mib if g.memory_used_mib is not None else other.memory_used_mib,
                compute_capability=g.compute_capability or other.compute_capability,
                mig_uuids=g.mig_uuids or other.mig_uuids,
            )
        )
    return tuple(merged)


def _driver(host, nvml, smi: _SmiState, module, kmod_version, smi_path, lib, platform) -> Optional[Driver]:
    version, source = None, "unknown"
    if nvml and nvml.ok and nvml.driver_version:
        version, source = nvml.driver_version, "nvml"
    elif smi.driver:
        version, source = smi.driver, "nvidia-smi"
    elif module:
        version, source = module.version, "proc"
    elif kmod_version:
        version, source = kmod_version, "sys"
    from cudaenv.core import config

    override = config.value(host.env, "CUDAENV_DRIVER_VERSION")
    if override:
        version, source = override, "env"
    if version is None:
        return None
    cuda = (nvml.cuda_version if nvml and nvml.ok else None) or smi.cuda
    wsl_side = bool(
        (smi_path and smi_path.replace("\\", "/").endswith(WSL_SMI))
        or (lib and "/usr/lib/wsl/lib/" in lib.replace("\\", "/"))
        or getattr(platform, "wsl", None) == 2
    )
    return Driver(
        version=version,
        cuda_version=cuda,
        kernel_module=module.flavor if module else None,
        kernel_module_version=kmod_version,
        source=source,
        nvidia_smi=smi_path,
        wsl_windows_side=wsl_side,
    )


def _processes(host, found: Sequence[GpuProcess], gpus: Sequence[Gpu], platform=None) -> Tuple[GpuProcess, ...]:
    """Each process with its GPU index, owner and state. In a container of its own PID namespace nvidia-smi
    lists host pids: one this /proc does not have is ``elsewhere`` (another container's job), never ``gone``."""
    from cudaenv.model.record import replace

    index_of = {g.uuid: g.index for g in gpus if g.uuid}
    check = host.system == "linux" and host.is_dir("/proc")
    users: dict = {}
    for account in parse_passwd(host.read_text("/etc/passwd")) if check and found else ():
        users.setdefault(account.uid, account.name)
    namespace = getattr(platform, "pid_namespace", None)
    foreign = namespace == "container" or (namespace is None and bool(getattr(platform, "container", None)))
    result = []
    for p in found:
        owner = state = None
        if check:
            status = host.read_text("/proc/%d/status" % p.pid, limit=SMALL)
            if status is None and not host.is_dir("/proc/%d" % p.pid):
                state = "elsewhere" if foreign else "gone"
            else:
                fields = parse_proc_status(status)
                state = "zombie" if fields.get("State", "").startswith("Z") else "running"
                uid = fields.get("Uid", "").split()
                owner = users.get(uid[0], uid[0]) if uid else None
        gpu_index = p.gpu_index if p.gpu_index is not None else index_of.get(p.gpu_uuid) if p.gpu_uuid else None
        result.append(replace(p, gpu_index=gpu_index, owner=owner, state=state))
    return tuple(result)


