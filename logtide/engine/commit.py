"""Write stages 3.5 to 3.8, capture, the CDC log, apply and the changefeeds' records: a built mutation and its logs into the write
transaction.

``commit_mutation`` is the one place where a write's logs and derived rows are made: the capture stage
(``engine.capture``) reads the touched rows' preimages once, the ScyllaDB CDC log's rows are derived from them
(``cdc.capture.log_appends``), the mutation is merged with its log rows (``mutation.apply``), which records the
rows as it leaves them, and each touched row's before and after (``TouchedRow``) is handed to the materialized
views (``engine.views``), the secondary indexes (``engine.indexes``) and the changefeeds, whose changes are
derived (``changefeed.changes``) and stored (``Feeds.store``).  ``WriteJob`` is a statement or batch waiting for its commit in the group committer
(``storage.group_commit``); the errors a statement raises are mapped here.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..cdc.capture import log_appends
from ..errors import CqlError, InvalidRequest
from ..failures import storage_failure
from ..mutation.apply import apply_mutation
from ..mutation.model import Mutation
from ..result import ColumnSpec, ResultSet, Row
from ..schema import types as T
from ..schema.model import Table
from ..storage.sqlite import Txn
from ..tracing import TracingSession
from .capture import feed_changes, read_after, read_before
from .touched import TouchedRows
from .views import update_views


def commit_mutation(db: Any, mutation: Mutation, txn: Txn, now: int, trace: TracingSession | None = None) -> None:
    """Write stages 3.5 to 3.8 of a built mutation in ``txn`` (the caller holds the write lock; ``db`` is the
    ``engine.database.Engine``): capture the touched rows' preimages (``capture.read_before``), derive the CDC
    log rows from them (``cdc.capture.log_appends``), apply the mutation with its log rows (``mutation.apply``),
    then pair each captured row with its postimage (``capture.read_after``), and hand that one list of touched
    rows to the materialized views (``views.update_views``), the secondary indexes
    (``SecondaryIndexes.update_entries``) and the changefeeds (``capture.feed_changes``, ``Feeds.store``);
    ``trace`` records the stages of a traced request."""
    touched = TouchedRows(txn)  # each touched row read once, shared by the CDC log, changefeeds, views and indexes
    captures = read_before(db, mutation, touched)
    log_updates = log_appends(mutation, touched.before, db.catalog, db.generations, db.cdc_timeuuids, now,
                              db.clock.now_micros(), db.log_targets)
    feeds = captures is not None and any(c.feed is not None for c in captures)
    if trace is not None:
        trace_capture(trace, log_updates, feeds)
    apply_mutation(mutation, txn, now, log_updates, touched)
    db.counters.committed(sum([len(lu.rows) for lu in log_updates]) if log_updates else 0)
    if trace is not None:
        trace.event("Rows appended to the write transaction" + (" with their CDC log rows" if log_updates else ""))
    if captures is None:
        return
    images = read_after(captures, touched)
    # the derived tables and the changefeeds consume ``images``: each touched row's preimage and postimage
    # (``TouchedRow``), in the base write's transaction
    update_views(txn, images, now, trace)
    db.indexes.update_entries(images, txn, now)
    if feeds:
        first = db.feeds.sequence() if trace is not None else 0
        db.feeds.store(txn, feed_changes(images, now))
        if trace is not None:
            trace.event(f"Changefeeds: {db.feeds.sequence() - first} record(s) appended")


def committed_event(synchronous: str) -> str:
    """The trace event of a commit: what the commit waited for."""
    if synchronous == "FULL":
        return "Write transaction committed and synced to disk (synchronous=FULL)"
    if synchronous == "NORMAL":
        return "Write transaction committed to the WAL, synced at the next checkpoint (synchronous=NORMAL)"
    return "Write transaction committed, not synced (synchronous=OFF)"


def trace_capture(trace: TracingSession, log_updates: Sequence[Any], feeds: bool) -> None:
    """The trace events of the CDC capture of one write (none for tables without CDC) and of the changefeeds' read."""
    if log_updates:
        rows = sum(len(lu.rows) for lu in log_updates)
        logs = sorted({f"{lu.table.keyspace}.{lu.table.name}" for lu in log_updates})
        trace.event(f"CDC: {rows} log row(s) in {len({lu.stream_id for lu in log_updates})} stream(s) of "
                    + ", ".join(logs))
    if feeds:
        trace.event("Changefeeds: the rows the write touches are read for their images")



def check_params(params: Any) -> None:
    """Bound values must be None, a sequence (not a string) or a mapping: InvalidRequest otherwise."""
    if params is None or type(params) in (list, tuple, dict):  # the common cases, without the ABC checks
        return
    if isinstance(params, Mapping):
        return
    if not isinstance(params, Sequence) or isinstance(params, (str, bytes, bytearray)):
        raise InvalidRequest(f"Bound values must be a sequence (list, tuple) or a mapping of names, "
                             f"not {type(params).__name__}")


STATEMENT_FAILURES = (RecursionError, sqlite3.Error, OSError, UnicodeEncodeError)  # what statement_error maps


def statement_error(exc: BaseException, reading: bool) -> BaseException:
    """What a statement that raised ``exc`` raises to its caller: a deeply nested statement is an InvalidRequest,
    SQLite and OS errors the engine's (``engine_error``), anything else itself."""
    if isinstance(exc, RecursionError):
        return InvalidRequest(f"Statement is too deeply nested: {exc}")
    if isinstance(exc, (sqlite3.Error, OSError, UnicodeEncodeError)):
        return engine_error(exc, reading)
    return exc




@dataclass(frozen=True)
class WriteJob:
    """A write statement or batch checked and bound, waiting for its commit (docs/architecture.md "A write").

    ``work(txn)`` builds and applies its mutation inside a write transaction
    (a group commit's savepoint) and returns a lightweight transaction's
    result (its ``[applied]`` row with the previous values), else None; ``result`` is
    the statement's result from that, ``failure`` the error it raises for an
    exception of ``work`` or of its commit, both as ``Session.execute`` would.
    """

    work: Callable[[Txn], ResultSet | None]
    conditional: Table | None = None  # a lightweight transaction's table: its result is the [applied] row
    warnings: list[str] = field(default_factory=list)  # filled by work: a batch's size warning

    def result(self, not_applied: ResultSet | None) -> ResultSet:
        if not_applied is not None:
            result = not_applied
        elif self.conditional is not None:
            t = self.conditional
            result = ResultSet("rows", (ColumnSpec(t.keyspace, t.name, "[applied]", T.BOOLEAN),),
                               [Row(("[applied]",), [True])])
        else:
            result = ResultSet("void")
        result.warnings.extend(self.warnings)
        return result

    @staticmethod
    def failure(exc: BaseException) -> BaseException:
        return exc if isinstance(exc, CqlError) else statement_error(exc, reading=False)


def engine_error(exc: BaseException, reading: bool) -> CqlError:
    """The logtide error for a non-logtide exception escaping a statement."""
    if isinstance(exc, UnicodeEncodeError):
        bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
        return InvalidRequest(f"Invalid text value: {bad!r} at position {exc.start} cannot be encoded as UTF-8 "
                              f"({exc.reason})")
    return storage_failure(exc, reading)
