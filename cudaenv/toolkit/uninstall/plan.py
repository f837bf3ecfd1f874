"""Plan the removal of CUDA toolkits: ordered steps, each with its exact commands. Pure: no I/O.

Order (each step only ever depends on the ones before it):

1. the toolkit's own removal tool: ``bin/cuda-uninstaller`` (runfile), ``apt-get --purge remove`` /
   ``dnf remove`` of the exact packages owning its files, ``conda remove -p``, ``PY -m pip uninstall``,
   or the Windows Apps & features entries;
2. what is left of the folder (``rm -rf -- DIR``), only when something remains that no tool removes;
3. ``update-alternatives --remove NAME DIR`` for every alternatives group listing it;
4. the ``/usr/local/cuda`` link when it points at it: removed (``rm -- LINK``, never following it) or,
   with ``--repoint``, pointed at another toolkit;
5. links and exec-only wrapper scripts on PATH leading into it (``/usr/local/bin/nvcc``);
6. ``/etc/ld.so.conf.d`` files naming it; 7. shell startup lines (with a backup); 8. the driver (``--driver``);
9. ``ldconfig`` last.

Steps after the first carry a guard (``only_if``): the script skips a step whose residue the removal tool
already took away. Paths in commands that name the inspected system's files are :class:`HostPath` values,
so the script can read them through ``$ROOT`` (``--root``).
"""

from typing import Any, Dict, List, Optional, Tuple

from cudaenv._record import Record
from cudaenv.snapshot import Note, Toolkit
from cudaenv.toolkit.uninstall.facts import Inspection, TargetFacts
from cudaenv.toolkit.uninstall.rcfiles import EDIT_LINES_CODE, edit_args

# Folders the plan refuses to remove whole, whatever a toolkit record says.
PROTECTED = frozenset(["/", "/usr", "/usr/local", "/opt", "/usr/lib", "/usr/lib64", "/etc", "/home", "/root", "/var", "/bin", "/lib"])


class HostPath(str):
    """A path of the inspected system inside a command; the script prefixes it with ``$ROOT``."""

    __slots__ = ()


class Guard(Record):
    """Run a step only while its residue is still there."""

    kind: str  # exists | link-to | line-in
    path: str
    value: Optional[str] = None  # link-to: the link's text; line-in: the exact line

    def describe(self) -> str:
        if self.kind == "exists":
            return "%s still exists" % self.path
        if self.kind == "link-to":
            return "%s still points at %s" % (self.path, self.value)
        return "%s still lists %s" % (self.path, self.value)


class Step(Record):
    id: str
    kind: str
    description: str
    commands: Tuple[Tuple[str, ...], ...] = ()
    needs_root: bool = False
    destructive: bool = False
    paths: Tuple[str, ...] = ()  # every path this step removes or changes
    details: Tuple[str, ...] = ()  # what remains in a folder, the exact rc lines, the apt dependents
    only_if: Optional[Guard] = None
    after: Tuple[str, ...] = ()  # ids of steps that must have run first (skipped with them)
    target: Optional[str] = None  # the toolkit path it belongs to


class Options(Record):
    driver: bool = False
    repoint: Optional[str] = None  # a toolkit path for /usr/local/cuda
    remove_link: bool = False
    python: Optional[str] = None  # --python for pip wheels


class Plan(Record):
    """``cudaenv uninstall --json``: the targets (version, path, install method), what is in use, the steps."""

    _json_envelope = True
    _json_lossy = True  # a target is written as its version, path and install method only

    targets: Tuple[Toolkit, ...]
    steps: Tuple[Step, ...]
    in_use: Tuple[str, ...] = ()  # called out before anything else
    choices: Tuple[str, ...] = ()  # other ways to run it ("--repoint 12.4")
    notes: Tuple[Note, ...] = ()
    system: str = "linux"
    root: str = "/"
    sudo: bool = True  # printed commands that need root start with `sudo` (cudaenv.toolkit.sudo)

    @property
    def needs_root(self) -> bool:
        return any(s.needs_root for s in self.steps)

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        data["targets"] = [{k: t[k] for k in ("version", "path", "install_method")} for t in data["targets"]]
        order = ("schema_version", "targets", "in_use", "steps", "choices", "notes", "system", "root")
        items = [(k, data.pop(k)) for k in order if k in data] + list(data.items())
        data.clear()
        data.update(items)

    @classmethod
    def _json_read(cls, data: Dict[str, Any]) -> Dict[str, Any]:
        data = dict(data)
        data["targets"] = [dict(t, source=t.get("source", "plan")) if isinstance(t, dict) else t for t in data.get("targets") or ()]
        return data


