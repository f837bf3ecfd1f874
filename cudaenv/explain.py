"""What a pasted CUDA / torch / NCCL / nvcc error means and what to do: one classification for all of cudaenv.

The patterns are facts in ``data/error_patterns.json`` (each row: ``id``, ``patterns``, ``title``,
``explanation``, optional ``details``, ``advice``, ``context``, ``source``). Rows are tried in order; the first
row with a matching pattern classifies the text. ``cudaenv explain`` and ``cudaenv verify`` both use
:func:`classify_error`, and ids shared with ``cudaenv doctor`` findings mean the same thing. A row's
``context`` names which of this machine's facts (:data:`CONTEXTS`) sharpen its explanation.

Bounded: a text over :data:`MAX_TEXT` characters is searched in its head and its tail (a traceback is at the
end of a log), and :func:`read_paste` reads a paste of any size and encoding in bounded memory. Rendering is
:mod:`cudaenv.render.explain`.

>>> m = classify_error("RuntimeError: CUDA error: no kernel image is available for execution on the device")
>>> m.id
'gpu-arch-unsupported'
"""

import re
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from cudaenv._record import Record, factory
from cudaenv.version import cuda_from_int, sm_name

TABLE = "error_patterns"
MAX_TEXT = 1_000_000  # characters of a pasted log that are searched: the first and the last half of it
MAX_READ = 512 * 1024 * 1024  # bytes of a paste read at all (a stream that never ends stops here)
CONTEXTS = ("devices", "torch_build", "arch")  # the kinds of machine facts a row's "context" may name
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


class ErrorCatalog(Record):
    """``cudaenv explain --list --json``: every error id cudaenv knows, with its title, explanation and advice."""

    _json_envelope = True

    errors: Tuple[ErrorMatch, ...] = ()


class ExplainReport(Record):
    """``cudaenv explain --json``: the best match (with its context lines), the others, the probed facts."""

    _json_envelope = True

    recognised: bool
    match: Optional[ErrorMatch] = None
    others: Tuple[ErrorMatch, ...] = ()
    context: Tuple[str, ...] = ()
    facts: Optional[Dict[str, Any]] = None
    cut: Optional[Dict[str, Any]] = None  # {size, stopped} when only the head and tail of a long paste were searched

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
    context: Tuple[str, ...] = ()
    check: Optional[str] = None  # a cudaenv.explain_checks check that decides whether the row fits the text
    needles: Tuple[str, ...] = ()  # per pattern: a lower-case literal every match contains ("" when none is known)
    extra: Dict[str, Any] = factory(dict)


def _needle(pattern: str) -> str:
    """The longest run of literal characters at the top level of ``pattern`` (so in every match), lower-cased; ""
    when it has none of 4+ ASCII characters. A text without it cannot match, so the search is skipped."""
    try:
        from re import _parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore
    try:
        items = list(sre_parse.parse(pattern, re.IGNORECASE))
    except Exception:  # noqa: BLE001 - the pattern compiled already; no needle is always safe
        return ""
    best, run = "", []
    for op, av in items + [(None, None)]:
        if str(op) == "LITERAL":
            run.append(chr(av))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return best.lower() if len(best) >= 4 and best.isascii() else ""


