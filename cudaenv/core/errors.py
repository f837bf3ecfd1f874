"""The one error type for mistakes the user made (exit code 2, one line and a hint)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


class UserError(Exception):
    """A problem the user can fix: a bad flag, a missing interpreter, a root that is not a directory."""

    def __init__(self, message: str, hint: Optional[str] = None, exit_code: int = 2):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message

