"""What an installed CUDA consumer's own files say about its build: METADATA headers, a build-info file's keys, the
local version tag, ``Requires-Dist`` on ``nvidia-*-cuXX`` wheels, and the shared libraries a RECORD lists.

Samples::

    METADATA       Name: onnxruntime-gpu / Version: 1.23.2 / Requires-Dist: nvidia-cudnn-cu12 ; extra == "cuda"
    build info     build_info = collections.OrderedDict([('cuda_version', '12.8'), ('is_cuda_build', True)])
                   cuda_version = '12.2'          torch_info = {'version': '2.1', 'cuda_version': '12.1'}
    local tag      2.8.0+cu128 -> "12.8"; 0.6.3+cu126 -> "12.6"; 0.23.0+cpu -> "cpu"
    RECORD         onnxruntime/capi/libonnxruntime_providers_cuda.so,sha256=...,12345

Pure and total: any text in, a value or None out (never an exception); every value read is checked (a version is a
version, a package name is a name), so nothing hostile reaches the report unchecked.
"""

from __future__ import annotations

from cudaenv.core.lazy import LazyPattern
from cudaenv.core.version import parse_version

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Dict, List, Optional, Tuple

MAX_HEADER_LINES = 4000  # a METADATA header block longer than this is not one
_NAME = LazyPattern(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?")


def normalize_name(name: str) -> str:
    """PEP 503: ``Flash_Attn`` -> ``flash-attn`` (runs of ``-_.`` become one ``-``)."""
    # each run of separators one "-", none at either end: the pieces between them joined (no Python step per character)
    return "-".join(filter(None, str(name).lower().replace("_", "-").replace(".", "-").split("-")))


def parse_metadata(text: str) -> Tuple[Optional[str], Optional[str], Tuple[str, ...]]:
    """(Name, Version, Requires-Dist lines) of a METADATA header block; a field that is not what it says is None."""
    name = version = None
    requires: List[str] = []
    if not isinstance(text, str):
        return None, None, ()
    end = text.find("\n\n")  # the header block ends at the first blank line at the latest: the body is not split
    for count, line in enumerate((text if end < 0 else text[:end]).split("\n")):
        if count >= MAX_HEADER_LINES or not line.strip():
            break
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "name" and name is None:
            name = value if _NAME.fullmatch(value) else None
        elif key == "version" and version is None:
            version = value if _pep440ish(value) else None
        elif key == "requires-dist" and len(value) < 300:
            requires.append(value)
    return name, version, tuple(requires)


def _pep440ish(value: str) -> bool:
    """A version as written in METADATA: ``2.8.0+cu128``, ``1.23.2``, ``0.0.29.post3``, ``2.11.0rc1`` (short, no spaces)."""
    return 0 < len(value) <= 64 and value[0].isdigit() and all(ch.isalnum() or ch in ".+-_!" for ch in value)


def requirement_name(line: str) -> Optional[str]:
    """The normalized project name a ``Requires-Dist`` line asks for (``nvidia-cublas-cu12 (>=12.1) ; extra == "x"``)."""
    head = str(line).split(";", 1)[0].strip()
    match = _NAME.match(head)
    return normalize_name(match.group(0)) if match else None


def requirement_floor(line: str) -> Optional[str]:
    """The lowest version a ``Requires-Dist`` line allows, where it says one: ``nvidia-cudnn-cu12<10.0,>=9.8; ...`` ->
    ``9.8``, ``nvidia-cudnn-cu12 (==8.9.2.26)`` -> ``8.9.2.26``, ``~=9.1`` -> ``9.1``; None without ``>=``/``==``/``~=``
    (or with a version that is not plain numbers)."""
    head = str(line)[:1000].split(";", 1)[0]
    match = _NAME.match(head.strip())
    if not match:
        return None
    spec = head.strip()[match.end():].strip()
    if spec.startswith("["):  # extras: jax[cuda12]>=0.4
        spec = spec.split("]", 1)[-1]
    spec = spec.strip().strip("()")
    for clause in spec.split(","):
        clause = clause.strip().strip("()").strip()
        for op in (">=", "==", "~="):
            if clause.startswith(op):
                value = clause[2:].strip().rstrip(".*").rstrip(".")
                parts = value.split(".")
                if value and len(value) <= 32 and all(p.isdigit() and p.isascii() for p in parts):
                    return value
    return None


def nvidia_cuda_major(name: str) -> Optional[int]:
    """``nvidia-cublas-cu12`` -> 12, ``nvidia-cudnn-cu11`` -> 11; None for a name without a ``-cuXX`` suffix
    (``nvidia-cuda-runtime`` of CUDA 13 has none: its major is its version's)."""
    text = normalize_name(name or "") if isinstance(name, str) and len(name) < 200 else ""
    head, _, tail = text.rpartition("-")
    if not head.startswith("nvidia-") or len(head) < 8 or not tail.startswith("cu"):
        return None
    digits = tail[2:]
    return int(digits) if digits.isdigit() and digits.isascii() and 2 <= len(digits) <= 3 else None


def local_cuda(version: str) -> Optional[str]:
    """The CUDA of a local version tag: ``2.8.0+cu128`` -> ``12.8``, ``+cu118`` -> ``11.8``, ``+cu13`` -> ``13``;
    jaxlib's own CUDA wheels (before the jax-cudaNN-plugin packages): ``0.4.25+cuda12.cudnn89`` -> ``12``,
    ``0.1.57+cuda111`` -> ``11.1``; ``+cpu`` -> ``cpu``; None without a tag that says."""
    if not isinstance(version, str) or "+" not in version or len(version) > 64:
        return None
    for part in version.split("+", 1)[1].replace("_", ".").split("."):
        low = part.lower()
        if low == "cpu":
            return "cpu"
        digits = low[4:] if low.startswith("cuda") else low[2:] if low.startswith("cu") else ""
        if digits.isdigit() and digits.isascii() and 2 <= len(digits) <= 3:
            return digits if len(digits) == 2 else "%s.%s" % (digits[:2], digits[2:])
    return None


def local_cudnn(version: str) -> Optional[str]:
    """The cuDNN of jaxlib's local version tag: ``0.4.25+cuda12.cudnn89`` -> ``8.9``, ``+cuda11.cudnn805`` -> ``8.0.5``;
    None without one."""
    if not isinstance(version, str) or "+" not in version or len(version) > 64:
        return None
    for part in version.split("+", 1)[1].split("."):
        low = part.lower()
        digits = low[5:] if low.startswith("cudnn") else ""
        if digits.isdigit() and digits.isascii() and 2 <= len(digits) <= 3:
            return ".".join(digits)
    return None


def parse_build_info(text: str, keys: Tuple[str, ...]) -> Dict[str, str]:
    """The values of ``keys`` in a build-info Python file, read as text (never run): ``KEY = 'v'``, ``'KEY': 'v'``
    and ``('KEY', 'v')`` forms; a value is a short quoted string or True/False/None (others are left out)."""
    out: Dict[str, str] = {}
    if not isinstance(text, str):
        return out
    for key in keys:
        at = 0
        while key not in out:
            at = text.find(key, at)
            if at < 0:
                break
            at += len(key)
            value = _value_after(text, at)
            if value is not None:
                out[key] = value
    return out


def _value_after(text: str, at: int) -> Optional[str]:
    """The literal after a key: skip a closing quote, spaces, one of ``=:,``, spaces; then 'v', "v" or a bare word."""
    i, n = at, len(text)
    if i < n and text[i] in "'\"":
        i += 1
    while i < n and text[i] in " \t":
        i += 1
    if i >= n or text[i] not in "=:,":
        return None
    i += 1
    while i < n and text[i] in " \t":
        i += 1
    if i < n and text[i] in "'\"":
        end = text.find(text[i], i + 1, i + 42)
        value = text[i + 1:end] if end > 0 else None
        return value if value is not None and all(ch.isalnum() or ch in ".-_+" for ch in value) else None
    for word in ("True", "False", "None"):
        if text.startswith(word, i):
            return word
    return None


def build_cuda(value: Optional[str]) -> Optional[str]:
    """A build-info CUDA value as a version (``12.8``, ``12``), None for ``''``, ``None``, ``0.0`` or no version. The
    Windows builds' form, the DLL name suffix (TensorFlow 2.10's ``64_112``, ``64_8``: tests/recorded/
    wheel-tensorflow-2.10.1-win_amd64.txt), is read as its version: three digits are a two-digit major and a minor
    (``11.2``), fewer a major (``8``)."""
    if isinstance(value, str) and value.startswith("64_") and value[3:].isdigit() and value[3:].isascii() and len(value) <= 6:
        digits = value[3:]
        value = "%s.%s" % (digits[:2], digits[2]) if len(digits) == 3 else digits
    version = parse_version(value) if value else None
    if version is None or all(not part.strip("0") for part in version.split(".")):
        return None
    return version


_LIBRARY_MARK = LazyPattern(r"\.(?:[sS][oO]|[dD][lL][lL]|[pP][yY][dD])")  # .so, .dll, .pyd in any case


def _library_lines(text: str):
    """The lines of ``text`` that may name a library, in order: those holding .so, .dll or .pyd in any case, found by
    one search through the text (its letters' cases spelled in the pattern: nothing lowered; no other character lowers
    to one of these ASCII letters)."""
    pos = 0
    while True:
        hit = _LIBRARY_MARK.search(text, pos)
        if hit is None:
            return
        start = text.rfind("\n", pos, hit.start()) + 1 or pos
        end = text.find("\n", hit.end())
        yield text[start:] if end < 0 else text[start:end]
        if end < 0:
            return
        pos = end + 1


def record_libraries(text: str, limit: int = 200) -> Tuple[str, ...]:
    """The shared libraries a RECORD lists (paths relative to site-packages: ``pkg/lib/libx.so.12``, ``x.dll``), at
    most ``limit``; paths that climb out (``..``) or are absolute are left out."""
    out: List[str] = []
    if not isinstance(text, str):
        return ()
    for line in _library_lines(text):
        low = line.lower()
        if ".so" not in low and ".dll" not in low and ".pyd" not in low:
            continue  # no library's name in it (a big RECORD is mostly headers and sources)
        path = line.split(",", 1)[0].strip()
        if not path or path.startswith(("/", "\\")) or ".." in path.replace("\\", "/").split("/"):
            continue
        base = path.rsplit("/", 1)[-1].lower()
        if base.endswith((".so", ".dll", ".pyd")) or ".so." in base:
            out.append(path)
            if len(out) >= limit:
                break
    return tuple(out)


PRELOAD_LIBS = ("cudnn", "cutensor", "nccl")


def parse_cupy_preload(text) -> Tuple[Optional[str], Optional[str], Tuple[Tuple[str, str, Tuple[str, ...]], ...]]:
    """CuPy's preload configuration (``cupy/.data/_wheel.json``, cupy/_environment.py): (packaging: "pip" | "conda",
    the CUDA string its folder names use, ((library, version, file names), ...) for cuDNN, cuTENSOR and NCCL) from
    ``{"packaging": ..., "cuda": ..., "cudnn": {"version": ..., "filenames": [...]}}`` (older wheels: one
    ``filename``). A name is kept only when it is a plain file name (no folder, no drive); anything else in, (None,
    None, ()) or the part that reads out."""
    import json

    try:
        data = json.loads(text) if isinstance(text, (str, bytes)) else None
    except (ValueError, RecursionError):
        return None, None, ()
    if not isinstance(data, dict):
        return None, None, ()

    def word(value) -> Optional[str]:
        return (value if isinstance(value, str) and value and len(value) <= 64 and value not in (".", "..")
                and not set(value) & set("/\\:\0") else None)

    libs = []
    for lib in PRELOAD_LIBS:
        entry = data.get(lib)
        if not isinstance(entry, dict) or word(entry.get("version")) is None:
            continue
        names = entry.get("filenames")
        names = names if isinstance(names, list) else [entry.get("filename")]
        names = tuple(n for n in (word(n) for n in names[:8]) if n)
        if names:
            libs.append((lib, entry["version"], names))
    return word(data.get("packaging")), word(data.get("cuda")), tuple(libs)
