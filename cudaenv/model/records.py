"""The registry of the JSON contract: every record class the JSON outputs are made of, for the codec's readers, the
round-trip property test and the generated reference (docs/reference/json-fields.md).

Records register themselves when their class is created (:func:`cudaenv.model.record.registered`, one list append);
this module only imports the modules that hold contract records, so the registry costs nothing on the
``cudaenv use`` path.
"""

from typing import Tuple

from cudaenv.model.record import registered

# The modules whose Record classes are the JSON contract (the snapshot, the command envelopes and what they hold).
CONTRACT_MODULES = (
    "cudaenv.model.snapshot",
    "cudaenv.model.toolkits",
    "cudaenv.model.reports",
    "cudaenv.verify.records",
    "cudaenv.verify.toolkit_check",
    "cudaenv.recommend.records",
    "cudaenv.explain",
    "cudaenv.toolkit.installer_check",
    "cudaenv.toolkit.uninstall.records",
    "cudaenv.toolkit.uninstall.residue",
    "cudaenv.checkpoint.report",
    "cudaenv.toolkit.install.plan",
    "cudaenv.fleet.records",
)
# Records in those modules that are working values, never written as JSON.
INTERNAL = frozenset(["cudaenv.verify.records.ChildReport", "cudaenv.recommend.records.Candidate",
                      "cudaenv.recommend.records.Request",
                      "cudaenv.toolkit.installer_check.Header", "cudaenv.toolkit.uninstall.records.Options",
                      "cudaenv.toolkit.install.plan.InstallPlan"])


def contract_records() -> Tuple[type, ...]:
    """Every record class of the JSON contract: module by module (in :data:`CONTRACT_MODULES` order), each module's
    in the order it defines them (whatever order the modules happened to be imported in)."""
    import importlib

    for name in CONTRACT_MODULES:
        importlib.import_module(name)
    found = [(CONTRACT_MODULES.index(cls.__module__), i, cls) for i, cls in enumerate(registered())
             if cls.__module__ in CONTRACT_MODULES and "%s.%s" % (cls.__module__, cls.__qualname__) not in INTERNAL]
    return tuple(cls for _, _, cls in sorted(found, key=lambda x: x[:2]))


def envelopes() -> Tuple[type, ...]:
    """The records that are a whole command output (``schema_version`` first)."""
    return tuple(cls for cls in contract_records() if getattr(cls, "_json_envelope", False))
