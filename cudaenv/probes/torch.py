"""torch in the user's Python, seen from a child process (cudaenv never imports torch itself).

The child script is ``cudaenv/_child/torch_probe.py`` (stdlib only, Python 3.7+), run as
``python -c SCRIPT static`` (no torch import: version.py read as text, dist metadata, the interpreter's
facts) and ``python -c SCRIPT dynamic`` (``import torch``: CUDA availability, devices, arch list, cuDNN,
NCCL). The static pass takes the host timeout; the dynamic pass ``CUDAENV_TORCH_TIMEOUT`` seconds, by
default ``max(host timeout, 60)``: importing torch takes seconds.
"""

from __future__ import annotations

from cudaenv.core.i18n import M, N_
from cudaenv.probes.site_packages import site_packages_from
from cudaenv.probes.torch_child import MARKER, child_command, parse_child_output
from cudaenv.model.snapshot import Note, Torch, TorchDevice
from cudaenv.model.record import replace
from cudaenv.core.version import cudnn_from_int

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Dict, List, Optional, Tuple

DYNAMIC_TIMEOUT_FLOOR = 60.0
PROBE = "torch"


def dynamic_timeout(host) -> float:
    from cudaenv.core import config

    return config.value(host.env, "CUDAENV_TORCH_TIMEOUT") or max(host.timeout, DYNAMIC_TIMEOUT_FLOOR)


def format_cudnn_version(value: Any) -> Optional[str]:
    """torch.backends.cudnn.version() as "9.10.2": 91002 (v9+: M*10000+m*100+p) or 8902 (v8: M*1000+m*100+p)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            return text or None
        value = int(text)
    return cudnn_from_int(value)


def _text(value: Any) -> Optional[str]:
    if value is None or isinstance(value, bool):
        return None
    return str(value)


def _strs(values: Any) -> tuple:
    return tuple(str(v) for v in values) if isinstance(values, (list, tuple)) else ()


def torch_from_static(data: Dict[str, Any], python: Optional[str], source: Optional[str]) -> Torch:
    """Map the static pass's JSON onto a Torch record (pure)."""
    return Torch(
        python=python,
        installed=bool(data.get("installed")),
        version=_text(data.get("version")) or _text(data.get("dist_version")) if data.get("installed") else None,
        cuda=_text(data.get("cuda")) if data.get("installed") else None,
        hip=_text(data.get("hip")) if data.get("installed") else None,
        installer=_text(data.get("installer")),
        python_version=_text(data.get("python_version")),
        python_source=source,
        location=_text(data.get("location")),
        requires=_strs(data.get("requires")),
        nvidia_packages=_strs(data.get("nvidia_packages")),
        companions=_strs(data.get("companions")),
        externally_managed=bool(data.get("externally_managed")),
        in_virtualenv=bool(data.get("in_virtualenv")),
        platform_tag=_text(data.get("platform_tag")),
        site_packages=site_packages_from(data),
        executable=_text(data.get("executable")),
        libc=_text(data.get("libc")),
        site_code_skipped=_strs(data.get("site_code_skipped")),
    )


def merge_dynamic(torch: Torch, data: Dict[str, Any]) -> Torch:
    """Add the dynamic pass's JSON to the static record (pure)."""
    if data.get("import_error"):
        return replace(torch, dynamic=False, import_error=_text(data["import_error"]))
    devices = tuple(
        TorchDevice(
            name=_text(d.get("name")),
            capability=_text(d.get("capability")),
            total_memory_mib=d.get("total_memory_mib") if isinstance(d.get("total_memory_mib"), int) else None,
        )
        for d in data.get("devices") or ()
        if isinstance(d, dict)
    )
    count = data.get("device_count")
    available = data.get("cuda_available")
    return replace(
        torch,
        installed=True,
        version=torch.version or _text(data.get("version")),
        cuda=torch.cuda if torch.installed else _text(data.get("cuda")),
        hip=torch.hip if torch.installed else _text(data.get("hip")),
        dynamic=True,
        cuda_available=available if isinstance(available, bool) else None,
        device_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        arch_list=_strs(data.get("arch_list")),
        devices=devices,
        cudnn=format_cudnn_version(data.get("cudnn")),
        nccl=cudnn_from_int(data["nccl"]) if isinstance(data.get("nccl"), int) else _text(data.get("nccl")),
        cuda_error=_text(data.get("cuda_error")),
    )


