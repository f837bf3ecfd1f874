"""The one error type for mistakes the user made (exit code 2, one line and a hint)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, Optional


class UserError(Exception):
    """A problem the user can fix: a bad flag, a missing interpreter, a root that is not a directory."""

    def __init__(self, message: str, hint: Optional[str] = None, exit_code: int = 2):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


def seconds_setting(env: Mapping[str, str], name: str, default: float = None, explicit: Optional[float] = None, flag: str = "--timeout") -> float:
    """Kept for callers not yet moved: :func:`cudaenv.config.seconds` reads every ``CUDAENV_*`` timeout (its table
    holds the default; ``default`` is ignored for a setting in the table)."""
    from cudaenv import config

    return config.seconds(env, name, explicit, flag)
