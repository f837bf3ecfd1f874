"""The torch probe's child: the script ``cudaenv/_child/torch_probe.py`` run in the user's interpreter, and the
reader of the one line of JSON it prints. :mod:`cudaenv.probes.torch` (the static and dynamic passes) and
:mod:`cudaenv.probes.site_packages` (its ``site-packages`` mode) both run it."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, Optional

MARKER = "CUDAENV_TORCH_PROBE "


def child_script(mode: str = "static") -> str:
    """The source of the child script, read from the installed package when needed (never at import time):
    ``site_paths.py`` (what the static pass uses under ``-S``) then ``torch_probe.py``, as one ``-c`` source. For the
    ``dynamic`` pass (never under ``-S``), ``torch_probe.py`` alone without the blocks between ``cudaenv._child``'s ``STATIC_BEGIN`` and
    ``STATIC_END`` lines (the static and site-packages passes' code): a third of it, compiled in the child before its
    ``import torch``."""
    from cudaenv._child import torch_script

    return torch_script(mode)


def child_command(mode: str, python: str, host) -> str:
    """The ``-c`` source the child ``python`` runs for ``mode``: :func:`child_script`'s, or, where ``python`` is the
    interpreter cudaenv itself runs in (the same file, on an unrooted host) and the installed package has the script
    compiled to this interpreter's bytecode, the few lines that load that code (``cudaenv._child.code_loader``: the
    child compiles nothing; compiling the script was about a third of the quick read's CPU)."""
    from cudaenv._child import code_file, code_loader, code_usable

    text = child_script(mode)
    path = code_file(mode)
    if path is None or not _is_this_interpreter(python, host):
        return text
    import sys

    return code_loader(path) if code_usable(path, text, sys.modules["_frozen_importlib_external"].MAGIC_NUMBER) else text


def _is_this_interpreter(python: str, host) -> bool:
    """Whether running ``python`` runs the very file this process's interpreter is (links followed)."""
    import sys

    if host.rooted or host.system == "windows" or not sys.executable or not python:
        return False
    mine = host.resolve(sys.executable)  # (unrooted: this machine's own paths, each resolved by the kernel on Linux)
    return mine is not None and host.resolve(python) == mine


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
