"""PowerShell: ``$env:NAME = 'value'`` (a quote inside is doubled; PowerShell also ends quotes at ‘ ’ ‚ ‛)."""

from __future__ import annotations

import posixpath

from cudaenv.core.lazy import LazyModule
from cudaenv.shells import Shell

ntpath = LazyModule("ntpath")  # Windows paths only: not imported on Linux until needed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing stays off the fast path
    from typing import Mapping

# PowerShell treats these as single quotes too; each is escaped by doubling it.
_QUOTES = ("'", "\u2018", "\u2019", "\u201a", "\u201b")


class Pwsh(Shell):
    name = "pwsh"
    template = "cudaenv.ps1"
    hook_line = "if (Get-Command cudaenv -CommandType Application -ErrorAction SilentlyContinue) { (& cudaenv init pwsh) -join \"`n\" | Invoke-Expression }"

    def quote(self, value: str) -> str:
        for q in _QUOTES:
            value = value.replace(q, q + q)
        return "'" + value + "'"

    def export(self, name: str, value: str) -> str:
        return "$env:%s = %s" % (self.check_name(name), self.quote(value))

    def unset(self, name: str) -> str:
        return "Remove-Item -LiteralPath Env:%s -ErrorAction SilentlyContinue" % self.check_name(name)

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        if system == "windows":
            docs = ntpath.join(env.get("USERPROFILE") or "~", "Documents")
            return ntpath.join(docs, "PowerShell", "Microsoft.PowerShell_profile.ps1")
        from cudaenv.shells.startup import config_home

        return posixpath.join(config_home(env), "powershell", "Microsoft.PowerShell_profile.ps1")
