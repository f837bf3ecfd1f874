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


class atomic_binary:
    """``with atomic_binary(path) as fh: fh.write(...)``: a binary file written beside ``path`` and moved onto it
    in one step when the block ends without an exception (removed otherwise); ``fh`` is seekable."""

    def __init__(self, path: str, mode: Optional[int] = None):
        self.path = path
        self.mode = mode
        self.tmp = None
        self.fh = None

    def __enter__(self):
        import tempfile

        folder = os.path.dirname(self.path) or "."
        fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(self.path) + ".", suffix=".cudaenv-tmp", dir=folder)
        self.fh = os.fdopen(fd, "w+b")
        return self.fh

    def __exit__(self, kind, value, tb):
        try:
            if kind is None:
                self.fh.flush()
                os.fsync(self.fh.fileno())
            self.fh.close()
            if kind is None:
                if self.mode is not None:
                    os.chmod(self.tmp, self.mode)
                os.replace(self.tmp, self.path)
                return False
        except BaseException:
            _unlink(self.tmp)
            raise
        _unlink(self.tmp)
        return False


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
