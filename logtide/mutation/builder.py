"""INSERT, UPDATE and DELETE statements become timestamped cell writes and tombstones.

The rules are Cassandra's/ScyllaDB's (see spec ``003`` for row markers and
statement kinds, ``002`` for collections):

* INSERT writes a row marker; UPDATE does not.  Static columns live in the
  static row, which has no marker.
* Assigning a whole non-frozen collection or UDT (``SET c = ...`` and INSERT)
  writes a collection tombstone at ``T - 1`` plus the new elements at ``T``;
  ``DELETE c`` writes the collection tombstone at ``T``.
* Lists are maps keyed by timeuuids: appends take increasing keys from the
  clock, prepends decreasing keys below every earlier prepend, and
  ``l[i] = v``, ``DELETE l[i]`` and ``l = l - [v]`` read the list first.
* Non-frozen UDT fields are cells keyed by the field index (a smallint).
"""

from __future__ import annotations

import decimal

import json
import struct
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import CLUSTERING, PARTITION_KEY, STATIC, Column, Table, check_key_length, check_partition_key
from ..storage.keys import clustering_key, partition_token, serialize_partition_key
from ..query.restrictions import Evaluator, KeyRestrictions, analyse
from .cells import (NO_TTL, Cell, ComplexColumn, Deletion, Liveness, RowData, reconcile, reconcile_deletion,
                    reconcile_liveness)
from .model import Mutation, PartitionUpdate, RangeDeletion

MAX_TTL = 20 * 365 * 24 * 60 * 60  # Cassandra's Attributes.MAX_TTL
GREGORIAN_OFFSET = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01
PREPEND_EPOCH = 1262304000000 * 10_000  # 2010-01-01 in 100 ns units since 1970, as Cassandra's Lists


class ListKeys:
    """Timeuuid keys for list elements, as Cassandra/ScyllaDB generate them.

    Appends get increasing times from the clock; prepends get decreasing
    times mirrored around 2010-01-01 so that each prepend lands before all
    earlier ones.  The clock sequence is random per database, the node is
    ``000000000001``.
    """

    def __init__(self, clock_micros: Callable[[], int], clock_seq: int | None = None) -> None:
        import random
        self._clock = clock_micros
        self._seq = random.getrandbits(14) if clock_seq is None else clock_seq
        self._last_append = 0
        self._last_prepend = 1 << 62
        self._lock = threading.Lock()

    def _uuid(self, t100: int) -> bytes:
        t = t100 + GREGORIAN_OFFSET
        u = uuid.UUID(fields=(t & 0xFFFFFFFF, (t >> 32) & 0xFFFF, ((t >> 48) & 0x0FFF) | 0x1000,
                              ((self._seq >> 8) & 0x3F) | 0x80, self._seq & 0xFF, 1))
        return u.bytes

    def append(self, n: int) -> list[bytes]:
        with self._lock:
            base = max(self._clock() * 10, self._last_append + 1)
            self._last_append = base + n - 1
        return [self._uuid(base + i) for i in range(n)]

    def prepend(self, n: int) -> list[bytes]:
        with self._lock:
            base = min(2 * PREPEND_EPOCH - self._clock() * 10, self._last_prepend - n)
            self._last_prepend = base
        return [self._uuid(base + i) for i in range(n)]


