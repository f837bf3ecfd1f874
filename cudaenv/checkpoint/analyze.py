"""From a container and its walked pickle to a :class:`~cudaenv.checkpoint.report.CheckpointReport`: tensors, storages,
devices, key prefixes, structure, globals and the weights_only verdict. Pure (the container is already read).

The verdict and its facts are :mod:`cudaenv.checkpoint.tables`; the tensors, storages and key prefixes
:mod:`cudaenv.checkpoint.graph`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Optional, Tuple

from cudaenv.checkpoint.reading import MENDED_BY_REWRITE, Container
from cudaenv.checkpoint.graph import Analysis, Storage, pairs_of, prefix_findings, storage_of
from cudaenv.checkpoint.names import EMA_ENTRIES, WEIGHTS_ENTRIES
from cudaenv.checkpoint.nodes import OPCODE_NAMES, Blob, Call, Global, SDict, SList, SSet, Unresolved, WalkResult
from cudaenv.checkpoint.pickle_vm import first_seen
from cudaenv.checkpoint.report import CheckpointReport, DeviceCount, DtypeCount, GlobalRef, KeyPrefix, TensorEntry
from cudaenv.checkpoint.tables import Facts, facts, judge, what_kind
from cudaenv.core.i18n import M, join

LIGHTNING_KEYS = ("pytorch-lightning_version", "optimizer_states", "lr_schedulers", "callbacks", "global_step")


def _describe(value: Any, an: Analysis) -> str:
    if an.tensor(value) is not None:
        t = an.tensor(value)
        return M("tensor %s %s", t.dtype or "?", list(t.shape))
    if isinstance(value, (SDict, Call)) and value.pairs:
        n = sum(1 for _, v in value.pairs if an.tensor(v) is not None)
        if n:
            return M("state_dict, %d tensors", n) if n * 2 >= len(value.pairs) else M("dict, %d keys (%d tensors)", len(value.pairs), n)
        return M("dict, %d keys", len(value.pairs))
    if isinstance(value, SDict):
        return M("dict, empty")
    if isinstance(value, SList):
        return M("list, %d items", len(value.items))
    if isinstance(value, Call):
        return M("%s object", value.name)
    if isinstance(value, tuple):
        return M("tuple, %d items", len(value))
    if isinstance(value, bool):
        return "bool %s" % value
    if isinstance(value, (int, float)):
        return "%s %s" % (type(value).__name__, value)
    if isinstance(value, str):
        return "str %r" % value[:40]
    if value is None:
        return "None"
    if isinstance(value, Blob):
        return M("%s, %d bytes", value.kind, value.length)
    return type(value).__name__


def _kind(root: Any, an: Analysis, f: Facts) -> Tuple[Optional[str], Optional[str]]:
    """(kind, whole-module class)."""
    if isinstance(root, Call) and an.tensor(root) is None and root.name not in ("collections.OrderedDict", "builtins.dict"):
        if isinstance(root.func, (Global, Unresolved)) and f.verdict(root.name) != "allowed":
            if root.kind in ("newobj", "reduce", "inst", "obj") and root.states:
                return M("whole module (torch.save(model))"), root.name
            return M("%s object", root.name), None
    if an.tensor(root) is not None:
        return M("a tensor"), None
    pairs = pairs_of(root)
    keys = [k for k, _ in pairs if isinstance(k, str)]
    if not pairs:
        return ("list" if isinstance(root, SList) else None), None
    if sum(1 for _, v in pairs if an.tensor(v) is not None) * 2 >= len(pairs):
        return "state_dict", None
    ema = any(k in EMA_ENTRIES for k in keys)
    if any(k in LIGHTNING_KEYS for k in keys):
        return (M("lightning checkpoint with EMA weights") if ema else M("lightning checkpoint")), None
    if any(k in WEIGHTS_ENTRIES for k in keys) or any("optim" in k for k in keys):
        return (M("training checkpoint with EMA weights") if ema else M("training checkpoint")), None
    return (M("EMA weights") if ema else "dict"), None


def build_report(box: Container, visible=None, with_tensors: bool = True) -> CheckpointReport:
    """The report of a read container (``visible``: this machine's :class:`VisibleGpus`, for the advice)."""
    f = facts()
    notes = list(box.notes)
    problems = list(box.problems)
    blocking = dict(box.blocking)  # problem -> kind, for the problems torch.load fails on (reading.BLOCKING)
    if box.format == "safetensors":
        from cudaenv.checkpoint.safetensors_report import safetensors_report

        return safetensors_report(box, notes, problems, visible)
    res = box.pickle
    unread = _unread(box, notes)
    if res is None:  # nothing to walk: not a checkpoint, or its data.pkl was not read (then nothing was checked)
        return _advised(CheckpointReport(
            box.path, box.format, box.size, archive_prefix=box.prefix, markers=tuple(box.markers.items()), weights_only=False,
            weights_only_reasons=_format_reasons(box) + unread + tuple(p for p in problems if p in blocking),
            notes=tuple(notes), inconsistencies=tuple(problems), mended_by_fix=_mended(problems, blocking), visible=visible,
            **judge(box, f)))
    notes.extend(res.notes)
    pickles = [res] + list(box.extra_pickles.values())
    storages: Dict[str, Storage] = {}
    by_persid: Dict[int, Storage] = {}
    other_persids = 0
    persid_why: Optional[str] = None  # the first storage persistent id torch's persistent_load raises on
    from cudaenv.checkpoint.nodes import persid_problem

    for r in pickles:
        for p in r.persids:
            s = storage_of(p, f)
            if s is not None:
                by_persid[id(p)] = s
                if persid_why is None:
                    persid_why = persid_problem(p.pid, box.format == "torch-legacy", f.storage_dtype)
            if s is None:
                other_persids += 1
                if isinstance(p.pid, tuple) and p.pid and p.pid[0] == "module":
                    notes.append(M("a legacy ('module', class, file, source) persistent id: the file carries module source"))
            elif s.key not in storages:
                storages[s.key] = s
    an = Analysis(f, storages, by_persid)
    an.run(res.root)
    for extra in box.extra_pickles.values():
        an.run(extra.root)

    # globals and the weights_only verdict
    gcount: Dict[str, int] = {}
    for r in pickles:
        for g, n in r.globals.items():
            gcount[g] = gcount.get(g, 0) + n
    grefs = tuple(GlobalRef(g, n, f.verdict(g)) for g, n in sorted(gcount.items()))
    reasons: List[str] = list(_format_reasons(box)) + list(unread)
    security: List[str] = []
    for g in grefs:
        if g.verdict == "allowed":
            continue
        torch_name = f.torch_name(g.name)
        name = g.name if torch_name == g.name else M("%s (torch reads it as %s)", g.name, torch_name)
        if g.verdict == "needs-import":
            reasons.append(M("GLOBAL %s is allowed only after `import %s` in the loading process", name, f.conditional[torch_name]))
        elif torch_name.rpartition(".")[0] in f.blocked:  # (T:_weights_only_unpickler.py:334, the module exactly)
            reasons.append(M("GLOBAL %s: torch blocks its module even when allowlisted", name))
        else:
            reasons.append(M("GLOBAL %s is not an allowed global", name))
        if g.verdict == "dangerous":
            security.append(M("%s (%d×): can run code or reach the system when loaded with weights_only=False", g.name, g.count))
        elif g.verdict == "blocked":
            security.append(M("%s (%d×): a blocked module; loading with weights_only=False runs it", g.name, g.count))
    outside = [g.name for g in grefs if g.verdict == "not-allowed"]
    if outside:
        names = ", ".join(outside[:10]) + (" ..." if len(outside) > 10 else "")
        security.append(M("%d global outside torch's weights_only allowlist, imported (and maybe called) by "
                          "torch.load(weights_only=False): %s", len(outside), names) if len(outside) == 1 else
                        M("%d globals outside torch's weights_only allowlist, imported (and maybe called) by "
                          "torch.load(weights_only=False): %s", len(outside), names))
    for r in pickles:
        bad_ops = [op for op in r.opcodes if op not in f.opcodes]
        if bad_ops:
            bad_ops = first_seen(r, bad_ops)  # in the order the pickle has them: torch stops at the first
            reasons.append(M("opcodes weights_only does not support: %s (torch: 'Unsupported operand %d')",
                             ", ".join("%s (%d)" % (OPCODE_NAMES.get(op, "0x%02x" % op), op) for op in bad_ops), bad_ops[0]))
        reasons.extend(_target_reasons(r, f))
        if not r.complete:
            reasons.append(M("the pickle is incomplete"))
    if other_persids:
        reasons.append(M("%d persistent ids that are not storages", other_persids))
    for r in pickles:
        key = _unhashable_key(r.root)
        if key is not None:
            reasons.append(M("a dict key is a %s, which is not hashable: torch raises building the dict", key))
            break
    if persid_why is not None:
        reasons.append(M("a storage persistent id torch's persistent_load cannot read: %s", persid_why))
    if res.computed_globals:
        security.append(M("%d STACK_GLOBAL with a computed (non-literal) name: a way to hide what is imported", res.computed_globals))
    weights_only = not reasons

    # storages: bytes, devices, record sizes
    devices: Dict[str, int] = {}
    total = 0
    for s in storages.values():
        devices[s.location or "?"] = devices.get(s.location or "?", 0) + 1
        if isinstance(s.nbytes, int):
            total += s.nbytes
        if s.dtype is None:
            notes.append(M("storage %s has an unknown storage type %s", s.key, s.type_name))
    if box.format in ("torch-zip", "torchscript"):
        from cudaenv.checkpoint.reading import record_refusals
        from cudaenv.host import open_regular

        with open_regular(box.path) as fh:
            refused = record_refusals(box, storages, fh)
        for s in storages.values():
            size = box.record_size(s.key)  # (refused: the records torch's reader cannot read, below)
            if size is None:
                text = M("storage %s has no data/%s record", s.key, s.key)
                problems.append(text)
                blocking[text] = "record-missing"
            elif s.key in refused:
                text = M("record data/%s: %s", s.key, refused[s.key])
                problems.append(text)
                blocking[text] = "record-refused"
            elif isinstance(s.nbytes, int) and size != s.nbytes:
                text = M("record data/%s is %d bytes, but its storage says %s elements × %s bytes = %d bytes",
                         s.key, size, s.numel, s.itemsize, s.nbytes)
                problems.append(text)
                blocking[text] = "record-size"
    elif box.format == "torch-legacy" and box.legacy_data_start is not None:
        for text, kind in _legacy_layout(box, storages):
            problems.append(text)
            if kind is not None:
                blocking[text] = kind
    for path, t in an.entries:
        s = t.storage
        if s is None or not isinstance(s.numel, int) or t.stride is None:  # (a 0-d tensor too: offset + 1)
            continue
        if 0 in t.shape:
            continue
        extent = t.offset + sum((d - 1) * st for d, st in zip(t.shape, t.stride)) + 1
        elements = s.numel
        if s.untyped and t.dtype in f.itemsize and f.itemsize[t.dtype]:
            elements = s.numel // f.itemsize[t.dtype]
        if extent > elements:
            text = M("tensor %s reaches element %d of storage %s, which has %d", path or "<top>", extent, s.key, elements)
            problems.append(text)
            blocking[text] = "view-bounds"  # set_ raises: 'out of bounds for storage of size ...'
    dev_counts = [DeviceCount(d, n) for d, n in sorted(devices.items(), key=lambda x: (-x[1], x[0]))]
    dev_counts += [DeviceCount(d, n, via) for (d, via), n in sorted(an.extra_devices.items())]

    dtypes: Dict[str, int] = {}
    for t in an.tensors.values():
        dtypes[t.dtype or "?"] = dtypes.get(t.dtype or "?", 0) + 1
    prefixes: List[KeyPrefix] = []
    for path, obj in an.candidates:
        prefixes.extend(prefix_findings(path, obj))

    kind, whole = _kind(res.root, an, f)
    if box.format == "torchscript":
        kind = M("TorchScript module")
        whole = None
    if whole is None and any(isinstance(p.pid, tuple) and p.pid and p.pid[0] == "module" for r in pickles for p in r.persids):
        whole = "(legacy module persistent id)"
        kind = M("whole module (torch.save(model))")
    structure = tuple(M("%s: EMA weights, %s", _short_key(k), _describe(v, an)) if k in EMA_ENTRIES else
                      M("%s: %s", _short_key(k), _describe(v, an)) for k, v in pairs_of(res.root)[:40])
    if len(pairs_of(res.root)) > 40:
        structure += (M("... %d more keys", len(pairs_of(res.root)) - 40),)
    if box.markers.get("byteorder") == "big":
        notes.append(M("the tensor bytes are big-endian (byteorder record): torch byteswaps them on load"))
    tensor_list = tuple(TensorEntry(p, t.dtype, t.shape, t.device or (t.storage.location if t.storage else None),
                                    t.storage.key if t.storage else None, t.offset) for p, t in an.entries) if with_tensors else ()
    report = CheckpointReport(
        box.path, box.format, box.size, whole_module=whole, archive_prefix=box.prefix, markers=tuple(box.markers.items()),
        kind=kind, structure=structure, key_count=len(pairs_of(res.root)), tensors=len(an.tensors), storages=len(storages), total_bytes=total,
        dtypes=tuple(DtypeCount(k, n) for k, n in sorted(dtypes.items(), key=lambda x: (-x[1], x[0]))), devices=tuple(dev_counts),
        prefixes=tuple(prefixes), globals=grefs, weights_only=weights_only and not any(p in blocking for p in problems),
        weights_only_reasons=tuple(reasons + [p for p in problems if p in blocking]), mended_by_fix=_mended(problems, blocking),
        security=tuple(security), inconsistencies=tuple(problems), notes=tuple(notes), visible=visible,
        tensor_list=tensor_list, **judge(box, f))
    if report.verdict == "inconclusive" and report.weights_only:  # never "yes" for what was not understood whole
        from cudaenv.model.record import replace

        report = replace(report, weights_only=False, weights_only_reasons=report.weights_only_reasons + tuple(
            M("inconclusive: %s: %s", r.where, r.why) for r in report.verdict_reasons[:3]))
    return _advised(report)


def _advised(report: CheckpointReport) -> CheckpointReport:
    from cudaenv.model.record import replace
    from cudaenv.checkpoint.advice import advise

    return replace(report, advice=tuple(advise(report)))


def _mended(problems: List[str], blocking: Dict[str, str]) -> Tuple[str, ...]:
    """The problems a rewrite by ``checkpoint fix`` mends (reading.MENDED_BY_REWRITE), in report order."""
    return tuple(p for p in problems if blocking.get(p) in MENDED_BY_REWRITE)


def _unread(box: Container, notes: List[str]) -> Tuple[str, ...]:
    """The weights_only reasons for pickles torch.load would run that were not read (a note for each: nothing in
    it was checked)."""
    for what in box.unread:
        notes.append(M("nothing in the unread pickle was checked (%s): its globals, opcodes, tensors and devices are "
                       "unknown, and it could call anything when loaded with weights_only=False", what))
    return tuple(M("not read, so not checked: %s", what) for what in box.unread)  # (starts with advice.UNREAD)


# torch's weights_only unpickler (T:_weights_only_unpickler.py:384-477, 578-583): what SETITEM(S), BUILD, APPEND(S),
# REDUCE and NEWOBJ may be applied to, and its words when they are not
_SETITEM_OK = ("SDict", "collections.OrderedDict", "collections.Counter")  # type dict, OrderedDict, Counter
# the allowed callables whose result's type is not an allowed global's, so BUILD on it is refused
_BUILD_REFUSED = {"_codecs.encode": "bytes", "torch.serialization._get_layout": "torch.layout"}
# allowed types without a __setstate__ or a __dict__: BUILD with a state that is not empty raises on them
# (T:_weights_only_unpickler.py:430-446: `if state: inst.__dict__.update(state)`)
_BUILD_NO_DICT = ("torch.device", "torch.Size", "builtins.complex", "builtins.set", "builtins.bytearray")
_TENSOR_MAKERS = ("torch._utils._rebuild", "torch._tensor._rebuild", "torch.Tensor", "torch.nn.parameter.Parameter")


_UNHASHABLE_CALLS = ("collections.OrderedDict", "builtins.set", "__builtin__.set", "collections.Counter",
                     "builtins.bytearray")


def _unhashable(key: Any) -> Optional[str]:
    if type(key) in (SDict, SList) or (type(key) is SSet and not key.frozen):
        return type(key).__name__[1:].lower()
    if type(key) is Call and getattr(key.func, "full", None) in _UNHASHABLE_CALLS:
        return key.func.full
    if type(key) is tuple:
        for k in key:
            why = _unhashable(k)
            if why is not None:
                return "tuple holding a " + why
    return None


def _unhashable_key(root: Any, limit: int = 2_000_000) -> Optional[str]:
    """The first dict key (SETITEM(S) pairs) that is surely unhashable (a dict, list, set, OrderedDict), by a bounded
    walk of the object graph; None when there is none."""
    todo, seen, n = [root], set(), 0
    walked = (SDict, Call, SList, SSet, tuple)
    while todo and n < limit:
        obj = todo.pop()
        n += 1
        t = type(obj)
        if t in walked:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
        else:
            continue
        pairs = obj.pairs if t in (SDict, Call) else ()
        for k, v in pairs:
            if type(k) in walked:  # (a str, int, ... key is hashable: no call for the common case)
                why = _unhashable(k)
                if why is not None:
                    return why
            if type(v) in walked:
                todo.append(v)
        if t is Call:
            todo.append(obj.args)
            todo.extend(obj.items)
        elif t in (SList, SSet):
            todo.extend(obj.items)
        elif t is tuple:
            todo.extend(obj)
    return None


def _target_reasons(r: WalkResult, f: Facts) -> List[str]:
    from cudaenv.checkpoint.nodes import problem

    out: List[str] = []
    for name, args in r.checked_calls[:100_000]:
        why = problem(name, args, f.itemsize)
        if why is not None:
            out.append(M("%s raises when torch calls it: %s", name, why) if name.startswith("NEWOBJ ") else
                       M("REDUCE of %s raises when torch calls it: %s", name, why))
            break  # (torch stops at the first)
    bad = [k for k in r.setitem_targets if f.torch_name(k) not in _SETITEM_OK]
    if bad:
        out.append(M("SETITEM on %s (torch: 'Can only SETITEM for dict, collections.OrderedDict, collections.Counter')",
                     join(", ", (what_kind(k) for k in bad[:3]))))
    bad = [k for k in r.build_targets if not ("." in k or k.startswith("<")) or f.torch_name(k) in _BUILD_REFUSED]
    bad += [k for k in r.build_filled if f.torch_name(k) in _BUILD_NO_DICT and k not in bad]
    if bad:
        out.append(M("BUILD on %s (torch: 'Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                     "`add_safe_globals`')", join(", ", (what_kind(k) for k in bad[:3]))))
    tensors = [k for k in r.build_targets if k.startswith(_TENSOR_MAKERS)]
    if tensors:  # Tensor.set_(*state), Parameter.__setstate__(state): cudaenv does not judge the state
        out.append(M("BUILD on the tensor %s makes: torch calls Tensor.set_ (or __setstate__) with its state, which "
                     "cudaenv cannot be sure it accepts", join(", ", (what_kind(k) for k in tensors[:3]))))
    for op, message in (("APPEND", "Can only append to lists"), ("APPENDS", "Can only extend lists")):
        kinds = [kind for on, kind in r.append_targets if on == op]
        if kinds:
            out.append(M("%s on %s (torch: '%s')", op, join(", ", (what_kind(k) for k in kinds[:3])), message))
    for op, message in (("REDUCE", "Trying to call reduce for unrecognized function"),
                        ("NEWOBJ", "Can only create new object for nn.Parameter or classes allowlisted via `add_safe_globals`")):
        kinds = [kind for on, kind in r.call_targets if on == op]
        if kinds:
            out.append(M("%s of %s, not a global (torch: '%s')", op, join(", ", (what_kind(k) for k in kinds[:3])), message))
    return out


def _short_key(k: Any) -> str:
    return k if isinstance(k, str) else repr(k) if isinstance(k, (int, float, bool)) or k is None else "<%s>" % type(k).__name__


def _format_reasons(box: Container) -> Tuple[str, ...]:
    if box.format == "torchscript":
        return (M("a TorchScript archive: torch.load(weights_only=True) refuses it ('Cannot use weights_only=True with "
                  "TorchScript archives'); torch.jit.load runs it"),)
    if box.format == "torch-legacy-tar":
        return (M("the legacy .tar format: torch.load(weights_only=True) refuses it"),)
    if box.format in ("unknown", "zip"):
        return (M("not a torch checkpoint"),)
    if box.format == "pickle":
        return (M("a plain pickle, not a torch.save file: torch.load reads its first pickle as the legacy magic number and "
                  "fails ('Invalid magic number; corrupt file?'), after running that pickle when weights_only=False"),)
    return ()


def _legacy_layout(box: Container, storages: Dict[str, Storage]) -> List[Tuple[str, Optional[str]]]:
    """The legacy data section: per storage (keys in the order of the keys list) an int64 count and the bytes; the
    counts are read (8 bytes each), never the data. Each problem with its blocking kind when torch.load fails on it
    (T:serialization.py:1898-1912: a listed key with no storage is a KeyError, a count that is not the storage's
    size 'storage has wrong byte size', a file that ends early an EOF; bytes after the section are never read)."""
    import struct

    from cudaenv.host.files import open_regular

    problems: List[Tuple[str, Optional[str]]] = []
    offset = box.legacy_data_start or 0
    with open_regular(box.path) as fh:
        for i, key in enumerate(box.legacy_keys):
            s = storages.get(key)
            if s is None or not isinstance(s.nbytes, int):
                problems.append((M("legacy storage %s is listed but no persistent id describes it", key), "record-missing"))
                return problems
            if i < 100_000:
                fh.seek(offset)
                raw = fh.read(8)
                if len(raw) < 8:
                    problems.append((M("the file ends before legacy storage %s (byte %d)", key, offset), "record-size"))
                    return problems
                count = struct.unpack("<q", raw)[0]
                if count != s.numel:
                    problems.append((M("legacy storage %s records %d elements, its persistent id says %s",
                                       key, count, s.numel), "record-size"))
            offset += 8 + s.nbytes
    if offset > box.size:
        problems.append((M("the legacy data section ends at byte %d, past the end of the file (%d bytes)",
                           offset, box.size), "record-size"))
    elif offset != box.size:
        problems.append((M("the legacy data section ends at byte %d, the file is %d bytes", offset, box.size), None))
    return problems


def inspect_file(path: str, visible=None, with_tensors: bool = True) -> CheckpointReport:
    """Read and analyse ``path`` (OSError when it cannot be opened).

    The cyclic garbage collector is off meanwhile: the walk and the graph make hundreds of thousands of objects (a
    20,000-tensor state_dict: 15-20% of the time went to collections that found nothing), and all of them live
    until the report is made; what is dropped on the way (a MARK's list) is freed by its reference count."""
    import gc

    from cudaenv.checkpoint.container import open_container

    collecting = gc.isenabled()
    gc.disable()
    try:
        return build_report(open_container(path), visible, with_tensors)
    finally:
        if collecting:
            gc.enable()
