"""Frozen value records that cost microseconds to define.

``@dataclass(frozen=True)`` compiles six methods per class at import time, and ``dataclasses`` pulls in
``inspect``: for the two dozen snapshot records that alone took several times a bare interpreter start,
which ``cudaenv use`` cannot afford. A :class:`Record` subclass declares its fields as annotations with
optional defaults, exactly like a dataclass::

    class Toolkit(Record):
        version: Optional[str]
        path: str
        active: bool = False
        sources: Tuple[str, ...] = ()

and gets keyword/positional construction, immutability, equality, hashing and a readable repr from one
shared implementation. :func:`replace`, :func:`fields` and :func:`asdict` stand in for their
``dataclasses`` namesakes. Mutable defaults are given as ``factory(callable)``.

A subclass's field tables (``_fields``, ``_defaults``, ...) are worked out from its annotations the first time
anything reads one (an instance made, :func:`fields`, the codec), not when the class is made: a module of two dozen
records costs `cudaenv use`, which builds four of them, no more than the class statements (a field without a default
after one with a default is a TypeError then; tests/model checks every registered record).

Every subclass is registered (:func:`registered`, one list append at class creation) and gets ``to_dict()`` /
``from_dict()`` from the one JSON codec, :mod:`cudaenv.model.codec`, imported only when called: a record's JSON
shape is declared by class attributes the codec reads (``_json_omit``, ``_json_maps``, ``_json_flatten``,
``_json_skip_none``, ``_json_envelope``, ``_json_adjust``), never by a hand-written ``to_dict``.
"""

import _thread

from cudaenv.core.lazy import own_annotations


class FrozenInstanceError(AttributeError):
    pass


class factory:
    """A default made fresh for each instance (like ``field(default_factory=...)``)."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


_MISSING = object()
_REGISTRY = []  # every Record subclass, in creation order (cudaenv.model.registry reads it)


class _Table:
    """One of :class:`Record`'s field tables, read through a subclass that has not worked its tables out yet: works
    them all out (:func:`_build`), stores them on the subclass (later reads find them there) and gives this one."""

    __slots__ = ("name", "empty")

    def __init__(self, name, empty):
        self.name = name
        self.empty = empty

    def __get__(self, obj, cls=None):
        if cls is None:
            cls = type(obj)
        if cls is Record:
            return self.empty
        _build(cls)
        return cls.__dict__[self.name]


_TABLES = ("_fields", "_defaults", "_hints", "_plain", "_factories", "_fieldset")
_LOCK = _thread.allocate_lock()  # two threads (the doctor's probes) making the first record of a class


def _build(cls):
    """Work out a Record subclass's field tables from its annotations (inherited fields first), once."""
    parent = next(base for base in cls.__mro__[1:] if issubclass(base, Record))
    inherited = (parent._fields, parent._defaults, parent._hints)  # the parent's first: never under the lock
    with _LOCK:
        if type(cls.__dict__.get("_fieldset")) is frozenset:
            return  # another thread was first
        own = own_annotations(cls)
        fields = list(inherited[0])
        defaults = dict(inherited[1])
        hints = dict(inherited[2])
        for name, hint in own.items():
            if name.startswith("_"):
                continue
            if name not in fields:
                fields.append(name)
            hints[name] = hint if isinstance(hint, str) else getattr(hint, "__name__", repr(hint))
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
                delattr(cls, name)
            elif name in defaults:
                del defaults[name]
        seen_default = False
        for name in fields:
            if name in defaults:
                seen_default = True
            elif seen_default:
                raise TypeError("%s: field %r without a default follows one with a default" % (cls.__name__, name))
        cls._fields = tuple(fields)
        cls._defaults = defaults
        cls._hints = hints
        cls._plain = {k: v for k, v in defaults.items() if not isinstance(v, factory)}
        cls._factories = tuple(k for k, v in defaults.items() if isinstance(v, factory))
        cls._fieldset = frozenset(fields)  # last: its presence says the tables are complete


