"""``doctor --import``: each framework of the snapshot imported in its own child of the probed Python, with a timeout
(``CUDAENV_IMPORT_TIMEOUT``), running that framework's own device check (``cudaenv/_child/framework_probe.py``;
which check for which package: the ``import`` key of ``data/frameworks.json``'s rows). cudaenv never imports a
framework in its own process; a child that hangs is stopped at its timeout and says so."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from cudaenv.core.i18n import M
from cudaenv.model.snapshot import Framework, FrameworkImport, Note

PROBE = "framework-import"
MARKER = "CUDAENV_FRAMEWORK_PROBE "
MAX_ERROR = 2000


def parse_framework_output(text: str) -> Optional[Dict[str, Any]]:
    """The child's JSON (the last line starting with the marker), or None: read as the torch probe's is."""
    from cudaenv.probes.torch_child import parse_child_output

    return parse_child_output(text, MARKER)


def _text(value, limit: int = MAX_ERROR) -> Optional[str]:
    return value[:limit] if isinstance(value, str) and value else None


def probe_framework_imports(host, python: str, frameworks: Sequence[Framework], notes: List[Note], timeout: float,
                            rows: Optional[Dict[str, Dict[str, Any]]] = None) -> Tuple[FrameworkImport, ...]:
    """One child per module of ``frameworks`` (in their order; a module shared by two packages is imported once)."""
    from cudaenv._child import source
    from cudaenv.probes.frameworks import table_packages

    rows = table_packages() if rows is None else rows
    script = source("framework_probe.py")
    out: List[FrameworkImport] = []
    seen = set()
    for fw in frameworks:
        spec = rows.get(fw.package, {}).get("import")
        if not spec or spec["module"] in seen:
            continue
        seen.add(spec["module"])
        result = host.run([python, "-c", script, spec["check"], spec["module"]], timeout=timeout)
        data = parse_framework_output(result.stdout)
        base = dict(package=fw.package, module=spec["module"], check=spec["check"])
        if data is None:
            why = M("timed out after %g s", timeout) if result.error == "timeout" else (
                result.error or result.signal or M("exit status %s", result.returncode))
            tail = (result.stderr or "").strip().splitlines()[-1:] or [""]
            error = M("no answer (%s) %s", why, tail[0]) if tail[0] else M("no answer (%s)", why)  # a marked message, whole
            out.append(FrameworkImport(error=error if len(error) <= MAX_ERROR else _text(error), timed_out=result.error == "timeout", **base))
            if result.error == "timeout":
                notes.append(Note(PROBE, M("importing %s did not finish within %g s (CUDAENV_IMPORT_TIMEOUT)", spec["module"], timeout)))
            continue
        count = data.get("gpu_count")
        out.append(FrameworkImport(imported=bool(data.get("imported")), version=_text(data.get("version"), 100),
                                   gpu_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
                                   detail=_text(data.get("detail"), 500), error=_text(data.get("error")), **base))
    return tuple(out)
