"""The records of an uninstall plan (``cudaenv uninstall --json``): the steps, their guards, the options. No I/O.

Paths in commands that name the inspected system's files are :class:`HostPath` values, so the script can read
them through ``$ROOT`` (``--root``).
"""

from typing import Any, Dict, Optional, Tuple

from cudaenv.model.record import Record
from cudaenv.model.snapshot import Note, Toolkit
from cudaenv.core.i18n import M

# Folders the plan refuses to remove whole, whatever a toolkit record says.
PROTECTED = frozenset(["/", "/usr", "/usr/local", "/opt", "/usr/lib", "/usr/lib64", "/etc", "/home", "/root", "/var", "/bin", "/lib"])


class HostPath(str):
    """A path of the inspected system inside a command; the script prefixes it with ``$ROOT``."""

    __slots__ = ()


class Guard(Record):
    """Run a step only while its residue is still there."""

    kind: str  # exists | link-to | line-in
    path: str
    value: Optional[str] = None  # link-to: the link's text; line-in: the exact line

    def describe(self) -> str:
        if self.kind == "exists":
            return M("%s still exists", self.path)
        if self.kind == "link-to":
            return M("%s still points at %s", self.path, self.value)
        return M("%s still lists %s", self.path, self.value)


class Step(Record):
    id: str
    kind: str
    description: str
    commands: Tuple[Tuple[str, ...], ...] = ()
    needs_root: bool = False
    destructive: bool = False
    paths: Tuple[str, ...] = ()  # every path this step removes or changes
    details: Tuple[str, ...] = ()  # what remains in a folder, the exact rc lines, the apt dependents
    only_if: Optional[Guard] = None
    after: Tuple[str, ...] = ()  # ids of steps that must have run first (skipped with them)
    target: Optional[str] = None  # the toolkit path it belongs to


class Options(Record):
    driver: bool = False
    repoint: Optional[str] = None  # a toolkit path for /usr/local/cuda
    remove_link: bool = False
    python: Optional[str] = None  # --python for pip wheels


class Plan(Record):
    """``cudaenv uninstall --json``: the targets (version, path, install method), what is in use, the steps."""

    _json_envelope = True
    _json_lossy = True  # a target is written as its version, path and install method only

    targets: Tuple[Toolkit, ...]
    steps: Tuple[Step, ...]
    in_use: Tuple[str, ...] = ()  # called out before anything else
    choices: Tuple[str, ...] = ()  # other ways to run it ("--repoint 12.4")
    notes: Tuple[Note, ...] = ()
    system: str = "linux"
    root: str = "/"
    sudo: bool = True  # printed commands that need root start with `sudo` (cudaenv.toolkit.sudo)

    @property
    def needs_root(self) -> bool:
        return any(s.needs_root for s in self.steps)

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        data["targets"] = [{k: t[k] for k in ("version", "path", "install_method")} for t in data["targets"]]
        order = ("schema_version", "targets", "in_use", "steps", "choices", "notes", "system", "root")
        items = [(k, data.pop(k)) for k in order if k in data] + list(data.items())
        data.clear()
        data.update(items)

    @classmethod
    def _json_read(cls, data: Dict[str, Any]) -> Dict[str, Any]:
        data = dict(data)
        data["targets"] = [dict(t, source=t.get("source", "plan")) if isinstance(t, dict) else t for t in data.get("targets") or ()]
        return data
