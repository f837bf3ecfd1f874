"""Which torch exists for what: the facts in ``data/torch_*.json``, asked as questions.

* ``torch_variants``: the wheel indexes (``cu126``, ``rocm6.3``, ``xpu``, ``cpu``, ``default`` = plain PyPI)
  published for each torch release, per platform (``linux-x86_64``, ``linux-aarch64``, ``windows-x86_64``,
  ``macos-arm64``, ``macos-x86_64``).  ``variants_for("2.7.1", "linux", "x86_64")`` ->
  ``("cu118", "cu126", "cu128", "rocm6.2.4", "rocm6.3", "xpu", "cpu")``.
* ``torch_arch``: the compute capabilities compiled into a release x variant x platform, and the PTX.
  ``arch_list_for("2.7.1", "cu128", "linux")`` -> ``(("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"), None)``.
* ``torch_companions``: torchvision/torchaudio for each torch release.
* ``torch_python``: CPython versions with wheels for each release series.

Every function takes an optional ``table`` (the loaded JSON) so tests can pass their own.
"""

from __future__ import annotations

import re

from cudaenv.core.tuples import named_tuple
from cudaenv.core import version as _version
from cudaenv.core.version import version_key
from cudaenv.core.version import compare_pep440, pep440, pep440_key, pep440_release

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional, Sequence, Tuple

VARIANTS, ARCH, COMPANIONS, PYTHONS = "torch_variants", "torch_arch", "torch_companions", "torch_python"

_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64", "aarch64": "aarch64", "arm64": "arm64"}


