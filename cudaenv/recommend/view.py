"""What the torch decision reads (pure: no I/O): the machine a Request describes and the facts tables.

:class:`Facts` is the one lookup of every table the decision needs (the bundled ``data/`` rows or the caller's
``tables``), with what `cudaenv torch refresh` learned from the live index folded in over them.
"""

from __future__ import annotations

from cudaenv.facts import drivers as drv
from cudaenv.facts import torch as tf
from cudaenv.recommend.records import Request
from cudaenv.core.version import pep440_key
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple


class Machine:
    """The machine a Request describes, as the decision reads it (a plain class: ``dataclasses`` imports ``inspect``,
    which alone cost more than the doctor's rules on `doctor --quick`'s start-up)."""

    __slots__ = ("system", "machine", "platform", "driver", "driver_system", "gpus", "nvidia", "python_version",
                 "accelerator", "notes", "native_cuda")

    def __init__(self, system: str, machine: str, platform: str, driver: Optional[str], driver_system: str,
                 gpus: Sequence[Tuple[str, Optional[str]]], nvidia: bool, python_version: Optional[str],
                 accelerator: Optional[str], notes: Optional[List[str]] = None, native_cuda: Optional[str] = None):
        self.system, self.machine, self.platform = system, machine, platform
        self.driver, self.driver_system, self.gpus, self.nvidia = driver, driver_system, gpus, nvidia
        self.python_version, self.accelerator = python_version, accelerator
        self.notes: List[str] = [] if notes is None else notes
        self.native_cuda = native_cuda  # the newest CUDA whose PTX this driver can JIT (nvidia-smi's "CUDA Version")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if type(other) is Machine else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return "Machine(%s)" % ", ".join("%s=%r" % (name, getattr(self, name)) for name in self.__slots__)


class Facts:
    """The bundled tables (or the caller's) with the live index data folded in."""

    def __init__(self, index_data: Any = None, tables: Optional[Mapping[str, Any]] = None):
        self.index = index_data
        self.tables = dict(tables or {})

    def t(self, name: str) -> Any:
        return self.tables.get(name)

    def known_versions(self) -> Tuple[str, ...]:
        seen = set(tf.known_torch_versions(self.t(tf.VARIANTS)))
        if self.index is not None:
            seen.update(self.index.torch_versions())
        return tuple(sorted(seen, key=pep440_key))

    def variants(self, version: str, m: Machine) -> Tuple[str, ...]:
        if self.index is not None:
            live = self.index.variants_for(version, m.platform)
            if live:
                return live
        return tf.variants_for(version, m.system, m.machine, self.t(tf.VARIANTS))

    def python_ok(self, version: str, variant: str, m: Machine) -> Optional[bool]:
        if not m.python_version:
            return None
        if self.index is not None:
            pys = self.index.pythons_for(version, m.platform, variant)
            if pys:
                return m.python_version in pys or "any" in pys
        pys = tf.pythons_for(version, self.t(tf.PYTHONS), system=m.system)
        return (m.python_version in pys) if pys else None

    def pythons(self, version: str, m: Machine) -> Tuple[str, ...]:
        return tf.pythons_for(version, self.t(tf.PYTHONS), system=m.system)

    def arch(self, version: str, variant: str, m: Machine) -> Tuple[Optional[Tuple[str, ...]], Optional[str], Optional[str]]:
        """(archs, ptx, note); a variant the table does not know borrows the newest known CUDA row, with a note."""
        found = tf.arch_list_for(version, variant, m.system, m.machine, self.t(tf.ARCH))
        if found:
            return found[0], found[1], None
        row = tf.newest_arch_row("cuda", m.system, m.machine, self.t(tf.ARCH), variant=variant) or \
            tf.newest_arch_row("cuda", m.system, m.machine, self.t(tf.ARCH))
        if row is None:
            return None, None, M("the arch list of torch %s %s is not known", version, variant)
        return (tuple(row["archs"]), row.get("ptx"),
                M("the arch list of torch %s %s is not in the bundled table; assumed like %s (torch %s)", version, variant,
                  row["variant"], row["to"]))

    def arch_table(self) -> Dict[str, Any]:
        from cudaenv.core.resources import load_table

        return self.t(tf.ARCH) or load_table(tf.ARCH)

    def arch_rows(self, m: Machine) -> List[Any]:
        return [r for r in self.arch_table()["rows"] if r["platform"] == m.platform]

    def resolve(self, spec: str, known: Tuple[str, ...]) -> Optional[str]:
        return tf.resolve_torch_version(spec, known) or tf.resolve_torch_version(
            spec, tf.known_torch_versions(self.t(tf.VARIANTS), include_unreleased=True))

    def released(self, version: str) -> bool:
        return tf.is_released(version, self.t(tf.VARIANTS))

    def variant_span(self, variant: str, m: Machine) -> Tuple[Optional[str], Optional[str]]:
        return tf.last_torch_for_variant(variant, m.system, m.machine, self.t(tf.VARIANTS))

    def min_driver(self, cuda: Optional[str], system: str) -> Optional[str]:
        return drv.min_driver_for_cuda(cuda, system, self.t(drv.TABLE))

    def beyond_tables(self, cuda: Optional[str]) -> bool:
        return drv.beyond_tables(cuda, self.t(drv.TABLE))


def machine_of(req: Request, facts: Facts) -> Machine:
    """The machine the request describes, with the newest CUDA its driver can JIT PTX for."""
    native = drv.native_cuda_for_driver(req.driver, req.driver_system, facts.t(drv.TABLE)) if req.driver else None
    return Machine(req.system, req.machine, tf.platform_key(req.system, req.machine), req.driver, req.driver_system, req.gpus,
                    req.nvidia, req.python_version, req.accelerator, list(req.notes), native)

