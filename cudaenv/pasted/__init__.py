"""Facts from tool outputs pasted into ``cudaenv explain``, and the doctor's own findings on them.

People paste ``nvidia-smi``, ``collect_env``, ``nvcc --version`` and the like beside an error, so a helper can
diagnose someone else's machine. :func:`read_facts` runs the probes' pure parsers (:mod:`cudaenv.parse`) over the
text and merges what they recognised into one :class:`PastedFacts`; :func:`paste_findings` builds the partial
:class:`~cudaenv.model.snapshot.Snapshot` those facts describe (:func:`snapshot_of`) and runs the doctor's rules
(:func:`cudaenv.diagnose.diagnose`) on it, keeping the findings a paste can support (the ``pasteable`` rows of ``data/findings.json``: a rule
about something the paste does not show would judge an absence, not the machine). Pure: text in, records out.

Recognised (``sources``): ``nvidia-smi`` (the table of every era), ``nvidia-smi -q``, ``nvidia-smi -L``,
``nvidia-smi --query-gpu`` (pasted with its header line),
``nvcc --version``, ``collect_env``, ``/proc/driver/nvidia/version``, ``deviceQuery``, the kernel log's ``NVRM:``
lines (the kernel module's version; ``NVRM: Xid`` and "fallen off the bus" lines, grouped by code), and a torch
version a person printed (``print(torch.__version__)``, a template's ``PyTorch Version (e.g., 1.0): 1.7.1``, pip's
list).
Machine context for an error (this machine, not the paste's) is :mod:`cudaenv.pasted.context`.
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from cudaenv.model.record import Record
from cudaenv.model.snapshot import GpuCondition, PciDevice, XidGroup
from cudaenv.parse._lines import as_text, lines
from cudaenv.core.version import compare_versions, major_minor

PLATFORMS = ("linux", "windows", "wsl2", "macos")
PASTED_TOOLKIT = "the pasted nvcc"  # the toolkit path the snapshot names: a paste shows nvcc's version, not where it is


class PastedGpu(Record):
    index: int
    name: Optional[str] = None
    bus_id: Optional[str] = None
    uuid: Optional[str] = None
    memory_total_mib: Optional[int] = None
    memory_used_mib: Optional[int] = None
    compute_capability: Optional[str] = None  # deviceQuery's "8.6" (nvidia-smi's table does not show it)


class PastedFacts(Record):
    """``facts`` in ``cudaenv explain --json``: what the pasted tool outputs say (absent is None)."""

    driver_version: Optional[str] = None  # the userspace driver (on WSL 2 the Windows one), else the kernel module's
    cuda_version: Optional[str] = None  # the newest CUDA the driver supports ("CUDA Version: 12.4")
    gpus: Tuple[PastedGpu, ...] = ()
    toolkit_version: Optional[str] = None  # nvcc's full version: "12.4.131"
    torch_version: Optional[str] = None  # "1.13.1+cu117"
    torch_cuda: Optional[str] = None  # torch.version.cuda: "11.7"
    cuda_available: Optional[bool] = None
    cudnn_version: Optional[str] = None
    rocm_version: Optional[str] = None  # "ROCM used to build PyTorch" (an AMD build: torch.cuda runs on HIP)
    platform: Optional[str] = None  # linux | windows | wsl2 | macos
    machine: Optional[str] = None  # x86_64 | aarch64 | arm64 (collect_env's OS line)
    kernel_module: Optional[str] = None  # open | proprietary (/proc/driver/nvidia/version)
    kernel_module_version: Optional[str] = None  # the kernel module loaded (/proc/driver/nvidia/version, the kernel log)
    xids: Tuple[XidGroup, ...] = ()  # the kernel log's (dmesg, journalctl -k) NVRM Xid lines, by code
    fallen_off_bus: Tuple[str, ...] = ()  # PCI addresses the kernel log says fell off the bus
    gpu_conditions: Tuple[GpuCondition, ...] = ()  # nvidia-smi -q's ECC, retired pages, remapped rows, slowdowns
    pci_devices: Tuple[PciDevice, ...] = ()  # lspci's NVIDIA GPUs: revision (rev ff) and PCIe link
    sources: Tuple[str, ...] = ()  # the tool outputs recognised, in the order above


def _nvcc(text: str) -> Optional[str]:
    """nvcc's version from its ``Cuda compilation tools, release 12.4, V12.4.131`` line (only that line: "release
    22.04" elsewhere in a paste is not a toolkit)."""
    from cudaenv.parse.nvcc import find_nvcc_version

    return find_nvcc_version(text)


