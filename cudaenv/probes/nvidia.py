"""Driver, GPU and GPU-process probe: NVML (in a child process), /proc and /sys, and nvidia-smi.

Pure parsers, each fed recorded real outputs in the tests:

* :func:`parse_proc_driver_version`  ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.135  Fri ...`` and the
  open module's ``NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ...``
* :func:`parse_smi_query_csv`        ``0, NVIDIA B200, 610.43.02, 10.0, 183359, 0, GPU-..., 00000000:63:00.0``
* :func:`parse_smi_banner`           the ``nvidia-smi`` table (``Driver Version:``/``KMD Version:``,
  ``CUDA Version:``/``CUDA UMD Version:``, ``N/A``, ``ERR!``)
* :func:`parse_smi_apps_csv`         ``12345, python, 4096, GPU-...``
* :func:`parse_nvml_output`          the JSON printed by ``cudaenv/_child/nvml_probe.py``
* :func:`classify_smi_failure`       known failure texts -> ``driver-not-loaded`` ...

:func:`probe_nvidia` runs NVML and nvidia-smi concurrently, each once, with the host timeout: a hung
nvidia-smi costs one timeout, never one per query.
"""

import json
import re
import sys
from cudaenv._record import Record
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from cudaenv.probes.platform import driver_library_dirs
from cudaenv.snapshot import Driver, Gpu, GpuProcess, Note, ToolStatus
from cudaenv.version import cc_text, cuda_from_int

QUERY_FIELDS = ("index", "name", "driver_version", "compute_cap", "memory.total", "memory.used", "uuid", "pci.bus_id")
QUERY_FIELDS_OLD = tuple(f for f in QUERY_FIELDS if f != "compute_cap")  # 470 and older: no compute_cap
APPS_FIELDS = ("pid", "process_name", "used_memory", "gpu_uuid")

NVML_LIBRARIES_WINDOWS = (
    "C:\\Windows\\System32\\nvml.dll",
    "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvml.dll",
)
WSL_SMI = "/usr/lib/wsl/lib/nvidia-smi"
MOUNTED_SMI = "/usr/local/nvidia/bin/nvidia-smi"  # the /usr/local/nvidia driver mount, when PATH lacks its bin
WINDOWS_SMI = (
    "C:\\Windows\\System32\\nvidia-smi.exe",
    "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvidia-smi.exe",
)

# Failure texts, most specific first. Each maps to a ToolStatus.failure id the diagnosis reads.
SMI_FAILURES = (
    (r"Driver/library version mismatch", "driver-library-mismatch"),
    (r"couldn't communicate with the NVIDIA driver|Driver Not Loaded", "driver-not-loaded"),
    (r"Unable to (?:determine|detect) the device handle|GPU is lost|GPU has fallen off the bus", "gpu-lost"),
    (r"Insufficient Permissions", "no-permission"),
    (r"No devices were found", "no-devices"),
)
NVML_FAILURES = {9: "driver-not-loaded", 18: "driver-library-mismatch", 4: "no-permission", 15: "gpu-lost", 6: "no-devices"}

# Kernel files (/proc, /sys) refuse very large reads on some kernels (ENOMEM): read them in small pieces.
SMALL = 65536

_NA = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "unknown error", "err!", "[err!]", "[gpu is lost]"}


class NvidiaState(Record):
    """What the driver probe saw: the driver (None when no source named a version), GPUs, processes, tools."""

    driver: Optional[Driver]
    gpus: Tuple[Gpu, ...] = ()
    processes: Tuple[GpuProcess, ...] = ()
    tools: Tuple[ToolStatus, ...] = ()


class KernelModule(NamedTuple):
    version: str
    flavor: str  # open | proprietary


class SmiQuery(NamedTuple):
    gpus: Tuple[Gpu, ...]
    driver_version: Optional[str]


