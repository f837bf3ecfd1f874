"""Steps 1-2 of an uninstall plan: the toolkit's own removal tool, then what is left of its folder. Pure: no I/O.

The tool is ``bin/cuda-uninstaller`` (runfile), ``apt-get --purge remove`` / ``dnf remove`` of the exact packages
owning its files, ``conda remove -p``, ``PY -m pip uninstall`` or the Windows Apps & features entries; the folder
(``rm -rf -- DIR``) only when something remains that no tool removes, never a protected system folder.
"""

from typing import Optional, Tuple

from cudaenv.model.snapshot import Note
from cudaenv.toolkit.uninstall.builder import Builder, label, under
from cudaenv.toolkit.uninstall.facts import TargetFacts
from cudaenv.toolkit.uninstall.records import PROTECTED, Guard, HostPath, Options, Step
from cudaenv.core.i18n import M


# ----------------------------------------------------------------------------- step 1: the tool


def tool_step(b: Builder, t: TargetFacts, options: Options) -> Optional[Step]:
    tk = t.toolkit
    method = tk.install_method
    if t.packages and t.package_manager == "dpkg":
        details = [M("packages owning files in %s: %s", tk.path, " ".join(t.packages))]
        if t.dependents:
            details.append(M("apt will also remove these installed packages that depend on them: %s", " ".join(t.dependents)))
        return b.add(
            "apt-remove",
            M("Remove the %d Debian package(s) that own the files of %s (exact names from the dpkg database)", len(t.packages), label(tk)),
            commands=(("apt-get", "--purge", "remove", *t.packages),),
            needs_root=True,
            destructive=True,
            paths=(tk.path,),
            details=tuple(details),
            target=tk.path,
        )
    if t.packages and t.package_manager == "rpm":
        return b.add(
            "dnf-remove",
            M("Remove the %d rpm package(s) that own the files of %s (exact names from the rpm database)", len(t.packages), label(tk)),
            commands=(("dnf", "remove", *t.packages),),
            needs_root=True,
            destructive=True,
            paths=(tk.path,),
            details=(M("packages owning files in %s: %s", tk.path, " ".join(t.packages)),),
            target=tk.path,
        )
    if t.packages_unknown:
        return b.add(
            "rpm-unknown",
            M("Find the rpm packages that own %s (`rpm -qf %s/bin/nvcc`) and remove exactly those with `dnf remove NAME...`", label(tk), tk.path),
            target=tk.path,
        )
    if t.uninstaller:
        argv: Tuple[str, ...] = (HostPath(t.uninstaller),)
        if t.uninstaller.endswith(".pl"):
            argv = ("perl", HostPath(t.uninstaller))
        return b.add(
            "runfile-uninstaller",
            M("Run %s's own uninstaller (it was installed from a .run file)", label(tk)),
            commands=(argv,),
            needs_root=b.root_for(tk.path),
            destructive=True,
            paths=(tk.path,),
            target=tk.path,
        )
    if method == "conda" and t.conda_prefix:
        if not t.conda_packages:
            b.notes.append(Note("uninstall", M("no CUDA packages are recorded in %s/conda-meta", t.conda_prefix)))
            return None
        return b.add(
            "conda-remove",
            M("Remove the CUDA packages from the conda environment %s (`conda env remove -p %s` would remove the whole environment)", t.conda_prefix, t.conda_prefix),
            commands=(("conda", "remove", "-p", HostPath(t.conda_prefix), *t.conda_packages),),
            needs_root=b.root_for(t.conda_prefix),
            destructive=True,
            paths=tuple(t.conda_meta_files),
            details=(M("conda packages: %s", " ".join(t.conda_packages)),),
            target=tk.path,
        )
    if method == "pip" and t.pip is not None:
        if not t.pip.dists:
            b.notes.append(Note("uninstall", M("no nvidia-* distributions found in %s", t.pip.site_packages)))
            return None
        python = options.python or t.pip.python
        if python is None:
            return b.add(
                "pip-uninstall",
                M("Uninstall the nvidia-* wheels from %s with the Python that owns it: PY -m pip uninstall -y %s (give --python PY)", t.pip.site_packages, " ".join(t.pip.dists)),
                target=tk.path,
            )
        py = python if options.python else HostPath(python)
        details = [M("wheels: %s", " ".join(t.pip.dists))]
        if t.pip.torch:
            details.append(M("torch installed there needs them: reinstall torch (`cudaenv torch recommend`) afterwards"))
        return b.add(
            "pip-uninstall",
            M("Uninstall the nvidia-* CUDA wheels from %s", t.pip.site_packages),
            commands=((py, "-m", "pip", "uninstall", "-y", *t.pip.dists),),
            needs_root=b.root_for(t.pip.site_packages),
            destructive=True,
            paths=tuple(t.pip.dist_dirs),
            details=tuple(details),
            target=tk.path,
        )
    if method == "windows-installer" or b.inspection.system == "windows":
        entries = t.windows_entries
        return b.add(
            "windows-uninstall",
            M("In Windows Settings > Apps > Installed apps (Apps & features), uninstall the %s entries; each runs "
            "MsiExec.exe /X{product code} (the codes live in the registry, which cannot be read from here)", label(tk)),
            needs_root=True,
            destructive=True,
            paths=(tk.path,),
            details=tuple('"%s"' % e for e in entries),
            target=tk.path,
        )
    return None


# ----------------------------------------------------------------------------- step 2: the folder


def folder_step(b: Builder, t: TargetFacts, tool: Optional[Step]) -> None:
    tk = t.toolkit
    if not t.present or tk.install_method in ("conda", "pip") or b.inspection.system == "windows":
        if b.inspection.system == "windows" and t.present:
            b.add(
                "windows-folder",
                M("After the uninstaller, delete what is left of %s (in an administrator PowerShell: Remove-Item -Recurse -LiteralPath '%s')", tk.path, tk.path),
                needs_root=True,
                destructive=True,
                paths=(tk.path,),
                after=(tool.id,) if tool else (),
                target=tk.path,
            )
        return
    path = tk.path.rstrip("/")
    if t.is_link:
        b.add(
            "remove-link",
            M("Remove the link %s itself (it is a link: nothing it points to is touched)", path),
            commands=(("rm", "--", HostPath(path)),),
            needs_root=b.root_for(path),
            destructive=True,
            paths=(path,),
            only_if=Guard("exists", path),
            target=path,
        )
        return
    if path in PROTECTED or path.count("/") < 2 or under(b.inspection.home or "\0", path):
        b.notes.append(Note("uninstall", M("refusing to plan the removal of %s as a whole: it is not a toolkit's own folder", path)))
        return
    if tool is not None and tool.kind in ("apt-remove", "dnf-remove"):
        if not t.unowned_entries:
            return
        remains = t.unowned_entries
        why = M("After the packages are gone, remove what no package owns in %s", path)
    elif tool is not None:
        remains = t.entries
        why = M("After the uninstaller, remove whatever it leaves of %s", path)
    else:
        remains = t.entries
        why = M("Nothing registered %s (no uninstaller, no package owns it): remove the folder", label(tk))
    shown = list(remains[:12]) + ([M("... and %d more", len(remains) - 12)] if len(remains) > 12 else [])
    b.add(
        "remove-folder",
        why,
        commands=(("rm", "-rf", "--", HostPath(path)),),
        needs_root=b.root_for(path),
        destructive=True,
        paths=(path,),
        details=tuple("%s/%s" % (path, e) if not e.startswith("...") else e for e in shown),
        only_if=Guard("exists", path),
        after=(tool.id,) if tool else (),
        target=path,
    )
