"""``cudaenv fleet summarize --json``: the summary of many doctor reports as records (one envelope, registered in
the model registry like the other command outputs).

A node's configuration is a mapping dimension -> value (:data:`cudaenv.fleet.summary.DIMENSIONS`: the driver, the
driver's CUDA, the GPUs, the toolkit set, the torch build, cuDNN); values are the reports' strings, untrusted: a
renderer escapes them.
"""

from __future__ import annotations

from typing import Optional, Tuple

from cudaenv.model.record import Record
from cudaenv.model.reports import ImageFacts


class FleetNode(Record):
    """One node whose report was read: its configuration, its error and warning finding ids, and the dimensions in
    which it differs from the reference (the majority, or ``--baseline``)."""

    _json_maps = ("config",)

    name: str  # the report's hostname, else the file name without .json
    file: str
    config: Tuple[Tuple[str, str], ...] = ()
    errors: Tuple[str, ...] = ()  # finding ids of severity error
    warnings: Tuple[str, ...] = ()  # finding ids of severity warning
    deviations: Tuple[str, ...] = ()  # dimensions whose value is not the reference's
    generated_at: Optional[str] = None
    cudaenv_version: Optional[str] = None


class ValueCount(Record):
    """One value of a dimension and how many nodes have it."""

    value: str
    nodes: int
    reference: bool = False  # the reference configuration's value


class DimensionGroup(Record):
    """The nodes grouped by one dimension, most nodes first."""

    dimension: str
    values: Tuple[ValueCount, ...] = ()


class Configuration(Record):
    """One whole configuration (every dimension) and how many nodes have exactly it."""

    _json_maps = ("config",)

    config: Tuple[Tuple[str, str], ...]
    nodes: int
    reference: bool = False


class FindingCount(Record):
    """One finding id over the fleet: on how many nodes, and the first few of them by name."""

    id: str
    severity: str
    nodes: int
    examples: Tuple[str, ...] = ()


class Unreadable(Record):
    """A report file that could not be read as a doctor report, and why (never fatal)."""

    file: str
    why: str


class ImageNode(Record):
    """``fleet summarize --image``: one node whose driver does not plainly run the image, and why."""

    name: str
    driver: str  # the node's driver version ("none" when its report has none)
    verdict: str  # needs-newer-driver | forward-compat | no-driver (cudaenv.diagnose.image.image_verdict)


class ImageFleet(Record):
    """``fleet summarize --image REF``: the image read once, what driver it needs, and which nodes can run it."""

    image: ImageFacts
    needs_driver: Optional[str] = None  # the image's floor (None: unreadable, or nothing says)
    needs_why: Optional[str] = None  # require | cuda | torch (cudaenv.diagnose.image.image_need)
    runs: int = 0  # nodes whose driver runs it
    too_old: int = 0  # nodes whose driver is too old (the runtime refuses it, or its CUDA fails)
    forward_compat: int = 0  # nodes that run it only through its forward-compatibility branches
    no_driver: int = 0  # nodes whose report has no driver
    nodes: Tuple[ImageNode, ...] = ()  # every node that does not plainly run it, in node order

    @property
    def ok(self) -> bool:
        """The image was read and no node's driver is too old for it."""
        return self.image.readable and not self.too_old


class FleetSummary(Record):
    """``cudaenv fleet summarize --json``."""

    _json_envelope = True
    _json_maps = ("reference_config",)
    _json_skip_none = ("image",)

    nodes_read: int
    reference: str  # "majority" | "baseline"
    reference_config: Tuple[Tuple[str, str], ...] = ()
    baseline_file: Optional[str] = None
    deviating: int = 0  # nodes that differ from the reference in any dimension
    with_errors: int = 0  # nodes with an error finding
    dimensions: Tuple[DimensionGroup, ...] = ()
    configurations: Tuple[Configuration, ...] = ()
    findings: Tuple[FindingCount, ...] = ()
    nodes: Tuple[FleetNode, ...] = ()
    unreadable: Tuple[Unreadable, ...] = ()
    notes: Tuple[str, ...] = ()
    image: Optional[ImageFleet] = None  # `--image REF` only: which nodes can run that image

    @property
    def ok(self) -> bool:
        """No node deviates or has an error, at least one report was read, and (``--image``) no node's driver is too
        old for the image."""
        return (self.nodes_read > 0 and not self.deviating and not self.with_errors
                and (self.image is None or self.image.ok))


class FactChange(Record):
    """One fact of the doctor that differs between two reports (``cudaenv diff``): None on the side without it."""

    section: str  # the doctor's section: environment | driver | visibility | versions | toolkits
    fact: str  # "driver", "GPU 0", "torch", "nvidia-cudnn-cu12", "toolkit /usr/local/cuda-12.4", ...
    before: Optional[str] = None
    after: Optional[str] = None


class FindingChange(Record):
    """A finding id present in one report and not the other."""

    id: str
    severity: str
    title: str = ""


class ReportDiff(Record):
    """``cudaenv diff A.json B.json --json``: what changed from the first report to the second."""

    _json_envelope = True

    before_file: str
    after_file: str
    before_host: Optional[str] = None
    after_host: Optional[str] = None
    before_at: Optional[str] = None  # the reports' generated_at
    after_at: Optional[str] = None
    changes: Tuple[FactChange, ...] = ()
    findings_new: Tuple[FindingChange, ...] = ()  # in the second report only
    findings_gone: Tuple[FindingChange, ...] = ()  # in the first report only
    notes: Tuple[str, ...] = ()

    @property
    def same(self) -> bool:
        """No fact and no finding id differs."""
        return not self.changes and not self.findings_new and not self.findings_gone
