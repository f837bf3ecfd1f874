"""model/: the JSON contract as records, one codec, the schema version check, the registry (round-trips)."""

import json
import subprocess
import sys
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaenv.model.record import Record
from cudaenv.model import registry
from cudaenv.model.codec import field_types, to_jsonable
from cudaenv.model.reports import DoctorReport, Finding, ToolkitList
from cudaenv.model.schema import SCHEMA_VERSION, SchemaError, check_schema
from cudaenv.model.snapshot import Note, Platform, Snapshot, Toolkit
from machine import A10G, ARCH_CU121, a10g_535
from builders import CHILD_CWD

_text = st.text(max_size=12)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), _text)


def strategy(hint, depth=0):
    """Values of type ``hint`` as the records declare it (the registry's own field types)."""
    if hint is typing.Any:
        return _scalar
    if isinstance(hint, type) and issubclass(hint, Record):
        return records(hint, depth + 1)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return st.one_of(*[st.none() if a is type(None) else strategy(a, depth) for a in args])
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            if typing.get_args(args[0]) == (str, str):  # pairs, written as an object: keys are unique
                return st.dictionaries(_text, _text, max_size=3).map(lambda d: tuple(d.items()))
            return st.lists(strategy(args[0], depth), max_size=0 if depth > 2 else 2).map(tuple)
        return st.tuples(*[strategy(a, depth) for a in args])
    if origin is dict:
        return st.dictionaries(_text, strategy(args[1], depth) if args else _scalar, max_size=3)
    if origin is list:
        return st.lists(strategy(args[0], depth) if args else _scalar, max_size=3)
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.integers(-10**12, 10**12)
    if hint is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if hint is str:
        return st.text(max_size=20)
    raise AssertionError("no strategy for %r" % (hint,))


def records(cls, depth=0):
    types = field_types(cls)
    omit = getattr(cls, "_json_omit", ())
    return st.builds(cls, **{name: strategy(types[name], depth) for name in cls._fields if name not in omit})


CONTRACT = registry()


def _records_in(hint):
    if isinstance(hint, type) and issubclass(hint, Record):
        yield hint
    for arg in typing.get_args(hint):
        yield from _records_in(arg)


def lossy(cls, seen=()):
    """The record's JSON leaves something out (rounded seconds, a subset), itself or in a record it holds."""
    if getattr(cls, "_json_lossy", False):
        return True
    return any(lossy(inner, seen + (cls,)) for hint in field_types(cls).values() for inner in _records_in(hint)
               if inner not in seen + (cls,))


def test_the_registry_holds_the_snapshot_and_every_envelope():
    names = {cls.__name__ for cls in CONTRACT}
    assert {"Snapshot", "Platform", "Gpu", "Toolkit", "Finding", "DoctorReport", "ToolkitList", "VerifyReport",
            "DeviceResult", "ToolkitReport", "Recommendation", "ExplainReport", "ErrorCatalog", "ErrorMatch", "InstallerReport", "Plan",
            "ResidueReport", "RefreshReport"} <= names
    assert not names & {"ChildReport", "Candidate", "_Row", "Header", "Options"}  # working values, not JSON
    assert all(issubclass(cls, Record) for cls in CONTRACT)
    for cls in CONTRACT:  # every field type resolves (no annotation the reader cannot follow)
        assert set(field_types(cls)) == set(cls._fields)


@pytest.mark.parametrize("cls", CONTRACT, ids=lambda c: c.__name__)
def test_every_registered_record_round_trips_through_json(cls):
    @settings(max_examples=25)
    @given(records(cls))
    def check(value):
        data = value.to_dict()
        back = cls.from_dict(json.loads(json.dumps(data, ensure_ascii=False)))
        if lossy(cls):  # rounded seconds, a subset of a record: the JSON is a fixpoint
            assert back.to_dict() == data
        else:
            assert back == value

    check()


