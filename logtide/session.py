"""The embedded API: ``logtide.open(path)`` gives a Database; ``db.session()`` executes CQL.

A write statement or batch is one atomic storage commit: its mutation is
built (reading first where CQL requires: list indices, counters, conditions)
and applied inside one write transaction, serialized by the database's write
lock.  Reads run on per-thread snapshots and never wait for writers.  The
stages themselves are the engine's (``logtide.engine``, docs/architecture.md
"A write" and "A read"); this module checks, binds and delegates.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

from .clock import Clock
from .cql import ast
from .cdc.streams import Topology
from .engine.commit import (STATEMENT_FAILURES, WriteJob, check_params, committed_event,  # noqa: F401 - re-exported
                            engine_error, statement_error)
from .engine.database import Engine
from .engine.ddl import describe, describe_cluster, drop_time_bound, execute_ddl, truncate
from .engine.config_update import check_truncatable
from .engine.prepare import PreparedStatement, check_timeouts, prepare, result_columns_of, shortened  # noqa: F401 - PreparedStatement re-exported
from .engine.plan import DDL, DML, ROLE_STATEMENTS, WRITES, check_batch, is_write, write_job  # noqa: F401
from .schema.system_schema import is_system_keyspace
from .engine.select import select
from .engine.touched import TxnRowReader  # noqa: F401 - re-exported: the read-before-write of a write transaction
from .errors import CqlError, InvalidRequest
from .failures import open_failure
from .query.evaluate import TermEvaluator
from .query.timeout import Deadline
from .result import ResultSet
from .schema.model import Table
from .tracing import TracingSession


class Database(Engine):
    """An open data directory (``engine.database.Engine``: storage, the catalog, clocks, functions, CDC and
    changefeeds) and the sessions that execute CQL in it."""

    def session(self, keyspace: str | None = None, user: str | None = None) -> "Session":
        """A new session, optionally starting in ``keyspace``, optionally acting as an authenticated ``user``."""
        s = Session(self, user)
        if keyspace:
            s.execute(f'USE "{keyspace}"' if keyspace != keyspace.lower() else f"USE {keyspace}")
        return s


def open(path: str | Path, clock: Clock | None = None, synchronous: str = "FULL",  # noqa: A001
         topology: Topology | None = None, readonly: bool = False, create: bool = True) -> Database:
    """Open (or create) a logtide data directory for reading and writing.

    ``topology`` (vnodes and shards) shapes the CDC streams; giving one that
    differs from the stored topology starts a new CDC generation.

    ``readonly=True`` opens a directory that must exist, even one a running
    writer (``logtide serve``) holds: every read is a consistent snapshot of
    what was committed when it started, writes raise ``ReadOnlyDatabase``,
    and the schema is the one stored when the database was opened.
    ``create=False`` refuses (``NoDatabase``) a directory that holds no
    logtide database instead of creating one (``docs/durability.md``)."""
    try:
        return Database(path, clock=clock, synchronous=synchronous, topology=topology, readonly=readonly,
                        create=create)
    except (sqlite3.Error, OSError) as e:  # the embedded API raises only logtide errors
        raise open_failure(path, e) from None


class Session:
    """Executes CQL statements against a Database, keeping the current keyspace.

    With ``user`` (a role authenticated by the server), every statement is
    first authorized by ``db.auth``.
    """

    def __init__(self, db: Database, user: str | None = None) -> None:
        self.db = db
        self.keyspace: str | None = None
        self.user = user
        self._call = threading.local()  # per-call settings (the server may run one session's statements in parallel)

    def _now(self) -> int:
        """The current time in seconds for this statement: the client's ``now_in_seconds`` or the clock's."""
        override = getattr(self._call, "now", None)
        return self.db.now_seconds() if override is None else override

    def _authorize(self, stmt: Any) -> None:
        if self.user is None:
            return
        auth = getattr(self.db, "auth", None)
        if auth is not None:
            auth.authorize(self.user, stmt, self.keyspace)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Sessions hold no resources of their own; closing the Database closes storage."""

    # ------------------------------------------------------------------
    def prepare(self, query: str) -> PreparedStatement:
        """Parse a statement once for repeated execution with bound values (``engine.prepare.prepare``)."""
        return prepare(self, query)

    def execute(self, query: str | PreparedStatement, params: Sequence[Any] | Mapping[str, Any] | None = None,
                timestamp: int | None = None, page_size: int | None = None,
                paging_state: bytes | None = None, now_in_seconds: int | None = None,
                trace: TracingSession | None = None) -> ResultSet:
        """Execute one statement.

        ``params`` binds ``?``/``:name`` markers; ``timestamp`` is a client
        timestamp (the write timestamp unless the statement says USING
        TIMESTAMP); ``page_size``/``paging_state`` page through a SELECT
        (the result's ``paging_state`` is None on the last page);
        ``now_in_seconds`` replaces the clock for TTL expiry (protocol v5's
        ``now_in_seconds``): what is live for a read, when a TTL ends for a write;
        ``trace`` (a ``logtide.tracing.TracingSession``) records the stages of a traced request.
        """
        if trace is not None and isinstance(query, str):
            trace.event(f"Parsing {shortened(query)}")
        parsed = self._checked(query, params)
        if trace is not None:
            trace.event(f"Preparing {type(parsed.statement).__name__} statement")
        self._call.now = now_in_seconds
        try:
            if self.db.plain_write(parsed.statement):  # no USING TIMEOUT, no condition: straight to the write
                return self._write([parsed.statement], [self._evaluator(params)], timestamp, None, (), trace)
            deadline = check_timeouts(self, parsed.statement, params)
            if isinstance(parsed.statement, ast.Select):
                return select(self, parsed.statement, params, page_size, paging_state, trace, deadline)
            return self._execute(parsed.statement, params, timestamp, trace, deadline)
        except CqlError:
            raise
        except STATEMENT_FAILURES as e:
            raise statement_error(e, reading=isinstance(parsed.statement, (ast.Select, ast.Describe))) from None
        finally:
            self._call.now = None

    def plan_write(self, query: str | PreparedStatement, params: Sequence[Any] | Mapping[str, Any] | None = None,
                   timestamp: int | None = None, now_in_seconds: int | None = None) -> "WriteJob | None":
        """A write statement (INSERT, UPDATE, DELETE, BATCH) checked and bound as ``execute`` would run it, as a
        ``WriteJob`` for a caller that commits writes itself (``GroupCommitter.run_group``: the server's
        committer); None for any other statement.  Raises what ``execute`` raises before writing."""
        parsed = query.parsed if isinstance(query, PreparedStatement) else self.db.parse(query)
        stmt = parsed.statement
        if not is_write(stmt):
            return None
        self._checked(parsed, params)
        try:
            if self.db.plain_write(stmt):  # no USING TIMEOUT, no condition, not a batch: as in execute
                return write_job(self, [stmt], [self._evaluator(params)], timestamp, None, now_in_seconds, ())
            deadline = check_timeouts(self, stmt, params)
            ev = self._evaluator(params)
            if isinstance(stmt, ast.Batch):
                check_batch(self, stmt)
                return write_job(self, list(stmt.statements), [ev] * len(stmt.statements), timestamp, stmt,
                                 now_in_seconds, deadline=deadline)
            return write_job(self, [stmt], [ev], timestamp, None, now_in_seconds, deadline=deadline)
        except CqlError:
            raise
        except STATEMENT_FAILURES as e:
            raise statement_error(e, reading=False) from None

    def _checked(self, query: str | PreparedStatement | ast.Parsed, params: Any) -> ast.Parsed:
        """The parsed statement, its bound values checked against its markers, authorized for this session."""
        if isinstance(query, PreparedStatement):
            parsed = query.parsed
        elif isinstance(query, str):
            parsed = self.db.parse(query)
        else:
            parsed = query
        check_params(params)
        if parsed.bind_markers:
            if params is None and isinstance(parsed.statement, ast.Select):
                # a selector's own error first (``SELECT ?``: its type cannot be inferred), as a prepare finds it
                result_columns_of(self, parsed.statement, self._table(parsed.statement.table))
            if params is None:
                raise InvalidRequest(f"Statement has {len(parsed.bind_markers)} bind markers but no values were given")
            if (type(params) in (list, tuple) or not isinstance(params, Mapping)) and len(params) != len(parsed.bind_markers):
                raise InvalidRequest(f"There were {len(parsed.bind_markers)} markers(?) in CQL but "
                                     f"{len(params)} bound variables")
        self._authorize(parsed.statement)
        return parsed

    # ------------------------------------------------------------------
    def _evaluator(self, params: Any) -> TermEvaluator:
        return TermEvaluator(self.db.functions, params, keyspace=self.keyspace, permit=self._permit())

    def _permit(self) -> Any:
        """The check of EXECUTE on each user-defined function a statement calls (None: nothing to check)."""
        auth = getattr(self.db, "auth", None)
        if self.user is None or auth is None or auth.is_superuser(self.user):
            return None
        user = self.user
        return lambda fn: auth.ensure_execute(user, fn)

    def _execute(self, stmt: Any, params: Any, client_ts: int | None, trace: TracingSession | None = None,
                 deadline: Deadline | None = None) -> ResultSet:
        if isinstance(stmt, ast.Select):
            return select(self, stmt, params, trace=trace, deadline=deadline)
        if isinstance(stmt, DML):
            return self._write([stmt], [self._evaluator(params)], client_ts, None, trace=trace, deadline=deadline)
        if isinstance(stmt, ast.Batch):
            return self._batch(stmt, params, client_ts, trace, deadline)
        if isinstance(stmt, ast.UseKeyspace):
            self.db.catalog.keyspace(stmt.name) if not is_system_keyspace(stmt.name) else None
            self.keyspace = stmt.name
            return ResultSet("set_keyspace", keyspace=stmt.name)
        if isinstance(stmt, DDL):
            if isinstance(stmt, ast.AlterTableDrop) and stmt.timestamp is not None:
                stmt = drop_time_bound(self._evaluator(params), stmt)
            return execute_ddl(self.db, self.user, self.keyspace, stmt, trace)
        if isinstance(stmt, ast.CHANGEFEED_STATEMENTS):
            from .changefeed.ddl import execute as changefeed_ddl
            return changefeed_ddl(self, stmt)
        if isinstance(stmt, ast.Truncate):
            table = self._table(stmt.table)
            check_truncatable(table)
            return truncate(self.db, table, deadline)
        if isinstance(stmt, ast.Describe) and stmt.kind == "cluster":
            from .engine.select import _node_info
            return describe_cluster(self.db.catalog, self.keyspace, _node_info(self))
        if isinstance(stmt, ast.Describe):
            auth_rows = None
            if stmt.internals and stmt.kind in ("schema", "full schema"):
                from . import auth
                auth_rows = auth.of(self.db).describe_rows(self.user, stmt.passwords)
            return describe(self.db.catalog, self.keyspace, stmt, auth_rows)
        # -- role and permission statements: delegated to logtide.auth (server engineer) --
        if isinstance(stmt, ROLE_STATEMENTS):
            from . import auth
            return auth.of(self.db).execute(stmt, self)
        raise InvalidRequest(f"{type(stmt).__name__} statements are not supported by the embedded engine")

    def _table(self, name: ast.QualifiedName) -> Table:
        ks = name.keyspace or self.keyspace
        if ks is None:
            raise InvalidRequest("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
        return self.db.catalog.table(ks, name.name)

    # -- writes -----------------------------------------------------------
    def _write(self, stmts: Sequence[Any], evs: Sequence[TermEvaluator], client_ts: int | None,
               batch: ast.Batch | None, conditional: Sequence[Any] | None = None,
               trace: TracingSession | None = None, deadline: Deadline | None = None) -> ResultSet:
        """Build and commit the mutation of one statement or batch (``evs``: one evaluator per statement;
        ``conditional``: the statements with conditions, when the caller knows them; ``deadline``: its
        ``USING TIMEOUT``)."""
        job = write_job(self, stmts, evs, client_ts, batch, getattr(self._call, "now", None), conditional, trace,
                        deadline)
        return self._commit(job, trace)

    def _commit(self, job: "WriteJob", trace: TracingSession | None) -> ResultSet:
        """Run a write job through the group committer: its result (or its error, raised)."""
        if trace is None:
            return job.result(self.db.committer.run(job.work))
        trace.event("Waiting for the write lock (group commit)")
        result = job.result(self.db.committer.run(job.work))
        trace.event(committed_event(self.db.store.synchronous))
        return result

    def execute_batch(self, kind: str, statements: Sequence[tuple[str | PreparedStatement, Any]],
                      timestamp: int | None = None, now_in_seconds: int | None = None,
                      trace: TracingSession | None = None) -> ResultSet:
        """Execute a batch given as (statement, bound values) pairs, as the native protocol's BATCH message.

        ``kind`` is LOGGED, UNLOGGED or COUNTER; each statement is an INSERT,
        UPDATE or DELETE text or prepared statement with its own values.
        """
        self._call.now = now_in_seconds
        try:
            return self._commit(self.plan_batch(kind, statements, timestamp, now_in_seconds, trace), trace)
        except CqlError:
            raise
        except STATEMENT_FAILURES as e:
            raise statement_error(e, reading=False) from None
        finally:
            self._call.now = None

    def plan_batch(self, kind: str, statements: Sequence[tuple[str | PreparedStatement, Any]],
                   timestamp: int | None = None, now_in_seconds: int | None = None,
                   trace: TracingSession | None = None) -> "WriteJob":
        """``execute_batch``'s batch checked and bound, as a ``WriteJob`` (see ``plan_write``)."""
        parsed = []
        evs = []
        for query, params in statements:
            check_params(params)
            p = query.parsed if isinstance(query, PreparedStatement) else self.db.parse(query)
            if not isinstance(p.statement, DML):
                raise InvalidRequest("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.")
            self._authorize(p.statement)
            parsed.append(p.statement)
            evs.append(self._evaluator(params))
        batch = ast.Batch(kind.upper(), tuple(parsed))
        check_batch(self, batch)
        if trace is not None:
            trace.event(f"Preparing {kind.upper()} batch of {len(parsed)} statement(s)")
        return write_job(self, parsed, evs, timestamp, batch, now_in_seconds, trace=trace)

    def _batch(self, stmt: ast.Batch, params: Any, client_ts: int | None,
               trace: TracingSession | None = None, deadline: Deadline | None = None) -> ResultSet:
        check_batch(self, stmt)
        ev = self._evaluator(params)
        return self._write(list(stmt.statements), [ev] * len(stmt.statements), client_ts, stmt, trace=trace,
                           deadline=deadline)
