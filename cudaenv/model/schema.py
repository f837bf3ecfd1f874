"""The version of cudaenv's JSON contract, and the check every reader of a report runs first.

``schema_version`` is on every JSON output (each envelope record, :func:`cudaenv.model.records.envelopes`; the list is
generated into docs/reference/json-contract.md). It is an integer, the contract's major version: a reader refuses
another major. A compatible addition (new keys, new finding ids) keeps the major; when one needs saying, a writer
may give ``"MAJOR.MINOR"`` (a string), which this reader takes: an older or equal minor is read as is, a newer one
is read as far as this version understands it, with a note. Unknown keys are always ignored.

Tiny and stdlib-free.
"""

SCHEMA_VERSION = 1  # the major
SCHEMA_MINOR = 0  # compatible additions since the major (written only as "1.MINOR" once one needs saying)


class SchemaError(ValueError):
    """Not a cudaenv report this version can read: another major, no version, or the wrong shape."""


def parse_schema_version(value):
    """``1`` -> ``(1, 0)``; ``"1.2"`` -> ``(1, 2)``; anything else -> ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (value, 0) if value >= 0 else None
    if isinstance(value, str) and 0 < len(value) <= 12:
        major, _, minor = value.partition(".")
        if major.isascii() and major.isdigit() and (not minor or (minor.isascii() and minor.isdigit())):
            return int(major), int(minor or 0)
    return None


def check_schema(data, notes=None):
    """Raise :class:`SchemaError` unless ``data`` is a report of this major; append a note to ``notes`` (a list)
    when it comes from a newer minor. Returns ``(major, minor)``."""
    from cudaenv.core.i18n import M  # (the messages are said in the reader's language where they are shown)

    if not isinstance(data, dict):
        raise SchemaError(M("not a cudaenv report: a JSON %s, not an object", type(data).__name__))
    if "schema_version" not in data:
        raise SchemaError(M("not a cudaenv report: no schema_version"))
    version = parse_schema_version(data["schema_version"])
    if version is None:
        raise SchemaError(M("not a cudaenv report: schema_version %r is not a version", data["schema_version"]))
    if version[0] != SCHEMA_VERSION:
        raise SchemaError(M("schema_version %s: this cudaenv reads schema %d reports only%s", data["schema_version"],
                            SCHEMA_VERSION, M(" (upgrade cudaenv)") if version[0] > SCHEMA_VERSION else ""))
    if version[1] > SCHEMA_MINOR and notes is not None:
        notes.append(M("schema_version %s is newer than this cudaenv's %d.%d: read as far as %d.%d goes, newer fields "
                       "ignored", data["schema_version"], SCHEMA_VERSION, SCHEMA_MINOR, SCHEMA_VERSION, SCHEMA_MINOR))
    return version
