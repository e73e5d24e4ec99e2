"""WHERE clauses: which partitions and clustering ranges a statement addresses, and what remains to filter.

Follows Cassandra's ``StatementRestrictions``: the partition key is restricted
by ``=``/``IN`` on every component or by ``token()`` ranges; clustering columns
by ``=``/``IN`` on a prefix, optionally followed by one slice (single- or
multi-column); anything else is a filter that needs ``ALLOW FILTERING``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..schema.model import CLUSTERING, PARTITION_KEY, Column, Table, check_key_length
from ..schema import types as T
from ..storage.keys import clustering_key, prefix_end

FILTERING_MESSAGE = ("Cannot execute this query as it might involve data filtering and thus may have "
                     "unpredictable performance. If you want to execute this query despite the "
                     "performance unpredictability, use ALLOW FILTERING")


class Evaluator(Protocol):
    """Turns terms into Python values of a given type (bind markers and functions included)."""

    def value(self, term: Any, ctype: Any, receiver: str) -> Any: ...


@dataclass(frozen=True)
class Bound:
    """One end of a clustering slice: serialized prefix values and inclusiveness."""

    values: tuple[bytes, ...]
    inclusive: bool


@dataclass
class ClusteringSlice:
    """A slice on the columns starting at the clustering position ``first``."""

    first: int
    start: Bound | None = None
    end: Bound | None = None


@dataclass(frozen=True)
class Filter:
    """A relation evaluated row by row: on a column (or token), with serialized operand(s)."""

    column: Column
    op: str
    values: tuple[Any, ...]  # serialized bytes (or element/key bytes for CONTAINS)


@dataclass
class KeyRestrictions:
    """The analysed WHERE clause."""

    partition_keys: list[tuple[bytes, ...]] | None = None
    token_lo: tuple[int, bool] | None = None
    token_hi: tuple[int, bool] | None = None
    clustering_prefixes: list[tuple[bytes, ...]] = field(default_factory=lambda: [()])
    clustering_slice: ClusteringSlice | None = None
    filters: list[Filter] = field(default_factory=list)
    partition_filters: bool = False  # partition key restricted partially or by slices
    clustering_restricted: bool = False
    clustering_gap_error: str | None = None  # set when clustering restrictions need filtering

    def clustering_ranges(self, table: Table) -> list[tuple[bytes | None, bytes | None]]:
        """The clustering ranges ``[lo, hi)`` in comparable-key space, in clustering order."""
        cols = table.clustering_key
        ranges: list[tuple[bytes | None, bytes | None]] = []
        for prefix in self.clustering_prefixes:
            base = clustering_key(cols, prefix)
            sl = self.clustering_slice
            if sl is None:
                ranges.append((base or None, prefix_end(base) if base else None))
                continue
            desc = cols[sl.first].reversed if sl.first < len(cols) else False
            lo_bound, hi_bound = (sl.end, sl.start) if desc else (sl.start, sl.end)
            lo_key: bytes | None = base or None
            hi_key: bytes | None = prefix_end(base) if base else None
            if lo_bound is not None:
                k = clustering_key(cols, prefix + lo_bound.values)
                lo_key = k if lo_bound.inclusive else prefix_end(k)
                if lo_key is None:
                    continue
            if hi_bound is not None:
                k = clustering_key(cols, prefix + hi_bound.values)
                hi_key = prefix_end(k) if hi_bound.inclusive else k
            if lo_key is not None and hi_key is not None and lo_key >= hi_key:
                continue
            ranges.append((lo_key, hi_key))
        ranges.sort(key=lambda r: r[0] or b"")
        return ranges


def _column(table: Table, name: str) -> Column:
    col = table.column(name)
    if col is None:
        raise InvalidRequest(f"Undefined column name {name}")
    return col


def _serialize(col: Column, value: Any, ctype: Any = None) -> bytes:
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    if value is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {col.name}")
    return (ctype or col.type).serialize(value)


def _in_values(ev: Evaluator, rhs: Any, ctype: Any, receiver: str) -> list[Any]:
    if isinstance(rhs, ast.InValues):
        return [ev.value(t, ctype, receiver) for t in rhs.items]
    values = ev.value(rhs, T.ListType(ctype, True), f"in({receiver})")
    if values is None:
        raise InvalidRequest("Invalid null value for IN restriction")
    if values is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for IN restriction on column {receiver}")
    return list(values)


def analyse(table: Table, where: Sequence[ast.Relation], ev: Evaluator) -> KeyRestrictions:
    """Analyse a WHERE clause against a table."""
    kr = KeyRestrictions()
    pk_cols = table.partition_key
    ck_cols = table.clustering_key
    pk_values: dict[str, list[bytes]] = {}
    ck_eq: dict[int, list[tuple[bytes, ...]]] = {}  # first column index -> tuples (single or multi column)
    ck_eq_width: dict[int, int] = {}
    ck_slices: dict[int, ClusteringSlice] = {}
    ck_slice_width: dict[int, int] = {}
    for rel in where:
        lhs = rel.lhs
        if isinstance(lhs, ast.TokenOf):
            _token_relation(table, rel, ev, kr)
            continue
        if isinstance(lhs, ast.ColumnTuple):
            _multi_column_relation(table, rel, ev, ck_eq, ck_eq_width, ck_slices, ck_slice_width)
            continue
        col = _column(table, lhs.name)
        op = rel.op
        if op in ("CONTAINS", "CONTAINS KEY"):
            kr.filters.append(_contains_filter(col, rel, ev))
            continue
        if op == "!=":
            raise InvalidRequest(f'Unsupported "!=" relation: {col.name} != ...')
        if op == "IS NOT":
            raise InvalidRequest(f"Unsupported restriction: {col.name} IS NOT NULL")
        if op == "LIKE":
            raise InvalidRequest(f"LIKE restriction is only supported on properly indexed columns. {col.name} LIKE ... is not valid.")
        if col.kind == PARTITION_KEY:
            if op == "=":
                vals = [_serialize(col, ev.value(rel.rhs, col.type, col.name))]
            elif op == "IN":
                vals = [_serialize(col, v) for v in _in_values(ev, rel.rhs, col.type, col.name)]
            else:
                raise InvalidRequest("Only EQ and IN relation are supported on the partition key "
                                     "(unless you use the token() function)")
            if col.name in pk_values:
                raise InvalidRequest(f"{col.name} cannot be restricted by more than one relation if it includes an Equal")
            pk_values[col.name] = vals
        elif col.kind == CLUSTERING:
            idx = col.position
            if op in ("=", "IN"):
                if idx in ck_eq or idx in ck_slices:
                    raise InvalidRequest(f"{col.name} cannot be restricted by more than one relation if it includes an Equal")
                if op == "=":
                    vals = [_serialize(col, ev.value(rel.rhs, col.type, col.name))]
                else:
                    vals = [_serialize(col, v) for v in _in_values(ev, rel.rhs, col.type, col.name)]
                ck_eq[idx] = [(v,) for v in vals]
                ck_eq_width[idx] = 1
            else:
                if idx in ck_eq:
                    raise InvalidRequest(f"{col.name} cannot be restricted by both an equality and an inequality relation")
                v = _serialize(col, ev.value(rel.rhs, col.type, col.name))
                sl = ck_slices.setdefault(idx, ClusteringSlice(idx))
                ck_slice_width[idx] = 1
                _add_bound(sl, op, (v,), col.name)
        else:
            if op == "IN":
                vals = tuple(_serialize(col, v) for v in _in_values(ev, rel.rhs, col.type, col.name))
            else:
                vals = (_serialize(col, ev.value(rel.rhs, col.type, col.name)),)
            kr.filters.append(Filter(col, op, vals))
    # partition key
    if pk_values:
        if all(c.name in pk_values for c in pk_cols):
            kr.partition_keys = [tuple(p) for p in itertools.product(*(pk_values[c.name] for c in pk_cols))]
            for key in kr.partition_keys:
                check_key_length(key)
            if kr.token_lo or kr.token_hi:
                raise InvalidRequest("Columns \"%s\" cannot be restricted by both a normal relation and a token relation"
                                     % ", ".join(c.name for c in pk_cols))
        else:
            kr.partition_filters = True
            for c in pk_cols:
                if c.name in pk_values:
                    kr.filters.append(Filter(c, "IN", tuple(pk_values[c.name])))
    # clustering key
    i = 0
    prefixes: list[tuple[bytes, ...]] = [()]
    n = len(ck_cols)
    consumed: set[int] = set()
    while i < n:
        if i in ck_eq:
            prefixes = [p + t for p in prefixes for t in ck_eq[i]]
            consumed.add(i)
            w = ck_eq_width[i]
            i += w
            continue
        if i in ck_slices:
            kr.clustering_slice = ck_slices[i]
            consumed.add(i)
            i += ck_slice_width[i]
        break
    kr.clustering_prefixes = sorted(set(prefixes), key=lambda p: clustering_key(ck_cols, p)) if prefixes != [()] else [()]
    kr.clustering_restricted = bool(ck_eq or ck_slices)
    for idx in sorted(set(ck_eq) | set(ck_slices)):
        if idx in consumed:
            continue
        col = ck_cols[idx]
        prev = ck_cols[idx - 1] if idx > 0 else None
        kr.filters.extend(_clustering_filters(col, ck_eq.get(idx), ck_slices.get(idx)))
        if kr.clustering_gap_error is None:
            if kr.clustering_slice is not None and idx > kr.clustering_slice.first:
                kr.clustering_gap_error = (
                    f"Clustering column \"{col.name}\" cannot be restricted (preceding column "
                    f"\"{ck_cols[kr.clustering_slice.first].name}\" is restricted by a non-EQ relation)")
            else:
                kr.clustering_gap_error = (
                    f"PRIMARY KEY column \"{col.name}\" cannot be restricted as preceding column "
                    f"\"{prev.name if prev else ''}\" is not restricted")
    return kr


def _clustering_filters(col: Column, eq, sl: ClusteringSlice | None) -> list[Filter]:
    out = []
    if eq is not None:
        out.append(Filter(col, "IN", tuple(t[0] for t in eq)))
    if sl is not None:
        if sl.start is not None:
            out.append(Filter(col, ">=" if sl.start.inclusive else ">", (sl.start.values[0],)))
        if sl.end is not None:
            out.append(Filter(col, "<=" if sl.end.inclusive else "<", (sl.end.values[0],)))
    return out


def _add_bound(sl: ClusteringSlice, op: str, values: tuple[bytes, ...], name: str) -> None:
    if op in (">", ">="):
        if sl.start is not None:
            raise InvalidRequest(f"More than one restriction was found for the start bound on {name}")
        sl.start = Bound(values, op == ">=")
    elif op in ("<", "<="):
        if sl.end is not None:
            raise InvalidRequest(f"More than one restriction was found for the end bound on {name}")
        sl.end = Bound(values, op == "<=")
    else:
        raise InvalidRequest(f"Unsupported operator {op} on {name}")


def _multi_column_relation(table: Table, rel: ast.Relation, ev: Evaluator, ck_eq, ck_eq_width, ck_slices,
                           ck_slice_width) -> None:
    cols = [_column(table, n) for n in rel.lhs.columns]
    for c in cols:
        if c.kind != CLUSTERING:
            raise InvalidRequest(f"Multi-column relations can only be applied to clustering columns but was applied to: {c.name}")
    positions = [c.position for c in cols]
    if positions != list(range(positions[0], positions[0] + len(positions))):
        raise InvalidRequest("Clustering columns must appear in the PRIMARY KEY order in multi-column relations: "
                             + ", ".join(c.name for c in cols))
    ttype = T.TupleType(tuple(c.type for c in cols))
    receiver = "(" + ",".join(c.name for c in cols) + ")"

    def tup(v) -> tuple[bytes, ...]:
        if v is None:
            raise InvalidRequest(f"Invalid null value in condition for columns: {list(rel.lhs.columns)}")
        return tuple(_serialize(c, x) for c, x in zip(cols, v))

    first = positions[0]
    if rel.op in ("=", "IN"):
        if rel.op == "=":
            tuples = [tup(ev.value(rel.rhs, ttype, receiver))]
        else:
            tuples = [tup(v) for v in _in_values(ev, rel.rhs, ttype, receiver)]
        ck_eq[first] = tuples
        ck_eq_width[first] = len(cols)
    elif rel.op in ("<", "<=", ">", ">="):
        if len({c.reversed for c in cols}) > 1:
            raise InvalidRequest("Multi-column slice restrictions on clustering columns of mixed order are not supported")
        sl = ck_slices.setdefault(first, ClusteringSlice(first))
        ck_slice_width[first] = len(cols)
        _add_bound(sl, rel.op, tup(ev.value(rel.rhs, ttype, receiver)), receiver)
    else:
        raise InvalidRequest(f"Unsupported operator {rel.op} in multi-column relation")


def _token_relation(table: Table, rel: ast.Relation, ev: Evaluator, kr: KeyRestrictions) -> None:
    names = [c.name for c in table.partition_key]
    if list(rel.lhs.columns) != names:
        raise InvalidRequest("The token function arguments must be in the partition key order: " + ", ".join(names))
    rhs = rel.rhs
    value = ev.value(rhs, T.BIGINT, "partition key token")
    if value is None:
        raise InvalidRequest("Invalid null value for partition key token")
    value = int(value)
    op = rel.op
    if op == "=":
        kr.token_lo = (value, True)
        kr.token_hi = (value, True)
    elif op in (">", ">="):
        kr.token_lo = (value, op == ">=")
    elif op in ("<", "<="):
        kr.token_hi = (value, op == "<=")
    else:
        raise InvalidRequest(f"Unsupported operator {op} on partition key token")


def _contains_filter(col: Column, rel: ast.Relation, ev: Evaluator) -> Filter:
    t = col.type
    if not t.is_collection:
        raise InvalidRequest(f"Cannot use {rel.op} on non-collection column {col.name}")
    if rel.op == "CONTAINS KEY":
        if not isinstance(t, T.MapType):
            raise InvalidRequest(f"Cannot use CONTAINS KEY on non-map column {col.name}")
        et = t.key
    else:
        et = t.value if isinstance(t, T.MapType) else t.element
    v = ev.value(rel.rhs, et, col.name)
    if v is None:
        raise InvalidRequest(f"Unsupported null value for column {col.name}")
    return Filter(col, rel.op, (et.serialize(v),))


def token_bounds(kr: KeyRestrictions) -> tuple[int | None, bool, int | None, bool]:
    """Token range (lo, lo_inclusive, hi, hi_inclusive) from token relations, None for unbounded."""
    lo, lo_inc = kr.token_lo if kr.token_lo else (None, True)
    hi, hi_inc = kr.token_hi if kr.token_hi else (None, True)
    return lo, lo_inc, hi, hi_inc
