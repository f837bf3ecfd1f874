"""Calls of allowed globals that fail when torch makes them (issue 26): the weights_only verdict is no when one of
them raises, whatever the globals are (an OrderedDict of an int, a torch.device of a string that is no device, a
rebuild function with too few arguments). Checked against torch 2.13 (tests/checkpoint/test_checkpoint_verdict_torch.py).

Only what is sure to raise is named; what depends on the machine (``torch.device(3)``: an accelerator must be there)
is not."""

from __future__ import annotations

from cudaenv.checkpoint.nodes import Blob, Call, Global, Persid, SDict, SList, SSet

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing imports re)
    from typing import Any, Optional

# the device types torch 2.13's torch.device accepts (its error message lists them: c10/core/Device.cpp)
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_ITERABLE_ONE = ("collections.OrderedDict", "builtins.set", "collections.Counter", "torch.Size")
# rebuild function -> (fewest, most) arguments (T:_utils.py: their signatures)
_ARITY = {"torch._utils._rebuild_tensor_v2": (6, 7), "torch._utils._rebuild_tensor_v3": (7, 8),
          "torch._utils._rebuild_parameter": (3, 3), "torch._utils._rebuild_parameter_with_state": (4, 4)}
# the legacy storage classes: torch's weights_only unpickler hands a StorageType for them, which is not callable
# (T:_weights_only_unpickler.py:202-209, T:serialization.py:1964)
_STORAGE_CLASSES = tuple("torch.%sStorage" % t for t in (
    "BFloat16", "Bool", "Byte", "Char", "ComplexDouble", "ComplexFloat", "Double", "Float", "Half", "Int", "Long",
    "QInt32", "QInt8", "QUInt2x4", "QUInt4x2", "QUInt8", "Short")) + tuple("torch.cuda.%sStorage" % t for t in (
    "BFloat16", "Bool", "Byte", "Char", "ComplexDouble", "ComplexFloat", "Double", "Float", "Half", "Int", "Long",
    "Short"))
# the names protocol 2 pickles spell (torch reads them through pickle's IMPORT_MAPPING: __builtin__ -> builtins)
_ALIASES = {"__builtin__.set": "builtins.set"}
# the allowed globals that are classes torch's NEWOBJ can make (cls.__new__(cls, *args), T:_weights_only_unpickler.py:384-400);
# NEWOBJ of any other (a function, a dtype, a StorageType) raises
NEWOBJ_OK = frozenset(("collections.OrderedDict", "builtins.set", "__builtin__.set", "collections.Counter", "torch.Size",
                       "torch.device", "builtins.complex", "builtins.bytearray", "torch.nn.parameter.Parameter",
                       "torch.Tensor", "torch.storage.UntypedStorage"))
NO_EMPTY = frozenset(tuple(_ARITY) + _STORAGE_CLASSES)  # recorded even with no arguments: they raise on ()
CHECKED = frozenset(_ITERABLE_ONE + ("torch.device",) + tuple(_ARITY) + _STORAGE_CLASSES + tuple(_ALIASES))  # the calls the walk records


def _not_iterable(value: Any) -> bool:
    return value is None or type(value) in (int, float, bool) or (type(value) is Blob and value.kind == "int")


def _bad_device(text: str) -> bool:
    kind, _, index = text.partition(":")
    if kind not in DEVICE_TYPES:
        return True
    if _ or index:
        return not index.isdigit() or not index.isascii() or (len(index) > 1 and index[0] == "0") or len(index) > 9
    return False


