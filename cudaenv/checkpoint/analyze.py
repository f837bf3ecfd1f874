"""From a container and its walked pickle to a :class:`~cudaenv.checkpoint.report.CheckpointReport`: tensors, storages,
devices, key prefixes, structure, globals and the weights_only verdict. Pure (the container is already read).

The facts come from ``data/checkpoint_weights_only.json`` (what torch 2.13's weights_only unpickler accepts) and
``data/checkpoint_dtypes.json`` (storage classes, dtypes, bytes per element); where each rebuild function keeps its
storage, dtype and device is the project's checkpoint facts, section 1.4 (``T:_tensor.py:315-545``, ``T:_utils.py``).
"""

from __future__ import annotations

from functools import lru_cache
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List, Optional, Tuple

from cudaenv.checkpoint.container import Container
from cudaenv.checkpoint.pickle_vm import OPCODE_NAMES, Blob, Call, Global, Persid, SDict, SList, SSet, Unresolved
from cudaenv.checkpoint.report import CheckpointReport, DeviceCount, DtypeCount, GlobalRef, KeyPrefix, TensorEntry

WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel/DDP, torch.compile's OptimizedModule
_WRAPPER_NAMES = tuple(w[:-1] for w in WRAPPER_PREFIXES)  # how a _metadata key (no trailing dot) starts
MAX_DEPTH = 200
MAX_TENSOR_LIST = 200_000
STATE_DICT_NAMES = ("state_dict", "model", "model_state_dict", "model_state", "net", "network", "weights", "params")
EMA_NAMES = ("ema", "model_ema", "ema_model", "state_dict_ema", "ema_state_dict", "ema_state")
LIGHTNING_KEYS = ("pytorch-lightning_version", "optimizer_states", "lr_schedulers", "callbacks", "global_step")

# rebuild function -> (index of the storage, of the dtype argument, of the size, of the stride, of the offset)
_TENSOR_FUNCS = {
    "torch._utils._rebuild_tensor": (0, None, 2, 3, 1),
    "torch._utils._rebuild_tensor_v2": (0, None, 2, 3, 1),
    "torch._utils._rebuild_tensor_v3": (0, 6, 2, 3, 1),
    "torch._utils._rebuild_qtensor": (0, None, 2, 3, 1),
    "torch._utils._rebuild_meta_tensor_no_storage": (None, 0, 1, 2, None),
    "torch._utils._rebuild_wrapper_subclass": (None, 1, 2, 3, 4),
    "torch._utils._rebuild_device_tensor_from_numpy": (None, 1, None, None, None),
}
_WRAPPERS = ("torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
             "torch._utils._rebuild_device_tensor_from_cpu_tensor", "torch._tensor._rebuild_from_type_v2")


# ------------------------------------------------------------------ facts
class Facts:
    def __init__(self):
        from cudaenv.resources import load_table

        wo = load_table("checkpoint_weights_only")
        self.torch_version = wo.get("torch_version", "2.13.0")
        self.allowed = frozenset(r["name"] for r in wo["rows"] if r["kind"] == "global")
        self.opcodes = frozenset(r["code"] for r in wo["rows"] if r["kind"] == "opcode")
        self.blocked = tuple(r["name"] for r in wo["rows"] if r["kind"] == "blocked_module")
        self.conditional = {r["name"]: r["needs"] for r in wo["rows"] if r["kind"] == "conditional"}
        self.dangerous = tuple(r["name"] for r in wo["rows"] if r["kind"] == "dangerous")
        dt = load_table("checkpoint_dtypes")
        self.storage_dtype = {r["storage"]: (r["dtype"], r["itemsize"]) for r in dt["rows"] if r["storage"]}
        self.itemsize = {r["dtype"]: r["itemsize"] for r in dt["rows"]}

    def verdict(self, name: str) -> str:
        module = name.rsplit(".", 1)[0] if "." in name else name
        if name in self.allowed:
            return "allowed"
        if name in self.conditional:
            return "needs-import"
        if _under(name, self.dangerous):
            return "dangerous"
        if module.split(".")[0] in self.blocked or module in self.blocked:
            return "blocked"
        return "not-allowed"


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@lru_cache(maxsize=1)
def facts() -> Facts:
    return Facts()


