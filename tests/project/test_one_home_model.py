"""One home for the JSON contract's version, for version reading, and no fallbacks for cudaenv's own modules (issue 11).

Read from every module's source (``ast``): a second copy written anywhere fails here, and each check is shown to catch
the form that was once written (so it cannot pass by matching nothing).
"""

import ast
import os

import cudaenv
from builders import package_sources

PACKAGE = os.path.dirname(cudaenv.__file__)


# ------------------------------------------------------------------ no fallback for cudaenv's own modules
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def _catches_import_error(handler):
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type] if handler.type is not None else []
    return any(isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS for k in kinds)


def _own_imports(body):
    """The cudaenv modules the statements import (``import cudaenv.x``, ``from cudaenv.x import``, relative imports,
    ``importlib.import_module(...)`` / ``__import__(...)`` of a name that is not a third-party literal)."""
    found = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Import):
                found += [a.name for a in node.names if a.name.split(".")[0] == "cudaenv"]
            elif isinstance(node, ast.ImportFrom):
                if node.level or (node.module or "").split(".")[0] == "cudaenv":
                    found.append("." * node.level + (node.module or ""))
            elif isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if name in ("import_module", "__import__") and node.args:
                    arg = node.args[0]
                    literal = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
                    if literal is None or literal.split(".")[0] == "cudaenv":
                        found.append(literal or "<a computed module name>")
    return found


def own_import_fallbacks(source):
    """``(line, module)`` for each import of cudaenv's own modules inside a ``try`` that catches ImportError."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            out += [(node.lineno, module) for module in _own_imports(node.body)]
    return out


def test_no_module_falls_back_when_its_own_package_is_missing():
    """A missing cudaenv module is a broken install: it must fail loudly, never become a note or 'not available'.
    Optional third-party imports (requests, questionary, importlib_resources, _signal) may still be caught."""
    found = {rel: hits for rel, text in package_sources() for hits in [own_import_fallbacks(text)] if hits}
    assert found == {}


def test_the_fallback_check_catches_the_forms_once_written():
    collect = ('def _call(module, func):\n    try:\n        mod = importlib.import_module(module)\n        fn = getattr(mod, func)\n'
               '    except (ImportError, AttributeError) as exc:\n        return None\n')
    cli = ('try:\n    code = dispatch()\nexcept ModuleNotFoundError as exc:\n    pass\n'
           'def dispatch():\n    pass\n')
    scanner = 'try:\n    from cudaenv.toolkit.select import select\nexcept ImportError:\n    select = None\n'
    relative = 'try:\n    from . import records\nexcept ImportError:\n    records = None\n'
    assert own_import_fallbacks(collect) == [(2, "<a computed module name>")]
    assert own_import_fallbacks(scanner) == [(1, "cudaenv.toolkit.select")]
    assert own_import_fallbacks(relative) == [(1, ".")]
    assert own_import_fallbacks(cli) == []  # no import in the try: the cli one was caught by the test of its behaviour
    third_party = ('try:\n    import questionary\nexcept ImportError:\n    questionary = None\n'
                   'try:\n    import _signal as signal\nexcept ImportError:\n    import signal\n'
                   'try:\n    m = importlib.import_module("requests")\nexcept ImportError:\n    m = None\n')
    assert own_import_fallbacks(third_party) == []


def test_the_cli_catches_no_module_not_found_error():
    # the dispatcher's old `except ModuleNotFoundError` turned a command module missing from the install into
    # "this command is not available" (exit 2): any handler of it in the CLI would do so again
    for rel, text in package_sources():
        if rel.startswith("cli/"):
            handlers = [h for h in ast.walk(ast.parse(text)) if isinstance(h, ast.ExceptHandler) and _catches_import_error(h)]
            assert all(any(isinstance(n, ast.Import) and n.names[0].name == "signal" for n in ast.walk(h)) for h in handlers), rel


# ------------------------------------------------------------------ one schema_version
def schema_literals(source):
    """Lines that write a ``schema_version`` as a number: ``{"schema_version": 1}``, ``("schema_version", 1)``,
    ``schema_version=1``, ``SCHEMA_VERSION = 1``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            out += [node.lineno for k, v in zip(node.keys, node.values)
                    if isinstance(k, ast.Constant) and k.value == "schema_version" and _number(v)]
        elif isinstance(node, ast.Tuple) and len(node.elts) == 2:
            k, v = node.elts
            if isinstance(k, ast.Constant) and k.value == "schema_version" and _number(v):
                out.append(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg == "schema_version" and _number(node.value):
            out.append(node.value.lineno)
        elif isinstance(node, ast.Assign) and _number(node.value):
            out += [node.lineno for t in node.targets if isinstance(t, ast.Name) and t.id.lower() == "schema_version"]
    return out


def _number(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def test_schema_version_is_written_in_one_place():
    """model/schema.py holds SCHEMA_VERSION; every output (the codec, prometheus' cudaenv_info) writes that constant."""
    found = {rel: lines for rel, text in package_sources() for lines in [schema_literals(text)] if lines}
    assert list(found) == ["model/schema.py"], found


def test_the_schema_check_catches_a_literal():
    old_prometheus = '_sample("cudaenv_info", (("version", v), ("schema_version", 1), ("hostname", h)), 1)\n'
    assert schema_literals(old_prometheus) == [1]
    assert schema_literals('data = {"schema_version": 2, "x": 1}\nf(schema_version=1)\n') == [1, 2]
    assert schema_literals('_sample("cudaenv_info", (("schema_version", SCHEMA_VERSION),), 1)\n') == []


def test_prometheus_writes_the_contracts_schema_version():
    from cudaenv.model.reports import DoctorReport
    from cudaenv.model.schema import SCHEMA_VERSION
    from cudaenv.render.prometheus import render_prometheus
    from cudaenv.model.snapshot import Platform, Snapshot

    report = DoctorReport(Snapshot(platform=Platform(system="linux")))
    info = next(line for line in render_prometheus(report).splitlines() if line.startswith("cudaenv_info{"))
    assert 'schema_version="%s"' % report.to_dict()["schema_version"] in info and report.to_dict()["schema_version"] == SCHEMA_VERSION


# ------------------------------------------------------------------ one version reader
VERSION_SCANS = ("findall", "fullmatch")  # re.match / re.search of a digits pattern find a number in a tool's text


def digit_scans(source):
    """Lines that read numbers out of text with ``re.findall`` of a digits pattern (``re.findall(r"\\d+", version)``),
    or check a version with ``re.fullmatch`` of one (explain_checks.py's torch release, ``r"\\d{1,3}(?:\\.\\d{1,4}){1,3}"``):
    the ways versions were read before cudaenv/core/version.py."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VERSION_SCANS and node.args:
            pattern = node.args[0]
            if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str) and pattern.value.startswith(("\\d", "(\\d")):
                out.append(node.lineno)
    return out


def test_versions_are_read_by_the_version_module():
    """Outside parse/ (tool outputs and wheel tags, read by their parsers) no module scans digits out of a version."""
    found = {rel: lines for rel, text in package_sources() if not rel.startswith("parse/") for lines in [digit_scans(text)] if lines}
    assert found == {}
    old_link = 'def _priority(version):\n    nums = [int(x) for x in re.findall(r"\\d+", version or "")[:2]]\n'
    assert digit_scans(old_link) == [2]
    old_torch_req = 'import re\nOK = re.fullmatch(r"\\d{1,3}(?:\\.\\d{1,4}){1,3}", version)\n'
    assert digit_scans(old_torch_req) == [2]
