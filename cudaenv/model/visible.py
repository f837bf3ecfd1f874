"""Which GPUs CUDA programs see, and which GPUs a build is planned for: the one rule diagnose and recommend share.

CUDA_VISIBLE_DEVICES unset: every GPU nvidia-smi lists. Set: the GPUs its parsed mapping names, in CUDA's order
(none when it is empty or its first entry is invalid). A setting that hides every GPU is the user's to fix (the
doctor's ``visible-devices-*`` findings); it never turns a GPU machine into a CPU plan: the GPUs of the machine
decide the build then.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Tuple


def visible_gpus(s: Any) -> Tuple[Any, ...]:
    """The GPUs CUDA programs see here, in CUDA's numbering (all when CUDA_VISIBLE_DEVICES is unset)."""
    gpus = tuple(getattr(s, "gpus", ()) or ())
    v = getattr(s, "visible_devices", None)
    if v is None or v.cuda_visible_devices is None:
        return gpus
    by_index = {g.index: g for g in gpus}
    return tuple(by_index[m.physical] for m in v.mapping if m.physical in by_index)


def hides_every_gpu(s: Any) -> bool:
    """True when the machine has GPUs and CUDA_VISIBLE_DEVICES leaves none of them visible."""
    return bool(getattr(s, "gpus", ())) and not visible_gpus(s)


def planned_gpus(s: Any) -> Tuple[Any, ...]:
    """The GPUs a torch build must run on: the visible ones; every GPU of the machine when none is visible."""
    return visible_gpus(s) or tuple(getattr(s, "gpus", ()) or ())
