"""``cudaenv install`` from wheels, through the Host: resolve, download, check, assemble, rename into place.

1. ``pip index versions cuda-toolkit`` -> the releases; the spec picks one (:func:`plan.choose_release`);
2. ``pip install --dry-run --ignore-installed --report`` of ``cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==R``: the
   meta-package's Requires-Dist (the pins), each component's file and the index's sha256 (:func:`plan.plan_components`);
3. ``pip download`` of the same requirement from the same index, run *beside* step 2 (the install waits for one pip
   start-up, not two), into a staging folder *beside* the target: each file step 2 planned must be there, its sha256
   the index's, checked here (``uv pip install --no-deps --require-hashes --target`` of exactly those files, after
   step 2, with ``--installer uv``);
4. the wheels unpacked into the staging folder's tree (:mod:`assemble`), the links added, ``lib/stubs/libcuda.so``
   built (:mod:`stub`), ``version.json`` and the marker written last; then one ``rename`` puts the tree in place.

All of it runs under an exclusive lock on ``.<release>.lock`` in the store: a second install of the same release
waits, then finds it installed. Whatever stops the install (an exception, Ctrl-C, SIGTERM, a failed download, a
full disk) removes the staging folder; discovery never lists a folder without the marker.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from typing import Callable, Optional, Sequence

from cudaenv.core.errors import UserError
from cudaenv.probes.toolkits import store as store
from cudaenv.toolkit.install import assemble, plan, stub
from cudaenv.core.i18n import M

HASH_CHUNK = 1024 * 1024
MAX_WHEEL = 2 * 1024 * 1024 * 1024


class InstallError(UserError):
    """The install failed; nothing was left behind. Exit code 1."""

    def __init__(self, message: str, hint: Optional[str] = None):
        super().__init__(message, hint, exit_code=1)


class Outcome:
    """What :func:`install_from_wheels` did (the command turns it into an InstallReport)."""

    def __init__(self, status: str, release: str, path: str, components=(), download_bytes: int = 0, files: int = 0,
                 links=(), notes=()):
        self.status, self.release, self.path, self.components = status, release, path, tuple(components)
        self.download_bytes, self.files, self.links, self.notes = download_bytes, files, tuple(links), tuple(notes)


def _quiet(_line: str) -> None:
    pass


def find_installer(host, installer: str) -> list:
    """The argv prefix of the installer: ``pip`` (or ``pip3``) on PATH, or ``uv`` for ``--installer uv``."""
    if installer == "uv":
        uv = host.which("uv")
        if uv is None:
            raise UserError(M("--installer uv: uv is not on PATH"), hint=M("install uv, or drop --installer uv (pip is used)"))
        return [uv]
    pip = host.which("pip") or host.which("pip3")
    if pip is None:
        raise UserError(M("pip is not on PATH"), hint=M("activate an environment that has pip, or give --installer uv"))
    return [pip]


def _failed(what: str, result) -> InstallError:
    text = (result.stderr or "") + (result.stdout or "")
    if "No space left on device" in text or "Errno 28" in text:
        return InstallError(M("%s failed: no space left on device", what), hint=M("free some space, or give --prefix DIR on another disk"))
    return InstallError(M("%s failed: %s", what, result.describe()), hint=(result.excerpt() or None))


def releases(host, pip: Sequence[str], timeout: float) -> tuple:
    from cudaenv.parse.pip_output import parse_index_versions

    result = host.run(list(pip) + ["index", "versions", plan.META], timeout=timeout)
    if not result.ok:
        raise _failed(M("`pip index versions %s`", plan.META), result)
    found = parse_index_versions(result.stdout)
    if not found:
        raise InstallError(M("pip listed no %s releases", plan.META))
    return found


def sha256_of(path: str) -> str:
    from cudaenv.host.files import open_regular

    digest = hashlib.sha256()
    with open_regular(path) as fh:
        left = MAX_WHEEL
        while left > 0:
            chunk = fh.read(min(HASH_CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            digest.update(chunk)
    return digest.hexdigest()


def _lock(path: str, progress: Callable[[str], None], release: str):
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(M("waiting for another install of %s to finish", release))
            fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unlock(fd: int, path: str) -> None:
    """Release the lock and remove its file (still held, so no other install is between its checks): nothing of an
    install, finished or failed, stays in the store but the toolkit itself. A waiting install then holds the old,
    unlinked file's lock and finds the toolkit installed (or installs it: the staging folders never collide)."""
    try:
        os.unlink(path)
    except OSError:
        pass
    os.close(fd)


def clean_stale(base: str) -> list:
    """Remove the staging (``.R.tmp-*``) and removal (``.R.rm-*``) folders that a killed install or uninstall left
    in the store: those whose release lock nobody holds (a live install holds its lock until it ends; the kernel
    drops the lock of a killed one). Returns the folders removed."""
    import fcntl

    removed = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    for name in names:
        release, tmp, _ = name[1:].rpartition(".tmp-") if ".tmp-" in name else name[1:].rpartition(".rm-")
        if not name.startswith(".") or not release or not os.path.isdir(os.path.join(base, name)):
            continue
        lock = os.path.join(base, ".%s.lock" % release)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # an install of that release is running: its staging folder is live
            _remove_tree(os.path.join(base, name))
            removed.append(name)
            try:
                os.unlink(lock)
            except OSError:
                pass
        finally:
            os.close(fd)
    return removed


