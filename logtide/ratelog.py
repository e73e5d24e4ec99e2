"""Logging a repeated failure once per interval: one line per kind of failure, with a count.

A full disk fails every write and a flood of bad connections fails every
accept; a line (let alone a traceback) for each would bury the log.
``RateLimitedLog.log(kind, msg)`` logs the first occurrence of ``kind`` at
once and then at most one line per ``interval`` seconds, saying how many
similar failures were not logged in between.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

DEFAULT_INTERVAL = 60.0


class RateLimitedLog:
    """At most one line per kind of failure per ``interval`` seconds (thread-safe)."""

    def __init__(self, logger: logging.Logger, interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def log(self, level: int, kind: str, msg: str, *args: Any, exc_info: Any = None) -> bool:
        """Log ``msg % args`` unless ``kind`` was logged less than ``interval`` ago; True when logged."""
        now = self.clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.interval:
                self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
                return False
            self._last[kind] = now
            skipped = self._suppressed.pop(kind, 0)
        if skipped:
            since = now - last if last is not None else 0.0
            msg = f"{msg} ({skipped} more like this in the last {since:.0f} s)"
        self.logger.log(level, msg, *args, exc_info=exc_info)
        return True

    def info(self, kind: str, msg: str, *args: Any) -> bool:
        return self.log(logging.INFO, kind, msg, *args)

    def warning(self, kind: str, msg: str, *args: Any) -> bool:
        return self.log(logging.WARNING, kind, msg, *args)

    def error(self, kind: str, msg: str, *args: Any, exc_info: Any = None) -> bool:
        return self.log(logging.ERROR, kind, msg, *args, exc_info=exc_info)
