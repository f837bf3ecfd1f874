"""``cudaenv fleet summarize``: many doctor reports reduced to the fleet's configurations, its drift and its failures.

Pure but for reading the report files (bounded, regular files only: :mod:`cudaenv.fleet.files`), and streaming: a
report is read, decoded by the one codec (``DoctorReport.from_dict``: the schema check, unknown keys ignored, a newer
minor read as far as understood with a note), reduced to a small per-node key (its name, its configuration, its error
and warning ids) and dropped, so 100,000 reports take a few tens of MB. Identical configurations and id lists are
shared, not copied per node::

    acc = Summarizer()
    for path in report_paths(["reports/"]):
        acc.add_file(path)
    summary = acc.summary()            # or acc.summary(baseline=read_baseline("good-node.json"))

A file that is not a doctor report (a folder named ``x.json``, a FIFO, empty, truncated, binary, another schema) is
an :class:`~cudaenv.fleet.records.Unreadable` entry with why, never an exception.
"""

from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional, Tuple

from cudaenv.fleet.compare import differences
from cudaenv.fleet.files import read_report_bytes
from cudaenv.fleet.records import (Configuration, DimensionGroup, FindingCount, FleetNode, FleetSummary, ImageFleet,
                                   ImageNode, Unreadable, ValueCount)
from cudaenv.model.schema import SchemaError
from cudaenv.core.i18n import M, Msg

# (key, label): the dimensions a node's configuration is made of, in the order they are shown.
DIMENSIONS = (("driver", "driver"), ("driver_cuda", "driver CUDA"), ("gpus", "GPUs"), ("toolkits", "toolkits"),
              ("torch", "torch"), ("cudnn", "cuDNN"))
DIMENSION_KEYS = tuple(k for k, _ in DIMENSIONS)
LABELS = dict(DIMENSIONS)
NONE = "none"
EXAMPLES = 5  # node names kept per finding id
_MAX_VALUE = 200  # a value longer than this (a hostile report) is cut
# The top-level keys of a doctor report a summary reads (the rest is never decoded: 10,000 reports in seconds).
_READ = frozenset(["schema_version", "platform", "driver", "gpus", "toolkits", "cudnn", "torch", "findings", "hostname",
                   "generated_at", "cudaenv_version"])


# Within those sections, the fields a summary reads (node_config, the finding ids) and the ones their records require;
# the rest (a GPU's UUID and memory, a toolkit's paths, torch's packages, a finding's fix) is never decoded, so the codec
# builds small records and nodes that differ only there decode alike.
_FIELDS = {"driver": ("version", "cuda_version"), "torch": ("python", "installed", "version"), "gpus": ("index", "name"),
           "toolkits": ("version", "path", "source"), "cudnn": ("version",), "findings": ("id", "severity", "title", "detail")}


def _trim(value, keep):
    """``value`` (an object, or a list of them) with only the ``keep`` fields of each object; any other shape as it is
    (the codec says why it is wrong)."""
    if isinstance(value, dict):
        return {k: value[k] for k in keep if k in value}
    if isinstance(value, list):
        return [{k: v[k] for k in keep if k in v} if isinstance(v, dict) else v for v in value]
    return value


def _s(value: object) -> str:
    """A report's value as a short string (a report may hold any JSON where a string belongs)."""
    text = value if isinstance(value, str) else str(value)
    return text[:_MAX_VALUE]


def node_config(report) -> Tuple[str, ...]:
    """The configuration of one node (:data:`DIMENSIONS` order) from its :class:`DoctorReport`."""
    s = report.snapshot
    d = s.driver
    driver = _s(d.version) if d is not None and d.version else NONE
    cuda = _s(d.cuda_version) if d is not None and d.cuda_version else NONE
    models: Dict[str, int] = {}
    for g in s.gpus or ():
        name = _s(g.name) if g.name else "unknown GPU"
        models[name] = models.get(name, 0) + 1
    gpus = " + ".join("%d x %s" % (n, name) for name, n in sorted(models.items())) or NONE
    toolkits = ", ".join(sorted({_s(t.version) if t.version else "unknown" for t in s.toolkits or ()})) or NONE
    t = s.torch
    torch = (_s(t.version) if t.version else "unknown") if t is not None and t.installed else NONE
    cudnn = ", ".join(sorted({_s(c.version) if c.version else "unknown" for c in s.cudnn or ()})) or NONE
    return (driver, cuda, gpus, toolkits, torch, cudnn)


