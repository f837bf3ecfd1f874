"""The torch probe's child: the script ``cudaenv/_child/torch_probe.py`` run in the user's interpreter, and the
reader of the one line of JSON it prints. :mod:`cudaenv.probes.torch` (the static and dynamic passes) and
:mod:`cudaenv.probes.site_packages` (its ``site-packages`` mode) both run it."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, Optional

MARKER = "CUDAENV_TORCH_PROBE "


STATIC_BEGIN, STATIC_END = "# static pass {", "# } static pass"  # the script's blocks the dynamic pass leaves out


def child_script(mode: str = "static") -> str:
    """The source of the child script, read from the installed package when needed (never at import time):
    ``site_paths.py`` (what the static pass uses under ``-S``) then ``torch_probe.py``, as one ``-c`` source. For the
    ``dynamic`` pass (never under ``-S``), ``torch_probe.py`` alone without the blocks between ``STATIC_BEGIN`` and
    ``STATIC_END`` lines (the static and site-packages passes' code): a third of it, compiled in the child before its
    ``import torch``."""
    from cudaenv._child import source

    text = source("torch_probe.py")
    if mode != "dynamic":
        return source("site_paths.py") + "\n\n" + text
    kept, skip = [], False
    for line in text.splitlines(True):
        if line.startswith(STATIC_BEGIN):
            skip = True
        elif line.startswith(STATIC_END):
            skip = False
        elif not skip:
            kept.append(line)
    return "".join(kept)


def parse_child_output(text: str, marker: str = MARKER) -> Optional[Dict[str, Any]]:
    """A child's JSON from its stdout (the last line starting with ``marker``: the torch probe's, or another child's
    such as the framework import's), or None."""
    for line in reversed((text or "").splitlines()):
        if line.startswith(marker):
            import json  # here, not at import time: the doctor starts its torch child before json is needed

            try:
                data = json.loads(line[len(marker):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None
