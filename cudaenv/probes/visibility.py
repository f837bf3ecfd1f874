"""CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER from the host environment; the rules are in
:mod:`cudaenv.parse.visible_devices`."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Sequence

from cudaenv.parse.visible_devices import parse_visible_devices
from cudaenv.model.snapshot import Gpu, VisibleDevices


def probe_visibility(host, gpus: Sequence[Gpu]) -> VisibleDevices:
    """Read the two variables from the host environment."""
    return parse_visible_devices(host.env.get("CUDA_VISIBLE_DEVICES"), gpus, host.env.get("CUDA_DEVICE_ORDER"))
