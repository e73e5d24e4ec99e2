"""A background worker: one daemon thread that runs a step again and again, sleeps when the step found nothing to
do, is woken early by :meth:`Worker.wake` and stopped by :meth:`Worker.stop` (the changefeeds' barriers,
retention and initial scans, ``changefeed.background``; the builds of materialized views and secondary indexes,
``engine.view_build``: ScyllaDB's view builder and YDB's initial scans are such loops).

A step's error is handed to ``failed`` and the step is tried again after the idle sleep: the server keeps serving.
An error after :meth:`stop` ends the thread quietly (the database is closing under it).
"""

from __future__ import annotations

import threading
from typing import Callable


class Worker:
    """One background thread running ``step`` (True: it did something, run it again at once; False: sleep
    ``idle()`` seconds or until woken)."""

    def __init__(self, name: str, step: Callable[[], bool], idle: Callable[[], float],
                 failed: Callable[[Exception], None]) -> None:
        self.name = name
        self._step = step
        self._idle = idle
        self._failed = failed
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        """Whether the thread was started (it may have stopped since)."""
        return self._thread is not None

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called: the worker never starts again."""
        return self._stop.is_set()

    def start(self) -> None:
        """Start the thread unless it runs or the worker was stopped; wake it if it runs."""
        if self._stop.is_set():
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        self._wake.set()

    def wake(self) -> None:
        """End the thread's idle sleep now."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the thread and wait for its current step to end (not from the thread itself)."""
        self._stop.set()
        self._wake.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self._step()
            except Exception as e:  # noqa: BLE001 - retried after the idle sleep; the server keeps serving
                if self._stop.is_set():
                    return
                self._failed(e)
                busy = False
            if not busy:
                self._wake.wait(self._idle())
                self._wake.clear()