class SmiBanner(NamedTuple):
    smi_version: Optional[str]  # the NVIDIA-SMI (Linux-side on WSL2) version
    driver_version: Optional[str]  # Driver Version / KMD Version
    cuda_version: Optional[str]  # None for N/A, ERR! or absent
    cuda_raw: Optional[str]  # the text as printed: "12.4", "N/A", "ERR!"
    gpus: Tuple[Gpu, ...]
    processes: Tuple[GpuProcess, ...]


class NvmlResult(NamedTuple):
    ok: bool
    driver_version: Optional[str] = None
    cuda_version: Optional[str] = None
    gpus: Tuple[Gpu, ...] = ()
    error_code: Optional[int] = None
    error_name: Optional[str] = None
    message: Optional[str] = None
    stage: Optional[str] = None
    device_errors: Tuple[str, ...] = ()  # "GPU 1: GPU is lost (NVML_ERROR_GPU_IS_LOST)"


# ----------------------------------------------------------------------------- parsers
def parse_proc_driver_version(text: Optional[str]) -> Optional[KernelModule]:
    """The kernel module's version and flavour from ``/proc/driver/nvidia/version`` (None when absent or odd).

    >>> parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.135  Fri Jan 10 2025")
    KernelModule(version='550.135', flavor='proprietary')
    """
    for line in (text or "").splitlines():
        m = re.search(r"NVRM version:.*?(Open )?Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", line)
        if m:
            return KernelModule(m.group(2), "open" if m.group(1) else "proprietary")
    return None


def parse_sys_module_version(text: Optional[str]) -> Optional[str]:
    """``/sys/module/nvidia/version``: just ``550.54.15``."""
    value = (text or "").strip()
    return value if re.match(r"^\d+(?:\.\d+)+$", value) else None


def cuda_version_from_int(value: Optional[int]) -> Optional[str]:
    """NVML/CUDA's integer version: 12040 -> "12.4", 13000 -> "13.0" (an int only; decoded by cudaenv.version)."""
    if not isinstance(value, int):
        return None
    return cuda_from_int(value)


