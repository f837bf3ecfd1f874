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


def seconds_setting(env: Mapping[str, str], name: str, default: float, explicit: Optional[float] = None, flag: str = "--timeout") -> float:
    """A number of seconds from ``explicit`` (a flag), else the environment variable ``name``, else ``default``; > 0."""
    if explicit is not None:
        if explicit <= 0:
            raise UserError("%s must be more than 0 seconds" % flag, hint="for example %s 10" % flag)
        return explicit
    raw = env.get(name)
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise UserError("%s=%s is not a number of seconds" % (name, raw), hint="for example %s=10" % name) from None
    if value <= 0:
        raise UserError("%s must be more than 0 seconds" % name, hint="for example %s=10" % name)
    return value
