"""Lightweight transactions: ``IF NOT EXISTS``, ``IF EXISTS`` and ``IF`` conditions.

Conditions are checked against the current row inside the same write
transaction that applies the statement, so check and write are atomic (the
single-node equivalent of Paxos).  A failed check writes nothing.  The result
is ScyllaDB's, applied or not: ``[applied]`` and the values the row had before
the statement (docs/compatibility.md "Writes, lightweight transactions, JSON,
validation and types").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..mutation.assignments import check_assignments, is_conditional
from ..mutation.context import WriteContext
from ..mutation.insert import json_values, missing_key_part
from ..mutation.targets import (changed_columns, check_conditional_delete, check_primary_key_parts, condition_columns,
                                key_bytes, non_key_column)
from ..query.read import LiveRow, column_bytes
from ..query.restrictions import analyse
from ..result import ColumnSpec, ResultSet, Row
from ..schema import types as T
from ..schema.model import CLUSTERING, PARTITION_KEY, REGULAR, STATIC, Column, Table, check_partition_key
from ..storage.keys import clustering_key, partition_token, serialize_partition_key


def _check_conditional_where(stmt: Any, table: Table) -> None:
    """ScyllaDB's checks of a conditional UPDATE's or DELETE's WHERE clause, in its order
    (``modification_statement::process_where_clause`` and ``validate_where_clause_for_conditions``), after
    those of ``mutation.targets`` (``check_static_only_statement``, ``check_conditional_where``: IN)."""
    if isinstance(stmt, ast.Insert):
        return
    check_primary_key_parts(stmt, table)
    if isinstance(stmt, ast.Delete):
        check_conditional_delete(stmt, table)


def _row_key(stmt: Any, table: Table, ctx: WriteContext) -> tuple[tuple[bytes, ...], bytes, int, tuple[bytes, ...] | None]:
    """The partition key (values, serialized, token) and the full clustering key a statement addresses, or None
    for the partition's static row (no clustering restriction)."""
    if isinstance(stmt, ast.Insert):
        if stmt.json is not None:
            values = json_values(stmt, table, ctx)
        else:
            values = {n: ctx.ev.value(v, table.column(n).type, n) for n, v in zip(stmt.columns, stmt.values)
                      if table.column(n) is not None and table.column(n).is_primary_key}
        key = []
        for c in table.partition_key:
            if c.name not in values:
                missing_key_part(stmt, table, c)
            key.append(key_bytes(c, values[c.name]))
        clustering = []
        for c in table.clustering_key:
            if c.name not in values:
                return tuple(key), serialize_partition_key(key), partition_token(table, serialize_partition_key(key)), None
            clustering.append(key_bytes(c, values[c.name]))
        pk = serialize_partition_key(key)
        return tuple(key), pk, partition_token(table, pk), tuple(clustering)
    kr = analyse(table, stmt.where, ctx.ev)  # the terms' types first, as ScyllaDB's restrictions analysis
    if is_conditional(stmt):
        _check_conditional_where(stmt, table)
    if kr.partition_keys is None or len(kr.partition_keys) != 1:
        raise InvalidRequest("IN on the partition key is not supported with conditional updates"
                             if kr.partition_keys else f"Missing mandatory PRIMARY KEY part {table.partition_key[0].name}")
    key = kr.partition_keys[0]
    pk = serialize_partition_key(key)
    if len(kr.clustering_prefixes) != 1:
        raise InvalidRequest("IN on the clustering key columns is not supported with conditional updates")
    clustering = kr.clustering_prefixes[0]
    if kr.clustering_slice is not None or len(clustering) < len(table.clustering_key):
        if not _static_only(stmt, table) or clustering:
            raise InvalidRequest("DELETE statements must restrict all PRIMARY KEY columns with equality relations "
                                 "in order to use IF conditions"
                                 if isinstance(stmt, ast.Delete) else
                                 f"Missing mandatory PRIMARY KEY part {table.clustering_key[len(clustering)].name}")
        return key, pk, partition_token(table, pk), None
    return key, pk, partition_token(table, pk), clustering


def _static_only(stmt: Any, table: Table) -> bool:
    cols = changed_columns(stmt, table) + condition_columns(stmt, table)
    return bool(cols) and all(c.kind == STATIC for c in cols)


