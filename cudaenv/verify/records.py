"""The records of ``cudaenv verify``: what a device, a rank and the toolkit check gave, and the ``--json`` envelope.

:class:`ChildReport` is the working value of one device child's output (never written as JSON).
"""

from typing import Any, Dict, Optional, Sequence, Tuple

from cudaenv.model.record import Record, factory


class Check(Record):
    name: str
    ok: bool
    seconds: float = 0.0
    detail: str = ""
    skipped: bool = False



class VerifyError(Record):
    """Why a device (or rank, or the whole run) failed; ``id`` is an error_patterns id, or None if unrecognised."""

    id: Optional[str]
    message: str
    stage: Optional[str] = None
    title: Optional[str] = None
    explanation: Optional[str] = None
    details: Tuple[str, ...] = ()
    advice: Tuple[str, ...] = ()  # prose that may name a command (an explain row's advice)
    fix: Tuple[str, ...] = ()  # shell lines to paste, ``# why`` comments among them (a doctor finding's fix)



class DeviceResult(Record):
    _json_omit = ("output_tail",)
    _json_lossy = True  # seconds rounded

    logical: Optional[int]  # cuda:N; None for --cpu
    physical: Optional[int] = None  # nvidia-smi index of the GPU behind cuda:N
    name: Optional[str] = None
    capability: Optional[str] = None
    ok: bool = False
    checks: Tuple[Check, ...] = ()
    tflops: Optional[float] = None
    gbps: Optional[float] = None
    memory_free_mib: Optional[int] = None
    memory_total_mib: Optional[int] = None
    uuid: Optional[str] = None
    seconds: float = 0.0
    error: Optional[VerifyError] = None
    output_tail: str = ""  # the child's stderr tail when it failed

    @property
    def device(self) -> str:
        return "cpu" if self.logical is None else "cuda:%d" % self.logical

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        """JSON order: ``device`` after ``logical``, ``uuid`` after ``capability``; seconds to the millisecond."""
        data["seconds"] = round(self.seconds, 3)
        order = ("logical", "device", "physical", "name", "capability", "uuid", "ok", "checks", "tflops", "gbps",
                 "memory_free_mib", "memory_total_mib", "seconds", "error")
        data["device"] = self.device
        _reorder(data, order)


class ChildReport(Record):
    """What one verify_device.py run printed."""

    info: Dict[str, Any] = factory(dict)
    device: Dict[str, Any] = factory(dict)
    checks: Tuple[Check, ...] = ()
    figure: Dict[str, Any] = factory(dict)
    memory: Dict[str, Any] = factory(dict)
    errors: Tuple[Dict[str, Any], ...] = ()
    done: Optional[bool] = None  # None: the child never said it finished


class Problem(Record):
    """Why there is nothing to verify on a GPU (no torch, a CPU build, no driver): ``id`` is the doctor's finding id."""

    id: Optional[str]
    message: str
    error: Optional[VerifyError] = None



class DevicesReport(Record):
    _json_lossy = True  # only torch and cuda of the child's info

    python: str
    info: Dict[str, Any] = factory(dict)
    results: Tuple[DeviceResult, ...] = ()
    problem: Optional[Problem] = None

    @property
    def ok(self) -> bool:
        return self.problem is None and bool(self.results) and all(r.ok for r in self.results)

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        """JSON: torch's version and CUDA from the child's info (not the whole info), ``devices`` for the results."""
        info = data.pop("info")
        data.update(torch=info.get("torch"), torch_cuda=info.get("cuda"), ok=self.ok, devices=data.pop("results"))
        _reorder(data, ("python", "torch", "torch_cuda", "ok", "devices", "problem"))

    @classmethod
    def _json_read(cls, data: Dict[str, Any]) -> Dict[str, Any]:
        """The inverse of :meth:`_json_adjust` (the rest of the child's info is not in the JSON)."""
        data = dict(data)
        info = {k: v for k, v in (("torch", data.pop("torch", None)), ("cuda", data.pop("torch_cuda", None))) if v is not None}
        data.update(info=info, results=data.pop("devices", ()))
        return data


def _reorder(data: Dict[str, Any], order: Sequence[str]) -> None:
    """Put ``data``'s keys in ``order`` (the documented JSON order), in place."""
    items = [(k, data.pop(k)) for k in order if k in data] + list(data.items())
    data.clear()
    data.update(items)



class RankResult(Record):
    rank: int
    local_rank: Optional[int] = None
    device: Optional[str] = None
    physical: Optional[int] = None
    name: Optional[str] = None
    nccl: Optional[str] = None
    ok: bool = False
    checks: Tuple[Check, ...] = ()
    busbw_gbps: Optional[float] = None
    error: Optional[VerifyError] = None



class DistributedReport(Record):
    _json_lossy = True  # seconds rounded, the output tail of a run that passed

    python: str
    backend: str
    nproc: int
    ok: bool = False
    ranks: Tuple[RankResult, ...] = ()
    error: Optional[VerifyError] = None
    command: str = ""
    seconds: float = 0.0
    output_tail: str = ""
    nccl_debug: Tuple[str, ...] = ()

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        """JSON: seconds to the millisecond; the output tail only when the run failed."""
        data["seconds"] = round(self.seconds, 3)
        data["output_tail"] = self.output_tail if not self.ok else ""


class VerifyReport(Record):
    """``cudaenv verify --json``: ``ok``, then one section per check that ran."""

    _json_envelope = True
    _json_skip_none = ("devices", "distributed", "toolkit")

    ok: bool
    devices: Optional[DevicesReport] = None
    distributed: Optional[DistributedReport] = None
    toolkit: Optional[Any] = None  # cudaenv.verify.toolkit_check.ToolkitReport