def _table(name: str, table: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if table is not None:
        return table
    from cudaenv.core.resources import load_table

    return load_table(name)


def platform_key(system: Optional[str], machine: Optional[str] = None) -> str:
    """``("linux", "x86_64")`` -> ``"linux-x86_64"``; Windows AMD64 -> ``windows-x86_64``; macOS arm64 -> ``macos-arm64``."""
    system = (system or "linux").lower()
    m = _MACHINES.get((machine or "").lower(), (machine or "").lower() or None)
    if system.startswith("win"):
        return "windows-%s" % ("arm64" if m in ("arm64", "aarch64") else "x86_64")
    if system in ("darwin", "macos", "mac"):
        return "macos-%s" % ("x86_64" if m == "x86_64" else "arm64")
    return "linux-%s" % ("aarch64" if m in ("aarch64", "arm64") else "x86_64")


def public_version(version: Optional[str]) -> Optional[str]:
    """``"2.7.1+cu126"`` -> ``"2.7.1"``; ``"2.7"`` stays ``"2.7"``."""
    if not version:
        return None
    return str(version).split("+", 1)[0].strip() or None


def local_tag(version: Optional[str]) -> Optional[str]:
    """``"2.7.1+cu126"`` -> ``"cu126"``; None without a local part."""
    if not version or "+" not in str(version):
        return None
    return str(version).split("+", 1)[1].strip() or None


def variant_cuda(variant: Optional[str]) -> Optional[str]:
    """``"cu126"`` -> ``"12.6"``, ``"cu118"`` -> ``"11.8"``, ``"cu92"`` -> ``"9.2"``; None for cpu, rocm, xpu."""
    m = re.fullmatch(r"cu(\d+)", variant or "")
    if not m:
        return None
    digits = m.group(1)
    return "%s.%s" % (digits[:-1], digits[-1]) if len(digits) >= 2 else None


def variant_kind(variant: Optional[str]) -> str:
    """``cuda`` | ``rocm`` | ``xpu`` | ``cpu`` | ``default`` | ``other``."""
    v = variant or ""
    if variant_cuda(v):
        return "cuda"
    if v.startswith("rocm"):
        return "rocm"
    if v in ("xpu", "cpu", "default"):
        return v
    return "other"


def variant_sort_key(variant: str) -> Tuple[int, Tuple[int, ...]]:
    """Orders variants oldest to newest within a kind (``cu118`` < ``cu126`` < ``cu130``)."""
    kind = variant_kind(variant)
    if kind == "cuda":
        return (0, version_key(variant_cuda(variant)))
    if kind == "rocm":
        return (1, version_key(variant[4:]))
    return ({"xpu": 2, "cpu": 3, "default": 4}.get(kind, 5), ())


def _rows(name: str, table: Optional[Dict[str, Any]], unreleased: bool = False) -> List[Dict[str, Any]]:
    data = _table(name, table)
    rows = list(data.get("rows", []))
    if unreleased:
        rows += list(data.get("unreleased", []))
    return rows


def _release_row(torch_version: str, key: str, table: Optional[Dict[str, Any]], unreleased: bool = True) -> Optional[Dict[str, Any]]:
    version = public_version(torch_version)
    for row in _rows(VARIANTS, table, unreleased):
        if row["platform"] == key and version in row["releases"]:
            return row
    return None


def known_torch_versions(table: Optional[Dict[str, Any]] = None, include_unreleased: bool = False) -> Tuple[str, ...]:
    """Every torch release the bundled table knows, oldest first."""
    seen = set()
    for row in _rows(VARIANTS, table, include_unreleased):
        seen.update(row["releases"])
    return tuple(sorted(seen, key=pep440_key))


def is_released(torch_version: str, table: Optional[Dict[str, Any]] = None) -> bool:
    return public_version(torch_version) in known_torch_versions(table)


def latest_torch(table: Optional[Dict[str, Any]] = None) -> str:
    """The newest released torch in the bundled table."""
    return known_torch_versions(table)[-1]


def resolve_torch_version(spec: str, known: Tuple[str, ...]) -> Optional[str]:
    """``"2.7"`` -> the newest 2.7.x in ``known``; ``"2.7.1"`` -> itself when known; None when unknown."""
    spec = public_version(spec) or ""
    if spec in known:
        return spec
    parsed = pep440(spec)
    if parsed is not None and str(parsed) == parsed.base_version and len(parsed.release) == 2:  # a series: "2.7"
        same = [v for v in known if _release(v)[:2] == parsed.release]
        return same[-1] if same else None
    return None


def _release(version: Optional[str]) -> Tuple[int, ...]:
    """The release numbers of a torch version by PEP 440 (``2.8.0rc1`` -> (2, 8, 0)); () when it is not one."""
    parsed = pep440(version)
    return parsed.release if parsed is not None else ()


def variants_for(
    torch_version: str, system: Optional[str] = "linux", machine: Optional[str] = None, table: Optional[Dict[str, Any]] = None
) -> Tuple[str, ...]:
    """The variants published for this torch release on this platform, oldest CUDA first; () when unknown."""
    row = _release_row(torch_version, platform_key(system, machine), table)
    return tuple(row["variants"]) if row else ()


def last_torch_for_variant(
    variant: str, system: Optional[str] = "linux", machine: Optional[str] = None, table: Optional[Dict[str, Any]] = None
) -> Tuple[Optional[str], Optional[str]]:
    """(first, last) torch release published for ``variant`` on this platform: cu121 -> ("2.1.0", "2.5.1")."""
    key = platform_key(system, machine)
    versions = sorted(
        (v for row in _rows(VARIANTS, table) if row["platform"] == key and variant in row["variants"] for v in row["releases"]),
        key=pep440_key,
    )
    return (versions[0], versions[-1]) if versions else (None, None)


def arch_list_for(
    torch_version: str,
    variant: str,
    system: Optional[str] = "linux",
    machine: Optional[str] = None,
    table: Optional[Dict[str, Any]] = None,
) -> Optional[Tuple[Tuple[str, ...], Optional[str]]]:
    """(compute capabilities with SASS, the PTX one or None) for the wheel; None when the table has no row."""
    row = arch_row_for(torch_version, variant, system, machine, table)
    if row is None:
        return None
    return tuple(row["archs"]), row.get("ptx")


def arch_row_for(
    torch_version: str,
    variant: str,
    system: Optional[str] = "linux",
    machine: Optional[str] = None,
    table: Optional[Dict[str, Any]] = None,
) -> Optional[Dict[str, Any]]:
    key = platform_key(system, machine)
    version = public_version(torch_version)
    version = pep440_release(version) or version  # 2.8.0rc1 and 2.8.0.dev2025... are built like the 2.8.0 they lead to
    for row in _rows(ARCH, table):
        if row["platform"] != key or row["variant"] != variant:
            continue
        if compare_pep440(row["from"], version) <= 0 <= compare_pep440(row["to"], version):
            return row
    return None


def newest_arch_row(
    variant_kind_filter: str = "cuda",
    system: Optional[str] = "linux",
    machine: Optional[str] = None,
    table: Optional[Dict[str, Any]] = None,
    variant: Optional[str] = None,
) -> Optional[Dict[str, Any]]:
    """The arch row of the newest torch for ``variant`` (or of the newest CUDA variant): a guess for a release the table lacks."""
    key = platform_key(system, machine)
    rows = [r for r in _rows(ARCH, table) if r["platform"] == key and variant_kind(r["variant"]) == variant_kind_filter
            and (variant is None or r["variant"] == variant)]
    if not rows:
        return None
    return max(rows, key=lambda r: (pep440_key(r["to"]), variant_sort_key(r["variant"])))


def companions_for(torch_version: str, table: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Optional[str]]]:
    """``{"torchvision": "0.22.1", "torchaudio": "2.7.1"}`` for torch 2.7.1; None when unknown."""
    version = public_version(torch_version)
    for row in _rows(COMPANIONS, table):
        if row["torch"] == version:
            return {"torchvision": row.get("torchvision"), "torchaudio": row.get("torchaudio")}
    return None


