"""``nvidia-smi`` outputs -> values, captured or pasted (``> `` quoted, indented, cut mid-table).

* :func:`parse_banner`      plain ``nvidia-smi``: the versions line of every era (``Driver Version:`` /
  ``CUDA Version:``; the ``KMD Version:`` / ``CUDA UMD Version:`` of R610 drivers; WSL 2, where ``NVIDIA-SMI``
  is the Linux side and ``Driver Version`` the Windows one; ``N/A`` and ``ERR!``), the GPU rows and the
  process table::

      | NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |
      |   0  NVIDIA B200                    On  |   00000000:63:00.0 Off |                    0 |
      | N/A   26C    P0            139W / 1000W |       0MiB / 183359MiB |      0%      Default |
      |    0   N/A  N/A      1752    C+G   Insufficient Permissions        N/A      |

* :func:`parse_query_csv`   ``--query-gpu=index,name,... --format=csv,noheader,nounits`` (a header line,
  when there is one, names the fields): ``0, NVIDIA B200, 610.43.02, 10.0, 183359, 0, GPU-..., 00000000:63:00.0``
* :func:`parse_apps_csv`    ``--query-compute-apps=pid,process_name,used_memory,gpu_uuid``: ``12345, python, 4096, GPU-...``
* :func:`parse_query_log`   ``nvidia-smi -q`` / ``-a`` (the "NVSMI LOG": ``Driver Version : 450.66``, a
  ``GPU 00000000:01:00.0`` block per GPU with ``Product Name``, ``GPU UUID``, ``FB Memory Usage``); indentation
  is not needed, so a paste that lost it reads the same
* :func:`parse_list`        ``nvidia-smi -L``: ``GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)`` and its MIG lines
* :func:`classify_failure`  a known failure text -> its failure id, from the rows of ``data/error_patterns.json``
  that carry a ``tool_failure`` (the table ``cudaenv explain`` reads too)

Every function is pure, never raises, and is linear in its input (see :mod:`cudaenv.parse._lines`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cudaenv.core.tuples import named_tuple
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor without nvidia-smi reads none of these
from cudaenv.parse._lines import is_uint, lines
from cudaenv.model.snapshot import Gpu, GpuProcess
from cudaenv.core.version import cc_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Dict, Iterable, List, Optional, Sequence, Tuple
    from cudaenv.parse._lines import Text

QUERY_FIELDS = ("index", "name", "driver_version", "compute_cap", "memory.total", "memory.used", "uuid", "pci.bus_id")
QUERY_FIELDS_OLD = tuple(f for f in QUERY_FIELDS if f != "compute_cap")  # 470 and older: no compute_cap
APPS_FIELDS = ("pid", "process_name", "used_memory", "gpu_uuid")

# What nvidia-smi prints where a value is unknown or unreadable.
_NA = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "unknown error", "err!", "[err!]", "[gpu is lost]"}
_MODES = ("On", "Off", "N/A", "WDDM", "TCC", "MCDM")  # the Persistence-M / TCC/WDDM column closing a GPU row
_PROCESS_TYPES = ("C", "G", "C+G", "M", "M+C")
_KNOWN_FIELDS = set(QUERY_FIELDS) | {"gpu_uuid", "gpu_name", "gpu_bus_id", "compute_mode", "pstate", "count", "timestamp"}
# A literal one of which each reader's answer needs (cudaenv.pasted.may_hold looks for them before a paste is read):
BANNER_MARKERS = ("NVIDIA-SMI", "Version:")  # parse_banner: its version line, the driver's or CUDA's (or a GPU row:
# "|" and one of _MODES)
QUERY_LOG_MARKERS = ("GPU", "Driver Version")  # parse_query_log: a GPU block ("GPU 00000000:01:00.0"), the driver
LIST_MARKER = "(UUID:"  # parse_list



@named_tuple
class SmiQuery:
    gpus: Tuple[Gpu, ...]
    driver_version: Optional[str]


@named_tuple
class SmiBanner:
    smi_version: Optional[str]  # the NVIDIA-SMI (Linux-side on WSL2) version
    driver_version: Optional[str]  # Driver Version / KMD Version
    cuda_version: Optional[str]  # None for N/A, ERR! or absent
    cuda_raw: Optional[str]  # the text as printed: "12.4", "N/A", "ERR!"
    gpus: Tuple[Gpu, ...]
    processes: Tuple[GpuProcess, ...]
    driver_model: Optional[str] = None  # "WDDM" / "TCC" / "MCDM" when a GPU row shows one (Windows, not WSL 2)


# Bounded quantifiers only: no pattern here can backtrack over a long run of digits or blanks.
_VERSION = r"(\d{1,4}(?:\.\d{1,4}){1,3})"
_SMI_RE = LazyPattern(r"NVIDIA-SMI\s{1,40}" + _VERSION)
_DRIVER_RE = LazyPattern(r"(?:Driver|KMD) Version:\s{0,40}" + _VERSION)
_CUDA_RE = LazyPattern(r"CUDA (?:UMD )?Version:\s{0,40}([^\s|]{1,16})")
_BUS_RE = LazyPattern(r"(?<![0-9A-Fa-f:])([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])(?![0-9A-Za-z])")
_MEM_RE = LazyPattern(r"(\d{1,9}) {0,3}Mi?B {0,20}/ {0,20}(\d{1,9}) {0,3}Mi?B")  # MB: the tables before R340 or so
_UUID_RE = LazyPattern(r"^(?:GPU|MIG)-[0-9A-Za-z/-]{1,120}$")  # R450 MIG names: MIG-GPU-<uuid>/<gi>/<ci>
_CAP_RE = LazyPattern(r"^\d{1,2}\.\d{1,2}$")
_CUDA_VALUE_RE = LazyPattern(r"^\d{1,3}\.\d{1,3}$")


def clean(value: Optional[str]) -> Optional[str]:
    """A cell's value, or None for what nvidia-smi prints when it has none (``N/A``, ``[Not Supported]``, ``ERR!``)."""
    if value is None:
        return None
    v = value.strip()
    return None if v.lower() in _NA else v


