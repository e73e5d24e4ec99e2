"""Clocks that give write timestamps (microseconds) and the current time in seconds.

The engine assigns strictly increasing timestamps from a clock; tests replace
the clock with :class:`ManualClock` to make time explicit.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Anything with ``now_micros()``: microseconds since the Unix epoch."""

    def now_micros(self) -> int: ...


class SystemClock:
    """The machine's wall clock."""

    def now_micros(self) -> int:
        return time.time_ns() // 1000


class ManualClock:
    """A clock that only moves when told to; for tests."""

    def __init__(self, micros: int = 1_600_000_000_000_000) -> None:
        self.micros = micros

    def now_micros(self) -> int:
        return self.micros

    def advance(self, seconds: float = 0, micros: int = 0) -> None:
        self.micros += int(seconds * 1_000_000) + micros


class TimestampSource:
    """Strictly increasing write timestamps drawn from a clock (thread-safe)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            ts = max(self.clock.now_micros(), self._last + 1)
            self._last = ts
            return ts

    def now_seconds(self) -> int:
        return self.clock.now_micros() // 1_000_000