def pythons_for(torch_version: str, table: Optional[Dict[str, Any]] = None, experimental: bool = True,
                system: Optional[str] = None) -> Tuple[str, ...]:
    """CPython major.minor versions with wheels for this release series ("3.13t" for free-threaded); () when unknown.
    ``system`` (``linux``, ``windows``, ``macos``): the table's ``experimental`` Pythons had wheels on Linux only,
    so they count for ``linux`` (and when no system is given), not for the other two."""
    series = ".".join(str(x) for x in _release(public_version(torch_version))[:2])
    experimental = experimental and system in (None, "linux")
    for row in _rows(PYTHONS, table):
        if row["torch"] == series:
            found = list(row["python"]) + (list(row.get("experimental", [])) if experimental else [])
            return tuple(found + list(row.get("free_threaded", [])))
    return ()


def data_date(table: Optional[Dict[str, Any]] = None) -> str:
    """When the bundled variant table was last checked against its sources (``YYYY-MM-DD``)."""
    return str(_table(VARIANTS, table).get("data_date", "1970-01-01"))


def cc_tuple(capability: Optional[str]) -> Tuple[int, ...]:
    """``"8.6"`` -> ``(8, 6)``; ``"sm_86"`` -> ``(8, 6)``; ``"12.0"`` -> ``(12, 0)``; ``()`` when not one (cudaenv.core.version)."""
    return _version.cc_tuple(capability) or ()


def sm_name(capability: str) -> str:
    """``"6.1"`` -> ``"sm_61"``."""
    return _version.sm_name(capability, suffix=False) or "sm_?"


@named_tuple
class KernelMatch:
    """How a GPU runs a build: ``kind`` ``exact`` (a cubin for its very capability), ``binary`` (a cubin of the
    same major and an older minor), ``family`` (a family cubin ``sm_XYf`` of its family) or ``ptx`` (PTX the
    driver JIT-compiles), and the arch-list entry that does it."""

    kind: str
    arch: str

    def describe(self) -> str:
        """``cubin sm_80`` or ``PTX compute_90``."""
        return ("PTX %s" if self.kind == "ptx" else "cubin %s") % self.arch


def _arch_entry(entry) -> Optional[Tuple[str, Tuple[int, int], str]]:
    """``"sm_90a"`` -> ("sm", (9, 0), "a"); ``"compute_100f"`` -> ("compute", (10, 0), "f"); ``"8.6"`` -> ("sm", (8, 6), "")
    (read by cudaenv.core.version.split_arch)."""
    arch = _version.split_arch(entry.strip() if isinstance(entry, str) else entry)
    if arch is None:
        return None
    return arch[0] or "sm", (arch[1], arch[2]), arch[3]


def arch_list_of(archs: Sequence[str], ptx: Optional[str] = None) -> Tuple[str, ...]:
    """A ``data/torch_arch.json`` row as torch's ``get_arch_list()`` names it: ("7.5", "8.0") + PTX "9.0" ->
    ("sm_75", "sm_80", "compute_90")."""
    out = []
    for a in archs:
        parsed = _arch_entry(a)
        if parsed:
            out.append("sm_%d%d%s" % (parsed[1][0], parsed[1][1], parsed[2]))
    parsed = _arch_entry(ptx) if ptx else None
    if parsed:
        out.append("compute_%d%d%s" % (parsed[1][0], parsed[1][1], parsed[2]))
    return tuple(out)


