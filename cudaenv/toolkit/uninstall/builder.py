"""The plan under construction: steps numbered in the order they are added, the notes, who needs root. No I/O."""

from typing import Any, List, Optional

from cudaenv.model.snapshot import Note, Toolkit
from cudaenv.toolkit.uninstall.facts import Inspection
from cudaenv.toolkit.uninstall.records import Step
from cudaenv.core.i18n import M


def label(t: Toolkit) -> str:
    return M("CUDA %s at %s", t.version, t.path) if t.version else M("the toolkit at %s", t.path)


def under(path: str, folder: Optional[str]) -> bool:
    if not folder:
        return False
    folder = folder.rstrip("/")
    return path == folder or path.startswith(folder + "/")


class Builder:
    """The steps so far (``s1``, ``s2``, ...) and the notes; a path under the inspected home needs no root."""

    def __init__(self, inspection: Inspection):
        self.inspection = inspection
        self.steps: List[Step] = []
        self.notes: List[Note] = list(inspection.notes)

    def root_for(self, path: str) -> bool:
        if self.inspection.system == "windows":
            return True
        return not under(path, self.inspection.home)

    def add(self, kind: str, description: str, **kw: Any) -> Step:
        step = Step("s%d" % (len(self.steps) + 1), kind, description, **kw)
        self.steps.append(step)
        return step
