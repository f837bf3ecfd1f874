"""bash, zsh and POSIX sh: ``export NAME='value'`` with single quotes (a quote inside becomes '\\'')."""

from __future__ import annotations

from cudaenv.shells import Shell
from cudaenv.core.text import shell_quote

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
        from cudaenv.shells.startup import startup_file

        return startup_file("sh", env)


class Bash(Posix):
    name = "bash"

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        from cudaenv.shells.startup import startup_file

        return startup_file("bash", env)


class Zsh(Posix):
    name = "zsh"
    template = "cudaenv.zsh"
    hook_line = 'command -v cudaenv >/dev/null 2>&1 && eval "$(cudaenv init zsh)"'

    def rc_file(self, env: Mapping[str, str], system: str) -> str:
        from cudaenv.shells.startup import startup_file

        return startup_file("zsh", env)


def quote_exact(value: str) -> str:
    """``value`` as one bash/zsh word that means exactly its bytes, and is printable ASCII to look at.

    Plain text is single-quoted as by :func:`shlex.quote`; text holding bytes that are not UTF-8 (carried as
    surrogates, as ``os.listdir`` gives them), control characters or other non-ASCII characters becomes an ANSI-C
    string, ``$'cuda-12.4-\\xff'``, every such byte written ``\\xNN``: the uninstall script and the printed plan
    name the very folder, and nothing reaches the terminal raw.
    """
    if value.isascii() and value.isprintable():
        return shell_quote(value)
    out = []
    for c in value:
        if c in "\\'":
            out.append("\\" + c)
        elif " " <= c <= "~":
            out.append(c)
        else:
            try:
                data = c.encode("utf-8", "surrogateescape")  # a byte that was not UTF-8 is that byte again
            except UnicodeEncodeError:
                data = c.encode("utf-8", "surrogatepass")
            out.extend("\\x%02x" % b for b in data)
    return "$'" + "".join(out) + "'"
