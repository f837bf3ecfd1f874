"""Which CUDA DLL files torch and the frameworks will really load on Windows: each CUDA import (the import and
delay-load tables, :func:`cudaenv.parse.pe.parse_pe_imports`) of torch's ``torch_cuda.dll`` and ``c10_cuda.dll`` and
of each framework's DLLs (``data/dll_search.json``'s ``consumer`` rows), resolved in the order that consumer makes
Windows search (from Microsoft's and Python's documentation and each project's source):

1. torch: ``LoadLibraryExW(dll, None, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)``: the
   importing DLL's folder, the application's (python.exe's) folder, the folders torch adds with
   ``os.add_dll_directory`` (``torch\\lib``, the interpreter's ``Library\\bin``, and a toolkit's ``bin`` named by
   ``CUDA_PATH_V<major>_<minor>`` when none of those holds a cudart64 DLL), System32. Never PATH. Only when that finds
   nothing (error 126): the standard order, torch's folders put first on PATH: python.exe's folder, System32, System,
   Windows, then PATH: a CUDA toolkit's ``bin`` on PATH supplies what torch's wheel lacks.
2. ONNX Runtime's CUDA provider (``LOAD_WITH_ALTERED_SEARCH_PATH``): the provider's folder, System32, System,
   Windows, PATH.
3. CuPy's extension modules (Python's flags, as for torch): the module's folder, python.exe's folder, the CUDA
   folder's ``bin`` (a conda package: the CUDA folder itself) and ``cupy\\.data\\lib`` it adds with
   ``os.add_dll_directory``, System32; before that, a pip wheel loads the cuDNN, cuTENSOR and NCCL its
   ``cupy\\.data\\_wheel.json`` names by full path from under ``CUPY_CUDA_LIB_PATH`` (default ``~\\.cupy\\cuda_lib``),
   and the module importing that name gets that file (``via="preload"``).
4. PaddlePaddle loads cuDNN, cuBLAS, cuRAND, cuSOLVER, cuSPARSE and cuFFT at their first use: from the folder ``FLAGS_cudnn_dir`` / ``FLAGS_cuda_dir``
   names, by full path, when set; else by name (``LoadLibrary``: the standard order, python.exe's folder, System32,
   System, Windows, PATH with the folders ``import paddle`` puts first: libpaddle.pyd's and ``paddle\\libs``), then
   from the toolkit folder it was built with.

A name on the KnownDLLs list is the system's copy, never searched for on disk: the list is the machine's registry key
where cudaenv runs on that Windows (:func:`cudaenv.host.registry.read_values`), else the documented defaults of the table. File names are matched without regard
to case, as Windows does. Before any folder, a DLL of the same module name already loaded in the process is used,
whatever its folder (MS-ORDER's loaded-module list): :func:`process_loads` replays the imports in the order a process
usually makes them (data/dll_search.json's ``process`` row: torch first, whose ``import torch`` loads every DLL of
``torch\\lib`` by full path, then the frameworks), so what a later framework's by-name load really gets is reported
(``via="loaded"``, with the file its own search would take in ``own``); ``doctor --import-order`` states another
order (``onnxruntime.preload_dlls()`` a step of it). Not modelled: the current folder. :func:`resolve_dll` and
:func:`process_loads` are pure (given a folder listing); the probe reads through Host.
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from cudaenv.model.snapshot import LoadedLibrary

MAX_OBJECTS = 8
FULL_PATH = ("known-dlls", "flag-dir")  # steps that are no by-name search: the loaded-module list does not decide them
ORT_PRELOAD = "onnxruntime.preload_dlls"  # the step of a program that calls it (doctor --import-order)


def dll_table():
    from cudaenv.core.resources import load_table

    return load_table("dll_search")


def cuda_dll(name: str, prefixes: Sequence[str]) -> bool:
    low = name.lower()
    return low.endswith(".dll") and any(low.startswith(p) for p in prefixes)


def resolve_dll(name: str, order: Sequence[Tuple[str, str]], listing: Callable[[str], Dict[str, str]],
                join: Callable[[str, str], str], known: Tuple[str, str] = ("", "")
                ) -> Tuple[Optional[str], Optional[str], Tuple[str, ...]]:
    """(the file Windows takes, the step that found it, the files of that name further down) for DLL ``name`` in
    ``order`` ((folder, step) pairs); ``listing(folder)``: its entries, lower-case name -> name as on disk; ``known``:
    (the KnownDLLs names, lower case, joined by "|" with one on each side, System32): such a name is the system's
    copy, whatever the folders hold (no folder is searched for it)."""
    names, system32 = known
    if names and "|%s|" % name.lower() in names:
        return join(system32, name), "known-dlls", ()
    hits: List[Tuple[str, str]] = []
    seen = set()
    for folder, step in order:
        key = folder.rstrip("\\/").lower()
        if not folder or key in seen:
            continue
        seen.add(key)
        found = listing(folder).get(name.lower())
        if found:
            hits.append((join(folder, found), step))
    if not hits:
        return None, None, ()
    return hits[0][0], hits[0][1], tuple(p for p, _ in hits[1:])


def process_loads(libs: Sequence[LoadedLibrary], preloaded: Dict[str, Tuple[str, str]],
                  in_wheel: Callable[[Optional[str]], bool], order: Optional[Sequence[str]] = None) -> List[LoadedLibrary]:
    """The loaded-module step (MS-ORDER) over ``libs``, each consumer's own resolution in the order the process imports
    them: a by-name load of a DLL another consumer loaded earlier (``preloaded``: {lower-case name: (file, consumer)},
    the DLLs a consumer's import loads by full path, such as torch's own, or (file, consumer, the step of ``order``
    that loads it)) gets that file, via "loaded", whatever its own
    search finds (kept in ``own``; None when it finds none). A load that is no search (a KnownDLL, a full path) is left
    as it is; the first file a consumer loads of a name is the one later consumers get, torch's own imports included
    (onnxruntime#24266: a cuDNN loaded before import torch is the one torch's DLLs get); a consumer's by-name import of
    a name it loaded by full path itself gets that file (via "preload"). ``order``: the consumers in
    the order the program imports them (None: ``preloaded`` first, then ``libs`` in their order); a consumer not in
    it is resolved on its own, as a program that imports it alone."""
    from cudaenv.model.record import replace

    turns = list(dict.fromkeys(order)) if order is not None else None
    loaded: Dict[str, Tuple[str, str]] = dict(preloaded) if turns is None else {}
    out = []
    by_turn = sorted(libs, key=lambda lib: turns.index(lib.consumer) if lib.consumer in turns else len(turns)) if turns else list(libs)
    if turns is not None:  # each consumer's full-path loads at its turn, before its own imports
        plan = []
        for consumer in turns:
            plan.append((consumer, None))
            plan += [(consumer, lib) for lib in by_turn if lib.consumer == consumer]
        steps = plan
    else:
        steps = [(lib.consumer, lib) for lib in by_turn]
    for consumer, lib in steps:
        if lib is None:
            for key, entry in preloaded.items():
                if (entry[2] if len(entry) > 2 else entry[1]) == consumer:
                    loaded.setdefault(key, (entry[0], entry[1]))
            continue
        key = lib.needed.lower()
        first = loaded.get(key)
        if lib.via in FULL_PATH:
            pass
        elif first is not None and first[1] == lib.consumer:  # its own full-path load of that name, earlier
            if (lib.path or "").lower() != first[0].lower():
                others = tuple(o for o in ((lib.path,) if lib.path else ()) + lib.others if o.lower() != first[0].lower())
                lib = replace(lib, path=first[0], real=first[0], via="preload", own=lib.path, others=others,
                              from_wheel=in_wheel(first[0]), wheel_copy=next((o for o in others if in_wheel(o)), None))
        elif first is not None and (lib.path or "").lower() != first[0].lower():
            others = tuple(o for o in ((lib.path,) if lib.path else ()) + lib.others if o.lower() != first[0].lower())
            lib = replace(lib, path=first[0], real=first[0], via="loaded", first_loaded_by=first[1], own=lib.path,
                          others=others, from_wheel=in_wheel(first[0]), wheel_copy=next((o for o in others if in_wheel(o)), None))
        elif first is None and lib.path:
            loaded[key] = (lib.path, lib.consumer)
        out.append(lib)
    if turns is not None:
        out += [lib for lib in libs if lib.consumer not in turns]
    return out


def consumers_in_order(modules: Sequence[str], packages: Sequence[str]) -> List[str]:
    """The consumers (``packages``, "torch" among them where torch is installed) of the modules a program imports, in
    its order (``doctor --import-order``: "torch", "onnxruntime", "cupy", "paddle", ...; data/frameworks.json's
    ``import`` module of each package), and ONNX Runtime's preload step (ORT_PRELOAD) where named. Pure."""
    from cudaenv.core.resources import load_table

    module_of = {r["package"]: r["import"].get("module", r["package"]) for r in load_table("frameworks")["rows"]
                 if r.get("package") and isinstance(r.get("import"), dict)}
    module_of["torch"] = "torch"
    out: List[str] = []
    for module in modules:
        module = module.strip()
        if module == ORT_PRELOAD:
            out.append(module)
        out += [p for p in packages if module_of.get(p, p) == module and p not in out]
    if ORT_PRELOAD in out:  # ONNX Runtime loads its CUDA provider at the first session, after the program's preload call
        late = [p for p in out[:out.index(ORT_PRELOAD)] if module_of.get(p) == "onnxruntime"]
        out = [p for p in out if p not in late]
        out[out.index(ORT_PRELOAD) + 1:out.index(ORT_PRELOAD) + 1] = late
    return list(dict.fromkeys(out))


def known_dll_names(values: Optional[Dict[str, str]]) -> Tuple[str, ...]:
    """The DLL file names (lower case) a KnownDLLs registry key lists (MS-KNOWN-DLLS: each value ``advapi32`` =
    ``advapi32.dll``; ``DllDirectory``/``DllDirectory32`` name the folder and are no entry): a value counts only when it
    is a plain file name ending in .dll. Pure; () when there is none (the caller falls back to the documented list)."""
    out: List[str] = []
    for name, data in (values or {}).items():
        if not isinstance(name, str) or not isinstance(data, str) or name.lower().startswith("dlldirectory"):
            continue
        low = data.strip().lower()
        if low.endswith(".dll") and len(low) <= 255 and not set(low) & set('\\/:"*?<>|%\0') and low not in out:
            out.append(low)
    return tuple(out)


def flags_order(dll_dir: str, app_dir: Optional[str], dirs: Sequence[str], system: Dict[str, str]) -> List[Tuple[str, str]]:
    """LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR (Python's extension modules, torch's first
    call): the importing DLL's folder, the application's, the os.add_dll_directory ``dirs``, System32."""
    first = [(dll_dir, "dll-dir")] + ([(app_dir, "application")] if app_dir else [])
    return first + [(d, "add_dll_directory") for d in dirs] + [(system["system32"], "system32")]


def altered_order(dll_dir: str, path: Sequence[str], system: Dict[str, str]) -> List[Tuple[str, str]]:
    """LOAD_WITH_ALTERED_SEARCH_PATH (ONNX Runtime's provider DLL): the loaded DLL's folder, System32, System, Windows,
    PATH."""
    return [(dll_dir, "dll-dir"), (system["system32"], "system32"), (system["system"], "system"),
            (system["windows"], "windows")] + [(d, "PATH") for d in path]


def search_orders(dll_dir: str, app_dir: Optional[str], torch_dirs: Sequence[str], path: Sequence[str],
                  system: Dict[str, str]) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """(torch's first search: the LOAD_LIBRARY_SEARCH flags, its fallback: the standard order with torch's folders
    first on PATH), each a list of (folder, step)."""
    first = flags_order(dll_dir, app_dir, torch_dirs, system)
    fallback = ([(app_dir, "application")] if app_dir else []) + [(system["system32"], "system32"), (system["system"], "system"),
                                                                  (system["windows"], "windows")]
    fallback += [(d, "PATH") for d in list(torch_dirs) + list(path)]
    return first, fallback


def _cuda_path(host, path: Sequence[str]) -> Optional[str]:
    """CuPy's CUDA folder (``_get_cuda_path``): CUDA_PATH when that folder exists, else the folder above the first
    nvcc.exe on PATH."""
    import ntpath

    value = (host.env.get("CUDA_PATH") or "").strip()
    if value and host.exists(value):
        return value
    for folder in path:
        if host.is_file(host.join(folder, "nvcc.exe")):
            return ntpath.dirname(folder.rstrip("\\/"))
    return None


def _torch_cuda_path(host, dirs: Sequence[str], cuda: Optional[str], row: Dict, listing) -> Optional[str]:
    """The toolkit's bin folder torch adds when none of ``dirs`` holds a cudart64*.dll (CUDA_PATH_V12_8, else the
    toolkit's default folder for torch's CUDA), where it exists."""
    if not cuda or "." not in cuda or any(n.startswith(row["unless"]) and n.endswith(".dll") for d in dirs for n in listing(d)):
        return None
    major, minor = cuda.split(".")[:2]
    base = host.env.get(row["env"].replace("{major}", major).replace("{minor}", minor)) or row["default"].replace("{cuda}", cuda)
    folder = host.join(base, row["sub"])
    return folder if host.is_dir(folder) else None


def probe_dlls(host, location: Optional[str], python: Optional[str], prefix: Optional[str] = None, cuda: Optional[str] = None,
               frameworks: Sequence = (), imports: Sequence[str] = (), present=None) -> Tuple[LoadedLibrary, ...]:
    """torch's and the frameworks' CUDA DLLs as Windows resolves them: ``location`` the site-packages folder holding
    torch (None: no torch), ``python`` the interpreter (its folder is the application folder), ``prefix`` its
    sys.prefix, whose ``Library\\bin`` torch adds (default: the folder above ``Lib\\site-packages``, as in a conda
    environment or a venv), ``cuda`` torch's CUDA ("12.8"), ``frameworks`` the Framework records the frameworks probe
    found, ``imports`` the modules the user's program imports, in order (``doctor --import-order``; () the usual
    program: torch first, then the frameworks), ``present`` the site-packages' distributions where the caller listed
    them (:func:`cudaenv.probes.frameworks.installed_distributions`; None: each framework's folder listed once a run)."""
    import ntpath

    from cudaenv.host.registry import read_values
    from cudaenv.probes.site_packages import enclosing_site_packages

    table = dll_table()
    rows = table["rows"]
    prefixes = [r["prefix"] for r in rows if r.get("kind") == "cuda-dll"]
    system = next(r for r in rows if r.get("kind") == "windows-dirs")
    dirs_row = next(r for r in rows if r.get("kind") == "torch-dirs")
    known_row = next(r for r in rows if r.get("kind") == "known-dlls")
    names = known_dll_names(read_values(host, known_row["key"])) or tuple(n.lower() for n in known_row["names"])
    known = ("|%s|" % "|".join(names), system["system32"])
    app = ntpath.dirname(python) if python else None
    path = [p for p in (host.env.get("PATH") or "").split(";") if p.strip()]
    listings: Dict[str, Dict[str, str]] = {}
    lists = {s: {n: w for n, w in (present or {}).items() if w[0] == s} for s in {w[0] for w in (present or {}).values()}}

    def listing(folder: str) -> Dict[str, str]:
        if folder not in listings:
            listings[folder] = {n.lower(): n for n in host.listdir(folder) if host.is_file(host.join(folder, n))}
        return listings[folder]

    def in_wheel(p: Optional[str]) -> bool:
        return bool(p and enclosing_site_packages(p.replace("\\", "/")))

    out: List[LoadedLibrary] = []

    def resolve(consumer: str, obj: str, pe, first, fallback, preloads: Optional[Dict[str, str]] = None,
                optional: bool = False) -> None:
        for dll in pe.imports + pe.delay:
            if not cuda_dll(dll, prefixes):
                continue
            hit, via, others = resolve_dll(dll, first, listing, host.join, known)
            if hit is None and fallback:
                hit, via, others = resolve_dll(dll, fallback, listing, host.join, known)
            elif fallback and via != "known-dlls":
                more = resolve_dll(dll, fallback, listing, host.join, known)
                others = tuple(dict.fromkeys(others + tuple(p for p in ((more[0],) + more[2]) if p and p != hit)))
            pre = (preloads or {}).get(dll.lower())
            if pre and via != "known-dlls":  # the consumer loaded that name by full path before: the import gets it
                others = tuple(p for p in ((hit,) if hit else ()) + others if p.lower() != pre.lower())
                hit, via = pre, "preload"
            if hit is None and optional:  # a library the framework uses only where it is installed (CUPY-OPTIONAL)
                continue
            wheel = next((o for o in others if in_wheel(o)), None)
            out.append(LoadedLibrary(consumer=consumer, object=obj, needed=dll, path=hit, via=via, real=hit, others=others,
                                     from_wheel=in_wheel(hit), wheel_copy=wheel,
                                     loaded_by="dlopen" if dll in pe.delay and dll not in pe.imports else "needed"))

    preloaded: Dict[str, Tuple[str, str]] = {}
    process = next(r for r in rows if r.get("kind") == "process")
    if location:
        prefix = prefix or ntpath.dirname(ntpath.dirname(location.rstrip("\\")))
        torch_lib = host.join(location, "torch", "lib")
        torch_dirs = [d for d in (r.replace("{torch}", host.join(location, "torch")).replace("{prefix}", prefix) for r in dirs_row["dirs"])
                      if not d.startswith("\\") and host.is_dir(d)]
        extra = _torch_cuda_path(host, torch_dirs, cuda, next(r for r in rows if r.get("kind") == "torch-cuda-path"), listing)
        torch_dirs += [extra] if extra else []
        for name in dirs_row["objects"][:MAX_OBJECTS]:
            found = listing(torch_lib).get(name.lower())
            pe = _imports(host, host.join(torch_lib, found)) if found else None
            if pe is not None:
                first, fallback = search_orders(torch_lib, app, torch_dirs, path, system)
                resolve("torch", host.join(torch_lib, found), pe, first, fallback)
        if process.get("torch_preloads"):  # import torch loads every DLL of torch\\lib, by full path, before anything else
            preloaded = {k: (host.join(torch_lib, n), "torch") for k, n in listing(torch_lib).items() if cuda_dll(k, prefixes)}
    consumers = {r["package"]: r for r in rows if r.get("kind") == "consumer" and r["package"] != "torch"}
    for fw in frameworks:
        row = consumers.get(fw.package)
        if row is None or not fw.location:
            continue
        site = fw.location
        packaging, preloads = _preloads(host, fw, row, listing) if row.get("preload") else (None, {})
        dirs = []
        for d in row.get("conda_dirs" if packaging == "conda" and row.get("conda_dirs") else "dirs", ()):
            if "{cuda_path}" in d:
                base = _cuda_path(host, path)
                d = d.replace("{cuda_path}", base) if base else ""
            d = d.replace("{site}", site)
            if d and host.is_dir(d):
                dirs.append(d)
        if row.get("dynload"):
            _dynload(host, fw, row, app, path, system, listing, known, out, in_wheel)
            continue
        optional = tuple(o.lower() for o in row.get("optional", ()))
        for obj, pe in _objects(host, fw, row, prefixes, lists):
            folder = ntpath.dirname(obj)
            first = altered_order(folder, path, system) if row["order"] == "altered" else flags_order(folder, app, dirs, system)
            inside = obj[len(site):].lstrip("\\").lower()
            resolve(fw.package, obj, pe, first, None, preloads, bool(optional) and inside.startswith(optional))
    if not imports:
        return tuple(process_loads(out, preloaded, in_wheel))
    turns = consumers_in_order(imports, (["torch"] if location else []) + [fw.package for fw in frameworks])
    if ORT_PRELOAD in turns:
        preloaded.update(_ort_preloads(host, turns, out, location, cuda, frameworks, listing))
    return tuple(process_loads(out, preloaded, in_wheel, turns))


def _ort_preloads(host, turns: Sequence[str], libs: Sequence[LoadedLibrary], location: Optional[str], cuda: Optional[str],
                  frameworks: Sequence, listing) -> Dict[str, Tuple[str, str, str]]:
    """What ``onnxruntime.preload_dlls()`` loads by full path where the program calls it (ORT-PRELOAD): each CUDA DLL
    ONNX Runtime's CUDA provider imports, from torch\\lib when a torch for CUDA 12 is installed, else from the nvidia
    wheels' bin folders; nothing when such a torch was imported before the call (it then skips the CUDA and cuDNN
    DLLs). {lower-case name: (file, "onnxruntime-gpu", ORT_PRELOAD)}."""
    row = next(r for r in dll_table()["rows"] if r.get("kind") == "ort-preload")
    ort = next((f for f in frameworks if f.package == row["package"] and f.location), None)
    torch_ok = bool(location) and (cuda or "").split(".")[0] in row["torch_cuda"]
    if ort is None or (torch_ok and "torch" in turns and turns.index("torch") < turns.index(ORT_PRELOAD)):
        return {}
    folders = [host.join(location, "torch", "lib")] if torch_ok else []
    wheels = host.join(ort.location, row["wheels"])
    folders += [host.join(wheels, d, "bin") for d in sorted(host.listdir(wheels))[:64]]
    out: Dict[str, Tuple[str, str, str]] = {}
    for lib in libs:
        key = lib.needed.lower()
        if lib.consumer != row["package"] or key in out:
            continue
        for folder in folders:
            hit = listing(folder).get(key)
            if hit:
                out[key] = (host.join(folder, hit), row["package"], ORT_PRELOAD)
                break
    return out


def _preloads(host, fw, row: Dict, listing) -> Tuple[Optional[str], Dict[str, str]]:
    """(the packaging CuPy's preload configuration says, {lower-case file name: the file CuPy loads by full path
    before its first use}) (CUPY-PRELOAD): for a pip wheel, each library's file names of ``cupy\\.data\\_wheel.json``
    looked for under CUPY_CUDA_LIB_PATH (else ~\\.cupy\\cuda_lib) in ``<cuda>\\<lib>\\<version>\\{lib,lib64,bin}``."""
    from cudaenv.parse.frameworks import parse_cupy_preload

    spec = row["preload"]
    packaging, cuda, libs = parse_cupy_preload(host.read_text(host.join(fw.location, spec["config"]), limit=65536) or "")
    root = (host.env.get(spec["env"]) or "").strip()
    if not root and (host.env.get("USERPROFILE") or "").strip():
        root = spec["default"].replace("{home}", host.env["USERPROFILE"].strip())
    found: Dict[str, str] = {}
    if packaging != "pip" or not cuda or not root:
        return packaging, found
    for lib, version, names in libs:
        for name in names:
            for sub in spec["subdirs"]:
                folder = host.join(root, cuda, lib, version, sub)
                hit = listing(folder).get(name.lower())
                if hit:
                    found.setdefault(name.lower(), host.join(folder, hit))
                    break
    return packaging, found


def _dynload(host, fw, row: Dict, app: Optional[str], path: Sequence[str], system: Dict[str, str], listing, known,
             out: List[LoadedLibrary], in_wheel) -> None:
    """A framework that loads its CUDA DLLs at run time (PaddlePaddle's GetDsoHandleFromSearchPath): each name from
    its CUDA and cuDNN versions, the alternatives tried in turn, each first in the folder its ``flag`` environment
    variable names (FLAGS_cudnn_dir: loaded by full path), then by name in the standard order (python.exe's folder,
    System32, System, Windows, PATH with the folders its import puts first: ``path_adds``), then the row's ``extra``
    folders."""
    import ntpath

    obj = next((host.join(fw.location, o) for o in row.get("objects", ()) if host.is_file(host.join(fw.location, o))), None)
    cuda = (fw.cuda or "").split(".")
    cudnn = (fw.cudnn or "").split(".")[0]
    if obj is None or len(cuda) < 2 or not cuda[0].isdigit():
        return
    adds = [a.replace("{object_dir}", ntpath.dirname(obj)).replace("{site}", fw.location) for a in row.get("path_adds", ())]
    order = ([(app, "application")] if app else []) + [(system["system32"], "system32"), (system["system"], "system"),
                                                       (system["windows"], "windows")]
    order += [(d, "PATH") for d in adds if host.is_dir(d)] + [(d, "PATH") for d in path]
    order += [(e.replace("{cuda}", "%s.%s" % tuple(cuda[:2])), "build-toolkit") for e in row.get("extra", ())]
    values = {"{cuda_major}": cuda[0], "{cuda_minor}": cuda[1], "{cudnn_major}": cudnn}
    for entry in row["dynload"]:
        names_text = entry["names"]
        if "{cudnn_major}" in names_text and not cudnn.isdigit():
            continue
        for name in values:
            names_text = names_text.replace(name, values[name])
        flag = _env(host, entry["flag"]) if entry.get("flag") else ""
        names = names_text.split(";")
        hit, via, others = None, None, ()
        for name in names:
            direct = host.join(flag, name) if flag else None
            if direct and host.is_file(direct):  # join(FLAGS_*_dir, name) loaded by full path: no search
                rest = resolve_dll(name, order, listing, host.join, known)
                hit, via, others = direct, "flag-dir", tuple(p for p in (rest[0],) + rest[2] if p)
                break
            hit, via, others = resolve_dll(name, order, listing, host.join, known)
            if hit is not None:
                break
        needed = name if hit is not None else names[-1]
        if hit is None:  # found nowhere: the toolkit folders its search does not reach that hold it (a FLAGS_*_dir fix)
            others = _toolkit_copies(host, row, names, listing)
        out.append(LoadedLibrary(consumer=fw.package, object=obj, needed=needed, path=hit, via=via, real=hit, others=others,
                                 from_wheel=in_wheel(hit), wheel_copy=next((o for o in others if in_wheel(o)), None),
                                 loaded_by="dlopen"))


def _toolkit_copies(host, row: Dict, names: Sequence[str], listing) -> Tuple[str, ...]:
    """The files of ``names`` (the first of them found) in the bin folder of each CUDA toolkit the environment names
    (the row's ``toolkit_env``: CUDA_PATH and NVIDIA's installer's CUDA_PATH_V<major>_<minor>, any case), at most 16
    folders looked at."""
    prefix = row.get("toolkit_env")
    if not prefix:
        return ()
    upper = prefix.upper()
    bases = sorted({v.strip() for k, v in host.env.items() if k.upper() == upper or k.upper().startswith(upper + "_V")} - {""})
    found: List[str] = []
    for base in bases[:16]:
        folder = host.join(base, "bin")
        hit = next((listing(folder).get(n.lower()) for n in names if listing(folder).get(n.lower())), None)
        path = host.join(folder, hit) if hit else None
        if path and path.lower() not in {f.lower() for f in found}:
            found.append(path)
    return tuple(found)


def _env(host, name: str) -> str:
    """The environment variable ``name`` as Windows reads it, without regard to case (Python on Windows keeps
    os.environ's keys in upper case: FLAGS_cudnn_dir arrives as FLAGS_CUDNN_DIR); "" when unset."""
    value = host.env.get(name)
    if value is None:
        upper = name.upper()
        value = next((v for k, v in host.env.items() if k.upper() == upper), None)
    return (value or "").strip()


def _imports(host, path: str):
    """The PE imports of the file at ``path`` (None when it cannot be read or is no PE file)."""
    from cudaenv.host.files import open_regular
    from cudaenv.parse.pe import parse_pe_imports

    real = host.real(path)
    if real is None:
        return None
    try:
        with open_regular(str(real)) as stream:
            return parse_pe_imports(stream)
    except (OSError, TypeError):
        return None


def _objects(host, fw, row: Dict, prefixes: Sequence[str], lists: Dict) -> List[Tuple[str, object]]:
    """(path, its PE imports) of a framework's DLLs whose imports name a CUDA DLL: the row's fixed ``objects``, or with
    ``record`` the .dll and .pyd files its RECORD lists: those under the row's ``modules`` (CUPY-WHEEL: the modules a
    real wheel's import tables show to import CUDA DLLs; at most its ``max_objects`` read), else the first MAX_OBJECTS,
    the ones named for CUDA first. ``lists``: {site-packages: its distributions}, each folder listed once a run."""
    from cudaenv.parse import frameworks as pf
    from cudaenv.probes.frameworks import RECORD_LIMIT, installed_distributions

    names = [o.replace("/", "\\") for o in row.get("objects", ())]
    limit = MAX_OBJECTS
    if row.get("record"):
        if fw.location not in lists:  # (the caller's listing where it gave one)
            lists[fw.location] = installed_distributions(host, (fw.location,))
        entry = lists[fw.location].get(fw.package)
        record = host.read_text(host.join(fw.location, entry[1], "RECORD"), limit=RECORD_LIMIT) if entry else None
        listed = [p.replace("/", "\\") for p in pf.record_libraries(record or "") if p.lower().endswith((".dll", ".pyd"))]
        modules = tuple(m.lower() for m in row.get("modules", ()))
        chosen = [p for p in listed if modules and p.lower().startswith(modules)]
        if chosen:
            names += chosen
            limit = row.get("max_objects", MAX_OBJECTS)
        else:  # a layout the row does not know: the modules named for CUDA first (cupy_backends\\cuda\\api\\...)
            names += sorted(listed, key=lambda n: "cuda" not in n.lower())
    out = []
    for name in names[:limit]:
        obj = host.join(fw.location, name)
        pe = _imports(host, obj) if host.is_file(obj) else None
        if pe is not None and any(cuda_dll(d, prefixes) for d in pe.imports + pe.delay):
            out.append((obj, pe))
    return out
