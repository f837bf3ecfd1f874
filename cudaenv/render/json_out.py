"""JSON output: the snapshot (and whatever a command adds) as indented text, keys in contract order."""

import json
from typing import Any


def dumps(data: Any) -> str:
    """``data`` as JSON text, indent 2, keys in their given order, ending with a newline."""
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False, default=str) + "\n"

