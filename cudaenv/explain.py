"""What a pasted CUDA / torch / NCCL / nvcc error means and what to do: one classification for all of cudaenv.

The patterns are facts in ``data/error_patterns.json`` (each row: ``id``, ``patterns``, ``title``,
``explanation``, optional ``details``, ``advice``, ``source``). Rows are tried in order; the first row
with a matching pattern classifies the text. ``cudaenv explain`` and ``cudaenv verify`` both use
:func:`classify_error`, and ids shared with ``cudaenv doctor`` findings mean the same thing.

>>> m = classify_error("RuntimeError: CUDA error: no kernel image is available for execution on the device")
>>> m.id
'gpu-arch-unsupported'
"""

import re
import textwrap
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from cudaenv._record import Record, factory
from cudaenv.version import cuda_from_int, sm_name

TABLE = "error_patterns"
MAX_TEXT = 1_000_000  # characters of a pasted log that are searched
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class ErrorMatch(Record):
    _json_omit = ("source",)
    _json_maps = ("values",)

    id: str
    title: str
    explanation: str
    details: Tuple[str, ...] = ()  # sentences with this text's values filled in
    advice: Tuple[str, ...] = ()
    matched: str = ""  # the part of the text that matched
    values: Tuple[Tuple[str, str], ...] = ()  # named groups of the patterns (plus derived values)
    source: Optional[str] = None  # source key in the table
    doctor_finding: bool = False  # the id is also a `cudaenv doctor` finding


class ExplainReport(Record):
    """``cudaenv explain --json``: the best match (with its context lines), the others, the probed facts."""

    _json_envelope = True

    recognised: bool
    match: Optional[ErrorMatch] = None
    others: Tuple[ErrorMatch, ...] = ()
    context: Tuple[str, ...] = ()
    facts: Optional[Dict[str, Any]] = None

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        if data["match"] is not None:
            data["match"]["context"] = data["context"]


class _Row(Record):
    id: str
    patterns: Tuple["re.Pattern[str]", ...]
    title: str
    explanation: str
    details: Tuple[str, ...]
    advice: Tuple[str, ...]
    source: Optional[str]
    doctor_finding: bool = False
    extra: Dict[str, Any] = factory(dict)


@lru_cache(maxsize=1)
def _rows() -> Tuple[_Row, ...]:
    from cudaenv.resources import load_table

    rows = []
    for raw in load_table(TABLE)["rows"]:
        rows.append(
            _Row(
                id=raw["id"],
                patterns=tuple(re.compile(p, re.IGNORECASE) for p in raw["patterns"]),
                title=raw["title"],
                explanation=raw["explanation"],
                details=tuple(raw.get("details", ())),
                advice=tuple(raw.get("advice", ())),
                source=raw.get("source"),
                doctor_finding=bool(raw.get("doctor_finding", False)),
            )
        )
    return tuple(rows)


def known_ids() -> List[str]:
    """Every id the table can give, in priority order."""
    return [row.id for row in _rows()]


def _derive(values: Dict[str, str]) -> Dict[str, str]:
    """Values computed from the groups: ``driver_cuda_int`` 11040 -> ``driver_cuda`` 11.4."""
    out = dict(values)
    for key, value in values.items():
        if key.endswith("_cuda_int") and cuda_from_int(value):
            out[key[: -len("_int")]] = cuda_from_int(value)
    return out


def _fill(template: str, values: Mapping[str, str]) -> Optional[str]:
    """``template`` with ``{name}`` filled in; None when a placeholder has no value."""
    missing = []

    def sub(m: "re.Match[str]") -> str:
        if m.group(1) in values:
            return values[m.group(1)]
        missing.append(m.group(1))
        return m.group(0)

    result = _PLACEHOLDER.sub(sub, template)
    return None if missing else result


def _match_row(row: _Row, text: str) -> Optional[ErrorMatch]:
    first = None
    values: Dict[str, str] = {}
    for pattern in row.patterns:
        m = pattern.search(text)
        if m is None:
            continue
        if first is None:
            first = m
        for key, value in m.groupdict().items():
            if value is not None and key not in values:
                values[key] = value
    if first is None:
        return None
    values = _derive(values)
    details = tuple(d for d in (_fill(t, values) for t in row.details) if d)
    advice = tuple(a for a in (_fill(t, values) for t in row.advice) if a)
    explanation = _fill(row.explanation, values) or row.explanation
    return ErrorMatch(
        id=row.id,
        title=row.title,
        explanation=explanation,
        details=details,
        advice=advice,
        matched=first.group(0).strip(),
        values=tuple(sorted(values.items())),
        source=row.source,
        doctor_finding=row.doctor_finding,
    )


def classify_all(text: str) -> List[ErrorMatch]:
    """Every row that matches ``text``, in priority order (a traceback can show several problems)."""
    if not isinstance(text, str) or not text.strip():
        return []
    text = text[:MAX_TEXT]
    found = []
    for row in _rows():
        m = _match_row(row, text)
        if m is not None:
            found.append(m)
    return found


