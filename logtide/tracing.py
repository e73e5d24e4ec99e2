"""Query tracing as Cassandra and ScyllaDB expose it: ``TRACING ON`` in cqlsh, ``execute(..., trace=True)``.

A request whose frame carries the tracing flag (native protocol spec, section 2.2) opens a *tracing session*:
the answer carries the session's id, and the stages the request goes through (parse, plan, read, CDC and
changefeed capture, commit) are recorded as *trace events* with the time elapsed since the request arrived.
Both are read back as ``system_traces.sessions`` and ``system_traces.events`` (``logtide.schema.system_schema``
has their columns: Cassandra 4's, plus ScyllaDB's ``request_size``, ``response_size`` and ``username``), which
is what cassandra-driver's ``get_query_trace()`` and cqlsh's ``TRACING ON`` read.

Cassandra writes traces into its tables with a TTL of one day.  logtide keeps them in memory instead: at most
``capacity`` sessions (the oldest go first when a new one starts), each for ``ttl_seconds`` (one day), each with
at most ``max_events`` events.  A restart forgets them.  A request without the flag never reaches this module: the
server tests the frame's flag once and runs the request exactly as before.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .query.functions import make_timeuuid

TRACE_TTL_SECONDS = 24 * 3600  # Cassandra's tracetype_query_ttl
DEFAULT_CAPACITY = 1000
DEFAULT_MAX_EVENTS = 200

# the ``request`` column: what Cassandra's (and ScyllaDB's) native transport writes for each message
REQUEST_NAMES = {"QUERY": "Execute CQL3 query", "EXECUTE": "Execute CQL3 prepared query",
                 "PREPARE": "Preparing CQL3 query", "BATCH": "Execute batch of CQL3 queries"}
CONSISTENCY_NAMES = ("ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "SERIAL",
                     "LOCAL_SERIAL", "LOCAL_ONE")


@dataclass(frozen=True)
class TraceEvent:
    """One row of ``system_traces.events``: what happened, where, on which thread, how long after the start."""

    event_id: uuid.UUID  # a timeuuid of the moment it happened
    activity: str
    source: str
    source_port: int
    source_elapsed: int  # microseconds since the request arrived
    thread: str


@dataclass
class TracingSession:
    """One traced request: a row of ``system_traces.sessions`` and its events.

    ``duration`` (microseconds) stays None until the answer is made, as in Cassandra, whose drivers wait for it
    before reading the events."""

    session_id: uuid.UUID
    request: str
    client: str
    coordinator: str
    coordinator_port: int
    parameters: Mapping[str, str]
    started_at_micros: int
    request_size: int
    username: str | None
    max_events: int
    duration: int | None = None
    response_size: int | None = None
    events: list[TraceEvent] = field(default_factory=list)
    _t0: float = field(default_factory=time.perf_counter)
    _last_t100: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def event(self, activity: str) -> None:
        """Record that the request reached ``activity`` now (on the calling thread)."""
        elapsed = int((time.perf_counter() - self._t0) * 1_000_000)
        with self._lock:
            if len(self.events) >= self.max_events:
                return
            t100 = max((self.started_at_micros + elapsed) * 10, self._last_t100 + 1)  # unique, increasing ids
            self._last_t100 = t100
            event_id = make_timeuuid(t100, self.session_id.clock_seq, self.session_id.node)
            self.events.append(TraceEvent(event_id, activity, self.coordinator, self.coordinator_port, elapsed,
                                          threading.current_thread().name))

    def finish(self, response_size: int) -> None:
        """The answer is made: set the duration (the session is complete from now on)."""
        with self._lock:
            self.response_size = response_size
            self.duration = max(1, int((time.perf_counter() - self._t0) * 1_000_000))

    def session_row(self) -> dict[str, Any]:
        """The ``system_traces.sessions`` row (values as the query engine's system rows hold them)."""
        return {"session_id": self.session_id, "client": self.client, "command": "QUERY",
                "coordinator": self.coordinator, "coordinator_port": self.coordinator_port,
                "duration": self.duration, "parameters": dict(self.parameters), "request": self.request,
                "request_size": self.request_size, "response_size": self.response_size,
                "started_at": _datetime(self.started_at_micros), "username": self.username}

    def event_rows(self) -> list[dict[str, Any]]:
        with self._lock:
            events = list(self.events)
        return [{"session_id": self.session_id, "event_id": e.event_id, "activity": e.activity, "source": e.source,
                 "source_elapsed": e.source_elapsed, "source_port": e.source_port, "thread": e.thread}
                for e in events]


class TraceStore:
    """The tracing sessions of one database, in memory: bounded in number and kept for ``ttl_seconds``."""

    def __init__(self, clock_micros: Callable[[], int], capacity: int = DEFAULT_CAPACITY,
                 max_events: int = DEFAULT_MAX_EVENTS, ttl_seconds: int = TRACE_TTL_SECONDS) -> None:
        self._clock = clock_micros
        self.capacity = capacity
        self.max_events = max_events
        self.ttl_seconds = ttl_seconds
        self._sessions: OrderedDict[uuid.UUID, TracingSession] = OrderedDict()
        self._lock = threading.Lock()
        self._node = uuid.getnode() | 0x010000000000  # the multicast bit: not a real MAC address
        self._last_t100 = 0

    def start(self, request: str, client: str, coordinator: str, coordinator_port: int,
              parameters: Mapping[str, str], request_size: int, username: str | None = None) -> TracingSession:
        """Open a tracing session for a request that arrived now."""
        now = self._clock()
        with self._lock:
            t100 = max(now * 10, self._last_t100 + 1)
            self._last_t100 = t100
            session_id = make_timeuuid(t100, t100 & 0x3FFF, self._node)
            session = TracingSession(session_id, request, client, coordinator, coordinator_port, dict(parameters),
                                     now, request_size, username, self.max_events)
            self._sessions[session_id] = session
            self._expire(now)
        return session

    def _expire(self, now_micros: int) -> None:
        """Drop sessions past the capacity (oldest first) or older than the TTL (under the lock)."""
        while len(self._sessions) > self.capacity:
            self._sessions.popitem(last=False)
        cutoff = now_micros - self.ttl_seconds * 1_000_000
        while self._sessions:
            first = next(iter(self._sessions.values()))
            if first.started_at_micros >= cutoff:
                break
            self._sessions.popitem(last=False)

    def sessions(self) -> list[TracingSession]:
        """The live sessions, oldest first."""
        with self._lock:
            self._expire(self._clock())
            return list(self._sessions.values())

    def sessions_rows(self) -> list[dict[str, Any]]:
        """``system_traces.sessions`` in primary-key order."""
        return sorted((s.session_row() for s in self.sessions()), key=lambda r: r["session_id"].bytes)

    def events_rows(self) -> list[dict[str, Any]]:
        """``system_traces.events`` in primary-key order (session, then event time)."""
        rows = []
        for s in sorted(self.sessions(), key=lambda s: s.session_id.bytes):
            rows.extend(s.event_rows())
        return rows


def _datetime(micros: int) -> Any:
    """A ``timestamp`` value (milliseconds) as the system rows hold them: a naive UTC datetime."""
    import datetime
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=micros // 1000)


def query_parameters(query: str | None, consistency: int | None, page_size: int | None = None,
                     serial_consistency: int | None = None) -> dict[str, str]:
    """The ``parameters`` map Cassandra writes for a traced request: the query and its consistency levels."""
    params: dict[str, str] = {}
    if query is not None:
        params["query"] = query
    if consistency is not None and 0 <= consistency < len(CONSISTENCY_NAMES):
        params["consistency_level"] = CONSISTENCY_NAMES[consistency]
    if page_size is not None and page_size > 0:
        params["page_size"] = str(page_size)
    if serial_consistency is not None and 0 <= serial_consistency < len(CONSISTENCY_NAMES):
        params["serial_consistency_level"] = CONSISTENCY_NAMES[serial_consistency]
    return params