# ------------------------------------------------------------------ storages and tensors
class Storage:
    __slots__ = ("key", "type_name", "dtype", "itemsize", "location", "numel", "nbytes", "untyped")

    def __init__(self, key, type_name, dtype, itemsize, location, numel, untyped):
        self.key = key
        self.type_name = type_name
        self.dtype = dtype
        self.itemsize = itemsize
        self.location = location
        self.numel = numel
        self.untyped = untyped
        self.nbytes = numel * itemsize if isinstance(numel, int) and itemsize else (numel if untyped else None)


def storage_of(p: Persid, f: Facts) -> Optional[Storage]:
    """The storage a ``('storage', type, key, location, numel[, view_metadata])`` persistent id names."""
    pid = p.pid
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
        return None
    kind, key, location, numel = pid[1], pid[2], pid[3], pid[4]
    name = kind.name if isinstance(kind, Global) else str(kind)
    untyped = name == "UntypedStorage"
    dtype, itemsize = f.storage_dtype.get(name, (None, None))
    if untyped:
        dtype, itemsize = "uint8", 1
    return Storage(key if isinstance(key, str) else str(key), name, dtype, itemsize,
                   location if isinstance(location, str) else None, numel if isinstance(numel, int) else None, untyped)


class Tensor:
    __slots__ = ("dtype", "shape", "stride", "offset", "storage", "device", "func")

    def __init__(self):
        self.dtype = None
        self.shape: Tuple[int, ...] = ()
        self.stride: Optional[Tuple[int, ...]] = None
        self.offset = 0
        self.storage: Optional[Storage] = None
        self.device: Optional[str] = None  # a device outside the storage tuple
        self.func = ""


def _dtype_name(value: Any) -> Optional[str]:
    if isinstance(value, Global) and value.module == "torch":
        return value.name
    return None


def _ints(value: Any) -> Optional[Tuple[int, ...]]:
    if type(value) is not tuple:
        if isinstance(value, Call) and value.name == "torch.Size" and isinstance(value.args, tuple) and value.args:
            value = value.args[0]
        if isinstance(value, SList):
            value = tuple(value.items)
        if not isinstance(value, tuple):
            return None
    for v in value:
        if type(v) is not int:  # the walk's ints are ints (a bool is not a size)
            return None
    return value


def device_string(value: Any) -> Optional[str]:
    """``'cuda:2'`` for a device string or a ``torch.device('cuda', 2)`` call."""
    if isinstance(value, str):
        return value
    if isinstance(value, Call) and value.name == "torch.device" and isinstance(value.args, tuple) and value.args:
        kind = value.args[0]
        if isinstance(kind, str):
            if len(value.args) > 1 and isinstance(value.args[1], int):
                return "%s:%d" % (kind, value.args[1])
            return kind
    return None


