"""DELETE to tombstones: of cells, collection elements and UDT fields, rows, clustering ranges (with their
bounds in clustering order, as ScyllaDB's range tombstones have them) and partitions.
"""

from __future__ import annotations

from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..query.restrictions import KeyRestrictions, analyse
from ..schema import types as T
from ..schema.model import STATIC, Column, Table
from .cells import NO_TTL, Cell, Deletion, reconcile_deletion
from .collections import list_key_at
from .context import Attributes, WriteContext, resolve_attributes
from .model import Mutation, RangeDeletion
from .targets import Target, addressed_rows, check_no_filters, check_primary_key_parts, check_static_only_statement, non_key_column, partition_targets, row_for
from .writer import RowWriter, field_key


def build_delete(stmt: ast.Delete, table: Table, ctx: WriteContext, mutation: Mutation) -> list[Target]:
    """Add a DELETE to the mutation: cells, elements, rows, ranges or partitions."""
    attrs = resolve_attributes(stmt.using, table, ctx, allow_ttl=False)
    check_static_only_statement(stmt, table)
    shape = ctx.key_shape(stmt, table)
    if shape is not None:  # every key column once by ``=``: the clause's shape analysed once (``targets.KeyShape``)
        return _delete_row(stmt, table, ctx, mutation, attrs, shape.targets(ctx.ev))
    check_primary_key_parts(stmt, table)
    kr = analyse(table, stmt.where, ctx.ev)
    check_no_filters(kr)
    deletion = Deletion(attrs.timestamp, ctx.now)
    if stmt.targets:
        cols = _deleted_columns(stmt, table)
        static_only = all(c.kind == STATIC for c in cols) and bool(table.clustering_key)
        if not static_only and kr.clustering_slice is not None:
            raise InvalidRequest("Range deletions are not supported for specific columns")
        targets = addressed_rows(table, kr, static_only and not kr.clustering_restricted)
        return _delete_columns(stmt, cols, table, ctx, mutation, attrs, targets)
    check_no_filters(kr)
    parts = partition_targets(table, kr)
    if kr.empty:  # ``b IN ()`` deletes nothing (its clustering prefixes were stood in for by the whole partition)
        return []
    ck_cols = table.clustering_key
    out: list[Target] = []
    for key, pk, token in parts:
        pu = mutation.partition(table, key, pk, token)
        if not kr.clustering_restricted:
            pu.deletion = reconcile_deletion(pu.deletion, deletion)
            out.append(Target(key, pk, token, (), b""))
            continue
        for prefix in kr.clustering_prefixes:
            if kr.clustering_slice is None and len(prefix) == len(ck_cols):
                row, ck = row_for(pu, table, prefix, static=False)
                row.deletion = reconcile_deletion(row.deletion, deletion)
                out.append(Target(key, pk, token, prefix, ck))
                continue
            sub = KeyRestrictions(clustering_prefixes=[prefix], clustering_slice=kr.clustering_slice)
            for lo, hi in sub.clustering_ranges(table):
                sl = kr.clustering_slice
                start = prefix + (sl.start.values if sl and sl.start else ())
                end = prefix + (sl.end.values if sl and sl.end else ())
                start_inc: bool | None = (sl.start.inclusive if sl and sl.start else (True if prefix else None))
                end_inc: bool | None = (sl.end.inclusive if sl and sl.end else (True if prefix else None))
                if sl is not None and sl.first < len(ck_cols) and ck_cols[sl.first].reversed:
                    # bounds in clustering order, as ScyllaDB's range tombstones (and so its CDC log) have them
                    start, start_inc, end, end_inc = end, end_inc, start, start_inc
                pu.range_deletions.append(RangeDeletion(start, start_inc, end, end_inc, lo, hi, deletion))
            out.append(Target(key, pk, token, prefix, b""))
    return out


def _deleted_columns(stmt: ast.Delete, table: Table) -> list[Column]:
    """The columns a DELETE names (``DELETE c, m[k], u.f FROM ...``), each a non-key column of the table."""
    return [non_key_column(table, tgt, "Invalid identifier {name} for deletion (should not be a PRIMARY KEY "
                                       "part)", "Unknown identifier {name}") for tgt in stmt.targets]