class Record:
    _json_record = True  # how the codec (which does not import this module) knows a record
    # The field tables of a subclass, each worked out on first read (_Table, _build):
    _fields = _Table("_fields", ())  # field names in declaration order (inherited fields first)
    _defaults = _Table("_defaults", {})  # name -> default value or factory
    _hints = _Table("_hints", {})  # name -> annotation text
    _plain = _Table("_plain", {})  # name -> default, for the defaults that are not factories (the fast path of __init__)
    _factories = _Table("_factories", ())  # the names whose default is a factory
    _fieldset = _Table("_fieldset", frozenset())

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__bases__ != (Record,):
            # a record of a record: a read would find the parent's own tables first, so it gets its own to work out
            for name in _TABLES:
                setattr(cls, name, Record.__dict__[name])
        _REGISTRY.append(cls)

    def __init__(self, *args, **kwargs):
        if not args:  # the fast path (the codec builds every record of a report this way): one dict merge
            values = dict(self._plain)
            values.update(kwargs)
            for name in self._factories:
                if name not in kwargs:
                    values[name] = self._defaults[name].make()
            if values.keys() == self._fieldset:  # every field given or defaulted, nothing unknown
                self.__dict__.update(values)
                post = getattr(self, "__post_init__", None)
                if post is not None:
                    post()
                return
        self._init_checked(args, kwargs)

    def _init_checked(self, args, kwargs):
        names = self._fields
        if len(args) > len(names):
            raise TypeError("%s takes at most %d positional arguments" % (type(self).__name__, len(names)))
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key in values:
                raise TypeError("%s got multiple values for %r" % (type(self).__name__, key))
            if key not in self._defaults and key not in names:
                raise TypeError("%s got an unexpected keyword argument %r" % (type(self).__name__, key))
            values[key] = value
        setter = object.__setattr__
        for name in names:
            value = values.get(name, _MISSING)
            if value is _MISSING:
                value = self._defaults.get(name, _MISSING)
                if value is _MISSING:
                    raise TypeError("%s missing required argument %r" % (type(self).__name__, name))
                if isinstance(value, factory):
                    value = value.make()
            setter(self, name, value)
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    def _astuple(self):
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._astuple() == other._astuple()
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash((self.__class__.__name__,) + self._astuple())

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % (n, getattr(self, n)) for n in self._fields))

    def __setattr__(self, name, value):
        raise FrozenInstanceError("cannot assign to field %r of a frozen %s" % (name, type(self).__name__))

    def __delattr__(self, name):
        raise FrozenInstanceError("cannot delete field %r of a frozen %s" % (name, type(self).__name__))

    def __reduce__(self):
        return (_rebuild, (self.__class__, self._astuple()))

    def to_dict(self):
        """The JSON-ready dict of this record (:func:`cudaenv.model.codec.to_jsonable`)."""
        from cudaenv.model.codec import to_jsonable

        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data, notes=None):
        """The record ``data`` (parsed JSON) describes; see :func:`cudaenv.model.codec.from_jsonable`."""
        from cudaenv.model.codec import from_jsonable

        return from_jsonable(cls, data, notes)


def _rebuild(cls, values):
    return cls(*values)


def registered():
    """Every Record subclass created so far (import a module to register its records)."""
    return tuple(_REGISTRY)


def is_record(value) -> bool:
    return isinstance(value, Record)


def fields(record_or_class):
    """The field names of a record (or record class), in order."""
    return tuple(record_or_class._fields)


def replace(record, **changes):
    """A copy of ``record`` with some fields changed."""
    values = {name: getattr(record, name) for name in record._fields}
    for key in changes:
        if key not in values:
            raise TypeError("%s has no field %r" % (type(record).__name__, key))
    values.update(changes)
    return record.__class__(**values)


def asdict(value):
    """Records, tuples, lists and dicts turned into JSON-ready dicts and lists, recursively."""
    if isinstance(value, Record):
        return {name: asdict(getattr(value, name)) for name in value._fields}
    if isinstance(value, (list, tuple)):
        return [asdict(v) for v in value]
    if isinstance(value, dict):
        return {k: asdict(v) for k, v in value.items()}
    return value

