"""What explain reads of this machine itself (``--probe``): the contexts it shows, which choose the first fix as a
paste's own do (:mod:`cudaenv.explain.fit`). The only part of explain that touches probes."""

from typing import Tuple


def probe_machine(host) -> Tuple[str, ...]:
    """The contexts this machine shows: ``macos`` on a Mac, ``container`` inside one."""
    from cudaenv.explain.fit import machine_contexts
    from cudaenv.probes.platform import probe_platform

    return machine_contexts(host.system, probe_platform(host, []).container)