class Analysis:
    """The walk of the object graph: tensors by path, state_dict candidates, devices outside storages."""

    def __init__(self, f: Facts, storages: Dict[str, Storage], by_persid: Optional[Dict[int, Storage]] = None):
        self.f = f
        self.storages = storages
        self.by_persid = by_persid or {}  # id(Persid) -> its storage (the walk's persistent ids stay alive)
        self.tensors: Dict[int, Tensor] = {}  # id(call) -> tensor
        self.entries: List[Tuple[str, Tensor]] = []
        self.candidates: List[Tuple[str, Any]] = []  # (path, dict-like) with tensor values
        self.extra_devices: Dict[Tuple[str, str], int] = {}
        self._cache: Dict[int, Optional[Tensor]] = {}
        self._keep: List[Any] = []  # objects whose id() is cached

    def tensor(self, obj: Any, depth: int = 0) -> Optional[Tensor]:
        if not isinstance(obj, Call) or depth > 8:
            return None
        key = id(obj)
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = None
        self._keep.append(obj)
        t = self._tensor(obj, depth)
        self._cache[key] = t
        return t

    def _tensor(self, call: Call, depth: int) -> Optional[Tensor]:
        name = call.name
        args = call.args if isinstance(call.args, tuple) else ()
        spec = _TENSOR_FUNCS.get(name)
        if spec is not None:
            si, di, zi, ti, oi = spec
            count = len(args)
            t = Tensor()
            t.func = name.rsplit(".", 1)[-1]
            if si is not None and si < count and type(args[si]) is Persid:
                storage = self.by_persid.get(id(args[si])) or storage_of(args[si], self.f)
                if storage is not None:
                    storage = self.storages.get(storage.key, storage)
                    t.dtype = storage.dtype
                t.storage = storage
            if di is not None and di < count:
                t.dtype = _dtype_name(args[di]) or t.dtype
            if zi is not None and zi < count:
                t.shape = _ints(args[zi]) or ()
            if ti is not None and ti < count:
                t.stride = _ints(args[ti])
            if oi is not None and oi < count and isinstance(args[oi], int):
                t.offset = args[oi]
            if name == "torch._utils._rebuild_meta_tensor_no_storage":
                t.device = "meta"
                self._extra("meta", "meta")
            elif name == "torch._utils._rebuild_wrapper_subclass" and len(args) > 6:
                d = device_string(args[6])
                if d:
                    t.device = d
                    self._extra(d, "torch.device")
            elif name == "torch._utils._rebuild_device_tensor_from_numpy" and len(args) > 2:
                d = device_string(args[2])
                if d:
                    t.device = d
                    self._extra(d, "rebuild-argument")
            return t
        if name in _WRAPPERS:
            if name == "torch._tensor._rebuild_from_type_v2":
                if len(args) >= 3:
                    inner = Call(args[0], args[2])
                    self._keep.append(inner)
                    return self.tensor(inner, depth + 1)
                return None
            inner_t = self.tensor(args[0], depth + 1) if args else None
            if inner_t is not None and name == "torch._utils._rebuild_device_tensor_from_cpu_tensor" and len(args) > 2:
                d = device_string(args[2])
                if d:
                    inner_t.device = d
                    self._extra(d, "rebuild-argument")
            return inner_t
        return None

    def _extra(self, device: str, via: str) -> None:
        self.extra_devices[(device, via)] = self.extra_devices.get((device, via), 0) + 1

    def run(self, root: Any) -> None:
        """Every tensor under ``root`` with its path (depth first, children in order), every dict-like that holds a
        tensor, devices outside storages. Only containers and calls are pushed: a string, a number, a global or a
        persistent id under them changes nothing, so it gets no path."""
        seen = set()
        walked = _WALKED
        entries = self.entries
        tensors = self.tensors
        tensor = self.tensor
        cache = self._cache
        todo: List[Tuple[Any, str, int]] = [(root, "", 0)]
        pop = todo.pop
        push = todo.append
        while todo:
            obj, path, depth = pop()
            if depth > MAX_DEPTH:
                continue
            kind = type(obj)
            if kind is Call:
                key = id(obj)
                t = cache[key] if key in cache else tensor(obj)
                if t is not None:
                    if len(entries) < MAX_TENSOR_LIST:
                        entries.append((path, t))
                    tensors[id(t)] = t
                    for state in obj.states:  # a Parameter's state, a subclass' attributes
                        push((state, path, depth + 1))
                    continue
                if obj.name == "torch.device":
                    d = device_string(obj)
                    if d:
                        self._extra(d, "torch.device")
            elif kind not in walked:
                continue
            key = id(obj)
            if key in seen:
                continue
            seen.add(key)
            children: List[Tuple[Any, str]] = []
            pairs = obj.pairs if kind is SDict or kind is Call else None
            if pairs:
                for _, v in pairs:
                    if type(v) is Call and (cache[id(v)] if id(v) in cache else tensor(v)) is not None:
                        self.candidates.append((path, obj))
                        break
                children.extend((v, _join(path, k)) for k, v in pairs if type(v) in walked)
            items = obj if kind is tuple else obj.items if kind is not SDict else None
            if items:
                children.extend((v, _join(path, i)) for i, v in enumerate(items) if type(v) in walked)
            if kind is Call:
                children.extend((s, path) for s in obj.states if type(s) in walked)
                if type(obj.args) in walked:
                    children.append((obj.args, path))
                if type(obj.func) in walked:
                    children.append((obj.func, path))
            depth += 1
            for child, child_path in reversed(children):
                push((child, child_path, depth))


