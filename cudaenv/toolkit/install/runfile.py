"""``cudaenv install 12.4 --runfile FILE``: NVIDIA's runfile, toolkit only, without root, into the data dir.

``check-installer``'s checks first (a cut download, a web page saved as .run, a corrupt payload: refused, never
run); then the runfile runs with the flags of ``data/toolkit_install.json``'s runfile row (``--silent --toolkit
--toolkitpath=<staging> ...``; never ``--driver``), into a staging folder beside the target, under the same lock
as a wheel install; the finished tree gets the marker and is renamed into place."""

from __future__ import annotations

import os

from cudaenv.core.errors import UserError
from cudaenv.core.text import printable
from cudaenv.core.i18n import M, listing


def runfile_argv(sh: str, runfile: str, toolkit: str, tmp: str, table=None) -> list:
    """The command that installs the toolkit only into ``toolkit`` (pure; no driver flag is ever in it)."""
    from cudaenv.toolkit.install.repos import row

    flags = [f.format(path=toolkit, tmp=tmp) for f in row("runfile", table)["flags"]]
    if any(f.startswith("--driver") for f in flags):
        raise UserError(M("the runfile row of toolkit_install.json names a driver flag; refused"))
    return [sh, runfile] + flags


def install_runfile(host, path: str, spec: str, base: str, reinstall: bool, timeout: float, version: str):
    """Check, then run the runfile toolkit-only into a staging folder of ``base``; returns an apply.Outcome."""
    import tempfile

    from cudaenv.toolkit.installer_check import check_installer
    from cudaenv.parse.toolkit_files import parse_version_json
    from cudaenv.probes.toolkits import store as store
    from cudaenv.toolkit.install import apply
    from cudaenv.toolkit.select import names_version

    if not os.path.isfile(path):
        raise UserError(M("--runfile %s is not a file", printable(path)), hint=M("give the downloaded cuda_*_linux.run"))
    try:
        report = check_installer(path, host)
    except OSError as exc:
        raise UserError(M("cannot read %s: %s", printable(path), printable(exc.strerror or exc)))
    if report.verdict not in ("ok", "unverified"):
        raise UserError(M("%s failed check-installer: %s", printable(path), listing(M("; "), report.problems, printable) or printable(report.verdict)),
                        hint=M("`cudaenv check-installer %s` says why; download it again", printable(path)), exit_code=1)
    if report.toolkit_version and not names_version(spec, report.toolkit_version):
        raise UserError(M("%s holds CUDA %s, not %s", printable(path), printable(report.toolkit_version), spec))
    sh = host.which("sh")
    if sh is None:
        raise UserError(M("sh is not on PATH"))
    try:
        os.makedirs(base, exist_ok=True)
    except OSError as exc:
        raise UserError(M("cannot create %s: %s", base, exc.strerror or exc), hint=M("give --prefix DIR you can write")) from None
    name = report.toolkit_version or spec
    target = os.path.join(base, name)
    if store.is_cudaenv_install(host, target) and not reinstall:
        return apply.Outcome("already-installed", name, target)
    if os.path.lexists(target) and not store.is_cudaenv_install(host, target):
        raise UserError(M("%s exists and is not a cudaenv install", target), hint=M("move it away, or give --prefix DIR"))
    apply.clean_stale(base)
    lock = os.path.join(base, ".%s.lock" % name)
    fd = apply._lock(lock, lambda line: None, name)
    stage = None
    try:
        stage = tempfile.mkdtemp(prefix=".%s.tmp-" % name, dir=base)
        tree, scratch = os.path.join(stage, "tree"), os.path.join(stage, "tmp")
        os.makedirs(scratch)
        result = host.run(runfile_argv(sh, path, tree, scratch), timeout=timeout, cwd=stage)
        if not result.ok:
            raise apply.InstallError(M("the runfile failed: %s", result.describe()), hint=result.excerpt() or None)
        if not os.path.isfile(os.path.join(tree, "bin", "nvcc")):
            raise apply.InstallError(M("the runfile finished but left no bin/nvcc in %s", tree))
        text = host.read_text(os.path.join(tree, "version.json"), limit=1024 * 1024)
        release = (parse_version_json(text) if text else None) or name
        with open(os.path.join(tree, store.MARKER), "x", encoding="utf-8") as fh:
            fh.write('{"installer": "cudaenv", "cudaenv_version": "%s", "release": "%s", "source": "runfile"}\n' % (version, release))
        apply.swap_into_place(tree, target, os.path.join(stage, "old"))
    except OSError as exc:
        raise apply.InstallError(M("installing into %s failed: %s", base, exc.strerror or exc)) from None
    finally:
        if stage is not None:
            apply._remove_tree(stage)
        apply._unlock(fd, lock)
    return apply.Outcome("installed", release, target)
