"""Who made the probed interpreter's environment: a uv venv, a plain venv, a conda env or a pixi env (files only).

Found through the interpreter's path, never its links followed (a venv's ``bin/python`` links to the base
interpreter): ``PREFIX/bin/python`` (``PREFIX\\Scripts\\python.exe``, or a conda env's ``PREFIX\\python.exe``) gives
the prefix; then ``PREFIX/pyvenv.cfg`` (uv writes ``uv = VERSION``), ``PREFIX/conda-meta/`` (its ``history``, its
package file names), and a prefix ``WORKSPACE/.pixi/envs/NAME`` is a pixi env whose manifest is
``WORKSPACE/pixi.toml`` or ``WORKSPACE/pyproject.toml`` with ``[tool.pixi]`` tables. The parsers are
:mod:`cudaenv.parse.pyenvs`; nothing is run.
"""

from __future__ import annotations

import posixpath

from cudaenv.core.lazy import LazyModule
from cudaenv.model.snapshot import PythonEnv
from cudaenv.parse.pyenvs import parse_conda_history, parse_pixi_manifest, parse_pyvenv_cfg
from cudaenv.parse.toolkit_files import parse_conda_meta_record

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed
CFG_LIMIT = 64 * 1024
HISTORY_LIMIT = 256 * 1024  # the first block is at the top; a long history is cut
MANIFEST_LIMIT = 512 * 1024
MAX_META_FILES = 50_000  # records listed at most (a big env holds a few thousand)


def _pathmod(host, path: str):
    return ntpath if host.system == "windows" and "\\" in path else posixpath


def env_prefix(host, python: str) -> str:
    """The environment folder an interpreter path lies in (pure on the path)."""
    p = _pathmod(host, python)
    folder = p.dirname(python)
    if p.basename(folder).lower() in ("bin", "scripts"):
        return p.dirname(folder) or folder
    return folder


def _cuda_packages(host, meta: str) -> Tuple[str, ...]:
    from cudaenv.core.resources import load_table

    wanted = set()
    for row in load_table("conda_torch")["rows"]:
        if row.get("rule") == "cuda_package":
            wanted.update(row.get("names") or ())
    found: List[str] = []
    starts = tuple(w + "-" for w in wanted)
    for name in host.listdir(meta)[:MAX_META_FILES]:
        if not name.startswith(starts):  # most records are other packages: no parse for them
            continue
        parsed = parse_conda_meta_record(name)
        if parsed is not None and parsed[0] in wanted:
            found.append("%s=%s=%s" % parsed)
    return tuple(sorted(found))


def _pixi_workspace(p, prefix: str) -> Optional[Tuple[str, str]]:
    """(workspace folder, environment name) for a prefix ``WORKSPACE/.pixi/envs/NAME``."""
    envs = p.dirname(prefix)
    if p.basename(envs) != "envs" or p.basename(p.dirname(envs)) != ".pixi":
        return None
    return p.dirname(p.dirname(envs)), p.basename(prefix)


def _manifest(host, p, workspace: str):
    for name, pyproject in (("pixi.toml", False), ("pyproject.toml", True)):
        path = p.join(workspace, name)
        text = host.read_text(path, limit=MANIFEST_LIMIT)
        if text is None:
            continue
        parsed = parse_pixi_manifest(text, pyproject=pyproject)
        if parsed.pixi:
            return path, parsed
    return None, None


def probe_python_env(host, python: Optional[str], executable: Optional[str] = None) -> Optional[PythonEnv]:
    """The environment of the interpreter ``python`` (a pyenv/asdf shim: of ``executable``, the one it runs); None
    without an interpreter, or when its folder cannot be seen through the Host."""
    if not python:
        return None
    from cudaenv.probes.torch import is_shim

    if is_shim(python) and executable:
        python = executable
    p = _pathmod(host, python)
    prefix = env_prefix(host, python)
    if not host.is_dir(prefix):
        return None  # not seen: under --root, an interpreter of this machine lies outside the inspected tree
    cfg = host.read_text(p.join(prefix, "pyvenv.cfg"), limit=CFG_LIMIT)
    if cfg is not None:
        settings = parse_pyvenv_cfg(cfg)
        for tool in ("uv", "virtualenv"):
            if settings.get(tool):
                return PythonEnv(tool, prefix, tool, settings[tool][:40])
        return PythonEnv("venv", prefix)
    meta = p.join(prefix, "conda-meta")
    if not host.is_dir(meta):
        return PythonEnv("system", prefix)
    packages = _cuda_packages(host, meta)
    pixi = _pixi_workspace(p, prefix)
    if pixi is not None:
        manifest, parsed = _manifest(host, p, pixi[0])
        cuda = (parsed.cuda or parsed.platform_cuda or dict(parsed.feature_cuda).get(pixi[1])) if parsed else None
        return PythonEnv("pixi", prefix, "pixi", None, pixi[1], manifest, cuda, parsed.channels if parsed else (), packages)
    history = parse_conda_history(host.read_text(p.join(meta, "history"), limit=HISTORY_LIMIT) or "")
    envs = p.dirname(prefix)
    name = p.basename(prefix) if p.basename(envs) == "envs" else "base"
    return PythonEnv("conda", prefix, history.tool or "conda", history.tool_version, name, cuda_packages=packages)