def name(value: Optional[str], limit: int = 200) -> Optional[str]:
    """A GPU or process name: cleaned, and cut to ``limit`` characters (names go into notes and reports)."""
    v = clean(value)
    return v[:limit] if v else None


def mib(value: Optional[str]) -> Optional[int]:
    """``"4096"``, ``"4096 MiB"``, ``"4096MiB"`` -> 4096; None for N/A or anything else."""
    v = clean(value)
    if v is None:
        return None
    for unit in ("MiB", "MB"):
        if v.endswith(unit):
            v = v[: -len(unit)].rstrip()
            break
    number = v.split(".", 1)[0] if v.count(".") == 1 and is_uint(v.split(".", 1)[1] or "0") else v
    return int(number) if is_uint(number, 12) else None


def capability(value: Optional[str]) -> Optional[str]:
    """``"8.6"`` as nvidia-smi prints it (read by cudaenv.core.version); None for N/A or anything else."""
    v = clean(value)
    return cc_text(v) if v and _CAP_RE.match(v) else None


def uuid(value: Optional[str]) -> Optional[str]:
    v = clean(value)
    return v if v and _UUID_RE.match(v) else None


def _first(pattern: "re.Pattern[str]", rows: Iterable[str]) -> Optional[str]:
    for row in rows:
        m = pattern.search(row)
        if m:
            return m.group(1)
    return None


