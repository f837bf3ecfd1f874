"""Which CUDA library files a process will really load: each CUDA ``NEEDED`` entry of torch's ``libtorch_cuda.so``
and of the frameworks' shipped libraries, resolved in the Linux dynamic loader's order (``data/loader_search.json``):
the object's ``DT_RPATH`` (only when it has no ``DT_RUNPATH``), ``LD_LIBRARY_PATH``, its ``DT_RUNPATH``,
``/etc/ld.so.cache`` (read and parsed: :mod:`cudaenv.parse.ldcache`; where it cannot be read, the folders of
``/etc/ld.so.conf`` it is built from stand in), then the default folders; ``$ORIGIN`` is the object's folder. The first folder holding a regular file of that name wins; the files of that name further down are kept as
what it shadows. The libraries a resolved CUDA library loads itself with ``dlopen`` (the ``dlopen`` rows: cuDNN 9's
sub-libraries, the driver's ``libcuda.so.1`` that libcudart loads, NVRTC's ``libnvrtc-builtins.so.MAJOR.MINOR``,
NCCL's network plugin named by ``NCCL_NET_PLUGIN``) are resolved the same way from that library, as dlopen(3)
searches from the calling object (its RPATH/RUNPATH with its own ``$ORIGIN``), not from the program; the libraries a
consumer loads lazily (the ``lazy`` rows: torch's ``libcaffe2_nvrtc.so``) are objects of their own. The CUDA
libraries a framework's own library opens at run time (the ``runtime`` rows: XLA's ``xla_cuda_plugin.so`` opens
``libcudnn.so.9``, cuBLAS, cuFFT ... with dlopen, linking none of them) are resolved from that object the same way,
after the nvidia wheel file its Python code preloads by full path (``preload``), which a later dlopen by name gets. :func:`search_order` and :func:`resolve` are pure (given an ``is_file`` question); the probe reads the
ELF files through Host.
"""

from __future__ import annotations

import posixpath

from cudaenv.model.snapshot import LoadedLibrary
from cudaenv.parse.elf import ElfDynamic

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Callable, Dict, List, Optional, Sequence, Tuple

MAX_OBJECTS = 24  # libraries whose NEEDED entries are resolved, at most
LD_SO_CACHE = "/etc/ld.so.cache"
CACHE_LIMIT = 16 * 1024 * 1024  # a distribution's cache is tens to hundreds of KiB
CACHE = "<ld.so.cache>"  # the search-order entry that stands for the cache's own name -> path table


def _expand(entry: str, origin: str) -> Optional[str]:
    """A RUNPATH/RPATH entry with ``$ORIGIN`` (``${ORIGIN}``) replaced; None for other tokens ($LIB, $PLATFORM) or a
    relative entry (relative to the working directory: not this process's)."""
    path = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
    if "$" in path or not path.startswith("/"):
        return None
    return posixpath.normpath(path)


def search_order(origin: str, dyn: ElfDynamic, ld_library_path: Optional[str], conf_dirs: Sequence[str],
                 default_dirs: Sequence[str], cache: bool = False) -> List[Tuple[str, str]]:
    """(folder, step) in the loader's order for the NEEDED entries of the object in folder ``origin``; with ``cache``,
    the ld.so.cache step is one :data:`CACHE` entry (looked up by name) instead of the configured folders."""
    out: List[Tuple[str, str]] = []
    if not dyn.runpath:
        out += [(p, "rpath") for p in (_expand(e, origin) for e in dyn.rpath) if p]
    entries = (ld_library_path or "").replace(";", ":").split(":")
    out += [(posixpath.normpath(e), "LD_LIBRARY_PATH") for e in entries if e.startswith("/")]
    out += [(p, "runpath") for p in (_expand(e, origin) for e in dyn.runpath) if p]
    if cache:
        out.append((CACHE, "ld.so.cache"))
    else:
        out += [(posixpath.normpath(d), "ld.so.cache") for d in conf_dirs if d.startswith("/")]
    out += [(d, "default") for d in default_dirs]
    return out