@lru_cache(maxsize=1)
def _rows() -> Tuple[_Row, ...]:
    from cudaenv.resources import load_table

    rows = []
    for raw in load_table(TABLE)["rows"]:
        rows.append(
            _Row(
                id=raw["id"],
                patterns=tuple(re.compile(p, re.IGNORECASE) for p in raw["patterns"]),
                needles=tuple(_needle(p) for p in raw["patterns"]),
                title=raw["title"],
                explanation=raw["explanation"],
                details=tuple(raw.get("details", ())),
                advice=tuple(raw.get("advice", ())),
                source=raw.get("source"),
                doctor_finding=bool(raw.get("doctor_finding", False)),
                context=tuple(raw.get("context", ())),
                check=raw.get("check"),
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


def _lowered(text: Optional[str]) -> Optional[str]:
    """``text`` lower-cased for the literal pre-filter, only when it is ASCII (then lower() is exactly what
    re.IGNORECASE compares; other scripts have case folds, such as the Kelvin sign for k, it does not)."""
    return text.lower() if text is not None and text.isascii() else None


def _match_row(row: _Row, text: str, joined: Optional[str] = None, low: Optional[str] = None,
               joined_low: Optional[str] = None) -> Optional[ErrorMatch]:
    """The row's match in ``text``; else in ``joined`` (the text with its lines joined: a message a terminal
    wrapped across two lines). ``low``/``joined_low``: the same lower-cased, for the pre-filter (or None)."""
    found = _match_row_in(row, text, low)
    if found is None and joined is not None and joined != text:
        found = _match_row_in(row, joined, joined_low)
    return found


def _match_row_in(row: _Row, text: str, low: Optional[str] = None) -> Optional[ErrorMatch]:
    first = None
    values: Dict[str, str] = {}
    for i, pattern in enumerate(row.patterns):
        needle = row.needles[i] if i < len(row.needles) else ""
        if low is not None and needle and needle not in low:
            continue  # the pattern's literal is not in the text: it cannot match
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
    if row.check:  # the patterns matched; the row's check reads the text and decides (cudaenv.explain_checks)
        from cudaenv.explain_checks import run_check

        extra = run_check(row.check, values, text)
        if extra is None:
            return None
        values.update(extra)
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


def searched_text(text: str) -> str:
    """The part of ``text`` that is searched: all of it up to MAX_TEXT characters, else its head and its tail."""
    if len(text) <= MAX_TEXT:
        return text
    half = MAX_TEXT // 2
    return text[:half] + "\n" + text[-half:]


def is_cut(length: int) -> bool:
    """True when a text of ``length`` characters is searched only in its head and tail."""
    return length > MAX_TEXT


def _joined(text: str) -> str:
    """``text`` with every line break (and the blanks around it) made one space: a terminal's hard wrap undone."""
    return " ".join(part for part in (line.strip() for line in text.splitlines()) if part)


def _matches(text: object, first_only: bool) -> List[ErrorMatch]:
    if not isinstance(text, str) or not text.strip():
        return []
    text = searched_text(text)
    joined = _joined(text) if "\n" in text else None
    low, joined_low = _lowered(text), _lowered(joined)
    found = []
    for row in _rows():
        m = _match_row(row, text, joined, low, joined_low)
        if m is not None:
            found.append(m)
            if first_only:
                break
    return found


def classify_all(text: str) -> List[ErrorMatch]:
    """Every row that matches ``text``, in priority order (a traceback can show several problems)."""
    return _matches(text, first_only=False)


def classify_error(text: str) -> Optional[ErrorMatch]:
    """The classification of an error text, or None when no known pattern matches."""
    found = _matches(text, first_only=True)
    return found[0] if found else None


class Paste:
    """What :func:`read_paste` read: the text to search, and how much there was."""

    __slots__ = ("text", "size", "cut", "stopped", "unit")

    def __init__(self, text: str, size: int, cut: bool, stopped: bool, unit: str = "characters"):
        self.text = text  # all of it, or its head and tail joined by a line break
        self.size = size  # bytes (or characters) read in all
        self.cut = cut  # the middle was dropped
        self.stopped = stopped  # reading stopped at MAX_READ: the stream did not end
        self.unit = unit  # what size counts: "bytes" (a binary stream) or "characters"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def read_paste(stream, limit: int = MAX_TEXT, max_read: int = MAX_READ, chunk: int = 1 << 20) -> Paste:
    """A paste from a binary (or text) stream in bounded memory: the first and the last ``limit // 2`` bytes are
    kept, the middle of a longer paste is dropped (and said). Any encoding: undecodable bytes are replaced."""
    half = max(1, limit // 2)
    head = tail = None
    size = 0
    stopped = False
    while True:
        try:
            block = stream.read(chunk)
        except (OSError, ValueError):
            break
        if not block:
            break
        size += len(block)
        if head is None:
            head = tail = block[:0]  # bytes from a binary stream, str from a text one
        if len(head) < half:
            room = half - len(head)
            head, block = head + block[:room], block[room:]
        if block:
            tail = (tail + block)[-half:]
        if size >= max_read:
            stopped = True
            break
    if head is None:
        return Paste("", 0, False, False)
    cut = size > len(head) + len(tail)
    if isinstance(head, bytes):
        return Paste(_decode(head) + ("\n" if cut else "") + _decode(tail), size, cut, stopped, "bytes")
    return Paste(head + ("\n" if cut else "") + tail, size, cut, stopped)


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
def context_kinds(error_id: str) -> Tuple[str, ...]:
    """Which kinds of machine facts (:data:`CONTEXTS`) the table says sharpen ``error_id``'s explanation."""
    return next((row.context for row in _rows() if row.id == error_id), ())


def _small(value: Any) -> Optional[int]:
    text = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None


def context_lines(match: ErrorMatch, facts: Optional[Mapping[str, Any]]) -> List[str]:
    """Sentences about this machine that sharpen an explanation (``facts``: verify_device.py's ``info``)."""
    if not facts:
        return []
    lines: List[str] = []
    kinds = context_kinds(match.id)
    count = _small(facts.get("device_count"))
    visible = facts.get("cuda_visible_devices")
    torch_version = facts.get("torch")
    if torch_version is None and facts.get("import_error"):
        return ["torch does not import in %s: %s" % (facts.get("python") or "this Python", facts["import_error"])]
    if "devices" in kinds:
        if count is not None:
            names = ["cuda:%d" % i for i in range(min(count, 64))]
            seen = ", ".join(names) if names else "no GPU"
            lines.append("Here torch sees %d GPU(s): %s." % (count, seen))
        if visible is not None:
            lines.append("CUDA_VISIBLE_DEVICES=%r in this environment." % visible)
        device = _small(dict(match.values).get("device"))
        if device is not None and count is not None and device >= count:
            target = "cuda:0" if count else "cpu"
            lines.append("Use map_location=%r here (cuda:%s does not exist)." % (target, device))
    if "torch_build" in kinds and torch_version:
        lines.append("torch %s in %s (built for CUDA %s)." % (torch_version, facts.get("python") or "this Python", facts.get("cuda") or "none: a CPU build"))
    if "arch" in kinds:
        arch = facts.get("arch_list") or []
        if arch:
            lines.append("This torch has kernels for: %s." % " ".join(str(a) for a in arch))
        for i, dev in enumerate(facts.get("devices") or []):
            cap = dev.get("capability") if isinstance(dev, Mapping) else None
            if cap:
                lines.append("cuda:%d %s is %s." % (i, dev.get("name") or "", sm_name(cap) or "sm_" + str(cap).replace(".", "")))
    return lines
