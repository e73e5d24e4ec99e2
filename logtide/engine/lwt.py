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
from ..mutation.insert import json_values
from ..mutation.targets import key_bytes, non_key_column
from ..query.read import LiveRow, column_bytes
from ..query.restrictions import analyse
from ..result import ColumnSpec, ResultSet, Row
from ..schema import types as T
from ..schema.model import CLUSTERING, PARTITION_KEY, REGULAR, STATIC, Column, Table, check_partition_key
from ..storage.keys import clustering_key, partition_token, serialize_partition_key


def _row_key(stmt: Any, table: Table, ctx: WriteContext) -> tuple[tuple[bytes, ...], bytes, int, tuple[bytes, ...] | None]:
    if isinstance(stmt, ast.Insert):
        if stmt.json is not None:
            values = json_values(stmt, table, ctx)
        else:
            values = {n: ctx.ev.value(v, table.column(n).type, n) for n, v in zip(stmt.columns, stmt.values)
                      if table.column(n) is not None and table.column(n).is_primary_key}
        key = []
        for c in table.partition_key:
            if c.name not in values:
                raise InvalidRequest(f"Some partition key parts are missing: {c.name}")
            key.append(key_bytes(c, values[c.name]))
        clustering = []
        for c in table.clustering_key:
            if c.name not in values:
                return tuple(key), serialize_partition_key(key), partition_token(table, serialize_partition_key(key)), None
            clustering.append(key_bytes(c, values[c.name]))
        pk = serialize_partition_key(key)
        return tuple(key), pk, partition_token(table, pk), tuple(clustering)
    kr = analyse(table, stmt.where, ctx.ev)
    if kr.partition_keys is None or len(kr.partition_keys) != 1:
        raise InvalidRequest("IN on the partition key is not supported with conditional updates"
                             if kr.partition_keys else "Some partition key parts are missing: "
                             + ", ".join(c.name for c in table.partition_key))
    key = kr.partition_keys[0]
    pk = serialize_partition_key(key)
    if len(kr.clustering_prefixes) > 1:
        raise InvalidRequest("IN on the clustering key columns is not supported with conditional updates")
    clustering = kr.clustering_prefixes[0]
    if kr.clustering_slice is not None or len(clustering) < len(table.clustering_key):
        if not _static_only(stmt, table) or clustering:
            raise InvalidRequest("DELETE statements must restrict all PRIMARY KEY columns with equality relations "
                                 "in order to use IF conditions"
                                 if isinstance(stmt, ast.Delete) else "Some clustering keys are missing: "
                                 + ", ".join(c.name for c in table.clustering_key[len(clustering):]))
        return key, pk, partition_token(table, pk), None
    return key, pk, partition_token(table, pk), clustering


def _static_only(stmt: Any, table: Table) -> bool:
    names: list[str] = []
    if isinstance(stmt, ast.Update):
        names = [a.column for a in stmt.assignments]
    elif isinstance(stmt, ast.Delete):
        names = [t.name if isinstance(t, ast.ColumnRef) else t.column for t in stmt.targets]
    names += [c.lhs.name if isinstance(c.lhs, ast.ColumnRef) else c.lhs.column for c in getattr(stmt, "conditions", ())]
    cols = [table.column(n) for n in names]
    return bool(cols) and all(c is not None and c.kind == STATIC for c in cols)


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
            eq = t.compare(t.serialize(current), t.serialize(expected)) == 0
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


def check_conditions(stmts: Sequence[Any], tables: Sequence[Table], contexts: Sequence[WriteContext],
                     in_batch: bool) -> Outcome:
    """Check the conditions of a conditional statement or batch against the rows as they are now.

    The result is ScyllaDB's (cql3 CAS result set): ``[applied]`` and, for each
    statement, the previous values of the columns its conditions name (every
    column for ``IF [NOT] EXISTS``; in a batch, the union of them with the
    primary key), null where the row did not exist."""
    keys = set()
    olds: list[tuple[Any, Table, _CurrentRow, bool]] = []
    ok_all = True
    for stmt, table, ctx in zip(stmts, tables, contexts):
        if isinstance(stmt, ast.Update):
            check_assignments(stmt, table)  # refused whether or not the conditions hold
        if not is_conditional(stmt):
            try:
                key, pk, token, clustering = _row_key(stmt, table, ctx)
            except InvalidRequest:  # e.g. a range deletion beside the conditions: no one row to show
                continue
        else:
            key, pk, token, clustering = _row_key(stmt, table, ctx)
        check_partition_key(key)
        keys.add(pk)
        ck = clustering_key(table.clustering_key, clustering) if clustering is not None else None
        row = ctx.reader.row(table, pk, token, ck, False) if ck is not None else None
        static = ctx.reader.row(table, pk, token, b"", True) if table.static_columns else None
        cur = _CurrentRow(key, row, static)
        static_only = clustering is None
        exists_check = getattr(stmt, "if_not_exists", False) or getattr(stmt, "if_exists", False)
        if getattr(stmt, "if_not_exists", False):
            ok = not cur.exists(static_only)
        elif getattr(stmt, "if_exists", False):
            ok = cur.exists(static_only)
        else:
            ok = all(_condition_holds(c, table, cur, ctx) for c in getattr(stmt, "conditions", ()))
        ok_all = ok_all and ok
        # the old row shown: the clustering row (with its partition's static values), else for a
        # condition on columns the static row alone, else nothing
        use_row = row is not None
        shown = use_row or (static is not None and (static_only or not exists_check))
        olds.append((stmt, table, cur, use_row if shown else None))
    if len(keys) > 1:
        raise InvalidRequest("Batch with conditions cannot span multiple partitions")
    return Outcome(ok_all, _result(olds, ok_all, in_batch))


def _shown_columns(stmt: Any, table: Table) -> set[str]:
    if getattr(stmt, "if_not_exists", False) or getattr(stmt, "if_exists", False):
        return {c.name for c in table.columns}
    return {c.lhs.name if isinstance(c.lhs, ast.ColumnRef) else c.lhs.column for c in getattr(stmt, "conditions", ())}


def _result(olds: list[tuple[Any, Table, _CurrentRow, bool | None]], applied: bool, in_batch: bool) -> ResultSet:
    table = olds[0][1]
    names: set[str] = {c.name for c in table.primary_key} if in_batch else set()
    for stmt, _t, _cur, _use in olds:
        names |= _shown_columns(stmt, table)
    cols = [c for c in table.columns if c.name in names]
    specs = (ColumnSpec(table.keyspace, table.name, "[applied]", T.BOOLEAN),) + tuple(
        ColumnSpec(table.keyspace, table.name, c.name, c.type) for c in cols)
    names_t = tuple(s.name for s in specs)
    out = []
    for _stmt, _t, cur, use_row in olds:
        if use_row is None:
            values: list[Any] = [None] * len(cols)
        else:
            values = [None if (not use_row and c.kind in (CLUSTERING, REGULAR)) else cur.value(c) for c in cols]
        out.append(Row(names_t, [applied] + values))
    return ResultSet("rows", specs, out)
