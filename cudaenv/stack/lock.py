"""The stack from a doctor's snapshot, its TOML both ways, and a snapshot checked against it (pure).

    stack = plan_stack(snapshot, view, index_base, ...)      # what `cudaenv lock` writes
    text = stack_toml(stack); stack = parse_stack(text)      # a round trip gives the same record
    differences = check_stack(stack, snapshot, view)         # `doctor --against`: the minimal difference

The torch build is pinned with its local tag and served from its own index (``{base}/cu130``), as `torch recommend`
installs it; the install line that converges is recommend's (:func:`cudaenv.recommend.install.commands`).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from cudaenv.core.i18n import M, Msg
from cudaenv.core.version import compare_versions, major_minor, parse_driver_version
from cudaenv.model.record import replace
from cudaenv.model.reports import StackDifference
from cudaenv.stack.records import STACK_SCHEMA, Stack
from cudaenv.stack.tomlfile import TomlError, loads, toml_text

HEADER = ("cudaenv stack file: what must hold on every machine of this project ([require]) and what was merely",
          "seen where it was locked ([seen]). Check a machine: `cudaenv doctor --against FILE`. Review it like a lock.")
_REQUIRE = ("driver_min", "gpu_archs", "cuda_major", "torch", "torch_index", "companions", "wheels", "toolkit",
            "toolkit_source")
_SEEN = ("driver", "gpus", "system", "python", "installer")
_MAX = 200  # the longest value kept from a hostile file


class StackFileError(ValueError):
    """Not a stack file this cudaenv reads (the message says why)."""


def _local_tag(version: Optional[str]) -> Optional[str]:
    return version.partition("+")[2] or None if version else None


def plan_stack(snapshot: Any, view: Any, index_base: str, generated_by: Optional[str] = None,
               generated_at: Optional[str] = None, host: Optional[str] = None) -> Stack:
    """The stack of the machine ``snapshot`` describes (``view``: the doctor's :class:`ReportView` of it)."""
    s = snapshot
    t = s.torch if s.torch is not None and s.torch.installed else None
    tag = _local_tag(t.version) if t is not None else None
    index = "%s/%s" % (index_base.rstrip("/"), tag) if tag else None
    cuda_major = None
    if t is not None and t.cuda:
        head = t.cuda.split(".")[0]
        cuda_major = int(head) if head.isdigit() and len(head) <= 3 else None
    a = s.active_toolkit
    active = None
    if a is not None and (a.path or a.nvcc):
        active = next((k for k in s.toolkits if k.path == a.path), None)
    archs = sorted({g.compute_capability for g in s.gpus if g.compute_capability}, key=lambda c: tuple(
        int(x) if x.isdigit() else 0 for x in c.split(".")))
    return Stack(
        schema=STACK_SCHEMA, generated_by=generated_by, generated_at=generated_at, host=host,
        driver_min=view.torch_min_driver or view.driver_version, gpu_archs=tuple(archs), cuda_major=cuda_major,
        torch=t.version if t is not None else None, torch_index=index,
        companions=tuple(t.companions) if t is not None else (), wheels=tuple(t.nvidia_packages) if t is not None else (),
        toolkit=(a.version or (active.version if active is not None else None)) if a is not None else None,
        toolkit_source=active.install_method if active is not None else None,
        seen_driver=view.driver_version, seen_gpus=tuple(g.name or "unknown GPU" for g in s.gpus),
        seen_system=s.platform.distro or s.platform.system,
        seen_python=t.python_version if t is not None else (s.torch.python_version if s.torch is not None else None),
        seen_installer=t.installer if t is not None else None)


def stack_toml(stack: Stack) -> str:
    """The stack file's text (:func:`parse_stack` reads it back as the same record)."""
    top = [("schema", stack.schema), ("generated_by", stack.generated_by), ("generated_at", stack.generated_at),
           ("host", stack.host)]
    require = [(k, getattr(stack, k)) for k in _REQUIRE]
    seen = [(k, getattr(stack, "seen_" + k)) for k in _SEEN]
    return toml_text(top, [("require", require), ("seen", seen)], header=HEADER)


def _str(value: Any, where: str) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise StackFileError(M("%s is not a string", where))
    return value[:_MAX]


def _strs(value: Any, where: str) -> Tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StackFileError(M("%s is not an array of strings", where))
    return tuple(v[:_MAX] for v in value[:256])


def parse_stack(text: str) -> Stack:
    """The :class:`Stack` of a stack file's text; :class:`StackFileError` when it is not one (a newer ``schema``
    included: never read as far as understood, a lock must not half-hold)."""
    try:
        doc = loads(text)
    except TomlError as exc:
        why = exc.args[0] if exc.args and isinstance(exc.args[0], Msg) and len(exc.args[0]) <= 200 else str(exc)[:200]
        raise StackFileError(M("not TOML: %s", why)) from None  # this reader's words said again; tomllib's as they are
    schema = doc.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise StackFileError(M("no schema key: not a stack file written by `cudaenv lock`"))
    if schema > STACK_SCHEMA or schema < 1:
        raise StackFileError(M("schema %d: this cudaenv reads stack files of schema %d", schema, STACK_SCHEMA))
    req = doc.get("require", {})
    seen = doc.get("seen", {})
    if not isinstance(req, dict) or not isinstance(seen, dict):
        raise StackFileError(M("[require] and [seen] are tables"))
    major = req.get("cuda_major")
    if major is not None and (not isinstance(major, int) or isinstance(major, bool) or not 0 < major < 1000):
        raise StackFileError(M("require.cuda_major is not a CUDA major version"))
    return Stack(
        schema=schema, generated_by=_str(doc.get("generated_by"), "generated_by"),
        generated_at=_str(doc.get("generated_at"), "generated_at"), host=_str(doc.get("host"), "host"),
        driver_min=_str(req.get("driver_min"), "require.driver_min"),
        gpu_archs=_strs(req.get("gpu_archs"), "require.gpu_archs"), cuda_major=major,
        torch=_str(req.get("torch"), "require.torch"), torch_index=_str(req.get("torch_index"), "require.torch_index"),
        companions=_strs(req.get("companions"), "require.companions"), wheels=_strs(req.get("wheels"), "require.wheels"),
        toolkit=_str(req.get("toolkit"), "require.toolkit"),
        toolkit_source=_str(req.get("toolkit_source"), "require.toolkit_source"),
        seen_driver=_str(seen.get("driver"), "seen.driver"), seen_gpus=_strs(seen.get("gpus"), "seen.gpus"),
        seen_system=_str(seen.get("system"), "seen.system"), seen_python=_str(seen.get("python"), "seen.python"),
        seen_installer=_str(seen.get("installer"), "seen.installer"))


def _pins(specs) -> dict:
    return {name.strip(): version.strip() for name, _, version in (p.partition("==") for p in specs)}


def check_stack(stack: Stack, snapshot: Any, view: Any) -> Tuple[StackDifference, ...]:
    """Each requirement of ``stack`` the machine of ``snapshot`` does not meet, with the commands that converge it
    (none: it holds). The torch build, its companions and the wheels are one install line (recommend's)."""
    from cudaenv.recommend.install import commands as install_commands

    s = snapshot
    out: List[StackDifference] = []
    have_driver = view.driver_version
    if stack.driver_min and parse_driver_version(stack.driver_min):
        if not have_driver or compare_versions(have_driver, stack.driver_min) < 0:
            out.append(StackDifference("driver", stack.driver_min, have_driver,
                                       (M("# install NVIDIA driver %s or newer (`cudaenv doctor` names the package for this system)",
                                          stack.driver_min),)))
    if stack.gpu_archs:
        for g in s.gpus:
            if g.compute_capability and g.compute_capability not in stack.gpu_archs:
                out.append(StackDifference("gpu-arch", ", ".join(stack.gpu_archs), "GPU %d: %s" % (
                    g.index, g.compute_capability)))
    t = s.torch if s.torch is not None and s.torch.installed else None
    if stack.cuda_major is not None:
        have_major = t.cuda.split(".")[0] if t is not None and t.cuda else None
        if have_major != str(stack.cuda_major):
            out.append(StackDifference("cuda-major", str(stack.cuda_major), have_major))
    if stack.torch:
        have = _pins((t.companions if t is not None else ()) + (t.nvidia_packages if t is not None else ()))
        wrong: List[str] = []
        if t is None or t.version != stack.torch:
            out.append(StackDifference("torch", stack.torch, t.version if t is not None else None))
            wrong.append("torch==" + stack.torch)
        for spec in stack.companions + stack.wheels:
            name, _, version = spec.partition("==")
            if have.get(name.strip()) != version.strip():
                out.append(StackDifference("wheel", spec, "%s==%s" % (name, have[name]) if name in have else None))
                wrong.append(spec)
        if wrong:
            python = (t.python if t is not None else None) or (s.torch.python if s.torch is not None else None)
            line = install_commands(wrong, stack.torch_index, (t.installer if t is not None else None) or "pip", python,
                                    s.platform.system, managed=bool(s.torch is not None and s.torch.externally_managed
                                                                    and not s.torch.in_virtualenv))
            first = next(i for i, d in enumerate(out) if d.what in ("torch", "wheel"))
            out[first] = replace(out[first], commands=tuple(line))
    if stack.toolkit:
        a = s.active_toolkit
        active = a.version if a is not None else None
        if not active or major_minor(active) != major_minor(stack.toolkit):
            mm = major_minor(stack.toolkit) or stack.toolkit
            installed = any(k.version and major_minor(k.version) == mm for k in s.toolkits)
            cmds = ("cudaenv use %s" % mm,) if installed else ("cudaenv install %s" % mm, "cudaenv use %s" % mm)
            out.append(StackDifference("toolkit", stack.toolkit, active, cmds))
    return tuple(out)


def stack_recommendation(stack: Stack):
    """The stack's torch build as a :class:`~cudaenv.recommend.records.Recommendation`, for recommend's own
    requirements and pyproject snippets (the one home of those formats): the pins with their local tag, the
    ``nvidia-*`` wheels among the requirements' pins, the plain pins (no local tag) for ``[project] dependencies``.
    None when the stack names no torch."""
    from cudaenv.recommend.records import Recommendation

    if not stack.torch:
        return None
    tag = _local_tag(stack.torch)
    pins = ("torch==" + stack.torch,) + tuple(stack.companions)
    plain = tuple(p.partition("+")[0] for p in pins)
    return Recommendation(tag or "default", stack.torch_index, stack.torch.partition("+")[0], ok=True,
                          packages=pins + tuple(stack.wheels), plain_packages=plain)