def decode_report(data: bytes, notes: Optional[List[str]] = None):
    """``(DoctorReport, None)`` or ``(None, why)`` for the bytes of one report file (the sections and fields a summary
    reads: :data:`_READ`, :data:`_FIELDS`)."""
    report, _, why = _decode_node(data, notes)
    return report, why


# How many distinct report bodies one summary remembers decoded (a fleet has a few configurations; a hostile folder of
# all-different reports only misses: the memory stays bounded, ~6 kB a key).
CACHE_SIZE = 256
_NODE_FIELDS = ("hostname", "generated_at")  # per node, read by the codec as they are (Optional[str]: no check, no change)
_ABSENT = object()


def _decode_node(data: bytes, notes: Optional[List[str]] = None, cache: Optional[dict] = None, whole: bool = False):
    """``(DoctorReport, its node_config, None)`` or ``(None, None, why)``.

    ``cache`` (a summary's): the nodes of a fleet mostly differ only in their host name and time, so a report whose
    other decoded sections are the same text as an earlier one's reuses that decoding (and its notes, its error) and
    takes its own hostname and generated_at, which the codec passes through unchanged."""

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, None, M("not UTF-8 text (a binary file?): byte %d", exc.start)
    try:
        parsed = json.loads(text)
    except RecursionError:
        return None, None, M("not a doctor report: JSON nested too deeply")
    except ValueError as exc:  # JSONDecodeError, and integers too long to convert
        # json's own form ("Expecting value: line 1 column 5"): its messages may end in "at" ("Unterminated string
        # starting at"), so " at line" read "starting at at line"
        where = M(": line %d column %d", exc.lineno, exc.colno) if hasattr(exc, "lineno") else ""
        return None, None, M("not JSON (truncated?): %s%s", getattr(exc, "msg", str(exc))[:100], where)
    if isinstance(parsed, dict) and not whole:
        # only the sections a summary uses are decoded (by the one codec: schema check, types); the platform is
        # required by the snapshot and kept to its system; the rest of a report (env, tools, notes, ...) is not read
        parsed = {k: (_trim(v, _FIELDS[k]) if k in _FIELDS else v) for k, v in parsed.items() if k in _READ}
        if isinstance(parsed.get("platform"), dict):
            parsed["platform"] = {"system": parsed["platform"].get("system")}
        if cache is not None:
            return _decode_shared(parsed, notes, cache)
    return _decode_parsed(parsed, notes)


