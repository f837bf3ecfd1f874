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
"""

from __future__ import annotations

import os
import posixpath
import sys

from cudaenv import config as _config
from cudaenv._lazy import LazyModule
from cudaenv._record import Record

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

DEFAULT_TIMEOUT = _config.setting("CUDAENV_TIMEOUT").default  # 5 s: the one default lives in config's table
MAX_READ = 4 * 1024 * 1024
MAX_LINKS = 40


def current_system() -> str:
    """``linux``, ``windows`` or ``darwin`` for the running interpreter."""
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "darwin"
    return "linux"


class CommandResult(Record):
    """What running a command gave. ``error`` is ``missing``, ``timeout`` or ``oserror`` when it did not run to the end."""

    argv: Tuple[str, ...]
    returncode: Optional[int]
    stdout: str = ""
    stderr: str = ""
    error: Optional[str] = None
    seconds: float = 0.0
    timeout: float = DEFAULT_TIMEOUT
    undecodable: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    @property
    def output(self) -> str:
        """stdout and stderr together (many NVIDIA tools print errors on stdout)."""
        if self.stdout and self.stderr:
            return self.stdout + "\n" + self.stderr
        return self.stdout or self.stderr

    @property
    def name(self) -> str:
        return posixpath.basename(self.argv[0].replace("\\", "/")) if self.argv else "?"

    def describe(self) -> str:
        """One line for a note: ``nvidia-smi timed out after 5 s``."""
        if self.error == "missing":
            return "%s was not found" % self.name
        if self.error == "timeout":
            return "%s timed out after %s s" % (self.name, _fmt_seconds(self.timeout))
        if self.error == "oserror":
            return "%s could not be run: %s" % (self.name, self.stderr.strip() or "OS error")
        if self.returncode != 0:
            first = next((line.strip() for line in self.output.splitlines() if line.strip()), "")
            return "%s exited with status %s%s" % (self.name, self.returncode, (": " + first) if first else "")
        return "%s ran" % self.name


def _fmt_seconds(value: float) -> str:
    return ("%g" % value) if value != int(value) else str(int(value))


def _decode(data: Optional[bytes]) -> Tuple[str, bool]:
    if not data:
        return "", False
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


# A runner: (argv, timeout, env, cwd) -> CommandResult


def subprocess_runner(argv: Sequence[str], timeout: float, env: Mapping[str, str], cwd: Optional[str] = None) -> CommandResult:
    """Run ``argv`` with a hard timeout; the whole process group is killed when it expires."""
    import errno
    import subprocess
    import time

    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    kwargs = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:  # pragma: no cover - Windows only
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    try:
        proc = subprocess.Popen(  # bounded: communicate(timeout=timeout) below, then the group is killed
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            **kwargs,
        )
    except FileNotFoundError:
        return CommandResult(argv, None, error="missing", timeout=timeout)
    except OSError as exc:
        err = "missing" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else "oserror"
        return CommandResult(argv, None, stderr=str(exc), error=err, timeout=timeout)
    try:
        out, err_b = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_process_group(proc)
        try:
            out, err_b = proc.communicate(timeout=1.0)
        except (subprocess.TimeoutExpired, ValueError, OSError):
            out, err_b = b"", b""
        so, bad1 = _decode(out)
        se, bad2 = _decode(err_b)
        return CommandResult(argv, None, so, se, "timeout", time.monotonic() - start, timeout, bad1 or bad2)
    so, bad1 = _decode(out)
    se, bad2 = _decode(err_b)
    return CommandResult(argv, proc.returncode, so, se, None, time.monotonic() - start, timeout, bad1 or bad2)


# The runner a Host uses when it is given none. Only the test suite sets it (tests/conftest.py installs a runner
# that refuses any program outside the test's fake machine); cudaenv itself never does.
default_runner: Optional[Callable[..., CommandResult]] = None


def kill_process_group(proc) -> None:
    """Kill ``proc`` and every process in its group (it was started with ``start_new_session``)."""
    import signal

    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows only
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def _read_limited(real: str, limit: int) -> Optional[bytes]:
    """Up to ``limit`` bytes, read in small chunks: some /proc and /sys files refuse one large read (ENOMEM)."""
    chunks: List[bytes] = []
    size = 0
    try:
        with open(real, "rb") as fh:
            while size < limit:
                chunk = fh.read(min(65536, limit - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except (OSError, ValueError):
        return None
    return b"".join(chunks)


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
    ):
        self._root_str = os.fspath(root) or "/"
        if len(self._root_str) > 1:
            self._root_str = self._root_str.rstrip("/\\") or "/"
        self.env: Dict[str, str] = dict(env if env is not None else {})
        self.system = system or current_system()
        self.timeout = float(timeout)
        self._runner = runner or default_runner or subprocess_runner
        self.machine = machine

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

    def _real(self, p: str) -> Optional[str]:
        resolved = self.resolve(p)
        return None if resolved is None else self._rooted(resolved)

    def read_text(self, p: str, limit: int = MAX_READ) -> Optional[str]:
        """The file's text (UTF-8, undecodable bytes replaced), or None when it cannot be read."""
        real = self._real(p)
        if real is None:
            return None
        data = _read_limited(real, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_bytes(self, p: str, limit: int = MAX_READ) -> Optional[bytes]:
        real = self._real(p)
        if real is None:
            return None
        return _read_limited(real, limit)

    def exists(self, p: str) -> bool:
        """True when ``p`` exists (links followed inside the root)."""
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
        resolved = self.resolve(p)
        try:
            return resolved is not None and os.path.isdir(self._rooted(resolved))
        except (OSError, ValueError):
            return False

    def is_file(self, p: str) -> bool:
        resolved = self.resolve(p)
        try:
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
        resolved = self.resolve(p)
        if resolved is None:
            return []
        try:
            return sorted(os.listdir(self._rooted(resolved)))
        except (OSError, ValueError):
            return []

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
        sep = "/"
        if not p.startswith(sep):
            p = sep + p
        pending = [x for x in p.split(sep) if x]
        done: List[str] = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = sep + sep.join(done + [part])
            target = self.readlink(candidate)
            if target is None:
                done.append(part)
                continue
            hops += 1
            if hops > MAX_LINKS:
                return None
            if target.startswith(sep):
                done = []
            pending = [x for x in target.split(sep) if x] + pending
        result = sep + sep.join(done)
        if not self.lexists(result):
            return None
        return result

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
            if not os.path.isfile(real):
                return
            fh = open(real, "rb")
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
    ) -> CommandResult:
        """Run a host command with the host's environment (or ``env``) and a timeout."""
        return self._runner(list(argv), self.timeout if timeout is None else timeout, self.env if env is None else env, cwd)

    def with_env(self, **changes: Optional[str]) -> "Host":
        """A copy of this host with some environment variables set (or removed when None)."""
        env = dict(self.env)
        for key, value in changes.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return Host(self._root_str, env, self.system, self.timeout, self._runner, self.machine)


def host_from_environment(
    env: Mapping[str, str], root: Optional[str] = None, timeout: Optional[float] = None, system: Optional[str] = None
) -> Host:
    """The host the CLI inspects: ``--root`` or ``CUDAENV_ROOT``, ``--timeout`` or ``CUDAENV_TIMEOUT``."""
    from cudaenv import config
    from cudaenv.errors import UserError

    root = root or config.value(env, "CUDAENV_ROOT") or "/"
    if not os.path.isdir(root):
        raise UserError("--root %s is not a directory" % root, hint="give the folder where the image or chroot is mounted")
    timeout = config.seconds(env, "CUDAENV_TIMEOUT", explicit=timeout)
    config.check(env, ("CUDAENV_TORCH_TIMEOUT",))  # read by a probe: a wrong value fails here, not as a probe note
    return Host(root=os.path.abspath(root), env=env, system=system or config.value(env, "CUDAENV_SYSTEM"), timeout=timeout)