class _CurrentRow:
    """The current row and static row a condition is checked against."""

    def __init__(self, key: tuple[bytes, ...], row: LiveRow | None, static: LiveRow | None) -> None:
        self.key = key
        self.row = row
        self.static = static

    def value(self, col: Column) -> Any:
        if col.kind == PARTITION_KEY:
            return col.type.deserialize(self.key[col.position])
        if col.kind == CLUSTERING:
            return None if self.row is None else col.type.deserialize(self.row.clustering[col.position])
        src = self.static if col.kind == STATIC else self.row
        b = None if src is None else column_bytes(src, col)
        return None if b is None else col.type.deserialize(b)

    def exists(self, static_only: bool) -> bool:
        return (self.static if static_only else self.row) is not None


def _compare(t: Any, current: Any, op: str, expected: Any) -> bool:
    if op == "IN":
        return expected is not None and any(_compare(t, current, "=", e) for e in expected)
    if op == "NOT IN":
        return expected is None or not any(_compare(t, current, "=", e) for e in expected)
    if op in ("=", "!="):
        if current is None or expected is None:
            eq = current is None and expected is None
        else:
            a, b = t.serialize(current), t.serialize(expected)
            eq = a == b if t == T.DURATION else t.compare(a, b) == 0  # durations are equal or not, never ordered
        return eq if op == "=" else not eq
    if expected is None:
        raise InvalidRequest(f"Invalid comparison with null for operator \"{op}\"")
    if current is None:
        return False
    c = t.compare(t.serialize(current), t.serialize(expected))
    return {"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def _condition_holds(cond: ast.Condition, table: Table, cur: _CurrentRow, ctx: WriteContext) -> bool:
    lhs = cond.lhs
    col = non_key_column(table, lhs, "PRIMARY KEY column '{name}' cannot have IF conditions",
                         "Unrecognized name {name}")
    name = col.name
    value = cur.value(col)
    t = col.type
    if isinstance(lhs, ast.ElementRef):
        if isinstance(t, T.MapType):
            key = ctx.ev.value(lhs.key, t.key, f"key({name})")
            value = None if value is None else value.get(key)
            t = t.value
        elif isinstance(t, T.ListType):
            idx = ctx.ev.value(lhs.key, T.INT, f"idx({name})")
            value = None if value is None or idx >= len(value) else value[idx]
            t = t.element
        else:
            raise InvalidRequest(f"Invalid element access on column {name} of type {t.cql()}")
    elif isinstance(lhs, ast.FieldRef):
        if not isinstance(t, T.UserType) or lhs.field not in t.field_names:
            raise InvalidRequest(f"Invalid field {lhs.field} for column {name}")
        idx = t.field_names.index(lhs.field)
        value = None if value is None or idx >= len(value) else value[idx]
        t = t.field_types[idx]
    if cond.op in ("CONTAINS", "CONTAINS KEY"):
        et = t.key if cond.op == "CONTAINS KEY" else (t.value if isinstance(t, T.MapType) else t.element)
        needle = ctx.ev.value(cond.rhs, et, name)
        if needle is T.UNSET:
            raise InvalidRequest(f"Invalid unset value in the condition on column {name}")
        if value is None:
            return False
        items = value.keys() if cond.op == "CONTAINS KEY" else (value.values() if isinstance(t, T.MapType) else value)
        return any(et.compare(et.serialize(x), et.serialize(needle)) == 0 for x in items)
    if cond.op in ("IN", "NOT IN"):
        items = cond.rhs.items if isinstance(cond.rhs, ast.InValues) else None
        expected = ([ctx.ev.value(i, t, name) for i in items] if items is not None
                    else _in_list(cond.rhs, t, name, ctx))
    else:
        expected = ctx.ev.value(cond.rhs, t, name)
    if expected is T.UNSET or (isinstance(expected, list) and any(e is T.UNSET for e in expected)):
        raise InvalidRequest(f"Invalid unset value in the condition on column {name}")
    return _compare(t, value, cond.op, expected)


@dataclass(frozen=True)
class Outcome:
    """A conditional statement's or batch's check: ``applied`` and the result the client gets either way."""

    applied: bool
    result: ResultSet


def _in_list(rhs: Any, t: Any, name: str, ctx: WriteContext) -> list[Any] | None:
    """The values of ``IF c IN ?``: a bound list may hold nulls (ScyllaDB compares them as values)."""
    if isinstance(rhs, ast.BindMarker):
        raw = ctx.ev.bound_value(rhs)
        if raw is T.UNSET:
            raise InvalidRequest(f"Invalid unset value for IN condition on column {name}")
        if raw is None:
            return None  # ScyllaDB: nothing is IN null, everything is NOT IN null
        if isinstance(raw, (str, bytes, bytearray)) or not hasattr(raw, "__iter__"):
            raise InvalidRequest(f"Invalid IN condition value for column {name}: expected a list")
        return [None if x is None else T.python_to_value(t, x, name) for x in raw]
    return list(ctx.ev.value(rhs, T.ListType(t, True), name) or [])


@dataclass
class _Update:
    """One statement of a conditional statement or batch (ScyllaDB's ``cas_row_update``)."""

    stmt: Any
    table: Table
    ctx: WriteContext
    key: tuple[bytes, ...]
    ck: bytes | None  # the full clustering key it addresses; None: the partition's static row
    conditional: bool
    static_conditions: bool  # its conditions name static columns only (IF [NOT] EXISTS on a static row too)


def _has_static_conditions(stmt: Any, table: Table, ck: bytes | None) -> bool:
    if getattr(stmt, "if_not_exists", False) or getattr(stmt, "if_exists", False):
        return bool(table.static_columns) and ck is None
    cols = condition_columns(stmt, table)
    return bool(cols) and all(c.kind == STATIC for c in cols)


def _check_condition_type(cond: ast.Condition, table: Table) -> None:
    """A slice condition (``<``, ``<=``, ``>``, ``>=``) on a duration is refused, as ScyllaDB refuses it."""
    if cond.op not in ("<", "<=", ">", ">="):
        return
    lhs = cond.lhs
    col = table.column(lhs.name if isinstance(lhs, ast.ColumnRef) else lhs.column)
    t = None if col is None else col.type
    if isinstance(lhs, ast.ElementRef):
        t = t.value if isinstance(t, T.MapType) else getattr(t, "element", None)
    elif isinstance(lhs, ast.FieldRef) and isinstance(t, T.UserType) and lhs.field in t.field_names:
        t = t.field_types[t.field_names.index(lhs.field)]
    if t == T.DURATION:
        raise InvalidRequest(f"Duration type is unordered for {col.name}")


def _requires_read(stmt: Any, table: Table) -> bool:
    """Whether a statement's own operations read the old row (list elements by index or value, arithmetic)."""
    ops: list[Any] = list(getattr(stmt, "assignments", ())) + [t for t in getattr(stmt, "targets", ())
                                                                 if isinstance(t, ast.ElementRef)]
    for op in ops:
        col = table.column(op.column)
        t = None if col is None else col.type
        if isinstance(t, T.ListType) and isinstance(op, (ast.SetElement, ast.SubtractFrom, ast.ElementRef)):
            return True
        if t is not None and not t.is_counter and not t.is_collection and isinstance(op, (ast.AddTo, ast.SubtractFrom)):
            return True
    return False


def check_conditions(stmts: Sequence[Any], tables: Sequence[Table], contexts: Sequence[WriteContext],
                     in_batch: bool) -> Outcome:
    """Check the conditions of a conditional statement or batch against the rows as they are now.

    As ScyllaDB's CAS request (``cas_request``): the rows the conditional statements address are read (for
    conditions on static columns only, the first live row of the partition), plus the partition's static
    row when the partition has data; each statement is checked against its row, or the static row when
    its row does not exist (not for IF [NOT] EXISTS), the first failing statement deciding.  The result
    has ``[applied]`` and, for each statement in order, the values that row had: the columns its
    conditions name (every column for ``IF [NOT] EXISTS``; in a batch, the union of them with the primary
    key), all null where no row was found."""
    updates: list[_Update] = []
    keys = set()
    for stmt, table, ctx in zip(stmts, tables, contexts):
        conditional = is_conditional(stmt)
        if isinstance(stmt, ast.Update):
            check_assignments(stmt, table)  # refused whether or not the conditions hold
        try:
            key, pk, token, clustering = _row_key(stmt, table, ctx)
        except InvalidRequest:
            if conditional:
                raise
            continue  # e.g. a range deletion beside the conditions: no one row to show
        check_partition_key(key)
        keys.add(pk)
        ck = clustering_key(table.clustering_key, clustering) if clustering is not None else None
        for cond in getattr(stmt, "conditions", ()):
            _check_condition_type(cond, table)
        updates.append(_Update(stmt, table, ctx, key, ck, conditional, _has_static_conditions(stmt, table, ck)))
    if len(keys) > 1:
        raise InvalidRequest("BATCH with conditions cannot span multiple partitions")
    first = updates[0]
    table, reader = first.table, first.ctx.reader
    pk = serialize_partition_key(list(first.key))
    token = partition_token(table, pk)
    wanted = [u.ck for u in updates if u.ck is not None and (u.conditional or _requires_read(u.stmt, table))
              and not (u.static_conditions and not _requires_read(u.stmt, table))]
    rows: dict[bytes, LiveRow] = {}
    if wanted:
        for ck in dict.fromkeys(wanted):
            row = reader.row(table, pk, token, ck, False)
            if row is not None:
                rows[ck] = row
    elif table.clustering_key:
        row = reader.first_row(table, pk, token)  # any row of the partition tells that it exists
        if row is not None:
            rows[row.ck] = row
    elif updates and table.partition_key:
        row = reader.row(table, pk, token, b"", False)
        if row is not None:
            rows[b""] = row
    static = reader.row(table, pk, token, b"", True) if table.static_columns else None
    # ScyllaDB's prefetch has the static row whenever the partition came back (static or clustering data)
    static_row = (_OldRow(first.key, None, static) if table.clustering_key and table.static_columns
                  and (static is not None or rows) else None)

    def old_row(u: _Update) -> "_OldRow | None":
        if u.ck is None:
            return static_row
        row = rows.get(u.ck)
        if row is not None:
            return _OldRow(first.key, row, static)
        exists_check = getattr(u.stmt, "if_exists", False) or getattr(u.stmt, "if_not_exists", False)
        return static_row if table.clustering_key and not exists_check else None

    applied = all(_applies(u, old_row(u)) for u in updates if u.conditional)
    return Outcome(applied, _result(updates, [old_row(u) for u in updates], applied, in_batch))


@dataclass(frozen=True)
class _OldRow:
    """A row as the CAS read found it: a clustering row with its partition's static values, or the static
    row alone (``row`` None: clustering and regular columns null)."""

    key: tuple[bytes, ...]
    row: LiveRow | None
    static: LiveRow | None

    def has_static(self) -> bool:
        return self.static is not None

    def current(self) -> _CurrentRow:
        return _CurrentRow(self.key, self.row, self.static)


def _applies(u: _Update, found: _OldRow | None) -> bool:
    """Whether one statement's conditions hold against its old row (ScyllaDB's ``applies_to``)."""
    if u.static_conditions and found is not None and not found.has_static():
        found = None  # a partition without static values has no static row to check
    if getattr(u.stmt, "if_exists", False):
        return found is not None
    if getattr(u.stmt, "if_not_exists", False):
        return found is None
    cur = found.current() if found is not None else _CurrentRow(u.key, None, None)
    return all(_condition_holds(c, u.table, cur, u.ctx) for c in getattr(u.stmt, "conditions", ()))


def _shown_columns(stmt: Any, table: Table) -> set[str]:
    if getattr(stmt, "if_not_exists", False) or getattr(stmt, "if_exists", False):
        return {c.name for c in table.columns}
    return {c.lhs.name if isinstance(c.lhs, ast.ColumnRef) else c.lhs.column for c in getattr(stmt, "conditions", ())}


_KIND_ORDER = {PARTITION_KEY: 0, CLUSTERING: 1, STATIC: 2, REGULAR: 3}


def _result(updates: list[_Update], found: list["_OldRow | None"], applied: bool, in_batch: bool) -> ResultSet:
    """ScyllaDB's CAS result set: its columns in the table's order (key, clustering, static, regular)."""
    table = updates[0].table
    names: set[str] = {c.name for c in table.primary_key} if in_batch else set()
    for u in updates:
        if u.conditional:
            names |= _shown_columns(u.stmt, table)
    cols = sorted((c for c in table.columns if c.name in names), key=lambda c: _KIND_ORDER.get(c.kind, 3))
    specs = (ColumnSpec(table.keyspace, table.name, "[applied]", T.BOOLEAN),) + tuple(
        ColumnSpec(table.keyspace, table.name, c.name, c.type) for c in cols)
    names_t = tuple(s.name for s in specs)
    out = []
    for old in found:
        if old is None:
            values: list[Any] = [None] * len(cols)
        else:
            cur = old.current()
            values = [cur.value(c) for c in cols]
        out.append(Row(names_t, [applied] + values))
    return ResultSet("rows", specs, out)
