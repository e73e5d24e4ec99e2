"""ScyllaDB's ``USING TIMEOUT <duration>`` on SELECT, INSERT, UPDATE, DELETE, BATCH and TRUNCATE.

ScyllaDB (``cql3/attributes.cc``) checks the value and uses it as the request's deadline.  logtide
checks it the same way, with the same messages, and enforces it as a ``Deadline`` measured from the
moment the statement starts to run: a SELECT past it answers ReadTimeout, a write whose deadline passes
before it commits answers WriteTimeout and is not applied, a TRUNCATE answers a truncate error
(docs/compatibility.md, "USING TIMEOUT").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T


@dataclass(frozen=True)
class Deadline:
    """The moment (``time.monotonic()``) a statement with ``USING TIMEOUT`` must be done by."""

    at: float
    timeout_ms: int

    @staticmethod
    def after(timeout_ms: int) -> "Deadline":
        """The deadline ``timeout_ms`` milliseconds from now."""
        return Deadline(time.monotonic() + timeout_ms / 1000, timeout_ms)

    def passed(self) -> bool:
        """True once the deadline is reached (a timeout of 0 ms has always passed)."""
        return time.monotonic() >= self.at


def check_timeout(using: ast.Using, ev: Any) -> int | None:
    """Validate ``USING TIMEOUT t`` as ScyllaDB does: the timeout in milliseconds, None without one."""
    if using.timeout is None:
        return None
    v = ev.value(using.timeout, T.DURATION, "[timeout]")
    if v is None or v is T.UNSET:  # ScyllaDB's timeout has no unset guard: unset reads as null
        raise InvalidRequest("Timeout value cannot be null")
    if v.months or v.days:
        raise InvalidRequest("Timeout values cannot be expressed in days/months")
    if v.nanoseconds % 1_000_000:
        raise InvalidRequest("Timeout values cannot have granularity finer than milliseconds")
    if v.nanoseconds < 0:
        raise InvalidRequest("Timeout values must be non-negative")
    return v.nanoseconds // 1_000_000
