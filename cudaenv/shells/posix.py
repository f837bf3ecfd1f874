"""bash, zsh and POSIX sh: ``export NAME='value'`` with single quotes (a quote inside becomes '\\'')."""

from __future__ import annotations

import posixpath

from cudaenv.shells.base import Shell

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Mapping


class Posix(Shell):
    name = "sh"
    template = "cudaenv.bash"
    hook_line = 'command -v cudaenv >/dev/null 2>&1 && eval "$(cudaenv init bash)"'

    def quote(self, value: str) -> str:
        # Inside single quotes nothing is special ($, `, \, ;, newlines): only ' ends them.
        return "'" + value.replace("'", "'\\''") + "'"

    def export(self, name: str, value: str) -> str:
        return "export %s=%s" % (self.check_name(name), self.quote(value))

    def unset(self, name: str) -> str:
        return "unset %s" % self.check_name(name)

    def epilogue(self, changed: Mapping[str, object]) -> str:
        return "hash -r 2>/dev/null || true" if "PATH" in changed else ""

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        return posixpath.join(env.get("HOME") or "~", ".profile")


class Bash(Posix):
    name = "bash"

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        return posixpath.join(env.get("HOME") or "~", ".bashrc")


class Zsh(Posix):
    name = "zsh"
    template = "cudaenv.zsh"
    hook_line = 'command -v cudaenv >/dev/null 2>&1 && eval "$(cudaenv init zsh)"'

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        return posixpath.join(env.get("ZDOTDIR") or env.get("HOME") or "~", ".zshrc")
