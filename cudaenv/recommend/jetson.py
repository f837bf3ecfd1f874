"""The torch answer for a Jetson board (pure: no I/O): NVIDIA's wheels for its JetPack release (data/jetson_torch.json)."""

from __future__ import annotations

from cudaenv.recommend.records import Alternative, Recommendation, Request
from cudaenv.recommend.view import Facts
from cudaenv.core.version import version_key
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List


def decide_jetson(req: Request, facts: Facts) -> Recommendation:
    """A Jetson board: NVIDIA's wheels for its JetPack release; never PyTorch's aarch64 index, never a driver upgrade."""
    from cudaenv.core.resources import load_table

    table = facts.t("jetson_torch") or load_table("jetson_torch")
    where = "L4T %s%s" % (req.jetson, ", JetPack %s" % req.jetpack if req.jetpack else "")
    reasons = [M("this is a Jetson board (%s): PyTorch's indexes have no build for it (their aarch64 wheels are for SBSA "
                 "servers), and its driver and CUDA come with JetPack (never a desktop driver upgrade)", where)]
    row = next((r for r in sorted(table["rows"], key=lambda r: version_key(r["jetpack"]), reverse=True)
                if req.jetpack and (req.jetpack + ".").startswith(r["jetpack"] + ".")), None)
    alts: List[Alternative] = []
    notes = list(req.notes)
    if row is None:
        reasons.append(M("the tables have no torch for %s: see NVIDIA's PyTorch for Jetson page", ("JetPack " + req.jetpack if req.jetpack else M("this JetPack"))))
        alts.append(Alternative("jetpack", "NVIDIA's torch wheels for Jetson: https://docs.nvidia.com/deeplearning/frameworks/install-pytorch-jetson-platform/index.html"))
    else:
        pys = ", ".join(row["python"])
        alts.append(Alternative("jetpack", M("install NVIDIA's torch %s for JetPack %s (Python %s) from %s", row["torch"], row["jetpack"], pys, row["where"]),
                                torch_version=row["torch"], index_url=row["where"]))
        if req.python_version and req.python_version not in row["python"]:
            notes.append(M("those wheels are for Python %s (the JetPack's system Python), not %s", pys, req.python_version))
        if not row.get("confirmed", True):
            notes.append(M("the JetPack %s row of the Jetson table is not confirmed against NVIDIA's page", row["jetpack"]))
    return Recommendation(None, None, None, (), tuple(reasons), tuple(alts), False, notes=tuple(notes), python=req.python,
                          installer=req.installer, platform="linux-aarch64")

