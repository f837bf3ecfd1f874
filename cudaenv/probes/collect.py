"""Assemble a :class:`~cudaenv.model.snapshot.Snapshot` from every probe, concurrently.

Order: find the interpreter; start the platform/driver chain in a thread; meanwhile run the static
torch pass (tens of milliseconds; it gives the site-packages dirs where pip ``nvidia-*`` wheels live),
then, in threads at once:

* platform -> driver/GPUs (NVML, nvidia-smi) -> CUDA_VISIBLE_DEVICES mapping -> the GPU health read (only for a sick GPU)
  -> the container host's engines, toolkit and CDI specs (files only)
* toolkits -> cuDNN (started with the hardware chain: only their pip wheels wait for the static pass's site-packages)
* the other CUDA consumers in those site-packages (probes/frameworks.py: files read, nothing imported), then which
  CUDA library files torch's and their libraries load (probes/libraries.py, Linux) and whether the compiled torch
  extensions match the installed torch's exported symbols (probes/extensions.py, Linux)
* the dynamic torch pass (``import torch`` in the child: the slow one; the rest hides behind it). Its child starts
  with the static one (in the interpreter, or the one a pyenv shim leads to); its answer is read only when the static
  pass finds torch

A probe that raises becomes ``Note("collect", "probe X failed: ...")``, never a crash. Each chain
keeps its own notes; they are joined in a fixed order so the output does not depend on timing.
"""

from __future__ import annotations

from cudaenv.core.i18n import M
from cudaenv.core.jobs import Job
from cudaenv.model.snapshot import Note, Platform, Snapshot, Torch, VisibleDevices

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Callable, Dict, List, Optional, Tuple

    Progress = Callable[[str], None]


class _Failed(Exception):
    """A probe that could not run; already recorded as a note."""


