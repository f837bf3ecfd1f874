"""``cudaenv verify``: real work on every device, in the user's interpreter, and across processes.

The work itself happens in child scripts (``cudaenv/_child/verify_device.py`` one process per device,
``verify_dist.py`` one process per torchrun rank), never in cudaenv's own process. The package, cut like
``toolkit/uninstall/``:

* :mod:`cudaenv.verify.records`: the results and the ``--json`` envelope (:class:`VerifyReport`);
* :mod:`cudaenv.verify.child`: the children's environment and command lines (``plan_*``) and what they printed,
  read back (``parse_*``);
* :mod:`cudaenv.verify.classify`: from what they printed to results (``*_result``), failures classified with
  :func:`cudaenv.explain.classify_error`, the same ids and advice as ``cudaenv explain`` and the doctor (pure);
* :mod:`cudaenv.verify.run`: the thin parts that run the children through ``host.run``, and :func:`run_verify`,
  the one call of ``cudaenv verify``.

Every name of the four is importable from ``cudaenv.verify``.
"""

from cudaenv.verify.child import (
    DEFAULT_DEVICE_TIMEOUT,
    DEFAULT_DIST_TIMEOUT,
    MARKER,
    NCCL_DEBUG_LINES,
    child_env,
    nccl_debug_lines,
    parse_device_output,
    parse_rank_events,
    plan_device_argv,
    plan_distributed_argv,
)
from cudaenv.verify.classify import (
    MACHINE_SECTIONS,
    NO_GPU_SYMPTOMS,
    classify,
    device_result,
    distributed_result,
    from_id,
    import_hang,
    map_physical,
    parse_devices_arg,
    problem_from_report,
)
from cudaenv.verify.records import (
    Check,
    ChildReport,
    DeviceResult,
    DevicesReport,
    DistributedReport,
    Problem,
    RankResult,
    VerifyError,
    VerifyReport,
)
from cudaenv.verify.run import Request, machine_problem, probe_facts, probe_info, run_verify, verify_devices, verify_distributed

__all__ = [
    "Check", "ChildReport", "DEFAULT_DEVICE_TIMEOUT", "DEFAULT_DIST_TIMEOUT", "DeviceResult", "DevicesReport",
    "DistributedReport", "MACHINE_SECTIONS", "MARKER", "NCCL_DEBUG_LINES", "NO_GPU_SYMPTOMS", "Problem", "RankResult",
    "Request", "VerifyError", "VerifyReport", "child_env", "classify", "device_result",
    "distributed_result", "from_id", "import_hang", "machine_problem", "map_physical", "nccl_debug_lines",
    "parse_device_output", "parse_devices_arg", "parse_rank_events", "plan_device_argv", "plan_distributed_argv",
    "probe_facts", "probe_info", "problem_from_report", "run_verify", "verify_devices", "verify_distributed",
]
