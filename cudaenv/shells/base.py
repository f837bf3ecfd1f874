"""The Shell interface: how one shell writes an assignment, an unset and a quoted value."""

from __future__ import annotations

from cudaenv._lazy import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing (and re) stay off the fast path
    import re
    from typing import Mapping, Optional

PLACEHOLDER = LazyPattern(r"__CUDAENV_([A-Z_]+)__")


class UnknownShell(ValueError):
    def __init__(self, name: str, detected: bool = False):
        self.name = name
        if detected:
            msg = "cannot tell which shell this is (SHELL=%s)" % (name or "unset")
        else:
            msg = "unknown shell %r" % name
        super().__init__(msg)
        self.message = msg


class Shell:
    """One shell's syntax. Subclasses set ``name``, ``template`` and implement quote/export/unset."""

    name = ""
    template = ""  # the hook template in shell/ (cudaenv.bash, ...)
    hook_line = ""  # the line `init --install` writes into the rc file

    def quote(self, value: str) -> str:
        raise NotImplementedError

    def export(self, name: str, value: str) -> str:
        raise NotImplementedError

    def unset(self, name: str) -> str:
        raise NotImplementedError

    def epilogue(self, changed: Mapping[str, object]) -> str:
        """Extra code after the assignments (bash: forget hashed command locations)."""
        return ""

    def check_name(self, name: str) -> str:
        if not (name.isascii() and name.isidentifier()):  # [A-Za-z_][A-Za-z0-9_]*, without compiling NAME
            raise ValueError("not a variable name: %r" % name)
        return name

    def render(self, change) -> str:
        """The code for a whole :class:`cudaenv.toolkit.switch.EnvChange` (empty when nothing changes)."""
        lines = []
        for name, value in change.changes:
            self.check_name(name)
            lines.append(self.unset(name) if value is None else self.export(name, value))
        tail = self.epilogue(change.as_dict())
        if tail:
            lines.append(tail)
        return "".join(line + "\n" for line in lines)

    def render_template(self, text: str, values: Mapping[str, str], raw: Optional[Mapping[str, str]] = None) -> str:
        """Fill ``__CUDAENV_NAME__`` placeholders in one pass: ``values`` quoted, ``raw`` (already code) as is."""
        raw = raw or {}

        def fill(match: "re.Match[str]") -> str:
            key = match.group(1)
            if key in raw:
                return raw[key]
            if key in values:
                return self.quote(values[key])
            return match.group(0)

        return PLACEHOLDER.sub(fill, text)

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        """The rc file `cudaenv init SHELL --install` appends the hook line to."""
        raise NotImplementedError
