"""The installed toolkits as `cudaenv use` and `cudaenv link` list them after an error. Pure and cheap (on the
``cudaenv use`` error path): no render.text, no textwrap.
"""

from __future__ import annotations

from cudaenv.core.text import printable
from cudaenv.toolkit.select import unique_toolkits
from cudaenv.core.version import version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Optional, Sequence

    from cudaenv.model.snapshot import Toolkit


def render_installed(toolkits: Sequence[Toolkit], system: str = "linux") -> str:
    """The installed toolkits, one per line: version, path, where found, and which is active or linked."""
    toolkits = unique_toolkits(toolkits, system)
    if not toolkits:
        return "no CUDA toolkits found (looked in /usr/local/cuda-*, /opt,\nCUDA_HOME, CUDA_PATH, PATH, CUDAENV_TOOLKITS)"
    rows = []
    for t in sorted(toolkits, key=lambda t: (version_key(t.version), t.path), reverse=True):
        flags = [f for f, on in (("active", t.active), ("/usr/local/cuda", t.is_link_target)) if on]
        rows.append("  %-10s %s%s" % (t.version or "?", printable(t.path), ("  (%s)" % ", ".join(flags)) if flags else ""))
    return "installed CUDA toolkits:\n" + "\n".join(rows)


def render_use_error(message: str, toolkits: Optional[Sequence[Toolkit]] = None, system: str = "linux",
                     candidates: Sequence[Toolkit] = ()) -> str:
    """`cudaenv use`'s error on stderr: the message, the toolkits that matched an ambiguous spec, then every toolkit."""
    text = "cudaenv: error: %s\n" % message
    if candidates:
        text += "matching:\n%s\n" % render_installed(candidates, system).split("\n", 1)[-1]
    if toolkits is not None:
        text += render_installed(toolkits, system) + "\n"
    return text
