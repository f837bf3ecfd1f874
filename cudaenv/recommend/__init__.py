"""The torch decision, cut like ``uninstall/``: records / pure decision / service (`cudaenv fix`'s plan and its
install are :mod:`cudaenv.fix`, after the doctor).

| module | what it does |
|---|---|
| ``records`` | the frozen :class:`Request` in, the :class:`Recommendation` out |
| ``request`` | a Request from a Snapshot and the what-if flags (pure) |
| ``view`` | what the decision reads: the machine from the Request, the facts tables with the live index data folded in |
| ``judge`` | one build against the machine (Python, driver, kernels for every GPU); the best that fits (pure) |
| ``alternatives`` | other builds, releases, a driver upgrade, the CPU or a source build (pure) |
| ``jetson`` | a Jetson board: NVIDIA's wheels for its JetPack (pure) |
| ``decide`` | the decision: which torch, which build, the outcome and its reasons (pure; tables passed in) |
| ``install`` | packages, local-tag pins and install commands; the one PEP 668 venv recipe |
| ``service`` | the I/O the commands share: probe, the index cache or a refresh, the accelerator probe |

Renderers are in :mod:`cudaenv.render.recommend`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Mapping, Optional, Sequence


def recommend(snapshot: Any = None, torch_version: Optional[str] = None, driver: Optional[str] = None,
              compute_capabilities: Optional[Sequence[str]] = None, system: Optional[str] = None,
              python_version: Optional[str] = None, index_base: Optional[str] = None, index_data: Any = None,
              machine: Optional[str] = None, variant: Optional[str] = None, companions: Optional[Mapping[str, str]] = None,
              accelerator: Optional[str] = None, installer: Optional[str] = None, python: Optional[str] = None,
              tables: Optional[Mapping[str, Any]] = None, jetson: Optional[str] = None):
    """:func:`~cudaenv.recommend.decide.decide` for a snapshot and what-if arguments (see ``request_from_snapshot``)."""
    from cudaenv.recommend.decide import decide
    from cudaenv.recommend.request import request_from_snapshot

    req = request_from_snapshot(snapshot, torch_version, driver, compute_capabilities, system, python_version, index_base,
                                machine, variant, companions, accelerator, installer, python, jetson)
    return decide(req, index_data, tables)
