"""Version strings, the part of the one home of versions (:mod:`cudaenv.core.version`) that `cudaenv use` reads: the
lenient sort key (:func:`version_key`) and the strict checks (:func:`is_version`, :func:`parse_version`,
:func:`parse_driver_version`). :mod:`cudaenv.core.version` gives each of these names too, and every other module
imports them from there; the modules on `cudaenv use`'s path import them from here, so that a switch does not
unmarshal and define the home's other forms (integers, compute capabilities, PEP 440: two thirds of its code;
unmarshalling code costs about 19 instructions a byte, issue 35).

Stdlib only, no regular expression, nothing done at import; every function takes any value and never raises.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Any, Dict, Optional, Tuple

MAX_PARTS = 6  # 12.1.20230222 is 3; a wheel's 9.1.0.70 is 4
MAX_DIGITS = 9  # date-stamped version.json parts (20230222) have 8
_KEY_PARTS = 16  # version_key reads at most this many parts
_KEY_DIGITS = 18  # ... of at most this many leading digits each
_DIGITS = frozenset("0123456789")
# version_key's answers for the strings it read last: one toolkit's version is sorted, matched and compared many times
# on `cudaenv use`'s path (356 readings of 27 strings with 1,000 toolkits); bounded, so any number of versions is safe.
_KEYS: "Dict[str, Tuple[int, ...]]" = {}
_KEYS_KEPT = 4096
_KEYS_LONGEST = 64  # a longer string (a hostile paste's) is read each time, not kept


# ------------------------------------------------------------------------------ version strings
def version_key(version: Any) -> Tuple[int, ...]:
    """The lenient reading of a version for comparing and sorting: ``"12.1.105"`` -> ``(12, 1, 105)``.

    Each dot-separated part gives its leading digits (``"131-1"`` -> 131); a leading ``v`` is ignored; the
    first part without digits ends it; ``12.10`` sorts after ``12.9``; unknown -> ``()`` (sorts lowest).
    Bounded: at most 16 parts of at most 18 digits are read, whatever the input's length.
    """
    if not version:
        return ()
    if type(version) is str:
        known = _KEYS.get(version)
        if known is not None:
            return known
    text = version if isinstance(version, str) else str(version)
    out = []
    for part in text[: _KEY_PARTS * 64].strip().lstrip("vV").split(".", _KEY_PARTS)[:_KEY_PARTS]:
        n = 0
        while n < len(part) and part[n] in _DIGITS:
            n += 1
        if not n:
            break
        out.append(int(part[: min(n, _KEY_DIGITS)]))
    key = tuple(out)
    if type(version) is str and len(version) <= _KEYS_LONGEST:
        if len(_KEYS) >= _KEYS_KEPT:
            _KEYS.clear()
        _KEYS[version] = key
    return key


def is_version(text: Any, max_parts: int = MAX_PARTS, max_digits: int = MAX_DIGITS) -> bool:
    """True when ``text`` is exactly a version: ``12``, ``12.4``, ``12.4.131``, ``11.8.20220929``.

    ASCII digits and dots only, no sign, no space, no empty part, at most ``max_parts`` parts of at most
    ``max_digits`` digits. ``"12.4$(touch x)"``, ``"12.4 "``, ``"²"`` and a 3000-digit release are not.
    """
    if not isinstance(text, str) or not text or len(text) > max_parts * (max_digits + 1):
        return False
    parts = text.split(".")
    if len(parts) > max_parts:
        return False
    for part in parts:
        if not 0 < len(part) <= max_digits or not _DIGITS.issuperset(part):
            return False
    return True


def parse_version(text: Any, max_parts: int = MAX_PARTS, max_digits: int = MAX_DIGITS) -> Optional[str]:
    """``text`` without surrounding white space when that is a version (:func:`is_version`), else None."""
    if not isinstance(text, str) or len(text) > 4096:
        return None
    value = text.strip()
    return value if is_version(value, max_parts, max_digits) else None


def parse_driver_version(text: Any) -> Optional[str]:
    """An NVIDIA driver version as given or read: ``"550.54.15"``, ``"572.61"``, ``"570"`` (a branch), Windows'
    ``"32.0.15.6094"``: one to four parts of at most four digits, else None (``"abc$(x)"``, ``"550.54.15 "`` inside)."""
    return parse_version(text, 4, 4)
