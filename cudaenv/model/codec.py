"""The one JSON codec of cudaenv's records: ``to_jsonable`` writes every JSON output, ``from_jsonable`` reads it back.

Writing walks a record's fields in order; what differs between the JSON and the fields is declared on the record
class, never written as a hand-made ``to_dict``:

* ``_json_envelope = True``: a command's whole output; ``schema_version`` comes first.
* ``_json_omit``: fields kept out of the JSON (internal working values).
* ``_json_maps``: ``Tuple[Tuple[str, str], ...]`` fields written as a JSON object (``env``).
* ``_json_flatten``: a record field whose keys are written into this object (the doctor's snapshot).
* ``_json_skip_none``: fields left out when ``None`` (sections a command did not run).
* ``_json_adjust(self, data)``: derived keys (``device``), rounding, renames; called on the finished dict.
* ``_json_read(cls, data)``: the inverse of a rename in ``_json_adjust`` (classmethod), before reading.
* ``_json_lossy = True``: the JSON leaves out working values (rounded seconds, a child's full info), so the
  round trip is a JSON fixpoint, not the same record.

Reading is driven by the record registry (:func:`cudaenv._record.registered`) and the field types, resolved by
``typing`` against each record's own module (never by parsing annotation text): records, tuples, optional values,
mappings and lists are rebuilt; unknown keys are ignored (reports come from other cudaenv versions); a missing field
takes its default. An envelope's ``schema_version`` is checked first (:func:`check_schema`).

Not on the ``cudaenv use`` path: ``Record.to_dict`` / ``from_dict`` import this module when called.
"""

from __future__ import annotations

import sys
import typing
from typing import Any, Dict, List, Optional

from cudaenv._record import Record
from cudaenv.model.schema import SCHEMA_VERSION, SchemaError, check_schema


# ------------------------------------------------------------------ writing
def to_jsonable(value: Any) -> Any:
    """``value`` (records, tuples, lists, dicts, scalars) as JSON-ready dicts, lists and scalars."""
    if isinstance(value, Record):
        return _record_to_dict(value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def _record_to_dict(record: Record) -> Dict[str, Any]:
    cls = type(record)
    data: Dict[str, Any] = {"schema_version": SCHEMA_VERSION} if getattr(cls, "_json_envelope", False) else {}
    omit = getattr(cls, "_json_omit", ())
    maps = getattr(cls, "_json_maps", ())
    flatten = getattr(cls, "_json_flatten", ())
    skip_none = getattr(cls, "_json_skip_none", ())
    for name in cls._fields:
        if name in omit:
            continue
        value = getattr(record, name)
        if value is None and name in skip_none:
            continue
        if name in flatten and isinstance(value, Record):
            inner = _record_to_dict(value)
            inner.pop("schema_version", None)
            data.update(inner)
        elif name in maps:
            data[name] = {k: to_jsonable(v) for k, v in value}
        else:
            data[name] = to_jsonable(value)
    adjust = getattr(record, "_json_adjust", None)
    if adjust is not None:
        adjust(data)
    return data


# ------------------------------------------------------------------ reading
_TYPES: Dict[type, Dict[str, Any]] = {}


def field_types(cls: type) -> Dict[str, Any]:
    """Each field of record class ``cls`` -> its type, resolved once by ``typing`` in the record's own module."""
    types = _TYPES.get(cls)
    if types is None:
        module = sys.modules.get(cls.__module__)
        names = dict(vars(typing))
        names.update(vars(module) if module is not None else {})
        hints: Dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            hints.update(vars(klass).get("__annotations__", {}))
        types = {}
        for name in cls._fields:
            hint = hints.get(name, Any)
            if isinstance(hint, str):
                try:
                    hint = eval(hint, names)  # noqa: S307 - the record's own annotation, resolved like typing.get_type_hints
                except Exception:  # noqa: BLE001 - an annotation naming something only a type checker sees
                    hint = Any
            types[name] = hint
        _TYPES[cls] = types
    return types


def from_jsonable(cls: type, data: Any, notes: Optional[List[str]] = None) -> Any:
    """The ``cls`` record that parsed JSON ``data`` describes.

    For an envelope the ``schema_version`` is checked first: an older one is read, a newer minor is read as far as
    this version understands it (a sentence is appended to ``notes``), another major or a missing version raises
    :class:`SchemaError`. Anything that is not the shape of ``cls`` raises :class:`SchemaError`.
    """
    if getattr(cls, "_json_envelope", False):
        check_schema(data, notes)
    return _decode(cls, data, cls.__name__)


def _decode(hint: Any, value: Any, where: str) -> Any:
    if hint is Any or hint is None:
        return value
    if isinstance(hint, type) and issubclass(hint, Record):
        return _decode_record(hint, value, where)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _decode(options[0], value, where)
        return value
    if origin is tuple:
        if isinstance(value, dict) and len(args) == 2 and args[1] is Ellipsis and typing.get_origin(args[0]) is tuple:
            value = list(value.items())  # a mapping written as an object (_json_maps)
        if not isinstance(value, (list, tuple)):
            raise SchemaError("%s: expected a list, found %s" % (where, type(value).__name__))
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, where) for v in value)
        if args and len(args) == len(value):
            return tuple(_decode(a, v, where) for a, v in zip(args, value))
        return tuple(value)
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise SchemaError("%s: expected a list, found %s" % (where, type(value).__name__))
        return [_decode(args[0], v, where) for v in value] if args else list(value)
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError("%s: expected an object, found %s" % (where, type(value).__name__))
        return {k: _decode(args[1], v, where) for k, v in value.items()} if args else dict(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _decode_record(cls: type, value: Any, where: str) -> Record:
    if not isinstance(value, dict):
        raise SchemaError("%s: expected an object, found %s" % (where, type(value).__name__))
    read = getattr(cls, "_json_read", None)
    if read is not None:
        value = read(value)
    types = field_types(cls)
    flatten = getattr(cls, "_json_flatten", ())
    kwargs: Dict[str, Any] = {}
    for name in cls._fields:
        if name in flatten:
            kwargs[name] = _decode(types[name], value, "%s.%s" % (where, name))
        elif name in value:
            kwargs[name] = _decode(types[name], value[name], "%s.%s" % (where, name))
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise SchemaError("%s: %s" % (where, exc)) from None


__all__ = ["SCHEMA_VERSION", "SchemaError", "check_schema", "field_types", "from_jsonable", "to_jsonable"]
