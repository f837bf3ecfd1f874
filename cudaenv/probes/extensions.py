"""Compiled torch extensions checked against the installed torch, read from files only (Linux): which shared
libraries of the packages that build on torch link torch's own (``data/frameworks.json``'s ``torch-abi`` row:
libc10.so, libtorch*.so), which of their undefined symbols in torch's C++ namespaces the installed torch's libraries
do not export (an extension built against another torch fails to import with ``undefined symbol``), and which
``std::string`` ABI (``_GLIBCXX_USE_CXX11_ABI``) each side spells.

The packages looked at: the table's ``torch_extension`` rows and every other distribution whose ``Requires-Dist``
names torch (METADATA read bounded), at most MAX_PACKAGES; their RECORD's shared libraries, at most
MAX_MODULES each. Each extension's dynamic symbol table is read bounded (:func:`cudaenv.parse.elf_symbols.parse_elf_symbols`);
torch's exports are looked up name by name through each library's hash table, as the loader does
(:func:`cudaenv.parse.elf_symbols.parse_elf_defines`), so a 1 GB ``libtorch_cuda.so`` costs a few reads per name.
"""

from __future__ import annotations

import posixpath

from cudaenv.core.i18n import M
from cudaenv.model.snapshot import Note, Torch, TorchExtension
from cudaenv.parse import frameworks as pf
from cudaenv.parse.symbols import namespace_selector, string_abi

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional, Sequence, Tuple

PROBE = "extensions"
MAX_PACKAGES = 48  # packages whose modules are read, at most
MAX_SCANNED = 600  # METADATA files read looking for torch in Requires-Dist, at most
MAX_MODULES = 16  # shared libraries read per package, at most
MAX_MISSING = 8  # missing symbol names kept per extension
METADATA_HEAD = 64 * 1024  # the header block of a METADATA file is at its top


