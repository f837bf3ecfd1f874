"""Reading files cudaenv did not write: regular files only, bounded, never blocking on a FIFO or a device.

:func:`open_regular` is the one way such a file is opened; :func:`read_regular` / :func:`read_regular_why` read one
whole (up to a limit); :func:`scratch_dir` is the one private temporary folder for cudaenv's children. Plain local
paths: :class:`cudaenv.host.Host` maps the inspected system's paths (``--root``) onto these.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import List, Mapping, Optional, Tuple

MAX_READ = 4 * 1024 * 1024


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder where a file was expected (never opened for reading)."""


_KINDS = ((0o010000, "a FIFO"), (0o020000, "a character device"), (0o060000, "a block device"),
          (0o140000, "a socket"), (0o040000, "a folder"))


def _kind(mode: int) -> str:
    fmt = mode & 0o170000
    for bits, name in _KINDS:
        if fmt == bits:
            return name
    return ""


def _not_regular(mode: int) -> str:
    """Why a path that is not a regular file was not read, as a marked message (cudaenv.core.i18n is imported here, when
    a file is refused: `cudaenv use`, which reads through this module, imports no more)."""
    from cudaenv.core.i18n import M

    said = {"a FIFO": M("it is a FIFO, not a regular file; not read"),
            "a character device": M("it is a character device, not a regular file; not read"),
            "a block device": M("it is a block device, not a regular file; not read"),
            "a socket": M("it is a socket, not a regular file; not read"),
            "a folder": M("it is a folder, not a regular file; not read")}
    return said.get(_kind(mode)) or M("it is not a regular file; not read")


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_READ_FLAGS = os.O_RDONLY | _NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def open_regular(path: str):
    """Open ``path`` for binary reading only if it is a regular file; :class:`NotRegularFile` otherwise.

    The one way cudaenv opens a file it did not write: ``O_NONBLOCK`` so that a FIFO or a device never blocks
    the open, ``fstat`` on what was opened (no race with a swapped path), and a refusal (``OSError`` EINVAL whose
    ``strerror`` names what it is). Streaming readers (``check-installer``, ``explain --file``) use the returned
    file; everything else uses :func:`read_regular`.
    """
    fd = _open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_regular_fd(path: str) -> int:
    """:func:`open_regular`'s checks and open, giving the bare descriptor (a whole read needs no file object)."""
    st = os.stat(path)
    if (st.st_mode & 0o170000) != 0o100000:
        raise NotRegularFile(22, _not_regular(st.st_mode), path)  # EINVAL
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000:
            raise NotRegularFile(22, _not_regular(st.st_mode), path)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int = MAX_READ) -> Optional[bytes]:
    """Up to ``limit`` bytes of the regular file ``path`` (a plain local path: no root); None when it cannot be
    read or is not a regular file. Read in small chunks: some /proc and /sys files refuse one large read."""
    data, _ = read_regular_why(path, limit)
    return data


def read_plain_files(folder: str, keep, limit: int = MAX_READ) -> List[Tuple[str, str, Optional[bytes]]]:
    """Sorted ``(name, kind, data)`` of the entries of the local folder ``folder`` (a plain local path, already
    resolved) that ``keep(name)`` keeps: kind ``"file"`` for a regular file, read whole up to ``limit`` bytes (``b""``
    when it cannot be read); ``"link"`` for a symbolic link and ``"other"`` for anything else, neither read (data
    None: a link is the caller's to follow, inside its root). A folder of a thousand small files (the dpkg lists) is
    read by name, with no path resolved per file."""
    try:
        with os.scandir(folder) as entries:
            found = sorted((entry.name, entry) for entry in entries if keep(entry.name))
    except (OSError, ValueError):
        return []
    out: List[Tuple[str, str, Optional[bytes]]] = []
    for name, entry in found:
        try:
            kind = "link" if entry.is_symlink() else "file" if entry.is_file(follow_symlinks=False) else "other"
        except OSError:
            kind = "other"
        out.append((name, kind, (read_regular(entry.path, limit) or b"") if kind == "file" else None))
    return out


def read_regular_why(path: str, limit: int = MAX_READ) -> Tuple[Optional[bytes], Optional[str]]:
    """:func:`read_regular` and why it gave None: ``(None, None)`` for a missing file, ``(None, reason)`` else."""
    chunks: List[bytes] = []
    size = 0
    try:
        fd = _open_regular_fd(path)
    except FileNotFoundError:
        return None, None
    except NotRegularFile as exc:
        from cudaenv.core.i18n import M  # (a reason is a marked message; imported only when a read fails: off `use`'s path)

        return None, M("%s: %s", path, exc.strerror)
    except (OSError, ValueError) as exc:
        from cudaenv.core.i18n import M

        return None, M("%s could not be read (%s)", path, getattr(exc, "strerror", None) or str(exc))
    try:
        while size < limit:
            chunk = os.read(fd, min(65536, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError) as exc:
        from cudaenv.core.i18n import M

        return None, M("%s could not be read (%s)", path, getattr(exc, "strerror", None) or str(exc))
    finally:
        os.close(fd)
    return b"".join(chunks), None




def scratch_dir(prefix: str, files: Optional[Mapping[str, str]] = None):
    """A private temporary folder (removed on exit, whatever happens) holding ``files`` (name -> text).

    The one place cudaenv makes temporary files for its children (``verify --toolkit``'s ``check.cu``,
    ``verify --distributed``'s rank script and results); use as ``with scratch_dir("cudaenv-x-", {...}) as tmp:``.
    """
    import tempfile

    holder = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        for name, text in (files or {}).items():
            with open(os.path.join(holder.name, name), "w", encoding="utf-8") as fh:  # our own new file
                fh.write(text)
    except BaseException:
        holder.cleanup()
        raise
    return holder