def _remove_tree(path: str) -> None:
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)


def install_from_wheels(host, release: str, base: str, installer: str = "pip", reinstall: bool = False,
                        progress: Callable[[str], None] = _quiet, timeout: float = 1800.0, version: str = "",
                        added: Optional[plan.Extras] = None, output: Optional[Callable[[bytes], None]] = None) -> Outcome:
    """Install ``release`` (a cuda-toolkit release from :func:`plan.choose_release`) into ``base/release``.

    ``added``: the ``--components`` (more extras of the meta-package, and cuDNN); ``output``: pip's (or uv's) output
    as it arrives, for a terminal (the download step only; the capture stays bounded either way)."""
    from cudaenv.parse.pip_output import parse_install_report

    target = os.path.join(base, release)
    if store.is_cudaenv_install(host, target) and not reinstall:
        return Outcome("already-installed", release, target)
    if os.path.lexists(target) and not store.is_cudaenv_install(host, target):
        raise UserError(M("%s exists and is not a cudaenv install", target), hint=M("move it away, or give --prefix DIR"))
    pip = find_installer(host, "pip")  # pip reads the pins and hashes (uv has no --report)
    argv = find_installer(host, installer) if installer == "uv" else pip
    try:
        os.makedirs(base, exist_ok=True)
    except OSError as exc:
        raise UserError(M("cannot create %s: %s", base, exc.strerror or exc), hint=M("give --prefix DIR you can write")) from None
    clean_stale(base)
    lock = os.path.join(base, ".%s.lock" % release)
    fd = _lock(lock, progress, release)
    stage = None
    try:
        if store.is_cudaenv_install(host, target) and not reinstall:
            return Outcome("already-installed", release, target)
        import tempfile

        stage = tempfile.mkdtemp(prefix=".%s.tmp-" % release, dir=base)
        progress(M("resolving cuda-toolkit %s", release))
        report_file = os.path.join(stage, "report.json")
        extras = plan.EXTRAS + (added.extras if added else ())
        wanted = [plan.requirement(release, extras)] + list(added.unpinned if added else ())
        wheels = os.path.join(stage, "wheels")
        download = None
        if installer != "uv":  # pip downloads the same requirement from the same index while pip resolves it (issue 35:
            from cudaenv.core.jobs import Job  # the wait of one pip start-up, not two); each file is checked below

            download = Job(lambda: host.run(argv + ["download", "--only-binary", ":all:", "--dest", wheels] + wanted,
                                            timeout=timeout, on_output=output))
        try:
            result = host.run(list(pip) + ["install", "--dry-run", "--ignore-installed", "--quiet", "--report", report_file]
                              + wanted, timeout=timeout)
            if not result.ok:
                raise _failed(M("resolving %s", " ".join(wanted)), result)
            text = host.read_text(report_file, limit=8 * 1024 * 1024)
            try:
                the_plan = plan.plan_components(release, parse_install_report(text or ""), added)
            except plan.PlanError as exc:
                raise InstallError(exc.message, exc.hint) from None
        except BaseException:
            _stop(download)
            raise
        reqs = os.path.join(stage, "requirements.txt")
        with open(reqs, "w", encoding="utf-8") as fh:
            for c in the_plan.components:
                fh.write("%s==%s --hash=sha256:%s\n" % (c.name, c.version, c.sha256))
        tree = os.path.join(stage, "tree")
        names = ", ".join("%s %s" % (c.name, c.version) for c in the_plan.components)
        download_bytes = 0
        if installer == "uv":
            progress(M("installing %s with uv", names))
            site = os.path.join(stage, "site")
            result = host.run(argv + ["pip", "install", "--no-deps", "--require-hashes", "--target", site, "-r", reqs],
                              timeout=timeout, on_output=output)
            if not result.ok:
                raise _failed("uv pip install", result)
            files, links = _tree_from_site(site, tree, host.machine or os.uname().machine)
        else:
            progress(M("downloading %s", names))
            try:
                result = download.result()
            except BaseException:  # Ctrl-C while pip downloads: pip stops before the staging folder goes
                _stop(download)
                raise
            if not result.ok:
                raise _failed("pip download", result)
            paths = []
            for c in the_plan.components:
                path = os.path.join(wheels, c.filename)
                if not os.path.isfile(path):
                    raise InstallError(M("pip download did not leave %s", c.filename))
                got = sha256_of(path)
                if got != c.sha256:
                    raise InstallError(M("sha256 mismatch for %s: the index says %s, the file has %s", c.filename, c.sha256, got),
                                       hint=M("nothing was installed; try again (a proxy or mirror may have changed the file)"))
                download_bytes += os.path.getsize(path)
                paths.append(path)
            progress(M("unpacking %d wheels (%d MB)", len(paths), download_bytes // 1000000))
            files, links = _tree_from_wheels(paths, tree, host.machine or os.uname().machine)
        progress(M("building lib64/stubs/libcuda.so (links -lcuda where no driver is)"))
        _stub, why = stub.build_stub(host, tree, stage, min(timeout, 120.0))
        _write(os.path.join(tree, "version.json"), assemble.version_json(release, the_plan.components))
        _write(os.path.join(tree, store.MARKER), assemble.marker(release, the_plan.components, installer, version,
                                                                   plan.component_names(added)))
        swap_into_place(tree, target, os.path.join(stage, "old"))
        progress(M("installed CUDA %s in %s", release, target))
        return Outcome("installed", release, target, the_plan.components, download_bytes, files, links, (why,) if why else ())
    except OSError as exc:
        import errno

        if exc.errno == errno.ENOSPC:
            raise InstallError(M("no space left on device while installing into %s", base),
                               hint=M("free some space, or give --prefix DIR on another disk")) from None
        raise InstallError(M("installing into %s failed: %s", base, exc.strerror or exc)) from None
    except assemble.AssembleError as exc:
        raise InstallError(exc.args[0] if exc.args else str(exc), hint=M("nothing was installed")) from None
    finally:
        if stage is not None:
            _remove_tree(stage)
        _unlock(fd, lock)


def _stop(download) -> None:
    """Stop the download running beside the resolve (its pip, the one child then) and wait for its thread, so that
    nothing writes into the staging folder once it is removed."""
    if download is None:
        return
    from cudaenv.host import kill_all_children

    kill_all_children(stop_new=False)
    try:
        download.result()
    except BaseException:  # noqa: BLE001 - the install's own error is the one raised
        pass


def swap_into_place(tree: str, target: str, old: str) -> None:
    """Rename ``tree`` to ``target``; a ``target`` already there (``--reinstall``) is moved to ``old`` first and put
    back if the second rename fails or is interrupted."""
    if not os.path.lexists(target):
        os.rename(tree, target)
        return
    os.rename(target, old)
    try:
        os.rename(tree, target)
    except BaseException:
        if not os.path.lexists(target):
            os.rename(old, target)
        raise


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _tree_from_wheels(paths: Sequence[str], tree: str, machine: str):
    os.makedirs(tree)
    seen: dict = {}
    total = [0]
    files = sum(assemble.unpack_wheel(p, tree, seen, total) for p in paths)
    return files, assemble.fix_layout(tree, machine)


def _tree_from_site(site: str, tree: str, machine: str):
    """uv's ``--target`` folder -> the tree: ``nvidia/cuNN/*`` moved up (uv kept the exec bits and checked the hashes)."""
    nvidia = os.path.join(site, "nvidia")
    roots = [os.path.join(nvidia, n) for n in (os.listdir(nvidia) if os.path.isdir(nvidia) else [])
             if n.startswith("cu") and n[2:].isdigit()]
    if len(roots) != 1:
        raise InstallError(M("uv installed no single nvidia/cuNN tree into %s", site))
    os.makedirs(tree)
    files = 0
    for name in sorted(os.listdir(roots[0])):
        if name in ("__init__.py", "__pycache__", ".metadata"):
            continue
        os.rename(os.path.join(roots[0], name), os.path.join(tree, name))
    for folder in assemble.LIBRARY_FOLDERS:  # cuDNN: nvidia/cudnn/{include,lib} into the tree's include/ and lib/
        top = os.path.join(nvidia, folder)
        for sub in ("include", "lib"):
            src = os.path.join(top, sub)
            if not os.path.isdir(src) or os.path.islink(src):
                continue
            for dirpath, _sub, names in os.walk(src):
                rel = os.path.relpath(dirpath, src)
                dest = os.path.normpath(os.path.join(tree, sub, rel))
                os.makedirs(dest, exist_ok=True)
                for name in names:
                    if os.path.lexists(os.path.join(dest, name)):
                        raise InstallError(M("two wheels hold %s/%s", sub, os.path.join(rel, name)))
                    os.rename(os.path.join(dirpath, name), os.path.join(dest, name))
    for _dir, _sub, names in os.walk(tree):
        files += len(names)
    return files, assemble.fix_layout(tree, machine)


def remove_install(path: str) -> None:
    """Remove a cudaenv install: renamed to a hidden name first (discovery stops listing it at once), then deleted."""
    import tempfile

    parent = os.path.dirname(path.rstrip("/"))
    name = os.path.basename(path.rstrip("/"))
    lock = os.path.join(parent, ".%s.lock" % name)
    fd = _lock(lock, _quiet, name)  # never under a running install of that release
    try:
        hidden = tempfile.mkdtemp(prefix=".%s.rm-" % name, dir=parent)
        try:
            os.rename(path, os.path.join(hidden, "tree"))
        finally:
            shutil.rmtree(hidden, ignore_errors=True)
    finally:
        _unlock(fd, lock)
