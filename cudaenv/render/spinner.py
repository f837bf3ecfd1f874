"""A one-line spinner on stderr while the slow probes run; only drawn when stderr is a terminal."""

from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import IO, Optional

FRAMES = "|/-\\"


class Spinner:
    """``with Spinner(stream, enabled) as sp: sp.update("importing torch")``; a no-op when not enabled."""

    def __init__(self, stream: IO[str], enabled: bool, interval: float = 0.1, width: int = 79):
        self.stream = stream
        self.enabled = enabled
        self.interval = interval
        self.width = width
        self.message = ""
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._drawn = False

    def update(self, message: str) -> None:
        from cudaenv.core.i18n import tr  # a marked message (the doctor's phases) in the reader's language

        with self._lock:
            self.message = tr(message)

    def __call__(self, message: str) -> None:  # usable as collect_snapshot's progress callback
        self.update(message)

    def _draw(self, frame: str) -> None:
        with self._lock:
            from cudaenv.render.width import fit_wide, has_wide, pad

            text = "%s %s" % (frame, self.message)
            # a wide (Chinese) character takes two columns; any other line is cut as it always was
            text = pad(fit_wide(text, self.width), self.width) if has_wide(text) else text[: self.width].ljust(self.width)
            try:
                self.stream.write("\r" + text)
                self.stream.flush()
                self._drawn = True
            except (OSError, ValueError):
                self._stop.set()

    def _run(self) -> None:
        i = 1  # frame 0 was drawn by start()
        while not self._stop.is_set():
            self._draw(FRAMES[i % len(FRAMES)])
            i += 1
            self._stop.wait(self.interval)

    def start(self) -> "Spinner":
        if self.enabled and self._thread is None:
            self._draw(FRAMES[0])
            self._thread = threading.Thread(target=self._run, name="cudaenv-spinner", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=1.0)
        self._thread = None
        if self._drawn:
            try:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def __enter__(self) -> "Spinner":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
