"""The one home for reading versions: version strings and their sort key, CUDA and cuDNN integers, compute capabilities.

* :func:`version_key` -- the lenient sort key of any version-looking text (``"12.1.105"`` -> ``(12, 1, 105)``).
* :func:`is_version` / :func:`parse_version` -- the strict check for a value read from a file or a tool: dot-separated
  ASCII digits only, anchored at both ends, at most :data:`MAX_PARTS` parts of at most :data:`MAX_DIGITS` digits.
  ``"12.4$(touch x)"`` and a 60,000-digit number are not versions; callers drop them with a note built by
  :func:`malformed` ("version.json has a malformed version '12.4$(tou...' (23 characters), ignored").
* :func:`parse_driver_version` / :func:`parse_python_version` -- the same for a driver version (``"550.54.15"``)
  and a CPython version as asked for (``"3.11"``, ``"3.13t"``).
* :func:`cuda_from_int` -- CUDA's integer version: ``12040`` -> ``"12.4"``, ``11080`` -> ``"11.8"``.
* :func:`cudnn_from_int` -- cuDNN's: ``90100`` -> ``"9.1.0"`` (v9 on: major*10000+minor*100+patch),
  ``8907`` -> ``"8.9.7"`` (up to v8: major*1000+minor*100+patch).
* :func:`cc_tuple`, :func:`cc_text`, :func:`sm_name`, :func:`split_arch` -- compute capabilities written as
  ``"8.6"``, ``(8, 6)``, ``"sm_86"``, ``"compute_86"``, ``"86"`` or ``"sm_90a"``.

* :func:`pep440_key`, :func:`compare_pep440`, :func:`pep440_release` -- Python package versions (torch,
  torchvision, torchaudio) by PEP 440 (``packaging.version``): ``2.6.0.dev20250101 < 2.6.0rc1 < 2.6.0 <
  2.6.0+cu126 < 2.6.0.post1``, where :func:`compare_versions` (driver and CUDA versions, not PEP 440) sees
  ``2.6.0rc1 == 2.6.0``.

Stdlib only at import, no regular expression, nothing done at import: it sits on the ``cudaenv use`` path.
``packaging`` (which imports ``re``) is imported inside the PEP 440 functions only, which that path never calls.
Every function takes any value and never raises.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Any, Optional, Tuple

from cudaenv.core.version_strings import (  # noqa: F401 - this home's version strings, written there (`use` reads them)
    _DIGITS,
    MAX_DIGITS,
    MAX_PARTS,
    is_version,
    parse_driver_version,
    parse_version,
    version_key,
)


def parse_python_version(text: Any) -> Optional[str]:
    """A CPython version as asked for: ``"3.11"``, ``"3.11.4"``, ``"3.13t"`` (free-threaded); two or three parts of
    at most four digits and an optional ``t``, else None (``"3"``, ``"3.11rc1"``, ``"py3.11"``)."""
    if not isinstance(text, str) or len(text) > 32:
        return None
    value = text.strip()
    bare = value[:-1] if value.endswith("t") else value
    return value if is_version(bare, 3, 4) and bare.count(".") >= 1 else None


def malformed(where: str, value: Any, limit: int = 24) -> str:
    """The note for a version field that is not a version: the value shortened, so a huge one stays one short line (a
    marked message)."""
    from cudaenv.core.i18n import M

    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return M("%s has a malformed version %r, ignored", where, text)
    return M("%s has a malformed version %r (%d characters), ignored", where, text[:limit] + "...", len(text))


def compare_versions(a: Any, b: Any) -> int:
    """-1, 0 or 1, numerically and part by part, a missing part counting as 0 (``"580" < "580.65.06"``)."""
    ta, tb = list(version_key(a)), list(version_key(b))
    n = max(len(ta), len(tb))
    ta += [0] * (n - len(ta))
    tb += [0] * (n - len(tb))
    return (ta > tb) - (ta < tb)


def major_minor(text: Any) -> Optional[str]:
    """``"12.4.131"`` -> ``"12.4"``; ``"12"`` -> ``"12.0"``; None when there is no number."""
    t = version_key(text)
    if not t:
        return None
    return "%d.%d" % (t[0], t[1] if len(t) > 1 else 0)


# ------------------------------------------------------------------------------ CUDA and cuDNN ints
def _small_int(value: Any, digits: int = 9) -> Optional[int]:
    """A non-negative int from an int or a short string of ASCII digits; None otherwise (bools, huge, signs)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 10 ** digits else None
    if isinstance(value, str):
        text = value.strip()
        if 0 < len(text) <= digits and _DIGITS.issuperset(text):
            return int(text)
    return None


