"""Read what a removal plan needs from the Host: the I/O half of ``cudaenv uninstall``.

``inspect_uninstall`` reads, for each target (:mod:`~cudaenv.toolkit.uninstall.targets` chose them),
who installed it (its uninstaller, the dpkg/rpm packages owning its files, conda-meta, pip dist-info),
what is in its folder, the ``/usr/local/cuda`` link, update-alternatives, ``/etc/ld.so.conf.d`` and the
shell startup lines naming it. Unreadable files and a broken package database become Notes.
"""

import json
import posixpath
from typing import Dict, List, Optional, Sequence, Tuple

from cudaenv.host.tree import walk
from cudaenv.probes.toolkits import runfile_uninstaller
from cudaenv.toolkit.install.repos import package_suffix
from cudaenv.toolkit.sudo import NO_SUDO_NOTE, has_sudo, is_root, sudo_prefix
from cudaenv.model.snapshot import CudaSymlink, Note, Toolkit
from cudaenv.model.record import replace
from cudaenv.parse.ldconf import ld_conf_lines
from cudaenv.parse.toolkit_files import parse_dist_metadata_name
from cudaenv.probes.dpkg import probe_alternatives
from cudaenv.probes.ldconf import LD_SO_CONF_D
from cudaenv.probes.ldconf import read_ld_conf
from cudaenv.probes.python import env_interpreters
from cudaenv.probes.site_packages import enclosing_site_packages, site_env_prefix
from cudaenv.toolkit.uninstall import dpkg as dpkg_mod
from cudaenv.toolkit.uninstall import rpm as rpm_mod
from cudaenv.toolkit.uninstall.records import PROTECTED
from cudaenv.toolkit.uninstall.facts import AltEntry, DriverFacts, Inspection, LdConf, PipEnv, TargetFacts
from cudaenv.toolkit.uninstall.rcfiles import mentions, probe_rc_lines, system_path
from cudaenv.toolkit.uninstall.wrappers import probe_wrappers
from cudaenv.core.version import major_minor
from cudaenv.core.i18n import M

MAX_WALK = 200000


def _rows(kind: str) -> List[dict]:
    from cudaenv.core.resources import table_rows

    return [r for r in table_rows("uninstall") if r.get("kind") == kind]


def _prefixes(kind: str) -> Tuple[str, ...]:
    return tuple(r["prefix"] for r in _rows(kind))


# ------------------------------------------------------------------------------------ per target


def _walk(host, path: str, notes: List[Note]) -> List[str]:
    """Every path under ``path`` (inspected-system names), links not followed, at most MAX_WALK + 1."""
    unreadable: List[str] = []
    out = [posixpath.join(folder, name) for folder, dirs, files in walk(host, path, MAX_WALK + 1, unreadable)
           for name in dirs + files]
    notes.extend(Note("uninstall", M("cannot read %s", p)) for p in unreadable)
    if len(out) > MAX_WALK:
        notes.append(Note("uninstall", M("%s holds more than %d entries; only the first were compared", path, MAX_WALK)))
        del out[MAX_WALK:]
    return out


def _unowned(host, path: str, owned: frozenset, notes: List[Note]) -> Tuple[str, ...]:
    tops = set()
    for p in _walk(host, path, notes):
        if p not in owned:
            tops.add(p[len(path.rstrip("/")) + 1 :].split("/")[0])
    return tuple(sorted(tops))


def _conda(host, path: str, notes: List[Note]) -> Tuple[Optional[str], Tuple[str, ...], Tuple[str, ...]]:
    prefix = path
    for _ in range(4):
        if host.is_dir(posixpath.join(prefix, "conda-meta")):
            break
        prefix = posixpath.dirname(prefix)
    else:
        return None, (), ()
    wanted = _prefixes("conda-package-prefix")
    names, files = [], []
    for entry in host.listdir(posixpath.join(prefix, "conda-meta")):
        if not entry.endswith(".json"):
            continue
        meta = posixpath.join(prefix, "conda-meta", entry)
        text = host.read_text(meta, limit=64 * 1024 * 1024)
        try:
            name = json.loads(text)["name"] if text else None
        except (ValueError, KeyError, TypeError):
            name = None
        if name is None:
            notes.append(Note("uninstall", M("cannot read the conda record %s", meta)))
            continue
        if name.startswith(wanted):
            names.append(name)
            files.append(meta)
    return prefix, tuple(sorted(set(names))), tuple(sorted(files))