def _child_argv(host, python: str, mode: str, quick: bool = False) -> List[str]:
    return [python, *(("-S",) if quick else ()), "-c", child_command(mode, python, host), mode]


def _until(mode: str) -> Optional[bytes]:
    """The dynamic pass's answer, once its child has closed its output: not torch's unmapping (Host.run's until)."""
    return MARKER.encode() if mode == "dynamic" else None


def _run_child(host, python: str, mode: str, timeout: float, notes: List[Note], quick: bool = False,
               started=None) -> Optional[Dict[str, Any]]:
    result = started.result() if started is not None else host.run(_child_argv(host, python, mode, quick), timeout=timeout,
                                                                   until=_until(mode))
    if result.error is not None:
        what = M("the torch probe (%s pass) in %s", mode, python)
        if result.error == "timeout":
            hint = M(" (set CUDAENV_TORCH_TIMEOUT to wait longer)") if mode == "dynamic" else ""
            notes.append(Note(PROBE, M("%s timed out after %g s%s", what, result.timeout, hint)))
        else:
            notes.append(Note(PROBE, M("%s could not run: %s", what, result.describe())))
        return None
    data = parse_child_output(result.stdout)
    if data is None:
        first = next((line.strip() for line in result.output.splitlines() if line.strip()), "no output")
        notes.append(Note(PROBE, M("the torch probe (%s pass) in %s gave no answer (exit %s): %s", mode, python, result.returncode, first[:300])))
        return None
    if data.get("probe_error"):
        notes.append(Note(PROBE, M("the torch probe (%s pass) failed inside %s: %s", mode, python, data["probe_error"])))
        return None
    return data


def is_shim(path: str) -> bool:
    """A pyenv or asdf shim (``~/.pyenv/shims/python3``): a script that finds and execs the real interpreter.

    Other wrappers (module systems, ``conda run`` scripts) may set variables the import needs, so only
    shims are replaced by the interpreter they lead to.
    """
    import os

    return os.path.basename(os.path.dirname(path)) == "shims"


def _runnable(path: str) -> bool:
    import os

    return os.path.isfile(path) and os.access(path, os.X_OK)


def start_static(host, interpreter, python: Optional[str] = None, quick: bool = False):
    """The static pass's child started now (:meth:`Host.start`), for :func:`probe_torch_static`'s ``started``; None
    without an interpreter."""
    if interpreter is None:
        return None
    return host.start(_child_argv(host, python or resolve_python(host, interpreter) or interpreter.path, "static", quick), host.timeout)


def probe_torch_static(host, interpreter, notes: List[Note], python: Optional[str] = None, quick: bool = False,
                       started=None) -> Torch:
    """The static pass: no torch import. ``interpreter`` None -> python=None, installed=False and a note.

    ``python``: the program to run (:func:`resolve_python`'s, resolved once by the caller for both passes); by default
    resolved here. ``quick`` (``doctor --quick``): the child runs with ``-S`` and makes site's sys.path itself,
    without running the .pth files' import lines or sitecustomize (the interpreter's own .pth code can cost more than
    the whole read: certifi's, a coverage hook); what it did not run is the record's ``site_code_skipped``.
    ``started``: :func:`start_static`'s child, already running (the same arguments)."""
    if interpreter is None:
        notes.append(Note(PROBE, M("no Python interpreter found (no --python, VIRTUAL_ENV, CONDA_PREFIX, python3 on PATH)")))
        return Torch(python=None)
    # a pyenv shim runs bash and `pyenv exec` (a dozen programs) before Python: its interpreter is found by reading
    program = python or resolve_python(host, interpreter) or interpreter.path
    data = _run_child(host, program, "static", host.timeout, notes, quick, started)
    if data is None:
        return Torch(python=interpreter.path, python_source=interpreter.source)
    for note in data.get("notes") or ():
        notes.append(Note(PROBE, static_note(note)))
    if data.get("cwd_shadow"):
        notes.append(
            Note(PROBE, M("%s shadows torch for Python started in this directory (python -c, python -m, the REPL)", data["cwd_shadow"]))
        )
    return torch_from_static(data, interpreter.path, interpreter.source)