_WALKED = frozenset((SDict, SList, SSet, Call, tuple))  # what Analysis.run looks into (and a Call may be a tensor)


def _join(path: str, key: Any) -> str:
    k = key if isinstance(key, str) else str(key) if isinstance(key, (int, float, bool)) or key is None else "<%s>" % type(key).__name__
    return k if not path else "%s.%s" % (path, k)


def pairs_of(obj: Any) -> List[Tuple[Any, Any]]:
    return list(getattr(obj, "pairs", ()) or ()) if isinstance(obj, (SDict, Call)) else []


def metadata_keys(obj: Any) -> Optional[List[str]]:
    """The keys of a state_dict's ``_metadata`` (set by BUILD on the OrderedDict: ``{'_metadata': OrderedDict}``)."""
    if not isinstance(obj, Call):
        return None
    for state in obj.states:
        for k, v in pairs_of(state):
            if k == "_metadata":
                return [mk for mk, _ in pairs_of(v) if isinstance(mk, str)]
    return None


def wrapper_chain(key: str) -> str:
    """The wrapper prefixes at the start of ``key``, nested in any order: ``_orig_mod.module.`` for
    ``_orig_mod.module.conv1.weight``."""
    chain = ""
    while True:
        for w in WRAPPER_PREFIXES:
            if key.startswith(w):
                chain += w
                key = key[len(w):]
                break
        else:
            return chain


def prefix_findings(path: str, obj: Any) -> List[KeyPrefix]:
    keys = [k for k, _ in pairs_of(obj) if isinstance(k, str)]
    keys = list(dict.fromkeys(keys))
    found: List[KeyPrefix] = []
    counts: Dict[str, int] = {}
    for k in keys:
        if k.startswith(WRAPPER_PREFIXES):  # (most keys have none: the C test first)
            c = wrapper_chain(k)
            counts[c] = counts.get(c, 0) + 1
    for c, n in sorted(counts.items(), key=lambda x: -x[1]):
        found.append(KeyPrefix(path, c, n, len(keys)))
    if not counts and len(keys) > 1:
        first = keys[0].split(".", 1)[0] + "."
        if "." in keys[0] and all(k.startswith(first) for k in keys):
            found.append(KeyPrefix(path, first, len(keys), len(keys)))
    meta = metadata_keys(obj)
    if meta:
        mcounts: Dict[str, int] = {}
        for k in meta:
            if k.startswith(_WRAPPER_NAMES):
                c = wrapper_chain(k + ".")
                if c:
                    mcounts[c] = mcounts.get(c, 0) + 1
        for c, n in sorted(mcounts.items(), key=lambda x: -x[1]):
            found.append(KeyPrefix(path, c, n, len(meta), "_metadata"))
    return found


