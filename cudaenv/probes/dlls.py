"""Which CUDA DLL files torch will really load on Windows: each CUDA import of torch's ``torch_cuda.dll`` and
``c10_cuda.dll`` (their import and delay-load tables, :func:`cudaenv.parse.pe.parse_pe_imports`) resolved in the
order torch's ``_load_dll_libraries`` makes Windows search (``data/dll_search.json``, from Microsoft's and Python's
documentation and torch's source):

1. ``LoadLibraryExW(dll, None, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)``: the importing
   DLL's folder, the application's (python.exe's) folder, the folders torch adds with ``os.add_dll_directory``
   (``torch\\lib``, the interpreter's ``Library\\bin``), System32. Never PATH.
2. Only when that finds nothing (error 126): the standard order, torch's folders put first on PATH: python.exe's
   folder, System32, System, Windows, then PATH: a CUDA toolkit's ``bin`` on PATH supplies what torch's wheel lacks.

File names are matched without regard to case, as Windows does. Not modelled (no file shows them): a DLL of the same
module name already loaded in the process (used whatever its folder: the first framework imported decides), Known
DLLs, the current folder. :func:`resolve_dll` is pure (given a folder listing); the probe reads through Host.
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from cudaenv.model.snapshot import LoadedLibrary

MAX_OBJECTS = 8


def dll_table():
    from cudaenv.core.resources import load_table

    return load_table("dll_search")


def cuda_dll(name: str, prefixes: Sequence[str]) -> bool:
    low = name.lower()
    return low.endswith(".dll") and any(low.startswith(p) for p in prefixes)


def resolve_dll(name: str, order: Sequence[Tuple[str, str]], listing: Callable[[str], Dict[str, str]],
                join: Callable[[str, str], str]) -> Tuple[Optional[str], Optional[str], Tuple[str, ...]]:
    """(the file Windows takes, the step that found it, the files of that name further down) for DLL ``name`` in
    ``order`` ((folder, step) pairs); ``listing(folder)``: its entries, lower-case name -> name as on disk."""
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


def search_orders(dll_dir: str, app_dir: Optional[str], torch_dirs: Sequence[str], path: Sequence[str],
                  system: Dict[str, str]) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """(torch's first search: the LOAD_LIBRARY_SEARCH flags, its fallback: the standard order with torch's folders
    first on PATH), each a list of (folder, step)."""
    first = [(dll_dir, "dll-dir")] + ([(app_dir, "application")] if app_dir else [])
    first += [(d, "add_dll_directory") for d in torch_dirs] + [(system["system32"], "system32")]
    fallback = ([(app_dir, "application")] if app_dir else []) + [(system["system32"], "system32"), (system["system"], "system"),
                                                                  (system["windows"], "windows")]
    fallback += [(d, "PATH") for d in list(torch_dirs) + list(path)]
    return first, fallback


def probe_dlls(host, location: str, python: Optional[str], prefix: Optional[str] = None) -> Tuple[LoadedLibrary, ...]:
    """torch's CUDA DLLs as Windows resolves them: ``location`` the site-packages folder holding torch, ``python`` the
    interpreter (its folder is the application folder), ``prefix`` its sys.prefix, whose ``Library\\bin`` torch adds
    (default: the folder above ``Lib\\site-packages``, as in a conda environment or a venv)."""
    import ntpath

    from cudaenv.host.files import open_regular
    from cudaenv.parse.pe import parse_pe_imports
    from cudaenv.probes.site_packages import enclosing_site_packages

    rows = dll_table()["rows"]
    prefixes = [r["prefix"] for r in rows if r.get("kind") == "cuda-dll"]
    system = next(r for r in rows if r.get("kind") == "windows-dirs")
    dirs_row = next(r for r in rows if r.get("kind") == "torch-dirs")
    app = ntpath.dirname(python) if python else None
    prefix = prefix or ntpath.dirname(ntpath.dirname(location.rstrip("\\")))
    torch_lib = host.join(location, "torch", "lib")
    torch_dirs = [d for d in (r.replace("{torch}", host.join(location, "torch")).replace("{prefix}", prefix) for r in dirs_row["dirs"])
                  if not d.startswith("\\") and host.is_dir(d)]
    path = [p for p in (host.env.get("PATH") or "").split(";") if p.strip()]
    listings: Dict[str, Dict[str, str]] = {}

    def listing(folder: str) -> Dict[str, str]:
        if folder not in listings:
            listings[folder] = {n.lower(): n for n in host.listdir(folder) if host.is_file(host.join(folder, n))}
        return listings[folder]

    def in_wheel(p: Optional[str]) -> bool:
        return bool(p and enclosing_site_packages(p.replace("\\", "/")))

    out: List[LoadedLibrary] = []
    for name in dirs_row["objects"][:MAX_OBJECTS]:
        found = listing(torch_lib).get(name.lower())
        if not found:
            continue
        obj = host.join(torch_lib, found)
        real = host.real(obj)
        try:
            with open_regular(str(real)) as stream:
                pe = parse_pe_imports(stream)
        except (OSError, TypeError):
            pe = None
        if pe is None:
            continue
        first, fallback = search_orders(torch_lib, app, torch_dirs, path, system)
        for dll in pe.imports + pe.delay:
            if not cuda_dll(dll, prefixes):
                continue
            hit, via, others = resolve_dll(dll, first, listing, host.join)
            if hit is None:
                hit, via, others = resolve_dll(dll, fallback, listing, host.join)
            else:
                more = resolve_dll(dll, fallback, listing, host.join)
                others = tuple(dict.fromkeys(others + tuple(p for p in ((more[0],) + more[2]) if p and p != hit)))
            wheel = next((o for o in others if in_wheel(o)), None)
            out.append(LoadedLibrary(consumer="torch", object=obj, needed=dll, path=hit, via=via, real=hit, others=others,
                                     from_wheel=in_wheel(hit), wheel_copy=wheel,
                                     loaded_by="dlopen" if dll in pe.delay and dll not in pe.imports else "needed"))
    return tuple(out)