def _query_csv(text: str, tries: int = 8):
    """``nvidia-smi --query-gpu=... --format=csv`` pasted with its header line (the header names the fields; the
    parser reads from there, at most 64 rows). Without a header a paste's CSV is not read as GPUs."""
    from cudaenv.parse.nvidia_smi import is_query_header, parse_query_csv

    rows = lines(text)
    for i, row in enumerate(rows):
        if tries <= 0:
            break
        if not is_query_header(row):
            continue
        tries -= 1
        found = parse_query_csv("\n".join(_csv_block(rows, i)), fields=())
        if found.gpus and any(g.name or g.uuid or g.compute_capability for g in found.gpus):
            return found
    return None


def _csv_block(rows: Sequence[str], header: int) -> List[str]:
    """The header line and the rows of its CSV block: up to 64 (blank lines skipped), ending at the first line with
    another number of cells (what a paste puts after the block, ``nvcc --list-gpu-code``'s ``sm_50`` lines or a
    prompt, is not more GPUs)."""
    width = rows[header].count(",")
    block = [rows[header]]
    for row in rows[header + 1: header + 66]:
        if not row.strip():
            continue
        if row.count(",") != width:
            break
        block.append(row)
    return block


def _merge_gpus(lists: Sequence[Sequence[Any]]) -> Tuple[PastedGpu, ...]:
    """One GPU list: the longest source's, each GPU's missing fields filled from the others at the same index."""
    lists = [lst for lst in lists if lst]
    if not lists:
        return ()
    base = max(lists, key=len)  # max keeps the first of equal length: the sources are in priority order
    out = []
    for g in base[:64]:
        fields = {"index": g.index, "name": g.name, "bus_id": g.pci_bus_id, "uuid": g.uuid,
                  "memory_total_mib": g.memory_total_mib, "memory_used_mib": g.memory_used_mib,
                  "compute_capability": g.compute_capability}
        for other in lists:
            o = next((x for x in other if x.index == g.index), None)
            if o is None:
                continue
            for key, value in (("name", o.name), ("bus_id", o.pci_bus_id), ("uuid", o.uuid),
                               ("memory_total_mib", o.memory_total_mib), ("memory_used_mib", o.memory_used_mib),
                               ("compute_capability", o.compute_capability)):
                if fields[key] is None and value is not None:
                    fields[key] = value
        out.append(PastedGpu(**fields))
    return tuple(out)


TOOL_OUTPUTS = ("nvidia-smi", "nvidia-smi -q", "conditions", "nvidia-smi -L", "nvidia-smi --query-gpu", "nvcc --version",
           "collect_env", "/proc/driver/nvidia/version", "deviceQuery", "lspci", "kernel log", "torch version")
# collect_env's answer needs one of these keys (parse.collect_env._KEYS of its answer's fields: tests/pasted check it)
_COLLECT_ENV_KEYS = ("pytorch version", "cuda used to build pytorch", "is cuda available", "cuda runtime version",
                     "gpu models and configuration", "cudnn version")
_SMI_SECTIONS = ("Persistence Mode", "ECC Mode", "ECC Errors", "Retired Pages", "Remapped Rows",
                 "Clocks Throttle Reasons", "Clocks Event Reasons")  # the -q sections a GpuCondition reads


def may_hold(body: str) -> frozenset:
    """The tool outputs (:data:`TOOL_OUTPUTS`; ``conditions``: nvidia-smi -q's health sections) ``body`` can hold: each
    parser's answer needs a literal this looks for first (one pass of ``in`` over the text each), so a log that holds
    none of them is handed to no parser (issue 35: every line of a 10 MB log was parsed a dozen times). The literals
    are the parsers' own (``parse.nvidia_smi``, ``parse.collect_env``, ...); tests/pasted check that the answers are
    the same with every parser run."""
    import re

    from cudaenv.parse import nvidia_smi as smi
    from cudaenv.parse.nvcc import LINE_MARKER

    low = body.lower()
    found = set()
    if any(m in body for m in smi.BANNER_MARKERS) or ("|" in body and any(w in body for w in smi._MODES)):
        found.add("nvidia-smi")  # its version line, the driver's or CUDA's, or a GPU row ("| 0 ... On |")
    if any(m in body for m in smi.QUERY_LOG_MARKERS):
        found.add("nvidia-smi -q")  # a GPU block ("GPU 00000000:01:00.0") or the header's driver
    if any(k in body for k in _SMI_SECTIONS):
        found.add("conditions")
    if smi.LIST_MARKER in body:
        found.add("nvidia-smi -L")
    if any(f in body for f in smi._KNOWN_FIELDS):
        found.add("nvidia-smi --query-gpu")  # a CSV header names at least one field nvidia-smi knows
    if LINE_MARKER in body:
        found.add("nvcc --version")
    if any(k in low for k in _COLLECT_ENV_KEYS):
        found.add("collect_env")
    if "NVRM version:" in body:
        found.add("/proc/driver/nvidia/version")
    if ("Device " in body and ': "' in body) or "cudaGetDeviceCount returned" in body or "CUDA Driver Version" in body:
        found.add("deviceQuery")
    if "LnkCap" in body or "LnkSta" in body or ("controller" in low and ("nvidia" in low or "10de" in low)):
        found.add("lspci")
    if "NVRM" in body:
        found.add("kernel log")
    if "orch" in body and re.search(r"torch(?:\.__version__|\.version\.cuda|[\s:=])", low):
        found.add("torch version")  # printed, a template's "PyTorch Version (e.g., 1.0): 1.7.1", pip's list
    return frozenset(found)


