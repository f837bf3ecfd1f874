"""Named tuples declared like ``typing.NamedTuple`` classes, without importing ``typing`` (issue 35).

``typing`` costs about 2 ms of a start-up (its own module, built for every import of it), and `doctor --quick`'s
parsers need only what :func:`collections.namedtuple` makes. :func:`named_tuple` takes a class written the way a
``typing.NamedTuple`` subclass is (annotated fields in order, a default after a field's annotation, methods, a
docstring) and returns that class built on :func:`collections.namedtuple`::

    @named_tuple
    class KernelModule:
        version: str
        flavor: str = "proprietary"

The result is what ``class KernelModule(NamedTuple)`` gives for everything cudaenv uses: a tuple subclass with
``_fields``, ``_field_defaults``, ``_make``, ``_replace``, ``_asdict``, the same ``repr``, no ``__dict__`` (empty
``__slots__``), equality and hashing as tuples, pickling; its annotations stay on the class.
"""

from collections import namedtuple

from cudaenv.core.lazy import own_annotations


def named_tuple(cls: type) -> type:
    """``cls`` (a plain class whose annotations are its fields, see the module's text) as a named tuple class."""
    own = dict(vars(cls))
    fields = tuple(own_annotations(cls))
    defaults = []
    for name in fields:
        if name in own:
            defaults.append(own.pop(name))
        elif defaults:
            raise TypeError("field %s without a default follows one with a default in %s" % (name, cls.__name__))
    base = namedtuple(cls.__name__, fields, defaults=defaults, module=cls.__module__)
    for name in ("__dict__", "__weakref__"):
        own.pop(name, None)
    own["__slots__"] = ()
    own["__qualname__"] = cls.__qualname__
    if own.get("__doc__") is None:
        own["__doc__"] = base.__doc__
    return type(cls.__name__, (base,), own)
