"""Which explanation and first fix fit the context a paste (and, with ``--probe``, the machine) shows (issue 28).

The same cause needs another first step in another context: ``Torch not compiled with CUDA enabled`` on a Mac is
answered with ``mps``, and from someone who runs on the CPU on purpose (a ``--cpu`` flag, ``device="cpu"``, an
Intel-only laptop) with "find the call that still asks for CUDA", never "install a CUDA build"; a GPU that fell
off the bus in a container, a vGPU guest or a laptop is first a container, licence or power-management question,
not a loose card; ``no kernel image`` inside a third-party package's prebuilt kernels is that package's build.
The contexts are ``kind: platform`` rows of ``data/explain_rules.json`` (patterns any of which the paste shows),
and a ``kind: variant`` row replaces a row's title, explanation and advice in one of them, or when a value of
the match fits. The machine's context (``--probe``) comes from :func:`machine_contexts`.
"""

from typing import Mapping, Optional, Sequence, Tuple

from cudaenv.explain.rank import Paste, Variant, platforms, rules


def contexts(paste: Paste, machine: Sequence[str] = ()) -> Tuple[str, ...]:
    """The contexts the paste shows (:func:`cudaenv.explain.rank.platforms`: ``macos``, ``rocm``, ``cpu-on-purpose``,
    ``container``, ...), in the table's order, then those of the machine (``machine``) the paste did not show."""
    shown = platforms(paste)
    return shown + tuple(m for m in machine if m not in shown)


def variant(error_id: str, values: Mapping[str, str], shown: Sequence[str]) -> Optional[Variant]:
    """The variant of row ``error_id`` that fits: a value of the match first (it is about this very message), then
    the first context shown, in the order of ``shown``."""
    candidates = [v for v in rules().variants if v.id == error_id]
    for v in candidates:
        if v.value is not None and v.value_pattern is not None and v.value_pattern.search(values.get(v.value, "") or ""):
            return v
    for name in shown:
        for v in candidates:
            if v.platform == name:
                return v
    return None


def machine_contexts(system: Optional[str], container: Optional[str]) -> Tuple[str, ...]:
    """The contexts this machine shows (``--probe``): ``macos`` on a Mac, ``container`` inside one."""
    out = []
    if system == "darwin":
        out.append("macos")
    if container:
        out.append("container")
    return tuple(out)