def _label(t: Toolkit) -> str:
    return "CUDA %s at %s" % (t.version or "(unknown version)", t.path) if t.version else "the toolkit at %s" % t.path


def _under(path: str, folder: Optional[str]) -> bool:
    if not folder:
        return False
    folder = folder.rstrip("/")
    return path == folder or path.startswith(folder + "/")


class _Builder:
    def __init__(self, inspection: Inspection):
        self.inspection = inspection
        self.steps: List[Step] = []
        self.notes: List[Note] = list(inspection.notes)

    def root_for(self, path: str) -> bool:
        if self.inspection.system == "windows":
            return True
        return not _under(path, self.inspection.home)

    def add(self, kind: str, description: str, **kw: Any) -> Step:
        step = Step("s%d" % (len(self.steps) + 1), kind, description, **kw)
        self.steps.append(step)
        return step


def plan_uninstall(inspection: Inspection, options: Options = Options()) -> Plan:
    """The ordered removal plan for ``inspection.targets``."""
    b = _Builder(inspection)
    tool_steps: Dict[str, Optional[Step]] = {}
    for t in inspection.targets:
        tool_steps[t.toolkit.path] = _tool_step(b, t, options)
    for t in inspection.targets:
        _folder_step(b, t, tool_steps[t.toolkit.path])
    _alternatives_steps(b, inspection, options)
    choices = _link_steps(b, inspection, options)
    _wrapper_steps(b, inspection)
    touched_ld = _ldconf_steps(b, inspection)
    _rc_steps(b, inspection)
    if options.driver:
        _driver_steps(b, inspection)
    removed_libs = any(s.kind in ("runfile-uninstaller", "apt-remove", "dnf-remove", "remove-folder") for s in b.steps)
    if inspection.system == "linux" and (touched_ld or removed_libs):
        b.add(
            "ldconfig",
            "Rebuild the shared-library cache so nothing still finds the removed libraries",
            commands=(("ldconfig",),),
            needs_root=True,
        )
    if inspection.root not in ("/", ""):
        b.notes.append(
            Note(
                "uninstall",
                "paths are those of the system under %s; system tools in the plan (apt-get, dnf, update-alternatives, "
                "ldconfig) act on the system they run on: for an image, run the script inside it (chroot) with CUDAENV_SCRIPT_ROOT= (empty)" % inspection.root,
            )
        )
    return Plan(
        targets=tuple(t.toolkit for t in inspection.targets),
        steps=tuple(b.steps),
        in_use=tuple(_in_use(inspection)),
        choices=tuple(choices),
        notes=tuple(b.notes),
        system=inspection.system,
        root=inspection.root,
        sudo=inspection.sudo,
    )


def _in_use(inspection: Inspection) -> List[str]:
    out = []
    for t in inspection.targets:
        tk = t.toolkit
        why = list(t.in_use)
        if tk.active and not any("active" in w for w in why):
            why.append("it is the active toolkit (the nvcc a build uses now)")
        if tk.on_path and not any("PATH" in w for w in why):
            why.append("its bin folder is on PATH")
        if tk.is_cuda_home:
            why.append("CUDA_HOME/CUDA_PATH points at it")
        if (tk.is_link_target or t.link_points_here) and not any("/usr/local/cuda" in w for w in why):
            why.append("the /usr/local/cuda link points at it")
        if tk.in_ld_library_path:
            why.append("it is in LD_LIBRARY_PATH")
        if t.pip is not None and t.pip.torch:
            why.append("torch in %s depends on these wheels" % t.pip.site_packages)
        if why:
            others = [k for k in inspection.toolkits if k.path not in {x.toolkit.path for x in inspection.targets} and k.version]
            hint = (" Switch first, e.g. `cudaenv use %s`." % others[0].version) if others else ""
            out.append("%s is in use: %s.%s" % (_label(tk), "; ".join(why), hint))
    return out


# ----------------------------------------------------------------------------- step 1: the tool