def _clean(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    v = value.strip()
    return None if v.lower() in _NA else v


def _int(value: Optional[str]) -> Optional[int]:
    v = _clean(value)
    if v is None:
        return None
    m = re.match(r"^(\d+)(?:\.\d+)?\s*(?:MiB|MB)?$", v)
    return int(m.group(1)) if m else None


def _capability(value: Optional[str]) -> Optional[str]:
    v = _clean(value)
    return cc_text(v) if v and "." in v else None


def _header_fields(line: str) -> Optional[Tuple[str, ...]]:
    names = tuple(re.sub(r"\s*\[.*?\]\s*$", "", cell.strip()) for cell in line.split(","))
    known = set(QUERY_FIELDS) | {"gpu_uuid", "gpu_name", "gpu_bus_id", "compute_mode", "pstate", "count", "timestamp"}
    return names if names and all(re.match(r"^[a-z_][a-z0-9_.]*$", n) for n in names) and any(n in known for n in names) else None


def parse_smi_query_csv(text: Optional[str], fields: Sequence[str] = QUERY_FIELDS) -> SmiQuery:
    """GPUs from ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits`` (a header line, if any, names the fields)."""
    gpus: List[Gpu] = []
    driver: Optional[str] = None
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if lines:
        header = _header_fields(lines[0])
        if header:
            fields, lines = header, lines[1:]
    fields = tuple(fields)
    for row, line in enumerate(lines):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(fields):
            continue
        rec = dict(zip(fields, cells))
        index = _int(rec.get("index")) if "index" in rec else row
        if index is None:
            continue
        uuid = _clean(rec.get("uuid") or rec.get("gpu_uuid"))
        if uuid is not None and not re.match(r"^(GPU|MIG)-[0-9A-Za-z-]+$", uuid):
            continue
        gpus.append(
            Gpu(
                index=index,
                name=_clean(rec.get("name") or rec.get("gpu_name")),
                uuid=uuid,
                pci_bus_id=_clean(rec.get("pci.bus_id") or rec.get("gpu_bus_id")),
                memory_total_mib=_int(rec.get("memory.total")),
                memory_used_mib=_int(rec.get("memory.used")),
                compute_capability=_capability(rec.get("compute_cap")),
            )
        )
        driver = driver or _clean(rec.get("driver_version"))
    return SmiQuery(tuple(gpus), driver)


_BUS_RE = re.compile(r"\b([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\b")
_GPU_ROW = re.compile(r"^\|\s*(\d+)\s+(.*?)\s+(On|Off|N/A|WDDM|TCC|MCDM)\s*\|(.*)$")
_MEM_RE = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_PROC_ROW = re.compile(
    r"^\|\s+(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(C\+G|M\+C|C|G|M)\s+(.*?)\s+(\d+\s*MiB|N/A)\s*\|\s*$"
)


def parse_smi_banner(text: Optional[str]) -> SmiBanner:
    """Versions, GPU rows and the process table of plain ``nvidia-smi`` output (any era of its layout)."""
    body = text or ""
    smi = _search(r"NVIDIA-SMI\s+(\d+(?:\.\d+)+)", body)
    driver = _search(r"(?:Driver|KMD) Version:\s*(\d+(?:\.\d+)+)", body)
    cuda_raw = _search(r"CUDA (?:UMD )?Version:\s*(\S+?)\s*(?:\||$)", body, re.M)
    cuda = cuda_raw if cuda_raw and re.match(r"^\d+\.\d+$", cuda_raw) else None
    gpus: List[Gpu] = []
    processes: List[GpuProcess] = []
    lines = body.splitlines()
    in_processes = False
    for i, line in enumerate(lines):
        if "Processes:" in line:
            in_processes = True
            continue
        if in_processes:
            m = _PROC_ROW.match(line.strip())
            if m and "C" in m.group(5):
                name = m.group(6).strip()
                processes.append(
                    GpuProcess(
                        pid=int(m.group(4)),
                        name=None if name == "Insufficient Permissions" else name,
                        used_memory_mib=_int(m.group(7).replace(" ", "")),
                        gpu_index=int(m.group(1)),
                    )
                )
            continue
        m = _GPU_ROW.match(line.strip())
        if not m:
            continue
        bus = _BUS_RE.search(m.group(4))
        used = total = None
        if i + 1 < len(lines):
            mem = _MEM_RE.search(lines[i + 1])
            if mem:
                used, total = int(mem.group(1)), int(mem.group(2))
        gpus.append(
            Gpu(
                index=int(m.group(1)),
                name=m.group(2).strip() or None,
                pci_bus_id=bus.group(1) if bus else None,
                memory_total_mib=total,
                memory_used_mib=used,
            )
        )
    return SmiBanner(smi, driver, cuda, cuda_raw, tuple(gpus), tuple(processes))


def parse_smi_apps_csv(text: Optional[str]) -> Tuple[GpuProcess, ...]:
    """Processes from ``--query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits``.

    The process name comes from the workload and may hold commas: pid is read from the left, memory and
    uuid from the right.
    """
    found: List[GpuProcess] = []
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 4 or not cells[0].isdigit():
            continue
        uuid = _clean(cells[-1])
        if uuid is not None and not re.match(r"^(GPU|MIG)-[0-9A-Za-z-]+$", uuid):
            continue
        name = ",".join(cells[1:-2]).strip()
        found.append(GpuProcess(pid=int(cells[0]), name=_clean(name), used_memory_mib=_int(cells[-2]), gpu_uuid=uuid))
    return tuple(found)


def classify_smi_failure(text: Optional[str]) -> Optional[str]:
    """The failure id a known nvidia-smi/NVML error text stands for, or None."""
    for pattern, failure in SMI_FAILURES:
        if text and re.search(pattern, text, re.I):
            return failure
    return None


def parse_nvml_output(json_text: Optional[str]) -> NvmlResult:
    """The child's JSON (see ``cudaenv/_child/nvml_probe.py``); anything else is a failure, never an exception."""
    try:
        data = json.loads((json_text or "").strip().splitlines()[-1] if (json_text or "").strip() else "")
    except (ValueError, IndexError):
        return NvmlResult(False, message="the NVML probe printed no JSON", stage="output")
    if not isinstance(data, dict):
        return NvmlResult(False, message="the NVML probe printed no JSON object", stage="output")
    if not data.get("ok"):
        code = data.get("error_code")
        return NvmlResult(
            False,
            error_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            error_name=_str(data.get("error_name")),
            message=_str(data.get("message")),
            stage=_str(data.get("stage")),
        )
    gpus: List[Gpu] = []
    devices = data.get("devices")
    for dev in devices if isinstance(devices, list) else []:
        if not isinstance(dev, dict) or not isinstance(dev.get("index"), int):
            continue
        migs = dev.get("mig_uuids")
        gpus.append(
            Gpu(
                index=dev["index"],
                name=_str(dev.get("name")),
                uuid=_str(dev.get("uuid")),
                pci_bus_id=_str(dev.get("pci_bus_id")),
                memory_total_mib=_mib(dev.get("memory_total")),
                memory_used_mib=_mib(dev.get("memory_used")),
                compute_capability=_capability(_str(dev.get("compute_capability"))),
                mig_uuids=tuple(u for u in migs if isinstance(u, str)) if isinstance(migs, list) else (),
            )
        )
    errors = data.get("device_errors")
    device_errors = tuple(
        "GPU %s: %s%s" % (e.get("index"), _str(e.get("message")) or "error", " (%s)" % e["error_name"] if _str(e.get("error_name")) else "")
        for e in (errors if isinstance(errors, list) else [])
        if isinstance(e, dict) and isinstance(e.get("index"), int) and not isinstance(e.get("index"), bool)
    )
    cuda = data.get("cuda_driver_version")
    return NvmlResult(
        True,
        driver_version=_str(data.get("driver_version")),
        cuda_version=cuda_version_from_int(cuda if isinstance(cuda, int) else None),
        gpus=tuple(gpus),
        device_errors=device_errors,
    )


def _str(value) -> Optional[str]:
    return value.strip() or None if isinstance(value, str) else None


def _mib(value) -> Optional[int]:
    return value // (1024 * 1024) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _search(pattern: str, text: str, flags: int = 0) -> Optional[str]:
    m = re.search(pattern, text, flags)
    return m.group(1) if m else None


def first_line(text: Optional[str]) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


# ------------------------------------------------------------------------------ probe
def find_nvml_library(host) -> Optional[str]:
    """The NVML library to load: ``CUDAENV_NVML_LIBRARY``, else the first of the driver's library folders (the
    platform probe's, WSL 2's first) that holds it, inside the root."""
    override = host.env.get("CUDAENV_NVML_LIBRARY")
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


def find_nvidia_smi(host) -> Optional[str]:
    """nvidia-smi on the real PATH, else WSL's /usr/lib/wsl/lib/nvidia-smi or a /usr/local/nvidia driver mount's,
    else Windows' usual places."""
    found = host.which("nvidia-smi")
    if found:
        return found
    places = WINDOWS_SMI if host.system == "windows" else (WSL_SMI, MOUNTED_SMI) if host.system == "linux" else ()
    for place in places:
        if host.is_file(place):
            return str(host.path(place))
    return None


def probe_nvidia(host, notes: list, platform=None) -> NvidiaState:
    """Ask every driver source once (NVML and nvidia-smi concurrently), then merge what they said."""
    from cudaenv.collect import Job  # plain threads: concurrent.futures costs more to import than this takes

    smi = find_nvidia_smi(host)
    lib = find_nvml_library(host)
    if smi and smi == str(host.path(MOUNTED_SMI)):
        notes.append(Note("nvidia-smi", "nvidia-smi is at %s (a container's driver mount) but not on PATH: "
                          "export PATH=/usr/local/nvidia/bin:$PATH" % MOUNTED_SMI))
    nvml_job = Job(_run_nvml, host, lib) if lib else None
    query_job = Job(host.run, [smi, "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits"]) if smi else None
    apps_job = Job(host.run, [smi, "--query-compute-apps=" + ",".join(APPS_FIELDS), "--format=csv,noheader,nounits"]) if smi else None
    nvml_run = nvml_job.result() if nvml_job else None
    query_run = query_job.result() if query_job else None
    apps_run = apps_job.result() if apps_job else None

    tools: List[ToolStatus] = []
    nvml = _nvml_status(host, lib, nvml_run, notes, tools)
    smi_state = _SmiState(smi)
    if smi:
        _smi_queries(host, smi, query_run, apps_run, nvml, smi_state, notes)
        tools.append(smi_state.status())
    else:
        tools.append(ToolStatus("nvidia-smi", None, "missing"))

    module = kmod_version = None
    if host.system == "linux":
        module = parse_proc_driver_version(host.read_text("/proc/driver/nvidia/version", limit=SMALL))
        kmod_version = module.version if module else parse_sys_module_version(host.read_text("/sys/module/nvidia/version", limit=SMALL))

    gpus = _merge_gpus(smi_state.gpus, nvml.gpus if nvml and nvml.ok else ())
    processes = _processes(host, smi_state.processes, gpus)
    driver = _driver(host, nvml, smi_state, module, kmod_version, smi, lib, platform)
    return NvidiaState(driver=driver, gpus=gpus, processes=processes, tools=tuple(tools))


def _run_nvml(host, lib: str):
    from importlib.resources import files

    script = files("cudaenv._child").joinpath("nvml_probe.py").read_text(encoding="utf-8")
    return host.run([sys.executable, "-c", script, lib])


def _nvml_status(host, lib, run, notes, tools) -> Optional[NvmlResult]:
    if not lib:
        tools.append(ToolStatus("nvml", None, "missing"))
        return None
    if run.error == "timeout":
        tools.append(ToolStatus("nvml", lib, "timeout", None, None, run.seconds))
        notes.append(Note("nvml", "the NVML probe timed out after %s s (a hung driver or GPU)" % _secs(run.timeout)))
        return None
    result = parse_nvml_output(run.stdout) if run.error is None else NvmlResult(False, message=run.describe(), stage="run")
    if result.ok:
        lost = next((e for e in result.device_errors if "GPU_IS_LOST" in e), None)
        tools.append(ToolStatus("nvml", lib, "ok", "gpu-lost" if lost else None, lost, run.seconds))
        notes.extend(Note("nvml", "NVML could not read " + e) for e in result.device_errors)
        return result
    failure = NVML_FAILURES.get(result.error_code) if result.error_code is not None else classify_smi_failure(result.message)
    message = result.message or "NVML failed"
    tools.append(ToolStatus("nvml", lib, "failed", failure, message, run.seconds))
    detail = " (%s, %s)" % (result.error_name, result.error_code) if result.error_name else ""
    notes.append(Note("nvml", "NVML %s failed: %s%s" % (result.stage or "probe", message, detail)))
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
    state.seconds = max(query_run.seconds, apps_run.seconds)
    if query_run.error == "timeout" or apps_run.error == "timeout":
        state.timed_out = True
        state.message = "nvidia-smi timed out after %s s" % _secs(query_run.timeout)
        notes.append(Note("nvidia-smi", "nvidia-smi timed out after %s s: the driver or a GPU may be hung; "
                          "it was not asked again" % _secs(query_run.timeout)))
        return
    run = query_run
    parsed = parse_smi_query_csv(run.stdout) if run.ok else SmiQuery((), None)
    if not run.ok and re.search(r'Field "compute_cap" is not a valid field', run.output):
        run = host.run([smi, "--query-gpu=" + ",".join(QUERY_FIELDS_OLD), "--format=csv,noheader,nounits"])
        state.seconds += run.seconds
        if run.error == "timeout":
            state.timed_out, state.message = True, run.describe()
            notes.append(Note("nvidia-smi", "%s: the driver or a GPU may be hung; it was not asked again" % run.describe()))
            return
        parsed = parse_smi_query_csv(run.stdout, QUERY_FIELDS_OLD) if run.ok else SmiQuery((), None)
    state.gpus, state.driver = parsed.gpus, parsed.driver_version
    if not parsed.gpus:
        _record_failure(run, state, notes)
    if apps_run.ok:
        state.processes = parse_smi_apps_csv(apps_run.stdout)
    need_banner = not parsed.gpus or not (nvml and nvml.ok and nvml.cuda_version)
    if need_banner and state.failure not in ("driver-not-loaded", "driver-library-mismatch", "no-permission"):
        banner_run = host.run([smi])
        state.seconds += banner_run.seconds
        if banner_run.error == "timeout":
            state.timed_out, state.message = True, banner_run.describe()
            notes.append(Note("nvidia-smi", "%s: the driver or a GPU may be hung; it was not asked again" % banner_run.describe()))
            return
        banner = parse_smi_banner(banner_run.stdout)
        state.cuda = banner.cuda_version
        state.driver = state.driver or banner.driver_version
        if banner.cuda_raw and not banner.cuda_version:
            notes.append(Note("nvidia-smi", "nvidia-smi prints CUDA Version: %s" % banner.cuda_raw))
        if not state.gpus and banner.gpus:
            state.gpus = banner.gpus
        if not apps_run.ok and banner.processes:
            state.processes = banner.processes
        if not state.gpus and not state.failure:
            _record_failure(banner_run, state, notes)


def _record_failure(run, state: _SmiState, notes) -> None:
    text = run.output
    failure = classify_smi_failure(text)
    line = first_line(text) or run.describe()
    if failure is None and run.ok and not text.strip():
        return  # ran fine and listed nothing: no GPU, no failure
    if state.failure is None and state.status_text == "ok":
        state.fail(failure, line)
        notes.append(Note("nvidia-smi", line if failure else "nvidia-smi gave no GPU list: %s" % line))


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
        from cudaenv.snapshot import replace

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
    override = (host.env.get("CUDAENV_DRIVER_VERSION") or "").strip()
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


def _processes(host, found: Sequence[GpuProcess], gpus: Sequence[Gpu]) -> Tuple[GpuProcess, ...]:
    from cudaenv.snapshot import replace

    index_of = {g.uuid: g.index for g in gpus if g.uuid}
    check = host.system == "linux" and host.is_dir("/proc")
    users = parse_passwd(host.read_text("/etc/passwd")) if check and found else {}
    result = []
    for p in found:
        owner = state = None
        if check:
            status = host.read_text("/proc/%d/status" % p.pid, limit=SMALL)
            if status is None and not host.is_dir("/proc/%d" % p.pid):
                state = "gone"
            else:
                fields = parse_proc_status(status)
                state = "zombie" if fields.get("State", "").startswith("Z") else "running"
                uid = fields.get("Uid", "").split()
                owner = users.get(uid[0], uid[0]) if uid else None
        gpu_index = p.gpu_index if p.gpu_index is not None else index_of.get(p.gpu_uuid) if p.gpu_uuid else None
        result.append(replace(p, gpu_index=gpu_index, owner=owner, state=state))
    return tuple(result)


def parse_proc_status(text: Optional[str]) -> Dict[str, str]:
    """``Key:\\tvalue`` lines of ``/proc/PID/status``."""
    out: Dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_passwd(text: Optional[str]) -> Mapping[str, str]:
    """uid -> user name from ``/etc/passwd``."""
    out: Dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].isdigit():
            out.setdefault(parts[2], parts[0])
    return out


def _secs(value: float) -> str:
    return ("%g" % value) if value != int(value) else str(int(value))
