"""What a pasted CUDA / torch / NCCL / nvcc error means and what to do: one classification for all of cudaenv.

The patterns are facts in ``data/error_patterns.json`` (:mod:`cudaenv.explain.table`); how the root cause is
chosen among the rows that match is in ``data/explain_rules.json`` (:mod:`cudaenv.explain.rank`): every matching
row is a candidate with the line it matched, ranked as an expert reads a traceback (context lines and
boilerplate last, a wrapper after what it wraps, the first raised error of a chained traceback first, then the
table's order), each with a confidence (``high``, ``medium``, ``low``). A paste is normalized first
(:mod:`cudaenv.explain.normalize`: markdown, ANSI colours, log prefixes, full-width punctuation, ``\\r``), and the
evidence (``matched``) is read back from what was pasted. ``cudaenv explain`` and ``cudaenv verify`` both use
:func:`classify_error`, and ids shared with ``cudaenv doctor`` findings mean the same thing. A row's ``context``
names which of this machine's facts (:data:`CONTEXTS`) sharpen its explanation.

Bounded: a text over :data:`MAX_TEXT` characters is searched in its head and its tail (a traceback is at the
end of a log), and :func:`read_paste` reads a paste of any size and encoding in bounded memory. Rendering is
:mod:`cudaenv.render.explain`.

>>> m = classify_error("RuntimeError: CUDA error: no kernel image is available for execution on the device")
>>> m.id, m.confidence
('gpu-arch-unsupported', 'high')
"""

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from cudaenv.model.record import Record
from cudaenv.model.reports import Finding
from cudaenv.core.version import sm_name

MAX_TEXT = 1_000_000  # characters of a pasted log that are searched: the first and the last half of it
MAX_READ = 512 * 1024 * 1024  # bytes of a paste read at all (a stream that never ends stops here)
CONTEXTS = ("devices", "torch_build", "arch")  # the kinds of machine facts a row's "context" may name


class ErrorMatch(Record):
    _json_omit = ("source", "why")
    _json_maps = ("values",)

    id: str
    title: str
    explanation: str
    details: Tuple[str, ...] = ()  # sentences with this text's values filled in
    advice: Tuple[str, ...] = ()
    matched: str = ""  # the part of the text that matched, as pasted
    values: Tuple[Tuple[str, str], ...] = ()  # named groups of the patterns (plus derived values)
    source: Optional[str] = None  # source key in the table
    doctor_finding: bool = False  # the id is also a `cudaenv doctor` finding
    confidence: Optional[str] = None  # high | medium | low: how sure the match is the error (None: no text matched)
    line: Optional[int] = None  # the line of the searched text it matched (1 is the first)
    notes: Tuple[str, ...] = ()  # why it ranks where it does, when a ranking rule applied
    variant: Optional[str] = None  # the explanation fits what the paste shows: macos, rocm, driver-library
    why: Tuple[Tuple[str, str], ...] = ()  # the ranking notes as data: (kind of cudaenv.explain.rank.NOTE_KINDS,
    # value) pairs; cudaenv.render.explain says them (the text), and writes them into ``notes`` in English (the JSON)


class ErrorCatalog(Record):
    """``cudaenv explain --list --json``: every error id cudaenv knows, with its title, explanation and advice."""

    _json_envelope = True

    errors: Tuple[ErrorMatch, ...] = ()


class ExplainReport(Record):
    """``cudaenv explain --json``: the root cause (with its context lines), the other matches ranked, the facts read
    from pasted tool outputs and the doctor's findings on them (:func:`cudaenv.pasted.paste_findings`)."""

    _json_envelope = True

    recognised: bool
    match: Optional[ErrorMatch] = None
    others: Tuple[ErrorMatch, ...] = ()
    context: Tuple[str, ...] = ()
    facts: Optional[Dict[str, Any]] = None
    cut: Optional[Dict[str, Any]] = None  # {size, stopped} when only the head and tail of a long paste were searched
    context_data: Optional[Dict[str, Any]] = None  # the context as data: {probe: ProbeContext, machine: MachineContext}
    findings: Tuple[Finding, ...] = ()  # the doctor's findings on the pasted facts (the last key of the JSON)

    def _json_adjust(self, data: Dict[str, Any]) -> None:
        if data["match"] is not None:
            data["match"]["context"] = data["context"]


def known_ids() -> List[str]:
    """Every id the table can give, in the table's order."""
    from cudaenv.explain.table import rows

    return [row.id for row in rows()]


def searched_text(text: str) -> str:
    """The part of ``text`` that is searched: all of it up to MAX_TEXT characters, else its head and its tail."""
    if len(text) <= MAX_TEXT:
        return text
    half = MAX_TEXT // 2
    return text[:half] + "\n" + text[-half:]


def is_cut(length: int) -> bool:
    """True when a text of ``length`` characters is searched only in its head and tail."""
    return length > MAX_TEXT