def _delete_columns(stmt: ast.Delete, cols: list[Column], table: Table, ctx: WriteContext, mutation: Mutation,
                    attrs: Attributes, targets: list[Target]) -> list[Target]:
    """The cells, elements and fields a DELETE names (``cols``) deleted in each of its ``targets``."""
    for tg in targets:
        pu = mutation.partition(table, tg.key, tg.pk, tg.token)
        for tgt, col in zip(stmt.targets, cols):
            static = col.kind == STATIC
            row, ck = row_for(pu, table, () if static else tg.clustering, static, tg.ck)
            _delete_target(tgt, col, RowWriter(pu, row, attrs, ctx, ck), tg)
    return targets


def _delete_row(stmt: ast.Delete, table: Table, ctx: WriteContext, mutation: Mutation, attrs: Attributes,
                targets: list[Target]) -> list[Target]:
    """:func:`build_delete` of a DELETE whose WHERE clause names the whole primary key by ``=`` (its one
    ``targets``, from ``targets.KeyShape``): the same cells, elements, row or (a table without clustering
    columns) partition deleted, with the same checks in the same order."""
    if stmt.targets:
        cols = _deleted_columns(stmt, table)
        return _delete_columns(stmt, cols, table, ctx, mutation, attrs, targets)
    deletion = Deletion(attrs.timestamp, ctx.now)
    for tg in targets:
        pu = mutation.partition(table, tg.key, tg.pk, tg.token)
        if not table.clustering_key:
            pu.deletion = reconcile_deletion(pu.deletion, deletion)
            continue
        row, _ = row_for(pu, table, tg.clustering, False, tg.ck)
        row.deletion = reconcile_deletion(row.deletion, deletion)
    return targets


def _delete_target(tgt: Any, col: Column, w: RowWriter, tg: Target) -> None:
    t = col.type
    ctx = w.ctx
    ts = w.attrs.timestamp
    if isinstance(tgt, ast.ColumnRef):
        if t.is_multicell:
            w.delete_collection(col.name, ts)
        else:
            w.put_cell(col.name, Cell(ts, None, NO_TTL, ctx.now))
        return
    if isinstance(tgt, ast.FieldRef):
        if not isinstance(t, T.UserType):  # ScyllaDB's words (operation::field_deletion)
            raise InvalidRequest(f"Invalid deletion operation for non-UDT column {col.name}")
        if not t.is_multicell:
            raise InvalidRequest(f"Frozen UDT column {col.name} does not support field deletions")
        if tgt.field not in t.field_names:
            raise InvalidRequest(f"UDT column {col.name} does not have a field named {tgt.field}")
        w.put_element(col.name, field_key(t.field_names.index(tgt.field)), Cell(ts, None, NO_TTL, ctx.now))
        return
    # element
    if not t.is_collection or not t.is_multicell:
        raise InvalidRequest(f"Invalid deletion operation for non collection column {col.name}"
                             if t.is_multicell or not t.is_collection else
                             f"Invalid deletion operation for frozen collection column {col.name}")
    if isinstance(t, T.MapType):
        k = ctx.ev.value(tgt.key, t.key, f"key({col.name})")
        if k is None:
            raise InvalidRequest("Invalid null value for map key")
        if k is T.UNSET:
            raise InvalidRequest(f"Invalid unset value for map key of column {col.name}")
        w.put_element(col.name, t.key.serialize(k), Cell(ts, None, NO_TTL, ctx.now))
    elif isinstance(t, T.SetType):
        k = ctx.ev.value(tgt.key, t.element, col.name)
        if k is None:
            raise InvalidRequest("Invalid null value for set element")
        if k is T.UNSET:
            raise InvalidRequest(f"Invalid unset value for set element of column {col.name}")
        w.put_element(col.name, t.element.serialize(k), Cell(ts, None, NO_TTL, ctx.now))
    else:
        if isinstance(tgt.key, ast.TimeuuidListIndex):
            k = ctx.ev.value(tgt.key.key, T.TIMEUUID, f"key({col.name})")
            key = T.TIMEUUID.serialize(k)
        else:
            idx = ctx.ev.value(tgt.key, T.INT, f"idx({col.name})")
            if idx is T.UNSET:
                return  # an unset index deletes nothing, as in Cassandra and ScyllaDB
            key = list_key_at(col, w, tg, idx)
        w.put_element(col.name, key, Cell(ts, None, NO_TTL, ctx.now))