def resolve(needed: str, order: Sequence[Tuple[str, str]], is_file: Callable[[str], bool],
            cache: Optional[Dict[str, str]] = None) -> Tuple[Optional[str], Optional[str], Tuple[str, ...]]:
    """(the file the loader takes, the step that found it, the other files of that name further down); ``cache``: the
    ld.so.cache's name -> path (a stale entry, whose file is gone, is passed over as the loader does)."""
    if "/" in needed:
        return (needed, "path", ()) if is_file(needed) else (None, None, ())
    hits: List[Tuple[str, str]] = []
    seen = set()
    for folder, step in order:
        if folder == CACHE:
            path = (cache or {}).get(needed)
            if not path:
                continue
            path = posixpath.normpath(path)
        else:
            path = posixpath.join(folder, needed)
        if path in seen:
            continue
        seen.add(path)
        if is_file(path):
            hits.append((path, step))
    if not hits:
        return None, None, ()
    return hits[0][0], hits[0][1], tuple(p for p, _ in hits[1:])


def file_version(real: Optional[str], needed: str) -> Optional[str]:
    """``libcudart.so.12.8.90`` -> ``12.8.90``: the numbers after ``.so.`` of the file's final name, when it says more
    than the soname."""
    if not real:
        return None
    name = posixpath.basename(real)
    at = name.find(".so.")
    if at < 0:
        return None
    tail = name[at + 4:]
    parts = tail.split(".")
    if not all(p.isdigit() and len(p) <= 9 for p in parts) or tail == needed.rsplit(".so.", 1)[-1]:
        return None
    return tail


def default_dirs(elf_class: int = 64) -> List[str]:
    """The loader's default folders (``data/loader_search.json``), last in its search; 64-bit: the lib64 ones first."""
    from cudaenv.core.resources import load_table

    row = next(r for r in load_table("loader_search")["rows"] if r.get("step") == "default")
    return list(row.get("dirs64") or []) + list(row["dirs"]) if elf_class == 64 else list(row["dirs"])


def cache_flags() -> Dict[str, int]:
    """ELF machine -> the flags of the ld.so.cache entries its loader takes (``data/loader_search.json``)."""
    from cudaenv.core.resources import load_table

    return {row["machine"]: int(row["flags"]) for row in load_table("loader_search")["rows"] if row.get("kind") == "cache-flags"}


def probe_ld_cache(host, path: str = LD_SO_CACHE):
    """The parsed ld.so.cache of the inspected system (:class:`cudaenv.parse.ldcache.LdCache`), None when there is
    none, it cannot be read whole within CACHE_LIMIT, or it is not in the new format."""
    from cudaenv.parse.ldcache import parse_ld_so_cache

    data = host.read_bytes(path, limit=CACHE_LIMIT)
    if data is None or len(data) >= CACHE_LIMIT:
        return None
    return parse_ld_so_cache(data)


