"""cudaenv.core.tuples.named_tuple against typing.NamedTuple: the same class for everything cudaenv uses (issue 35)."""

import pickle
from typing import NamedTuple, Optional, Tuple

import pytest

from cudaenv.core.tuples import named_tuple


class Typed(NamedTuple):
    """A module's row."""

    name: str
    size: int
    tags: Tuple[str, ...] = ()
    note: Optional[str] = None

    def describe(self) -> str:
        return "%s (%d)" % (self.name, self.size)


@named_tuple
class Plain:
    """A module's row."""

    name: str
    size: int
    tags: Tuple[str, ...] = ()
    note: Optional[str] = None

    def describe(self) -> str:
        return "%s (%d)" % (self.name, self.size)


@named_tuple
class Bare:
    kind: str
    arch: str


def test_the_class_behaves_as_typing_namedtuple_makes_it():
    typed, plain = Typed("a", 1), Plain("a", 1)
    assert Plain._fields == Typed._fields == ("name", "size", "tags", "note")
    assert Plain._field_defaults == Typed._field_defaults == {"tags": (), "note": None}
    assert repr(plain).replace("Plain", "Typed") == repr(typed) == "Typed(name='a', size=1, tags=(), note=None)"
    assert tuple(plain) == tuple(typed) and plain == typed and hash(plain) == hash(typed)
    assert plain.describe() == typed.describe() == "a (1)"
    assert plain._asdict() == typed._asdict()
    changed = plain._replace(size=2)
    assert type(changed) is Plain and changed.size == 2
    assert type(Plain._make(["b", 3, (), None])) is Plain
    assert Plain(name="c", size=4, note="x").note == "x"
    with pytest.raises(TypeError):
        Plain("only a name")


def test_no_instance_dict_and_a_round_trip_through_pickle():
    plain = Plain("a", 1, ("x",))
    assert not hasattr(plain, "__dict__")
    with pytest.raises(AttributeError):
        plain.extra = 1
    assert pickle.loads(pickle.dumps(plain)) == plain and type(pickle.loads(pickle.dumps(plain))) is Plain
    assert Plain.__name__ == "Plain" and Plain.__qualname__ == "Plain" and Plain.__module__ == __name__
    assert Plain.__doc__ == "A module's row." and Bare.__doc__ == "Bare(kind, arch)"
    assert list(Plain.__annotations__) == list(Plain._fields)  # the annotations stay on the class


def test_a_field_without_a_default_after_one_with_a_default_is_refused_as_typing_refuses_it():
    with pytest.raises(TypeError):
        @named_tuple
        class Wrong:
            a: int = 0
            b: int


def test_fields_made_on_first_use_are_asked_of_annotationlib(monkeypatch):
    """Python 3.14+ keeps a class's annotations out of its __dict__ unless its module has `from __future__ import
    annotations` (PEP 649/749): the records' and named tuples' fields are then asked of annotationlib, never taken as
    none (a class of no fields). Simulated here (this interpreter is older): a class with no annotations in its dict, a
    3.14 version, and an annotationlib that answers."""
    import sys
    import types

    from cudaenv.core.lazy import own_annotations

    asked = []

    def get_annotations(cls, format):
        asked.append((cls.__name__, format))
        return {"kind": "str", "arch": "str"}

    fake = types.ModuleType("annotationlib")
    fake.Format = types.SimpleNamespace(FORWARDREF="forwardref")
    fake.get_annotations = get_annotations
    lazy = type("Lazy", (), {"kind": "x"})
    assert own_annotations(lazy) == {}  # before 3.14: nothing in the dict is nothing
    monkeypatch.setitem(sys.modules, "annotationlib", fake)
    monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    assert own_annotations(lazy) == {"kind": "str", "arch": "str"} and asked == [("Lazy", "forwardref")]
    assert own_annotations(Bare) is Bare.__dict__["__annotations__"]  # in the dict: read there, not asked
    assert len(asked) == 1
    Row = named_tuple(type("Row", (), {"__module__": __name__}))
    assert Row._fields == ("kind", "arch") and Row("a", "b").arch == "b"
