"""The CUDA consumers besides torch in the probed interpreter, read from its site-packages without importing them.

For each package ``data/frameworks.json`` names: its dist-info's METADATA (name, version, ``Requires-Dist``) and
RECORD (the shared libraries it ships), and the build-info file its row names; then the CUDA it was built for, from
the first source that says: a fixed major in the package's name, the build-info file, the local version tag, the
``nvidia-*-cuXX`` wheels it requires (those installed), the ``NEEDED`` entries of its shipped libraries (ELF, read
bounded: :mod:`cudaenv.probes.elf`). The site-packages list is the torch probe's static pass's (what the interpreter itself
reports, user site included): nothing else is run. Every read is a bounded regular-file read through Host.
"""

from __future__ import annotations

from cudaenv.model.snapshot import Framework, Note
from cudaenv.parse import frameworks as pf

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional, Sequence, Tuple

PROBE = "frameworks"
METADATA_LIMIT = 256 * 1024  # the header block is at the top; a long description after it is cut
RECORD_LIMIT = 8 * 1024 * 1024  # TensorFlow's RECORD lists ~20,000 files (about 2 MB)
BUILD_FILE_LIMIT = 64 * 1024
MAX_LIBRARIES = 8  # shipped libraries whose NEEDED entries are read, per package
CUDA_LIB_HINTS = ("cuda", "cudnn", "nccl", "cublas", "_gpu", "gpu_", "flash_attn", "xformers", "cupy", "jax_cuda", "paddle")


def _dist_infos(host, site: str) -> List[Tuple[str, str]]:
    """(normalized name, dist-info folder name) of every ``*.dist-info`` in ``site``."""
    out = []
    for entry in sorted(host.listdir(site)):
        if not entry.endswith(".dist-info") or len(entry) > 255:
            continue
        name = entry[: -len(".dist-info")].split("-", 1)[0]
        if name:
            out.append((pf.normalize_name(name), entry))
    return out


def read_metadata_head(host, path: str, limit: int = METADATA_LIMIT, heads: Optional[Dict[str, str]] = None) -> str:
    """The header block of the METADATA file ``path``, up to its first blank line (all that
    :func:`cudaenv.parse.frameworks.parse_metadata` reads), from at most ``limit`` bytes; undecodable bytes replaced
    (a cut at a newline decodes as the whole text would there); "" when it cannot be read. The description after the
    block is never decoded. ``heads``: the heads read so far in this run, by path: one already there is used, a new
    one is added (the frameworks and the extension check read the same files)."""
    if heads is not None and path in heads:
        return heads[path]
    data = host.read_bytes(path, limit=limit)
    end = data.find(b"\n\n") if data else -1
    head = (data if end < 0 else data[:end]).decode("utf-8", errors="replace") if data else ""
    if heads is not None:
        heads[path] = head
    return head


def installed_distributions(host, site_packages: Sequence[str]) -> Dict[str, Tuple[str, str]]:
    """normalized name -> (site-packages folder, dist-info folder), the first site-packages winning (import order)."""
    found: Dict[str, Tuple[str, str]] = {}
    for site in site_packages:
        for name, entry in _dist_infos(host, site):
            found.setdefault(name, (site, entry))
    return found


def _cuda_libraries(libraries: Sequence[str]) -> Tuple[str, ...]:
    """The shipped libraries worth reading for NEEDED: those whose name hints at CUDA, at most MAX_LIBRARIES."""
    picked = [p for p in libraries if any(h in p.rsplit("/", 1)[-1].lower() for h in CUDA_LIB_HINTS) and not p.endswith((".dll", ".pyd"))]
    return tuple(picked[:MAX_LIBRARIES])