def probe_libraries(host, objects: Sequence[Tuple[str, str]], cuda_libs: Optional[Dict[str, bool]] = None,
                    conf_dirs: Optional[Sequence[str]] = None, defaults: Callable[[int], List[str]] = default_dirs,
                    read=None, ld_cache=False, runtime: Sequence[Tuple[str, str, dict, Optional[str]]] = (),
                    sites: Sequence[str] = (), other_cudnn: Optional[Dict[str, Tuple[str, ...]]] = None) -> Tuple[LoadedLibrary, ...]:
    """Each CUDA NEEDED entry of each ``(consumer, library path)``, resolved. ``read(path) -> ElfDynamic`` reads an
    object (default: :func:`cudaenv.probes.elf.probe_elf_dynamic`); ``ld_cache``: the parsed ld.so.cache (False: read
    it, :func:`probe_ld_cache`; None: none), else ``conf_dirs`` (default: the loader's configuration,
    :func:`cudaenv.probes.ldconf.ld_conf_dirs`) stand in for it. ``runtime``: :func:`runtime_entries`, each name its
    object opens resolved from it (``sites``: the interpreter's site-packages, where a ``preload`` file is looked for
    first); ``other_cudnn``: filled with consumer -> the libcudnn files of other majors its search finds."""
    from cudaenv.probes.elf import probe_elf_dynamic
    from cudaenv.probes.frameworks import cuda_soname, table_cuda_libraries
    from cudaenv.probes.site_packages import enclosing_site_packages

    from cudaenv.parse.ldcache import cache_paths

    cuda_libs = table_cuda_libraries() if cuda_libs is None else cuda_libs
    loader: List[tuple] = []  # (ld_cache, conf_dirs, flags), read when the first object is (issue 35: none readable, none read)

    def loader_state():
        if not loader:
            cache = probe_ld_cache(host) if ld_cache is False else ld_cache
            if cache is None and conf_dirs is None:
                from cudaenv.probes.ldconf import ld_conf_dirs

                dirs = ld_conf_dirs(host)
            else:
                dirs = conf_dirs
            loader.append((cache, dirs, cache_flags() if cache is not None else {}))
        return loader[0]

    if read is None:
        def read(path):
            return probe_elf_dynamic(host, path)
    seen_reads: Dict[str, Optional[ElfDynamic]] = {}
    plain_read = read

    def read(path):  # noqa: F811 - each file read once (several consumers resolve the same libcudart)
        if path not in seen_reads:
            seen_reads[path] = plain_read(path)
        return seen_reads[path]
    ld_path = host.env.get("LD_LIBRARY_PATH")

    def searched_from(path, dyn):  # the loader's search from the object at ``path``: (its order, the cache's paths)
        cache, dirs, flags = loader_state()
        order = search_order(posixpath.dirname(path), dyn, ld_path, dirs or (), defaults(dyn.elf_class), cache is not None)
        return order, (cache_paths(cache, flags.get(dyn.machine)) if cache is not None else None)

    def loaded(consumer, path, name, found, via, others, wheel=None, **more):  # what the loader gives ``path`` for ``name``
        real = host.resolve(found) if found else None
        wheel = wheel or next((o for o in others if enclosing_site_packages(o)), None)
        return LoadedLibrary(consumer=consumer, object=path, needed=name, path=found, via=via,
                             version=file_version(real, name), real=real, others=others,
                             from_wheel=bool(found and enclosing_site_packages(found)), wheel_copy=wheel, **more)

    out: List[LoadedLibrary] = []
    for consumer, path in list(objects)[:MAX_OBJECTS]:
        dyn = read(path)
        if dyn is None:
            continue
        order, cached = searched_from(path, dyn)
        for needed in dyn.needed:
            if not cuda_soname(needed, cuda_libs) or needed.startswith("libcuda.so"):
                continue  # the driver's libcuda comes with the driver, not with a consumer
            found, via, others = resolve(needed, order, host.is_file, cached)
            out.append(loaded(consumer, path, needed, found, via, others))
    opened: List[LoadedLibrary] = []
    callers = dlopen_rows()
    for lib in out:
        row = callers.get(lib.needed)
        dyn = read(lib.path) if row and lib.path else None
        if dyn is None:
            continue
        order, cached = searched_from(lib.path, dyn)
        for names, optional, kind in opened_names(row, host.env, lambda: caller_version(host, lib, row)):
            hits = [(name,) + resolve(name, order, host.is_file, cached) for name in names]
            name, found, via, others = next((h for h in hits if h[1]), hits[0])
            if found is None and optional:
                continue  # a default that is normally absent (NCCL's libnccl-net.so): its absence is no problem
            opened.append(loaded(lib.consumer, lib.path, name, found, via, others, loaded_by=kind))
    for consumer, path, row, cudnn in runtime:
        dyn = read(path)
        if dyn is None:
            continue
        order, cached = searched_from(path, dyn)
        for name in runtime_names(row, cudnn):
            found, via, others = _runtime_resolve(host, name, row, sites, order, cached)
            outside = None if found else wheel_outside(host, name, row, sites)
            opened.append(loaded(consumer, path, name, found, via, others, wheel=outside, loaded_by="dlopen"))
        if cudnn and other_cudnn is not None:
            wanted = "libcudnn.so.%s" % cudnn.split(".", 1)[0]
            other_cudnn[consumer] = tuple(hit for hit in (_runtime_resolve(host, "libcudnn.so.%d" % m, row, sites, order, cached)[0]
                                                          for m in CUDNN_MAJORS if "libcudnn.so.%d" % m != wanted) if hit)
    return tuple(out + opened)