def _decode_shared(parsed: dict, notes: Optional[List[str]], cache: dict):
    from cudaenv.model.record import replace

    own = [(k, parsed.pop(k, _ABSENT)) for k in _NODE_FIELDS]
    try:
        key = json.dumps(parsed, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        key = None
    hit = cache.get(key) if key is not None else None
    if hit is None:
        added: List[str] = []
        hit = _decode_parsed(parsed, added) + (tuple(added),)
        if key is not None and len(cache) < CACHE_SIZE:
            cache[key] = hit
    report, config, why, added = hit
    if notes is not None:
        notes.extend(added)
    changes = {k: v for k, v in own if v is not _ABSENT}
    if report is not None and changes:
        report = replace(report, **changes)
    return report, config, why


def _decode_parsed(parsed, notes: Optional[List[str]]):
    from cudaenv.model.reports import DoctorReport

    try:
        report = DoctorReport.from_dict(parsed, notes)
        return report, node_config(report), None  # the values it holds are readable as a configuration
    except SchemaError as exc:
        said = exc.args[0] if exc.args and isinstance(exc.args[0], Msg) else _s(exc)  # (its marks kept: model.schema)
        return None, None, M("not a doctor report: %s", said)
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
        return None, None, M("not a doctor report: wrong shape (%s)", type(exc).__name__)


def read_report(path: str, notes: Optional[List[str]] = None):
    """``(DoctorReport, None)`` or ``(None, why)`` for the report file ``path`` (bounded; regular files only)."""
    report, _, why = _read_node(path, notes)
    return report, why


def read_whole_report(path: str, notes: Optional[List[str]] = None):
    """``(DoctorReport, None)`` or ``(None, why)``: like :func:`read_report`, with every section and field decoded
    (``cudaenv diff`` compares them all)."""
    report, _, why = _read_node(path, notes, whole=True)
    return report, why


def _read_node(path: str, notes: Optional[List[str]] = None, cache: Optional[dict] = None, whole: bool = False):
    data, why = read_report_bytes(path)
    if data is None:
        prefix = path + ": "
        why = why or M("not read")
        if why.startswith(prefix):  # the file is named beside its reason: M("%s: %s", path, reason) -> reason
            parts = getattr(why, "parts", ())
            why = parts[0][1][1] if len(parts) == 1 and len(parts[0][1] or ()) == 2 else why[len(prefix):]
        return None, None, why
    if cache is not None and not whole:
        return _decode_raw(data, notes, cache)
    return _decode_node(data, notes, cache, whole)


_MASKED = (b'"hostname"', b'"generated_at"')  # the report's own fields (:data:`_NODE_FIELDS`), as they are written
_RAW = "raw"  # the cache's entry for the report bodies already seen byte for byte, less the masked values


def _string_at(data: bytes, name: bytes):
    """``(start, end)`` of the JSON string token after the last ``name`` key in ``data`` (``"hostname": "node7"``: the
    ``"node7"``), or None when there is none or the value is no plain string token."""
    at = data.rfind(name)
    if at < 0:
        return None
    i = at + len(name)
    while data[i:i + 1] in (b" ", b"\n", b"\r", b"\t"):
        i += 1
    if data[i:i + 1] != b":":
        return None
    i += 1
    while data[i:i + 1] in (b" ", b"\n", b"\r", b"\t"):
        i += 1
    if data[i:i + 1] != b'"':
        return None
    end = i + 1
    while True:
        end = data.find(b'"', end)
        if end < 0:
            return None
        slashes = 0
        while data[end - 1 - slashes] == 0x5C:  # a quote after an odd run of backslashes is escaped
            slashes += 1
        if slashes % 2 == 0:
            return i, end + 1
        end += 1


def _masked(data: bytes):
    """(``data`` with the values of its last ``hostname`` and ``generated_at`` keys cut out, those two string tokens),
    or None when either is not there as a string."""
    spans = [_string_at(data, name) for name in _MASKED]
    if None in spans or spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]:
        return None
    (a, b), (c, d) = sorted(spans)
    tokens = tuple(data[x:y] for x, y in spans)
    return data[:a] + b"\0" + data[b:c] + b"\0" + data[d:], tokens, sorted(spans) == spans


def _decode_raw(data: bytes, notes: Optional[List[str]], cache: dict):
    """:func:`_decode_node` for a summary: a report whose bytes are an earlier one's but for the values of its
    ``hostname`` and ``generated_at`` (a fleet's nodes, run by one cudaenv on one configuration) is not decoded again:
    it takes that decoding, with its own two values read from their string tokens. The first report of each body is
    decoded whole and checked: the masked values must be the report's own two fields (the last key of each name at its
    top level), else that body is never shared (``False`` in the cache)."""
    from cudaenv.model.record import replace

    raw = cache.setdefault(_RAW, {})
    masked = _masked(data)
    if masked is None:
        return _decode_node(data, notes, cache)
    key, tokens, _ordered = masked
    hit = raw.get(key)
    if hit:
        report, config, why, added = hit
        try:
            own = [json.loads(t.decode("utf-8")) for t in tokens]
        except ValueError:  # UnicodeDecodeError too: not a shareable value; the whole report says why
            return _decode_node(data, notes, cache)
        if notes is not None:
            notes.extend(added)
        return replace(report, **dict(zip(_NODE_FIELDS, own))), config, why
    added: List[str] = []
    report, config, why = _decode_node(data, added, cache)
    if notes is not None:
        notes.extend(added)
    if hit is None and report is not None and len(raw) < CACHE_SIZE:
        raw[key] = (report, config, why, tuple(added)) if _masks_own_fields(data, masked) else False
    return report, config, why


def _masks_own_fields(data: bytes, masked) -> bool:
    """Whether the values :func:`_masked` cut out are the report's top-level ``hostname`` and ``generated_at``: the
    report with two marks written there reads those marks as its fields (one more parse, once per body)."""
    key, _tokens, ordered = masked
    marks = ('"\\u0000cudaenv-mask-%d"' % n for n in range(2))
    first, second = next(marks).encode(), next(marks).encode()
    head, middle, tail = key.split(b"\0", 2)
    try:
        parsed = json.loads((head + first + middle + second + tail).decode("utf-8"))
    except ValueError:
        return False
    want = [json.loads(first.decode()), json.loads(second.decode())]
    if not ordered:
        want.reverse()
    return isinstance(parsed, dict) and [parsed.get(k) for k in _NODE_FIELDS] == want


