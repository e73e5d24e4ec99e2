"""SCHEMA_CHANGE events, and a DDL answer held until clients have read the tables it changed implicitly.

A schema change is answered with a SCHEMA_CHANGE result naming what the statement named (``CREATED TABLE
ks.t``), and pushed as SCHEMA_CHANGE events to the connections REGISTERed for them; a change the statement made
implicitly (``ks.t_scylla_cdc_log`` created, altered or dropped with ``ks.t``) is pushed as an event of its own.

Drivers refresh their schema metadata before returning a DDL's result, but only for what the result names:
cassandra-driver (and cqlsh, built on it) reads ``system_schema`` for ``ks.t`` alone, and learns of the log
table from its event, which it handles after a random delay of up to ``schema_event_refresh_window`` (2 s).
A script that creates a table with CDC and then selects from its log would find the log missing from the
driver's metadata (cqlsh: ``'t_scylla_cdc_log' not found in keyspace 'ks'``).  So when a statement created a
table implicitly, its events are pushed first and its answer is held until every listening connection has read
that table's row of ``system_schema.tables`` (a SELECT on it that covers the table has completed, and the
connection has nothing else in flight: the other queries of its refresh are answered too), or for at most
``timeout`` seconds.  A listener that lets the timeout pass is not waited for again until it is seen refreshing.

Only an implicit CREATED is waited for: it is what makes a name resolvable, and it happens once per log.  A log
altered (a column added to its base) or dropped with its base is announced by its event, which drivers follow
within their refresh window as they follow any other client's DDL; holding every ALTER of a CDC table for up to
two seconds would cost more than it gives.  Nothing is held for other statements, and the check costs a
connection nothing unless a held answer waits for it.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from logtide.result import SchemaChange

from . import messages as M

Connection = Any  # a connection.Connection registered for events (it imports the server, which imports this)

DEFAULT_TIMEOUT = 3.0  # cassandra-driver refreshes on an event within schema_event_refresh_window (2 s)

TableName = tuple[str, str]


@dataclass
class _HeldAnswer:
    """A DDL answer waiting for ``listeners`` to read ``tables``."""

    tables: frozenset[TableName]
    listeners: set["Connection"]
    release: Callable[[], None]
    timer: asyncio.TimerHandle | None = None
    done: bool = False


@dataclass
class _Watch:
    """What one awaited connection still has to read, and its reads in flight that cover some of it."""

    unread: set[TableName] = field(default_factory=set)
    reading: dict[int, frozenset[TableName]] = field(default_factory=dict)  # by id of the statement's job


class SchemaEvents:
    """The connections registered for SCHEMA_CHANGE events and the DDL answers held for them."""

    def __init__(self, db: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.db = db
        self.timeout = timeout
        self.listeners: set["Connection"] = set()
        self._held: list[_HeldAnswer] = []
        self._watches: dict["Connection", _Watch] = {}
        self._slow: weakref.WeakSet["Connection"] = weakref.WeakSet()  # let a timeout pass: not waited for

    # -- listeners ------------------------------------------------------------------------------
    def register(self, conn: "Connection") -> None:
        self.listeners.add(conn)

    def unregister(self, conn: "Connection") -> None:
        """A connection closed: it is not waited for any more."""
        self.listeners.discard(conn)
        self._watches.pop(conn, None)
        for held in list(self._held):
            if conn in held.listeners:
                held.listeners.discard(conn)
                self._settle(held)

    def broadcast(self, change: SchemaChange) -> None:
        """Push a SCHEMA_CHANGE event to every connection that REGISTERed for it."""
        event = M.schema_change_event(change)
        for conn in list(self.listeners):
            if "SCHEMA_CHANGE" in conn.registered:
                conn.push_event(event)

    # -- answers held for listeners ----------------------------------------------------------------
    def announce(self, change: SchemaChange | None, implied: Iterable[SchemaChange], issuer: "Connection",
                 release: Callable[[], None]) -> None:
        """Push the events of a schema change (its own, then the implied ones) and call ``release`` (which sends
        its answer) once the listeners have read the implicitly created tables, or at the timeout; at once when
        nothing was created implicitly or nobody is to be waited for."""
        implied = list(implied)
        for c in ([change] if change is not None else []) + implied:
            self.broadcast(c)
        tables = frozenset((c.keyspace, c.name) for c in implied
                           if c.change_type == "CREATED" and c.target == "TABLE" and c.name and c.hold)
        listeners = {conn for conn in self.listeners
                     if conn is not issuer and not conn.closed and "SCHEMA_CHANGE" in conn.registered
                     and conn not in self._slow}
        if not tables or not listeners:
            release()
            return
        held = _HeldAnswer(tables, listeners, release)
        for conn in listeners:
            self._watches.setdefault(conn, _Watch()).unread |= tables
            conn.awaited += 1
        held.timer = asyncio.get_running_loop().call_later(self.timeout, self._expire, held)
        self._held.append(held)

    def release_all(self) -> None:
        """Send every held answer now (the server is stopping)."""
        for held in list(self._held):
            self._finish(held)

    def _expire(self, held: _HeldAnswer) -> None:
        for conn in held.listeners:
            self._slow.add(conn)
        self._finish(held)

    def _settle(self, held: _HeldAnswer) -> None:
        if not held.listeners:
            self._finish(held)

    def _finish(self, held: _HeldAnswer) -> None:
        if held.done:
            return
        held.done = True
        if held.timer is not None:
            held.timer.cancel()
        if held in self._held:
            self._held.remove(held)
        for conn in held.listeners:
            conn.awaited -= 1
            if not conn.awaited:
                self._watches.pop(conn, None)
        held.listeners = set()
        held.release()

    # -- what awaited connections read ----------------------------------------------------------------
    def dispatched(self, conn: "Connection", job: Any, request: Any) -> None:
        """An awaited connection starts a statement: note which awaited tables it reads from system_schema."""
        watch = self._watches.get(conn)
        query = getattr(request, "query", None)
        if watch is None or query is None:
            return
        covers = read_covers(self.db, query, bool(getattr(getattr(request, "params", None), "values", None)))
        if covers is None:
            return
        covered = frozenset(t for t in watch.unread if covers(*t))
        if covered:
            watch.reading[id(job)] = covered

    def finished(self, conn: "Connection", job: Any, ok: bool) -> None:
        """An awaited connection's statement finished (its answer is queued): a read that covered awaited tables
        counts once it succeeded; the connection has caught up when it has read them all and has nothing else in
        flight."""
        watch = self._watches.get(conn)
        if watch is None:
            return
        covered = watch.reading.pop(id(job), None)
        if covered and ok:
            watch.unread -= covered
            self._slow.discard(conn)  # it refreshes on events after all
        if conn.tasks:
            return
        for held in list(self._held):
            if conn in held.listeners and not (held.tables & watch.unread):
                held.listeners.discard(conn)
                conn.awaited -= 1
                self._settle(held)
        if not conn.awaited:
            self._watches.pop(conn, None)


def read_covers(db: Any, query: str, bound: bool) -> Callable[[str, str], bool] | None:
    """For a SELECT on ``system_schema.tables``: whether its WHERE clause admits the row of a table
    ``(keyspace, name)``; None for any other statement.  A statement with bound values is taken to admit every
    row (drivers send these reads with literals)."""
    from logtide.cql import ast
    from logtide.errors import CqlError
    from logtide.query.evaluate import TermEvaluator
    from logtide.query.restrictions import analyse
    from logtide.schema.system_schema import SYSTEM_SCHEMA, system_keyspaces

    try:
        stmt = db.parse(query).statement
    except CqlError:
        return None
    if not isinstance(stmt, ast.Select) or stmt.table.keyspace != SYSTEM_SCHEMA or stmt.table.name != "tables":
        return None
    if bound:
        return lambda keyspace, name: True
    table = system_keyspaces()[SYSTEM_SCHEMA].tables["tables"]
    try:
        kr = analyse(table, stmt.where, TermEvaluator(db.functions, None))
    except CqlError:
        return None
    keyspaces = None if kr.partition_keys is None else {k[0].decode("utf-8") for k in kr.partition_keys}
    prefixes = [p for p in kr.clustering_prefixes if p]
    names = {p[0].decode("utf-8") for p in prefixes} if prefixes else None
    return lambda keyspace, name: ((keyspaces is None or keyspace in keyspaces)
                                   and (names is None or name in names))