CUDNN_MAJORS = (7, 8, 9, 10)  # the libcudnn.so.N names looked for when a framework's own cuDNN major is found nowhere


def _runtime_resolve(host, name: str, row: dict, sites: Sequence[str], order, cached) -> Tuple[Optional[str], Optional[str], Tuple[str, ...]]:
    """(the file a ``runtime`` row's object gets for ``name``, how, the files of that name it passes over): the
    ``preload`` folder's file in the first site-packages holding it (the package's Python code loads it by path
    first), else the loader's search from the object."""
    found, via, others = resolve(name, order, host.is_file, cached)
    folder = (row.get("preload") or {}).get(name)
    for site in sites if folder else ():
        candidate = host.join(site, *folder.split("/"), name)
        if host.is_file(candidate):
            rest = tuple(p for p in ((found,) if found else ()) + others if p != candidate)
            return candidate, "preload", rest
    return found, via, others


def wheel_outside(host, name: str, row: dict, sites: Sequence[str]) -> Optional[str]:
    """The file of ``name`` in its nvidia wheel's folder (a ``runtime`` row's ``wheel``) of the first site-packages
    holding it, for a name the object's search found nowhere: installed, in a folder that search does not include."""
    folder = (row.get("wheel") or {}).get(name)
    for site in sites if folder else ():
        candidate = host.join(site, *folder.split("/"), name)
        if host.is_file(candidate):
            return candidate
    return None


def runtime_names(row: dict, cudnn: Optional[str]) -> List[str]:
    """The names a ``runtime`` row's object opens: ``libcudnn.so.{cudnn}`` with its cuDNN major (left out when that
    is not known)."""
    major = (cudnn or "").split(".", 1)[0]
    return [n.replace("{cudnn}", major) for n in row["opens"] if major or "{cudnn}" not in n]


def runtime_rows() -> List[dict]:
    """``data/loader_search.json``'s ``runtime`` rows: a framework's library that opens CUDA libraries itself."""
    from cudaenv.core.resources import load_table

    return [row for row in load_table("loader_search")["rows"] if row.get("kind") == "runtime"]


def runtime_cudnn(row: dict, frameworks) -> Optional[str]:
    """The cuDNN a ``runtime`` row's object was built for (``9.8``, ``8.9``; its major is the soname's): the first of
    its ``cudnn_from`` packages whose record says (a local version tag, a Requires-Dist floor on nvidia-cudnn), else
    the row's ``cudnn`` major."""
    by = {fw.package: fw for fw in frameworks}
    for name in row.get("cudnn_from") or ():
        fw = by.get(name)
        value = (fw.cudnn or "") if fw is not None else ""
        head = value.split(".", 1)[0]
        if head.isdigit() and len(head) <= 3:
            return value
    return str(row["cudnn"]) if row.get("cudnn") is not None else None


