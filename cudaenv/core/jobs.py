"""Run a function in a thread and join it later: the doctor's probes and the NVIDIA probe's parallel queries.

Infrastructure: collect.py (the orchestrator) and probes use it; it imports nothing of cudaenv.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, Callable, Optional


class Job:
    """``fn(*args)`` in a daemon thread; ``result()`` joins it and returns (or re-raises).

    Plain ``threading``: ``concurrent.futures`` pulls in ``logging`` and costs more to import than
    the whole platform probe takes to run, and daemon threads let Ctrl-C end the doctor at once.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any):
        import threading

        self._fn, self._args = fn, args
        self._value: Any = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="cudaenv-" + getattr(fn, "__name__", "probe"), daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