def natural_key(name: str):
    """``node-2`` before ``node-10``. A name is untrusted: only a run of ASCII digits is a number (``str.isdigit`` is
    also true of ``²``, which ``int`` refuses), and a run too long to be a node number sorts as text."""
    return [(0, int(p), "") if p.isascii() and p.isdigit() and len(p) <= 18 else (1, 0, p)
            for p in re.split(r"([0-9]+)", name) if p]


class Summarizer:
    """The streaming accumulator: :meth:`add_file` (or :meth:`add_report`) per report, then :meth:`summary`."""

    def __init__(self) -> None:
        self._shared: Dict[object, object] = {}  # one copy of each configuration and id list
        self._configs: Dict[Tuple[str, ...], int] = {}
        self._dims: List[Dict[str, int]] = [{} for _ in DIMENSIONS]
        self._findings: Dict[Tuple[str, str], list] = {}
        self._nodes: list = []  # (name, file, config, errors, warnings, generated_at, version)
        self._unreadable: List[Unreadable] = []
        self._notes: Dict[str, int] = {}
        self._decoded: dict = {}  # report body (less hostname, generated_at) -> its decoding (_decode_node)

    def _share(self, value):
        return self._shared.setdefault(value, value)

    def add_file(self, path: str) -> bool:
        """Read and reduce one report file; False (and an unreadable entry) when it is not one."""
        notes: List[str] = []
        report, config, why = _read_node(path, notes, self._decoded)
        if report is None:
            self._unreadable.append(Unreadable(file=path, why=why or M("not read")))
            return False
        for note in notes:
            self._notes[note] = self._notes.get(note, 0) + 1
        self.add_report(report, path, config)
        return True

    def add_report(self, report, path: str, config: Optional[Tuple[str, ...]] = None) -> None:
        config = self._share(node_config(report) if config is None else config)
        self._configs[config] = self._configs.get(config, 0) + 1
        for counts, value in zip(self._dims, config):
            counts[value] = counts.get(value, 0) + 1
        # a hostname that is not a string (a JSON object or list in a hostile report) never becomes a node's name
        host = report.hostname if isinstance(report.hostname, str) else None
        name = _s(host) if host else os.path.basename(path)[:-5] if path.endswith(".json") else os.path.basename(path)
        errors: List[str] = []
        warnings: List[str] = []
        for fid, severity in dict.fromkeys((_s(f.id), _s(f.severity)) for f in report.findings or ()):
            (errors if severity == "error" else warnings if severity == "warning" else []).append(fid)
            entry = self._findings.get((fid, severity))
            if entry is None:
                entry = self._findings[(fid, severity)] = [0, []]
            entry[0] += 1
            if len(entry[1]) < EXAMPLES:
                entry[1].append(name)
        self._nodes.append((name, path, config, self._share(tuple(errors)),
                            self._share(tuple(warnings)),
                            _s(report.generated_at) if report.generated_at else None,
                            _s(report.snapshot.cudaenv_version) if report.snapshot.cudaenv_version else None))

    def majority(self) -> Tuple[str, ...]:
        """Each dimension's most common value (ties: the first in sorted order)."""
        return tuple(min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0] if counts else NONE for counts in self._dims)

    def summary(self, baseline: Optional[Tuple[str, ...]] = None, baseline_file: Optional[str] = None) -> FleetSummary:
        """The :class:`FleetSummary`: against ``baseline`` (a :func:`node_config`) when given, else the majority."""
        reference = baseline if baseline is not None else self.majority()
        nodes = []
        deviating = with_errors = 0
        for name, path, config, errors, warnings, stamp, version in sorted(self._nodes, key=lambda n: (natural_key(n[0]), n[1])):
            deviations = tuple(k for k, _, _ in differences(zip(DIMENSION_KEYS, config), zip(DIMENSION_KEYS, reference)))
            deviating += bool(deviations)
            with_errors += bool(errors)
            nodes.append(FleetNode(name=name, file=path, config=tuple(zip(DIMENSION_KEYS, config)), errors=errors,
                                   warnings=warnings, deviations=deviations, generated_at=stamp, cudaenv_version=version))
        dims = tuple(DimensionGroup(dimension=key, values=tuple(
            ValueCount(value=v, nodes=n, reference=v == ref) for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))
            for key, counts, ref in zip(DIMENSION_KEYS, self._dims, reference))
        configs = tuple(Configuration(config=tuple(zip(DIMENSION_KEYS, c)), nodes=n, reference=c == reference)
                        for c, n in sorted(self._configs.items(), key=lambda kv: (-kv[1], kv[0])))
        order = {"error": 0, "warning": 1, "info": 2}
        findings = tuple(FindingCount(id=fid, severity=sev, nodes=entry[0], examples=tuple(entry[1]))
                         for (fid, sev), entry in sorted(self._findings.items(),
                                                         key=lambda kv: (order.get(kv[0][1], 3), -kv[1][0], kv[0][0])))
        notes = tuple(note if n == 1 else M("%d reports: %s", n, note) for note, n in sorted(self._notes.items()))
        return FleetSummary(nodes_read=len(self._nodes), reference="baseline" if baseline is not None else "majority",
                            reference_config=tuple(zip(DIMENSION_KEYS, reference)), baseline_file=baseline_file,
                            deviating=deviating, with_errors=with_errors, dimensions=dims, configurations=configs,
                            findings=findings, nodes=tuple(nodes), unreadable=tuple(self._unreadable), notes=notes)