def read_facts(text: Any) -> Optional[PastedFacts]:
    """The facts of every tool output in ``text`` (str or bytes), merged; None when it holds none. A parser reads
    the text only when it can hold that tool's output (:func:`may_hold`)."""
    from cudaenv.parse.decorations import undecorate
    from cudaenv.model.snapshot import Gpu

    body = undecorate(as_text(text))  # colours, bold, full-width punctuation: as explain's normalizer takes them away
    may = may_hold(body)
    sources: List[str] = []
    banner = log = csv = nvcc = env = module = query = kernel = printed = None
    conditions: Tuple[Any, ...] = ()
    listed: Tuple[Any, ...] = ()
    pci: Tuple[Any, ...] = ()
    if "nvidia-smi" in may:
        from cudaenv.parse import nvidia_smi as smi

        banner = smi.parse_banner(body)
        if not (banner.smi_version or banner.driver_version or banner.gpus):
            banner = None
    if banner is not None:
        sources.append("nvidia-smi")
    if "nvidia-smi -q" in may:
        from cudaenv.parse import nvidia_smi as smi

        log = smi.parse_query_log(body)
    if "conditions" in may:
        from cudaenv.parse.smi_conditions import parse_smi_conditions

        conditions = parse_smi_conditions(body)
    if (log is not None and (log.gpus or log.driver_version)) or conditions:
        sources.append("nvidia-smi -q")
    if log is not None and not (log.gpus or log.driver_version):
        log = None
    if "nvidia-smi -L" in may:
        from cudaenv.parse import nvidia_smi as smi

        listed = smi.parse_list(body)
    if listed:
        sources.append("nvidia-smi -L")
    csv = _query_csv(body) if "nvidia-smi --query-gpu" in may else None
    if csv:
        sources.append("nvidia-smi --query-gpu")
    nvcc = _nvcc(body) if "nvcc --version" in may else None
    if nvcc:
        sources.append("nvcc --version")
    if "collect_env" in may:
        from cudaenv.parse.collect_env import parse_collect_env

        env = parse_collect_env(body)
    if env is not None:
        sources.append("collect_env")
    if "/proc/driver/nvidia/version" in may:
        from cudaenv.parse._lines import MAX_LINES
        from cudaenv.parse.proc import parse_proc_driver_version

        module = parse_proc_driver_version(body, limit=MAX_LINES)
    if module is not None:
        sources.append("/proc/driver/nvidia/version")
    if "deviceQuery" in may:
        from cudaenv.parse.device_query import parse_device_query

        query = parse_device_query(body)
    if query is not None:
        sources.append("deviceQuery")
    if "lspci" in may:
        from cudaenv.parse.lspci import parse_lspci

        pci = parse_lspci(body)
    if pci:
        sources.append("lspci")
    from cudaenv.parse.kernel_log import has_gpu_faults, parse_xid_log

    faults = parse_xid_log(body if "kernel log" in may else "")  # no NVRM line: no fault, read from nothing
    if "kernel log" in may:
        from cudaenv.parse.printed import parse_kernel_log

        kernel = parse_kernel_log(body)
    if kernel is not None or has_gpu_faults(faults):
        sources.append("kernel log")
    if env is None and "torch version" in may:  # collect_env's own "N/A" is an answer
        from cudaenv.parse.printed import parse_printed_torch

        printed = parse_printed_torch(body)
    if printed is not None:
        sources.append("torch version")
    if not sources:
        return None

    def first(*values: Optional[str]) -> Optional[str]:
        return next((v for v in values if v), None)

    driver = first(banner and banner.driver_version, log and log.driver_version, csv and csv.driver_version,
                   env and env.driver_version, kernel and kernel.client_version,
                   module and module.version, kernel and kernel.module_version)
    cuda = first(banner and banner.cuda_version, log and log.cuda_version, query and query.driver_cuda)
    env_gpus = [Gpu(index=i, name=n) for i, n in env.gpus] if env is not None else []
    gpus = _merge_gpus([log.gpus if log else (), banner.gpus if banner else (), csv.gpus if csv else (), listed,
                        query.gpus if query else (), env_gpus])
    torch_version = first(env and env.torch_version, printed and printed.version)
    torch_cuda = first(env and env.torch_cuda, printed and printed.cuda)
    if torch_version and torch_cuda is None and not (env and env.cpu_build):
        from cudaenv.facts.torch import local_tag, variant_cuda

        torch_cuda = variant_cuda(local_tag(torch_version))
    platform = env.platform if env else None
    if platform is None and banner is not None:
        smi_v, drv_v = banner.smi_version, banner.driver_version
        # Before R340 nvidia-smi's own version led with its major: "NVIDIA-SMI 5.325.15" beside "Driver Version:
        # 325.15" is one driver, not WSL's two.
        old_form = bool(smi_v and drv_v and smi_v.endswith("." + drv_v))
        if smi_v and drv_v and not old_form and compare_versions(drv_v, smi_v) > 0:
            # WSL 2: NVIDIA-SMI is the Linux side, Driver Version the (newer) Windows host's. An older kernel
            # driver under a newer nvidia-smi (a container's tools over the host's 418) is not WSL.
            platform = "wsl2"
        elif banner.driver_model:
            platform = "windows"
    if platform is None and (module is not None or kernel is not None):
        platform = "linux"
    return PastedFacts(
        driver_version=driver,
        cuda_version=cuda,
        gpus=gpus,
        toolkit_version=first(nvcc, env and env.toolkit_version),
        torch_version=torch_version,
        torch_cuda=torch_cuda,
        cuda_available=env.cuda_available if env else None,
        cudnn_version=env.cudnn_version if env else None,
        rocm_version=env.rocm if env else None,
        platform=platform,
        machine=env.machine if env else None,
        kernel_module=module.flavor if module else None,
        kernel_module_version=first(module and module.version, kernel and kernel.module_version),
        xids=faults.xids,
        fallen_off_bus=faults.fallen_off_bus,
        gpu_conditions=conditions,
        pci_devices=pci,
        sources=tuple(sources),
    )