def gpu_runs(arch_list: Sequence[str], capability, ptx_jit_ok: bool = True) -> Optional[KernelMatch]:
    """How a GPU of ``capability`` ("8.6" or (8, 6)) runs a build compiled for ``arch_list`` (torch's
    ``get_arch_list()``: ``sm_80``, ``sm_90a``, ``sm_100f``, ``compute_90``; bare ``"8.6"`` is a cubin), or
    None: "no kernel image is available for execution on the device".

    NVIDIA's rules (CUDA C++ Programming Guide, "Binary Compatibility", "PTX Compatibility" and "Feature
    Availability": https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility and
    #feature-availability; PTX ISA "Target ISA notes": https://docs.nvidia.com/cuda/parallel-thread-execution/):

    * a cubin ``sm_XY`` runs on compute capability X.Z for Z >= Y, same major only;
    * an arch-specific cubin ``sm_XYa`` (and PTX ``compute_XYa``) uses features of X.Y alone: it runs on X.Y
      exactly, neither on a later minor nor on a later major ("not forward or backward compatible");
    * a family-specific cubin ``sm_XYf`` (CUDA 12.9+) runs on the devices of its family: same major, minor >= Y
      (``sm_100f`` on 10.0 and 10.3, not on 11.0 or 12.0);
    * PTX ``compute_XY`` is JIT-compiled by the driver for any capability >= X.Y (``compute_XYf``: within the
      family), when the driver can JIT that PTX (``ptx_jit_ok``: the driver is at least the build's CUDA).

    A cubin wins over PTX, an exact cubin over a compatible one.
    """
    cc = capability if isinstance(capability, tuple) else cc_tuple(capability)
    if len(cc) != 2:
        return None
    best: Optional[KernelMatch] = None
    rank = {"exact": 0, "binary": 1, "family": 1, "ptx": 2}
    for entry in arch_list or ():
        parsed = _arch_entry(entry)
        if parsed is None:
            continue
        kind, arch, suffix = parsed
        if suffix == "a":
            fits = arch == cc
        elif suffix == "f" or kind == "sm":
            fits = arch[0] == cc[0] and arch[1] <= cc[1]
        else:
            fits = arch <= cc
        if not fits:
            continue
        if kind == "compute":
            if not ptx_jit_ok:
                continue
            found = KernelMatch("ptx", str(entry).strip())
        elif arch == cc:
            found = KernelMatch("exact", str(entry).strip())
        else:
            found = KernelMatch("family" if suffix == "f" else "binary", str(entry).strip())
        if best is None or rank[found.kind] < rank[best.kind]:
            best = found
    return best


def last_torch_with_kernels(capabilities: Sequence, platform: str,
                            table: Optional[Dict[str, Any]] = None) -> Optional[Tuple[str, str]]:
    """(torch release, variant) of the newest build for ``platform`` (``linux-aarch64``) in ``data/torch_arch.json``
    whose kernels every GPU of ``capabilities`` (``"6.1"`` or ``(6, 1)``) runs (:func:`gpu_runs`); None when none.

    The one answer to "the last torch with kernels for this GPU" (``cudaenv explain`` names it for a capability
    warning, ``torch recommend`` offers it when no build fits): the newest release first, and among that release's
    builds the newest CUDA: the order of the table's rows must not decide, and the newest CUDA is the build with a
    future (PyTorch announced 2.14 as the last release with any CUDA 12.x wheel, on dev-discuss, 2026-09-04, quoted in
    https://github.com/Comfy-Org/ComfyUI/pull/16438). sm_80 on linux-x86_64 -> ("2.14.1", "cu132"); sm_61 ->
    ("2.14.1", "cu126"), the only build with its kernels; on linux-aarch64 the aarch64 builds' own lists decide."""
    ccs = [c if isinstance(c, tuple) else cc_tuple(c) for c in capabilities]
    if not ccs or any(len(c) != 2 for c in ccs):
        return None
    best: Optional[Tuple[Any, Tuple[str, str]]] = None
    for row in _rows(ARCH, table):
        if row.get("platform") != platform or variant_kind(row["variant"]) != "cuda":
            continue
        archs = arch_list_of(row["archs"], row.get("ptx"))
        if not all(gpu_runs(archs, cc) is not None for cc in ccs):
            continue
        key = (pep440_key(row["to"]), variant_sort_key(row["variant"]))
        if best is None or key > best[0]:
            best = (key, (row["to"], row["variant"]))
    return best[1] if best else None


def sources(name: str, table: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    return dict(_table(name, table)["sources"])