def _match(ranked, paste, shown) -> ErrorMatch:
    from cudaenv.explain import evidence as E
    from cudaenv.explain import fit as F
    from cudaenv.explain.table import derive, fill, filled

    c = ranked.candidate
    row = c.row
    values = derive(E.values(paste, c))
    values.update(c.extra)
    v = F.variant(row.id, values, shown)
    title = (v.title if v is not None and v.title else row.title)
    explanation = v.explanation if v is not None and v.explanation else row.explanation
    advice = v.advice if v is not None and v.advice is not None else row.advice
    return ErrorMatch(
        id=row.id,
        title=fill(title, values) or title,
        explanation=fill(explanation, values) or explanation,
        details=filled(row.details, values),
        advice=filled(advice, values),
        matched=E.evidence(paste, c),
        values=tuple(sorted(values.items())),
        source=row.source,
        doctor_finding=row.doctor_finding,
        confidence=ranked.confidence,
        line=c.first + 1,
        why=ranked.notes,
        variant=v.name if v is not None else None,
    )


def classify_all(text: str, machine: Tuple[str, ...] = ()) -> List[ErrorMatch]:
    """Every row that matches ``text``, ranked: the root cause first (a traceback can show several problems).
    ``machine``: the contexts the machine itself shows (``--probe``: :func:`cudaenv.explain.fit.machine_contexts`),
    which choose the first fix as the paste's own do."""
    if not isinstance(text, str) or not text.strip():
        return []
    from cudaenv.explain import fit as F
    from cudaenv.explain import rank as R

    paste = R.read(searched_text(text))
    found = R.candidates(paste)
    if not found:  # nothing matched: a known message re-typed with a word missing or mistyped?
        from cudaenv.explain import fuzzy

        found = fuzzy.retyped(paste)
    ranked = R.rank(paste, found)
    if not ranked:
        return []
    shown = F.contexts(paste, machine)
    return [_match(r, paste, shown) for r in ranked]


def classify_error(text: str) -> Optional[ErrorMatch]:
    """The root cause of an error text, or None when no known pattern matches."""
    found = classify_all(text)
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
    from cudaenv.explain.table import derive, fill, filled, rows

    for row in rows():
        if row.id == error_id:
            vals = derive(dict(values or {}))
            return ErrorMatch(
                id=row.id,
                title=row.title,
                explanation=fill(row.explanation, vals) or row.explanation,
                details=filled(row.details, vals),
                advice=filled(row.advice, vals),
                values=tuple(sorted(vals.items())),
                source=row.source,
                doctor_finding=row.doctor_finding,
            )
    return None


# ------------------------------------------------------------------ facts from a probe
def context_kinds(error_id: str) -> Tuple[str, ...]:
    """Which kinds of machine facts (:data:`CONTEXTS`) the table says sharpen ``error_id``'s explanation."""
    from cudaenv.explain.table import rows

    return next((row.context for row in rows() if row.id == error_id), ())


def _small(value: Any) -> Optional[int]:
    text = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else None


class ProbeContext(NamedTuple):
    """What ``--probe``'s facts (verify_device.py's ``info``) say that sharpens an explanation, as data: only the kinds
    the match's row names (:func:`context_kinds`) are filled. The sentences are
    :func:`cudaenv.render.explain.context_lines`."""

    python: Optional[str] = None  # the interpreter the facts come from (None: "this Python")
    import_error: Any = None  # torch does not import there: nothing else is said
    device_count: Optional[int] = None  # devices: the GPUs torch sees
    visible: Any = None  # devices: CUDA_VISIBLE_DEVICES as the probe read it (None: unset)
    missing_device: Optional[int] = None  # devices: the match's cuda:N, when it does not exist here
    map_location: Optional[str] = None  # ... and what to load onto instead ("cuda:0" or "cpu")
    torch_version: Any = None  # torch_build: the torch there, and the CUDA it was built for
    torch_cuda: Any = None
    arch_list: Tuple[str, ...] = ()  # arch: the kernels torch has
    gpus: Tuple[Tuple[int, str, str], ...] = ()  # arch: (index, name, sm_NN) of each GPU torch sees


def probe_context(match: ErrorMatch, facts: Optional[Mapping[str, Any]]) -> Optional[ProbeContext]:
    """The probe's facts that sharpen ``match`` (None without facts); untrusted values are checked, never trusted."""
    if not facts:
        return None
    python = facts.get("python") or None
    torch_version = facts.get("torch")
    if torch_version is None and facts.get("import_error"):
        return ProbeContext(python=python, import_error=facts["import_error"])
    kinds = context_kinds(match.id)
    found: Dict[str, Any] = {"python": python}
    if "devices" in kinds:
        count = _small(facts.get("device_count"))
        found.update(device_count=count, visible=facts.get("cuda_visible_devices"))
        device = _small(dict(match.values).get("device"))
        if device is not None and count is not None and device >= count:
            found.update(missing_device=device, map_location="cuda:0" if count else "cpu")
    if "torch_build" in kinds and torch_version:
        found.update(torch_version=torch_version, torch_cuda=facts.get("cuda"))
    if "arch" in kinds:
        found["arch_list"] = tuple(str(a) for a in facts.get("arch_list") or [])
        gpus = []
        for i, dev in enumerate(facts.get("devices") or []):
            cap = dev.get("capability") if isinstance(dev, Mapping) else None
            if cap:
                gpus.append((i, dev.get("name") or "", sm_name(cap) or "sm_" + str(cap).replace(".", "")))
        found["gpus"] = tuple(gpus)
    return ProbeContext(**found)
