"""The embedded API: ``logtide.open(path)`` gives a Database; ``db.session()`` executes CQL.

A write statement or batch is one atomic storage commit: its mutation is
built (reading first where CQL requires: list indices, counters, conditions)
and applied inside one write transaction, serialized by the database's write
lock.  Reads run on per-thread snapshots and never wait for writers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import sqlite3
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .counters import WriteCounters
from .clock import Clock, SystemClock, TimestampSource
from .cql import ast, parse
from .errors import CqlError, InvalidRequest
from .failures import open_failure, storage_failure
from .cdc import log_schema
from .capture import TouchedRows
from .cdc.capture import CdcTimeuuids, LogTargets, capture
from .query.timeout import check_timeout
from .cdc.streams import FIRST_GENERATION_START, Generation, Generations, Topology, build_generation, node_tokens
from .mutation.apply import apply_mutation, read_partition, read_row
from .mutation.builder import ListKeys, RowReader, WriteContext, build, check_batch_size
from .mutation.cells import Cell
from .mutation.model import Mutation
from .query.bind import BindCollector
from .query.evaluate import TermEvaluator
from .query.functions import FunctionRegistry, TimeuuidSource
from .query.read import live_row, live_values
from .query.select import SelectContext, StoredSource, VirtualSource, execute_select
from .result import ColumnSpec, ResultSet, Row, SchemaChange
from .schema import types as T
from .schema.catalog import Catalog
from .schema.model import Column, Table
from .storage.group_commit import GroupCommitter
from .storage.sqlite import Store, Txn
from .tracing import TraceStore, TracingSession

CATALOG_KEY = "catalog"
HOST_ID_KEY = "host_id"

DDL = (ast.CreateKeyspace, ast.AlterKeyspace, ast.DropKeyspace, ast.CreateTable, ast.AlterTableAdd,
       ast.AlterTableDrop, ast.AlterTableRename, ast.AlterTableWith, ast.AlterTableAlterType, ast.DropTable,
       ast.CreateType, ast.AlterTypeAdd, ast.AlterTypeRename, ast.DropType, ast.CreateFunction, ast.CreateAggregate)
DML = (ast.Insert, ast.Update, ast.Delete)
WRITES = (*DML, ast.Batch)
ROLE_STATEMENTS = (ast.CreateRole, ast.AlterRole, ast.DropRole, ast.ListRoles, ast.Grant, ast.Revoke,
                   ast.ListPermissions)


_NO_COMPLEX: dict = {}  # query.read.complex_plan of a table without non-frozen collections


class TxnRowReader(RowReader):
    """Reads the live state of rows inside a write transaction (read-before-write)."""

    def __init__(self, txn: Txn, now: int) -> None:
        self.txn = txn
        self.now = now

    def row(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool):
        """The live row (or static row) as it is now, or None."""
        part = read_partition(self.txn, table, token, pk)
        if part is None:
            return None
        if static:
            if part.static is None:
                return None
            return live_row(table, part.static, part.deletion, self.now, part.key, b"", static=True)
        row = read_row(self.txn, table, token, pk, ck)
        if row is None:
            return None
        return live_row(table, row, part.row_deletion(ck), self.now, part.key, ck)

    def values(self, table: Table, pk: bytes, token: int, ck: bytes) -> tuple[dict[str, bytes | None], Any] | None:
        """The live atomic values of a clustered row as it is now, and its live row marker (None when the
        marker is not live), or None when nothing of the row is live: :meth:`row` for values only, for a
        table without non-frozen collections (``query.read.live_values``; the CDC log's one pass for plain
        upserts, ``cdc/upsert.py``)."""
        part = read_partition(self.txn, table, token, pk)
        if part is None:
            return None
        row = read_row(self.txn, table, token, pk, ck)
        if row is None:
            return None
        return live_values(table, row, part.row_deletion(ck), self.now, _NO_COMPLEX)

    def live_complex(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> list[tuple[bytes, Cell]]:
        lr = self.row(table, pk, token, ck, column.is_static)
        return [] if lr is None else lr.complex.get(column.name, [])

    def live_cell(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> Cell | None:
        lr = self.row(table, pk, token, ck, column.is_static)
        return None if lr is None else lr.cells.get(column.name)


@dataclass
class PreparedStatement:
    """A parsed statement ready to execute with bound values (``?`` or ``:name`` markers).

    ``bind_specs`` names and types each marker as Cassandra's prepared
    metadata does; ``pk_indexes`` gives the markers of the partition key
    columns (for token-aware routing); ``result_columns`` the columns of a
    SELECT's result.
    """

    query_string: str
    parsed: ast.Parsed
    keyspace: str | None
    id: bytes = b""
    bind_specs: tuple[ColumnSpec, ...] = ()
    pk_indexes: tuple[int, ...] = ()
    result_columns: tuple[ColumnSpec, ...] | None = None

    @property
    def bind_count(self) -> int:
        return len(self.parsed.bind_markers)


class Database:
    """An open data directory: storage, the schema catalog, clocks and functions."""

    def __init__(self, path: str | Path, clock: Clock | None = None, synchronous: str = "FULL",
                 topology: Topology | None = None, readonly: bool = False, create: bool = True) -> None:
        self.path = Path(path)
        self.clock = clock or SystemClock()
        self.readonly = readonly
        self.store = Store.open(self.path, readonly=readonly, synchronous=synchronous, create=create)
        try:
            self._start(topology)
        except BaseException:  # a full disk, a damaged file: release the directory (its lock) again
            self.store.close()
            raise

    def _start(self, topology: Topology | None) -> None:
        """Load the catalog, the host id and the CDC generations (may write: a new directory)."""
        self.timestamps = TimestampSource(self.clock)
        self.list_keys = ListKeys(self.clock.now_micros)
        self.timeuuids = TimeuuidSource(self.clock.now_micros)
        self.functions = FunctionRegistry(self.timeuuids, self.clock.now_micros)
        self.write_lock = threading.RLock()
        self.committer = GroupCommitter(self.store, self.write_lock)
        self.counters = WriteCounters()  # read by the server's metrics
        self.traces = TraceStore(self.clock.now_micros)  # system_traces (logtide.tracing): the server's traced requests
        self._parse_cache: OrderedDict[str, ast.Parsed] = OrderedDict()
        self._parse_lock = threading.Lock()
        self._plain_writes: dict[int, tuple[Any, bool]] = {}  # plain_write by statement identity
        with self.store.snapshot() as txn:
            doc = txn.get_meta(CATALOG_KEY)
            host = txn.get_meta(HOST_ID_KEY)
        self.catalog = Catalog.from_json(doc.decode()) if doc else Catalog.empty()
        if host is None and self.readonly:
            host = uuid.UUID(int=0).bytes  # never written: nothing in a read-only database needs it
        elif host is None:
            host = uuid.uuid4().bytes
            with self.store.write() as wtxn:
                wtxn.put_meta(HOST_ID_KEY, host)
        self.host_id = uuid.UUID(bytes=host)
        self.cdc_timeuuids = CdcTimeuuids()
        self.log_targets = LogTargets()
        self._changefeeds_in: tuple[Catalog, bool] | None = None  # _has_changefeeds of one catalog
        self.generations = self._load_generations(topology)
        self._closed = False
        from .changefeed.feeds import Feeds
        from .changefeed.reader import DatabaseTopicReader
        self.feeds = Feeds(self)
        self.changefeeds = DatabaseTopicReader(self)  # the changefeed topic reader (logtide.changefeed.api)
        self.committer.on_commit = self.feeds.notify
        self.committer.on_abort = self.feeds.forget_offsets
        self.feeds.ensure_worker()

    def _load_generations(self, topology: Topology | None) -> Generations:
        """The CDC generations; a new one when the configured topology differs from the current one.

        The first generation starts at 1970-01-01 00:00:00.001 so that it
        covers every past write (not at 0: scylla-cdc-java finds the first
        generation with ``time > 0``); a later one starts one second after it is created, and the
        previous one expires then (writes are routed by their timestamp, so
        none is lost across the switch)."""
        with self.store.snapshot() as txn:
            doc = txn.get_meta(Generations.META_KEY)
        gens = Generations.from_json(doc.decode()) if doc else None
        if gens is not None and (self.readonly or topology is None or gens.current.topology == topology):
            return gens
        topo = topology or Topology()
        rng = random.Random(self.host_id.int ^ (len(gens.generations) if gens else 0))
        tokens = node_tokens(topo.vnodes, rng)
        if gens is None:
            gens = Generations([build_generation(topo, tokens, FIRST_GENERATION_START, rng)])
        else:
            # a whole millisecond: the generation tables hold milliseconds, and a consumer switches
            # generations at exactly that time, so routing must switch there too
            start = (self.clock.now_micros() // 1000 + 1000) * 1000
            last = gens.current
            old = Generation(last.timestamp, last.range_ends, last.streams, last.topology, start)
            gens = Generations(gens.generations[:-1] + [old, build_generation(topo, tokens, start, rng)])
        if self.readonly:
            return gens  # a database never written to: its first generation, as a writer would make it
        with self.store.write() as wtxn:
            wtxn.put_meta(Generations.META_KEY, gens.to_json().encode())
        return gens

    # ------------------------------------------------------------------
    def session(self, keyspace: str | None = None, user: str | None = None) -> "Session":
        """A new session, optionally starting in ``keyspace``, optionally acting as an authenticated ``user``."""
        s = Session(self, user)
        if keyspace:
            s.execute(f'USE "{keyspace}"' if keyspace != keyspace.lower() else f"USE {keyspace}")
        return s

    def parse(self, text: str) -> ast.Parsed:
        """Parse with a small cache of recent statements."""
        with self._parse_lock:
            p = self._parse_cache.get(text)
            if p is not None:
                self._parse_cache.move_to_end(text)
                return p
        p = parse(text)
        with self._parse_lock:
            self._parse_cache[text] = p
            if len(self._parse_cache) > 512:
                self._parse_cache.popitem(last=False)
        return p

    def now_seconds(self) -> int:
        return self.clock.now_micros() // 1_000_000

    def apply_mutation(self, mutation: Mutation) -> None:
        """Commit a mutation built elsewhere (cells carry their own timestamps), logging it if CDC is on."""
        def work(txn: Txn) -> None:
            now = self.now_seconds()
            self.commit_mutation(mutation, txn, now, TxnRowReader(txn, now))
        self.committer.run(work)

    def commit_mutation(self, mutation: Mutation, txn: Txn, now: int, reader: TxnRowReader,
                        trace: TracingSession | None = None) -> None:
        """Write a mutation and its CDC log rows in ``txn`` (the caller holds the write lock); ``trace`` records
        the stages of a traced request."""
        touched = TouchedRows(reader.row, now)  # read once, shared by the CDC log and the changefeeds
        feed_rows = self.feeds.capture_before(mutation, touched, txn, now) if self._has_changefeeds() else None
        log_updates = capture(mutation, self.catalog, self.generations, touched.row, self.cdc_timeuuids, now,
                              self.clock.now_micros(), self.log_targets,
                              reader.values if feed_rows is None else None)  # with feeds: the rows they read
        if trace is not None:
            _trace_capture(trace, log_updates, feed_rows is not None)
        touched.record_after = feed_rows is not None  # a changefeed's new images: no read after the write
        apply_mutation(mutation, txn, now, log_updates, touched)
        self.counters.committed(sum([len(lu.rows) for lu in log_updates]) if log_updates else 0)
        if trace is not None:
            trace.event("Rows appended to the write transaction" + (" with their CDC log rows" if log_updates else ""))
        if feed_rows is not None:
            first = self.feeds.sequence() if trace is not None else 0
            self.feeds.capture_after(feed_rows, touched, reader.row, txn)
            if trace is not None:
                trace.event(f"Changefeeds: {self.feeds.sequence() - first} record(s) appended")

    def plain_write(self, stmt: Any) -> bool:
        """Whether ``stmt`` is an INSERT, UPDATE or DELETE without a condition and without ``USING TIMEOUT``
        (decided once per statement object: a prepared statement executes the same one again and again)."""
        hit = self._plain_writes.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            return hit[1]
        plain = (isinstance(stmt, DML) and not _is_conditional(stmt)
                 and getattr(stmt.using, "timeout", None) is None)
        with self._parse_lock:
            if len(self._plain_writes) >= 1024:
                self._plain_writes.clear()
            self._plain_writes[id(stmt)] = (stmt, plain)
        return plain

    def _has_changefeeds(self) -> bool:
        """Whether a table of the current catalog has a changefeed (checked once per catalog): without one,
        ``Feeds.capture_before`` finds nothing to capture for any write."""
        cat = self.catalog
        hit = self._changefeeds_in
        if hit is None or hit[0] is not cat:
            hit = self._changefeeds_in = (cat, any(t.changefeeds for ks in cat.keyspaces.values()
                                                   for t in ks.tables.values()))
        return hit[1]

    def close(self) -> None:
        """Close storage and release the data directory."""
        if not self._closed:
            self._closed = True
            self.feeds.close()
            self.store.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


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
        """Parse a statement once for repeated execution with bound values, with its bind and result metadata."""
        parsed = self.db.parse(query)
        stmt = parsed.statement
        if isinstance(stmt, ast.UseKeyspace):
            self._authorize(stmt)
        # permissions are checked when a statement runs, not when it is prepared (Cassandra and ScyllaDB)
        collector = BindCollector(self._table, self._infer_call)
        collector.statement(stmt)
        table = self._table(stmt.table) if isinstance(stmt, (ast.Insert, ast.Update, ast.Delete, ast.Select)) else None
        result_columns = None
        if isinstance(stmt, ast.Select):
            markers: dict[int, tuple[str, Any]] = {}  # the markers the selectors type (f(?), m[?])
            result_columns = self._result_columns(stmt, table, markers)
            for index, (name, ctype) in markers.items():
                if index not in collector.specs and table is not None:
                    collector.specs[index] = ColumnSpec(table.keyspace, table.name, name, ctype)
        specs, pk_indexes = collector.result(len(parsed.bind_markers), table)
        digest = hashlib.md5(((self.keyspace or "") + "\x00" + query).encode()).digest()
        return PreparedStatement(query, parsed, self.keyspace, digest, specs, pk_indexes, result_columns)

    def _infer_call(self, fc: ast.FunctionCall):
        ev = self._evaluator(None)
        return self.db.functions.resolve(fc.name, [ev.infer_type(a) for a in fc.args], fc.args)

    def _result_columns(self, stmt: ast.Select, table: Table | None,
                        markers: dict[int, tuple[str, Any]] | None = None) -> tuple[ColumnSpec, ...] | None:
        """The result columns of a SELECT, its selectors compiled as its execution will (their errors are the
        statement's, as in ScyllaDB's prepare); ``markers`` receives the bind markers the selectors type."""
        from .query.select import result_columns
        if table is None:
            return None
        ev = TermEvaluator(self.db.functions, None, {} if markers is None else markers)
        ctx = SelectContext(table, ev, self.db.now_seconds(), VirtualSource([]))
        return result_columns(stmt, table, ctx)

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
            trace.event(f"Parsing {_shortened(query)}")
        parsed = self._checked(query, params)
        if trace is not None:
            trace.event(f"Preparing {type(parsed.statement).__name__} statement")
        self._call.now = now_in_seconds
        try:
            if self.db.plain_write(parsed.statement):  # no USING TIMEOUT, no condition: straight to the write
                return self._write([parsed.statement], [self._evaluator(params)], timestamp, None, (), trace)
            self._check_timeouts(parsed.statement, params)
            if isinstance(parsed.statement, ast.Select):
                return self._select(parsed.statement, params, page_size, paging_state, trace)
            return self._execute(parsed.statement, params, timestamp, trace)
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
                return self._write_job([stmt], [self._evaluator(params)], timestamp, None, now_in_seconds, ())
            self._check_timeouts(stmt, params)
            ev = self._evaluator(params)
            if isinstance(stmt, ast.Batch):
                self._check_batch(stmt)
                return self._write_job(list(stmt.statements), [ev] * len(stmt.statements), timestamp, stmt,
                                       now_in_seconds)
            return self._write_job([stmt], [ev], timestamp, None, now_in_seconds)
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
                self._result_columns(parsed.statement, self._table(parsed.statement.table))
            if params is None:
                raise InvalidRequest(f"Statement has {len(parsed.bind_markers)} bind markers but no values were given")
            if (type(params) in (list, tuple) or not isinstance(params, Mapping)) and len(params) != len(parsed.bind_markers):
                raise InvalidRequest(f"There were {len(parsed.bind_markers)} markers(?) in CQL but "
                                     f"{len(params)} bound variables")
        self._authorize(parsed.statement)
        return parsed

    def _check_timeouts(self, stmt: Any, params: Any) -> None:
        """ScyllaDB's ``USING TIMEOUT``: checked, then ignored (see logtide.query.timeout)."""
        for s in (stmt, *getattr(stmt, "statements", ())):
            using = getattr(s, "using", None)
            if using is not None and using.timeout is not None:
                check_timeout(using, self._evaluator(params))

    # ------------------------------------------------------------------
    def _evaluator(self, params: Any) -> TermEvaluator:
        return TermEvaluator(self.db.functions, params)

    def _execute(self, stmt: Any, params: Any, client_ts: int | None, trace: TracingSession | None = None) -> ResultSet:
        if isinstance(stmt, ast.Select):
            return self._select(stmt, params, trace=trace)
        if isinstance(stmt, DML):
            return self._write([stmt], [self._evaluator(params)], client_ts, None, trace=trace)
        if isinstance(stmt, ast.Batch):
            return self._batch(stmt, params, client_ts, trace)
        if isinstance(stmt, ast.UseKeyspace):
            self.db.catalog.keyspace(stmt.name) if not _is_system(stmt.name) else None
            self.keyspace = stmt.name
            return ResultSet("set_keyspace", keyspace=stmt.name)
        if isinstance(stmt, DDL):
            if isinstance(stmt, ast.AlterTableDrop) and stmt.timestamp is not None:
                stmt = self._drop_time_bound(stmt, params)
            return self._ddl(stmt, trace)
        if isinstance(stmt, ast.CHANGEFEED_STATEMENTS):
            from .changefeed.ddl import execute as changefeed_ddl
            return changefeed_ddl(self, stmt)
        if isinstance(stmt, ast.Truncate):
            return self._truncate(stmt)
        if isinstance(stmt, ast.Describe):
            return self._describe(stmt)
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

    def _tables(self, stmts: Sequence[Any]) -> list[Table]:
        """The table of each statement, looked up once per name object (a prepared statement's children
        share theirs; the statements, alive throughout, keep the ids apart)."""
        if len(stmts) == 1:
            return [self._table(stmts[0].table)]
        found: dict[int, Table] = {}
        out = []
        for s in stmts:
            t = found.get(id(s.table))
            if t is None:
                t = found[id(s.table)] = self._table(s.table)
            out.append(t)
        return out

    # -- reads ------------------------------------------------------------
    def _select(self, stmt: ast.Select, params: Any, page_size: int | None = None,
                paging_state: bytes | None = None, trace: TracingSession | None = None) -> ResultSet:
        from .schema import system_schema
        ks = stmt.table.keyspace or self.keyspace
        if ks is not None and system_schema.is_system_keyspace(ks):
            table = self._table(stmt.table)
            if trace is not None:
                trace.event(f"Reading system table {ks}.{table.name} (made from the catalog and the server's state)")
            if ks == system_schema.SYSTEM_LOGTIDE:
                from .changefeed.system_table import database_rows
                rows = database_rows(self.db)
            else:
                rows = system_schema.system_rows(self._catalog_for(table, stmt, params), ks, table.name,
                                                 self._node_info())
            ctx = SelectContext(table, self._evaluator(params), self._now(), VirtualSource(rows))
            return _traced_read(trace, execute_select(stmt, table, ctx, page_size, paging_state))
        table = self._table(stmt.table)
        if trace is not None:
            _trace_read_plan(trace, table, stmt, self._evaluator(params))
        with self.db.store.snapshot() as txn:
            now = self._now()
            ctx = SelectContext(table, self._evaluator(params), now, StoredSource(txn, now))
            return _traced_read(trace, execute_select(stmt, table, ctx, page_size, paging_state))

    def _catalog_for(self, table: Table, stmt: ast.Select, params: Any) -> Catalog:
        """The catalog a system table's rows come from: only the keyspaces a ``keyspace_name`` restriction names."""
        cat = self.db.catalog
        pk = table.partition_key
        if len(pk) != 1 or pk[0].name != "keyspace_name":
            return cat
        from .query.restrictions import analyse
        kr = analyse(table, stmt.where, self._evaluator(params), select=True, allow_filtering=stmt.allow_filtering)
        if kr.partition_keys is None:
            return cat
        names = {pk[0].type.deserialize(k[0]) for k in kr.partition_keys}
        return Catalog({n: k for n, k in cat.keyspaces.items() if n in names}, cat.version, cat.next_store_id)

    def _node_info(self):
        from .schema import system_schema
        served = getattr(self.db, "node_info", None)  # set by the CQL server: its bound address and port
        if served is None:
            served = system_schema.NodeInfo(host_id=self.db.host_id, schema_version=self.db.catalog.version)
        # the generations as they are now (never a copy taken when the server started)
        return dataclasses.replace(served, cdc_generations=self.db.generations, traces=self.db.traces)

    # -- writes -----------------------------------------------------------
    def _write(self, stmts: Sequence[Any], evs: Sequence[TermEvaluator], client_ts: int | None,
               batch: ast.Batch | None, conditional: Sequence[Any] | None = None,
               trace: TracingSession | None = None) -> ResultSet:
        """Build and commit the mutation of one statement or batch (``evs``: one evaluator per statement;
        ``conditional``: the statements with conditions, when the caller knows them)."""
        job = self._write_job(stmts, evs, client_ts, batch, getattr(self._call, "now", None), conditional, trace)
        return self._commit(job, trace)

    def _commit(self, job: "WriteJob", trace: TracingSession | None) -> ResultSet:
        """Run a write job through the group committer: its result (or its error, raised)."""
        if trace is None:
            return job.result(self.db.committer.run(job.work))
        trace.event("Waiting for the write lock (group commit)")
        result = job.result(self.db.committer.run(job.work))
        trace.event(_committed(self.db.store.synchronous))
        return result

    def _write_job(self, stmts: Sequence[Any], evs: Sequence[TermEvaluator], client_ts: int | None,
                   batch: ast.Batch | None, now_override: int | None,
                   conditional: Sequence[Any] | None = None, trace: TracingSession | None = None) -> "WriteJob":
        """The checks of one statement or batch made, its mutation to be built and applied in a write transaction
        (``conditional`` as for :meth:`_write`; ``trace`` records its stages)."""
        db = self.db
        catalog = db.catalog
        tables = self._tables(stmts)
        if conditional is None:
            conditional = [s for s in stmts if _is_conditional(s)]
        for s in conditional:
            if s.using.timestamp is not None:
                raise InvalidRequest("Cannot provide custom timestamp for conditional updates")
        if batch is not None and conditional and batch.using.timestamp is not None:
            raise InvalidRequest("Cannot provide custom timestamp for conditional BATCH")

        warnings: list[str] = []

        def work(txn: Txn) -> ResultSet | None:
            # the tables as of this commit: a DDL may have committed while this write waited for the lock
            current = tables if db.catalog is catalog else self._tables(stmts)
            now = db.now_seconds() if now_override is None else now_override
            ts = client_ts if client_ts is not None else db.timestamps.next()
            if batch is not None and batch.using.timestamp is not None:
                v = evs[0].value(batch.using.timestamp, T.BIGINT, "[timestamp]")
                if v is None:
                    raise InvalidRequest("Invalid null value of timestamp")
                ts = int(v)
            reader = TxnRowReader(txn, now)
            contexts = [WriteContext(ts, now, ev, reader, db.list_keys) for ev in evs]
            mutation = Mutation()
            if trace is not None:
                trace.event(f"Write transaction started: write timestamp {ts}")
            outcome = None
            if conditional:
                from .lwt import check_conditions
                outcome = check_conditions(stmts, current, contexts, batch is not None)
                if trace is not None:
                    trace.event("Conditions checked: " + ("applied" if outcome.applied else "not applied"))
                if not outcome.applied:
                    return outcome.result
            for s, t, ctx in zip(stmts, current, contexts):
                ctx.ev.table = t  # token(...) in a written value is the token of this table's partition key
                build(s, t, ctx, mutation)
            if batch is not None:
                warning = check_batch_size(mutation, batch.kind == "LOGGED")
                if warning is not None:
                    warnings.append(warning)
            if trace is not None:
                trace.event(f"Mutation built: {len(mutation.partitions)} partition(s) of "
                            + ", ".join(sorted({f"{t.keyspace}.{t.name}" for t in current})))
            db.commit_mutation(mutation, txn, now, reader, trace)
            return None if outcome is None else outcome.result

        return WriteJob(work, tables[0] if conditional else None, warnings)

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
        self._check_batch(batch)
        if trace is not None:
            trace.event(f"Preparing {kind.upper()} batch of {len(parsed)} statement(s)")
        return self._write_job(parsed, evs, timestamp, batch, now_in_seconds, trace=trace)

    def _batch(self, stmt: ast.Batch, params: Any, client_ts: int | None,
               trace: TracingSession | None = None) -> ResultSet:
        self._check_batch(stmt)
        ev = self._evaluator(params)
        return self._write(list(stmt.statements), [ev] * len(stmt.statements), client_ts, stmt, trace=trace)

    def _check_batch(self, stmt: ast.Batch) -> None:
        """Cassandra's batch rules: timestamps, counter batches, conditions."""
        tables = self._tables(stmt.statements)
        if stmt.using.timestamp is not None and any(s.using.timestamp is not None for s in stmt.statements):
            raise InvalidRequest("Timestamp must be set either on BATCH or individual statements")
        if stmt.using.timestamp is not None and stmt.kind == "COUNTER":
            raise InvalidRequest("Cannot provide custom timestamp for counter BATCH")  # ScyllaDB
        for s in stmt.statements:
            if s.using.ttl is not None and stmt.kind == "COUNTER":
                raise InvalidRequest("Cannot provide custom TTL for counter updates")
        for t in tables:
            if stmt.kind == "COUNTER" and not t.is_counter_table:
                raise InvalidRequest("Cannot include non-counter statement in a counter batch")
            if stmt.kind != "COUNTER" and t.is_counter_table:
                raise InvalidRequest("Cannot include a counter statement in a logged batch"
                                     if stmt.kind == "LOGGED" else
                                     "Counter and non-counter mutations cannot exist in the same batch")
        if any(_is_conditional(s) for s in stmt.statements):
            if len({(t.keyspace, t.name) for t in tables}) > 1:
                raise InvalidRequest("Batch with conditions cannot span multiple tables")

    def _truncate(self, stmt: ast.Truncate) -> ResultSet:
        table = self._table(stmt.table)
        self.db.committer.run(lambda txn: txn.drop_table_data(table.store_id))
        return ResultSet("void")

    # -- schema -----------------------------------------------------------
    def _drop_time_bound(self, stmt: ast.AlterTableDrop, params: Any) -> ast.AlterTableDrop:
        """``DROP c USING TIMESTAMP t`` with ``t`` evaluated (a literal or a bound value)."""
        value = self._evaluator(params).value(stmt.timestamp, T.BIGINT, "[timestamp]")
        if value is None or value is T.UNSET:
            raise InvalidRequest("Invalid null value of timestamp")
        return replace(stmt, timestamp=ast.Constant("integer", str(value)))

    def _ddl(self, stmt: Any, trace: TracingSession | None = None) -> ResultSet:
        db = self.db
        if trace is not None:
            trace.event("Waiting for the write lock (schema change)")
        with db.write_lock:
            old = db.catalog
            log_schema.check_statement(old, stmt, self.keyspace)
            now = db.timestamps.next()
            new, change = old.apply(stmt, self.keyspace, now)
            if change is None:
                return ResultSet("void")
            log_schema.validate(new)
            new = log_schema.sync_log_tables(old, new, now)
            if trace is not None:
                trace.event(f"Schema change: {change.change_type} {change.target} {change.keyspace}"
                            + (f".{change.name}" if change.name else "")
                            + "".join(f"; {c.change_type} {c.target} {c.keyspace}.{c.name}"
                                      for c in _log_changes(old, new, change)))
            dropped = _dropped_store_ids(old, new)
            try:
                with db.store.write() as txn:
                    txn.put_meta(CATALOG_KEY, new.to_json().encode())
                    for tid in dropped:
                        txn.drop_table_data(tid)
                    db.feeds.dropped(txn, _dropped_feed_ids(old, new))
                    wrote = db.feeds.altered(txn, old, new)
            except BaseException:
                db.feeds.forget_offsets()
                raise
            db.catalog = new
            if wrote:
                db.feeds.notify()
        implied = _log_changes(old, new, change)
        if trace is not None:
            trace.event(_committed(db.store.synchronous))
        auth = getattr(db, "auth", None)
        if auth is not None:
            _grants_follow_schema(auth, self.user, [change, *implied])
        return ResultSet("schema_change", schema_change=change, implied_changes=implied)

    def _describe(self, stmt: ast.Describe) -> ResultSet:
        from .schema.describe import describe_rows
        rows = describe_rows(stmt, self.db.catalog, self.keyspace)
        names: tuple[str, ...] = ("keyspace_name", "type", "name", "create_statement")
        if stmt.kind in ("keyspaces", "tables", "types", "functions", "aggregates"):
            names = names[:3]  # a listing has no statements (ScyllaDB's get_listing_column_specifications)
        cols = tuple(ColumnSpec("system", "describe", n, T.TEXT) for n in names)
        return ResultSet("rows", cols, [Row(names, list(r[:len(names)])) for r in rows], describe=True)


