"""QUERY, PREPARE, EXECUTE and BATCH against the engine (run in worker threads).

Each method takes the connection's engine Session and a decoded request and
returns an ``Outcome``: the RESULT (or, raised, a CqlError the caller turns
into ERROR), the statement's warnings, and the schema change to push to
REGISTERed clients.  Bound values are decoded here with the types of the
statement's bind markers; results are encoded with their column types.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from logtide.engine.commit import WriteJob
from logtide.engine.plan import is_write
from logtide.errors import InvalidRequest
from logtide.query.select_result import SelectResult
from logtide.result import ColumnSpec, ResultSet, SchemaChange
from logtide.tracing import TracingSession

from . import messages as M
from .datatypes import decode_value
from .prepared import PreparedCache, PreparedEntry


@dataclass
class Outcome:
    """What a statement produced: the response, warnings, and any schema change to broadcast."""

    response: M.Response
    warnings: list[str] = field(default_factory=list)
    schema_change: SchemaChange | None = None
    implied_changes: list[SchemaChange] = field(default_factory=list)  # e.g. a CDC log table created with its base


_VOID = Outcome(M.void())  # the answer to most writes, shared (outcomes are never changed once made)


def bind_values(specs: Sequence[ColumnSpec], values: Sequence[Any], names: Sequence[str] | None,
                decoders: Sequence[Callable[[Any], Any]] | None = None) -> list[Any]:
    """Decode raw bound values (positional, or named when ``names`` is given) with the markers' types
    (``decoders``: a prepared statement's own, one per marker)."""
    if names is not None:
        by_name = dict(zip(names, values))
        ordered = []
        for spec in specs:
            if spec.name in by_name:
                ordered.append(by_name[spec.name])
            elif spec.name.lower() in by_name:
                ordered.append(by_name[spec.name.lower()])
            else:
                raise InvalidRequest(f"No value found for {spec.name}")
        values = ordered
    if len(values) != len(specs):
        raise InvalidRequest(f"There were {len(specs)} markers(?) in CQL but {len(values)} bound variables")
    if decoders is not None:
        return [decode(raw) for decode, raw in zip(decoders, values)]
    return [decode_value(raw, spec) for raw, spec in zip(values, specs)]


def _follow_use(session: Any, result: ResultSet) -> None:
    """A USE run on a sibling session (prepared elsewhere, v5 keyspace flag) still moves the connection."""
    if result.kind == "set_keyspace" and result.keyspace:
        session.keyspace = result.keyspace


class StatementRunner:
    """Runs statement requests for every connection of one server."""

    def __init__(self, db: Any, cache: PreparedCache) -> None:
        self.db = db
        self.cache = cache
        self._metadata_ids: dict[tuple[ColumnSpec, ...], bytes] = {}

    # -- helpers ------------------------------------------------------------
    def session_in(self, session: Any, keyspace: str | None) -> Any:
        """``session`` itself, or a sibling session of the same user in ``keyspace``."""
        if keyspace is None or keyspace == session.keyspace:
            return session
        other = self.db.session(user=session.user)
        other.keyspace = keyspace
        return other

    def metadata_id(self, columns: Sequence[ColumnSpec] | None) -> bytes:
        key = tuple(columns or ())
        mid = self._metadata_ids.get(key)
        if mid is None:
            mid = M.result_metadata_id(key)
            if len(self._metadata_ids) > 10_000:
                self._metadata_ids.clear()
            self._metadata_ids[key] = mid
        return mid

    def _prepare_entry(self, session: Any, query: str) -> PreparedEntry:
        statement = session.prepare(query)
        entry = PreparedEntry(statement, self.db.catalog.version, self.metadata_id(statement.result_columns))
        self.cache.put(entry)
        return entry

    def _current(self, session: Any, entry: PreparedEntry) -> PreparedEntry:
        """The entry, prepared again if the schema changed since (types or columns may differ)."""
        if entry.catalog_version == self.db.catalog.version:
            return entry
        s = self.session_in(session, entry.statement.keyspace)
        fresh = s.prepare(entry.statement.query_string)
        entry = PreparedEntry(fresh, self.db.catalog.version, entry.result_metadata_id)
        self.cache.put(entry)
        return entry

    def outcome(self, result: ResultSet, version: int, skip_metadata: bool = False,
                known_metadata_id: bytes | None = None) -> Outcome:
        """The RESULT message for an engine result.

        ``known_metadata_id`` is the result metadata the client holds for a
        prepared statement: metadata is skipped only when it still matches
        (v5 also flags a change with the new id).
        """
        kind = result.kind
        warnings = list(result.warnings)
        if kind == "rows":
            new_id = None
            no_metadata = False
            if known_metadata_id is not None:
                current = self.metadata_id(result.columns)
                if current != known_metadata_id:
                    new_id = current
                else:
                    no_metadata = skip_metadata
            else:
                no_metadata = skip_metadata
            wire = result.wire_rows() if isinstance(result, SelectResult) else None
            response = M.rows(result.columns, () if wire is not None else result.rows, version,
                              paging_state=result.paging_state, no_metadata=no_metadata, new_metadata_id=new_id,
                              encoded=wire)
            return Outcome(response, warnings)
        if kind == "set_keyspace":
            return Outcome(M.set_keyspace(result.keyspace or ""), warnings)
        if kind == "schema_change" and result.schema_change is not None:
            return Outcome(M.schema_change(result.schema_change), warnings, result.schema_change,
                           list(result.implied_changes))
        if not warnings:
            return _VOID
        return Outcome(M.void(), warnings)

    # -- requests (``trace``: a logtide.tracing.TracingSession when the request asked for tracing) -------------
    def query(self, session: Any, req: M.Query, version: int, trace: TracingSession | None = None) -> Outcome:
        p = req.params
        s = self.session_in(session, p.keyspace)
        if p.values or p.names is not None:
            if trace is not None:
                trace.event(f"Parsing {req.query}")
            statement = s.prepare(req.query)
            values = bind_values(statement.bind_specs, p.values, p.names)
            result = s.execute(statement, values, timestamp=p.timestamp, page_size=p.page_size,
                               paging_state=p.paging_state, now_in_seconds=p.now_in_seconds, trace=trace)
        else:
            result = s.execute(req.query, None, timestamp=p.timestamp, page_size=p.page_size,
                               paging_state=p.paging_state, now_in_seconds=p.now_in_seconds, trace=trace)
        _follow_use(session, result)
        return self.outcome(result, version, p.skip_metadata)

    def prepare(self, session: Any, req: M.Prepare, version: int, trace: TracingSession | None = None) -> Outcome:
        s = self.session_in(session, req.keyspace)
        if trace is not None:
            trace.event(f"Parsing {req.query}")
        entry = self._prepare_entry(s, req.query)
        st = entry.statement
        if trace is not None:
            trace.event(f"Prepared statement {st.id.hex()} cached ({len(st.bind_specs)} bind marker(s))")
        return Outcome(M.prepared(st.id, entry.result_metadata_id, st.bind_specs, st.pk_indexes,
                                  st.result_columns, version))

    def execute(self, session: Any, req: M.Execute, version: int, trace: TracingSession | None = None) -> Outcome:
        p = req.params
        entry = self._current(session, self.cache.get(req.statement_id))
        statement = entry.statement
        if trace is not None:
            trace.parameters["query"] = statement.query_string
            trace.event(f"Executing prepared statement {req.statement_id.hex()}: binding {len(p.values)} value(s)")
        values = bind_values(statement.bind_specs, p.values, p.names, entry.decoders)
        s = self.session_in(session, statement.keyspace if p.keyspace is None else p.keyspace)
        result = s.execute(statement, values, timestamp=p.timestamp, page_size=p.page_size,
                           paging_state=p.paging_state, now_in_seconds=p.now_in_seconds, trace=trace)
        _follow_use(session, result)
        known = req.result_metadata_id if version >= 5 else entry.result_metadata_id
        return self.outcome(result, version, p.skip_metadata, known)

    def batch(self, session: Any, req: M.Batch, version: int, trace: TracingSession | None = None) -> Outcome:
        s = self.session_in(session, req.keyspace)
        result = s.execute_batch(req.kind, self._children(session, s, req), timestamp=req.timestamp,
                                 now_in_seconds=getattr(req, "now_in_seconds", None), trace=trace)
        return self.outcome(result, version)

    def _children(self, session: Any, s: Any, req: M.Batch) -> list[tuple[Any, Any]]:
        """A BATCH's statements with their values bound (prepared children from the prepared cache)."""
        children: list[tuple[Any, Any]] = []
        for child in req.children:
            if child.statement_id is not None:
                entry = self._current(session, self.cache.get(child.statement_id))
                statement = entry.statement
                children.append((statement, bind_values(statement.bind_specs, child.values, None, entry.decoders)))
            elif child.values:
                statement = s.prepare(child.query)
                children.append((statement, bind_values(statement.bind_specs, child.values, None)))
            else:
                children.append((child.query, None))
        return children

    # -- writes for the committer -----------------------------------------------
    def write(self, session: Any, req: M.Request, version: int) -> "WriteRequest | None":
        """A QUERY, EXECUTE or BATCH that writes (INSERT, UPDATE, DELETE, BATCH), checked and bound as
        ``query``/``execute``/``batch`` would run it, for the server's committer; None for any other
        request (it runs on the worker pool).  Raises what those raise before writing."""
        if isinstance(req, M.Execute):
            p = req.params
            entry = self._current(session, self.cache.get(req.statement_id))
            statement = entry.statement
            if not is_write(statement.parsed.statement):
                return None
            values = bind_values(statement.bind_specs, p.values, p.names, entry.decoders)
            s = self.session_in(session, statement.keyspace if p.keyspace is None else p.keyspace)
            job = s.plan_write(statement, values, timestamp=p.timestamp, now_in_seconds=p.now_in_seconds)
            known = req.result_metadata_id if version >= 5 else entry.result_metadata_id
            return WriteRequest(job, functools.partial(self.outcome, version=version, skip_metadata=p.skip_metadata,
                                                       known_metadata_id=known))
        if isinstance(req, M.Batch):
            s = self.session_in(session, req.keyspace)
            job = s.plan_batch(req.kind, self._children(session, s, req), timestamp=req.timestamp,
                               now_in_seconds=req.now_in_seconds)
            return WriteRequest(job, functools.partial(self.outcome, version=version))
        if isinstance(req, M.Query):
            p = req.params
            s = self.session_in(session, p.keyspace)
            if not is_write(self.db.parse(req.query).statement):
                return None
            if p.values or p.names is not None:
                statement = s.prepare(req.query)
                planned = s.plan_write(statement, bind_values(statement.bind_specs, p.values, p.names),
                                       timestamp=p.timestamp, now_in_seconds=p.now_in_seconds)
            else:
                planned = s.plan_write(req.query, None, timestamp=p.timestamp, now_in_seconds=p.now_in_seconds)
            assert planned is not None  # a write, checked above
            return WriteRequest(planned, functools.partial(self.outcome, version=version,
                                                           skip_metadata=p.skip_metadata))
        return None


@dataclass(frozen=True)
class WriteRequest:
    """A write request decoded and bound on the event loop, waiting for the server's committer: ``job`` is
    the engine's write (``WriteJob``), ``respond`` makes the RESULT of its result."""

    job: WriteJob
    respond: Callable[[ResultSet], Outcome]

    def answer(self, ok: bool, value: Any) -> Outcome:
        """The Outcome for what the job's work returned (``ok``) or raised: the error, raised as
        ``Session.execute`` raises it."""
        if not ok:
            raise self.job.failure(value) from None
        if value is None and self.job.conditional is None:
            return _VOID  # what ``respond`` makes of a plain write's VOID result, without making it
        return self.respond(self.job.result(value))