# ---------------------------------------------------------------------------------------------- banner
def parse_banner(text: Text) -> SmiBanner:
    """Versions, GPU rows and the process table of plain ``nvidia-smi`` output (any era of its layout)."""
    rows = lines(text)
    smi = _first(_SMI_RE, rows)
    driver = _first(_DRIVER_RE, rows)
    cuda_raw = _first(_CUDA_RE, rows)
    cuda = cuda_raw if cuda_raw and _CUDA_VALUE_RE.match(cuda_raw) else None
    gpus: List[Gpu] = []
    processes: List[GpuProcess] = []
    model: Optional[str] = None
    in_processes = False
    for i, row in enumerate(rows):
        if "Processes:" in row:
            in_processes = True
            continue
        if not row.startswith("|"):
            continue
        cells = row.split("|")
        if in_processes:
            p = _process_row(cells[1])
            if p is not None:
                processes.append(p)
            continue
        gpu = _gpu_row(cells, rows[i + 1] if i + 1 < len(rows) else "")
        if gpu is not None:
            gpus.append(gpu)
            mode = cells[1].split()[-1]
            model = model or (mode if mode in ("WDDM", "TCC", "MCDM") else None)
    return SmiBanner(smi, driver, cuda, cuda_raw, tuple(gpus), tuple(processes), model)


def _gpu_row(cells: Sequence[str], next_row: str) -> Optional[Gpu]:
    """``|   0  NVIDIA B200   On  |   00000000:63:00.0 Off |   0 |`` and the memory on the row below it."""
    if len(cells) < 3:
        return None
    first = cells[1].strip()
    tokens = first.split()
    if len(tokens) < 3 or not is_uint(tokens[0], 3) or tokens[-1] not in _MODES:
        return None
    label = first[len(tokens[0]):].strip()
    label = label[: len(label) - len(tokens[-1])].strip()
    bus = _BUS_RE.search(cells[2])
    used = total = None
    mem = _MEM_RE.search(next_row)
    if mem:
        used, total = int(mem.group(1)), int(mem.group(2))
    return Gpu(
        index=int(tokens[0]),
        name=name(label),
        pci_bus_id=bus.group(1) if bus else None,
        memory_total_mib=total,
        memory_used_mib=used,
    )


