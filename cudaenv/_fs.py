"""Files the safe way: writing through a temporary file in the same folder, flushed to disk, then ``os.replace``;
opening a file cudaenv did not write only when it is a regular file (a FIFO or a device never blocks a read)."""

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


def _kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a plain file"


def open_regular(path: str):
    """``path`` opened for binary reading only when it is a regular file; OSError (EINVAL, naming what it is) for a
    FIFO, a device, a socket or a folder, which are never opened for a blocking read (``O_NONBLOCK`` for the open,
    ``fstat`` on what was opened). Streaming readers (``check-installer``, ``explain --file``) read it bounded.

    (The host helper's ``host.open_regular`` is to replace this one when it lands: one home.)
    """
    import errno
    import stat

    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "it is %s, not a regular file; not read" % _kind(st.st_mode))
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "it is %s, not a regular file; not read" % _kind(st.st_mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
