"""`cudaenv explain`'s one service (pasted's, as the capabilities' order wants: it uses explain and pasted): read the
paste, classify it, and gather what this machine adds, as data.

:func:`explain` reads the text (``--file``, stdin as bytes, or the arguments), ranks what it recognises
(:func:`cudaenv.explain.classify_all`), reads the facts of pasted tool outputs (:mod:`cudaenv.pasted`), and unless
``offline`` what this machine says about the error (:mod:`cudaenv.pasted.context`); ``probe`` also asks torch in the
user's Python (``verify_device.py``'s ``info``, through the ``probe_torch`` the command passes: verify comes later). Everything comes back in an :class:`ExplainOutcome`; the words are
:mod:`cudaenv.render.explain`'s, :mod:`cudaenv.render.pasted`'s and :mod:`cudaenv.render.pasted_context`'s.
"""

from typing import Any, Dict, Optional, Sequence

from cudaenv.core.errors import UserError
from cudaenv.core.i18n import M

NO_TEXT_HINT = M('cudaenv explain "the error message", or pipe a log: cudaenv explain - < log.txt')


class ExplainRequest:
    """What the command line asked for (``cudaenv explain --help``); ``stdin``: where ``-`` reads from; ``catalog``:
    ``--list``."""

    __slots__ = ("text", "file", "stdin", "catalog", "probe", "offline", "python", "timeout")

    def __init__(self, text: Sequence[str] = (), file: Optional[str] = None, stdin: Any = None, catalog: bool = False,
                 probe: bool = False, offline: bool = False, python: Optional[str] = None, timeout: Optional[float] = None):
        self.text, self.file, self.stdin, self.catalog, self.probe = list(text or ()), file, stdin, catalog, probe
        self.offline, self.python, self.timeout = offline, python, timeout


class ExplainOutcome:
    """``catalog`` (``--list``: every error the table knows), or the explanation: ``paste`` (what was read),
    ``matches`` (ranked), ``facts`` (``--probe``'s, or None), ``contexts`` (each match's ProbeContext, or None),
    ``machine`` (this machine's MachineContext, or None), ``pasted`` (facts of pasted tool outputs, or None) and
    ``findings`` (the doctor's findings on them)."""

    __slots__ = ("catalog", "paste", "matches", "facts", "contexts", "machine", "pasted", "findings")

    def __init__(self, catalog=None, paste=None, matches=(), facts=None, contexts=(), machine=None, pasted=None,
                 findings=()):
        self.catalog, self.paste, self.matches, self.facts = catalog, paste, tuple(matches), facts
        self.contexts, self.machine, self.pasted, self.findings = tuple(contexts), machine, pasted, tuple(findings)

    @property
    def cut(self) -> bool:
        """Only the head and tail of a long paste were searched."""
        from cudaenv.explain import is_cut

        return self.paste is not None and (self.paste.cut or is_cut(len(self.paste.text)))

    @property
    def recognised(self) -> bool:
        return bool(self.matches) or self.pasted is not None

    @property
    def exit_code(self) -> int:
        return 0 if self.catalog is not None or self.recognised else 1

    def json_facts(self) -> Optional[Dict[str, Any]]:
        """The JSON's ``facts``: the pasted tool outputs' facts, with ``--probe``'s over them."""
        pasted = self.pasted.to_dict() if self.pasted is not None else None
        if pasted is not None and self.facts:
            return dict(pasted, **self.facts)
        return pasted if pasted is not None else self.facts

    def context_data(self) -> Dict[str, Any]:
        """The JSON's ``context_data``: what the ``context`` sentences say, as data. ``probe``: the first match's
        ProbeContext (``--probe``), ``machine``: this machine's MachineContext (both null when not read)."""
        first = self.contexts[0] if self.contexts else None
        return {"probe": _data(first), "machine": _data(self.machine)}


def _data(value: Any) -> Any:
    """A NamedTuple tree as JSON data: records as objects, tuples as lists, sets sorted."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "_asdict"):
        return {k: _data(v) for k, v in value._asdict().items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_data(v) for v in value)
    if isinstance(value, dict):
        return {str(k): _data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_data(v) for v in value]
    return str(value)


def explain(host_for, request: ExplainRequest, probe_torch=None) -> ExplainOutcome:
    """The outcome of ``request``; ``host_for()`` builds the Host (only when this machine is read); ``probe_torch(host,
    python)``: ``--probe``'s facts (cudaenv.verify.probe_facts, which comes after this capability in the order)."""
    from cudaenv.explain import classify_all, describe, known_ids, probe_context

    if request.catalog:
        return ExplainOutcome(catalog=tuple(describe(i) for i in known_ids()))
    if request.offline and request.probe:
        raise UserError(M("--offline and --probe contradict each other"), hint=M("--probe reads this machine (it imports torch); drop one"))
    paste = _read(request)
    if not paste.text.strip():
        raise UserError(M("no error text given"), hint=NO_TEXT_HINT)
    facts, shown = None, ()
    if request.probe:
        from cudaenv.explain.service import probe_machine

        host = host_for()
        facts, shown = probe_torch(_bounded(host, request.timeout), request.python), probe_machine(host)
    matches = classify_all(paste.text, shown)  # the contexts this machine shows choose the first fix (explain.fit)
    pasted, findings, machine = _pasted(host_for, request, paste.text, matches)
    return ExplainOutcome(paste=paste, matches=matches, facts=facts, contexts=[probe_context(m, facts) for m in matches],
                          machine=machine, pasted=pasted, findings=findings)


def _bounded(host, timeout: Optional[float]):
    return host.with_deadline(timeout) if timeout is not None else host


def _read(request: ExplainRequest):
    """The Paste to explain: --file, stdin (as bytes when it has them), or the arguments."""
    import sys

    from cudaenv.core.text import printable
    from cudaenv.explain import Paste, read_paste
    from cudaenv.host.files import open_regular

    if request.file:
        try:
            with open_regular(request.file) as fh:
                return read_paste(fh)
        except OSError as exc:
            raise UserError(M("cannot read %s: %s", printable(request.file), printable(exc.strerror or exc)))
    parts = request.text
    if parts and parts != ["-"]:
        text = " ".join(parts)
        return Paste(text, len(text), False, False)
    stdin = request.stdin if request.stdin is not None else sys.stdin
    try:
        interactive = stdin is None or stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not parts and interactive:
        raise UserError(M("no error text given"), hint=NO_TEXT_HINT)
    return read_paste(getattr(stdin, "buffer", stdin)) if stdin is not None else Paste("", 0, False, False)


def _pasted(host_for, request: ExplainRequest, text: str, matches):
    """(pasted facts, the doctor's findings on them, this machine's MachineContext or None): :mod:`cudaenv.pasted`."""
    from cudaenv.pasted import paste_findings, read_facts

    pasted = read_facts(text)
    machine = None
    if not request.offline:
        from cudaenv.pasted.context import machine_context, wanted

        ids = [m.id for m in matches]
        if wanted(text, ids):
            machine = machine_context(_bounded(host_for(), request.timeout), text, ids, request.python,
                                      {m.id: dict(m.values) for m in matches})
    return pasted, paste_findings(pasted), machine