def _call(notes: List[Note], label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run the probe ``fn(*args)``; an exception it raises becomes a note and raises _Failed. The probes are imported
    by each chain when it starts (in its thread), outside this guard: a missing module is a broken install, and its
    ImportError goes up (it is no fact of the machine)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - one broken probe must not take the report down
        notes.append(Note("collect", M("probe %s failed: %s: %s", label, type(exc).__name__, exc)))
        raise _Failed(label) from exc


def _hardware(host, notes: List[Note]) -> Tuple[Platform, Any, VisibleDevices, Any, Any, Any]:
    from cudaenv.probes.containers import probe_containers
    from cudaenv.probes.gpu_health import probe_gpu_health, probe_pci_links
    from cudaenv.probes.nvidia import probe_nvidia
    from cudaenv.probes.platform import probe_platform
    from cudaenv.probes.visibility import probe_visibility

    try:
        platform = _call(notes, "platform", probe_platform, host, notes)
    except _Failed:
        platform = Platform(system=host.system, machine=host.machine)
    try:
        nvidia = _call(notes, "nvidia", probe_nvidia, host, notes, platform=platform)
    except _Failed:
        nvidia = None
    gpus = tuple(getattr(nvidia, "gpus", ()) or ())
    try:
        visible = _call(notes, "visibility", probe_visibility, host, gpus)
    except _Failed:
        visible = VisibleDevices(
            cuda_visible_devices=host.env.get("CUDA_VISIBLE_DEVICES"), device_order=host.env.get("CUDA_DEVICE_ORDER")
        )
    try:
        health = _call(notes, "gpu-health", probe_gpu_health, host, notes, platform, gpus, tuple(getattr(nvidia, "tools", ()) or ()))
    except _Failed:
        health = None
    try:
        containers = _call(notes, "containers", probe_containers, host, notes, platform)
    except _Failed:
        containers = None
    try:
        links = _call(notes, "pci-links", probe_pci_links, host, platform)
    except _Failed:
        links = ()
    return platform, nvidia, visible, health, containers, links


class _SitePackages:
    """The static torch pass's site-packages folders, waited for when first iterated: the toolkit and cuDNN probes read
    every other place while the static child runs, and the pip wheels' folders once it has answered."""

    def __init__(self, static_job: Job):
        self._job = static_job

    def __iter__(self):
        return iter(tuple(self._job.result().site_packages))


def _toolkits(host, notes: List[Note], site_packages) -> Tuple[Any, tuple]:
    from cudaenv.probes.cudnn import probe_cudnn
    from cudaenv.probes.toolkits import probe_toolkits

    try:
        state = _call(notes, "toolkits", probe_toolkits, host, notes, site_packages=site_packages)
    except _Failed:
        state = None
    toolkits = tuple(getattr(state, "toolkits", ()) or ())
    try:
        cudnn = tuple(_call(notes, "cudnn", probe_cudnn, host, notes, toolkits, site_packages=site_packages) or ())
    except _Failed:
        cudnn = ()
    return state, cudnn


def _frameworks(host, notes: List[Note], torch: Torch, import_order: Tuple[str, ...] = ()) -> Tuple[tuple, tuple, tuple]:
    """(the frameworks in torch's interpreter, the CUDA libraries torch's and their libraries load, the compiled torch
    extensions checked against torch: the last two on Linux only; on Windows the DLLs, loaded in ``import_order``)."""
    from cudaenv.probes.elf import probe_needed
    from cudaenv.probes.extensions import probe_extensions
    from cudaenv.probes.frameworks import installed_distributions, probe_frameworks, with_cudnn
    from cudaenv.probes.libraries import lazy_objects, probe_libraries, runtime_entries

    def read_needed(path: str):
        return probe_needed(host, path)

    sites = tuple(torch.site_packages)
    heads: Dict[str, str] = {}  # the METADATA heads read, for the frameworks and the extensions alike
    try:  # the site-packages listed once, for the frameworks, the extensions and the cuDNN wheels alike
        present = _call(notes, "frameworks", installed_distributions, host, sites)
        found = tuple(_call(notes, "frameworks", probe_frameworks, host, sites, notes, None, read_needed, None, present, heads) or ())
    except _Failed:
        present, found = None, ()
    if host.system == "windows":
        return found, _windows_dlls(host, notes, torch, found, import_order, present), ()
    if host.system != "linux":
        return found, (), ()
    from cudaenv.probes.memo import open_memo

    memo = open_memo(host)  # what the last doctors read from the extensions' libraries, while they are the same files
    try:
        extensions = tuple(_call(notes, "extensions", probe_extensions, host, torch, sites, notes, present=present,
                                 memo=memo, heads=heads) or ())
    except _Failed:
        extensions = ()
    if memo is not None:
        memo.save()
    objects = []
    if torch.installed and torch.location:
        objects.append(("torch", host.join(torch.location, "torch", "lib", "libtorch_cuda.so")))
        objects += lazy_objects(host, "torch", torch.location)
    objects += [(fw.package, host.join(fw.location, *lib.split("/"))) for fw in found if fw.location for lib in fw.libraries]
    entries = runtime_entries(host, found) if found else []  # the CUDA libraries XLA opens itself (dlopen)
    if not objects and not entries:
        return found, (), extensions
    other: Dict[str, Tuple[str, ...]] = {}
    try:
        libraries = tuple(_call(notes, "libraries", probe_libraries, host, objects, runtime=entries,
                                sites=sites, other_cudnn=other) or ())
    except _Failed:
        libraries = ()
    if entries:
        found = with_cudnn(host, found, libraries, entries, other, sites, present)
    return found, libraries, extensions


def _frameworks_beside(host, notes: List[Note], static_job: Job, import_order: Tuple[str, ...] = ()) -> Tuple[tuple, tuple, tuple]:
    """:func:`_frameworks`, started with the static torch child: its modules imported, its tables read and its patterns
    compiled while the child runs (the job's own work needs the child's site-packages); then the job (issue 35)."""
    try:
        from cudaenv.probes import elf, libraries, memo, site_packages  # noqa: F401 - imported now
        from cudaenv.probes.extensions import prepare

        prepare()
    except Exception:  # noqa: BLE001 - only a head start: the job below imports and reads the same, and makes a note
        pass
    return _frameworks(host, notes, static_job.result(), import_order)


def _windows_dlls(host, notes: List[Note], torch: Torch, frameworks: tuple = (), import_order: Tuple[str, ...] = (),
                  present=None) -> tuple:
    """torch's and the frameworks' CUDA DLLs resolved in the Windows DLL search order each uses (probes/dlls.py), loaded
    in the program's ``import_order`` (() the usual one); ``present``: the site-packages' distributions, listed once
    by the frameworks job (None: probe_dlls lists each framework's folder itself)."""
    from cudaenv.probes.dlls import probe_dlls

    location = torch.location if torch.installed else None
    if not location and not frameworks:
        return ()
    try:
        return tuple(_call(notes, "libraries", probe_dlls, host, location, torch.python, None, torch.cuda, frameworks,
                           import_order, present) or ())
    except _Failed:
        return ()


def _imports(host, python: str, frameworks, notes: List[Note]) -> tuple:
    from cudaenv.core import config
    from cudaenv.probes.framework_import import probe_framework_imports

    try:
        return tuple(_call(notes, "framework-import", probe_framework_imports, host, python, frameworks, notes,
                           config.value(host.env, "CUDAENV_IMPORT_TIMEOUT")) or ())
    except _Failed:
        return ()


def _torch_dynamic(host, interpreter, static: Torch, notes: List[Note], early: Optional[Job] = None,
                   early_notes: Tuple[Note, ...] = ()) -> Torch:
    from cudaenv.probes.torch import probe_torch_dynamic

    try:
        answer = early.result() if early is not None else None
        notes.extend(early_notes)  # the early child's own failure (a note of collect's), once it has ended
        return _call(notes, "torch", probe_torch_dynamic, host, interpreter, static, notes, answer)
    except _Failed:
        return static


def _torch_early(host, python: str, notes: List[Note], started=None):
    """The dynamic pass's child, started before anything else (``started``: it is running): (its answer, its notes),
    or None when it failed."""
    from cudaenv.probes.torch import run_dynamic

    try:
        return _call(notes, "torch", run_dynamic, host, python, started)
    except _Failed:
        return None


def _python_env(host, interpreter, torch: Torch, notes: List[Note]) -> Any:
    """Who made the interpreter's environment (files only: cheap enough for the calling thread)."""
    from cudaenv.probes.pyenv import probe_python_env

    if interpreter is None:
        return None
    try:
        return _call(notes, "python-env", probe_python_env, host, interpreter.path, torch.executable)
    except _Failed:
        return None


def _torch_static(host, interpreter, notes: List[Note], collect_notes: List[Note], python: Optional[str] = None,
                  quick: bool = False, started=None) -> Torch:
    from cudaenv.probes.torch import probe_torch_static

    try:
        return probe_torch_static(host, interpreter, notes, python, quick, started)
    except Exception as exc:  # noqa: BLE001
        collect_notes.append(Note("collect", M("probe torch failed: %s: %s", type(exc).__name__, exc)))
        return Torch(python=interpreter.path if interpreter else None, python_source=interpreter.source if interpreter else None)


def collect_snapshot(host, python: Optional[str] = None, quick: bool = False, progress: Optional[Progress] = None,
                     beside: Optional[Callable[[], Any]] = None, import_frameworks: bool = False,
                     import_order: Tuple[str, ...] = ()) -> Snapshot:
    """Everything the probes see on ``host``. ``python`` is ``--python``; ``quick`` skips ``import torch``;
    ``import_frameworks`` (``doctor --import``) imports each framework found in a child of that Python, one at a time;
    ``import_order`` (``doctor --import-order``): the modules the user's program imports, in order (Windows' DLLs).

    ``progress(message)`` is called from the calling thread before each phase (for a spinner). ``beside()`` is the
    caller's own work (the doctor imports its rules), run in the calling thread while the static torch child and the
    hardware chain run. A ``--python`` that does not exist raises :class:`cudaenv.core.errors.UserError`.
    """
    import cudaenv
    from cudaenv.probes.python import find_interpreter

    def say(message: str) -> None:
        if progress is not None:
            progress(message)

    collect_notes: List[Note] = []
    python_notes: List[Note] = []
    torch_notes: List[Note] = []
    hw_notes: List[Note] = []
    tk_notes: List[Note] = []

    interpreter = find_interpreter(host, python, notes=python_notes)  # UserError for a missing --python
    say(M("reading torch in %s", interpreter.path) if interpreter else M("reading torch in %s", M("no Python")))
    from cudaenv.probes.torch import resolve_python, start_dynamic, start_static

    python_now = resolve_python(host, interpreter)  # once, for both passes (a pyenv shim read, not run)
    early_notes: List[Note] = []
    early_job = early = None
    if not quick and python_now:  # `import torch`, the slow one, starts first: the doctor's critical path
        try:
            early = start_dynamic(host, python_now)
        except Exception:  # noqa: BLE001 - the job runs it again and makes the failure a note
            early = None
    try:  # then the static child, both spawned from this thread before any other starts: the rest runs beside them
        started = start_static(host, interpreter, python_now, quick)
    except Exception:  # noqa: BLE001 - the job runs it again and makes the failure a note
        started = None
    static_job = Job(_torch_static, host, interpreter, torch_notes, collect_notes, python_now, quick, started)
    if not quick and python_now:  # its answer is read when the static pass finds torch
        early_job = Job(_torch_early, host, python_now, early_notes, early)
    hw_job = Job(_hardware, host, hw_notes)  # needs nothing from torch
    # the toolkits too: only their pip candidates need the static pass's site-packages, which they wait for there
    tk_job = Job(_toolkits, host, tk_notes, _SitePackages(static_job))
    fw_notes: List[Note] = []
    fw_job = Job(_frameworks_beside, host, fw_notes, static_job, tuple(import_order))  # a head start beside the child
    from cudaenv.probes.env import probe_env  # (after the children's spawn: their start comes first)

    env = probe_env(host)
    if beside is not None:
        beside()
    torch = static_job.result()
    torch_job = None
    if not quick and interpreter is not None and torch.installed:
        say(M("importing torch in %s", interpreter.path))
        torch_job = Job(_torch_dynamic, host, interpreter, torch, torch_notes, early_job, early_notes)
    else:
        if early_job is not None:
            early_job.result()  # no torch to import: its child's answer is not read, but the child is waited for
        say(M("probing the driver, GPUs and toolkits"))
    python_env = _python_env(host, interpreter, torch, collect_notes)
    platform, nvidia, visible, health, containers, links = hw_job.result()
    toolkit_state, cudnn = tk_job.result()
    frameworks, libraries, extensions = fw_job.result()
    if torch_job is not None:
        torch = torch_job.result()
    imports: tuple = ()
    if import_frameworks and interpreter is not None and frameworks:
        say(M("importing the frameworks in %s", interpreter.path))
        imports = _imports(host, interpreter.path, frameworks, fw_notes)
    say(M("done"))

    return Snapshot(
        platform=platform,
        driver=getattr(nvidia, "driver", None),
        gpus=tuple(getattr(nvidia, "gpus", ()) or ()),
        visible_devices=visible,
        toolkits=tuple(getattr(toolkit_state, "toolkits", ()) or ()),
        cuda_symlink=getattr(toolkit_state, "cuda_symlink", None),
        active_toolkit=getattr(toolkit_state, "active_toolkit", None),
        cudnn=cudnn,
        env=env,
        torch=torch,
        frameworks=frameworks,
        libraries=libraries,
        import_order=tuple(import_order),
        extensions=extensions,
        framework_imports=imports,
        processes=tuple(getattr(nvidia, "processes", ()) or ()),
        tools=tuple(getattr(nvidia, "tools", ()) or ()),
        notes=tuple(collect_notes + python_notes + torch_notes + hw_notes + tk_notes + fw_notes),
        health=health,
        gpu_conditions=tuple(getattr(nvidia, "conditions", ()) or ()),
        pci_devices=tuple(links or ()),
        containers=containers,
        python_env=python_env,
        root=host.root_text,
        cudaenv_version=cudaenv.__version__,
    )