def _pip(host, path: str, python: Optional[str]) -> Optional[PipEnv]:
    site = enclosing_site_packages(path)
    if site is None:
        return None
    from packaging.utils import canonicalize_name

    dists, dirs, torch = [], [], False
    wanted = _prefixes("pip-dist-prefix")
    for entry in host.listdir(site):
        if entry == "torch" or (entry.startswith("torch-") and entry.endswith(".dist-info")):
            torch = True
        if not entry.endswith(".dist-info"):
            continue
        meta = host.read_text(posixpath.join(site, entry, "METADATA"), limit=65536) or ""
        norm = canonicalize_name(parse_dist_metadata_name(meta) or entry.rsplit("-", 1)[0])
        if norm.startswith(wanted):
            dists.append(norm)
            dirs.append(posixpath.join(site, entry))
    env_python = None
    prefix = site_env_prefix(site) if python is None else None
    if prefix is not None:
        env_python = next((c for c in env_interpreters(prefix, host.system) if host.exists(c)), None)
    return PipEnv(site, python or env_python, tuple(sorted(set(dists))), tuple(sorted(dirs)), torch)


def _link_points_here(host, link: Optional[CudaSymlink], path: str) -> bool:
    if link is None or link.target is None:
        return False
    text = link.target if link.target.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(link.path), link.target))
    real = host.resolve(path)
    return text.rstrip("/") == path.rstrip("/") or (link.resolved is not None and real is not None and link.resolved == real)


def inspect_target(host, tk: Toolkit, ctx: Dict, notes: List[Note], python: Optional[str] = None) -> TargetFacts:
    path = tk.path
    present = host.lexists(path)
    is_link = host.is_link(path)
    entries = tuple(host.listdir(path)) if present and not is_link else ()
    db = ctx.get("dpkg")
    packages: Tuple[str, ...] = ()
    dependents: Tuple[str, ...] = ()
    manager = None
    unknown = False
    unowned: Tuple[str, ...] = ()
    shared = path.rstrip("/") in PROTECTED or path.count("/") < 2
    if db is not None:
        if shared:  # a distro toolkit in /usr: only the owners of its own nvcc and /usr/lib/cuda, never all of /usr
            packages = tuple(sorted(set(db.owners_of(posixpath.join(path, "bin/nvcc"))) | set(db.owners_under("/usr/lib/cuda"))))
        else:
            packages = db.owners_under(path)
            real = host.resolve(path)
            if real and real != path:
                packages = tuple(sorted(set(packages) | set(db.owners_under(real))))
        packages = tuple(p.name for p in db.present(packages))
        if packages:
            manager = "dpkg"
            dependents = db.dependents(packages)
            if present and not is_link and not shared:
                unowned = _unowned(host, path, db.owned_paths(packages), notes)
    elif tk.install_method == "rpm" or (present and ctx.get("rpm_db")):
        files = [p for p in _walk(host, path, notes) if host.is_file(p)][:2000] if present else []
        owners = rpm_mod.rpm_owners(host, files, notes) if files else ()
        if owners is None:
            unknown = tk.install_method == "rpm"
        elif owners:
            manager, packages = "rpm", owners
    uninstaller = runfile_uninstaller(host, path) if present and not is_link else None
    method = tk.install_method
    if method == "unknown":
        method = {"dpkg": "deb", "rpm": "rpm"}.get(manager or "", "runfile" if uninstaller else "unknown")
        if method == "unknown" and enclosing_site_packages(path) is not None:
            method = "pip"
        tk = replace(tk, install_method=method)
    conda_prefix, conda_pkgs, conda_files = (None, (), ())
    if method == "conda" or (method == "unknown" and present):
        conda_prefix, conda_pkgs, conda_files = _conda(host, path, notes)
        if conda_prefix and method == "unknown":
            tk = replace(tk, install_method="conda")
    pip = _pip(host, path, python) if tk.install_method == "pip" else None
    windows = ()
    if tk.install_method == "windows-installer" or host.system == "windows":
        mm = major_minor(tk.version) or ""
        windows = tuple(r["name"].format(mm=mm).strip() for r in _rows("windows-entry"))
    alts = []
    for group in ctx.get("alternatives", ()):
        if path in group.paths:
            alts.append(AltEntry(group.name, path, group.admin_file, group.link, tuple(p for p in group.paths if p != path)))
    related: Tuple[str, ...] = ()
    suffix = package_suffix(tk.version) if db is not None and tk.version and tk.install_method not in ("conda", "pip") else None
    if suffix is not None:
        wanted = _prefixes("toolkit-package-prefix")
        related = tuple(
            sorted(p.name for p in db.packages.values() if p.present and p.name.startswith(wanted) and p.name.endswith(suffix) and p.name not in packages)
        )
    active = ctx.get("active_path")
    return TargetFacts(
        toolkit=tk,
        present=present,
        is_link=is_link,
        entries=entries,
        uninstaller=uninstaller,
        package_manager=manager,
        packages=packages,
        dependents=dependents,
        packages_unknown=unknown,
        unowned_entries=unowned,
        conda_prefix=conda_prefix,
        conda_packages=conda_pkgs,
        conda_meta_files=conda_files,
        pip=pip,
        windows_entries=windows,
        alternatives=tuple(alts),
        link_points_here=_link_points_here(host, ctx.get("link"), path),
        active=bool(active) and active.rstrip("/") == path.rstrip("/"),
        related_packages=related,
    )


