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

Reading is driven by the record registry (:func:`cudaenv.model.record.registered`) and the field types, resolved by
``typing`` against each record's own module (never by parsing annotation text): records, tuples, optional values,
mappings and lists are rebuilt; unknown keys are ignored (reports come from other cudaenv versions); a missing field
takes its default. An envelope's ``schema_version`` is checked first (:func:`check_schema`).

Not on the ``cudaenv use`` path: ``Record.to_dict`` / ``from_dict`` import this module when called.
"""

from __future__ import annotations

import sys

from cudaenv.core.lazy import own_annotations
from cudaenv.model.schema import SCHEMA_VERSION, SchemaError, check_schema

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; reading imports typing where it resolves field types (writing never does)
    from typing import Any, Dict, List, Optional


# ------------------------------------------------------------------ writing
def _is_record(value: Any) -> bool:
    """A :class:`cudaenv.model.record.Record` (its class says so with ``_json_record``): the codec sits below the
    record base, which imports it lazily for ``to_dict``/``from_dict``, so it knows records by that attribute."""
    return getattr(type(value), "_json_record", False) is True


def to_jsonable(value: Any) -> Any:
    """``value`` (records, tuples, lists, dicts, scalars) as JSON-ready dicts, lists and scalars."""
    if _is_record(value):
        return _record_to_dict(value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def _record_to_dict(record: Any) -> Dict[str, Any]:
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
        if name in flatten and _is_record(value):
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
        import typing
        from typing import Any

        module = sys.modules.get(cls.__module__)
        names = dict(vars(typing))
        names.update(vars(module) if module is not None else {})
        hints: Dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            hints.update(own_annotations(klass))
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
    """``value`` read as ``hint`` (see :func:`from_jsonable`); the work is done by a decoder built once per type."""
    return _decoder(hint)(value, where)


# One decoder per type, built on first use from the type's shape (typing.get_origin/get_args are asked once per type,
# not once per value): a fleet summary reads 100,000 reports.
_DECODERS: Dict[Any, Any] = {}


def _identity(value: Any, where: str) -> Any:
    return value


def _decoder(hint: Any):
    try:
        found = _DECODERS.get(hint)
    except TypeError:  # an unhashable annotation object
        return _build(hint)
    if found is None:
        found = _DECODERS[hint] = _build(hint)
    return found


def _build(hint: Any):  # noqa: C901 - one branch per shape, as the reading rules list them
    import typing
    from typing import Any

    if hint is Any or hint is None:
        return _identity
    if isinstance(hint, type) and getattr(hint, "_json_record", False):
        return lambda value, where: _decode_record(hint, value, where)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        options = [a for a in args if a is not type(None)]
        nullable = type(None) in args
        if len(options) != 1:
            return _identity
        inner = _decoder(options[0])
        if inner is _identity:
            return _identity
        if nullable:
            return lambda value, where: None if value is None else inner(value, where)
        return inner
    if origin is tuple:
        mapping = len(args) == 2 and args[1] is Ellipsis and typing.get_origin(args[0]) is tuple
        if len(args) == 2 and args[1] is Ellipsis:
            item = _decoder(args[0])

            def homogeneous(value: Any, where: str) -> Any:
                if mapping and isinstance(value, dict):
                    value = list(value.items())  # a mapping written as an object (_json_maps)
                if not isinstance(value, (list, tuple)):
                    raise SchemaError("%s: expected a list, found %s" % (where, type(value).__name__))
                if item is _identity:
                    return tuple(value)
                return tuple([item(v, where) for v in value])

            return homogeneous
        items = [_decoder(a) for a in args]

        def fixed(value: Any, where: str) -> Any:
            if not isinstance(value, (list, tuple)):
                raise SchemaError("%s: expected a list, found %s" % (where, type(value).__name__))
            if args and len(args) == len(value):
                return tuple([d(v, where) for d, v in zip(items, value)])
            return tuple(value)

        return fixed
    if origin is list:
        item = _decoder(args[0]) if args else None

        def listed(value: Any, where: str) -> Any:
            if not isinstance(value, (list, tuple)):
                raise SchemaError("%s: expected a list, found %s" % (where, type(value).__name__))
            return [item(v, where) for v in value] if item is not None else list(value)

        return listed
    if origin is dict:
        item = _decoder(args[1]) if args else None

        def mapped(value: Any, where: str) -> Any:
            if not isinstance(value, dict):
                raise SchemaError("%s: expected an object, found %s" % (where, type(value).__name__))
            return {k: item(v, where) for k, v in value.items()} if item is not None else dict(value)

        return mapped
    if hint is float:
        return lambda value, where: float(value) if isinstance(value, int) and not isinstance(value, bool) else value
    return _identity


_PLANS: Dict[type, Any] = {}


def _plan(cls: type):
    """``(read hook, [(name, decoder, flattened)])`` of a record class, made once."""
    plan = _PLANS.get(cls)
    if plan is None:
        types = field_types(cls)
        flatten = getattr(cls, "_json_flatten", ())
        plan = _PLANS[cls] = (getattr(cls, "_json_read", None),
                              [(name, _decoder(types[name]), name in flatten) for name in cls._fields])
    return plan


def _decode_record(cls: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise SchemaError("%s: expected an object, found %s" % (where, type(value).__name__))
    read, fields = _plan(cls)
    if read is not None:
        value = read(value)
    kwargs: Dict[str, Any] = {}
    for name, decode, flattened in fields:
        if flattened:
            kwargs[name] = decode(value, where + "." + name)
        elif name in value:
            item = value[name]
            kwargs[name] = item if decode is _identity else decode(item, where + "." + name)
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise SchemaError("%s: %s" % (where, exc)) from None


__all__ = ["SCHEMA_VERSION", "SchemaError", "check_schema", "field_types", "from_jsonable", "to_jsonable"]
