"""Fleet report sets for the fleet tests: healthy 8 x A100 nodes (``node_report``) and a folder of them with planted
drift (``planted``). Shared here so that no test module imports another."""

import json

from machine import cuda_torch, gpu, healthy

from cudaenv.model.reports import DoctorReport, Finding
from cudaenv.model.snapshot import Driver
from cudaenv.model.record import replace

GPUS8 = tuple(gpu(i) for i in range(8))


def node_report(name, **changes):
    """A healthy 8 x A100 node (driver 580.95.05, torch 2.13.0+cu130), changed as asked."""
    findings = changes.pop("findings", ())
    s = replace(healthy(gpus=GPUS8), cudaenv_version="0.1.0", **changes)
    return DoctorReport(s, tuple(findings), hostname=name, generated_at="2026-12-03T05:00:00Z")


OLD_DRIVER = Driver(version="535.247.01", cuda_version="12.2", source="nvidia-smi")
CPU_TORCH = cuda_torch(version="2.13.0+cpu", cuda=None, cuda_available=False, device_count=0)


def planted(folder, n=20):
    """n nodes; node-03 and node-04 with an older driver, node-07 with a CPU torch (an error), node-09 missing a GPU."""
    folder.mkdir(exist_ok=True)
    for i in range(1, n + 1):
        name = "node-%02d" % i
        changes = {}
        if i in (3, 4):
            changes["driver"] = OLD_DRIVER
        if i == 7:
            changes.update(torch=CPU_TORCH, findings=(Finding("torch-cpu-only", "error", "CPU torch", "d"),))
        if i == 9:
            changes["gpus"] = GPUS8[:7]
            changes["findings"] = (Finding("gpu-count-differs", "warning", "7 of 8", "d"),)
        (folder / (name + ".json")).write_text(json.dumps(node_report(name, **changes).to_dict()))
    return folder