# ------------------------------------------------------------------ the report
def _describe(value: Any, an: Analysis) -> str:
    if an.tensor(value) is not None:
        t = an.tensor(value)
        return "tensor %s %s" % (t.dtype or "?", list(t.shape))
    if isinstance(value, (SDict, Call)) and value.pairs:
        n = sum(1 for _, v in value.pairs if an.tensor(v) is not None)
        if n:
            return "state_dict, %d tensors" % n if n * 2 >= len(value.pairs) else "dict, %d keys (%d tensors)" % (len(value.pairs), n)
        return "dict, %d keys" % len(value.pairs)
    if isinstance(value, SDict):
        return "dict, empty"
    if isinstance(value, SList):
        return "list, %d items" % len(value.items)
    if isinstance(value, Call):
        return "%s object" % value.name
    if isinstance(value, tuple):
        return "tuple, %d items" % len(value)
    if isinstance(value, bool):
        return "bool %s" % value
    if isinstance(value, (int, float)):
        return "%s %s" % (type(value).__name__, value)
    if isinstance(value, str):
        return "str %r" % value[:40]
    if value is None:
        return "None"
    if isinstance(value, Blob):
        return "%s, %d bytes" % (value.kind, value.length)
    return type(value).__name__


def _kind(root: Any, an: Analysis, f: Facts) -> Tuple[Optional[str], Optional[str]]:
    """(kind, whole-module class)."""
    if isinstance(root, Call) and an.tensor(root) is None and root.name not in ("collections.OrderedDict", "builtins.dict"):
        if isinstance(root.func, (Global, Unresolved)) and f.verdict(root.name) != "allowed":
            if root.kind in ("newobj", "reduce", "inst", "obj") and root.states:
                return "whole module (torch.save(model))", root.name
            return "%s object" % root.name, None
    if an.tensor(root) is not None:
        return "a tensor", None
    pairs = pairs_of(root)
    keys = [k for k, _ in pairs if isinstance(k, str)]
    if not pairs:
        return ("list" if isinstance(root, SList) else None), None
    if sum(1 for _, v in pairs if an.tensor(v) is not None) * 2 >= len(pairs):
        return "state_dict", None
    if any(k in LIGHTNING_KEYS for k in keys):
        return "lightning checkpoint", None
    if any(k in STATE_DICT_NAMES for k in keys) or any("optim" in k for k in keys):
        return "training checkpoint", None
    return "dict", None


