"""The read path: a SELECT on a snapshot (docs/architecture.md, "A read"), with its trace events.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..cql import ast
from ..errors import CqlError, ReadTimeout
from ..query.evaluate import TermEvaluator
from ..query.select import SelectContext, StoredSource, VirtualSource, execute_select
from ..query.timeout import Deadline
from ..result import ResultSet
from ..schema.catalog import Catalog
from ..schema.model import Table
from ..tracing import TracingSession


def select(session: Any, stmt: ast.Select, params: Any, page_size: int | None = None,
           paging_state: bytes | None = None, trace: TracingSession | None = None,
           deadline: Deadline | None = None) -> ResultSet:
    """Read stages 1 to 3 of a SELECT in ``session`` (a ``logtide.session.Session``): a system table's rows made
    from the catalog and the server's state, or a snapshot of the store, through ``query.select``.  With a
    ``deadline`` (``USING TIMEOUT``), a read that has not finished by then answers ReadTimeout instead."""
    result = _select(session, stmt, params, page_size, paging_state, trace, deadline)
    _check_deadline(session, stmt, deadline)
    return result


def _check_deadline(session: Any, stmt: ast.Select, deadline: Deadline | None) -> None:
    if deadline is not None and deadline.passed():
        raise ReadTimeout(stmt.table.keyspace or session.keyspace or "", stmt.table.name)


def _select(session: Any, stmt: ast.Select, params: Any, page_size: int | None, paging_state: bytes | None,
            trace: TracingSession | None, deadline: Deadline | None) -> ResultSet:
    _check_deadline(session, stmt, deadline)
    from ..schema import system_schema
    ks = stmt.table.keyspace or session.keyspace
    if ks is not None and system_schema.is_system_keyspace(ks):
        table = session._table(stmt.table)
        if trace is not None:
            trace.event(f"Reading system table {ks}.{table.name} (made from the catalog and the server's state)")
        if ks == system_schema.SYSTEM_LOGTIDE:
            from ..schema.system_changefeeds import database_rows
            rows = database_rows(session.db)
        else:
            rows = system_schema.system_rows(_catalog_for(session, table, stmt, params), ks, table.name,
                                             _node_info(session))
        ctx = SelectContext(table, session._evaluator(params), session._now(), VirtualSource(rows))
        return _traced_read(trace, execute_select(stmt, table, ctx, page_size, paging_state))
    table = session._table(stmt.table)
    if trace is not None:
        _trace_read_plan(trace, table, stmt, session._evaluator(params), session.db.view_builds.building())
    with session.db.store.snapshot() as txn:
        now = session._now()
        unbuilt = session.db.view_builds.building() if table.indexes else frozenset()
        ctx = SelectContext(table, session._evaluator(params), now, StoredSource(txn, now, unbuilt))
        return _traced_read(trace, execute_select(stmt, table, ctx, page_size, paging_state))

def _catalog_for(session: Any, table: Table, stmt: ast.Select, params: Any) -> Catalog:
    """The catalog a system table's rows come from: only the keyspaces a ``keyspace_name`` restriction names."""
    cat = session.db.catalog
    pk = table.partition_key
    if len(pk) != 1 or pk[0].name != "keyspace_name":
        return cat
    from ..query.restrictions import analyse
    kr = analyse(table, stmt.where, session._evaluator(params), select=True, allow_filtering=stmt.allow_filtering)
    if kr.partition_keys is None:
        return cat
    names = {pk[0].type.deserialize(k[0]) for k in kr.partition_keys}
    return Catalog({n: k for n, k in cat.keyspaces.items() if n in names}, cat.version, cat.next_store_id)

def _node_info(session: Any) -> Any:
    from ..schema import system_schema
    served = getattr(session.db, "node_info", None)  # set by the CQL server: its bound address and port
    if served is None:
        served = system_schema.NodeInfo(host_id=session.db.host_id, schema_version=session.db.catalog.version)
    # the generations as they are now (never a copy taken when the server started)
    auth = getattr(session.db, "auth", None)
    return dataclasses.replace(served, cdc_generations=session.db.generations, traces=session.db.traces,
                               view_builds=session.db.view_builds.progress(),
                               role_permissions=auth.role_permission_rows if auth is not None else None,
                               roles=auth.role_rows if auth is not None else None,
                               config=session.db.config.rows,
                               size_estimates=lambda tid, start, end: _size_estimate(session.db.store, tid, start, end),
                               runtime_info=lambda: runtime_info(session.db))


def runtime_info(db: Any) -> dict[str, str]:
    """ScyllaDB's ``system.runtime_info`` items (group ``generic``) that logtide has, in ScyllaDB's formats:
    ``load`` (the bytes of the data directory's database files, as ScyllaDB sums its live sstables), ``uptime``
    (since the data directory was opened), ``gossip_active`` and ``incremental_backup_enabled`` (false: one node,
    no backups), ``trace_probability`` (0: logtide traces the requests that ask for it only).  ScyllaDB's
    ``memory``, ``memtable`` and ``cache`` groups are not there: logtide has no memtable nor row cache."""
    import os
    import time
    from ..storage.sqlite import DB_FILE
    load = 0
    for suffix in ("", "-wal"):
        try:
            load += os.stat(db.path / (DB_FILE + suffix)).st_size
        except OSError:
            pass
    return {"gossip_active": "false", "incremental_backup_enabled": "false", "load": str(load),
            "trace_probability": "0", "uptime": f"{int(time.monotonic() - db.opened)} seconds"}


def _size_estimate(store: Any, tid: int, start: int, end: int) -> tuple[int, int]:
    """``system.size_estimates``' numbers for one table and token range, from the stored records
    (``storage.estimates``)."""
    from ..storage.estimates import estimate_range
    with store.snapshot() as txn:
        found = estimate_range(txn, tid, start, end)
    return found.partitions_count, found.mean_partition_size



def _trace_read_plan(trace: TracingSession, table: Table, stmt: ast.Select, ev: TermEvaluator,
                     unbuilt: frozenset[int] = frozenset()) -> None:
    """The trace event of how a SELECT reads: one partition, several, or a scan of the token range."""
    from ..query.restrictions import analyse
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
    _trace_index(trace, table, stmt, ev, unbuilt)


def _trace_index(trace: TracingSession, table: Table, stmt: ast.Select, ev: TermEvaluator,
                 unbuilt: frozenset[int] = frozenset()) -> None:
    """The trace event naming the secondary index a SELECT reads through (``query.index_lookup.choose``)."""
    if not table.indexes:
        return
    from ..query.index_lookup import choose
    from ..query.restrictions import analyse
    try:
        plan = choose(table, analyse(table, stmt.where, ev, select=True, allow_filtering=stmt.allow_filtering),
                      stmt.where, unbuilt)
    except CqlError:
        return
    if plan is not None:
        ix = plan.index
        trace.event(f"Using secondary index {table.keyspace}.{ix.name} ({'local' if ix.local else 'global'}"
                    f"{'' if plan.scan else ', not looked up: the partition key is given'})")


def _traced_read(trace: TracingSession | None, result: ResultSet) -> ResultSet:
    if trace is not None:
        more = "; more pages follow" if result.paging_state else ""
        trace.event(f"Read {len(result)} live row(s){more}")
    return result