# what the static child found that is not torch, said by the parent: the child's [kind, path] notes
# (cudaenv/_child/torch_probe.py)
STATIC_NOTES = {
    "module-named-torch": N_("%s is a module named torch, not the torch package; it shadows any installed torch"),
    "folder-without-version": N_("%s is a folder named torch without version.py; it is not an installed torch"),
    "no-version": N_("%s has no readable __version__"),
}


def static_note(note) -> str:
    """One note of the static child (``[kind, path]``) as a marked message; anything else as plain text."""
    if isinstance(note, list) and len(note) == 2 and note[0] in STATIC_NOTES and isinstance(note[1], str):
        return M(STATIC_NOTES[note[0]], note[1])
    return str(note)


def resolve_python(host, interpreter) -> Optional[str]:
    """The program both torch passes run, resolved once: the interpreter, or the one its pyenv shim leads to (read, not
    run); None for another shim (asdf's), whose interpreter only running it tells (the static pass runs the shim)."""
    if interpreter is None:
        return None
    if not is_shim(interpreter.path):
        return interpreter.path
    from cudaenv.probes.python import shim_target

    return shim_target(host, interpreter.path)


def start_dynamic(host, python: str):
    """The dynamic pass's child started now (:meth:`Host.start`), for :func:`run_dynamic`'s ``started``: the doctor
    starts it before anything else (it is the critical path), then the static pass's."""
    return host.start(_child_argv(host, python, "dynamic"), dynamic_timeout(host), until=_until("dynamic"))


def run_dynamic(host, python: str, started=None) -> Tuple[Optional[Dict[str, Any]], List[Note]]:
    """The dynamic pass's child run in ``python``: (its answer or None, the notes it left), for
    :func:`probe_torch_dynamic`'s ``early`` (its answer is read only when the static pass finds torch). ``started``:
    :func:`start_dynamic`'s child, already running."""
    notes: List[Note] = []
    return _run_child(host, python, "dynamic", dynamic_timeout(host), notes, started=started), notes


def probe_torch_dynamic(host, interpreter, static: Torch, notes: List[Note], early=None) -> Torch:
    """The dynamic pass: ``import torch`` in the child, with the user's own environment (CUDA_VISIBLE_DEVICES untouched).
    ``early``: :func:`run_dynamic`'s answer when the child already ran (started beside the static pass)."""
    if interpreter is None or static.python is None:
        return static
    if not static.installed:
        return static  # no torch found (or the interpreter did not answer): nothing to import
    if early is not None:
        data, early_notes = early
        notes.extend(early_notes)
    else:
        python = interpreter.path
        if is_shim(python) and static.executable and _runnable(static.executable):
            python = static.executable  # a pyenv/asdf shim costs a shell and `pyenv exec` on every start
        data = _run_child(host, python, "dynamic", dynamic_timeout(host), notes)
    if data is None:
        return static
    merged = merge_dynamic(static, data)
    if merged.import_error:
        notes.append(Note(PROBE, M("import torch failed in %s: %s", interpreter.path, merged.import_error.splitlines()[0][:300])))
    return merged