def _process_row(cell: str) -> Optional[GpuProcess]:
    """A compute process row, with or without the GI/CI columns (before 450 there were none)."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", cell)]
    tokens = [cell[a:b] for a, b in spans]
    if len(tokens) < 4 or not is_uint(tokens[0], 3):
        return None
    for at in (1, 3):  # PID right after GPU (old layout), or after GI and CI
        if len(tokens) > at + 2 and is_uint(tokens[at], 10) and tokens[at + 1] in _PROCESS_TYPES:
            break
    else:
        return None
    kind = tokens[at + 1]
    last = len(tokens) - 1
    if tokens[last] == "MiB" and last > at + 2 and is_uint(tokens[last - 1], 9):
        memory, name_end = tokens[last - 1], spans[last - 1][0]
    elif tokens[last] == "N/A" or (tokens[last].endswith("MiB") and is_uint(tokens[last][:-3], 9)):
        memory, name_end = tokens[last], spans[last][0]
    else:
        return None  # a row cut before its memory column
    if last <= at + 1 or "C" not in kind:
        return None  # graphics-only rows hold no CUDA memory
    label = cell[spans[at + 1][1]: name_end].strip()
    return GpuProcess(
        pid=int(tokens[at]),
        name=None if label == "Insufficient Permissions" else name(label),
        used_memory_mib=mib(memory),
        gpu_index=int(tokens[0]),
    )


# ------------------------------------------------------------------------------------------------- CSV
def _header_fields(row: str) -> Optional[Tuple[str, ...]]:
    names = []
    for cell in row.split(","):
        field = cell.strip()
        if field.endswith("]") and "[" in field:  # "memory.total [MiB]"
            field = field[: field.rfind("[")].rstrip()
        names.append(field)
    plain = all(n and re.match(r"^[a-z_][a-z0-9_.]{0,63}$", n) for n in names)
    return tuple(names) if names and plain and any(n in _KNOWN_FIELDS for n in names) else None


def is_query_header(row: str) -> bool:
    """True for the header line ``--format=csv`` prints (``index, name, memory.total [MiB]``): where a paste's
    query output starts."""
    if not isinstance(row, str) or len(row) > 2000:
        return False
    first = row.lstrip()[:1]
    if not ("a" <= first <= "z" or first == "_"):
        return False  # the first field's first letter (a log line's date or a prompt): no header, nothing split
    names = _header_fields(row)
    # nvidia-smi's own field names: the known ones, or dotted ones (utilization.gpu, power.draw); "name, value" is not
    return names is not None and all(n in _KNOWN_FIELDS or "." in n for n in names)


def parse_query_csv(text: Text, fields: Sequence[str] = QUERY_FIELDS) -> SmiQuery:
    """GPUs from ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits`` (a header line, if any, names the fields)."""
    gpus: List[Gpu] = []
    driver: Optional[str] = None
    rows = [row for row in lines(text) if row]
    if rows:
        header = _header_fields(rows[0])
        if header:
            fields, rows = header, rows[1:]
    fields = tuple(fields)
    for position, row in enumerate(rows):
        cells = [c.strip() for c in row.split(",")]
        if len(cells) != len(fields):
            continue
        rec = dict(zip(fields, cells))
        index = mib(rec.get("index")) if "index" in rec else position
        if index is None:
            continue
        raw_uuid = clean(rec.get("uuid") or rec.get("gpu_uuid"))
        if raw_uuid is not None and uuid(raw_uuid) is None:
            continue  # a row of another layout: nothing is made up
        gpus.append(
            Gpu(
                index=index,
                name=name(rec.get("name") or rec.get("gpu_name")),
                uuid=raw_uuid,
                pci_bus_id=clean(rec.get("pci.bus_id") or rec.get("gpu_bus_id")),
                memory_total_mib=mib(rec.get("memory.total")),
                memory_used_mib=mib(rec.get("memory.used")),
                compute_capability=capability(rec.get("compute_cap")),
            )
        )
        driver = driver or clean(rec.get("driver_version"))
    return SmiQuery(tuple(gpus), driver)


def parse_apps_csv(text: Text) -> Tuple[GpuProcess, ...]:
    """Processes from ``--query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits``.

    The process name comes from the workload and may hold commas: pid is read from the left, memory and
    uuid from the right.
    """
    found: List[GpuProcess] = []
    for row in lines(text):
        cells = [c.strip() for c in row.split(",")]
        if len(cells) < 4 or not is_uint(cells[0], 10):
            continue
        raw_uuid = clean(cells[-1])
        if raw_uuid is not None and uuid(raw_uuid) is None:
            continue
        found.append(GpuProcess(pid=int(cells[0]), name=name(",".join(cells[1:-2])), used_memory_mib=mib(cells[-2]), gpu_uuid=raw_uuid))
    return tuple(found)


# ------------------------------------------------------------------------------------------- -q / -a
@named_tuple
class SmiLog:
    driver_version: Optional[str]
    cuda_version: Optional[str]  # None for "Not Found", N/A or absent (drivers before 410 print no CUDA line)
    cuda_raw: Optional[str]
    gpus: Tuple[Gpu, ...]


_GPU_BLOCK = LazyPattern(r"^GPU\s{1,8}([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$")


def parse_query_log(text: Text) -> SmiLog:
    """Driver, CUDA and each GPU (bus id, name, UUID, framebuffer memory) from ``nvidia-smi -q`` output.

    GPUs are numbered in the order they are printed (nvidia-smi's order). A line without ``:`` opens a section
    (``FB Memory Usage``, ``BAR1 Memory Usage``, ``PCI``): ``Total`` and ``Used`` count only under the first.
    """
    driver = cuda_raw = None
    gpus: List[Dict[str, object]] = []
    section = ""
    for row in lines(text):
        block = _GPU_BLOCK.match(row)
        if block:
            gpus.append({"bus": block.group(1)})
            section = ""
            continue
        key, sep, value = row.partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            section = row.strip().lower()
            continue
        if not gpus:
            if key == "Driver Version" and driver is None:
                driver = value if re.match(r"^" + _VERSION + r"$", value) else None
            elif key == "CUDA Version" and cuda_raw is None:
                cuda_raw = value[:16] or None
            continue
        gpu = gpus[-1]
        if key == "Product Name":
            gpu.setdefault("name", name(value))
        elif key == "GPU UUID":
            gpu.setdefault("uuid", uuid(value))
        elif section == "fb memory usage" and key in ("Total", "Used"):
            gpu.setdefault(key, mib(value))
    cuda = cuda_raw if cuda_raw and _CUDA_VALUE_RE.match(cuda_raw) else None
    found = tuple(
        Gpu(index=i, name=g.get("name"), uuid=g.get("uuid"), pci_bus_id=g["bus"],  # type: ignore[arg-type]
            memory_total_mib=g.get("Total"), memory_used_mib=g.get("Used"))  # type: ignore[arg-type]
        for i, g in enumerate(gpus)
    )
    return SmiLog(driver, cuda, cuda_raw, found)


# ------------------------------------------------------------------------------------------------- -L
def parse_list(text: Text) -> Tuple[Gpu, ...]:
    """GPUs from ``nvidia-smi -L``: ``GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)``, MIG devices below their GPU::

        GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f)
          MIG 1g.5gb      Device  0: (UUID: MIG-a4d5f9d0-...)
    """
    gpus: List[Gpu] = []
    migs: Dict[int, List[str]] = {}
    for row in lines(text):
        head, sep, tail = row.partition("(UUID:")
        if not sep:
            continue
        value = uuid(tail.split(")", 1)[0])
        if value is None:
            continue
        if row.startswith("GPU ") and value.startswith("GPU-"):
            number, colon, label = head[4:].partition(":")
            if colon and is_uint(number.strip(), 3):
                gpus.append(Gpu(index=int(number.strip()), name=name(label), uuid=value))
                migs[len(gpus) - 1] = []
        elif row.startswith("MIG ") and value.startswith("MIG-") and gpus:
            migs[len(gpus) - 1].append(value)
    from cudaenv.model.record import replace

    return tuple(replace(g, mig_uuids=tuple(migs.get(i, ()))) if migs.get(i) else g for i, g in enumerate(gpus))


# -------------------------------------------------------------------------------------------- failures
@named_tuple
class FailurePattern:
    failure: str  # the ToolStatus.failure id: driver-not-loaded, no-permission, ...
    finding: str  # the doctor's (and explain's) id: driver-not-loaded, driver-no-permission, ...
    patterns: Tuple["re.Pattern[str]", ...]
    nvml_codes: Tuple[int, ...]  # NVML return codes that mean the same (NVML_ERROR_NO_PERMISSION = 4, ...)


def failure_patterns(rows: Iterable[Mapping]) -> Tuple[FailurePattern, ...]:
    """The rows of ``data/error_patterns.json`` that name a ``tool_failure``, in table order, compiled."""
    out: List[FailurePattern] = []
    for row in rows:
        failure = row.get("tool_failure") if isinstance(row, Mapping) else None
        if not isinstance(failure, str):
            continue
        compiled = []
        for p in row.get("patterns", ()):
            try:
                compiled.append(re.compile(p, re.IGNORECASE))
            except (re.error, TypeError):
                continue
        codes = tuple(c for c in row.get("nvml_codes", ()) if isinstance(c, int) and not isinstance(c, bool))
        out.append(FailurePattern(failure, str(row.get("id")), tuple(compiled), codes))
    return tuple(out)


def classify_failure(text: Text, patterns: Sequence[FailurePattern]) -> Optional[str]:
    """The failure id a known nvidia-smi/NVML error text stands for (the first row that matches), or None."""
    rows = lines(text, limit=200)
    for row in patterns:
        if any(p.search(line) for p in row.patterns for line in rows):
            return row.failure
    return None


def failure_for_nvml_code(code: Optional[int], patterns: Sequence[FailurePattern]) -> Optional[str]:
    """The failure id of an NVML return code (9: driver-not-loaded, 18: driver-library-mismatch, ...), or None."""
    for row in patterns:
        if code is not None and code in row.nvml_codes:
            return row.failure
    return None