def classify_error(text: str) -> Optional[ErrorMatch]:
    """The classification of an error text, or None when no known pattern matches."""
    if not isinstance(text, str) or not text.strip():
        return None
    text = text[:MAX_TEXT]
    for row in _rows():
        m = _match_row(row, text)
        if m is not None:
            return m
    return None


def describe(error_id: str, values: Optional[Mapping[str, str]] = None) -> Optional[ErrorMatch]:
    """The table's entry for ``error_id`` (for problems cudaenv found itself, with no text to match)."""
    for row in _rows():
        if row.id == error_id:
            vals = _derive(dict(values or {}))
            return ErrorMatch(
                id=row.id,
                title=row.title,
                explanation=_fill(row.explanation, vals) or row.explanation,
                details=tuple(d for d in (_fill(t, vals) for t in row.details) if d),
                advice=tuple(a for a in (_fill(t, vals) for t in row.advice) if a),
                values=tuple(sorted(vals.items())),
                source=row.source,
                doctor_finding=row.doctor_finding,
            )
    return None


# ------------------------------------------------------------------ facts from a probe
def context_lines(match: ErrorMatch, facts: Optional[Mapping[str, Any]]) -> List[str]:
    """Sentences about this machine that sharpen an explanation (``facts``: verify_device.py's ``info``)."""
    if not facts:
        return []
    lines: List[str] = []
    count = facts.get("device_count")
    visible = facts.get("cuda_visible_devices")
    torch_version = facts.get("torch")
    if torch_version is None and facts.get("import_error"):
        return ["torch does not import in %s: %s" % (facts.get("python") or "this Python", facts["import_error"])]
    if match.id in ("invalid-device-ordinal", "checkpoint-device-missing", "torch-cuda-unavailable", "tensors-on-different-devices"):
        if count is not None:
            names = ["cuda:%d" % i for i in range(int(count))]
            seen = ", ".join(names) if names else "no GPU"
            lines.append("Here torch sees %d GPU(s): %s." % (int(count), seen))
        if visible is not None:
            lines.append("CUDA_VISIBLE_DEVICES=%r in this environment." % visible)
        device = dict(match.values).get("device")
        if device is not None and count is not None and int(device) >= int(count):
            target = "cuda:0" if int(count) else "cpu"
            lines.append("Use map_location=%r here (cuda:%s does not exist)." % (target, device))
    if match.id in ("torch-cpu-only", "driver-too-old-for-torch", "gpu-arch-unsupported", "torch-cuda-unavailable", "no-driver"):
        if torch_version:
            lines.append("torch %s in %s (built for CUDA %s)." % (torch_version, facts.get("python") or "this Python", facts.get("cuda") or "none: a CPU build"))
    if match.id == "gpu-arch-unsupported":
        arch = facts.get("arch_list") or []
        if arch:
            lines.append("This torch has kernels for: %s." % " ".join(arch))
        for i, dev in enumerate(facts.get("devices") or []):
            cap = dev.get("capability")
            if cap:
                lines.append("cuda:%d %s is %s." % (i, dev.get("name") or "", sm_name(cap) or "sm_" + cap.replace(".", "")))
    return lines


# ------------------------------------------------------------------ rendering
def render_match(match: ErrorMatch, width: int = 80, context: Sequence[str] = (), others: Sequence[ErrorMatch] = ()) -> str:
    wrap = lambda text, indent: textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)  # noqa: E731
    out = ["%s: %s" % (match.id, match.title)]
    if match.matched:
        shown = match.matched if len(match.matched) <= width - 14 else match.matched[: width - 17] + "..."
        out.append("  matched: %s" % shown)
    out.append("")
    out.append(wrap(match.explanation, "  "))
    for line in list(match.details) + list(context):
        out.append(wrap(line, "  "))
    if match.advice:
        out.append("")
        out.append("  What to do:")
        for item in match.advice:
            out.append(textwrap.fill(item, width=width, initial_indent="    - ", subsequent_indent="      "))
    rest = [m for m in others if m.id != match.id]
    if rest:
        out.append("")
        out.append("  Also in this text: " + ", ".join("%s (%s)" % (m.id, m.title) for m in rest))
        out.append("  (cudaenv explain --all shows each)")
    return "\n".join(out) + "\n"


UNKNOWN_ADVICE = (
    "Paste the whole error: from 'Traceback (most recent call last)' down to the last line, plus any "
    "'UserWarning: CUDA initialization' lines printed before it.",
    "Include the machine's facts: cudaenv doctor --format markdown",
    "Run real work on each GPU, which classifies what fails: cudaenv verify",
    "Asynchronous CUDA errors point at the wrong line: rerun with CUDA_LAUNCH_BLOCKING=1 and paste that error",
)


def render_unknown(width: int = 80) -> str:
    out = ["cudaenv did not recognise this error.", "", "  What to paste:"]
    for item in UNKNOWN_ADVICE:
        out.append(textwrap.fill(item, width=width, initial_indent="    - ", subsequent_indent="      "))
    return "\n".join(out) + "\n"