def problem(name: str, args: Any, dtypes: Any = ()) -> Optional[str]:
    """Why torch's call of the allowed global ``name`` with ``args`` raises; None when it may not. ``dtypes``: the
    dtype names (``float32``) a ``_rebuild_tensor_v3`` may name."""
    if name.startswith("NEWOBJ "):
        return "NEWOBJ of %s, which is not a class torch makes an instance of" % name[7:]
    name = _ALIASES.get(name, name)
    if name in _STORAGE_CLASSES:
        return "a storage class is a StorageType under weights_only, which cannot be called"
    if type(args) is not tuple:
        return "its arguments are not a tuple" if _not_iterable(args) else None
    if name in _ITERABLE_ONE:
        if len(args) > 1:
            return "it takes at most 1 argument, it gets %d" % len(args)
        if args and _not_iterable(args[0]):
            return "its argument is a %s, which is not iterable" % type(args[0]).__name__
        if args and name == "collections.OrderedDict" and not _pairs(args[0]):
            return "its argument is neither a dict nor a sequence of pairs cudaenv can read"
        if args and name in ("builtins.set", "collections.Counter") and not _hashables(args[0]):
            return "its argument holds items cudaenv cannot be sure are hashable"
        if name == "torch.Size" and args and type(args[0]) in (str, SDict, SSet):
            return "its argument holds no sizes"
        return None
    if name == "torch.device":
        if not args or len(args) > 2:
            return "it takes 1 or 2 arguments, it gets %d" % len(args)
        first = args[0]
        if first is None or type(first) in (float, bool, tuple, SList, SDict):
            return "its first argument is a %s, not a device string or index" % type(first).__name__
        if type(first) is str and _bad_device(first):
            return "%r is not a device string torch reads" % first[:40]
        return None
    span = _ARITY.get(name)
    if span is not None and not span[0] <= len(args) <= span[1]:
        return "it takes %s arguments, it gets %d" % ("%d" % span[0] if span[0] == span[1] else "%d or %d" % span, len(args))
    if name in ("torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3"):
        # set_(storage, offset, size, stride): an int and two tuples of ints, or it raises 'invalid combination'
        offset, size, stride = args[1], args[2], args[3]
        if type(offset) not in (int, bool) or not _ints(size) or not _ints(stride):
            return "its storage offset, size or stride is not an int and tuples of ints"
        if len(size) != len(stride):  # set_: 'unequal size length (5) and stride length (4)'
            return "its size has %d dimensions and its stride %d" % (len(size), len(stride))
        if type(args[0]) is not Persid:  # _rebuild_tensor reads storage.dtype and hands it to set_
            return "its storage argument is a %s, not a storage" % type(args[0]).__name__
        if name.endswith("_v3") and not (type(args[6]) is Global and args[6].module == "torch"
                                         and args[6].name in dtypes):  # torch.empty(dtype=...)
            return "its dtype argument is not a torch dtype"
        if type(args[4]) is not bool:  # tensor.requires_grad = ...: 'requires_grad must be a bool'
            return "its requires_grad is a %s, not a bool" % type(args[4]).__name__
    return None


def _ints(value: Any) -> bool:
    return type(value) is tuple and all(type(v) in (int, bool) for v in value)


# the storage classes torch 2.13's weights_only unpickler hands a persistent id (T:_weights_only_unpickler.py:202-209:
# a StorageType for the legacy classes, whose .dtype the persistent_load reads; UntypedStorage itself, which only the
# zip reader takes: T:serialization.py:2176, while the legacy one reads its .dtype and fails, :1818)
_STORAGE_MODULES = ("torch", "torch.cuda")
UNTYPED = "torch.storage.UntypedStorage"


def persid_problem(pid: Any, legacy: bool, storage_names: Any) -> Optional[str]:
    """Why torch's ``persistent_load`` raises on the storage persistent id ``pid`` (``('storage', type, key, location,
    numel)``, legacy files one more: ``view_metadata``), or where cudaenv cannot be sure it does not; None when the
    id has the one shape torch reads (T:serialization.py:1802-1865 legacy, 2163-2195 zip). ``storage_names``: the
    legacy storage class names (``FloatStorage``)."""
    want = 6 if legacy else 5
    if type(pid) is not tuple or len(pid) != want:
        return "a storage persistent id of %s items, where torch unpacks %d" % (
            len(pid) if type(pid) is tuple else "not a tuple:", want)
    kind, key, location, numel = pid[1], pid[2], pid[3], pid[4]
    if type(kind) is not Global or not (
            (kind.module in _STORAGE_MODULES and kind.name in storage_names) or (not legacy and kind.full == UNTYPED)):
        return "its storage type is %s, not a storage class torch reads a dtype from" % (
            kind.full if type(kind) is Global else "a " + type(kind).__name__)
    if type(key) not in (str, int):
        return "its storage key is a %s (torch looks it up in a dict and names a record with it)" % type(key).__name__
    if type(location) is not str:
        return "its location is a %s, not a device string" % type(location).__name__
    if type(numel) is not int:
        return "its element count is a %s, not an int" % type(numel).__name__
    if legacy:
        view = pid[5]
        if view is not None and not (type(view) is tuple and len(view) == 3 and type(view[0]) in (str, int)
                                     and type(view[1]) is int and type(view[2]) is int):
            return "its view (key, offset, size) is not a key and two ints"
    return None


_HASHABLE = (str, int, float, bool, type(None), bytes)


def _items(value: Any) -> Any:
    """The items of a tuple or a list the pickle built; None for anything else."""
    if type(value) is tuple:
        return value
    if type(value) is SList:
        return value.items
    return None


def _pairs(value: Any) -> bool:
    """A dict, an OrderedDict, or a tuple or list of 2-tuples: what ``OrderedDict(value)`` surely reads."""
    if type(value) is SDict or (type(value) is Call and getattr(value.func, "full", "") == "collections.OrderedDict"):
        return True
    items = _items(value)
    return items is not None and all(type(i) is tuple and len(i) == 2 and _hashable(i[0]) for i in items)


def _hashable(value: Any) -> bool:
    if type(value) is tuple:
        return all(_hashable(v) for v in value)
    return type(value) in _HASHABLE


def _hashables(value: Any) -> bool:
    """A tuple or list of plain hashable items (or a str): what ``set(value)`` surely reads."""
    if type(value) is str:
        return True
    items = _items(value)
    return items is not None and all(_hashable(i) for i in items)
