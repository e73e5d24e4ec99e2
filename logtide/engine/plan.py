"""Write stages 2, 3.1 and 3.4, plan and build: statements to a mutation under the catalog as of the commit.

``write_job`` makes the checks that need no transaction at once and returns a ``WriteJob`` whose work, run in
the write transaction, resolves the tables again if a DDL committed meanwhile, assigns the timestamp, checks
lightweight-transaction conditions (``engine.lwt``), builds the mutation (``mutation.builder``) and hands it to
``engine.commit.commit_mutation``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..cql import ast
from ..cql.view_ast import VIEW_STATEMENTS
from ..cql.service_level_ast import SERVICE_LEVEL_STATEMENTS
from ..errors import InvalidRequest, WriteTimeout
from ..mutation.assignments import is_conditional
from ..mutation.builder import build, check_batch_size
from ..mutation.context import WriteContext
from ..mutation.model import Mutation
from ..mutation.targets import check_conditional_where, check_static_only_statement
from ..query.evaluate import TermEvaluator
from ..query.timeout import Deadline
from ..result import ResultSet
from ..schema import types as T
from ..schema.model import Table
from ..storage.sqlite import Txn
from ..tracing import TracingSession
from .commit import WriteJob, commit_mutation
from .config_update import virtual_write_job, writes_virtual_table
from .touched import TxnRowReader

DDL = (ast.CreateKeyspace, ast.AlterKeyspace, ast.DropKeyspace, ast.CreateTable, ast.AlterTableAdd,
       ast.AlterTableDrop, ast.AlterTableRename, ast.AlterTableWith, ast.AlterTableTtl, ast.AlterTableAlterType, ast.DropTable,
       ast.CreateType, ast.AlterTypeAdd, ast.AlterTypeRename, ast.DropType, ast.CreateFunction, ast.CreateAggregate,
       ast.DropFunction, *VIEW_STATEMENTS, ast.CreateIndex, ast.DropIndex)
DML = (ast.Insert, ast.Update, ast.Delete)
WRITES = (*DML, ast.Batch)
ROLE_STATEMENTS = (ast.CreateRole, ast.AlterRole, ast.DropRole, ast.ListRoles, ast.Grant, ast.Revoke,
                   ast.ListPermissions, ast.GrantRole, ast.RevokeRole, *SERVICE_LEVEL_STATEMENTS)



def is_write(stmt: Any) -> bool:
    """An INSERT, UPDATE, DELETE or BATCH: a statement that ``Session.plan_write`` makes a ``WriteJob`` of."""
    return isinstance(stmt, WRITES)


def write_job(session: Any, stmts: Sequence[Any], evs: Sequence[TermEvaluator], client_ts: int | None,
               batch: ast.Batch | None, now_override: int | None,
               conditional: Sequence[Any] | None = None, trace: TracingSession | None = None,
               deadline: Deadline | None = None) -> "WriteJob":
    """The checks of one statement or batch made, its mutation to be built and applied in a write transaction
    (``conditional``: the statements with conditions, when the caller knows them; ``trace`` records its
    stages): write stages 2 and 3.1 (plan: tables, timestamp), 3.3 (conditions) and 3.4 (build), then
    ``commit_mutation``.  With a ``deadline`` (``USING TIMEOUT``) the write is refused with WriteTimeout,
    applying nothing, when the deadline has passed by the time it would commit; a lightweight transaction
    (or conditional batch) runs without one, as ScyllaDB runs it under its configured timeouts
    (``modification_statement::execute_with_condition``)."""
    db = session.db
    if any(writes_virtual_table(s, session.keyspace) for s in stmts):
        # system.config's live update; other system tables, and any of them in a batch, refuse
        return virtual_write_job(db, stmts[0], evs[0], session.keyspace, len(stmts) == 1 and batch is None)
    catalog = db.catalog
    tables = statement_tables(session, stmts)
    if conditional is None:
        conditional = [s for s in stmts if is_conditional(s)]
    for s, t in zip(stmts, tables):
        if not isinstance(s, ast.Insert) and is_conditional(s):
            check_static_only_statement(s, t)  # checked before the conditions, which may not hold
            check_conditional_where(s, t)
    for s in conditional:
        if s.using.timestamp is not None:
            raise InvalidRequest("Cannot provide custom timestamp for conditional updates")
    if batch is not None and conditional and batch.using.timestamp is not None:
        raise InvalidRequest("Cannot provide custom timestamp for conditional BATCH")

    warnings: list[str] = []

    if conditional:
        deadline = None

    def timed_out() -> None:
        if deadline is not None and deadline.passed():
            t = tables[0]
            raise WriteTimeout(t.keyspace, t.name, write_type(batch, t.is_counter_table))

    def work(txn: Txn) -> ResultSet | None:
        timed_out()  # waited past its deadline for the write lock
        # the tables as of this commit: a DDL may have committed while this write waited for the lock
        current = tables if db.catalog is catalog else statement_tables(session, stmts)
        now = db.now_seconds() if now_override is None else now_override
        ts = client_ts if client_ts is not None else db.timestamps.next()
        if batch is not None and batch.using.timestamp is not None:
            v = evs[0].value(batch.using.timestamp, T.BIGINT, "[timestamp]")
            if v is None:
                raise InvalidRequest("Invalid null value of timestamp")
            ts = int(v)
        reader = TxnRowReader(txn, now)
        contexts = [WriteContext(ts, now, ev, reader, db.list_keys, db.key_shapes) for ev in evs]
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
        timed_out()  # the last moment to give up: nothing is applied yet
        commit_mutation(db, mutation, txn, now, trace)
        return None if outcome is None else outcome.result

    return WriteJob(work, tables[0] if conditional else None, warnings)


def write_type(batch: ast.Batch | None, counter: bool) -> str:
    """The native protocol's write type of a statement or batch without conditions (what a WriteTimeout names)."""
    if batch is None:
        return "COUNTER" if counter else "SIMPLE"
    return {"LOGGED": "BATCH", "UNLOGGED": "UNLOGGED_BATCH", "COUNTER": "COUNTER"}.get(batch.kind, "BATCH")


