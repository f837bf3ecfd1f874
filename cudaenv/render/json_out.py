"""JSON output: the snapshot (and whatever a command adds) as indented text, keys in contract order."""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any


def dumps(data: Any) -> str:
    """``data`` as JSON text, indent 2, keys in their given order, ending with a newline."""
    text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False, default=str) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a path that is not UTF-8 (surrogateescape): \udcff escapes keep its bytes, losslessly
        text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=True, default=str) + "\n"
    return text

