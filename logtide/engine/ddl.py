"""Schema changes: DDL under the write lock, the CDC log tables and changefeeds that follow it, and DESCRIBE.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..cdc import log_schema
from ..cql import ast
from ..cql.view_ast import CreateView
from ..errors import InvalidRequest, TruncateError
from ..query.evaluate import TermEvaluator
from ..query.timeout import Deadline
from ..result import ColumnSpec, ResultSet, Row, SchemaChange
from ..schema import types as T
from ..schema.catalog import Catalog
from ..schema.indexes import index_store_ids
from ..schema.model import Table
from ..storage.sqlite import CATALOG_KEY
from ..tracing import TracingSession
from .commit import committed_event
from .view_build import start_builds
from .views import check_where


def drop_time_bound(ev: TermEvaluator, stmt: ast.AlterTableDrop) -> ast.AlterTableDrop:
    """``DROP c USING TIMESTAMP t`` with ``t`` evaluated (a literal or a bound value)."""
    value = ev.value(stmt.timestamp, T.BIGINT, "[timestamp]")
    if value is None or value is T.UNSET:
        raise InvalidRequest("Invalid null value of timestamp")
    return replace(stmt, timestamp=ast.Constant("integer", str(value)))

def execute_ddl(db: Any, user: str | None, keyspace: str | None, stmt: Any,
                trace: TracingSession | None = None) -> ResultSet:
    """A schema change, with the CDC log tables it implies, committed under the write lock (``Catalog.apply``,
    ``cdc.log_schema``); the changefeeds follow; with authentication, permissions follow too."""
    if trace is not None:
        trace.event("Waiting for the write lock (schema change)")
    with db.write_lock:
        old = db.catalog
        log_schema.check_statement(old, stmt, keyspace)
        if isinstance(stmt, CreateView):
            check_where(old, stmt, keyspace, db.functions)  # multi-column and token() relations, as a SELECT's
        now = db.timestamps.next()
        new, change = old.apply(stmt, keyspace, now)
        if change is None:
            return ResultSet("void")
        log_schema.validate(new)
        new = log_schema.sync_log_tables(old, new, now)
        new = db.speculative_retry.apply(old, new, stmt)  # speculative_retry_user_table_default (system.config)
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
                # a view or index created over existing rows: built in the background (an index's first chunk now)
                builds = start_builds(txn, old, new, db.now_seconds(), db.view_builds.chunk)
                db.feeds.dropped(txn, _dropped_feed_ids(old, new))
                wrote = db.feeds.altered(txn, old, new)
        except BaseException:
            db.feeds.forget_offsets()
            raise
        db.catalog = new
        if wrote:
            db.feeds.notify()
        if builds:
            db.view_builds.started()
        db.row_expiry.ensure_worker()  # a table got a TTL column: its rows expire
    implied = _log_changes(old, new, change)
    if trace is not None:
        trace.event(committed_event(db.store.synchronous))
    auth = getattr(db, "auth", None)
    if auth is not None:
        _grants_follow_schema(auth, user, [change, *implied])
    return ResultSet("schema_change", schema_change=change, implied_changes=implied + _index_view_changes(old, new))

SNITCH = "org.apache.cassandra.locator.SimpleSnitch"  # one node, one data center and rack


def describe(catalog: Catalog, keyspace: str | None, stmt: ast.Describe,
             auth_rows: list[Any] | None = None) -> ResultSet:
    """``DESCRIBE ...``: ScyllaDB's rows (``schema.describe``); ``auth_rows`` (roles, grants, service levels of
    ``DESC SCHEMA WITH INTERNALS``, ``logtide.auth``) follow the keyspaces'."""
    from ..schema.describe import describe_rows
    rows = describe_rows(stmt, catalog, keyspace) + list(auth_rows or ())
    names: tuple[str, ...] = ("keyspace_name", "type", "name", "create_statement")
    if stmt.kind in ("keyspaces", "tables", "types", "functions", "aggregates"):
        names = names[:3]  # a listing has no statements (ScyllaDB's get_listing_column_specifications)
    cols = tuple(ColumnSpec("system", "describe", n, T.TEXT) for n in names)
    return ResultSet("rows", cols, [Row(names, list(r[:len(names)])) for r in rows], describe=True)


def describe_cluster(catalog: Catalog, keyspace: str | None, node: Any) -> ResultSet:
    """``DESCRIBE CLUSTER`` as ScyllaDB answers it (``cluster_describe_statement``): the cluster's name, partitioner
    and snitch, and with a current keyspace that is not a system one, its ``range_ownership`` (each range's end
    token and its endpoints: this node; ``schema.system_ring``)."""
    from ..schema.describe import SYSTEM_KEYSPACES
    from ..schema.system_ring import range_ownership
    from ..schema.system_schema import node_tokens

    names = ["cluster", "partitioner", "snitch"]
    types: list[Any] = [T.TEXT, T.TEXT, T.TEXT]
    values: list[Any] = [node.cluster_name, node.partitioner, SNITCH]
    if keyspace is not None and keyspace not in SYSTEM_KEYSPACES and catalog.find_keyspace(keyspace) is not None:
        names.append("range_ownership")
        types.append(T.MapType(T.TEXT, T.ListType(T.TEXT)))
        values.append(range_ownership(node_tokens(node), node.broadcast_address))
    cols = tuple(ColumnSpec("system", "describe", n, t) for n, t in zip(names, types))
    return ResultSet("rows", cols, [Row(tuple(names), values)], describe=True)


