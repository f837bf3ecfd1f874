"""The environment variables that steer CUDA, NVIDIA tools, NCCL, cuDNN and torch, as they are set."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Mapping, Tuple

PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "TORCH_", "PYTORCH_", "CUDNN_")
NAMES = ("LD_LIBRARY_PATH", "WSL_DISTRO_NAME")  # the distro name fills the WSL fixes (wsl --set-version NAME 2)


def parse_env(env: Mapping[str, str], system: str = "linux") -> Tuple[Tuple[str, str], ...]:
    """The relevant ``(name, value)`` pairs of ``env``, sorted by name (Windows names compare case-insensitively)."""
    picked = []
    for name, value in env.items():
        key = name.upper() if system == "windows" else name
        if key.startswith(PREFIXES) or key in NAMES:
            picked.append((name, value))
    return tuple(sorted(picked))


def probe_env(host) -> Tuple[Tuple[str, str], ...]:
    return parse_env(host.env, host.system)