# ------------------------------------------------------------------------------------ system-wide


def probe_ldconf(host, targets: Sequence[str], db, notes: List[Note]) -> Tuple[LdConf, ...]:
    """The ``/etc/ld.so.conf.d/*.conf`` files with lines naming a target (only those files: never ld.so.conf itself)."""
    found = []
    for file, text in read_ld_conf(host):
        if posixpath.dirname(file) != LD_SO_CONF_D or not file.endswith(".conf"):
            continue
        if text is None:
            notes.append(Note("uninstall", M("cannot read %s", file)))
            continue
        lines, other = [], False
        hit_targets = set()
        for n, line in ld_conf_lines(text):
            hits = [t for t in targets if mentions(line, t)]
            if hits:
                lines.append((n, line))
                hit_targets.update(hits)
            else:
                other = True
        if lines:
            owners = db.owners_of(file) if db is not None else ()
            found.append(LdConf(file, tuple(lines), not other, owners[0] if owners else None, tuple(sorted(hit_targets))))
    return tuple(found)


def _is_wsl(host, notes: List[Note]) -> bool:
    from cudaenv.probes.platform import probe_platform

    return probe_platform(host, notes).wsl == 2


def probe_driver(host, db, notes: List[Note]) -> DriverFacts:
    if host.system == "windows":
        return DriverFacts(system="windows")
    if _is_wsl(host, notes):
        return DriverFacts(wsl=True)
    packages: Tuple[str, ...] = ()
    manager = None
    if db is not None:
        wanted = _prefixes("driver-package-prefix")
        packages = tuple(sorted(p.name for p in db.packages.values() if p.present and p.name.startswith(wanted)))
        manager = "dpkg" if packages else None
    elif rpm_mod.has_rpm_database(host):
        packages = rpm_mod.rpm_installed(host, _prefixes("driver-rpm-package-prefix"), notes) or ()
        manager = "rpm" if packages else None
    uninstaller = None
    for row in _rows("driver-uninstaller"):
        if host.exists(row["path"]):
            uninstaller = row["path"]
    return DriverFacts(package_manager=manager, packages=packages, runfile_uninstaller=uninstaller)


def inspect_uninstall(
    host,
    targets: Sequence[Toolkit],
    toolkits: Sequence[Toolkit],
    link: Optional[CudaSymlink],
    notes: List[Note],
    driver: bool = False,
    python: Optional[str] = None,
    active_path: Optional[str] = None,
    root_user: Optional[bool] = None,
) -> Inspection:
    db = dpkg_mod.probe_dpkg(host, notes)
    ctx = {
        "dpkg": db,
        "rpm_db": db is None and rpm_mod.has_rpm_database(host),
        "alternatives": probe_alternatives(host, notes),
        "link": link,
        "active_path": active_path,
    }
    facts = tuple(inspect_target(host, t, ctx, notes, python) for t in targets)
    # a toolkit in /usr (distro packages) is never searched for by path: every line naming /usr would match
    paths = [t.path for t in targets if t.path.rstrip("/") not in PROTECTED and t.path.count("/") >= 2]
    home = host.env.get("HOME")
    root_user = is_root() if root_user is None else root_user
    sudo = has_sudo(host)
    if not root_user and not sudo and host.system != "windows":
        notes.append(Note("uninstall", M(NO_SUDO_NOTE)))
    return Inspection(
        system=host.system,
        targets=facts,
        toolkits=tuple(toolkits),
        cuda_symlink=link,
        ldconf=probe_ldconf(host, paths, db, notes) if host.system != "windows" else (),
        rc_lines=probe_rc_lines(host, paths, notes) if host.system != "windows" else (),
        wrappers=probe_wrappers(host, paths, notes) if host.system != "windows" else (),
        driver=probe_driver(host, db, notes) if driver else None,
        home=system_path(host, home) if home else None,
        root=str(host.root) if host.rooted else "/",
        notes=tuple(notes),
        sudo=bool(sudo_prefix(not root_user, sudo)),
    )
