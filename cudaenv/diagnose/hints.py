"""Hints (info): how to debug what comes next, shown once and briefly, only where they apply."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Sequence

F = c.make("hints")


def check(s, tables=None, found: Sequence = ()) -> List:
    out = []
    env = s.env_map
    # debugging hints only for a setup that works: with an error found, that error comes first
    cuda_torch = c.torch_cuda_build(s) and c.usable_gpu(s) and not any(f.severity == "error" for f in found)
    if env.get("CUDA_LAUNCH_BLOCKING", "").strip() not in ("", "0"):
        out.append(
            F(
                "launch-blocking-set",
                "info",
                M("CUDA_LAUNCH_BLOCKING=%s is set: every kernel launch waits", env["CUDA_LAUNCH_BLOCKING"]),
                M("It makes CUDA errors point at the right line, and makes everything slow. Keep it for debugging only."),
                ["unset CUDA_LAUNCH_BLOCKING"],
            )
        )
    elif cuda_torch:
        out.append(
            F(
                "hint-launch-blocking",
                "info",
                M("debugging a CUDA error: CUDA_LAUNCH_BLOCKING=1"),
                M("Kernels run asynchronously, so a CUDA error is reported at a later call; with CUDA_LAUNCH_BLOCKING=1 "
                  "the traceback points at the kernel that failed."),
                ["CUDA_LAUNCH_BLOCKING=1 %s your_script.py" % c.python_cmd(s)],
            )
        )
    multi = max(len(s.visible_devices.mapping) if s.visible_devices.cuda_visible_devices is not None else len(s.gpus),
                (s.torch.device_count or 0) if s.torch is not None else 0)
    if cuda_torch and multi > 1:
        if "TORCH_DISTRIBUTED_DEBUG" not in env:
            out.append(
                F(
                    "hint-distributed-debug",
                    "info",
                    M("debugging multi-GPU torch: TORCH_DISTRIBUTED_DEBUG=DETAIL"),
                    M("With %d GPUs visible, DDP hangs and mismatched collectives are explained by "
                      "TORCH_DISTRIBUTED_DEBUG=DETAIL (and TORCH_CPP_LOG_LEVEL=INFO).", multi),
                    ["TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO torchrun --nproc-per-node=%d your_script.py" % multi],
                )
            )
        if "NCCL_DEBUG" not in env:
            out.append(
                F(
                    "hint-nccl-debug",
                    "info",
                    M("debugging NCCL: NCCL_DEBUG=INFO"),
                    M("NCCL_DEBUG=INFO prints which transport (NVLink, PCIe, network) NCCL chose and why an "
                      "all-reduce hangs or fails%s.", (" (NCCL %s)" % s.torch.nccl) if s.torch is not None and s.torch.nccl else ""),
                    ["NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET torchrun --nproc-per-node=%d your_script.py" % multi],
                )
            )
    return out
