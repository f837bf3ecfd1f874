"""Calls of allowed globals that fail when torch makes them (issue 26): the weights_only verdict is no when one of
them raises, whatever the globals are (an OrderedDict of an int, a torch.device of a string that is no device, a
rebuild function with too few arguments). Checked against torch 2.13 (tests/checkpoint/test_checkpoint_verdict_torch.py).

Only what is sure to raise is named; what depends on the machine (``torch.device(3)``: an accelerator must be there)
is not."""

from __future__ import annotations

from cudaenv.checkpoint.nodes import Blob, SDict, SList, SSet

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
CHECKED = frozenset(_ITERABLE_ONE + ("torch.device",) + tuple(_ARITY))  # the calls the walk records


def _not_iterable(value: Any) -> bool:
    return value is None or type(value) in (int, float, bool) or (type(value) is Blob and value.kind == "int")


def _bad_device(text: str) -> bool:
    kind, _, index = text.partition(":")
    if kind not in DEVICE_TYPES:
        return True
    if _ or index:
        return not index.isdigit() or not index.isascii() or (len(index) > 1 and index[0] == "0") or len(index) > 9
    return False


def problem(name: str, args: Any) -> Optional[str]:
    """Why torch's call of the allowed global ``name`` with ``args`` raises; None when it may not."""
    if type(args) is not tuple:
        return "its arguments are not a tuple" if _not_iterable(args) else None
    if name in _ITERABLE_ONE:
        if len(args) > 1:
            return "it takes at most 1 argument, it gets %d" % len(args)
        if args and _not_iterable(args[0]):
            return "its argument is a %s, which is not iterable" % type(args[0]).__name__
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
    return None


def _ints(value: Any) -> bool:
    return type(value) is tuple and all(type(v) in (int, bool) for v in value)
