"""fish: ``set -gx NAME 'value'``; variables ending in PATH are lists, written one element per colon entry."""

from __future__ import annotations

from cudaenv.shells import Shell

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Mapping


class Fish(Shell):
    name = "fish"
    template = "cudaenv.fish"
    hook_line = "command -q cudaenv; and cudaenv init fish | source"

    def quote(self, value: str) -> str:
        # In fish single quotes only \\ and \' are escapes.
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

    def export(self, name: str, value: str) -> str:
        self.check_name(name)
        if name.endswith("PATH"):  # fish path variables: PATH, LD_LIBRARY_PATH, CUDA_PATH are lists
            items = value.split(":") if value else []
            return " ".join(["set -gx", name] + [self.quote(x) for x in items])
        return "set -gx %s %s" % (name, self.quote(value))

    def unset(self, name: str) -> str:
        return "set -e %s" % self.check_name(name)

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        from cudaenv.shells.startup import startup_file

        return startup_file("fish", env)
