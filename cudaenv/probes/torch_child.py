"""The torch probe's child: the script ``cudaenv/_child/torch_probe.py`` run in the user's interpreter, and the
reader of the one line of JSON it prints. :mod:`cudaenv.probes.torch` (the static and dynamic passes) and
:mod:`cudaenv.probes.site_packages` (its ``site-packages`` mode) both run it."""

import json
from typing import Any, Dict, Optional

MARKER = "CUDAENV_TORCH_PROBE "


def child_script() -> str:
    """The source of the child script, read from the installed package when needed (never at import time):
    ``site_paths.py`` (what the static pass uses under ``-S``) then ``torch_probe.py``, as one ``-c`` source."""
    from cudaenv._child import source

    return source("site_paths.py") + "\n\n" + source("torch_probe.py")


def parse_child_output(text: str, marker: str = MARKER) -> Optional[Dict[str, Any]]:
    """A child's JSON from its stdout (the last line starting with ``marker``: the torch probe's, or another child's
    such as the framework import's), or None."""
    for line in reversed((text or "").splitlines()):
        if line.startswith(marker):
            try:
                data = json.loads(line[len(marker):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None