def _grants_follow_schema(auth: Any, user: str | None, changes: list[SchemaChange]) -> None:
    """Permissions follow a schema change, as in ScyllaDB: the role that created a keyspace or table (and so the
    CDC log that came with it) is granted every permission on it; a dropped one takes its grants with it, as does a
    dropped function or aggregate."""
    from ..auth import DataResource
    for c in changes:
        if c.target in ("FUNCTION", "AGGREGATE"):  # no grant to a function's creator: ScyllaDB gives none
            if c.change_type == "DROPPED":
                auth.forget_function(c.keyspace, f"{c.name}({', '.join(c.argument_types)})")
            continue
        if c.target not in ("KEYSPACE", "TABLE"):
            continue
        table = c.name if c.target == "TABLE" else None
        if c.change_type == "CREATED":
            auth.grant_to_creator(user, DataResource(c.keyspace, table))
        elif c.change_type == "DROPPED":
            auth.forget(c.keyspace, table)


def _index_view_changes(old: Catalog, new: Catalog) -> list[SchemaChange]:
    """The schema changes ScyllaDB pushes for the views behind secondary indexes (``on_create_view``,
    ``on_update_view``, ``on_drop_view`` are TABLE events): ``CREATED`` / ``DROPPED TABLE ks.<index>_index`` after
    CREATE / DROP INDEX, ``UPDATED`` when the view changed with its base, so that drivers' ``keyspace.views``
    follows ``system_schema.views``.  None for a base table created or dropped: drivers take its views with it.
    No permission follows them (a view of an index is granted nothing)."""
    from ..schema.indexes import index_views
    out = []
    for ks in new.keyspaces.values():
        before = old.keyspaces.get(ks.name)
        if before is None:
            continue
        kept = {n for n, t in ks.tables.items() if n in before.tables and before.tables[n].id == t.id}
        now = {v.name: v for v in index_views(ks) if v.view is not None and v.view.base_table in kept}
        then = {v.name: v for v in index_views(before) if v.view is not None and v.view.base_table in kept}
        out += [SchemaChange("DROPPED", "TABLE", ks.name, n) for n in sorted(then.keys() - now.keys())]
        out += [SchemaChange("CREATED", "TABLE", ks.name, n, hold=False) for n in sorted(now.keys() - then.keys())]
        out += [SchemaChange("UPDATED", "TABLE", ks.name, n) for n in sorted(now.keys() & then.keys())
                if now[n] != then[n]]
    return out


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



def _dropped_feed_ids(old: Catalog, new: Catalog) -> list[int]:
    """Changefeeds that went with a dropped table or keyspace."""
    def ids(cat: Catalog) -> set[int]:
        return {f.feed_id for ks in cat.keyspaces.values() for t in ks.tables.values() for f in t.changefeeds}
    return sorted(ids(old) - ids(new))


def _dropped_store_ids(old: Catalog, new: Catalog) -> list[int]:
    """The store ids of the tables and secondary indexes a schema change dropped (their data goes with them)."""
    def ids(cat: Catalog) -> set[int]:
        return {t.store_id for ks in cat.all_keyspaces() for t in ks.tables.values()} | index_store_ids(cat)
    return sorted(ids(old) - ids(new))


def truncate(db: Any, table: Table, deadline: Deadline | None = None) -> ResultSet:
    """``TRUNCATE``: every row of ``table`` removed in one commit, with its materialized views' rows and its
    secondary indexes' entries (the CDC log keeps what it logged); a view cannot be truncated itself (ScyllaDB's
    ``truncate_statement``).  With a ``deadline`` (``USING TIMEOUT``) past by the time it would commit, nothing
    is removed and it fails with a truncate error, as ScyllaDB's ``truncate_exception``."""
    if table.view is not None:
        raise InvalidRequest("Cannot TRUNCATE materialized view directly; must truncate base table instead")
    ids = [table.store_id, *(ix.store_id for ix in table.indexes),
           *(v.store_id for v, _ in db.catalog.views_by_base.get(table.store_id, ()))]

    def work(txn: Any) -> None:
        if deadline is not None and deadline.passed():
            raise TruncateError(f"Error during truncate: timed out truncating {table.keyspace}.{table.name} "
                                f"(USING TIMEOUT {deadline.timeout_ms}ms)")
        for tid in ids:
            txn.drop_table_data(tid)
    db.committer.run(work)
    return ResultSet("void")
