"""WHERE clauses: which partitions and clustering ranges a statement addresses, and what remains to filter.

Follows Cassandra's ``StatementRestrictions``: the partition key is restricted
by ``=``/``IN`` on every component or by ``token()`` ranges; clustering columns
by ``=``/``IN`` on a prefix, optionally followed by one slice (single- or
multi-column); anything else is a filter, which needs ``ALLOW FILTERING`` unless ScyllaDB's
rules take it without (:func:`needs_filtering`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..schema.model import CLUSTERING, PARTITION_KEY, Column, Table, check_key_length
from ..schema import types as T
from ..storage.keys import clustering_key, prefix_end
from .where_rules import UnrecognizedName, check_where, unrecognized_name, where_column

__all__ = ["UnrecognizedName", "unrecognized_name", "where_column"]  # also this module's names (where_rules)

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
    """A relation evaluated row by row on a column's value (:func:`matches`).

    ``op`` is a comparison, ``IN``, ``NOT IN``, ``CONTAINS``, ``CONTAINS KEY``, ``LIKE`` (``values``:
    the compiled pattern), ``ELEMENT`` (``m[key] = v``: ``key`` the map key or the list index,
    ``values`` the element) or ``TUPLE<`` ... ``TUPLE>=`` (a multi-column slice: ``key`` the columns,
    ``values`` the tuple).  ``values`` holds serialized operands; a None operand (a comparison
    with null) matches no row."""

    column: Column
    op: str
    values: tuple[Any, ...]  # serialized bytes (or element/key bytes for CONTAINS)
    key: Any = None


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
    gap_after_slice: bool = False  # that gap follows a slice (ScyllaDB says so before any other filtering error)
    empty: bool = False  # no row can match (a SELECT's null key value, contradictory equalities)
    checks: list[Filter] = field(default_factory=list)  # row checks needing no ALLOW FILTERING (c = 1 AND c > 0)

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


def restricted_columns(where: Sequence[ast.Relation], kind: str, table: Table) -> set[str]:
    """The names of the columns of ``kind`` (``schema.model`` column kinds) a WHERE clause restricts (each of a
    multi-column relation's; none of ``token(...)``)."""
    out: set[str] = set()
    for rel in where:
        for n in rel.column_names:
            c = table.column(n)
            if c is not None and c.kind == kind:
                out.add(c.name)
    return out


def _column(table: Table, name: str) -> Column:
    return where_column(table, name)


def _serialize(col: Column, value: Any, ctype: Any = None) -> bytes:
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    if value is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {col.name}")
    return (ctype or col.type).serialize(value)


def _in_values(ev: Evaluator, rhs: Any, ctype: Any, receiver: str, select: bool = False) -> list[Any] | None:
    """The values of ``IN (...)`` or ``IN ?``; None for a null list in a SELECT (it matches nothing)."""
    if isinstance(rhs, ast.InValues):
        return [ev.value(t, ctype, receiver) for t in rhs.items]
    values = ev.value(rhs, T.ListType(ctype, True), f"IN({receiver})")
    if values is None:
        if select:
            return None
        raise InvalidRequest(f"Invalid null value in condition for column {receiver}")
    if values is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {receiver}")
    return list(values)


class _Nothing(Exception):
    """A restriction that no row can satisfy (a null key value in a SELECT, ScyllaDB's semantics)."""


def analyse(table: Table, where: Sequence[ast.Relation], ev: Evaluator, *, select: bool = False,
            allow_filtering: bool = False) -> KeyRestrictions:
    """Analyse a WHERE clause against a table.

    ``select``: the clause of a SELECT, read as ScyllaDB reads one: a null compared with anything
    matches no row (``p = null``, ``p IN ?`` bound to null, ``v > null``, ``s CONTAINS null``:
    ``KeyRestrictions.empty`` or a filter that never matches); a column may be restricted more
    than once (``c = 0 AND c > 0``: the intersection); ``NOT IN``, ``LIKE`` and ``m[k] = v``
    filter rows; a partition key slice is a filter with ``allow_filtering``.  Writes keep
    Cassandra's stricter rules."""
    kr = KeyRestrictions()
    pk_cols = table.partition_key
    ck_cols = table.clustering_key
    pk_values: dict[str, list[bytes]] = {}
    ck_eq: dict[int, list[tuple[bytes, ...]]] = {}  # first column index -> tuples (single or multi column)
    ck_eq_width: dict[int, int] = {}
    ck_slices: dict[int, ClusteringSlice] = {}
    ck_slice_width: dict[int, int] = {}
    check_where(table, where, select and allow_filtering)
    for rel in where:
        lhs = rel.lhs
        try:
            if isinstance(lhs, ast.TokenOf):
                _token_relation(table, rel, ev, kr)
            elif isinstance(lhs, ast.ColumnTuple):
                _multi_column_relation(table, rel, ev, ck_eq, ck_eq_width, ck_slices, ck_slice_width, select,
                                       kr.checks if select else None)
            elif isinstance(lhs, ast.ElementRef):
                if not select:
                    raise InvalidRequest(f"Invalid restriction on {lhs.column}[...]: "
                                         "element restrictions are only supported in SELECT")
                kr.filters.append(_element_filter(table, rel, ev))
            else:
                _single_column_relation(table, rel, ev, kr, select, allow_filtering, pk_values, ck_eq, ck_eq_width,
                                        ck_slices, ck_slice_width)
        except _Nothing:
            kr.empty = True
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
    if any(f.column.kind == PARTITION_KEY for f in kr.filters):
        kr.partition_filters = True
    if kr.partition_keys == []:
        kr.empty = True
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
    if not prefixes:
        kr.empty = True
        prefixes = [()]
    kr.clustering_prefixes = _distinct_prefixes(ck_cols, prefixes) if prefixes != [()] else [()]
    if select:  # a write checks its whole keys where it makes them
        _check_clustering_lengths(kr)
    kr.clustering_restricted = bool(ck_eq or ck_slices)
    for idx in sorted(set(ck_eq) | set(ck_slices)):
        if idx in consumed:
            continue
        col = ck_cols[idx]
        kr.filters.extend(_clustering_filters(col, ck_eq.get(idx), ck_slices.get(idx)))
        if kr.clustering_gap_error is None and kr.clustering_slice is not None and idx > kr.clustering_slice.first:
            kr.gap_after_slice = True
            kr.clustering_gap_error = (
                f"Clustering column \"{col.name}\" cannot be restricted (preceding column "
                f"\"{ck_cols[kr.clustering_slice.first].name}\" is restricted by a non-EQ relation)")
    if kr.clustering_gap_error is None:
        kr.clustering_gap_error = _clustering_gap(ck_cols, kr, ck_eq_width, ck_slice_width)
    sl = kr.clustering_slice
    if sl is not None and not kr.gap_after_slice:  # c CONTAINS 2, c LIKE ... after the slice: the same gap
        end = sl.first + ck_slice_width[sl.first]
        later = [f.column for f in kr.filters if f.column.kind == CLUSTERING and f.column.position >= end]
        if later:
            kr.gap_after_slice = True
            kr.clustering_gap_error = (f"Clustering column \"{later[0].name}\" cannot be restricted (preceding column "
                                       f"\"{ck_cols[sl.first].name}\" is restricted by a non-EQ relation)")
    return kr


def _distinct_prefixes(ck_cols: Sequence[Column], prefixes: list[tuple[bytes, ...]]) -> list[tuple[bytes, ...]]:
    """The clustering prefixes ``=``/``IN`` name, each value once and in clustering order: values are told apart
    by the clustering comparator, so ``c IN (1, ?)`` with 1 bound as a padded varint (``0x0001``) is one row, as
    ScyllaDB compares clustering keys by value (the first of equal prefixes is kept)."""
    distinct: dict[bytes, tuple[bytes, ...]] = {}
    for p in prefixes:
        distinct.setdefault(clustering_key(ck_cols, p), p)
    return [distinct[k] for k in sorted(distinct)]


def _check_clustering_lengths(kr: KeyRestrictions) -> None:
    """A clustering key the restrictions address is no longer than a key may be (``Key length of 66560 is
    longer than maximum of 65535``): ScyllaDB refuses it as it refuses such a partition key (its issue #10366;
    Cassandra reads nothing)."""
    sl = kr.clustering_slice
    for prefix in kr.clustering_prefixes:
        if prefix:
            check_key_length(prefix)
        for bound in (sl.start, sl.end) if sl is not None else ():
            if bound is not None:
                check_key_length(prefix + bound.values)


def _clustering_gap(ck_cols: Sequence[Column], kr: KeyRestrictions, ck_eq_width: dict[int, int],
                    ck_slice_width: dict[int, int]) -> str | None:
    """ScyllaDB's check that the restricted clustering columns (by any relation, filters included) are a
    prefix of the clustering key (``process_clustering_columns_restrictions``): the error naming the first
    restricted column past an unrestricted one, or None.  ``c1 NOT IN ? AND c2 = 1`` is a prefix (both
    columns are filtered); ``c2 = 1`` alone is not."""
    restricted: set[int] = set()
    for widths in (ck_eq_width, ck_slice_width):
        for first, width in widths.items():
            restricted.update(range(first, first + width))
    restricted.update(f.column.position for f in kr.filters if f.column.kind == CLUSTERING)
    for rank, position in enumerate(sorted(restricted)):
        if position != rank:
            col = ck_cols[position]
            return (f"PRIMARY KEY column \"{col.name}\" cannot be restricted as preceding column "
                    f"\"{ck_cols[rank].name}\" is not restricted")
    return None


def needs_filtering(kr: KeyRestrictions) -> bool:
    """Whether a SELECT with these restrictions needs ``ALLOW FILTERING`` when no index serves it, by
    ScyllaDB's rules (``statement_restrictions``, ``select_statement::check_needs_filtering``, with
    ``strict_allow_filtering`` true as ScyllaDB's own tests run it): a partition key restricted partly or
    by other relations than ``=``/``IN``; a restriction on a regular or static column; clustering columns
    restricted with a gap or by ``CONTAINS``; any clustering restriction when the partition key is not
    given by ``=``/``IN``.  A filter on a prefix of the clustering columns inside the partitions the key
    names (``p = 0 AND c NOT IN ?``, ``c LIKE ...``) is applied without it."""
    if kr.partition_filters or kr.clustering_gap_error is not None:
        return True
    for f in kr.filters:
        if f.column.kind != CLUSTERING or f.op in ("CONTAINS", "CONTAINS KEY"):
            return True
    return kr.partition_keys is None and (kr.clustering_restricted or bool(kr.filters) or bool(kr.checks))


def _single_column_relation(table: Table, rel: ast.Relation, ev: Evaluator, kr: KeyRestrictions, select: bool,
                            allow_filtering: bool, pk_values: dict[str, list[bytes]], ck_eq, ck_eq_width,
                            ck_slices, ck_slice_width) -> None:
    """One ``column op value`` relation, added to ``kr`` (filters) or to the key restrictions being built."""
    col = _column(table, rel.lhs.name)
    op = rel.op
    if op in ("CONTAINS", "CONTAINS KEY"):
        kr.filters.append(_contains_filter(col, rel, ev, select))
        return
    if op == "LIKE":
        if not select:
            raise InvalidRequest(f"LIKE restriction is only supported on properly indexed columns. "
                                 f"{col.name} LIKE ... is not valid.")
        kr.filters.append(_like_filter(col, rel, ev))
        return
    if op == "NOT IN":
        if not select:
            raise InvalidRequest(f"NOT IN restrictions are only supported in SELECT: {col.name} NOT IN ...")
        kr.filters.append(_not_in_filter(col, rel, ev))
        return
    if col.kind == PARTITION_KEY:
        if op not in ("=", "IN"):
            if not select or not allow_filtering:
                raise InvalidRequest("Only EQ and IN relation are supported on the partition key "
                                     + ("(unless you use the token() function or ALLOW FILTERING)" if select
                                        else "(unless you use the token() function)"))
            kr.filters.append(_comparison_filter(col, op, ev.value(rel.rhs, col.type, col.name)))
            return
        vals = _key_values(col, rel, ev, select)
        if col.name in pk_values:
            if not select:
                raise InvalidRequest(f"{col.name} cannot be restricted by more than one relation if it includes an Equal")
            vals = _intersect(col, pk_values[col.name], vals)
        pk_values[col.name] = vals
    elif col.kind == CLUSTERING:
        idx = col.position
        if op in ("=", "IN"):
            vals = _key_values(col, rel, ev, select)
            if idx in ck_eq or idx in ck_slices:
                if not select or ck_eq_width.get(idx, 1) != 1 or ck_slice_width.get(idx, 1) != 1:
                    raise InvalidRequest(f"{col.name} cannot be restricted by more than one relation if it includes an Equal")
                if idx in ck_eq:  # ScyllaDB: c = 1 AND c IN (1, 2) is their intersection
                    vals = _intersect(col, [t[0] for t in ck_eq[idx]], vals)
                else:  # c > 0 AND c = 1: the equality addresses rows, the slice checks them
                    kr.checks.extend(_clustering_filters(col, None, ck_slices.pop(idx)))
                    del ck_slice_width[idx]
            ck_eq[idx] = [(v,) for v in vals]
            ck_eq_width[idx] = 1
        else:
            value = ev.value(rel.rhs, col.type, col.name)
            if value is None and select:
                ck_slices.setdefault(idx, ClusteringSlice(idx))
                ck_slice_width.setdefault(idx, 1)
                raise _Nothing()
            v = _serialize(col, value)
            if idx in ck_eq:
                if not select:
                    raise InvalidRequest(f"{col.name} cannot be restricted by both an equality and an inequality relation")
                kr.checks.append(Filter(col, op, (v,)))
                return
            sl = ck_slices.setdefault(idx, ClusteringSlice(idx))
            ck_slice_width[idx] = 1
            _add_bound(sl, op, (v,), col.name, col.type if select else None)
    else:
        if op == "IN":
            values = _in_values(ev, rel.rhs, col.type, col.name, select)
            if values is None:  # ScyllaDB: v IN null matches no row
                kr.filters.append(Filter(col, "IN", ()))
                return
            kr.filters.append(Filter(col, "IN", tuple(col.type.serialize(v) for v in values
                                                      if v is not None and v is not T.UNSET)))
            return
        value = ev.value(rel.rhs, col.type, col.name)
        if value is None and not select:
            raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
        kr.filters.append(_comparison_filter(col, op, value))


def _comparison_filter(col: Column, op: str, value: Any) -> Filter:
    """``col op value`` checked row by row; a null value matches no row (as in SQL and ScyllaDB)."""
    if value is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {col.name}")
    if op not in ("=", "!=") and col.type.references_duration():
        raise InvalidRequest(f"Duration type is unordered for {col.name}")
    return Filter(col, op, (None if value is None else col.type.serialize(value),))


def _key_values(col: Column, rel: ast.Relation, ev: Evaluator, select: bool) -> list[bytes]:
    """The serialized values of ``key = v`` or ``key IN (...)`` (a SELECT's null ones match nothing)."""
    if rel.op == "=":
        value = ev.value(rel.rhs, col.type, col.name)
        if value is None and select:
            return []
        return [_serialize(col, value)]
    values = _in_values(ev, rel.rhs, col.type, col.name, select)
    if values is None:
        if select:
            return []
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    if select:
        values = [v for v in values if v is not None]
    return [_serialize(col, v) for v in values]


def _intersect(col: Column, old: list[bytes], new: list[bytes]) -> list[bytes]:
    """The values of both lists (a column restricted twice, ScyllaDB), in the order of ``new``."""
    return [v for v in new if any(col.type.compare(v, o) == 0 for o in old)]


def _not_in_filter(col: Column, rel: ast.Relation, ev: Evaluator) -> Filter:
    """ScyllaDB's ``c NOT IN (...)``: rows whose value is none of the values; a null among them (or a null
    list) matches no row, since null might be equal to anything."""
    values = _in_values(ev, rel.rhs, col.type, col.name, True)
    if values is None or any(v is None for v in values):
        return Filter(col, "NOT IN", (None,))
    return Filter(col, "NOT IN", tuple(_serialize(col, v) for v in values))


def _like_filter(col: Column, rel: ast.Relation, ev: Evaluator) -> Filter:
    """ScyllaDB's ``c LIKE 'pattern'`` on a string column (``%`` any characters, ``_`` one, ``\\`` escapes)."""
    pattern = ev.value(rel.rhs, col.type, col.name)
    if pattern is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {col.name}")
    return Filter(col, "LIKE", (None if pattern is None else like_regex(pattern),))


def like_regex(pattern: str) -> "re.Pattern[str]":
    """The regular expression a LIKE pattern stands for, matched against a whole value (an empty pattern
    matches only the empty string)."""
    out: list[str] = []
    escaping = False
    for ch in pattern:
        if ch == "\\" and not escaping:
            escaping = True
            continue
        if ch in "%_" and not escaping:
            out.append(".*" if ch == "%" else ".")
        else:
            out.append(re.escape(ch))
        escaping = False
    return re.compile("".join(out), re.DOTALL)


def _element_filter(table: Table, rel: ast.Relation, ev: Evaluator) -> Filter:
    """ScyllaDB's ``m[key] = v`` (a non-frozen map) and ``l[index] = v`` (a non-frozen list): rows whose
    element at that key or index equals ``v``; a null key or index matches no row."""
    lhs = rel.lhs
    col = _column(table, lhs.column)
    t = col.type
    if isinstance(t, T.MapType):
        key_type, value_type, key_name = t.key, t.value, f"key({col.name})"
    else:
        key_type, value_type, key_name = T.INT, t.element, f"idx({col.name})"
    key = ev.value(lhs.key, key_type, key_name)
    if key is T.UNSET:
        raise InvalidRequest(f"Unsupported unset {'map key' if isinstance(t, T.MapType) else 'list index'} "
                             f"for column {col.name}")
    value = ev.value(rel.rhs, value_type, f"value({col.name})")
    if value is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {col.name}")
    if key is None or value is None:
        return Filter(col, "ELEMENT", (None,))
    return Filter(col, "ELEMENT", (value_type.serialize(value),), key)


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


def _add_bound(sl: ClusteringSlice, op: str, values: tuple[bytes, ...], name: str, ctype: Any = None) -> None:
    """Add one bound to a slice; a second bound of the same side is refused, or with ``ctype`` (a
    single-column slice of a SELECT, ScyllaDB) the tighter of the two is kept."""
    if op in (">", ">="):
        new = Bound(values, op == ">=")
        if sl.start is not None:
            if ctype is None:
                raise InvalidRequest(f"More than one restriction was found for the start bound on {name}")
            new = _tighter(sl.start, new, ctype, 1)
        sl.start = new
    elif op in ("<", "<="):
        new = Bound(values, op == "<=")
        if sl.end is not None:
            if ctype is None:
                raise InvalidRequest(f"More than one restriction was found for the end bound on {name}")
            new = _tighter(sl.end, new, ctype, -1)
        sl.end = new
    else:
        raise InvalidRequest(f"Unsupported operator {op} on {name}")


def _tighter(a: Bound, b: Bound, ctype: Any, sign: int) -> Bound:
    """Of two bounds of one side of a single-column slice the one that admits fewer values (``sign`` 1: start)."""
    c = ctype.compare(a.values[0], b.values[0]) * sign
    if c != 0:
        return a if c > 0 else b
    return a if not a.inclusive else b


def _multi_column_relation(table: Table, rel: ast.Relation, ev: Evaluator, ck_eq, ck_eq_width, ck_slices,
                           ck_slice_width, select: bool = False, checks: list[Filter] | None = None) -> None:
    """``(c1, c2, ...) op tuple`` or ``... IN (tuples)`` on the first clustering columns (in a SELECT a null
    tuple matches no row; with ``checks``, a SELECT's, a slice may span columns of mixed order).  The columns
    and the other multi-column relations were checked by :func:`check_where`."""
    cols = [_column(table, n) for n in rel.lhs.columns]
    positions = [c.position for c in cols]
    ttype = T.TupleType(tuple(c.type for c in cols))
    receiver = "(" + ",".join(c.name for c in cols) + ")"

    def tup(v) -> tuple[bytes, ...] | None:
        """The serialized tuple; None for a null one (or one holding a null) in a SELECT: it matches nothing."""
        if v is None:
            if select:
                return None
            raise InvalidRequest(f"Invalid null value in condition for columns: {list(rel.lhs.columns)}")
        if v is T.UNSET:
            raise InvalidRequest(f"Invalid unset value for columns: {list(rel.lhs.columns)}")
        if len(v) != len(cols):
            raise InvalidRequest(f"Expected {len(cols)} elements in value tuple, but got {len(v)}")
        for c, x in zip(cols, v):
            if x is None:
                raise InvalidRequest(f"Invalid null value in condition for column {c.name}")
        return tuple(_serialize(c, x) for c, x in zip(cols, v))

    first = positions[0]
    if rel.op in ("=", "IN"):
        if rel.op == "=":
            values = [ev.value(rel.rhs, ttype, receiver)]
        else:
            values = _in_values(ev, rel.rhs, ttype, receiver, select) or []
        tuples = [t for t in map(tup, values) if t is not None]
        ck_eq[first] = tuples
        ck_eq_width[first] = len(cols)
    elif rel.op in ("<", "<=", ">", ">=") and len({c.reversed for c in cols}) > 1:
        if checks is None:
            raise InvalidRequest("Multi-column slice restrictions on clustering columns of mixed order are not supported")
        _mixed_order_slice(cols, rel.op, tup(ev.value(rel.rhs, ttype, receiver)), ck_slices, ck_slice_width, checks)
    elif rel.op in ("<", "<=", ">", ">="):
        bound = tup(ev.value(rel.rhs, ttype, receiver))
        common = cols[:min(len(cols), ck_slice_width.get(first, len(cols)))]
        sl = ck_slices.setdefault(first, ClusteringSlice(first))
        ck_slice_width[first] = max(len(cols), ck_slice_width.get(first, 0))
        if bound is None:
            raise _Nothing()
        _add_bound(sl, rel.op, bound, ", ".join(c.name for c in common))
    else:
        raise InvalidRequest(f"Unsupported operator {rel.op} in multi-column relation")


TUPLE_OPS = {"TUPLE" + op: op for op in ("<", "<=", ">", ">=")}


def _mixed_order_slice(cols: list[Column], op: str, bound: tuple[bytes, ...] | None, ck_slices, ck_slice_width,
                       checks: list[Filter]) -> None:
    """``(b, c) > (1, 2)`` on clustering columns of mixed order (Cassandra's and ScyllaDB's SELECT): the tuples
    compare value by value, so the rows are not one range of the clustering order. The first column's bound
    (inclusive) narrows the read to a range that holds them all; a row check (op ``TUPLE>``) keeps the ones
    whose tuple compares as asked."""
    if bound is None:
        raise _Nothing()
    first = cols[0]
    sl = ck_slices.setdefault(first.position, ClusteringSlice(first.position))
    ck_slice_width[first.position] = max(1, ck_slice_width.get(first.position, 1))
    side = sl.start if op in (">", ">=") else sl.end
    if side is None or len(side.values) == 1:  # a wider bound of another relation already holds the rows
        _add_bound(sl, op[0] + "=", bound[:1], first.name, first.type)
    checks.append(Filter(first, "TUPLE" + op, (bound,), tuple(cols)))


def _token_relation(table: Table, rel: ast.Relation, ev: Evaluator, kr: KeyRestrictions) -> None:
    """``token(pk...) op value``: a token range (the arguments, the partition key in order, were checked by
    :func:`check_where`)."""
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


def _contains_filter(col: Column, rel: ast.Relation, ev: Evaluator, select: bool = False) -> Filter:
    """``c CONTAINS v`` / ``c CONTAINS KEY k`` (in a SELECT, ``CONTAINS null`` matches no row)."""
    t = col.type  # a collection (a map for CONTAINS KEY), as check_where made sure
    if rel.op == "CONTAINS KEY":
        et = t.key
    else:
        et = t.value if isinstance(t, T.MapType) else t.element
    v = ev.value(rel.rhs, et, col.name)
    if v is None:
        if select:
            return Filter(col, rel.op, (None,))
        raise InvalidRequest(f"Unsupported null value for column {col.name}")
    if v is T.UNSET:
        raise InvalidRequest(f"Unsupported unset value for column {col.name}")
    return Filter(col, rel.op, (et.serialize(v),))


def _equal(t: Any, a: bytes, b: bytes) -> bool:
    """Whether two values of type ``t`` are equal: a type holding durations has no order, its values are
    equal when their bytes are (ScyllaDB and Cassandra filter ``d = 1s``)."""
    return a == b or (not t.references_duration() and t.compare(a, b) == 0)


def matches(f: Filter, t: Any, b: bytes | None) -> bool:
    """Whether a column value (``b``: its stored bytes, None when null) satisfies a filter; a null value
    satisfies none, nor does a comparison with null."""
    if b is None:
        return False
    op = f.op
    values = f.values
    if values and values[0] is None and op != "IN":
        return False
    if op == "IN":
        return any(_equal(t, b, v) for v in values)
    if op == "NOT IN":
        return not any(_equal(t, b, v) for v in values)
    if op == "=":
        return _equal(t, b, values[0])
    if op in ("CONTAINS", "CONTAINS KEY"):
        value = t.deserialize(b)
        needle = values[0]
        if op == "CONTAINS KEY":
            kt = t.key
            return any(_equal(kt, kt.serialize(k), needle) for k in value.keys())
        items = value.values() if isinstance(t, T.MapType) else value
        et = t.value if isinstance(t, T.MapType) else t.element
        return any(_equal(et, et.serialize(x), needle) for x in items)
    if op == "LIKE":
        return values[0].fullmatch(t.deserialize(b)) is not None
    if op == "ELEMENT":
        value = t.deserialize(b)
        if isinstance(t, T.MapType):
            element, et = value.get(f.key), t.value
        else:
            element = value[f.key] if 0 <= f.key < len(value) else None
            et = t.element
        return element is not None and _equal(et, et.serialize(element), values[0])
    if op in TUPLE_OPS:  # b: the values of the columns in f.key
        if None in b:
            return False
        c = next((c for c in map(lambda col, x, v: col.type.compare(x, v), f.key, b, values[0]) if c), 0)
        op = TUPLE_OPS[op]
    else:
        c = t.compare(b, values[0])
    return {"=": c == 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}.get(op, False)


def token_bounds(kr: KeyRestrictions) -> tuple[int | None, bool, int | None, bool]:
    """Token range (lo, lo_inclusive, hi, hi_inclusive) from token relations, None for unbounded."""
    lo, lo_inc = kr.token_lo if kr.token_lo else (None, True)
    hi, hi_inc = kr.token_hi if kr.token_hi else (None, True)
    return lo, lo_inc, hi, hi_inc