def read_framework(host, name: str, row: Dict[str, Any], where: Tuple[str, str], present: Dict[str, Tuple[str, str]],
                   notes: List[Note], read_needed=None, rows=None, cuda_libs=None, heads: Optional[Dict[str, str]] = None) -> Framework:
    """One package's record from its files (``read_needed(path) -> tuple of NEEDED`` reads a library; None: skip;
    ``heads``: :func:`read_metadata_head`'s)."""
    site, entry = where
    meta = read_metadata_head(host, host.join(site, entry, "METADATA"), METADATA_LIMIT, heads)
    _, version, requires = pf.parse_metadata(meta)
    nvidia = tuple(dict.fromkeys(r for r in (pf.requirement_name(line) for line in requires) if r and r.startswith("nvidia-")))
    record = host.read_text(host.join(site, entry, "RECORD"), limit=RECORD_LIMIT) or ""
    libraries = _cuda_libraries(pf.record_libraries(record))
    cuda = cudnn = cuda_from = None
    gpu: Optional[bool] = False if row.get("cpu_only") else None
    if row.get("cuda_major") is not None:
        cuda, cuda_from = str(row["cuda_major"]), "name"
    if row.get("build_file") and gpu is None:
        keys = tuple(k for k in (row.get("cuda_key"), row.get("cudnn_key"), row.get("gpu_key")) if k)
        text = host.read_text(host.join(site, *row["build_file"].split("/")), limit=BUILD_FILE_LIMIT)
        if text is not None:
            values = pf.parse_build_info(text, keys)
            if row.get("gpu_key") and values.get(row["gpu_key"]) == "False":
                gpu = False
            built = pf.build_cuda(values.get(row.get("cuda_key") or ""))
            if built and cuda is None:
                cuda, cuda_from = built, "build-info"
            cudnn = pf.build_cuda(values.get(row.get("cudnn_key") or ""))
            if cudnn and "." not in cudnn:  # TensorFlow's build_info.py names only the major: its release's row, if any
                cudnn = build_cudnn(name, version, built, cudnn) or cudnn
            if row.get("cuda_key") and not built and gpu is None and not row.get("gpu_key"):
                gpu = False  # the build-info file is there and names no CUDA (ONNX Runtime's CPU build, torchvision+cpu)
    tag = pf.local_cuda(version or "")
    if tag == "cpu":
        gpu = False
    elif tag and cuda is None:
        cuda, cuda_from = tag, "local-tag"
    if cudnn is None:
        cudnn = pf.local_cudnn(version or "")
    if cudnn is None:  # the plugin's floor on the cuDNN wheel: nvidia-cudnn-cu12<10.0,>=9.8 (data/loader_search.json, JAX-PLUGIN-META)
        cudnn = next((f for f in (pf.requirement_floor(line) for line in requires
                                  if (pf.requirement_name(line) or "").startswith("nvidia-cudnn-")) if f), None)
    if row.get("gpu_via"):
        plugins = [p for p in row["gpu_via"] if p in present]
        if not plugins and any(_tagged_cuda(present[p][1]) for p in row.get("gpu_via_tag", ()) if p in present):
            pass  # the companion is itself a CUDA build (jaxlib 0.4.25+cuda12.cudnn89): not a CPU build; its own row says its CUDA
        elif not plugins:
            gpu = False
        elif cuda is None:
            majors = [int((rows or {}).get(p, {}).get("cuda_major") or 0) for p in plugins]
            majors = [m for m in majors if m]
            if majors:
                cuda, cuda_from = str(max(majors)), "name"
    if cuda is None:
        majors = sorted({m for m in (pf.nvidia_cuda_major(n) for n in nvidia if n in present) if m})
        if majors:
            cuda, cuda_from = str(majors[-1]), "requires"
    needed: Tuple[str, ...] = ()
    if read_needed is not None and libraries:
        found: List[str] = []
        for lib in libraries:
            for dep in read_needed(host.join(site, *lib.split("/"))) or ():
                if dep not in found and cuda_soname(dep, cuda_libs or {}):
                    found.append(dep)
        needed = tuple(found)
        if cuda is None:
            majors = sorted({m for m in (soname_major(d, cuda_libs or {}) for d in needed) if m})
            if majors:
                cuda, cuda_from = str(majors[-1]), "needed"
    if cuda is not None and gpu is None:
        gpu = True
    return Framework(package=name, version=version, location=site, cuda=cuda, cudnn=cudnn, cuda_from=cuda_from,
                     gpu_build=gpu, nvidia_requires=nvidia, libraries=libraries, needed=needed)


def build_cudnn(package: str, version: Optional[str], cuda: Optional[str], major: str) -> Optional[str]:
    """The cuDNN major.minor a release was compiled with (data/frameworks.json's ``build-cudnn`` rows: TensorFlow's
    hermetic build settings), where its build-info file says only ``major``: only a row naming this version, whose CUDA
    is the build's and whose major is the one read; None otherwise (no verdict on an older minor without it)."""
    from cudaenv.core.resources import load_table

    for row in load_table("frameworks")["rows"]:
        if (row.get("kind") == "build-cudnn" and row["package"] == package and version in row["versions"]
                and row["cuda"] == cuda and row["cudnn"].split(".", 1)[0] == major):
            return row["cudnn"]
    return None


def _tagged_cuda(dist_info: str) -> bool:
    """A dist-info folder whose version has a local tag naming a CUDA build (``jaxlib-0.4.25+cuda12.cudnn89.dist-info``)."""
    version = dist_info[: -len(".dist-info")].split("-", 1)[1] if "-" in dist_info else ""
    return pf.local_cuda(version) not in (None, "cpu")


def cuda_soname(name: str, cuda_libs: Dict[str, bool]) -> bool:
    """A CUDA library's soname (``cuda_libs``: ``cudaenv.facts.frameworks.cuda_libraries()``), or the driver's libcuda."""
    return any(name.startswith(p) for p in cuda_libs) or name.startswith("libcuda.so")


def soname_major(name: str, cuda_libs: Dict[str, bool]) -> Optional[int]:
    """``libcudart.so.12`` -> 12 where the table says the number is the CUDA major (not cuDNN's libcudnn.so.9)."""
    for prefix, major in cuda_libs.items():
        if major and name.startswith(prefix):
            head = name[len(prefix):].split(".", 1)[0]
            return int(head) if head.isdigit() and len(head) <= 3 else None
    return None