def _tool_step(b: _Builder, t: TargetFacts, options: Options) -> Optional[Step]:
    tk = t.toolkit
    method = tk.install_method
    if t.packages and t.package_manager == "dpkg":
        details = ["packages owning files in %s: %s" % (tk.path, " ".join(t.packages))]
        if t.dependents:
            details.append("apt will also remove these installed packages that depend on them: %s" % " ".join(t.dependents))
        return b.add(
            "apt-remove",
            "Remove the %d Debian package(s) that own the files of %s (exact names from the dpkg database)" % (len(t.packages), _label(tk)),
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
            "Remove the %d rpm package(s) that own the files of %s (exact names from the rpm database)" % (len(t.packages), _label(tk)),
            commands=(("dnf", "remove", *t.packages),),
            needs_root=True,
            destructive=True,
            paths=(tk.path,),
            details=("packages owning files in %s: %s" % (tk.path, " ".join(t.packages)),),
            target=tk.path,
        )
    if t.packages_unknown:
        return b.add(
            "rpm-unknown",
            "Find the rpm packages that own %s (`rpm -qf %s/bin/nvcc`) and remove exactly those with `dnf remove NAME...`"
            % (_label(tk), tk.path),
            target=tk.path,
        )
    if t.uninstaller:
        argv: Tuple[str, ...] = (HostPath(t.uninstaller),)
        if t.uninstaller.endswith(".pl"):
            argv = ("perl", HostPath(t.uninstaller))
        return b.add(
            "runfile-uninstaller",
            "Run %s's own uninstaller (it was installed from a .run file)" % _label(tk),
            commands=(argv,),
            needs_root=b.root_for(tk.path),
            destructive=True,
            paths=(tk.path,),
            target=tk.path,
        )
    if method == "conda" and t.conda_prefix:
        if not t.conda_packages:
            b.notes.append(Note("uninstall", "no CUDA packages are recorded in %s/conda-meta" % t.conda_prefix))
            return None
        return b.add(
            "conda-remove",
            "Remove the CUDA packages from the conda environment %s (`conda env remove -p %s` would remove the whole environment)"
            % (t.conda_prefix, t.conda_prefix),
            commands=(("conda", "remove", "-p", HostPath(t.conda_prefix), *t.conda_packages),),
            needs_root=b.root_for(t.conda_prefix),
            destructive=True,
            paths=tuple(t.conda_meta_files),
            details=("conda packages: %s" % " ".join(t.conda_packages),),
            target=tk.path,
        )
    if method == "pip" and t.pip is not None:
        if not t.pip.dists:
            b.notes.append(Note("uninstall", "no nvidia-* distributions found in %s" % t.pip.site_packages))
            return None
        python = options.python or t.pip.python
        if python is None:
            return b.add(
                "pip-uninstall",
                "Uninstall the nvidia-* wheels from %s with the Python that owns it: PY -m pip uninstall -y %s (give --python PY)"
                % (t.pip.site_packages, " ".join(t.pip.dists)),
                target=tk.path,
            )
        py = python if options.python else HostPath(python)
        details = ["wheels: %s" % " ".join(t.pip.dists)]
        if t.pip.torch:
            details.append("torch installed there needs them: reinstall torch (`cudaenv torch recommend`) afterwards")
        return b.add(
            "pip-uninstall",
            "Uninstall the nvidia-* CUDA wheels from %s" % t.pip.site_packages,
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
            "In Windows Settings > Apps > Installed apps (Apps & features), uninstall the %s entries; each runs "
            "MsiExec.exe /X{product code} (the codes live in the registry, which cannot be read from here)" % _label(tk),
            needs_root=True,
            destructive=True,
            paths=(tk.path,),
            details=tuple('"%s"' % e for e in entries),
            target=tk.path,
        )
    return None


# ----------------------------------------------------------------------------- step 2: the folder


def _folder_step(b: _Builder, t: TargetFacts, tool: Optional[Step]) -> None:
    tk = t.toolkit
    if not t.present or tk.install_method in ("conda", "pip") or b.inspection.system == "windows":
        if b.inspection.system == "windows" and t.present:
            b.add(
                "windows-folder",
                "After the uninstaller, delete what is left of %s (in an administrator PowerShell: Remove-Item -Recurse -LiteralPath '%s')"
                % (tk.path, tk.path),
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
            "Remove the link %s itself (it is a link: nothing it points to is touched)" % path,
            commands=(("rm", "--", HostPath(path)),),
            needs_root=b.root_for(path),
            destructive=True,
            paths=(path,),
            only_if=Guard("exists", path),
            target=path,
        )
        return
    if path in PROTECTED or path.count("/") < 2 or _under(b.inspection.home or "\0", path):
        b.notes.append(Note("uninstall", "refusing to plan the removal of %s as a whole: it is not a toolkit's own folder" % path))
        return
    if tool is not None and tool.kind in ("apt-remove", "dnf-remove"):
        if not t.unowned_entries:
            return
        remains = t.unowned_entries
        why = "After the packages are gone, remove what no package owns in %s" % path
    elif tool is not None:
        remains = t.entries
        why = "After the uninstaller, remove whatever it leaves of %s" % path
    else:
        remains = t.entries
        why = "Nothing registered %s (no uninstaller, no package owns it): remove the folder" % _label(tk)
    shown = list(remains[:12]) + (["... and %d more" % (len(remains) - 12)] if len(remains) > 12 else [])
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