def torch_abi_row(table: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``data/frameworks.json``'s ``torch-abi`` row: torch's libraries an extension links and its C++ namespaces."""
    if table is None:
        from cudaenv.core.resources import load_table

        table = load_table("frameworks")
    return next(row for row in table["rows"] if row.get("kind") == "torch-abi")


def prepare() -> None:
    """What :func:`probe_extensions` and the frameworks probe need before any file is read: their modules imported,
    their tables read, their patterns compiled (the doctor does this beside the static torch child, whose answer the
    probes wait for: issue 35). Reads no file of the inspected system."""
    import array  # noqa: F401 - the symbol tables' bulk pick (cudaenv.parse.elf_symbols._picked)

    from cudaenv.parse import elf_symbols, ldcache  # noqa: F401 - imported now
    from cudaenv.probes.frameworks import table_cuda_libraries, table_packages

    table_packages()
    table_cuda_libraries()
    namespace_selector(tuple(torch_abi_row()["namespaces"]))
    pf.requirement_name("torch")  # compiles the name pattern
    pf.record_libraries("x.so\n")  # and the library line's
    string_abi(("_ZSs",))  # and the old std::string's


def torch_pin(requires: Sequence[str]) -> Optional[str]:
    """``torch==2.6.0`` (no extra, no marker other than a platform one) -> ``2.6.0``: the torch a package pins."""
    for line in requires:
        head, _, marker = str(line).partition(";")
        if pf.requirement_name(head) != "torch" or "extra" in marker:
            continue
        spec = head.strip()[len("torch"):].strip().strip("()").strip()
        if spec.startswith("==") and "," not in spec and "*" not in spec:
            return spec[2:].strip() or None
    return None


def _candidates(host, site_packages: Sequence[str], rows: Dict[str, Dict[str, Any]], notes: List[Note], present=None,
                heads: Optional[Dict[str, str]] = None):
    """(name, site, dist-info) of each package to read: the table's torch extensions, then those requiring torch
    (``present``: the installed distributions of ``site_packages``, where the caller listed them already)."""
    from cudaenv.probes.frameworks import installed_distributions, read_metadata_head

    present = installed_distributions(host, site_packages) if present is None else present
    out = [(name, present[name]) for name, row in rows.items() if row.get("torch_extension") and name in present]
    picked = {name for name, _ in out}
    scanned = 0
    for name, where in present.items():
        if name in picked or name == "torch" or name in rows or name.startswith("nvidia-"):
            continue
        if scanned >= MAX_SCANNED:
            notes.append(Note(PROBE, M("more than %d packages: the rest were not read for a torch requirement", MAX_SCANNED)))
            break
        scanned += 1
        meta = read_metadata_head(host, host.join(where[0], where[1], "METADATA"), METADATA_HEAD, heads)
        if "torch" not in meta.lower():  # a requirement on torch spells its name (ASCII, any case): nothing to parse
            continue
        if any(pf.requirement_name(r) == "torch" for r in pf.parse_metadata(meta)[2]):
            out.append((name, where))
    if len(out) > MAX_PACKAGES:
        notes.append(Note(PROBE, M("%d packages build on torch: the first %d were checked", len(out), MAX_PACKAGES)))
    return out[:MAX_PACKAGES]


def _read(host, path: str, reader, *args):
    """``reader(stream, *args)`` on the inspected system's regular file ``path``; None when it cannot be opened."""
    from cudaenv.probes.elf import open_file

    stream = open_file(host, path)  # no Path built: pathlib stays off the doctor's path (issue 35)
    if stream is None:
        return None
    try:
        with stream:
            return reader(stream, *args)
    except OSError:
        return None


def _torch_libraries(host, torch: Torch, row: Dict[str, Any]) -> List[str]:
    folder = host.join(torch.location, "torch", "lib")
    return [host.join(folder, name) for name in row["libraries"] if host.is_file(host.join(folder, name))]


def _remembered(value) -> Optional[Dict[str, Any]]:
    """A memo entry's value (:mod:`cudaenv.probes.memo`, untrusted) as the fields it gives a record; None unless
    every field has its type and bound (``links_torch`` False: a library that does not link torch)."""
    if not isinstance(value, dict) or not isinstance(value.get("links_torch"), bool):
        return None
    if not value["links_torch"]:
        return {}
    strings = value.get("torch_needed"), value.get("missing")
    if not all(isinstance(x, list) and len(x) <= 64 and all(isinstance(n, str) and len(n) <= 4096 for n in x) for x in strings):
        return None
    if len(value["missing"]) > MAX_MISSING or not (value.get("cuda") is None or isinstance(value["cuda"], str) and value["cuda"].isdigit()
                                                  and len(value["cuda"]) <= 3):
        return None
    if not all(type(value.get(k)) is int and 0 <= value[k] <= 1 << 32 for k in ("checked", "missing_count")):
        return None
    if not all(value.get(k) is None or isinstance(value[k], bool) for k in ("cxx11_abi", "torch_cxx11_abi")):
        return None
    return {"torch_needed": tuple(value["torch_needed"]), "cuda": value["cuda"], "checked": value["checked"],
            "missing": tuple(value["missing"]), "missing_count": value["missing_count"], "cxx11_abi": value["cxx11_abi"],
            "torch_cxx11_abi": value["torch_cxx11_abi"], "complete": True}


def probe_extensions(host, torch: Torch, site_packages: Sequence[str], notes: List[Note],
                     rows: Optional[Dict[str, Dict[str, Any]]] = None, table: Optional[Dict[str, Any]] = None,
                     present: Optional[Dict[str, Tuple[str, str]]] = None, memo=None,
                     heads: Optional[Dict[str, str]] = None) -> Tuple[TorchExtension, ...]:
    """Every compiled torch extension of ``site_packages``, checked against ``torch`` (its ``location``'s
    torch/lib); () when torch is not installed there. ``present``: the installed distributions of ``site_packages``
    (:func:`cudaenv.probes.frameworks.installed_distributions`), where the caller listed them already; ``memo``: a
    :class:`cudaenv.probes.memo.Memo` whose entries stand for a library's read while it and torch's libraries keep
    their identities (complete answers only are stored); ``heads``: METADATA heads already read, by path."""
    from cudaenv.parse.elf_symbols import SYMBOL_BUDGET, parse_elf_defines, parse_elf_symbols
    from cudaenv.probes.frameworks import read_metadata_head, table_packages

    if not torch.installed or not torch.location:
        return ()
    row = torch_abi_row(table)
    rows = table_packages() if rows is None else rows
    torch_libs = _torch_libraries(host, torch, row)
    if not torch_libs:
        return ()
    names = set(row["libraries"])
    select = namespace_selector(tuple(row["namespaces"]))  # torch's names picked in the tables' bytes
    if memo is not None:
        from cudaenv.probes.memo import identity

        torch_keys = [identity(host.local(p)) for p in torch_libs]
    heads = {} if heads is None else heads

    # (package, version, requires, path, its symbols and NEEDED, undefined torch names, read whole, identities)
    found: List[Any] = []
    order: List[Tuple[str, str, Sequence[str], str, Any]] = []  # each extension: read now (an index in found) or remembered
    for package, (site, entry) in _candidates(host, site_packages, rows, notes, present, heads):
        meta = read_metadata_head(host, host.join(site, entry, "METADATA"), METADATA_HEAD, heads)
        _, version, requires = pf.parse_metadata(meta)
        record = host.read_text(host.join(site, entry, "RECORD"), limit=8 * 1024 * 1024) or ""
        modules = [p for p in pf.record_libraries(record) if not p.endswith((".dll", ".pyd"))][:MAX_MODULES]
        for rel in modules:
            path = host.join(site, *rel.split("/"))
            keys = None
            if memo is not None:
                keys = [identity(host.local(path))] + torch_keys
                kept = _remembered(memo.get("torch-extension:" + path, keys))
                if kept is not None:
                    if kept:
                        order.append((package, version, requires, path, kept))
                    continue
            undefined = _read(host, path, parse_elf_symbols, False, None, SYMBOL_BUDGET, names, select)  # one open per module
            if undefined is None:
                continue
            if not any(n in names for n in undefined.needed):
                if memo is not None:
                    memo.put("torch-extension:" + path, keys, {"links_torch": False})
                continue
            order.append((package, version, requires, path, len(found)))
            found.append((undefined, list(undefined.names), undefined.complete, keys))
    if not order:
        return ()
    exported = torch_abi = None
    left: set = set()
    unsure: set = set()
    if found:
        c10 = next((p for p in torch_libs if posixpath.basename(p) == "libc10.so"), None)
        exported = _read(host, c10, parse_elf_symbols, True, None, SYMBOL_BUDGET, None, select) if c10 else None
        torch_abi = string_abi(exported.names) if exported is not None else None
        # every name any extension needs, looked up once in each torch library (one open per library for the whole run)
        left = set().union(*[item[1] for item in found])
        for lib in torch_libs:
            if not left:
                break
            if lib == c10 and exported is not None and exported.complete:  # its exports in torch's namespaces, read whole
                left -= set(exported.names)  # above for the ABI: the answer without a lookup per name
                continue
            answer = _read(host, lib, parse_elf_defines, sorted(left))
            if answer is None:  # an unreadable library: what it may export stays unknown, never missing
                unsure |= left
                continue
            unsure |= left - set(answer)
            left -= {n for n, ok in answer.items() if ok}
    out: List[TorchExtension] = []
    for package, version, requires, path, item in order:
        if isinstance(item, dict):
            out.append(TorchExtension(package=package, version=version, object=path, torch_pin=torch_pin(requires), **item))
            continue
        dyn, wanted, complete, keys = found[item]
        missing = [n for n in wanted if n in left and n not in unsure] if left else []  # (all found: no step per name)
        cudart = [n for n in dyn.needed if n.startswith("libcudart.so.")]
        fields = {"torch_needed": tuple(n for n in dyn.needed if n in names),
                  "cuda": cudart[0].rsplit(".", 1)[-1] if cudart and cudart[0].rsplit(".", 1)[-1].isdigit() else None,
                  "checked": len(wanted), "missing": tuple(missing[:MAX_MISSING]), "missing_count": len(missing),
                  "cxx11_abi": string_abi(wanted), "torch_cxx11_abi": torch_abi,
                  "complete": complete and not (left and any(n in unsure for n in wanted if n in left))}
        if memo is not None and fields["complete"] and exported is not None and exported.complete:
            memo.put("torch-extension:" + path, keys, dict(fields, links_torch=True, torch_needed=list(fields["torch_needed"]),
                                                          missing=list(fields["missing"])))
        out.append(TorchExtension(package=package, version=version, object=path, torch_pin=torch_pin(requires), **fields))
    return tuple(out)