def build_report(box: Container, visible=None, with_tensors: bool = True) -> CheckpointReport:
    """The report of a read container (``visible``: this machine's :class:`VisibleGpus`, for the advice)."""
    f = facts()
    notes = list(box.notes)
    problems = list(box.problems)
    if box.format == "safetensors":
        return _safetensors_report(box, notes, problems, visible)
    res = box.pickle
    if res is None:
        return CheckpointReport(box.path, box.format, box.size, archive_prefix=box.prefix, markers=tuple(box.markers.items()),
                                weights_only=False if box.format in ("unknown", "torch-legacy-tar", "zip") else None,
                                weights_only_reasons=_format_reasons(box), notes=tuple(notes), inconsistencies=tuple(problems),
                                visible=visible)
    notes.extend(res.notes)
    pickles = [res] + list(box.extra_pickles.values())
    storages: Dict[str, Storage] = {}
    by_persid: Dict[int, Storage] = {}
    other_persids = 0
    for r in pickles:
        for p in r.persids:
            s = storage_of(p, f)
            if s is not None:
                by_persid[id(p)] = s
            if s is None:
                other_persids += 1
                if isinstance(p.pid, tuple) and p.pid and p.pid[0] == "module":
                    notes.append("a legacy ('module', class, file, source) persistent id: the file carries module source")
            elif s.key not in storages:
                storages[s.key] = s
    an = Analysis(f, storages, by_persid)
    an.run(res.root)
    for name, extra in box.extra_pickles.items():
        an.run(extra.root)

    # globals and the weights_only verdict
    gcount: Dict[str, int] = {}
    for r in pickles:
        for g, n in r.globals.items():
            gcount[g] = gcount.get(g, 0) + n
    grefs = tuple(GlobalRef(g, n, f.verdict(g)) for g, n in sorted(gcount.items()))
    reasons: List[str] = list(_format_reasons(box))
    security: List[str] = []
    for g in grefs:
        if g.verdict == "allowed":
            continue
        if g.verdict == "needs-import":
            reasons.append("GLOBAL %s is allowed only after `import %s` in the loading process" % (g.name, f.conditional[g.name]))
        elif g.verdict == "blocked":
            reasons.append("GLOBAL %s: its module is blocked even when allowlisted" % g.name)
        else:
            reasons.append("GLOBAL %s is not an allowed global" % g.name)
        if g.verdict == "dangerous":
            security.append("%s (%d×): can run code or reach the system when loaded with weights_only=False" % (g.name, g.count))
        elif g.verdict == "blocked":
            security.append("%s (%d×): a blocked module; loading with weights_only=False runs it" % (g.name, g.count))
    outside = [g.name for g in grefs if g.verdict == "not-allowed"]
    if outside:
        security.append("%d global%s outside torch's weights_only allowlist, imported (and maybe called) by "
                        "torch.load(weights_only=False): %s" % (len(outside), "" if len(outside) == 1 else "s",
                                                               ", ".join(outside[:10]) + (" ..." if len(outside) > 10 else "")))
    for r in pickles:
        bad_ops = sorted(op for op in r.opcodes if op not in f.opcodes)
        if bad_ops:
            reasons.append("opcodes weights_only does not support: %s (torch: 'Unsupported operand %d')" % (
                ", ".join("%s (%d)" % (OPCODE_NAMES.get(op, "0x%02x" % op), op) for op in bad_ops), bad_ops[0]))
        bad_targets = sorted(k for k in r.setitem_targets if k not in ("SDict", "collections.OrderedDict", "collections.Counter"))
        if bad_targets:
            reasons.append("SETITEM on a %s (weights_only allows dicts only)" % bad_targets[0])
        if not r.complete:
            reasons.append("the pickle is incomplete")
    if other_persids:
        reasons.append("%d persistent ids that are not storages" % other_persids)
    if res.computed_globals:
        security.append("%d STACK_GLOBAL with a computed (non-literal) name: a way to hide what is imported" % res.computed_globals)
    weights_only = not reasons

    # storages: bytes, devices, record sizes
    devices: Dict[str, int] = {}
    total = 0
    for s in storages.values():
        devices[s.location or "?"] = devices.get(s.location or "?", 0) + 1
        if isinstance(s.nbytes, int):
            total += s.nbytes
        if s.dtype is None:
            notes.append("storage %s has an unknown storage type %s" % (s.key, s.type_name))
    if box.format in ("torch-zip", "torchscript"):
        for s in storages.values():
            size = box.record_size(s.key)
            if size is None:
                problems.append("storage %s has no data/%s record" % (s.key, s.key))
            elif isinstance(s.nbytes, int) and size != s.nbytes:
                problems.append("record data/%s is %d bytes, but its storage says %s elements × %s bytes = %d bytes"
                                % (s.key, size, s.numel, s.itemsize, s.nbytes))
    elif box.format == "torch-legacy" and box.legacy_data_start is not None:
        problems.extend(_legacy_layout(box, storages))
    for path, t in an.entries:
        s = t.storage
        if s is None or not isinstance(s.numel, int) or t.stride is None or not t.shape:
            continue
        if 0 in t.shape:
            continue
        extent = t.offset + sum((d - 1) * st for d, st in zip(t.shape, t.stride)) + 1
        elements = s.numel
        if s.untyped and t.dtype in f.itemsize and f.itemsize[t.dtype]:
            elements = s.numel // f.itemsize[t.dtype]
        if extent > elements:
            problems.append("tensor %s reaches element %d of storage %s, which has %d" % (path or "<top>", extent, s.key, elements))
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
        kind = "TorchScript module"
        whole = None
    if whole is None and any(isinstance(p.pid, tuple) and p.pid and p.pid[0] == "module" for r in pickles for p in r.persids):
        whole = "(legacy module persistent id)"
        kind = "whole module (torch.save(model))"
    structure = tuple("%s: %s" % (_short_key(k), _describe(v, an)) for k, v in pairs_of(res.root)[:40])
    if len(pairs_of(res.root)) > 40:
        structure += ("... %d more keys" % (len(pairs_of(res.root)) - 40),)
    if box.markers.get("byteorder") == "big":
        notes.append("the tensor bytes are big-endian (byteorder record): torch byteswaps them on load")
    tensor_list = tuple(TensorEntry(p, t.dtype, t.shape, t.device or (t.storage.location if t.storage else None),
                                    t.storage.key if t.storage else None, t.offset) for p, t in an.entries) if with_tensors else ()
    report = CheckpointReport(
        box.path, box.format, box.size, whole_module=whole, archive_prefix=box.prefix, markers=tuple(box.markers.items()),
        kind=kind, structure=structure, tensors=len(an.tensors), storages=len(storages), total_bytes=total,
        dtypes=tuple(DtypeCount(k, n) for k, n in sorted(dtypes.items(), key=lambda x: (-x[1], x[0]))), devices=tuple(dev_counts),
        prefixes=tuple(prefixes), globals=grefs, weights_only=weights_only and not problems_block(problems),
        weights_only_reasons=tuple(reasons + [p for p in problems if problems_block([p])]),
        security=tuple(security), inconsistencies=tuple(problems), notes=tuple(notes), visible=visible,
        tensor_list=tensor_list)
    from cudaenv.checkpoint.advice import advise

    from cudaenv._record import replace

    return replace(report, advice=tuple(advise(report)))


