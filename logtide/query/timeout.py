"""ScyllaDB's ``USING TIMEOUT <duration>`` on SELECT, INSERT, UPDATE, DELETE and BATCH.

ScyllaDB (``cql3/attributes.cc``) checks the value and uses it as the
request's deadline.  logtide checks it the same way, with the same messages,
and otherwise ignores it: a statement here never waits on a replica, so there
is no deadline to shorten (docs/server.md).
"""

from __future__ import annotations

from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T


def check_timeout(using: ast.Using, ev: Any) -> None:
    """Validate ``USING TIMEOUT t`` as ScyllaDB does; nothing to do without one."""
    if using.timeout is None:
        return
    v = ev.value(using.timeout, T.DURATION, "[timeout]")
    if v is T.UNSET:
        return  # an unset bind value leaves the default timeout, as an unset TTL does
    if v is None:
        raise InvalidRequest("Timeout value cannot be null")
    if v.months or v.days:
        raise InvalidRequest("Timeout values cannot be expressed in days/months")
    if v.nanoseconds % 1_000_000:
        raise InvalidRequest("Timeout values cannot have granularity finer than milliseconds")
    if v.nanoseconds < 0:
        raise InvalidRequest("Timeout values must be non-negative")