def _is_system(name: str) -> bool:
    from .schema import system_schema
    return system_schema.is_system_keyspace(name)


def _is_conditional(s: Any) -> bool:
    return bool(getattr(s, "if_not_exists", False) or getattr(s, "if_exists", False) or getattr(s, "conditions", ()))


def _grants_follow_schema(auth: Any, user: str | None, changes: list[SchemaChange]) -> None:
    """Permissions follow a schema change, as in ScyllaDB: the role that created a keyspace or table (and so the
    CDC log that came with it) is granted every permission on it; a dropped one takes its grants with it."""
    from .auth import DataResource
    for c in changes:
        if c.target not in ("KEYSPACE", "TABLE"):
            continue
        table = c.name if c.target == "TABLE" else None
        if c.change_type == "CREATED":
            auth.grant_to_creator(user, DataResource(c.keyspace, table))
        elif c.change_type == "DROPPED":
            auth.forget(c.keyspace, table)


def _log_changes(old: Catalog, new: Catalog, change: SchemaChange) -> list[SchemaChange]:
    """Schema changes of CDC log tables that a DDL statement made implicitly (clients refresh on them)."""
    out = []
    for ks in new.keyspaces.values():
        for name, t in ks.tables.items():
            if t.cdc_base is None:
                continue
            before = old.find_table(ks.name, name)
            if before is None:
                out.append(SchemaChange("CREATED", "TABLE", ks.name, name))
            elif before != t:
                out.append(SchemaChange("UPDATED", "TABLE", ks.name, name))
    for ks in old.keyspaces.values():
        if ks.name not in new.keyspaces:
            continue
        for name, t in ks.tables.items():
            if t.cdc_base is not None and new.find_table(ks.name, name) is None:
                out.append(SchemaChange("DROPPED", "TABLE", ks.name, name))
    return [c for c in out if (c.keyspace, c.name) != (change.keyspace, change.name)]