def problems_block(problems: List[str]) -> bool:
    """Container problems that make torch.load fail whatever the pickle says (mixed prefixes, wrong record sizes)."""
    return any("archive prefixes" in p or "record data/" in p or "has no data/" in p for p in problems)


def _short_key(k: Any) -> str:
    return k if isinstance(k, str) else repr(k) if isinstance(k, (int, float, bool)) or k is None else "<%s>" % type(k).__name__


def _format_reasons(box: Container) -> Tuple[str, ...]:
    if box.format == "torchscript":
        return ("a TorchScript archive: torch.load(weights_only=True) refuses it ('Cannot use weights_only=True with "
                "TorchScript archives'); torch.jit.load runs it",)
    if box.format == "torch-legacy-tar":
        return ("the legacy .tar format: torch.load(weights_only=True) refuses it",)
    if box.format in ("unknown", "zip"):
        return ("not a torch checkpoint",)
    return ()


def _legacy_layout(box: Container, storages: Dict[str, Storage]) -> List[str]:
    """The legacy data section: per storage (keys in the order of the keys list) an int64 count and the bytes; the
    counts are read (8 bytes each), never the data."""
    import struct

    from cudaenv.host import open_regular

    problems: List[str] = []
    offset = box.legacy_data_start or 0
    with open_regular(box.path) as fh:
        for i, key in enumerate(box.legacy_keys):
            s = storages.get(key)
            if s is None or not isinstance(s.nbytes, int):
                problems.append("legacy storage %s is listed but no persistent id describes it" % key)
                return problems
            if i < 100_000:
                fh.seek(offset)
                raw = fh.read(8)
                if len(raw) < 8:
                    problems.append("the file ends before legacy storage %s (byte %d)" % (key, offset))
                    return problems
                count = struct.unpack("<q", raw)[0]
                if count != s.numel:
                    problems.append("legacy storage %s records %d elements, its persistent id says %s" % (key, count, s.numel))
            offset += 8 + s.nbytes
    if offset != box.size:
        problems.append("the legacy data section ends at byte %d, the file is %d bytes" % (offset, box.size))
    return problems


_ST_DTYPES = {"F64": ("float64", 8), "F32": ("float32", 4), "F16": ("float16", 2), "BF16": ("bfloat16", 2),
              "I64": ("int64", 8), "I32": ("int32", 4), "I16": ("int16", 2), "I8": ("int8", 1), "U8": ("uint8", 1),
              "U16": ("uint16", 2), "U32": ("uint32", 4), "U64": ("uint64", 8), "BOOL": ("bool", 1),
              "F8_E4M3": ("float8_e4m3fn", 1), "F8_E5M2": ("float8_e5m2", 1), "C64": ("complex64", 8)}