def check_batch(session: Any, stmt: ast.Batch) -> None:
    """Cassandra's and ScyllaDB's batch rules (``batch_statement::validate``): timestamps, counter
    batches (an UNLOGGED batch of counter updates only is allowed), conditions."""
    tables = statement_tables(session, stmt.statements)
    if stmt.using.timestamp is not None and any(s.using.timestamp is not None for s in stmt.statements):
        raise InvalidRequest("Timestamp must be set either on BATCH or individual statements")
    if stmt.using.timestamp is not None and stmt.kind == "COUNTER":
        raise InvalidRequest("Cannot provide custom timestamp for counter BATCH")  # ScyllaDB
    for s in stmt.statements:
        if s.using.ttl is not None and stmt.kind == "COUNTER":
            raise InvalidRequest("Cannot provide custom TTL for counter updates")
    has_counters = any(t.is_counter_table for t in tables)
    has_non_counters = not all(t.is_counter_table for t in tables)
    if stmt.kind == "COUNTER" and has_non_counters:
        raise InvalidRequest("Cannot include non-counter statement in a counter batch")
    if stmt.kind == "LOGGED" and has_counters:
        raise InvalidRequest("Cannot include a counter statement in a logged batch")
    if has_counters and has_non_counters:  # an UNLOGGED batch may hold counter updates alone
        raise InvalidRequest("Counter and non-counter mutations cannot exist in the same batch")
    if any(is_conditional(s) for s in stmt.statements):
        if len({(t.keyspace, t.name) for t in tables}) > 1:
            raise InvalidRequest("Batch with conditions cannot span multiple tables")


def statement_tables(session: Any, stmts: Sequence[Any]) -> list[Table]:
    """The table of each statement, looked up once per name object (a prepared statement's children
    share theirs; the statements, alive throughout, keep the ids apart)."""
    if len(stmts) == 1:
        return [written_table(session._table(stmts[0].table))]
    found: dict[int, Table] = {}
    out = []
    for s in stmts:
        t = found.get(id(s.table))
        if t is None:
            t = found[id(s.table)] = written_table(session._table(s.table))
        out.append(t)
    return out


def written_table(table: Table) -> Table:
    """A table a write may name: not a materialized view (ScyllaDB's ``modification_statement``)."""
    if table.view is not None:
        raise InvalidRequest("Cannot directly modify a materialized view")
    return table