def table_packages() -> Dict[str, Dict[str, Any]]:
    """``data/frameworks.json``'s package rows: normalized name -> row (how its build says its CUDA)."""
    from cudaenv.core.resources import load_table

    return {row["package"]: row for row in load_table("frameworks")["rows"] if row.get("kind") == "package"}


def table_cuda_libraries() -> Dict[str, bool]:
    """``data/loader_search.json``'s CUDA library soname prefixes -> whether the number after it is the CUDA major."""
    from cudaenv.core.resources import load_table

    return {row["prefix"]: bool(row.get("major_in_soname")) for row in load_table("loader_search")["rows"] if row.get("kind") == "library"}


def probe_frameworks(host, site_packages: Sequence[str], notes: List[Note], rows: Optional[Dict[str, Dict[str, Any]]] = None,
                     read_needed=None, cuda_libs: Optional[Dict[str, bool]] = None,
                     present: Optional[Dict[str, Tuple[str, str]]] = None,
                     heads: Optional[Dict[str, str]] = None) -> Tuple[Framework, ...]:
    """Every package of ``rows`` (default: :func:`table_packages`) installed in ``site_packages``, in the rows' order;
    ``read_needed(path)`` reads a shipped library's NEEDED entries (None: not read); ``present``: the
    :func:`installed_distributions` of ``site_packages`` where the caller listed them already; ``heads``: filled
    with each METADATA head read, by path (the extension check reads the same files)."""
    rows = table_packages() if rows is None else rows
    cuda_libs = table_cuda_libraries() if cuda_libs is None else cuda_libs
    present = installed_distributions(host, site_packages) if present is None else present
    out = []
    for name, row in rows.items():
        if name in present:
            out.append(read_framework(host, name, row, present[name], present, notes, read_needed, rows, cuda_libs, heads))
    return tuple(out)


def _cudnn_wheel_beside(host, path: str) -> Optional[str]:
    """The version of the nvidia-cudnn wheel whose dist-info lies in the site-packages holding ``path`` (one listing,
    made only when the wheels listed first do not hold it)."""
    from cudaenv.probes.site_packages import enclosing_site_packages

    site = enclosing_site_packages(path)
    if not site or not path.startswith(site + "/nvidia/cudnn/"):
        return None
    names = sorted(n for n in host.listdir(site) if n.startswith("nvidia_cudnn_cu") and n.endswith(".dist-info") and "-" in n)
    return names[0][: -len(".dist-info")].split("-", 1)[1] if names else None


def with_cudnn(host, frameworks, libraries, entries, other: Dict[str, Tuple[str, ...]], site_packages: Sequence[str],
               present: Optional[Dict[str, Tuple[str, str]]] = None) -> Tuple[Framework, ...]:
    """``frameworks`` with what the loader gives each ``runtime`` entry's consumer (:func:`cudaenv.probes.libraries.runtime_entries`)
    for its ``libcudnn.so.N``: the file, how it was found, its version (its name's, or the nvidia-cudnn wheel's that
    holds it), the other majors' files its search finds (``other``), and the nvidia-cudnn wheels installed
    (``present``: the :func:`installed_distributions` of ``site_packages``, where the caller listed them already)."""
    from cudaenv.model.record import replace

    present = installed_distributions(host, site_packages) if present is None else present
    wheels = {name: where for name, where in present.items() if name.startswith("nvidia-cudnn-")}
    labels = tuple("%s==%s" % (name, entry[: -len(".dist-info")].split("-", 1)[1]) for name, (_, entry) in sorted(wheels.items())
                   if "-" in entry)
    wanted = {consumer: ("libcudnn.so.%s" % cudnn.split(".", 1)[0], cudnn) for consumer, _, _, cudnn in entries if cudnn}
    out = []
    for fw in frameworks:
        soname, built = wanted.get(fw.package, (None, None))
        lib = next((x for x in libraries if x.consumer == fw.package and x.needed == soname), None) if soname else None
        if lib is None:
            out.append(fw)
            continue
        version = lib.version
        if lib.path and not version:
            for site, entry in wheels.values():
                if lib.path.startswith(site.rstrip("/") + "/nvidia/") and "-" in entry:
                    version = entry[: -len(".dist-info")].split("-", 1)[1]
                    break
            else:  # the wheel of another site-packages than the first holding that name (Python imported its nvidia)
                version = _cudnn_wheel_beside(host, lib.path)
        hidden: Tuple[str, ...] = ()
        at = next((i for i, site in enumerate(site_packages) if (lib.path or "").startswith(site.rstrip("/") + "/")), None)
        if lib.via == "preload" and at is not None:  # the same file in an earlier site-packages, which the import passed over
            rel = lib.path[len(site_packages[at].rstrip("/")) + 1:]
            hidden = tuple(f for f in (host.join(site, rel) for site in site_packages[:at]) if host.is_file(f))
        out.append(replace(fw, cudnn=fw.cudnn or built, cudnn_soname=soname, cudnn_path=lib.path, cudnn_via=lib.via, cudnn_version=version,
                           cudnn_other=tuple(other.get(fw.package, ())), cudnn_wheels=labels, cudnn_hidden=hidden))
    return tuple(out)