def runtime_entries(host, frameworks, rows: Optional[List[dict]] = None) -> List[Tuple[str, str, dict, Optional[str]]]:
    """(consumer, its object's path, the row, the cuDNN major) of each ``runtime`` row whose package is installed, not a
    CPU build, with its object there; the row's ``opens`` has the names of its ``opens_by_cuda`` for the CUDA major the
    package's build says added (none known for that major: only the row's own)."""
    rows = runtime_rows() if rows is None else rows
    by = {fw.package: fw for fw in frameworks}
    out = []
    for row in rows:
        fw = by.get(row["consumer"])
        if fw is None or not fw.location or fw.gpu_build is False:
            continue
        cudnn = runtime_cudnn(row, frameworks)
        more = (row.get("opens_by_cuda") or {}).get((fw.cuda or "").split(".", 1)[0])
        if more:  # the libraries its build's CUDA major names (TensorFlow's TSL: libcudart.so.12, libcufft.so.11 ...)
            row = dict(row, opens=list(row["opens"]) + [n for n in more if n not in row["opens"]])
        if not runtime_names(row, cudnn):
            continue  # a jaxlib without a CUDA tag: nothing it is known to open
        path = host.join(fw.location, *row["object"].split("/"))
        if host.is_file(path):
            out.append((fw.package, path, row, cudnn))
    return out


def opened_names(row: dict, env: Dict[str, str], version: Callable[[], Optional[str]]) -> List[Tuple[Tuple[str, ...], bool, str]]:
    """What a ``dlopen`` row's caller loads: (the names it tries, in order: the first found is taken; whether not
    finding any is normal; "dlopen" | "plugin"). ``env``: a row with an ``env`` variable set (not empty, not "none")
    tries each of its ``env_opens`` with the value instead of its ``opens``; ``version()``: the caller's own version
    for a ``version`` row (None: the name cannot be known, so the row is left out)."""
    kind = "plugin" if row.get("env") else "dlopen"
    value = (env.get(row["env"]) or "").strip() if row.get("env") else ""
    if value and value.lower() != "none":
        return [(tuple(n.replace("{value}", value) for n in row["env_opens"]), False, kind)]
    if value:
        return []  # NCCL_NET_PLUGIN=none: no external plugin asked for
    names = list(row["opens"])
    if row.get("version"):
        found = version()
        if not found:
            return []
        names = [n.replace("{version}", found) for n in names]
    return [((n,), bool(row.get("optional")), kind) for n in names]


def caller_version(host, lib: LoadedLibrary, row: dict) -> Optional[str]:
    """The major.minor of the library ``lib`` resolved to (a ``version`` row's caller): from its file's own name
    (``libnvrtc.so.12.9.86``), else from the name of the wheel's dist-info folder beside its site-packages
    (``nvidia_cuda_nvrtc_cu12-12.9.86.dist-info``, the row's ``dist``); only one whose major is the soname's."""
    from cudaenv.probes.site_packages import enclosing_site_packages

    major = lib.needed.rsplit(".so.", 1)[-1].split(".")[0]
    full = lib.version
    if not full and row.get("dist") and lib.path:
        site = enclosing_site_packages(lib.path)
        prefix = row["dist"] + "-"
        for name in sorted(host.listdir(site)) if site else ():
            if name.startswith(prefix) and name.endswith(".dist-info"):
                full = name[len(prefix):-len(".dist-info")]
                break
    parts = (full or "").split(".")
    if len(parts) < 2 or parts[0] != major or not parts[1].isdigit():
        return None
    return "%s.%s" % (parts[0], parts[1])


def lazy_objects(host, consumer: str, location: str) -> List[Tuple[str, str]]:
    """(consumer, path) of the libraries ``consumer`` (installed in site-packages folder ``location``) loads lazily
    (the ``lazy`` rows of ``data/loader_search.json``: torch's libcaffe2_nvrtc.so), those that are there."""
    from cudaenv.core.resources import load_table

    out = []
    for row in load_table("loader_search")["rows"]:
        if row.get("kind") == "lazy" and row["consumer"] == consumer:
            path = host.join(location, *row["object"].split("/"))
            if host.is_file(path):
                out.append((consumer, path))
    return out


def dlopen_rows() -> Dict[str, dict]:
    """A CUDA library's soname -> its ``dlopen`` row: what it loads itself (``data/loader_search.json``)."""
    from cudaenv.core.resources import load_table

    return {row["caller"]: row for row in load_table("loader_search")["rows"] if row.get("kind") == "dlopen"}
