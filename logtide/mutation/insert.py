"""INSERT (and INSERT JSON) to cells: a row marker, then each value (spec ``003``: INSERT writes a row
marker, UPDATE does not; static columns live in the static row, which has none).  A prepared INSERT's shape
is checked once per statement and table (``INSERT_PLANS``); a plain upsert bound from a list or tuple takes
``_build_bound_insert``, the same mutation and errors without the per-statement checks.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import PARTITION_KEY, STATIC, Column, Table, check_partition_key
from ..storage.keys import partition_token, serialize_partition_key
from .cells import Liveness, reconcile, reconcile_liveness
from .context import Attributes, WriteContext, resolve_attributes
from .model import Mutation
from .targets import Target, check_primary_key_parts, check_value_size, key_bytes, row_for
from .writer import RowWriter


@dataclass(frozen=True)
class _InsertPlan:
    """What an INSERT ... VALUES statement's shape decides once for a table: its columns (checked),
    whether it writes only the static row, and the value columns it sets in table order."""

    columns: tuple[tuple[str, Column, Any], ...]
    static_only: bool
    value_columns: tuple[Column, ...]
    atomic: bool  # every value column is a regular column of an atomic type: each value is one cell
    # the plain upsert bound from a list or tuple (every value a bind marker, the whole primary key given,
    # each value one cell, no USING): (column name, type, marker index) in statement order; else None
    markers: tuple[tuple[str, Any, int], ...] | None = None
    bound_count: int = 0  # the values ``markers`` needs: one past its largest marker index
    default_ttl: int = 0  # the table's, read once


class _InsertPlans:
    """Plans of recently executed INSERT statements, by the identity of the statement and the table (a
    prepared statement executes its parsed statement object again and again; a schema change makes new
    table objects).  Bounded: starts over past ``limit`` entries."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._plans: dict[tuple[int, int], tuple[ast.Insert, Table, _InsertPlan | None]] = {}
        self._lock = threading.Lock()

    def get(self, stmt: ast.Insert, table: Table) -> _InsertPlan | None:
        """The plan, or None where the statement has a problem (the general path reports it) or is JSON."""
        hit = self._plans.get((id(stmt), id(table)))
        if hit is not None and hit[0] is stmt and hit[1] is table:
            return hit[2]
        plan = _insert_plan(stmt, table)
        with self._lock:
            if len(self._plans) >= self.limit:
                self._plans.clear()
            self._plans[(id(stmt), id(table))] = (stmt, table, plan)
        return plan


def _insert_plan(stmt: ast.Insert, table: Table) -> _InsertPlan | None:
    if stmt.json is not None or len(stmt.columns) != len(stmt.values) or len(set(stmt.columns)) != len(stmt.columns):
        return None
    cols = []
    for name, term in zip(stmt.columns, stmt.values):
        col = table.column(name)
        if col is None or col.type.is_counter:
            return None
        cols.append((name, col, term))
    names = set(stmt.columns)
    value_columns = tuple(c for c in table.value_columns if c.name in names)
    static_only = _static_only(table, names)
    atomic = all(c.kind != STATIC and not c.type.is_multicell for c in value_columns)
    markers = None
    if (atomic and not static_only and stmt.using.timestamp is None and stmt.using.ttl is None
            and all(isinstance(term, ast.BindMarker) for _, _, term in cols)
            and all(c.name in names for c in table.primary_key)):
        markers = tuple((name, col.type, term.index) for name, col, term in cols)
    return _InsertPlan(tuple(cols), static_only, value_columns, atomic, markers,
                       1 + max((i for _, _, i in markers or ()), default=-1), table.default_ttl)


def _static_only(table: Table, names) -> bool:
    return (bool(table.clustering_key)
            and not any(c.name in names for c in table.clustering_key)
            and any(table.column(n).kind == STATIC for n in names)
            and all(table.column(n).kind in (PARTITION_KEY, STATIC) for n in names))


INSERT_PLANS = _InsertPlans()


def missing_key_part(stmt: ast.Insert, table: Table, column: Column) -> None:
    """An INSERT without a value for the key column ``column``, refused in ScyllaDB's words: by names as when it
    is prepared (``targets.check_primary_key_parts``), and for INSERT JSON, whose key is missing or null
    (``insert_prepared_json_statement``), ``Missing mandatory PRIMARY KEY part c``."""
    check_primary_key_parts(stmt, table)
    raise InvalidRequest(f"Missing mandatory PRIMARY KEY part {column.name}")