def image_fleet(image, summary: FleetSummary, tables=None) -> ImageFleet:
    """``--image``: which of the summary's nodes can run ``image`` (an :class:`~cudaenv.model.reports.ImageFacts`),
    from each node's driver and driver CUDA, by the doctor's own rule (:mod:`cudaenv.diagnose.image`)."""
    from cudaenv.diagnose.image import image_need, image_verdict

    if not image.readable:
        return ImageFleet(image=image)
    need = image_need(image, "linux", tables)
    counts = {"runs": 0, "needs-newer-driver": 0, "forward-compat": 0, "no-driver": 0, "no-cuda": 0}
    nodes = []
    for n in summary.nodes:
        cfg = dict(n.config)
        driver, cuda = cfg.get("driver", NONE), cfg.get("driver_cuda", NONE)
        verdict = image_verdict(need, None if driver == NONE else driver, None if cuda == NONE else cuda)
        counts[verdict] += 1
        if verdict not in ("runs", "no-cuda"):
            nodes.append(ImageNode(name=n.name, driver=driver, verdict=verdict))
    return ImageFleet(image=image, needs_driver=need["driver"], needs_why=need["why"],
                      runs=counts["runs"] + counts["no-cuda"], too_old=counts["needs-newer-driver"],
                      forward_compat=counts["forward-compat"], no_driver=counts["no-driver"], nodes=tuple(nodes))


def summarize(paths, baseline_file: Optional[str] = None, image: Optional[str] = None, cwd: str = ".") -> FleetSummary:
    """The summary of the report files ``paths`` (an iterable, consumed once), against ``baseline_file`` when given
    (:class:`BaselineError` when it is not a readable doctor report); ``image``: a saved image (relative to ``cwd``)
    whose driver floor every node is checked against (:func:`image_fleet`)."""
    baseline = None
    if baseline_file is not None:
        report, why = read_report(baseline_file)
        if report is None:
            raise BaselineError(why or M("not read"))
        baseline = node_config(report)
    acc = Summarizer()
    for path in paths:
        acc.add_file(path)
    summary = acc.summary(baseline, baseline_file)
    if image is None:
        return summary
    from cudaenv.fleet.files import read_image
    from cudaenv.model.record import replace

    return replace(summary, image=image_fleet(read_image(image, cwd), summary))


class BaselineError(ValueError):
    """``--baseline FILE`` is not a doctor report this cudaenv can read (the message says why)."""


class ReportFileError(ValueError):
    """A report file ``cudaenv diff`` was given is not a doctor report this cudaenv can read."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(why)
        self.path, self.why = path, why


def diff_files(before_file: str, after_file: str, cwd: str = "."):
    """The :class:`~cudaenv.fleet.records.ReportDiff` from the report file ``before_file`` to ``after_file`` (relative
    to ``cwd``; named as given), :class:`ReportFileError` when one is not a readable doctor report."""
    from cudaenv.fleet.compare import compare_reports
    from cudaenv.model.record import replace

    notes: List[str] = []
    reports = []
    for path in (before_file, after_file):
        report, why = read_whole_report(os.path.join(cwd, path), notes)
        if report is None:
            raise ReportFileError(path, why or M("not read"))
        reports.append(report)
    diff = compare_reports(reports[0], reports[1], before_file, after_file)
    return replace(diff, notes=tuple(dict.fromkeys(_s(n) for n in notes)))