class RowReader:
    """Reads the current state of a row before a write (lists by index/value, counters, conditions, images)."""

    def row(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool) -> Any:
        """The live row (``query.read.LiveRow``), or the static row, as it is before the write; None if absent."""
        raise NotImplementedError

    def live_complex(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> list[tuple[bytes, Cell]]:
        raise NotImplementedError

    def live_cell(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> Cell | None:
        raise NotImplementedError


@dataclass
class WriteContext:
    """What building a mutation needs besides the statement."""

    timestamp: int
    now: int
    ev: Evaluator
    reader: RowReader
    list_keys: ListKeys


@dataclass(frozen=True)
class Attributes:
    """A statement's resolved ``USING`` attributes."""

    timestamp: int
    ttl: int

    def cell(self, value: bytes | None, now: int) -> Cell:
        if value is None:
            return Cell(self.timestamp, None, NO_TTL, now)
        if self.ttl:
            return Cell(self.timestamp, value, self.ttl, now + self.ttl)
        return Cell(self.timestamp, value)


MIN_TIMESTAMP = -(2 ** 63) + 1


def resolve_attributes(using: ast.Using, table: Table, ctx: WriteContext, allow_ttl: bool = True) -> Attributes:
    """Timestamp and TTL of a statement (``USING``, else the batch timestamp and the table's default TTL)."""
    ts = ctx.timestamp
    if using.timestamp is not None:
        v = ctx.ev.value(using.timestamp, T.BIGINT, "[timestamp]")
        if v is None:
            raise InvalidRequest("Invalid null value of timestamp")
        if v is not T.UNSET:
            ts = int(v)
    if ts < MIN_TIMESTAMP:  # -2**63 marks "not deleted" (ScyllaDB's api::min_timestamp is one above it)
        raise InvalidRequest(f"Out of bound timestamp, must be in [{MIN_TIMESTAMP}, {2 ** 63 - 1}]")
    ttl = table.default_ttl
    if using.ttl is not None:
        if not allow_ttl:
            raise InvalidRequest("Unsupported TTL for DELETE statements")
        v = ctx.ev.value(using.ttl, T.INT, "[ttl]")
        if v is None:
            raise InvalidRequest("Invalid null value of TTL")
        if v is not T.UNSET:
            ttl = int(v)
            if ttl < 0:
                raise InvalidRequest(f"A TTL must be greater or equal to 0, but was {ttl}")
            if ttl > MAX_TTL:
                raise InvalidRequest(f"ttl is too large. requested ({ttl}) maximum ({MAX_TTL})")
    return Attributes(ts, ttl)


# ---------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------


@dataclass
class Target:
    """One addressed row: partition key values, partition key bytes, token, clustering values and key."""

    key: tuple[bytes, ...]
    pk: bytes
    token: int
    clustering: tuple[bytes, ...]
    ck: bytes


def _partition_targets(table: Table, kr: KeyRestrictions) -> list[tuple[tuple[bytes, ...], bytes, int]]:
    if kr.partition_keys is None:
        present = {f.column.name for f in kr.filters if f.column.kind == PARTITION_KEY}
        missing = [c.name for c in table.partition_key if c.name not in present]
        if missing and len(missing) == len(table.partition_key) and (kr.token_lo or kr.token_hi):
            raise InvalidRequest("The token function cannot be used in WHERE clauses for UPDATE and DELETE statements")
        raise InvalidRequest("Some partition key parts are missing: " + ", ".join(missing or [c.name for c in table.partition_key]))
    out = []
    seen = set()
    for key in kr.partition_keys:
        pk = serialize_partition_key(key)
        if pk in seen:
            continue
        seen.add(pk)
        check_partition_key(key)
        out.append((key, pk, partition_token(table, pk)))
    return out


def _check_no_filters(kr: KeyRestrictions) -> None:
    bad = [f.column.name for f in kr.filters if not f.column.is_primary_key]
    if bad:
        raise InvalidRequest("Non PRIMARY KEY columns found in where clause: " + ", ".join(bad))
    if any(f.column.kind == CLUSTERING for f in kr.filters):
        raise InvalidRequest(kr.clustering_gap_error or "Invalid clustering restrictions")


def _full_clusterings(table: Table, kr: KeyRestrictions) -> list[tuple[bytes, ...]]:
    ck_cols = table.clustering_key
    if kr.clustering_slice is not None:
        raise InvalidRequest("Slice restrictions are not supported on the clustering columns in UPDATE statements")
    prefixes = kr.clustering_prefixes
    if ck_cols and (not prefixes or len(prefixes[0]) < len(ck_cols)):
        have = len(prefixes[0]) if prefixes else 0
        missing = [c.name for c in ck_cols[have:]]
        raise InvalidRequest("Some clustering keys are missing: " + ", ".join(missing))
    return prefixes


# ---------------------------------------------------------------------------
# values to cells
# ---------------------------------------------------------------------------


def _check_value_size(col: Column, data: bytes) -> None:
    if col.is_primary_key and len(data) > 0xFFFF:
        raise InvalidRequest(f"Key length of {len(data)} is longer than maximum of 65535")


def field_key(index: int) -> bytes:
    """The cell key of a non-frozen UDT field: its index as a big-endian smallint."""
    return struct.pack(">h", index)


def collection_cells(col: Column, value: Any, attrs: Attributes, ctx: WriteContext, prepend: bool = False) -> dict[bytes, Cell]:
    """Element cells for a whole non-frozen collection or UDT value."""
    t = col.type
    cells: dict[bytes, Cell] = {}
    if value is None:
        return cells
    if isinstance(t, T.ListType):
        items = list(value)
        for v in items:
            if v is None:
                raise InvalidRequest("null is not supported inside collections")
        keys = ctx.list_keys.prepend(len(items)) if prepend else ctx.list_keys.append(len(items))
        for k, v in zip(keys, items):
            cells[k] = attrs.cell(t.element.serialize(v), ctx.now)
    elif isinstance(t, T.SetType):
        for v in value:
            if v is None:
                raise InvalidRequest("null is not supported inside collections")
            cells[t.element.serialize(v)] = attrs.cell(b"", ctx.now)
    elif isinstance(t, T.MapType):
        for k, v in value.items():
            if k is None or v is None:
                raise InvalidRequest("null is not supported inside collections")
            cells[t.key.serialize(k)] = attrs.cell(t.value.serialize(v), ctx.now)
    elif isinstance(t, T.UserType):
        for i, (fname, ftype) in enumerate(zip(t.field_names, t.field_types)):
            fv = _udt_field(value, fname, i)
            if fv is not None:
                cells[field_key(i)] = attrs.cell(ftype.serialize(fv), ctx.now)
    return cells


def _udt_field(value: Any, name: str, index: int) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    if hasattr(value, "_fields"):
        return getattr(value, name, None) if name in value._fields else (value[index] if index < len(value) else None)
    return value[index] if index < len(value) else None


class RowWriter:
    """Accumulates the writes of one statement into a row of a partition update."""

    def __init__(self, pu: PartitionUpdate, row: RowData, attrs: Attributes, ctx: WriteContext, ck: bytes) -> None:
        self.pu = pu
        self.row = row
        self.attrs = attrs
        self.ctx = ctx
        self.ck = ck

    def _complex(self, name: str) -> ComplexColumn:
        col = self.row.complex.get(name)
        if col is None:
            col = self.row.complex[name] = ComplexColumn()
        return col

    def put_cell(self, name: str, cell: Cell) -> None:
        cur = self.row.cells.get(name)
        self.row.cells[name] = cell if cur is None else reconcile(cur, cell)

    def put_element(self, name: str, key: bytes, cell: Cell) -> None:
        col = self._complex(name)
        cur = col.cells.get(key)
        col.cells[key] = cell if cur is None else reconcile(cur, cell)

    def delete_collection(self, name: str, timestamp: int) -> None:
        col = self._complex(name)
        col.deletion = reconcile_deletion(col.deletion, Deletion(timestamp, self.ctx.now))

    def set_value(self, col: Column, value: Any) -> None:
        """``c = value`` / INSERT value: a cell, or a collection overwrite (tombstone at T-1 plus elements)."""
        if value is T.UNSET:
            return
        if col.type.is_multicell:
            self.delete_collection(col.name, self.attrs.timestamp - 1)
            for k, cell in collection_cells(col, value, self.attrs, self.ctx).items():
                self.put_element(col.name, k, cell)
            return
        data = None if value is None else col.type.serialize(value)
        self.put_cell(col.name, self.attrs.cell(data, self.ctx.now))


# ---------------------------------------------------------------------------
# statements
# ---------------------------------------------------------------------------


def _row_for(pu: PartitionUpdate, table: Table, clustering: tuple[bytes, ...], static: bool) -> tuple[RowData, bytes]:
    if static:
        if pu.static is None:
            pu.static = RowData(())
        return pu.static, b""
    ck = clustering_key(table.clustering_key, clustering)
    row = pu.rows.get(ck)
    if row is None:
        if clustering:
            check_key_length(clustering)
        row = pu.rows[ck] = RowData(clustering)
    return row, ck


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
    for c in table.partition_key:
        v = values.get(c.name, T.UNSET)
        if v is T.UNSET and c.name not in values:
            raise InvalidRequest(f"Some partition key parts are missing: {c.name}")
        key_values.append(key_bytes(c, v))
    clustering: list[bytes] = []
    if not static_only:
        for c in table.clustering_key:
            if c.name not in values:
                raise InvalidRequest(f"Some clustering keys are missing: {c.name}")
            clustering.append(key_bytes(c, values[c.name]))
    check_partition_key(key_values)
    pk = serialize_partition_key(key_values)
    token = partition_token(table, pk)
    pu = mutation.partition(table, tuple(key_values), pk, token)
    target_ck = b""
    if not static_only:
        row, target_ck = _row_for(pu, table, tuple(clustering), static=False)
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
            srow, _ = _row_for(pu, table, (), static=True)
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
            _check_value_size(c, data)
        keys.append(data)
    n = len(table.partition_key)
    key_values = keys[:n]
    clustering = tuple(keys[n:])
    check_partition_key(key_values)
    pk = serialize_partition_key(key_values)
    token = partition_token(table, pk)
    key = tuple(key_values)
    pu = mutation.partition(table, key, pk, token)
    row, target_ck = _row_for(pu, table, clustering, static=False)
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


def key_bytes(col: Column, value: Any) -> bytes:
    """A primary-key column's value serialized; null, unset and oversized values refused as ScyllaDB does."""
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    if value is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {col.name}")
    data = col.type.serialize(value)
    _check_value_size(col, data)
    return data


def _insert_values(stmt: ast.Insert, table: Table, ctx: WriteContext) -> dict[str, Any]:
    if stmt.json is not None:
        return json_values(stmt, table, ctx)
    if len(stmt.columns) != len(stmt.values):
        raise InvalidRequest("Unmatched column names/values")
    values: dict[str, Any] = {}
    for name, term in zip(stmt.columns, stmt.values):
        col = table.column(name)
        if col is None:
            raise InvalidRequest(f"Undefined column name {name}")
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


def _assigned_columns(stmt: ast.Update, table: Table) -> list[Column]:
    cols = []
    for a in stmt.assignments:
        col = table.column(a.column)
        if col is None:
            raise InvalidRequest(f"Undefined column name {a.column}")
        if col.is_primary_key:
            raise InvalidRequest(f"PRIMARY KEY part {col.name} found in SET part")
        cols.append(col)
    return cols


def _addressed_rows(table: Table, kr: KeyRestrictions, static_only: bool) -> list[Target]:
    _check_no_filters(kr)
    parts = _partition_targets(table, kr)
    if kr.empty:  # an empty IN (``b IN ()``) addresses no row
        return []
    if static_only:
        if kr.clustering_restricted:
            raise InvalidRequest("Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns")
        clusterings: list[tuple[bytes, ...]] = [()]
    else:
        clusterings = _full_clusterings(table, kr)
    out = []
    for key, pk, token in parts:
        for cl in clusterings:
            ck = b"" if static_only else clustering_key(table.clustering_key, cl)
            out.append(Target(key, pk, token, cl, ck))
    return out


def build_update(stmt: ast.Update, table: Table, ctx: WriteContext, mutation: Mutation) -> list[Target]:
    """Add an UPDATE to the mutation; returns the rows it addresses."""
    cols = _assigned_columns(stmt, table)
    attrs = resolve_attributes(stmt.using, table, ctx)
    if table.is_counter_table:
        if stmt.using.timestamp is not None:
            raise InvalidRequest("Cannot provide custom timestamp for counter updates")
        if stmt.using.ttl is not None:
            raise InvalidRequest("Cannot provide custom TTL for counter updates")
    kr = analyse(table, stmt.where, ctx.ev)
    static_only = bool(cols) and all(c.kind == STATIC for c in cols)
    targets = _addressed_rows(table, kr, static_only and table.clustering_key != ())
    conditional = is_conditional(stmt)
    for tg in targets:
        pu = mutation.partition(table, tg.key, tg.pk, tg.token)
        for a, col in zip(stmt.assignments, cols):
            static = col.kind == STATIC
            row, ck = _row_for(pu, table, () if static else tg.clustering, static)
            w = RowWriter(pu, row, attrs, ctx, ck)
            if conditional and isinstance(a, (ast.AddTo, ast.SubtractFrom)) and col.type in ARITHMETIC_TYPES:
                _arithmetic(a, col, w, tg)
            else:
                _assign(a, col, w, tg)
    return targets


def is_conditional(stmt: Any) -> bool:
    """Whether a statement is a lightweight transaction (IF EXISTS, IF NOT EXISTS or IF conditions)."""
    return bool(getattr(stmt, "if_not_exists", False) or getattr(stmt, "if_exists", False)
                or getattr(stmt, "conditions", ()))


ARITHMETIC_TYPES = (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT, T.VARINT, T.FLOAT, T.DOUBLE, T.DECIMAL)
_INT_BITS = {T.TINYINT: 8, T.SMALLINT: 16, T.INT: 32, T.BIGINT: 64}


def check_assignments(stmt: ast.Update, table: Table) -> None:
    """The checks of an UPDATE's assignments made when it is prepared (ScyllaDB refuses them at PREPARE):
    ``c = c + x`` / ``c = c - x`` needs a counter, collection or UDT column, or a numeric column in a
    lightweight transaction (ScyllaDB's extension)."""
    conditional = is_conditional(stmt)
    for a in stmt.assignments:
        col = table.column(a.column)
        if col is not None and col.is_primary_key:
            raise InvalidRequest(f"PRIMARY KEY part {col.name} found in SET part")
        if col is None or not isinstance(a, (ast.AddTo, ast.SubtractFrom)):
            continue
        t = col.type
        if t.is_counter or t.is_collection or isinstance(t, T.UserType):
            continue
        if not (conditional and t in ARITHMETIC_TYPES):
            raise InvalidRequest(f"Invalid operation ({_op_text(a)}) for non counter column {col.name}")
        if isinstance(a.value, ast.Constant):
            T.term_to_value(a.value, t, col.name, None)  # a literal of the wrong type is refused now


def _arithmetic(a: Any, col: Column, w: RowWriter, tg: Target) -> None:
    """ScyllaDB's ``SET c = c + x`` / ``c - x`` on a numeric column of a lightweight transaction: the
    old value (read in the same write transaction as the condition) plus or minus ``x``; null when
    the old value is null; fixed-width integers refuse to overflow."""
    t = col.type
    ctx = w.ctx
    delta = ctx.ev.value(a.value, t, col.name)
    if delta is T.UNSET:
        return
    pending = w.row.cells.get(col.name)
    if pending is not None:
        old = None if pending.value is None else t.deserialize(pending.value)
    else:
        current = ctx.reader.live_cell(w.pu.table, tg.pk, tg.token, w.ck, col)
        old = None if current is None or current.value is None else t.deserialize(current.value)
    if old is None or delta is None:
        return  # null plus anything is null: the column stays as it is
    if t == T.DECIMAL:
        new = _decimal_sum(old, delta if isinstance(a, ast.AddTo) else -delta)
    else:
        new = old + delta if isinstance(a, ast.AddTo) else old - delta
    bits = _INT_BITS.get(t)
    if bits is not None and not -(2 ** (bits - 1)) <= new < 2 ** (bits - 1):
        raise InvalidRequest(f"Arithmetic {'ADD' if isinstance(a, ast.AddTo) else 'SUB'} overflow")
    w.set_value(col, new)


def _decimal_sum(a: Any, b: Any) -> Any:
    """``a + b`` exactly, refused when aligning the two scales would take more than 10,000 digits."""
    if not (a.is_finite() and b.is_finite()):
        raise InvalidRequest("Arithmetic on a non-finite decimal value")
    ea, eb = a.as_tuple(), b.as_tuple()
    width = max(len(ea.digits) + ea.exponent, len(eb.digits) + eb.exponent) - min(ea.exponent, eb.exponent) + 1
    if width > 10_000:
        raise InvalidRequest("Arithmetic ADD on decimal values of too different magnitudes")
    with decimal.localcontext() as dc:
        dc.prec = max(width, 28)
        return a + b


def _assign(a: Any, col: Column, w: RowWriter, tg: Target) -> None:
    t = col.type
    ctx = w.ctx
    if isinstance(a, ast.SetColumn):
        if t.is_counter:
            raise InvalidRequest(f"Cannot set the value of counter column {col.name} (counters can only be incremented/decremented, not set)")
        w.set_value(col, ctx.ev.value(a.value, t, col.name))
    elif isinstance(a, (ast.AddTo, ast.SubtractFrom, ast.PrependTo)):
        _collection_op(a, col, w, tg)
    elif isinstance(a, ast.SetElement):
        _set_element(a, col, w, tg)
    elif isinstance(a, ast.SetField):
        if not isinstance(t, T.UserType):
            raise InvalidRequest(f"Invalid field selection: {col.name} of type {t.cql()} is not a user type")
        if not t.is_multicell:
            raise InvalidRequest(f"Invalid operation ({col.name}.{a.field} = ...) for frozen UDT column {col.name}")
        if a.field not in t.field_names:
            raise InvalidRequest(f"UDT column {col.name} does not have a field named {a.field}")
        idx = t.field_names.index(a.field)
        ftype = t.field_types[idx]
        v = ctx.ev.value(a.value, ftype, f"{col.name}.{a.field}")
        if v is T.UNSET:
            return
        w.put_element(col.name, field_key(idx), w.attrs.cell(None if v is None else ftype.serialize(v), ctx.now))
    else:  # pragma: no cover - parser produces only the kinds above
        raise InvalidRequest(f"Unsupported assignment {a!r}")


def _op_text(a: Any) -> str:
    if isinstance(a, ast.AddTo):
        return f"{a.column} = {a.column} + ..."
    if isinstance(a, ast.SubtractFrom):
        return f"{a.column} = {a.column} - ..."
    return f"{a.column} = ... + {a.column}"


def _collection_op(a: Any, col: Column, w: RowWriter, tg: Target) -> None:
    t = col.type
    ctx = w.ctx
    if t.is_counter:
        if isinstance(a, ast.PrependTo):
            raise InvalidRequest(f"Invalid operation ({_op_text(a)}) for non list column {col.name}")
        delta = ctx.ev.value(a.value, T.BIGINT, col.name)
        if delta is T.UNSET:
            return
        if delta is None:
            raise InvalidRequest("Invalid null value for counter increment/decrement")
        current = ctx.reader.live_cell(w.pu.table, tg.pk, tg.token, w.ck, col)
        base = T.BIGINT.deserialize(current.value) if current is not None and current.value else 0
        pending = w.row.cells.get(col.name)
        if pending is not None and pending.value is not None:
            base = T.BIGINT.deserialize(pending.value)
        new = base + (delta if isinstance(a, ast.AddTo) else -delta)
        if not -(2**63) <= new < 2**63:
            raise InvalidRequest("Counter value overflow")
        w.row.cells[col.name] = Cell(w.attrs.timestamp, T.BIGINT.serialize(new))
        return
    if not t.is_collection and not isinstance(t, T.UserType):
        raise InvalidRequest(f"Invalid operation ({_op_text(a)}) for non counter column {col.name}")
    if not t.is_multicell:
        raise InvalidRequest(f"Invalid operation ({_op_text(a)}) for frozen collection column {col.name}")
    if isinstance(a, ast.PrependTo) and not isinstance(t, T.ListType):
        raise InvalidRequest(f"Invalid operation ({_op_text(a)}) for non list column {col.name}")
    if isinstance(a, ast.SubtractFrom):
        _subtract(a, col, w, tg)
        return
    if isinstance(t, T.UserType):
        raise InvalidRequest(f"Invalid operation ({_op_text(a)}) for non counter column {col.name}")
    value = ctx.ev.value(a.value, t, col.name)
    if value is T.UNSET or value is None:
        return
    for k, cell in collection_cells(col, value, w.attrs, ctx, prepend=isinstance(a, ast.PrependTo)).items():
        w.put_element(col.name, k, cell)


def _subtract(a: ast.SubtractFrom, col: Column, w: RowWriter, tg: Target) -> None:
    t = col.type
    ctx = w.ctx
    if isinstance(t, T.MapType):
        keys = ctx.ev.value(a.value, T.SetType(t.key, False), col.name)
        if keys is T.UNSET or keys is None:
            return
        for k in keys:
            w.put_element(col.name, t.key.serialize(k), w.attrs.cell(None, ctx.now))
    elif isinstance(t, T.SetType):
        elems = ctx.ev.value(a.value, t, col.name)
        if elems is T.UNSET or elems is None:
            return
        for e in elems:
            w.put_element(col.name, t.element.serialize(e), w.attrs.cell(None, ctx.now))
    elif isinstance(t, T.ListType):
        values = ctx.ev.value(a.value, t, col.name)
        if values is T.UNSET or values is None:
            return
        doomed = {t.element.serialize(v) for v in values}
        for key, cell in ctx.reader.live_complex(w.pu.table, tg.pk, tg.token, w.ck, col):
            if cell.value in doomed:
                w.put_element(col.name, key, w.attrs.cell(None, ctx.now))
    else:
        raise InvalidRequest(f"Invalid operation ({_op_text(a)}) for non counter column {col.name}")


def _list_key_at(col: Column, w: RowWriter, tg: Target, index: Any) -> bytes:
    if index is None:
        raise InvalidRequest("Invalid null value for list index")
    items = w.ctx.reader.live_complex(w.pu.table, tg.pk, tg.token, w.ck, col)
    if index < 0 or index >= len(items):
        raise InvalidRequest(f"List index {index} out of bound, list has size {len(items)}")
    return items[index][0]


def _set_element(a: ast.SetElement, col: Column, w: RowWriter, tg: Target) -> None:
    t = col.type
    ctx = w.ctx
    if not t.is_collection or isinstance(t, T.SetType):
        raise InvalidRequest(f"Invalid operation ({col.name}[...] = ...) for non list/map column {col.name}"
                             if not isinstance(t, T.SetType) else
                             f"Invalid operation ({col.name}[...] = ...) for set column {col.name}")
    if not t.is_multicell:
        raise InvalidRequest(f"Invalid operation ({col.name}[...] = ...) for frozen collection column {col.name}")
    if isinstance(t, T.MapType):
        key = ctx.ev.value(a.key, t.key, f"key({col.name})")
        if key is None:
            raise InvalidRequest("Invalid null value for map key")
        if key is T.UNSET:
            raise InvalidRequest("Invalid unset map key")
        v = ctx.ev.value(a.value, t.value, f"value({col.name})")
        if v is T.UNSET:
            return
        w.put_element(col.name, t.key.serialize(key), w.attrs.cell(None if v is None else t.value.serialize(v), ctx.now))
        return
    # list
    if isinstance(a.key, ast.TimeuuidListIndex):
        k = ctx.ev.value(a.key.key, T.TIMEUUID, f"key({col.name})")
        if k is None:
            raise InvalidRequest("Invalid null value for list index")
        key = T.TIMEUUID.serialize(k)
    else:
        idx = ctx.ev.value(a.key, T.INT, f"idx({col.name})")
        if idx is T.UNSET:
            raise InvalidRequest("Invalid unset value for list index")
        key = _list_key_at(col, w, tg, idx)
    v = ctx.ev.value(a.value, t.element, f"value({col.name})")
    if v is T.UNSET:
        return
    w.put_element(col.name, key, w.attrs.cell(None if v is None else t.element.serialize(v), ctx.now))


def build_delete(stmt: ast.Delete, table: Table, ctx: WriteContext, mutation: Mutation) -> list[Target]:
    """Add a DELETE to the mutation: cells, elements, rows, ranges or partitions."""
    attrs = resolve_attributes(stmt.using, table, ctx, allow_ttl=False)
    kr = analyse(table, stmt.where, ctx.ev)
    _check_no_filters(kr)
    deletion = Deletion(attrs.timestamp, ctx.now)
    if stmt.targets:
        cols = []
        for tgt in stmt.targets:
            name = tgt.name if isinstance(tgt, ast.ColumnRef) else tgt.column
            col = table.column(name)
            if col is None:
                raise InvalidRequest(f"Undefined column name {name}")
            if col.is_primary_key:
                raise InvalidRequest(f"Invalid identifier {name} for deletion (should not be a PRIMARY KEY part)")
            cols.append(col)
        static_only = all(c.kind == STATIC for c in cols) and bool(table.clustering_key)
        if not static_only and kr.clustering_slice is not None:
            raise InvalidRequest("Range deletions are not supported for specific columns")
        targets = _addressed_rows(table, kr, static_only and not kr.clustering_restricted)
        for tg in targets:
            pu = mutation.partition(table, tg.key, tg.pk, tg.token)
            for tgt, col in zip(stmt.targets, cols):
                static = col.kind == STATIC
                row, ck = _row_for(pu, table, () if static else tg.clustering, static)
                _delete_target(tgt, col, RowWriter(pu, row, attrs, ctx, ck), tg)
        return targets
    _check_no_filters(kr)
    parts = _partition_targets(table, kr)
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
                row, ck = _row_for(pu, table, prefix, static=False)
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
        if not isinstance(t, T.UserType) or not t.is_multicell:
            raise InvalidRequest(f"Invalid field deletion: {col.name} is not a non-frozen user type")
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
            key = _list_key_at(col, w, tg, idx)
        w.put_element(col.name, key, Cell(ts, None, NO_TTL, ctx.now))


BATCH_SIZE_WARN_THRESHOLD = 128 * 1024   # ScyllaDB's batch_size_warn_threshold_in_kb default
BATCH_SIZE_FAIL_THRESHOLD = 1024 * 1024  # ScyllaDB's batch_size_fail_threshold_in_kb default
_PARTITION_OVERHEAD, _ROW_OVERHEAD, _CELL_OVERHEAD = 128, 96, 64


def mutation_size(mutation: Mutation) -> int:
    """The in-memory size of a mutation as ScyllaDB measures a batch (an estimate: key and value bytes plus a
    fixed overhead per partition, row and cell)."""
    size = 0
    for pu in mutation.partitions.values():
        size += _PARTITION_OVERHEAD + len(pu.pk) + len(pu.range_deletions) * _ROW_OVERHEAD
        for row in ([pu.static] if pu.static is not None else []) + list(pu.rows.values()):
            size += _ROW_OVERHEAD + sum(len(c) for c in row.clustering)
            for cell in row.cells.values():
                size += _CELL_OVERHEAD + len(cell.value or b"")
            for cc in row.complex.values():
                size += sum(_CELL_OVERHEAD + len(k) + len(c.value or b"") for k, c in cc.cells.items())
    return size


def check_batch_size(mutation: Mutation, logged: bool) -> str | None:
    """ScyllaDB's batch size rule, for a batch touching more than one partition: over the fail threshold it
    is refused ("Batch too large"), over the warn threshold the returned warning goes to the client."""
    if len(mutation.partitions) <= 1:
        return None
    size = mutation_size(mutation)
    if size <= BATCH_SIZE_WARN_THRESHOLD:
        return None
    if size > BATCH_SIZE_FAIL_THRESHOLD:
        raise InvalidRequest("Batch too large")
    tables = ", ".join(sorted({f"{pu.table.keyspace}.{pu.table.name}" for pu in mutation.partitions.values()}))
    return (f"{'Logged' if logged else 'Unlogged'} batch modifying {len(mutation.partitions)} partitions in "
            f"{tables} is of size {size} bytes, exceeding specified WARN threshold of "
            f"{BATCH_SIZE_WARN_THRESHOLD} by {size - BATCH_SIZE_WARN_THRESHOLD}.")


def build(stmt: Any, table: Table, ctx: WriteContext, mutation: Mutation) -> list[Target]:
    """Add one INSERT/UPDATE/DELETE to ``mutation``."""
    if isinstance(stmt, ast.Insert):
        return build_insert(stmt, table, ctx, mutation)
    if isinstance(stmt, ast.Update):
        return build_update(stmt, table, ctx, mutation)
    if isinstance(stmt, ast.Delete):
        return build_delete(stmt, table, ctx, mutation)
    raise InvalidRequest(f"Unsupported statement in a batch: {type(stmt).__name__}")


__all__: Sequence[str] = ["build", "WriteContext", "ListKeys", "RowReader", "Target", "field_key"]
