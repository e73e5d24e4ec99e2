"""Preparing a statement: parsed once, with the metadata of its bind markers and of its result columns
(the native protocol's PREPARE; Cassandra's prepared metadata), and the checks made before a statement runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..query.bind import BindCollector
from ..query.evaluate import TermEvaluator
from ..query.select import SelectContext, VirtualSource, ordering_column
from ..query.timeout import Deadline, check_timeout
from ..result import ColumnSpec
from ..schema.model import Table
from .settings import DUPLICATE_BIND_NAMES, IN_UPPERCASE


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


def prepare(session: Any, query: str) -> PreparedStatement:
    """``Session.prepare``: a statement parsed once for repeated execution with bound values, with its bind and
    result metadata (the native protocol's PREPARE)."""
    parsed = session.db.parse(query)
    stmt = parsed.statement
    if isinstance(stmt, ast.UseKeyspace):
        session._authorize(stmt)
    # permissions are checked when a statement runs, not when it is prepared (Cassandra and ScyllaDB)
    if isinstance(stmt, (ast.Insert, ast.Update, ast.Delete)):
        ks = stmt.table.keyspace or session.keyspace
        written = session.db.catalog.find_table(ks, stmt.table.name) if ks is not None else None
        if written is not None and written.view is not None:  # refused at PREPARE, as ScyllaDB does
            raise InvalidRequest("Cannot directly modify a materialized view")
    config = session.db.config
    dialect = (config.get(DUPLICATE_BIND_NAMES), config.get(IN_UPPERCASE))  # ScyllaDB's switches (engine.settings)
    collector = BindCollector(session._table, lambda fc, t: _infer_call(session, fc, t), dialect[1])
    table = session._table(stmt.table) if isinstance(stmt, (ast.Insert, ast.Update, ast.Delete, ast.Select)) else None
    result_columns = None
    markers: dict[int, tuple[str, Any]] = {}  # the markers the selectors type (f(?), m[?])
    if isinstance(stmt, ast.Select):  # the selectors first, then the WHERE clause (ScyllaDB's order)
        result_columns = result_columns_of(session, stmt, table, markers)
    collector.statement(stmt)
    if isinstance(stmt, ast.Select) and table is not None:
        for ob in stmt.order_by:
            ordering_column(stmt, table, ob.column)
    if isinstance(stmt, ast.Select):
        for index, (name, ctype) in markers.items():
            if index not in collector.specs and table is not None:
                collector.specs[index] = ColumnSpec(table.keyspace, table.name, name, ctype)
    specs, pk_indexes = collector.result(len(parsed.bind_markers), table)
    # the dialect switches are part of the statement's id, as in ScyllaDB: preparing again after one changed gets
    # a statement of its own, whose metadata follows it
    suffix = "" if dialect == (True, True) else f"\x00dialect:{int(dialect[0])}{int(dialect[1])}"
    digest = hashlib.md5(((session.keyspace or "") + "\x00" + query + suffix).encode()).digest()
    return PreparedStatement(query, parsed, session.keyspace, digest, specs, pk_indexes, result_columns)


def _infer_call(session: Any, fc: ast.FunctionCall, table: Table | None) -> Any:
    """The function a call in a statement's term names: a user-defined one of the call's keyspace (else the
    session's, else the table's), or a native one, found by the types its arguments have by themselves."""
    ev = TermEvaluator(session.db.functions, None, keyspace=session.keyspace, table=table)
    user = ev.user_function(fc)
    if user is not None:
        return user
    return session.db.functions.resolve(fc.name, [ev.infer_type(a) for a in fc.args], fc.args)


def result_columns_of(session: Any, stmt: ast.Select, table: Table | None,
                      markers: dict[int, tuple[str, Any]] | None = None) -> tuple[ColumnSpec, ...] | None:
    """The result columns of a SELECT, its selectors compiled as its execution will (their errors are the
    statement's, as in ScyllaDB's prepare); ``markers`` receives the bind markers the selectors type."""
    from ..query.select import result_columns
    if table is None:
        return None
    ev = TermEvaluator(session.db.functions, None, {} if markers is None else markers, keyspace=session.keyspace)
    ctx = SelectContext(table, ev, session.db.now_seconds(), VirtualSource([]))
    return result_columns(stmt, table, ctx)


def check_timeouts(session: Any, stmt: Any, params: Any) -> Deadline | None:
    """ScyllaDB's ``USING TIMEOUT`` (``query.timeout``): every one of the statement (a batch's and its
    children's) checked; the deadline is the statement's own, from now (a batch's children's timeouts do not
    shorten it, as in ScyllaDB's ``batch_statement``).  None without one."""
    deadline = None
    for s in (stmt, *getattr(stmt, "statements", ())):
        using = getattr(s, "using", None)
        if using is not None and using.timeout is not None:
            timeout_ms = check_timeout(using, session._evaluator(params))
            if s is stmt and timeout_ms is not None:
                deadline = Deadline.after(timeout_ms)
    return deadline


def shortened(query: str, limit: int = 200) -> str:
    """A statement's text for a trace event: one line, at most ``limit`` characters."""
    text = " ".join(query.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