# ----------------------------------------------------------------------------- steps 3-4: alternatives and the link


def _alternatives_steps(b: _Builder, inspection: Inspection, options: Options) -> None:
    for t in inspection.targets:
        for alt in t.alternatives:
            b.add(
                "alternatives-remove",
                "Remove %s from the update-alternatives group '%s'" % (alt.path, alt.name),
                commands=(("update-alternatives", "--remove", alt.name, alt.path),),
                needs_root=True,
                destructive=True,
                paths=(alt.admin_file,) + ((alt.link,) if alt.link else ()),
                only_if=Guard("line-in", alt.admin_file, alt.path),
                target=t.toolkit.path,
            )
            if options.repoint and options.repoint in alt.others:
                b.add(
                    "alternatives-set",
                    "Point the '%s' alternative at %s" % (alt.name, options.repoint),
                    commands=(("update-alternatives", "--set", alt.name, options.repoint),),
                    needs_root=True,
                    destructive=True,
                    paths=(alt.admin_file,),
                    only_if=Guard("line-in", alt.admin_file, options.repoint),
                    target=t.toolkit.path,
                )


def _link_steps(b: _Builder, inspection: Inspection, options: Options) -> List[str]:
    link = inspection.cuda_symlink
    choices: List[str] = []
    if link is None or link.target is None:
        return choices
    here = [t for t in inspection.targets if t.link_points_here]
    managed = link.alternatives and any(t.alternatives for t in here)
    if not here and not (link.dangling and options.remove_link):
        if link.dangling:
            b.notes.append(Note("uninstall", "%s is a dangling link (-> %s); --remove-link removes it" % (link.path, link.target)))
        return choices
    if managed:
        return choices
    removing = {t.toolkit.path for t in inspection.targets}
    others = [k for k in inspection.toolkits if k.path not in removing and k.install_method not in ("conda", "pip")]
    guard = Guard("link-to", link.path, link.target)
    if options.repoint and not options.remove_link:
        b.add(
            "repoint-link",
            "Point %s at %s (it points at %s now)" % (link.path, options.repoint, link.target),
            commands=(("ln", "-sfn", "--", options.repoint, HostPath(link.path)),),
            needs_root=b.root_for(link.path),
            destructive=True,
            paths=(link.path,),
            only_if=guard,
        )
        return choices
    b.add(
        "remove-link",
        "Remove the link %s (-> %s) itself; what it points to is not followed" % (link.path, link.target),
        commands=(("rm", "--", HostPath(link.path)),),
        needs_root=b.root_for(link.path),
        destructive=True,
        paths=(link.path,),
        only_if=guard,
    )
    if not options.remove_link:
        choices.extend("--repoint %s   (point %s at %s instead of removing it)" % (k.version or k.path, link.path, k.path) for k in others)
    return choices


def _wrapper_steps(b: _Builder, inspection: Inspection) -> None:
    auto = [w for w in inspection.wrappers if w.action == "remove"]
    hand = [w for w in inspection.wrappers if w.action == "hand"]
    if auto:
        b.add(
            "remove-wrappers",
            "Remove the programs on PATH that only lead into the removed toolkit (links are removed as links)",
            commands=(("rm", "-f", "--", *(HostPath(w.path) for w in auto)),),
            needs_root=any(b.root_for(w.path) for w in auto),
            destructive=True,
            paths=tuple(w.path for w in auto),
            details=tuple("%s %s %s" % (w.path, "->" if w.kind == "link" else "runs", w.text) for w in auto),
        )
    if hand:
        b.add(
            "wrappers-by-hand",
            "Check these scripts on PATH by hand: they use the removed toolkit but also do other things",
            paths=tuple(w.path for w in hand),
            details=tuple("%s: %s" % (w.path, w.text) for w in hand),
        )


# ----------------------------------------------------------------------------- steps 5-6: ld.so.conf.d and rc files


