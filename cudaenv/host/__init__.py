"""The one seam between cudaenv and the machine it inspects.

Every probe reads files, environment variables and command output through a :class:`Host`:

* ``root``: the directory that stands for ``/`` (``--root``/``CUDAENV_ROOT``; tests use fake trees).
  Every absolute path is read inside it, including paths taken from environment variables.
* ``env``: the environment mapping (never ``os.environ`` directly).
* ``system``: ``linux``, ``windows`` or ``darwin``.
* ``run``: a command runner with a timeout.  A missing program, a non-zero exit, a timeout and
  undecodable output all come back as a :class:`CommandResult`, never as an exception.

Host tools (``nvidia-smi``, the user's Python) are found on the *real* PATH with :meth:`Host.which`,
even under a root: the driver and GPUs belong to the host, the files inspected to the image.
:meth:`Host.which_in_root` resolves a program on PATH inside the root (for ``nvcc``).

The folder holds the seam, one noun a module: :mod:`cudaenv.host.files` (regular files, bounded reads, the scratch
folder), :mod:`cudaenv.host.resolve` (a path's links followed inside the root), :mod:`cudaenv.host.process` (the
runner, deadlines, :class:`CommandResult`), :mod:`cudaenv.host.children` (the children running now, killed on an
interrupt; orphans reaped), :mod:`cudaenv.host.state` (the default timeout, the children's flags),
:mod:`cudaenv.host.tree` (a bounded walk of an inspected folder) and this module, the :class:`Host` record that
maps the inspected system onto them. Each name is imported from the module that defines it.
"""

from __future__ import annotations

import os
import posixpath
import sys

from cudaenv.core.lazy import LazyModule
from cudaenv.host.files import MAX_READ, open_regular, read_regular
from cudaenv.host.resolve import KERNEL_RESOLVE, WALK, kernel_may_resolve, kernel_resolve, path_text, this_hostname, walk_links
from cudaenv.host.state import CHILDREN, DEFAULT_TIMEOUT

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

    from cudaenv.host.process import CommandResult, Deadline

MAX_LINKS = 40


def _process():
    """:mod:`cudaenv.host.process`, loaded on the first command run (never on the `use` path)."""
    from cudaenv.host import process

    return process


def kill_all_children(wait: float = 1.0, stop_new: bool = True) -> List[int]:
    """:func:`cudaenv.host.children.kill_all_children` when a program was ever run; else only, with ``stop_new``,
    no new child may start (``use``, ``list``: nothing more is imported)."""
    if stop_new:
        CHILDREN["closing"] = True  # before the look: a thread loading the runner now sees it
    children = sys.modules.get("cudaenv.host.children")
    kill = getattr(children, "kill_all_children", None)  # None too while another thread is still loading it
    return kill(wait, stop_new) if kill is not None else []


def current_system() -> str:
    """``linux``, ``windows`` or ``darwin`` for the running interpreter."""
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "darwin"
    return "linux"


# The runner a Host uses when it is given none. Only the test suite sets it (tests/conftest.py installs a runner
# that refuses any program outside the test's fake machine); cudaenv itself never does.
default_runner: Optional[Callable[..., CommandResult]] = None