def build_insert(stmt: ast.Insert, table: Table, ctx: WriteContext, mutation: Mutation) -> list[Target]:
    """Add an INSERT to the mutation; returns the row it writes."""
    if table.is_counter_table:
        raise InvalidRequest("INSERT statements are not allowed on counter tables, use UPDATE instead")
    plan = INSERT_PLANS.get(stmt, table)
    if plan is not None and plan.markers is not None:
        bound = getattr(ctx.ev, "bound", None)
        if (type(bound) is list or type(bound) is tuple) and len(bound) >= plan.bound_count:
            return _build_bound_insert(plan, bound, table, ctx, mutation)
    atomic = False
    if plan is None:
        values = _insert_values(stmt, table, ctx)
        static_only = _static_only(table, values)
        value_columns: tuple[Column, ...] | list[Column] = table.value_columns
    else:
        ev = ctx.ev
        values = {name: ev.value(term, col.type, name) for name, col, term in plan.columns}
        static_only = plan.static_only
        value_columns = plan.value_columns
        atomic = plan.atomic and not static_only
    attrs = resolve_attributes(stmt.using, table, ctx)
    key_values: list[bytes] = []
    json = stmt.json is not None
    for c in table.partition_key:
        v = values.get(c.name, T.UNSET)
        if (v is T.UNSET and c.name not in values) or (json and (v is None or v is T.UNSET)):
            missing_key_part(stmt, table, c)
        key_values.append(key_bytes(c, v))
    clustering: list[bytes] = []
    if not static_only:
        for c in table.clustering_key:
            if c.name not in values or (json and (values[c.name] is None or values[c.name] is T.UNSET)):
                missing_key_part(stmt, table, c)
            clustering.append(key_bytes(c, values[c.name]))
    check_partition_key(key_values)
    pk = serialize_partition_key(key_values)
    token = partition_token(table, pk)
    pu = mutation.partition(table, tuple(key_values), pk, token)
    target_ck = b""
    if not static_only:
        row, target_ck = row_for(pu, table, tuple(clustering), static=False)
        w = RowWriter(pu, row, attrs, ctx, target_ck)
        marker = Liveness(attrs.timestamp, attrs.ttl, ctx.now + attrs.ttl) if attrs.ttl else Liveness(attrs.timestamp)
        row.marker = reconcile_liveness(row.marker, marker)
    if atomic:  # each value one cell (RowWriter.set_value without its checks)
        now = ctx.now
        for c in value_columns:
            v = values[c.name]
            if v is not T.UNSET:
                w.put_cell(c.name, attrs.cell(None if v is None else c.type.serialize(v), now))
        return [Target(tuple(key_values), pk, token, tuple(clustering), target_ck)]
    for c in value_columns:
        if c.name not in values:
            continue
        v = values[c.name]
        if v is T.UNSET:
            continue
        if c.kind == STATIC:
            srow, _ = row_for(pu, table, (), static=True)
            RowWriter(pu, srow, attrs, ctx, b"").set_value(c, v)
        else:
            w.set_value(c, v)
    return [Target(tuple(key_values), pk, token, tuple(clustering), target_ck)]


def _build_bound_insert(plan: _InsertPlan, bound: list | tuple, table: Table, ctx: WriteContext,
                        mutation: Mutation) -> list[Target]:
    """:func:`build_insert` of a plan with ``markers``, the values given as a list or tuple: the same
    mutation and the same errors in the same order, without what the plan decided once (the
    evaluator, ``USING``, missing key columns, a writer per row)."""
    unset = T.UNSET
    to_value = T.python_to_value
    values: dict[str, Any] = {}
    for name, ctype, i in plan.markers:  # type: ignore[union-attr]
        v = bound[i]
        values[name] = v if v is None or v is unset else to_value(ctype, v, name)
    ts = ctx.timestamp
    ttl = plan.default_ttl
    attrs = Attributes(ts, ttl)
    keys: list[bytes] = []
    for c in table.primary_key:  # _key_bytes of each, inline
        v = values[c.name]
        data = key_bytes(c, v) if v is None or v is unset else c.type.serialize(v)
        if len(data) > 0xFFFF:
            check_value_size(c, data)
        keys.append(data)
    n = len(table.partition_key)
    key_values = keys[:n]
    clustering = tuple(keys[n:])
    check_partition_key(key_values)
    pk = serialize_partition_key(key_values)
    token = partition_token(table, pk)
    key = tuple(key_values)
    pu = mutation.partition(table, key, pk, token)
    row, target_ck = row_for(pu, table, clustering, static=False)
    now = ctx.now
    marker = Liveness(ts, ttl, now + ttl) if ttl else Liveness(ts)
    row.marker = reconcile_liveness(row.marker, marker)
    cells = row.cells
    for c in plan.value_columns:
        v = values[c.name]
        if v is not unset:
            cell = attrs.cell(None if v is None else c.type.serialize(v), now)
            cur = cells.get(c.name)
            cells[c.name] = cell if cur is None else reconcile(cur, cell)
    return [Target(key, pk, token, clustering, target_ck)]




def _insert_values(stmt: ast.Insert, table: Table, ctx: WriteContext) -> dict[str, Any]:
    if stmt.json is not None:
        return json_values(stmt, table, ctx)
    if len(stmt.columns) != len(stmt.values):
        raise InvalidRequest("Unmatched column names/values")
    values: dict[str, Any] = {}
    for name, term in zip(stmt.columns, stmt.values):
        col = table.column(name)
        if col is None:
            raise InvalidRequest(f"Unknown identifier {name}")  # ScyllaDB's words
        if name in values:
            raise InvalidRequest(f"Multiple definitions found for column {name}")
        if col.type.is_counter:
            raise InvalidRequest("INSERT statements are not allowed on counter tables, use UPDATE instead")
        values[name] = ctx.ev.value(term, col.type, name)
    return values


def json_values(stmt: ast.Insert, table: Table, ctx: WriteContext) -> dict[str, Any]:
    """The column values of an INSERT JSON (columns it omits: null, or unset with DEFAULT UNSET)."""
    text = ctx.ev.value(stmt.json, T.TEXT, "[json]")
    if text is None:
        raise InvalidRequest("Got null for INSERT JSON values")
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise InvalidRequest(f"Could not decode JSON string as a map: {e}. (String was: {text})") from None
    if not isinstance(obj, dict):
        raise InvalidRequest(f"Could not decode JSON string as a map: not a JSON object. (String was: {text})")
    by_name: dict[str, Any] = {}
    for raw, v in obj.items():
        name = raw[1:-1] if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"') else raw.lower()
        col = table.column(name)
        if col is None:
            raise InvalidRequest(f"JSON values map contains unrecognized column: {raw}")
        by_name[name] = None if v is None else T.from_json(col.type, v, name)
    values: dict[str, Any] = {}
    for c in table.columns:
        if c.name in by_name:
            values[c.name] = by_name[c.name]
        elif not stmt.json_default_unset:
            values[c.name] = None
    return values
