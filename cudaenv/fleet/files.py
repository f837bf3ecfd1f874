"""Report files of a fleet: the name a node's report gets in an ``--output`` folder, where ``--output`` writes, and
reading one report file (bounded, regular files only, through :func:`cudaenv.host.read_regular_why`).

Everything here is untrusted: a host name comes from ``/etc/hostname`` of an inspected root, a report file from
whatever wrote into the folder.
"""

from __future__ import annotations

import os
from typing import Iterator, List, Optional, Tuple

from cudaenv.core.i18n import M

# The most of one report file read (a doctor report is a few tens of kB; 100 GPUs and 50 toolkits stay under 2 MB).
MAX_REPORT = 4 * 1024 * 1024
# The file name each ``--format`` gets in an ``--output`` folder.
SUFFIXES = {"json": ".json", "prometheus": ".prom", "markdown": ".md", "text": ".txt"}


def report_filename(hostname: Optional[str], fmt: str) -> str:
    """``node17.json``: a host name that is already a safe file name (letters, digits, ``. _ -``, not hidden, at most
    200 characters) as it is; any other gets the safe characters kept (the rest ``_``) and ``~`` with 16 hex digits
    of its SHA-256, so two host names never share one file (``gpu-é1``, ``gpu-ü1``, ``gpu-_1``: safe names hold no
    ``~``); ``unknown-host`` where there is none."""
    import hashlib

    host = hostname or ""
    if not host:
        return "unknown-host" + SUFFIXES.get(fmt, ".txt")
    name = "".join(c if (c.isascii() and (c.isalnum() or c in "._-")) else "_" for c in host[:200])
    if name != host or name.startswith(".") or name in (".", ".."):
        digest = hashlib.sha256(host.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = "%s~%s" % (name.lstrip(".")[:200], digest)
    return name + SUFFIXES.get(fmt, ".txt")


def output_path(output: str, hostname: Optional[str], fmt: str) -> Tuple[str, bool]:
    """Where ``--output OUTPUT`` writes: ``(path, is_folder)``. A value ending in ``/`` or naming an existing folder is
    a folder (the node's :func:`report_filename` inside it); anything else is the file itself."""
    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        return os.path.join(output, report_filename(hostname, fmt)), True
    return output, False


def report_paths(args: List[str]) -> Iterator[str]:
    """The report files named by ``fleet summarize DIR|FILES...``: a folder gives its ``*.json`` entries (sorted, not
    recursive; the atomic writer's hidden temporary files skipped), anything else is taken as a file name as given
    (a folder named ``x.json`` among the entries is passed on: reading it says why it is not a report)."""
    for arg in args:
        if os.path.isdir(arg) and not arg.endswith(".json"):
            try:
                names = sorted(os.listdir(arg))
            except OSError:
                yield arg  # read_report says why
                continue
            for name in names:
                if name.endswith(".json") and not name.startswith("."):
                    yield os.path.join(arg, name)
        else:
            yield arg


def read_report_bytes(path: str) -> Tuple[Optional[bytes], Optional[str]]:
    """The file's bytes, or ``(None, why)``: missing, not a regular file (a folder, a FIFO), unreadable, empty, or
    larger than :data:`MAX_REPORT`."""
    from cudaenv.host.files import read_regular_why

    data, why = read_regular_why(path, MAX_REPORT + 1)
    if data is None:
        return None, why or M("no such file")
    if not data:
        return None, M("empty file")
    if len(data) > MAX_REPORT:
        return None, M("larger than %d MiB: not a doctor report", MAX_REPORT // (1024 * 1024))
    return data, None


def read_image(ref: str, cwd: str = "."):
    """``fleet summarize --image REF``: the image read once from disk (:func:`cudaenv.probes.image.probe_image`)."""
    from cudaenv.probes.image import probe_image

    return probe_image(ref, cwd)
