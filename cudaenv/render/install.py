"""``cudaenv install``: the report as text, the ``--list`` table, and pip's output passed through to a terminal.
Pure, except :class:`PassThrough`, which writes to the stream it is given. Every string from outside is escaped."""

from __future__ import annotations

from typing import List

from cudaenv.core.text import printable


def render_install(report) -> List[str]:
    """The lines ``cudaenv install`` prints for an :class:`~cudaenv.toolkit.install.plan.InstallReport`."""
    r = report
    if r.status == "no-wheels":
        lines = [r.message, "What works instead:"] + ["  " + a for a in r.commands]
    elif r.status == "planned":
        lines = [r.message] + ["  " + c for c in r.commands] + (["Source: " + r.source] if r.source else [])
    elif r.status == "refused":
        lines = [r.message] + ["warning: %s" % w for w in r.warnings] + ([r.hint] if r.hint else [])
    elif r.status == "already-installed":
        lines = ["CUDA %s is already installed in %s (give --reinstall to install it again)." % (r.release, r.path)]
        lines += ["note: %s" % r.hint] if r.hint else []
        lines.append("Use it in this shell: source <(cudaenv use %s)" % r.release)
    elif r.installer == "runfile":
        lines = ["Installed CUDA %s from %s in %s (toolkit only, no driver)." % (r.release, r.message, r.path),
                 "Use it in this shell: source <(cudaenv use %s)" % r.release]
    else:
        lines = ["Installed CUDA %s in %s (%d files, %.1f MB downloaded, %s s)." % (
            r.release, r.path, r.files, r.download_bytes / 1e6, r.seconds)]
        lines += ["  %s %s" % (c.name, c.version) for c in r.components]
        if r.forced:
            lines.append("--force: installed although the checks of this machine warned:")
        lines += ["warning: %s" % w for w in r.warnings]
        lines.append("Use it in this shell: source <(cudaenv use %s)   (rc files are not touched)" % r.release)
    return [printable(line) for line in lines]


def render_releases(listed) -> List[str]:
    """``cudaenv install --list`` (and ``cudaenv list --available``)."""
    lines = ["From wheels (cudaenv install VERSION, no root):", "  " + (", ".join(listed.wheels) or "none"),
             "Need NVIDIA's runfile or a repository (cudaenv install VERSION --runfile FILE | --plan):",
             "  " + (", ".join(listed.runfile_or_repository) or "none")]
    if listed.index:
        lines.append("Read from %s%s." % (listed.index, " (cached)" if listed.source == "cache" else ""))
    lines += ["note: " + n for n in listed.notes]
    return [printable(line) for line in lines]


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
            self.stream.write("%s(more output not shown)\n" % self.prefix)
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