def _ldconf_steps(b: _Builder, inspection: Inspection) -> bool:
    purged = {p for t in inspection.targets for p in t.packages}
    touched = False
    for conf in inspection.ldconf:
        if conf.owner:
            if conf.owner not in purged:
                b.notes.append(
                    Note("uninstall", "%s names the toolkit but belongs to the package %s; it is left to the package manager" % (conf.file, conf.owner))
                )
            continue
        touched = True
        if conf.whole:
            b.add(
                "remove-ldconf",
                "Remove %s (it only names the removed toolkit's library folders)" % conf.file,
                commands=(("rm", "--", HostPath(conf.file)),),
                needs_root=True,
                destructive=True,
                paths=(conf.file,),
                details=tuple("%s:%d: %s" % (conf.file, n, text) for n, text in conf.lines),
                only_if=Guard("exists", conf.file),
            )
        else:
            args: List[str] = []
            for n, text in conf.lines:
                args += [str(n), "remove", text, ""]
            b.add(
                "edit-ldconf",
                "Remove the lines naming the toolkit from %s (a backup is kept next to it)" % conf.file,
                commands=(("python3", "-c", EDIT_LINES_CODE, HostPath(conf.file), *args),),
                needs_root=True,
                destructive=True,
                paths=(conf.file,),
                details=tuple("%s:%d: %s" % (conf.file, n, text) for n, text in conf.lines),
                only_if=Guard("exists", conf.file),
            )
    return touched


def _rc_steps(b: _Builder, inspection: Inspection) -> None:
    by_file: Dict[str, list] = {}
    for line in inspection.rc_lines:
        by_file.setdefault(line.file, []).append(line)
    for file, lines in by_file.items():
        editable = [l for l in lines if l.action in ("remove", "rewrite")]
        by_hand = [l for l in lines if l.action == "hand"]
        if editable:
            details = []
            for l in editable:
                details.append("%s:%d: %s" % (file, l.lineno, l.text))
                if l.action == "rewrite":
                    details.append("    becomes: %s" % l.new_text)
            b.add(
                "edit-rc",
                "Take the lines that mention the removed toolkit out of %s (a backup is kept next to it; each line is "
                "checked to still read exactly as shown)" % file,
                commands=(("python3", "-c", EDIT_LINES_CODE, HostPath(file), *edit_args(editable)),),
                needs_root=b.root_for(file),
                destructive=True,
                paths=(file,),
                details=tuple(details),
                only_if=Guard("exists", file),
            )
        if by_hand:
            b.add(
                "rc-by-hand",
                "Edit %s by hand: these lines mention the removed toolkit but cannot be taken out safely on their own" % file,
                paths=(file,),
                details=tuple("%s:%d: %s   (%s)" % (file, l.lineno, l.text, l.reason) for l in by_hand),
            )


# ----------------------------------------------------------------------------- step 7: the driver


def _driver_steps(b: _Builder, inspection: Inspection) -> None:
    d = inspection.driver
    if d is None:
        b.notes.append(Note("uninstall", "--driver: the driver was not inspected"))
        return
    if d.wsl:
        b.add(
            "driver-wsl",
            "The driver is Windows' job under WSL2: update or remove the NVIDIA driver in Windows (Apps & features, or "
            "the NVIDIA app). Nothing is planned inside WSL; never install a Linux NVIDIA driver there.",
        )
        return
    if d.system == "windows":
        b.add(
            "driver-windows",
            'Uninstall "NVIDIA Graphics Driver" in Windows Settings > Apps > Installed apps (Apps & features)',
            needs_root=True,
            destructive=True,
        )
        return
    planned = False
    if d.packages and d.package_manager == "dpkg":
        b.add(
            "driver-apt-remove",
            "Remove the NVIDIA driver packages installed with apt (exact names from the dpkg database)",
            commands=(("apt-get", "--purge", "remove", *d.packages),),
            needs_root=True,
            destructive=True,
            details=("driver packages: %s" % " ".join(d.packages),),
        )
        planned = True
    elif d.packages and d.package_manager == "rpm":
        b.add(
            "driver-dnf-remove",
            "Remove the NVIDIA driver packages (exact names from the rpm database)",
            commands=(("dnf", "remove", *d.packages),),
            needs_root=True,
            destructive=True,
            details=("driver packages: %s" % " ".join(d.packages),),
        )
        planned = True
    if d.runfile_uninstaller:
        b.add(
            "driver-runfile-uninstall",
            "Remove the NVIDIA driver installed from a .run file with its own uninstaller",
            commands=((HostPath(d.runfile_uninstaller),),),
            needs_root=True,
            destructive=True,
            only_if=Guard("exists", d.runfile_uninstaller),
        )
        planned = True
    if not planned:
        b.notes.append(Note("uninstall", "--driver: no driver packages and no nvidia-uninstall found: nothing to remove"))
