"""The object graph a walked pickle describes: storages (from persistent ids), tensors (the rebuild calls torch
pickles), their paths, the dict-likes that hold them, devices outside the storage tuples, and the wrapper prefixes on
its keys. Pure.

Where each rebuild function keeps its storage, dtype and device is the project's checkpoint facts, section 1.4
(``T:_tensor.py:315-545``, ``T:_utils.py``).

The wrapper prefixes on a state_dict's keys and on its ``_metadata`` keys (:func:`prefix_findings`): ``module.``
(DataParallel/DDP), ``_orig_mod.`` (torch.compile's OptimizedModule), nested in either order, and a prefix that every
key shares.
"""

from __future__ import annotations

from cudaenv.checkpoint.names import WRAPPER_PREFIXES, holds_weights, is_weights_entry, wrapper_chain
from cudaenv.checkpoint.nodes import Call, Global, Persid, SDict, SList, SSet
from cudaenv.checkpoint.report import KeyPrefix
from cudaenv.checkpoint.tables import Facts, facts

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Any, Dict, List, Optional, Tuple


MAX_DEPTH = 200
MAX_TENSOR_LIST = 200_000

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
_SHORT = {name: name.rsplit(".", 1)[-1] for name in _TENSOR_FUNCS}
_DEVICE_FUNCS = frozenset(("torch._utils._rebuild_meta_tensor_no_storage", "torch._utils._rebuild_wrapper_subclass",
                           "torch._utils._rebuild_device_tensor_from_numpy"))  # the device is in their arguments
_WRAPPERS = ("torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
             "torch._utils._rebuild_device_tensor_from_cpu_tensor", "torch._tensor._rebuild_from_type_v2")


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

    def __init__(self, func: str = "", dtype: Optional[str] = None, shape: Tuple[int, ...] = (),
                 stride: Optional[Tuple[int, ...]] = None, offset: Any = 0, storage: Optional[Storage] = None):
        self.dtype = dtype
        self.shape = shape
        self.stride = stride
        self.offset = offset
        self.storage = storage
        self.device: Optional[str] = None  # a device outside the storage tuple
        self.func = func


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
            storage = dtype = None
            if si is not None and si < count and type(args[si]) is Persid:
                storage = self.by_persid.get(id(args[si])) or storage_of(args[si], self.f)
                if storage is not None:
                    storage = self.storages.get(storage.key, storage)
                    dtype = storage.dtype
            if di is not None and di < count:
                dtype = _dtype_name(args[di]) or dtype
            t = Tensor(_SHORT[name], dtype, (_ints(args[zi]) or ()) if zi is not None and zi < count else (),
                       _ints(args[ti]) if ti is not None and ti < count else None,
                       args[oi] if oi is not None and oi < count and isinstance(args[oi], int) else 0, storage)
            if name not in _DEVICE_FUNCS:
                return t
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
        tensor, devices outside storages. Only containers and calls are pushed (a string, a number, a global or a
        persistent id under them changes nothing), each with its parent's path and its key: the path is joined
        only when it is used (a tensor's entry, a candidate, a child's parent). A container's first children that
        are plain tensors (no state to look into: a state_dict's values) are listed at once, in order, without
        being pushed; the others are pushed as they come."""
        seen = set()
        walked = _WALKED
        entries = self.entries
        tensors = self.tensors
        tensor = self.tensor
        cache = self._cache
        todo: List[Tuple[Any, str, Any, int]] = [(root, "", _HERE, 0)]
        pop = todo.pop
        push = todo.append
        while todo:
            obj, path, key, depth = pop()
            if depth > MAX_DEPTH:
                continue
            kind = type(obj)
            if kind is Call:
                t = cache[id(obj)] if id(obj) in cache else tensor(obj)
                if t is not None:
                    if key is not _HERE:
                        path = key if not path and type(key) is str else _join(path, key)
                    if len(entries) < MAX_TENSOR_LIST:
                        entries.append((path, t))
                    tensors[id(t)] = t
                    for state in obj.states:  # a Parameter's state, a subclass' attributes
                        push((state, path, _HERE, depth + 1))
                    continue
                if obj.name == "torch.device":  # a device value of its own (a tensor's is its rebuild's argument)
                    d = device_string(obj)
                    if d:
                        self._extra(d, "device-value")
            elif kind not in walked:
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            depth += 1
            pairs = obj.pairs if kind is SDict or kind is Call else None
            items = obj if kind is tuple else obj.items if kind is not SDict else None
            children: List[Tuple[Any, Any, Any]] = []  # (child, key, its own path given)
            candidate = False
            if pairs:
                for k, v in pairs:
                    kv = type(v)
                    if kv is Call:
                        if not candidate and (cache[id(v)] if id(v) in cache else tensor(v)) is not None:
                            candidate = True
                    elif kv is SDict:
                        for _, x in v.pairs:
                            if type(x) in walked:
                                break
                        else:
                            continue  # a dict of plain values (a {'version': 1} of _metadata): nothing to look at
                    elif kv not in walked:
                        continue
                    children.append((v, k, False))
            if items:
                children.extend((v, i, False) for i, v in enumerate(items) if type(v) in walked)
            if kind is Call:
                children.extend((s, None, True) for s in obj.states if type(s) in walked)
                if type(obj.args) in walked:
                    children.append((obj.args, None, True))
                if type(obj.func) in walked:
                    children.append((obj.func, None, True))
            if not children and not candidate:
                continue  # nothing under it to list
            if key is not _HERE:
                path = key if not path and type(key) is str else _join(path, key)
            if candidate:
                self.candidates.append((path, obj))
            first = 0
            if depth <= MAX_DEPTH:
                for child, k, own in children:  # the plain tensors in front: listed here, in order
                    if own or type(child) is not Call or child.states:
                        break
                    t = cache[id(child)] if id(child) in cache else tensor(child)
                    if t is None:
                        break
                    if len(entries) < MAX_TENSOR_LIST:
                        entries.append((k if not path and type(k) is str else _join(path, k), t))
                    tensors[id(t)] = t
                    first += 1
            for child, k, own in reversed(children[first:]):
                push((child, path, _HERE if own else k, depth))


_HERE = object()  # (in Analysis.run) the path given is the object's own, no key to join
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


def storages_of(box) -> Dict[str, Storage]:
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
    return is_weights_entry(path) and holds_weights((v for _, v in pairs_of(obj)), lambda v: an.tensor(v) is not None)


# ------------------------------------------------------------------ wrapper prefixes on keys and _metadata keys

_WRAPPER_NAMES = tuple(w[:-1] for w in WRAPPER_PREFIXES)  # how a _metadata key (no trailing dot) starts


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
