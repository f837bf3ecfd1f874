"""What the files of a Python environment say about who made it: uv, conda, pixi (pure, never raises).

* ``pyvenv.cfg`` (PEP 405): ``key = value`` lines; uv writes ``uv = 0.13.9`` (recorded: a real ``uv venv``,
  ``tests/recorded/pyvenv-uv.txt``), virtualenv ``virtualenv = 20.x``, the stdlib's venv neither.
* ``conda-meta/history`` (conda/ceps, "Structure of installed conda environments"): blocks of
  ``==> YYYY-MM-DD HH:MM:SS <==``, ``# cmd: ...``, ``# conda version: X.Y.Z`` (mamba and others write their own
  tool's name before ``version:``), then ``+channel/subdir::name-version-build`` lines.
* ``conda-meta/NAME-VERSION-BUILD.json``: one file per installed package, read by
  :func:`cudaenv.parse.toolkit_files.parse_conda_meta_record`.
* a pixi manifest (``pixi.toml``, or ``pyproject.toml`` with ``[tool.pixi.*]`` tables): the CUDA the solver may
  assume, ``[system-requirements] cuda = "12"`` (also per feature, ``[feature.NAME.system-requirements]``) or, since
  pixi 0.71, a platform entry ``{ platform = "linux-64", cuda = "12.0" }`` (pixi.prefix.dev, "System Requirements"
  and "Pytorch Installation"), and the channels. Read line by line: the subset these keys are written in (one-line
  values), never a whole TOML parser.
"""

from __future__ import annotations

from cudaenv.model.record import Record
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor's start-up reads few of these

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Dict, List, Optional, Tuple

MAX_LINES = 20_000  # a manifest or history of more lines is read up to here
_KEY = LazyPattern(r"\A\s*([A-Za-z0-9_.-]+)\s*=\s*(.*?)\s*\Z")
_TOOL_VERSION = LazyPattern(r"\A#\s*([A-Za-z0-9_.-]+) version:\s*(\S{1,40})\s*\Z")
_STRING = LazyPattern(r"\"([^\"\\]{0,200})\"|'([^']{0,200})'")
_CUDA_IN_PLATFORM = LazyPattern(r"\bcuda\s*=\s*[\"']([0-9][0-9.]{0,10})[\"']")


class CondaHistory(Record):
    tool: Optional[str] = None  # "conda", "mamba": the word before "version:" in the first block
    tool_version: Optional[str] = None
    command: Optional[str] = None  # the first block's "# cmd:" line (cut to 300 characters)


class PixiManifest(Record):
    pixi: bool = False  # the file is a pixi manifest (a pyproject.toml without [tool.pixi] is not)
    cuda: Optional[str] = None  # [system-requirements] cuda (the default feature's)
    feature_cuda: Tuple[Tuple[str, str], ...] = ()  # (feature, cuda) of [feature.NAME.system-requirements]
    platform_cuda: Optional[str] = None  # a platforms entry's cuda = "12.0" (pixi >= 0.71)
    channels: Tuple[str, ...] = ()


def _lines(text: str) -> List[str]:
    return text.splitlines()[:MAX_LINES] if isinstance(text, str) else []


def _unquote(value: str) -> Optional[str]:
    m = _STRING.match(value.strip())
    if m is None:
        return None
    return m.group(1) if m.group(1) is not None else m.group(2)


def parse_pyvenv_cfg(text: str) -> Dict[str, str]:
    """``pyvenv.cfg``'s settings (keys lower-cased, the first of a repeated key kept)."""
    out: Dict[str, str] = {}
    for line in _lines(text):
        key, sep, value = line.partition("=")
        key = key.strip().lower()
        if sep and key and len(key) <= 60 and key not in out:
            out[key] = value.strip()[:500]
    return out


def parse_conda_history(text: str) -> CondaHistory:
    """The first action block's tool, its version and command; empty when the file says none (an empty history)."""
    tool = version = command = None
    blocks = 0
    for line in _lines(text):
        line = line.strip()
        if line.startswith("==>"):
            blocks += 1
            if blocks > 1:
                break
        elif line.startswith("# cmd:") and command is None:
            command = line[len("# cmd:"):].strip()[:300] or None
        elif tool is None:
            m = _TOOL_VERSION.match(line)
            if m is not None:
                tool, version = m.group(1), m.group(2)
    return CondaHistory(tool, version, command)


def _header(line: str) -> Optional[str]:
    """The table name of a ``[table]`` line (dotted parts joined without spaces), else None (``[[array]]`` too)."""
    text = line.strip()
    if not text.startswith("[") or text.startswith("[["):
        return None
    end = text.find("]")
    rest = text[end + 1:].strip() if end > 0 else "x"
    if end < 0 or (rest and not rest.startswith("#")) or "[" in text[1:end]:
        return None
    return ".".join(part.strip().strip('"') for part in text[1:end].split("."))


def parse_pixi_manifest(text: str, pyproject: bool = False) -> PixiManifest:
    """The CUDA a pixi manifest declares and its channels. ``pyproject``: a ``pyproject.toml``, a pixi manifest only
    with ``[tool.pixi...]`` tables (its other tables are the project's, not pixi's)."""
    pixi = not pyproject
    table = "" if not pyproject else "\0"
    cuda = platform_cuda = None
    features: List[Tuple[str, str]] = []
    channels: Tuple[str, ...] = ()
    for line in _lines(text):
        name = _header(line)
        if name is not None:
            if pyproject:
                is_pixi = name == "tool.pixi" or name.startswith("tool.pixi.")
                pixi = pixi or is_pixi
                table = name[len("tool.pixi."):] if name.startswith("tool.pixi.") else ("" if is_pixi else "\0")
            else:
                table = name
            continue
        if line.lstrip().startswith("[["):
            table = "\0"
            continue
        if table.startswith("\0"):
            continue
        m = _KEY.match(line)
        if m is None:
            continue
        key, value = m.group(1), m.group(2)
        if table == "system-requirements" and key == "cuda":
            cuda = _unquote(value) or cuda
        elif table.startswith("feature.") and table.endswith(".system-requirements") and key == "cuda":
            found = _unquote(value)
            if found:
                features.append((table[len("feature."): -len(".system-requirements")], found))
        elif table in ("", "workspace", "project") and key == "system-requirements.cuda":
            cuda = _unquote(value) or cuda
        elif table in ("workspace", "project") and key == "platforms":
            found = _CUDA_IN_PLATFORM.search(value)
            if found:
                platform_cuda = found.group(1)
        elif table in ("workspace", "project") and key == "channels" and value.startswith("["):
            channels = tuple(a or b for a, b in _STRING.findall(value[:2000]))[:20]
    return PixiManifest(pixi, cuda, tuple(features[:20]), platform_cuda, channels)