class Host:
    """The machine as cudaenv sees it. Cheap to build; holds no state besides its settings."""

    def __init__(
        self,
        root: "str | os.PathLike[str]" = "/",
        env: Optional[Mapping[str, str]] = None,
        system: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        runner: Optional[Callable[..., CommandResult]] = None,
        machine: Optional[str] = None,
        deadline: Optional[Deadline] = None,
        root_is_this_machine: bool = False,
    ):
        self._root_str = os.fspath(root) or "/"
        if len(self._root_str) > 1:
            self._root_str = self._root_str.rstrip("/\\") or "/"
        self.env: Dict[str, str] = dict(env if env is not None else {})
        self.system = system or current_system()
        self.timeout = float(timeout)
        self._runner = runner or default_runner  # None: cudaenv.host.process.subprocess_runner, loaded when first run
        self.machine = machine
        self.deadline = deadline  # when set, no command runs past it (``verify --timeout``)
        # False (always, from the CLI): the root is an image or a shared folder, whose programs are read, never run.
        # True only for a root that *is* this machine seen at a prefix: the test suite's fake machine, whose
        # programs (a WSL /usr/lib/wsl/lib/nvidia-smi, C:/Windows/System32/nvidia-smi.exe) are the test's stand-ins.
        self.root_is_this_machine = root_is_this_machine
        # The real root on Linux: the kernel follows a path's links the way :meth:`resolve` does, so a test of a file
        # (is_dir, is_file, exists, listdir, a read) may hand the path to the kernel as it is (:meth:`_as_is`).
        self._kernel_paths = KERNEL_RESOLVE and not self.rooted and self.system != "windows"

    # ------------------------------------------------------------------ paths
    @property
    def rooted(self) -> bool:
        """True when files are read inside a root other than the real ``/``."""
        root = self._root_str
        return root not in ("/", "") and not (len(root) <= 3 and root[1:2] == ":")

    @property
    def root(self):
        """The root as a :class:`pathlib.Path` (pathlib is imported only when asked for)."""
        from pathlib import Path

        return Path(self._root_str)
    root_text = property(lambda self: path_text(self._root_str), doc="str(root), without pathlib (resolve.path_text)")

    @property
    def pathsep(self) -> str:
        return ";" if self.system == "windows" else ":"

    def _parts(self, p: str) -> List[str]:
        """Split a path as the inspected system writes it into its components (drive first on Windows)."""
        if self.system == "windows":
            drive, rest = ntpath.splitdrive(p.replace("/", "\\"))
            parts = [x for x in rest.split("\\") if x]
            return ([drive.rstrip(":")] if drive else []) + parts
        return [x for x in p.split("/") if x]

    def path(self, p: "str | os.PathLike[str]"):
        """Where the inspected system's absolute path ``p`` lives on this machine (inside the root), as a Path."""
        from pathlib import Path

        return Path(self._rooted(os.fspath(p)))

    def local(self, p: "str | os.PathLike[str]") -> str:
        """:meth:`path` as a string."""
        return self._rooted(os.fspath(p))

    def _rooted(self, p: str) -> str:
        """:meth:`path` as a string (the probes' hot loops avoid building Path objects)."""
        if not self.rooted:
            return p
        root = self._root_str
        if p == root or p.startswith(root + os.sep):
            return p  # already inside the root
        parts = self._parts(p)
        return root + os.sep + os.sep.join(parts) if parts else root

    def unroot(self, real: "str | os.PathLike[str]") -> str:
        """The inspected system's name for a path on this machine (the inverse of :meth:`path`)."""
        real = os.fspath(real)
        if not self.rooted:
            return real
        root = self._root_str
        if real == root:
            parts: List[str] = []
        elif real.startswith(root + os.sep):
            parts = [x for x in real[len(root) + 1:].split(os.sep) if x]
        else:
            return real
        if self.system == "windows":
            if not parts:
                return "C:\\"
            return parts[0] + ":\\" + "\\".join(parts[1:])
        return "/" + "/".join(parts)

    def join(self, *parts: str) -> str:
        """Join path parts with the inspected system's separator."""
        return ntpath.join(*parts) if self.system == "windows" else posixpath.join(*parts)

    def real(self, p: str):
        """The file on this machine (a Path) that ``p`` names after following links inside the root (None if dangling)."""
        resolved = self.resolve(p)
        return None if resolved is None else self.path(resolved)

    def _as_is(self, p: str) -> bool:
        """True when ``p`` needs no resolving before the kernel is asked about the file it names: under the real root
        on Linux the kernel follows its links exactly as :meth:`resolve` does
        (:func:`cudaenv.host.resolve.kernel_resolve`), so ``stat(p)`` answers what ``stat(resolve(p))`` would, in one
        system call instead of four (`cudaenv use` tests about 60 paths). Never under a root (links must stay inside it), on Windows, or for a path the kernel reads otherwise
        (relative, ``.`` or ``..`` in it, a trailing ``/``): those are resolved first."""
        return self._kernel_paths and kernel_may_resolve(p)

    def _real(self, p: str) -> Optional[str]:
        if self._as_is(p):
            return p
        resolved = self.resolve(p)
        return None if resolved is None else self._rooted(resolved)

    def read_text(self, p: str, limit: int = MAX_READ) -> Optional[str]:
        """The file's text (UTF-8, undecodable bytes replaced), or None when it cannot be read."""
        real = self._real(p)
        if real is None:
            return None
        data = read_regular(real, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_bytes(self, p: str, limit: int = MAX_READ) -> Optional[bytes]:
        """Up to ``limit`` bytes of the regular file ``p``; None when missing, unreadable, or a FIFO/device/socket."""
        real = self._real(p)
        if real is None:
            return None
        return read_regular(real, limit)

    def hostname(self) -> Optional[str]:
        """The inspected system's host name: under a root, the first line of its ``/etc/hostname`` (read bounded,
        never a program of the root); else this machine's (``os.uname().nodename``, POSIX's ``gethostname``). None when
        none. The name came from outside: escape it before printing, sanitise it before using it as a file name."""
        if self.rooted:
            text = self.read_text("/etc/hostname", limit=4096)
            lines = (text or "").strip().splitlines()
            name = lines[0].strip() if lines else ""
        else:
            name = this_hostname()
        return name[:255] or None

    def exists(self, p: str) -> bool:
        """True when ``p`` exists (links followed inside the root)."""
        if self._as_is(p):
            try:
                return os.path.exists(p)
            except (OSError, ValueError):
                return False
        resolved = self.resolve(p)
        if resolved is None:
            return False
        try:
            return os.path.lexists(self._rooted(resolved))
        except (OSError, ValueError):
            return False

    def lexists(self, p: str) -> bool:
        try:
            return os.path.lexists(self._rooted(p))
        except (OSError, ValueError):
            return False

    def is_dir(self, p: str) -> bool:
        try:
            if self._as_is(p):
                return os.path.isdir(p)
            resolved = self.resolve(p)
            return resolved is not None and os.path.isdir(self._rooted(resolved))
        except (OSError, ValueError):
            return False

    def is_file(self, p: str) -> bool:
        try:
            if self._as_is(p):
                return os.path.isfile(p)
            resolved = self.resolve(p)
            return resolved is not None and os.path.isfile(self._rooted(resolved))
        except (OSError, ValueError):
            return False

    def is_link(self, p: str) -> bool:
        try:
            return os.path.islink(self._rooted(p))
        except (OSError, ValueError):
            return False

    def listdir(self, p: str) -> List[str]:
        """Sorted entry names of the directory ``p`` (links followed inside the root); [] when unreadable."""
        real = self._real(p)
        if real is None:
            return []
        try:
            return sorted(os.listdir(real))
        except (OSError, ValueError):
            return []

    def list_folders(self, p: str) -> List[Tuple[str, bool]]:
        """Sorted ``(name, is_link)`` of the real folders (False) and symbolic links (True, not followed) in the
        directory ``p``, typed as ``os.scandir`` reads them (no stat per entry where the file system types it)."""
        real = self._real(p)
        out = []
        try:
            with os.scandir(real if real is not None else "\0") as entries:
                for entry in entries:
                    try:  # one typed test for a folder, the usual entry
                        if entry.is_dir(follow_symlinks=False):
                            out.append((entry.name, False))
                        elif entry.is_symlink():
                            out.append((entry.name, True))
                    except OSError:
                        continue
        except (OSError, ValueError):
            return []
        return sorted(out)

    def _is_folder_as_named(self, p: str) -> bool:
        """Whether ``p``, a path without links (the walk's prefix so far), is a folder inside the root."""
        try:
            return os.path.isdir(self._rooted(p))
        except (OSError, ValueError):
            return False

    def readlink(self, p: str) -> Optional[str]:
        """The text of the link ``p`` (as written in the image), or None when ``p`` is no link."""
        try:
            return os.readlink(self._rooted(p))
        except (OSError, ValueError):
            return None

    def resolve(self, p: str) -> Optional[str]:
        """``p`` with every symbolic link followed *inside the root*; None for a loop or a dangling link.

        Absolute link targets are read inside the root, so a fake ``usr/local/cuda -> /usr/local/cuda-12.4``
        resolves to the fake toolkit, never to the real machine's.
        """
        if self.system == "windows":
            return p if self.lexists(p) else None
        if self.rooted:
            # A path already inside the root (a PATH or CUDA_HOME that `cudaenv use --root` wrote) is the image's
            # folder under another name: resolve it under the image's name, so one folder has one name.
            p = self.unroot(p)
        elif KERNEL_RESOLVE and kernel_may_resolve(p):
            found = kernel_resolve(p)
            if found is not WALK:
                return found
        return self._walk(p)

    def _walk(self, p: str) -> Optional[str]:
        """:meth:`resolve`'s reading, one component at a time (every link read inside the root)."""
        return walk_links(p, self.readlink, self.lexists, MAX_LINKS, self._is_folder_as_named)

    def glob(self, directory: str, prefix: str = "") -> List[str]:
        """Paths of entries in ``directory`` whose names start with ``prefix`` (sorted)."""
        return [self.join(directory, name) for name in self.listdir(directory) if name.startswith(prefix)]

    def iter_chunks(self, p: str, limit: int = MAX_READ, size: int = 1024 * 1024) -> Iterator[bytes]:
        """The regular file ``p`` in pieces of ``size`` bytes, ``limit`` bytes in all: a big file (a 300 MB dpkg
        status, a 30 MB nvcc) is streamed, never held whole. Nothing when it cannot be read or is no regular file."""
        real = self._real(p)
        if real is None:
            return
        try:
            fh = open_regular(real)  # a FIFO or a device is refused, never waited on
        except (OSError, ValueError):
            return
        with fh:
            left = limit
            while left > 0:
                try:
                    chunk = fh.read(min(size, left))
                except (OSError, ValueError):
                    return
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk

    def iter_lines(self, p: str, limit: int = MAX_READ, max_line: int = 64 * 1024) -> Iterator[str]:
        """The lines of ``p`` (without line ends; bytes that are not UTF-8 kept as surrogates, like ``os.listdir``),
        streamed through :meth:`iter_chunks`; a line longer than ``max_line`` is cut there (the rest skipped)."""
        rest, skipping = b"", False
        for chunk in self.iter_chunks(p, limit):
            data, start = rest + chunk, 0
            while True:
                end = data.find(b"\n", start)
                if end < 0:
                    break
                if not skipping:
                    yield data[start : min(end, start + max_line)].decode("utf-8", "surrogateescape")
                skipping, start = False, end + 1
            rest = data[start:]
            if len(rest) > max_line:
                if not skipping:
                    yield rest[:max_line].decode("utf-8", "surrogateescape")
                rest, skipping = b"", True
        if rest and not skipping:
            yield rest.decode("utf-8", "surrogateescape")

    # --------------------------------------------------------------- programs
    def runs_as_root(self) -> Optional[bool]:
        """Whether the commands this Host's user types run as root (effective uid 0); None where that says nothing
        about the inspected system (``--root``: another system's files) or the OS has no uid."""
        geteuid = getattr(os, "geteuid", None)
        if self.rooted or geteuid is None:
            return None
        return geteuid() == 0

    def env_path(self) -> List[str]:
        value = self.env.get("PATH") or self.env.get("Path") or ""
        return [entry for entry in value.split(self.pathsep) if entry]

    def which(self, name: str) -> Optional[str]:
        """The program ``name`` on the real PATH of ``env`` (host tools: nvidia-smi, python)."""
        names = [name]
        if self.system == "windows" and not name.lower().endswith(".exe"):
            names = [name + ".exe", name]
        if os.sep in name or (self.system == "windows" and ("\\" in name)):
            return name if os.access(name, os.X_OK) and os.path.isfile(name) else None
        for entry in self.env_path():
            for candidate_name in names:
                candidate = os.path.join(entry, candidate_name)
                if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                    return candidate
        return None

    def which_all_in_root(self, name: str) -> List[str]:
        """Every ``name`` on PATH, looked up inside the root, in PATH order (the inspected system's paths)."""
        names = [name + ".exe", name] if self.system == "windows" else [name]
        found: List[str] = []
        for entry in self.env_path():
            # A PATH entry that already names a folder inside the root (a shell switched by `cudaenv use
            # --root`) is the image's folder under its own name, not a second toolkit.
            entry = self.unroot(entry)
            for candidate_name in names:
                candidate = self.join(entry, candidate_name)
                real = self._real(candidate)
                try:
                    if real is not None and os.path.isfile(real) and (self.system == "windows" or os.access(real, os.X_OK)):
                        if candidate not in found:
                            found.append(candidate)
                except OSError:
                    continue
        return found

    def which_in_root(self, name: str) -> Optional[str]:
        found = self.which_all_in_root(name)
        return found[0] if found else None

    def run(
        self,
        argv: Sequence[str],
        timeout: Optional[float] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        on_output: Optional[Callable[[bytes], None]] = None,
        until: Optional[bytes] = None,
    ) -> CommandResult:
        """Run a host command with the host's environment (or ``env``) and a timeout (cut to the deadline, if any).
        ``on_output``: each chunk of the command's output as it arrives, besides the bounded capture (``cudaenv
        install`` passes pip's progress through); ``until``: the answer's mark (subprocess_runner: its exit is not
        awaited once it is in and the output closed). The runner gets each only when given."""
        seconds = self.timeout if timeout is None else timeout
        if self.deadline is not None:
            seconds = self.deadline.clip(seconds)
        if argv and self.inspected_only(argv[0]):
            return _process().CommandResult(tuple(argv), None, error="refused", timeout=seconds)
        runner = self._runner or _process().subprocess_runner
        hooks = {k: v for k, v in (("on_output", on_output), ("until", until)) if v is not None}
        return runner(list(argv), seconds, self.env if env is None else env, cwd, **hooks)  # subprocess_runner takes both

    def start(self, argv: Sequence[str], timeout: Optional[float] = None, until: Optional[bytes] = None):
        """:meth:`run` started now and read later, by ``result()`` (:func:`cudaenv.host.process.start_on`)."""
        return _process().start_on(self, argv, timeout, until)

    def inspected_only(self, path: str) -> bool:
        """True when ``path`` (a program, a library) lies inside an image's ``--root``: read as a file, never run
        and never loaded."""
        return self.rooted and not self.root_is_this_machine and self._inside_root(path)

    def _inside_root(self, program: str) -> bool:
        """Whether ``program`` (as given, or after following links on this machine) lies inside ``--root``: a
        mounted image's or a shared folder's programs are inspected as files, never run."""
        root = self._root_str
        for name in (os.path.abspath(program), os.path.realpath(program)):
            if name == root or name.startswith(root + os.sep):
                return True
        return False

    def with_deadline(self, seconds: Optional[float]) -> "Host":
        """A copy of this host whose commands together take at most ``seconds`` from now (None: no deadline)."""
        return Host(self._root_str, self.env, self.system, self.timeout, self._runner, self.machine,
                    None if seconds is None else _process().Deadline(seconds), self.root_is_this_machine)

    def with_env(self, **changes: Optional[str]) -> "Host":
        """A copy of this host with some environment variables set (or removed when None)."""
        env = dict(self.env)
        for key, value in changes.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return Host(self._root_str, env, self.system, self.timeout, self._runner, self.machine, self.deadline,
                    self.root_is_this_machine)


def host_from_environment(
    env: Mapping[str, str], root: Optional[str] = None, timeout: Optional[float] = None, system: Optional[str] = None
) -> Host:
    """The host the CLI inspects: ``--root`` or ``CUDAENV_ROOT``, ``--timeout`` or ``CUDAENV_TIMEOUT``."""
    from cudaenv.core import config

    root = root or config.value(env, "CUDAENV_ROOT") or "/"
    if not os.path.isdir(root):
        from cudaenv.core.errors import UserError  # only now: `cudaenv use` loads no module it does not need
        from cudaenv.core.i18n import M
        raise UserError(M("--root %s is not a directory", root), hint=M("give the folder where the image or chroot is mounted"))
    timeout = config.seconds(env, "CUDAENV_TIMEOUT", explicit=timeout)
    config.check(env, ("CUDAENV_TORCH_TIMEOUT", "CUDAENV_DRIVER_VERSION"))  # read by probes: a wrong value fails here, not as a probe note
    return Host(root=os.path.abspath(root), env=env, system=system or config.value(env, "CUDAENV_SYSTEM"), timeout=timeout)
