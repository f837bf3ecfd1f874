"""JSON output: the snapshot (and whatever a command adds) as indented text, keys in contract order."""

import json
from typing import Any


def dumps(data: Any) -> str:
    """``data`` as JSON text, indent 2, keys in their given order, ending with a newline."""
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False, default=str) + "\n"


def render_snapshot_json(snapshot) -> str:
    """``snapshot.to_dict()`` as JSON text (the public contract, ``schema_version`` 1)."""
    return dumps(snapshot.to_dict())