def snapshot_of(facts: PastedFacts):
    """The partial Snapshot the pasted facts describe (what the paste does not show is absent)."""
    from cudaenv.model.snapshot import ActiveToolkit, Driver, Gpu, GpuHealth, Platform, Snapshot, Torch

    f = facts
    system = {"windows": "windows", "macos": "darwin"}.get(f.platform or "", "linux")
    platform = Platform(system=system, machine=f.machine, wsl=2 if f.platform == "wsl2" else None)
    driver = None
    if f.driver_version or f.cuda_version:
        driver = Driver(version=f.driver_version, cuda_version=f.cuda_version, kernel_module=f.kernel_module,
                        source="paste", wsl_windows_side=f.platform == "wsl2")
    gpus = tuple(Gpu(index=g.index, name=g.name, uuid=g.uuid, pci_bus_id=g.bus_id, memory_total_mib=g.memory_total_mib,
                     memory_used_mib=g.memory_used_mib, compute_capability=g.compute_capability) for g in f.gpus)
    torch = None
    if f.torch_version:
        torch = Torch(python=None, installed=True, version=f.torch_version, cuda=major_minor(f.torch_cuda) if f.torch_cuda else None,
                      hip=f.rocm_version, cuda_available=f.cuda_available, dynamic=f.cuda_available is not None,
                      cudnn=f.cudnn_version)
    toolkit = ActiveToolkit(path=PASTED_TOOLKIT, version=f.toolkit_version) if f.toolkit_version else None
    health = GpuHealth(log="paste", xids=f.xids, fallen_off_bus=f.fallen_off_bus) if f.xids or f.fallen_off_bus else None
    return Snapshot(platform=platform, driver=driver, gpus=gpus, torch=torch, active_toolkit=toolkit, health=health,
                    gpu_conditions=f.gpu_conditions, pci_devices=f.pci_devices, root="(paste)")


def paste_findings(facts: Optional[PastedFacts], tables: Optional[Mapping[str, Any]] = None) -> Tuple[Any, ...]:
    """The doctor's findings (:class:`~cudaenv.model.reports.Finding`) on the pasted facts: its own rules, run on
    :func:`snapshot_of`, the pasteable ones (``data/findings.json``) kept."""
    if facts is None:
        return ()
    from cudaenv.diagnose import diagnose

    from cudaenv.facts.findings import ids_where

    pasteable = ids_where("pasteable")
    return tuple(f for f in diagnose(snapshot_of(facts), tables) if f.id in pasteable)


def facts_dict(facts: Optional[PastedFacts]) -> Optional[Dict[str, Any]]:
    """``facts`` as the JSON shows it (None when no tool output was recognised)."""
    return facts.to_dict() if facts is not None else None