def _shortened(query: str, limit: int = 200) -> str:
    """A statement's text for a trace event: one line, at most ``limit`` characters."""
    text = " ".join(query.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _committed(synchronous: str) -> str:
    """The trace event of a commit: what the commit waited for."""
    if synchronous == "FULL":
        return "Write transaction committed and synced to disk (synchronous=FULL)"
    if synchronous == "NORMAL":
        return "Write transaction committed to the WAL, synced at the next checkpoint (synchronous=NORMAL)"
    return "Write transaction committed, not synced (synchronous=OFF)"


def _trace_capture(trace: TracingSession, log_updates: Sequence[Any], feeds: bool) -> None:
    """The trace events of the CDC capture of one write (none for tables without CDC) and of the changefeeds' read."""
    if log_updates:
        rows = sum(len(lu.rows) for lu in log_updates)
        logs = sorted({f"{lu.table.keyspace}.{lu.table.name}" for lu in log_updates})
        trace.event(f"CDC: {rows} log row(s) in {len({lu.stream_id for lu in log_updates})} stream(s) of "
                    + ", ".join(logs))
    if feeds:
        trace.event("Changefeeds: the rows the write touches are read for their images")


def _trace_read_plan(trace: TracingSession, table: Table, stmt: ast.Select, ev: TermEvaluator) -> None:
    """The trace event of how a SELECT reads: one partition, several, or a scan of the token range."""
    from .query.restrictions import analyse
    try:
        kr = analyse(table, stmt.where, ev)
    except CqlError:
        return  # the read itself reports it
    name = f"{table.keyspace}.{table.name}"
    if kr.partition_keys is not None and len(kr.partition_keys) == 1:
        trace.event(f"Executing single-partition query on {name}")
    elif kr.partition_keys is not None:
        trace.event(f"Executing multi-partition query on {name} ({len(kr.partition_keys)} partitions)")
    else:
        trace.event(f"Scanning the token range of {name} (a snapshot of committed data)")


def _traced_read(trace: TracingSession | None, result: ResultSet) -> ResultSet:
    if trace is not None:
        more = "; more pages follow" if result.paging_state else ""
        trace.event(f"Read {len(result)} live row(s){more}")
    return result


def _dropped_feed_ids(old: Catalog, new: Catalog) -> list[int]:
    """Changefeeds that went with a dropped table or keyspace."""
    def ids(cat: Catalog) -> set[int]:
        return {f.feed_id for ks in cat.keyspaces.values() for t in ks.tables.values() for f in t.changefeeds}
    return sorted(ids(old) - ids(new))


def _dropped_store_ids(old: Catalog, new: Catalog) -> list[int]:
    def ids(cat: Catalog) -> set[int]:
        return {t.store_id for ks in cat.all_keyspaces() for t in ks.tables.values()}
    return sorted(ids(old) - ids(new))



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


def is_write(stmt: Any) -> bool:
    """An INSERT, UPDATE, DELETE or BATCH: a statement that ``plan_write`` makes a ``WriteJob`` of."""
    return isinstance(stmt, WRITES)


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
