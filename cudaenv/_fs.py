"""Files the safe way: writing through a temporary file in the same folder, flushed to disk, then ``os.replace``.

(Reading a file cudaenv did not write is :func:`cudaenv.host.open_regular` / :func:`cudaenv.host.read_regular`.)"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


def atomic_write_text(path: str, text: str, mode: Optional[int] = None, errors: str = "strict") -> None:
    """Replace ``path`` with ``text`` in one step: readers see the old file or the new one, never half of
    either, and a failure leaves the old file as it was (the temporary file is removed)."""
    import tempfile

    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".cudaenv-tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