def cuda_from_int(value: Any) -> Optional[str]:
    """CUDA's integer version (``CUDA_VERSION``, ``cudaDriverGetVersion``, NVML): ``12040`` -> ``"12.4"``.

    ``major * 1000 + minor * 10``: 11080 -> 11.8, 9020 -> 9.2, 13000 -> 13.0. None below 1000 or past 999999.
    """
    number = _small_int(value, 6)
    if number is None or number < 1000:
        return None
    return "%d.%d" % (number // 1000, (number % 1000) // 10)


def cuda_to_int(version: Any) -> Optional[int]:
    """``"12.4"`` -> ``12040`` (the inverse of :func:`cuda_from_int`); None when it is not a version."""
    key = version_key(version) if is_version(version) else ()
    if not key or key[0] > 999 or (len(key) > 1 and key[1] > 99):
        return None
    return key[0] * 1000 + (key[1] if len(key) > 1 else 0) * 10


def cudnn_from_int(value: Any) -> Optional[str]:
    """cuDNN's integer version: ``90100`` -> ``"9.1.0"``, ``91002`` -> ``"9.10.2"`` (v9 on: major*10000+minor*100+patch);
    ``8907`` -> ``"8.9.7"`` (up to v8: major*1000+minor*100+patch). None below 1000 or past 9999999."""
    number = _small_int(value, 7)
    if number is None or number < 1000:
        return None
    if number >= 10000:
        return "%d.%d.%d" % (number // 10000, (number % 10000) // 100, number % 100)
    return "%d.%d.%d" % (number // 1000, (number % 1000) // 100, number % 100)


# ------------------------------------------------------------------------------ compute capabilities
def split_arch(value: Any) -> Optional[Tuple[str, int, int, str]]:
    """``"sm_90a"`` -> ``("sm", 9, 0, "a")``; ``"compute_86"`` -> ``("compute", 8, 6, "")``; ``"8.6"``, ``"86"``,
    ``(8, 6)`` -> ``("", 8, 6, "")``. None when it is not a compute capability (major 1-3 digits, minor one digit,
    an optional one-letter suffix such as ``a`` or ``f``)."""
    if isinstance(value, tuple):
        if len(value) >= 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value[:2]):
            if 0 <= value[0] < 1000 and 0 <= value[1] < 10:
                return ("", value[0], value[1], "")
        return None
    if not isinstance(value, str) or len(value) > 16:
        return None
    text = value.strip().lower()
    kind = ""
    for prefix in ("sm_", "compute_"):
        if text.startswith(prefix):
            kind, text = prefix[:-1], text[len(prefix):]
            break
    suffix = ""
    if text and "a" <= text[-1] <= "z":
        suffix, text = text[-1], text[:-1]
    if "." in text:
        major, _, minor = text.partition(".")
        if not (0 < len(major) <= 3 and len(minor) == 1 and _DIGITS.issuperset(major + minor)):
            return None
    else:
        if not (2 <= len(text) <= 4 and _DIGITS.issuperset(text)):
            return None
        major, minor = text[:-1], text[-1]
    return (kind, int(major), int(minor), suffix)


def cc_tuple(value: Any) -> Optional[Tuple[int, int]]:
    """``"8.6"``, ``(8, 6)``, ``"sm_86"``, ``"86"``, ``"sm_90a"`` -> ``(8, 6)`` / ``(9, 0)``; None when it is not one."""
    arch = split_arch(value)
    return (arch[1], arch[2]) if arch else None


def cc_text(value: Any) -> Optional[str]:
    """A compute capability as NVIDIA writes it: ``"8.6"`` (``"sm_86"`` -> ``"8.6"``, ``"120"`` -> ``"12.0"``)."""
    t = cc_tuple(value)
    return "%d.%d" % t if t else None


def sm_name(value: Any, suffix: bool = True) -> Optional[str]:
    """``"8.6"`` -> ``"sm_86"``; ``"sm_90a"`` keeps its suffix (``suffix=False`` drops it); None when not a capability."""
    arch = split_arch(value)
    if arch is None:
        return None
    return "sm_%d%d%s" % (arch[1], arch[2], arch[3] if suffix else "")


# ------------------------------------------------------------------------------ PEP 440 (Python package versions)
_PEP440_MAX = 128  # longer text is not read as a version (torch's longest: 2.8.0.dev20250528+cu128 is 24)


def pep440(version: Any) -> Any:
    """The :class:`cudaenv.core.pep440.Version` of ``version`` (``packaging.version.Version``'s reading, without
    importing packaging), or None when it is not a PEP 440 version (or over 128 characters)."""
    if not isinstance(version, str) or not version.strip() or len(version) > _PEP440_MAX:
        return None
    from cudaenv.core.pep440 import InvalidVersion, Version  # off the `cudaenv use` path: it compiles a pattern

    try:
        return Version(version.strip())
    except InvalidVersion:
        return None


def pep440_key(version: Any) -> Tuple[Any, ...]:
    """The sort key of a package version by PEP 440; text that is not one sorts below every version, by its
    :func:`version_key`."""
    parsed = pep440(version)
    return (1, parsed) if parsed is not None else (0, version_key(version))


def compare_pep440(a: Any, b: Any) -> int:
    """-1, 0 or 1 by PEP 440: ``compare_pep440("2.6.0rc1", "2.6.0") == -1``, ``compare_pep440("2.6", "2.6.0") == 0``."""
    ka, kb = pep440_key(a), pep440_key(b)
    return (ka > kb) - (ka < kb)


def pep440_release(version: Any) -> Optional[str]:
    """The release a version is of, as written with its own number of parts: ``"2.8.0rc1"`` -> ``"2.8.0"``,
    ``"2.7.0.dev20250310+cpu"`` -> ``"2.7.0"``, ``"2.7"`` -> ``"2.7"``; None when it is not a PEP 440 version."""
    parsed = pep440(version)
    return ".".join(str(part) for part in parsed.release) if parsed is not None else None