def _safetensors_report(box: Container, notes, problems, visible) -> CheckpointReport:
    header = box.safetensors or {}
    data_len = box.size - (box.safetensors_data_start or 0)
    dtypes: Dict[str, int] = {}
    total = 0
    count = 0
    entries: List[TensorEntry] = []
    keys: List[str] = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            problems.append("header entry %s is not an object" % name[:80])
            continue
        count += 1
        keys.append(name)
        st = info.get("dtype")
        shape = info.get("shape")
        offs = info.get("data_offsets")
        dtype, size = _ST_DTYPES.get(st, (str(st)[:20], None))
        dtypes[dtype] = dtypes.get(dtype, 0) + 1
        shape_t = tuple(shape) if isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape) else ()
        if isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) for o in offs):
            begin, end = offs
            total += max(0, end - begin)
            if end < begin or end > data_len:
                problems.append("tensor %s has data offsets %d..%d outside the %d data bytes" % (name[:80], begin, end, data_len))
            elif size is not None:
                n = 1
                for d in shape_t:
                    n *= d
                if n * size != end - begin:
                    problems.append("tensor %s is %s %s = %d bytes, but its data offsets give %d" % (name[:80], dtype, list(shape_t), n * size, end - begin))
        else:
            problems.append("tensor %s has no valid data_offsets" % name[:80])
        if len(entries) < MAX_TENSOR_LIST:
            entries.append(TensorEntry(name, dtype, shape_t, None, None, 0))
    sd = SDict([(k, None) for k in keys])
    prefixes = prefix_findings("", sd)
    notes.append("safetensors stores no device: tensors go where the loader puts them (safe_open(..., device=...))")
    report = CheckpointReport(box.path, "safetensors", box.size, markers=tuple(box.markers.items()), kind="state_dict",
                              tensors=count, storages=count, total_bytes=total,
                              dtypes=tuple(DtypeCount(k, n) for k, n in sorted(dtypes.items(), key=lambda x: (-x[1], x[0]))), prefixes=tuple(prefixes),
                              weights_only=None, notes=tuple(notes), inconsistencies=tuple(problems), visible=visible,
                              tensor_list=tuple(entries))
    from cudaenv._record import replace
    from cudaenv.checkpoint.advice import advise

    return replace(report, advice=tuple(advise(report)))


def inspect_file(path: str, visible=None, with_tensors: bool = True) -> CheckpointReport:
    """Read and analyse ``path`` (OSError when it cannot be opened)."""
    from cudaenv.checkpoint.container import open_container

    return build_report(open_container(path), visible, with_tensors)


def storages_of(box: Container) -> Dict[str, Storage]:
    """Every storage the container's pickle names, by key (the first persistent id of a key wins)."""
    f = facts()
    found: Dict[str, Storage] = {}
    if box.pickle is not None:
        for p in box.pickle.persids:
            s = storage_of(p, f)
            if s is not None and s.key not in found:
                found[s.key] = s
    return found


def graph(root: Any, storages: Dict[str, Storage]) -> Analysis:
    """The walk of ``root``'s object graph (tensors, state_dict candidates with their paths)."""
    an = Analysis(facts(), storages)
    an.run(root)
    return an


def is_model_state_dict(path: str, obj: Any, an: Analysis) -> bool:
    """A state_dict of a model (not an optimizer's per-parameter state): the top level or a known top-level key,
    at least half of its values tensors."""
    pairs = pairs_of(obj)
    if not pairs or sum(1 for _, v in pairs if an.tensor(v) is not None) * 2 < len(pairs):
        return False
    return path == "" or path in STATE_DICT_NAMES or path in EMA_NAMES
