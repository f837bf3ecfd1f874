"""Files the safe way: writing through a temporary file in the same folder, flushed to disk, then ``os.replace``.

The mode of what is written is the one cp would give: a file that is replaced keeps its own mode (an in-place
rewrite, an overwrite), a new one gets :func:`usual_mode` (``0666 & ~umask``). A caller passes ``mode`` to choose:
:data:`PRIVATE` for what must stay the user's own (a cache that can hold an index URL with a token in it).
The temporary file is created ``0600``, so nothing is readable by others before its mode is set.

(Reading a file cudaenv did not write is :func:`cudaenv.host.open_regular` / :func:`cudaenv.host.read_regular`.)"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

PRIVATE = 0o600
TMP_SUFFIX = ".cudaenv-tmp"


def _host_tag() -> str:
    """This machine's name as it goes into a temporary file's name (letters, digits and ``-``; at most 32)."""
    import socket

    name = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in socket.gethostname().split(".")[0])
    return name[:32] or "host"


def _tmp_prefix(path: str) -> str:
    """``.NAME.HOST-PID.`` (mkstemp adds random letters and :data:`TMP_SUFFIX`): the writer's machine and process id
    in the name, so that :func:`remove_stale_temps` can tell a copy a killed writer left from one being written."""
    return ".%s.%s-%d." % (os.path.basename(path), _host_tag(), os.getpid())


def remove_stale_temps(folder: str) -> list:
    """Remove the temporary files :class:`atomic_binary` left in ``folder`` when its process was killed (SIGKILL
    leaves a copy as big as the file written): regular files of this user named ``.NAME.HOST-PID.XXXXXXXX.cudaenv-tmp``
    whose HOST is this machine and whose process no longer exists (another machine's, on a shared folder, are left
    alone: their process cannot be seen from here). Returns their names."""
    import stat

    removed = []
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return removed
    me = os.geteuid() if hasattr(os, "geteuid") else None
    here = _host_tag()
    for name in names:
        if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
            continue
        parts = name[:-len(TMP_SUFFIX)].rsplit(".", 2)  # ['.NAME', 'HOST-PID', 'random']
        if len(parts) != 3:
            continue
        host, _, pid_text = parts[1].rpartition("-")
        if host != here or not (pid_text.isdigit() and pid_text.isascii()):
            continue
        pid = int(pid_text)
        if pid == os.getpid() or _alive(pid):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or (me is not None and st.st_uid != me):
                continue
            os.unlink(path)
        except OSError:
            continue
        removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user's counts: it cannot be signalled, but it is there)."""
    if pid <= 0 or os.name == "nt":  # (signal 0 is CTRL_C_EVENT on Windows: never sent; nothing is taken for dead)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True
    return True


def umask() -> int:
    """This process's umask (set back at once: reading it means setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def usual_mode(executable: bool = False) -> int:
    """The mode a new file gets from ``open()`` (``0666 & ~umask``), or from a tool writing a script (``0777``)."""
    return (0o777 if executable else 0o666) & ~umask()


def _final_mode(path: str, mode: Optional[int]) -> int:
    """``mode``, else the mode of the file at ``path`` (followed like ``open()`` follows it), else the usual one."""
    if mode is not None:
        return mode
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return usual_mode()


def atomic_write_text(path: str, text: str, mode: Optional[int] = None, errors: str = "strict") -> None:
    """Replace ``path`` with ``text`` in one step: readers see the old file or the new one, never half of
    either, and a failure leaves the old file as it was (the temporary file is removed). ``mode``: see the module."""
    import tempfile

    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".cudaenv-tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _final_mode(path, mode))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class atomic_binary:
    """``with atomic_binary(path) as fh: fh.write(...)``: a binary file written beside ``path`` and moved onto it
    in one step when the block ends without an exception (removed otherwise); ``fh`` is seekable. ``mode``: see the
    module (the mode of the file at ``path`` is read when the block ends, just before the move)."""

    def __init__(self, path: str, mode: Optional[int] = None):
        self.path = path
        self.mode = mode
        self.tmp = None
        self.fh = None

    def __enter__(self):
        import tempfile

        folder = os.path.dirname(self.path) or "."
        fd, self.tmp = tempfile.mkstemp(prefix=_tmp_prefix(self.path), suffix=TMP_SUFFIX, dir=folder)
        self.fh = os.fdopen(fd, "w+b")
        return self.fh

    def __exit__(self, kind, value, tb):
        try:
            if kind is None:
                self.fh.flush()
                os.fsync(self.fh.fileno())
            self.fh.close()
            if kind is None:
                os.chmod(self.tmp, _final_mode(self.path, self.mode))
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
