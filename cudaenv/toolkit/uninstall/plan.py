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

The plan's records are in :mod:`~cudaenv.toolkit.uninstall.records`; the steps are built by
:mod:`~cudaenv.toolkit.uninstall.tool_steps` (1-2), :mod:`~cudaenv.toolkit.uninstall.reference_steps` (3-7) and
:mod:`~cudaenv.toolkit.uninstall.driver_steps` (8).
"""

from typing import Dict, List, Optional

from cudaenv.model.snapshot import Note
from cudaenv.toolkit.uninstall.builder import Builder, label
from cudaenv.toolkit.uninstall.driver_steps import driver_steps
from cudaenv.toolkit.uninstall.facts import Inspection
from cudaenv.toolkit.uninstall.records import Options, Plan, Step
from cudaenv.toolkit.uninstall.reference_steps import alternatives_steps, ldconf_steps, link_steps, rc_steps, wrapper_steps
from cudaenv.toolkit.uninstall.tool_steps import folder_step, tool_step
from cudaenv.core.i18n import M, join


def plan_uninstall(inspection: Inspection, options: Optional[Options] = None) -> Plan:
    """The ordered removal plan for ``inspection.targets`` (``options``: the defaults when None)."""
    options = Options() if options is None else options
    b = Builder(inspection)
    tool_steps: Dict[str, Optional[Step]] = {}
    for t in inspection.targets:
        tool_steps[t.toolkit.path] = tool_step(b, t, options)
    for t in inspection.targets:
        folder_step(b, t, tool_steps[t.toolkit.path])
    alternatives_steps(b, inspection, options)
    choices = link_steps(b, inspection, options)
    wrapper_steps(b, inspection)
    touched_ld = ldconf_steps(b, inspection)
    rc_steps(b, inspection)
    if options.driver:
        driver_steps(b, inspection)
    removed_libs = any(s.kind in ("runfile-uninstaller", "apt-remove", "dnf-remove", "remove-folder") for s in b.steps)
    if inspection.system == "linux" and (touched_ld or removed_libs):
        b.add(
            "ldconfig",
            M("Rebuild the shared-library cache so nothing still finds the removed libraries"),
            commands=(("ldconfig",),),
            needs_root=True,
        )
    if inspection.root not in ("/", ""):
        b.notes.append(
            Note(
                "uninstall",
                M("paths are those of the system under %s; system tools in the plan (apt-get, dnf, update-alternatives, "
                "ldconfig) act on the system they run on: for an image, run the script inside it (chroot) with CUDAENV_SCRIPT_ROOT= (empty)", inspection.root),
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
        why = []
        if tk.active or t.active:
            why.append(M("it is the active toolkit (the nvcc a build uses now)"))
        if tk.on_path:
            why.append(M("its bin folder is on PATH"))
        if tk.is_cuda_home:
            why.append(M("CUDA_HOME/CUDA_PATH points at it"))
        if tk.is_link_target or t.link_points_here:
            why.append(M("the /usr/local/cuda link points at it"))
        if tk.in_ld_library_path:
            why.append(M("it is in LD_LIBRARY_PATH"))
        if t.pip is not None and t.pip.torch:
            why.append(M("torch in %s depends on these wheels", t.pip.site_packages))
        if why:
            others = [k for k in inspection.toolkits if k.path not in {x.toolkit.path for x in inspection.targets} and k.version]
            hint = (M(" Switch first, e.g. `cudaenv use %s`.", others[0].version)) if others else ""
            out.append(M("%s is in use: %s.%s", label(tk), join(M("; "), why), hint))  # "；" in Chinese
    return out
