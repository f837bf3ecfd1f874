"""The torch probe's child: the script ``cudaenv/_child/torch_probe.py`` run in the user's interpreter, and the
reader of the one line of JSON it prints. :mod:`cudaenv.probes.torch` (the static and dynamic passes) and
:mod:`cudaenv.probes.site_packages` (its ``site-packages`` mode) both run it."""

import json
from typing import Any, Dict, Optional

MARKER = "CUDAENV_TORCH_PROBE "


def child_script() -> str:
    """The source of the child script, read from the installed package when needed (never at import time)."""
    from cudaenv._child import source

    return source("torch_probe.py")


def parse_child_output(text: str) -> Optional[Dict[str, Any]]:
    """The child's JSON from its stdout (the last line starting with the marker), or None."""
    for line in reversed((text or "").splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None