def test_every_envelope_starts_with_schema_version():
    from cudaenv.model.records import envelopes

    snap = Snapshot(platform=Platform(system="linux"))
    for value in (snap, DoctorReport(snap), ToolkitList()):
        data = value.to_dict()
        assert list(data)[0] == "schema_version" and data["schema_version"] == SCHEMA_VERSION == 1
    assert len(envelopes()) >= 10

    @settings(max_examples=60)
    @given(st.sampled_from(envelopes()).flatmap(records))
    def check(value):
        data = value.to_dict()
        assert list(data)[0] == "schema_version" and data["schema_version"] == 1
        with pytest.raises(SchemaError, match="no schema_version"):
            type(value).from_dict({k: v for k, v in data.items() if k != "schema_version"})

    check()
    assert "schema_version" not in Finding("x", "info", "t", "d").to_dict()
    assert list(DoctorReport(snap).to_dict())[-1] == "findings"
    assert to_jsonable({"a": (Note("p", "m"),)}) == {"a": [{"probe": "p", "message": "m"}]}


def _doctor_dict(**extra):
    data = DoctorReport(Snapshot(platform=Platform(system="linux"), toolkits=(Toolkit("12.4", "/usr/local/cuda-12.4", "PATH"),)),
                        (Finding("torch-missing", "info", "t", "d", ("pip install torch",), "versions"),)).to_dict()
    data.update(extra)
    return data


def test_versions_older_same_newer_minor_other_major_and_non_reports():
    notes = []
    report = DoctorReport.from_dict(_doctor_dict(), notes)
    assert report.findings[0].fix == ("pip install torch",) and notes == []
    newer = _doctor_dict(schema_version="1.7", gpu_fleet={"new": "field"})
    assert DoctorReport.from_dict(newer, notes) == report  # read as far as understood
    assert len(notes) == 1 and "1.7" in notes[0] and "newer" in notes[0]
    older = _doctor_dict()
    del older["findings"], older["cudaenv_version"], older["tools"]  # an older writer had fewer keys: defaults
    assert DoctorReport.from_dict(older).findings == ()
    for bad, why in ((_doctor_dict(schema_version=2), "schema 1"), ([1, 2], "not a cudaenv report"),
                     ({"platform": {"system": "linux"}}, "no schema_version"), (_doctor_dict(schema_version="x"), "not a version"),
                     (_doctor_dict(schema_version=True), "not a version"), (_doctor_dict(platform="linux"), "expected an object"),
                     (_doctor_dict(findings={"id": 1}), "expected a list"), (_doctor_dict(platform={}), "missing")):
        with pytest.raises(SchemaError, match=why):
            DoctorReport.from_dict(bad)
    assert check_schema({"schema_version": 1}) == (1, 0)


def test_real_doctor_output_round_trips(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("12.1.105", on_path=True)
    r = machine.doctor()
    data = json.loads(r.out)
    notes = []
    report = DoctorReport.from_dict(data, notes)
    assert notes == [] and report.snapshot.gpus[0].name == "NVIDIA A10G" and report.snapshot.toolkits
    assert report.to_dict() == data  # every key the doctor wrote is read back, in its order
    assert json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n" == r.out


def test_the_codec_stays_off_the_use_path():
    code = "import sys, cudaenv.model.snapshot, cudaenv.toolkit.switch; print(sorted(m for m in sys.modules if m in ('typing', 'json', 'cudaenv.model.codec', 'cudaenv.model.reports', 'cudaenv.model.records')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=CHILD_CWD).stdout.strip()
    assert out == "[]"


def test_every_internal_name_is_a_record_of_a_contract_module():
    # a stale entry (a class that moved, as cudaenv.explain._Row did to cudaenv.explain.table) would silently do nothing
    import importlib

    from cudaenv.model.records import CONTRACT_MODULES, INTERNAL

    for name in sorted(INTERNAL):
        module, _, cls = name.rpartition(".")
        assert module in CONTRACT_MODULES, name
        assert hasattr(importlib.import_module(module), cls), name


def test_the_toolkit_records_are_the_snapshots_own():
    """`cudaenv use` imports cudaenv.model.toolkits, not the whole snapshot (issue 35): the snapshot re-exports the same
    classes, and they are in the JSON contract's registry once."""
    from cudaenv.model import snapshot, toolkits

    for name in ("Note", "Toolkit", "CudaSymlink", "ActiveToolkit"):
        cls = getattr(toolkits, name)
        assert getattr(snapshot, name) is cls and cls.__module__ == "cudaenv.model.toolkits"
        assert [c for c in CONTRACT if c.__name__ == name] == [cls]
