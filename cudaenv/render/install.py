"""``cudaenv install``: the report as text, the ``--list`` table, and pip's output passed through to a terminal.
Pure, except :class:`PassThrough`, which writes to the stream it is given. Every string from outside is escaped."""

from __future__ import annotations

from typing import List

from cudaenv.core.i18n import t, tr
from cudaenv.core.text import printable
from cudaenv.render.text import WIDTH, wrap, wrap_command
from cudaenv.render.width import width_of


def _lines(items: List[str], width: int, long_words: str = "keep") -> List[str]:
    """Prose items (escaped) wrapped to ``width``; ``  ``-indented items keep their indent on each line."""
    out: List[str] = []
    for item in items:
        text = printable(tr(item))
        indent = text[: len(text) - len(text.lstrip(" "))]
        out += wrap(text.strip(), first=indent, rest=indent + "  " if indent else "  ", width=width, long_words=long_words)
    return out


def _commands(commands, width: int) -> List[str]:
    """Commands that paste into a shell: ``cmd   (why)`` as the command, then its why below it when both do not fit."""
    out: List[str] = []
    for c in commands:
        c = printable(tr(c))
        cmd, sep, why = c.partition("   (")
        if sep and width_of("  " + c) > width:
            out += wrap_command(cmd.rstrip(), "  ", width) + wrap("(" + why, first="      ", width=width, long_words="keep")
        else:
            out += wrap_command(c, "  ", width)
    return out


def render_install(report, width: int = WIDTH) -> List[str]:
    """The lines ``cudaenv install`` prints for an :class:`~cudaenv.toolkit.install.plan.InstallReport`."""
    r = report
    if r.status == "no-wheels":
        return _lines([r.message, t("What works instead:")], width) + _commands(r.commands, width)
    if r.status == "planned":
        return (_lines([r.message], width) + _commands(r.commands, width)
                + (_lines([t("Source: %s", r.source)], width) if r.source else []))
    if r.status == "refused":
        return _lines([r.message] + [t("warning: %s", tr(w)) for w in r.warnings] + ([r.hint] if r.hint else []), width)
    if r.status == "already-installed":
        lines = [t("CUDA %s is already installed in %s (give --reinstall to install it again).", r.release, r.path)]
        lines += [t("note: %s", tr(r.hint))] if r.hint else []
        lines.append(t("Use it in this shell: source <(cudaenv use %s)", r.release))
    elif r.installer == "runfile":
        lines = [t("Installed CUDA %s from %s in %s (toolkit only, no driver).", r.release, r.message, r.path),
                 t("Use it in this shell: source <(cudaenv use %s)", r.release)]
    else:
        lines = [t("Installed CUDA %s in %s (%d files, %.1f MB downloaded, %s s).",
                   r.release, r.path, r.files, r.download_bytes / 1e6, r.seconds)]
        lines += ["  %s %s" % (c.name, c.version) for c in r.components]
        if r.forced:
            lines.append(t("--force: installed although the checks of this machine warned:"))
        lines += [t("warning: %s", tr(w)) for w in r.warnings]
        lines.append(t("Use it in this shell: source <(cudaenv use %s)   (rc files are not touched)", r.release))
    return _lines(lines, width)


def render_releases(listed, width: int = WIDTH) -> List[str]:
    """``cudaenv install --list`` (and ``cudaenv list --available``)."""
    lines = [t("From wheels (cudaenv install VERSION, no root):")]
    lines += wrap(", ".join(printable(v) for v in listed.wheels) or t("none"), first="  ", width=width)
    lines += _lines([t("Need NVIDIA's runfile or a repository (cudaenv install VERSION --runfile FILE | --plan):")], width)
    lines += wrap(", ".join(printable(v) for v in listed.runfile_or_repository) or t("none"), first="  ", width=width)
    if listed.index:
        lines += _lines([t("Read from %s%s.", listed.index, t(" (cached)") if listed.source == "cache" else "")], width)
    lines += _lines([t("note: %s", tr(n)) for n in listed.notes], width)
    return lines


class PassThrough:
    """pip's output, as it arrives, shown on a terminal one escaped line at a time (``\\r`` updates too), under a
    prefix; bounded: after :attr:`limit` bytes one line says the rest is not shown (pip's capture is kept anyway)."""

    def __init__(self, stream, prefix: str = "  pip: ", limit: int = 256 * 1024):
        self.stream, self.prefix, self.limit = stream, prefix, limit
        self.seen = 0
        self._pending = b""

    def __call__(self, data: bytes) -> None:
        if self.seen > self.limit:
            return
        self.seen += len(data)
        if self.seen > self.limit:
            self._write(self._pending)
            self._pending = b""
            self.stream.write("%s%s\n" % (self.prefix, t("(more output not shown)")))
            self.stream.flush()
            return
        text = (self._pending + data).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *done, self._pending = text.split(b"\n")
        for line in done:
            self._write(line)

    def close(self) -> None:
        if self._pending and self.seen <= self.limit:
            self._write(self._pending)
        self._pending = b""

    def _write(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").rstrip()
        if text.strip():
            self.stream.write(self.prefix + printable(text) + "\n")
            self.stream.flush()
