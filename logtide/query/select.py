"""SELECT: partitions in token order, rows in clustering order, selectors, filtering, limits, JSON.

Result order and shape follow Cassandra with the Murmur3 partitioner: token
order, then clustering order (or its reverse with ``ORDER BY``); a partition
with a live static row and no live clustering rows yields one row with null
clustering columns when the query does not restrict clustering columns.

One idea split for size with ``read.py``, ``projection.py``, ``cell_meta.py``, ``select_result.py`` and
``index_lookup.py``: the SELECT pipeline.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..result import ColumnSpec, ResultSet, Row
from ..schema import types as T
from ..schema.model import CLUSTERING, PARTITION_KEY, STATIC, Column, Table
from ..storage.keys import partition_token, serialize_partition_key, split_partition_key, token_of
from . import cell_meta
from .evaluate import TermEvaluator
from .grouping import PartitionCounter, aggregate, check_grouping, group_by_width
from .index_lookup import IndexedSource, choose
from .projection import UniformPlan, plain_columns, raw_values_of, row_projector, uniform_plan
from .read import LiveRow, column_bytes
from .restrictions import (FILTERING_MESSAGE, TUPLE_OPS, Filter, KeyRestrictions, UnrecognizedName, analyse, matches,
                           needs_filtering as filtering_needed, token_bounds, where_column)
from .select_result import SelectResult
from .selection import Selected, selection


class PartitionSource:
    """Where a SELECT reads partitions from (stored tables, or generated system tables)."""

    def partitions(self, table: Table, kr: KeyRestrictions) -> Iterator[Any]:
        raise NotImplementedError


@dataclass(slots=True)
class CqlRow:
    """One row as CQL shows it: partition key, clustering (None for a static-only row), row and static cells."""

    key: tuple[bytes, ...]
    token: int
    row: LiveRow | None
    static: LiveRow | None
    pk: bytes = b""

    def bytes_of(self, col: Column) -> bytes | None:
        if col.kind == PARTITION_KEY:
            return self.key[col.position]
        if col.kind == CLUSTERING:
            return None if self.row is None else self.row.clustering[col.position]
        src = self.static if col.kind == STATIC else self.row
        return None if src is None else column_bytes(src, col)

    def cell_of(self, col: Column):
        src = self.static if col.kind == STATIC else self.row
        return None if src is None else src.cells.get(col.name)


@dataclass
class SelectContext:
    """What a SELECT execution needs."""

    table: Table
    ev: TermEvaluator
    now: int
    source: PartitionSource


def _order(stmt: ast.Select, table: Table, kr: KeyRestrictions) -> bool:
    """Whether rows are read in reverse clustering order (validates ORDER BY)."""
    if not stmt.order_by:
        return False
    if kr.partition_keys is None:
        raise InvalidRequest("ORDER BY is only supported when the partition key is restricted by an EQ or an IN.")
    ck = table.clustering_key
    single = _single_valued(stmt.where)
    fixed = 0  # leading clustering columns with one value (b = 0, (b, c) = (0, 1), b IN (0)): ORDER BY may skip them
    while fixed < len(ck) and ck[fixed].name in single:
        fixed += 1
    reverse = None
    i = 0
    for ob in stmt.order_by:
        col = table.column(ob.column)
        if col is None:
            ordering_column(stmt, table, ob.column)
        if col.kind != CLUSTERING:
            raise InvalidRequest(f"Order by is currently only supported on the clustered columns of the PRIMARY KEY, "
                                 f"got {ob.column}")
        while i < fixed and ck[i].name != col.name:
            i += 1
        if i >= len(ck) or ck[i].name != col.name:
            raise InvalidRequest("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY")
        i += 1
        r = ob.descending != col.reversed
        if reverse is None:
            reverse = r
        elif reverse != r:
            raise InvalidRequest("Unsupported order by relation")
    return bool(reverse)


def _single_valued(where: Sequence[ast.Relation]) -> set[str]:
    """The columns a WHERE clause restricts to one value as written: ``=``, or ``IN`` of one item (``IN ?`` may
    bind several)."""
    out: set[str] = set()
    for rel in where:
        one = rel.op == "=" or rel.op == "IN" and isinstance(rel.rhs, ast.InValues) and len(rel.rhs.items) == 1
        if one and isinstance(rel.lhs, ast.ColumnRef):
            out.add(rel.lhs.name)
        elif one and isinstance(rel.lhs, ast.ColumnTuple):
            out.update(rel.lhs.columns)
    return out


def _positive_int(ev: TermEvaluator, term: Any, what: str) -> int | None:
    if term is None:
        return None
    v = ev.value(term, T.INT, f"[{what}]")
    if v is None:
        raise InvalidRequest(f"Invalid null value of {what.lower()}")
    if v is T.UNSET:
        return None
    if v <= 0:
        raise InvalidRequest(f"{'LIMIT' if what == 'limit' else 'PER PARTITION LIMIT'} must be strictly positive")
    return v


def _check_distinct(stmt: ast.Select, table: Table, selected: list[Selected], key_range: bool) -> None:
    """ScyllaDB's ``validate_distinct_selection``; ``key_range``: the partitions are not named by ``=``/``IN`` on
    the whole partition key, and only then must every partition-key column be selected."""
    for rel in stmt.where:  # ScyllaDB's validate_distinct_selection (a static column stays allowed, as in Cassandra)
        lhs = rel.lhs
        names = lhs.columns if isinstance(lhs, ast.ColumnTuple) else (getattr(lhs, "name", None) or
                                                                      getattr(lhs, "column", None),)
        if any(isinstance(n, str) and (c := table.column(n)) is not None and c.kind not in (PARTITION_KEY, STATIC)
               for n in names):
            raise InvalidRequest("SELECT DISTINCT with WHERE clause only supports restriction by partition key.")
    if stmt.selectors is None:
        raise InvalidRequest("SELECT DISTINCT queries must only request partition key columns and/or static columns (not "
                             + ", ".join(c.name for c in table.columns if c.kind not in (PARTITION_KEY, STATIC)) + ")")
    for sel in selected:
        for name in sel.columns:
            col = table.column(name)
            if col is not None and col.kind not in (PARTITION_KEY, STATIC):
                raise InvalidRequest(f"SELECT DISTINCT queries must only request partition key columns and/or static columns (not {name})")
    names = {n for s in selected for n in s.columns}
    missing = [c.name for c in table.partition_key if c.name not in names]
    if missing and key_range:
        raise InvalidRequest("SELECT DISTINCT queries must request all the partition key columns (missing "
                             + ", ".join(missing) + ")")


@dataclass(frozen=True)
class PagingState:
    """Where the next page starts: after the row (token, pk, ck) -- ck None for a static-only row --,
    with the rows already returned and the count returned from that row's partition.

    ``offset`` is used instead for results sorted in memory (ORDER BY across partitions).
    """

    token: int
    pk: bytes
    ck: bytes | None
    returned: int
    partition_count: int
    offset: int = -1

    def encode(self) -> bytes:
        ck = b"\xff\xff\xff\xff" if self.ck is None else struct.pack(">i", len(self.ck)) + self.ck
        return (b"\x01" + struct.pack(">qi", self.token, len(self.pk)) + self.pk + ck
                + struct.pack(">iiq", self.returned, self.partition_count, self.offset))

    @classmethod
    def decode(cls, data: bytes) -> "PagingState":
        try:
            if data[:1] != b"\x01":
                raise ValueError("version")
            token, n = struct.unpack_from(">qi", data, 1)
            pos = 13
            pk = data[pos:pos + n]
            pos += n
            (m,) = struct.unpack_from(">i", data, pos)
            pos += 4
            ck = None if m < 0 else data[pos:pos + m]
            pos += max(m, 0)
            returned, pcount, offset = struct.unpack_from(">iiq", data, pos)
            if len(pk) != n or (ck is not None and len(ck) != m) or pos + 16 != len(data):
                raise ValueError("length")
        except (struct.error, ValueError):
            raise InvalidRequest("Invalid value for the paging state") from None
        return cls(token, pk, ck, returned, pcount, offset)


def _after(r: CqlRow, pk: bytes, st: PagingState, reverse: bool) -> bool:
    """Whether row ``r`` of the resumed partition comes after the paging position."""
    if st.ck is None:  # the static-only row was the last one: the partition is done
        return False
    if r.row is None:
        return False
    return r.row.ck < st.ck if reverse else r.row.ck > st.ck


def partition_order(table: Table, kr: KeyRestrictions) -> Callable[[int, bytes], Any]:
    """The order a query reads partitions in, as a key of (token, partition key bytes): token order, or
    for partition keys given by ``=``/``IN`` the order of their values (each component by its type's
    comparator, as Cassandra and ScyllaDB sort the IN values), then of their bytes: keys of equal values are
    still distinct partitions (a varint key with a redundant sign byte, a decimal 1.0 beside 1.00), and paging
    must not take one for the other."""
    if kr.partition_keys is None:
        return lambda token, pk: (token, pk)
    cols = table.partition_key
    if len(cols) == 1:
        t = cols[0].type
        return lambda token, pk: (t.comparable(pk), pk)
    return lambda token, pk: (tuple(c.type.comparable(v) for c, v in zip(cols, split_partition_key(pk, len(cols)))),
                              pk)


def cql_rows(table: Table, source: PartitionSource, kr: KeyRestrictions, reverse: bool, distinct: bool,
             per_partition_limit: int | None, resume: PagingState | None = None,
             values: bool = False) -> Iterator[CqlRow]:
    """The rows a query addresses, before filtering on non-key columns, from a paging position on
    (``values``: read for values only, ``PartitionView.rows``)."""
    ranges = kr.clustering_ranges(table) if table.clustering_key else [(None, None)]
    if reverse:
        ranges = list(reversed(ranges))
    whole_partition = not kr.clustering_restricted
    order = partition_order(table, kr)
    for part in source.partitions(table, kr):
        if resume is not None and resume.offset < 0:
            at, resumed = order(part.token, part.pk), order(resume.token, resume.pk)
            if at < resumed:
                continue
            if at == resumed:
                if distinct:
                    continue
                static = part.static_row()
                for lo, hi in ranges:
                    for lr in part.rows(lo, hi, reverse, values):
                        row = CqlRow(part.key, part.token, lr, static, part.pk)
                        if _after(row, part.pk, resume, reverse):
                            yield row
                continue
        static = part.static_row()
        if distinct:
            any_row = static is not None or any(True for _ in part.rows(None, None))
            if any_row:
                yield CqlRow(part.key, part.token, None, static, part.pk)
            continue
        emitted = 0
        for lo, hi in ranges:
            for lr in part.rows(lo, hi, reverse, values):
                yield CqlRow(part.key, part.token, lr, static, part.pk)
                emitted += 1
        if emitted == 0 and static is not None and whole_partition:
            yield CqlRow(part.key, part.token, None, static, part.pk)


def value_chunks(table: Table, source: "StoredSource", kr: KeyRestrictions, reverse: bool,
                 resume: PagingState | None, plan: UniformPlan) -> Iterator[tuple[int, bytes, list[bytes], list[list]]]:
    """The rows :func:`cql_rows` gives for a plain-column selection of a table without static columns
    (``projection.uniform_plan``), as ``projection.raw_values_of`` rows, one clustering range of one
    partition at a time: ``(token, pk, clustering keys, rows)`` (``PartitionView.value_rows``)."""
    ranges = kr.clustering_ranges(table) if table.clustering_key else [(None, None)]
    if reverse:
        ranges = list(reversed(ranges))
    order = partition_order(table, kr)
    for part in source.partitions(table, kr):
        after = None
        if resume is not None:
            at, resumed = order(part.token, part.pk), order(resume.token, resume.pk)
            if at < resumed:
                continue
            if at == resumed:
                if resume.ck is None:  # the static-only row was the last one: the partition is done
                    continue
                after = resume.ck
        for lo, hi in ranges:
            cks, rows = part.value_rows(lo, hi, reverse, plan)
            if after is not None:
                keep = [i for i, ck in enumerate(cks) if (ck < after if reverse else ck > after)]
                cks, rows = [cks[i] for i in keep], [rows[i] for i in keep]
            if rows:
                yield part.token, part.pk, cks, rows


def ordering_column(stmt: ast.Select, table: Table, name: str) -> Column:
    """The column an ``ORDER BY`` names, or ScyllaDB's error for a name that is none
    (``select_statement::handle_unrecognized_ordering_column``; PREPARE checks it too)."""
    col = table.column(name)
    if col is None:
        if any(s.alias == name for s in stmt.selectors or ()):
            raise InvalidRequest(f"Aliases are not allowed in order by clause ('{name}')")
        raise InvalidRequest(f"Order by on unknown column {name}")
    return col


def _unbuilt_note(table: Table, kr: KeyRestrictions, stmt: ast.Select, source: Any) -> str:
    """What a query refused for filtering is told when an index being built would serve it once built."""
    if indexed_soon := (getattr(source, "unbuilt", None) and choose(table, kr, stmt.where)):
        if indexed_soon.index.store_id in source.unbuilt:
            return (f" (secondary index {indexed_soon.index.name} is still being built: see "
                    "system.views_builds_in_progress)")
    return ""


def result_columns(stmt: ast.Select, table: Table, ctx: SelectContext) -> tuple[ColumnSpec, ...]:
    """The result columns of a SELECT (for prepared statement metadata)."""
    selected = selection(stmt, table, ctx)
    if stmt.json:
        return (ColumnSpec(table.keyspace, table.name, "[json]", T.TEXT),)
    return tuple(ColumnSpec(table.keyspace, table.name, s.name, s.type) for s in selected)


def execute_select(stmt: ast.Select, table: Table, ctx: SelectContext, page_size: int | None = None,
                   paging_state: bytes | None = None) -> ResultSet:
    """Run a SELECT against a table, one page of ``page_size`` rows (or groups) at a time when asked."""
    ev = ctx.ev
    ev.table = table  # token(...) in a term is the token of this table's partition key (token(k) > token(5))
    selected = selection(stmt, table, ctx)  # the selectors' errors first, as ScyllaDB's prepare
    try:
        kr = analyse(table, stmt.where, ev, select=True, allow_filtering=stmt.allow_filtering)
    except UnrecognizedName as e:  # an alias in WHERE is named as such (ScyllaDB's prepare_restrictions)
        where_column(table, e.entity, {s.alias for s in stmt.selectors or () if s.alias})
        raise
    # with ALLOW FILTERING an index is still looked for whenever something is filtered
    needs_filtering = (bool(kr.filters) or kr.partition_filters) if stmt.allow_filtering else filtering_needed(kr)
    source = ctx.source
    indexed = choose(table, kr, stmt.where, source.unbuilt) \
        if needs_filtering and isinstance(source, StoredSource) else None
    if indexed is not None:  # a secondary index serves a restriction (query.index_lookup)
        needs_filtering = indexed.needs_filtering
        at = PagingState.decode(paging_state) if paging_state else None
        source = IndexedSource(source, indexed, partition_order(table, kr),
                               (at.token, at.pk, at.ck) if at is not None and at.offset < 0 else None)
    if needs_filtering and not stmt.allow_filtering:
        # ScyllaDB's order: a column after a slice, a partly restricted partition key, then the clustering
        # columns (CONTAINS, a gap), then the other columns
        if kr.gap_after_slice:
            raise InvalidRequest(kr.clustering_gap_error)
        if not kr.partition_filters and indexed is None:  # with an index, ScyllaDB names filtering only
            if any(f.column.kind == CLUSTERING and f.op in ("CONTAINS", "CONTAINS KEY") for f in kr.filters):
                raise InvalidRequest("Cannot restrict clustering columns by a CONTAINS relation without a secondary "
                                     "index or filtering")
            if kr.clustering_gap_error:
                raise InvalidRequest(kr.clustering_gap_error)
        raise InvalidRequest(FILTERING_MESSAGE + _unbuilt_note(table, kr, stmt, source))
    reverse = _order(stmt, table, kr)
    if isinstance(source, IndexedSource):
        source.reverse = reverse
    limit = _positive_int(ev, stmt.limit, "limit")
    ppl = _positive_int(ev, stmt.per_partition_limit, "per partition limit")
    if stmt.distinct:
        if stmt.per_partition_limit is not None:
            raise InvalidRequest("PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries")
        _check_distinct(stmt, table, selected, kr.partition_keys is None or kr.partition_filters)
    width = group_by_width(stmt, table)
    aggregating = any(s.state is not None for s in selected)
    check_grouping(stmt, width, aggregating, ppl)
    filters = kr.filters + kr.checks
    rows_out: list[list[Any]] = []
    resume = PagingState.decode(paging_state) if paging_state else None
    if (aggregating and width is None) or (page_size is not None and page_size <= 0):
        page_size = None
    returned = first = resume.returned if resume else 0
    source_rows: Iterable[CqlRow] = () if kr.empty else cql_rows(
        table, source, kr, reverse, stmt.distinct, ppl, resume if resume and resume.offset < 0 else None,
        not _reads_cells(stmt.selectors))
    grouped = aggregating or width is not None
    # plain columns: rows are kept as the stored bytes of their values (SelectResult)
    plain = None if grouped or stmt.json else plain_columns(selected)
    kept: list[list[bytes | None]] | None = None if plain is None else []
    raw_of = None if plain is None else raw_values_of(plain)
    in_memory = bool(stmt.order_by and kr.partition_keys is not None and len(kr.partition_keys) > 1)
    if in_memory:
        ordered = _sort_across_partitions(list(source_rows), reverse)
        source_rows = ordered[resume.offset:] if resume and resume.offset >= 0 else ordered
    taken = PartitionCounter(ppl, resume)
    next_state: PagingState | None = None
    consumed = resume.offset if resume and resume.offset >= 0 else 0
    project = row_projector(selected)
    keep = _keeper(filters)
    page_bytes = 0
    uniform = None
    if (plain is not None and not filters and ppl is None and not in_memory and not stmt.distinct
            and isinstance(source, StoredSource) and not kr.empty):
        uniform = uniform_plan(table, plain, raw_of)  # type: ignore[arg-type]
    if grouped:
        def position(r: CqlRow, groups: int, partition_groups: int, offset: int) -> PagingState:
            return PagingState(r.token, r.pk, r.row.ck if r.row is not None else None, groups, partition_groups,
                               offset if in_memory else -1)
        rows_out, next_state = aggregate(selected, source_rows, width, keep, limit, ppl, page_size, resume, position)
        source_rows = ()
    if uniform is not None:  # whole clustering ranges at a time, the same rows, limit and paging
        source_rows = ()
        for token, pk, cks, rows in value_chunks(table, source, kr, reverse,  # type: ignore[arg-type]
                                                 resume if resume and resume.offset < 0 else None, uniform):
            taken.enter(token, pk)
            take = len(rows)
            if limit is not None:
                take = min(take, max(limit - returned, 1))
            if page_size is not None:
                take = min(take, max(page_size - (returned - first), 1))
            if page_size is not None:  # a page also ends after PAGE_BYTES of values (ScyllaDB)
                chunk = sum(map(_raw_size, rows[:take]))
                if page_bytes + chunk < PAGE_BYTES:
                    page_bytes += chunk
                else:
                    for i in range(take):
                        page_bytes += _raw_size(rows[i])
                        if page_bytes >= PAGE_BYTES:
                            take = i + 1
                            break
            kept.extend(rows if take == len(rows) else rows[:take])  # type: ignore[union-attr]
            returned += take
            taken.count += take
            if limit is not None and returned >= limit:
                break
            if page_size is not None and (returned - first >= page_size or page_bytes >= PAGE_BYTES):
                next_state = PagingState(token, pk, cks[take - 1], returned, taken.count, -1)
                break
    for r in source_rows:
        consumed += 1
        if filters and not keep(r):
            continue
        if not taken.admit(r.token, r.pk):
            continue
        if kept is not None:
            raw = raw_of(r.key, r.row, r.static)  # type: ignore[misc]
            kept.append(raw)
            if page_size is not None:
                page_bytes += _raw_size(raw)
        else:
            rows_out.append(project(r))
        returned += 1
        if limit is not None and returned >= limit:
            break
        if page_size is not None and (returned - first >= page_size or page_bytes >= PAGE_BYTES):
            next_state = PagingState(r.token, r.pk, r.row.ck if r.row is not None else None, returned,
                                     taken.count, consumed if in_memory else -1)
            break
    columns = tuple(ColumnSpec(table.keyspace, table.name, s.name, s.type) for s in selected)
    if kept is not None:
        result: ResultSet = SelectResult(columns, kept, plain)  # type: ignore[arg-type]
    elif stmt.json:
        result = _json_result(table, columns, rows_out, _named_selectors(stmt, len(columns)))
    else:
        names = tuple(c.name for c in columns)
        result = ResultSet("rows", columns, [Row(names, v) for v in rows_out])
    result.paging_state = next_state.encode() if next_state is not None else None
    return result


PAGE_BYTES = 1 << 20
"""A page of a paged SELECT of columns ends once its values reach this many bytes, whatever the page size
asked for (ScyllaDB's 1 MB result-size cutoff; a client with paging off gets every row)."""


def _raw_size(raw: list[bytes | None]) -> int:
    return sum(map(len, filter(None, raw)))


def _keeper(filters: list[Filter]) -> Callable[[CqlRow], bool]:
    """Whether a row satisfies every filter (``restrictions.matches`` on the filtered column's value)."""
    if not filters:
        return lambda r: True
    checks = [(f, f.column, f.column.type, f.key if f.op in TUPLE_OPS else None) for f in filters]

    def keep(r: CqlRow) -> bool:
        return all(matches(f, t, r.bytes_of(c) if cs is None else tuple(map(r.bytes_of, cs)))
                   for f, c, t, cs in checks)
    return keep


def _reads_cells(node: Any) -> bool:
    """Whether selectors call a function of cell metadata (``cell_meta.FUNCTIONS``: write times, TTLs, list
    keys, the row marker), which reads cells, not only values."""
    if isinstance(node, ast.FunctionCall) and node.name in cell_meta.FUNCTIONS:
        return True
    if isinstance(node, (list, tuple)):
        return any(_reads_cells(n) for n in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return any(_reads_cells(getattr(node, f.name)) for f in dataclasses.fields(node))
    return False


def _sort_across_partitions(rows: list[CqlRow], reverse: bool) -> list[CqlRow]:
    return sorted(rows, key=lambda r: r.row.ck if r.row is not None else b"", reverse=reverse)


def json_key(name: str) -> str:
    """A result column's name as SELECT JSON writes it (ScyllaDB's ``as_json``): in double quotes when it
    has an upper-case letter (a case-sensitive name), as it is otherwise (``"1"``, ``"ttl(v)"``)."""
    if any(ch.isupper() for ch in name):
        return '"' + name + '"'
    return name


def _named_selectors(stmt: ast.Select, n: int) -> list[bool]:
    """Which selectors are a column or an alias (a name SELECT JSON may quote), not a function call."""
    if stmt.selectors is None or len(stmt.selectors) != n:
        return [True] * n
    return [bool(s.alias) or isinstance(s.expr, ast.ColumnRef) for s in stmt.selectors]


def _json_result(table: Table, columns: tuple[ColumnSpec, ...], rows: list[list[Any]],
                 named: list[bool]) -> ResultSet:
    """SELECT JSON's rows; a function call's key is its text as is (ScyllaDB: ``"ttl(v)"``, not quoted)."""
    keys = [json.dumps(json_key(c.name) if q else c.name) for c, q in zip(columns, named)]
    out = []
    for values in rows:
        parts = [k + ": " + T.to_json(c.type, v) for k, c, v in zip(keys, columns, values)]
        out.append(Row(("[json]",), ["{" + ", ".join(parts) + "}"]))
    return ResultSet("rows", (ColumnSpec(table.keyspace, table.name, "[json]", T.TEXT),), out)


# ---------------------------------------------------------------------------
# sources
# ---------------------------------------------------------------------------


class StoredSource(PartitionSource):
    """Partitions of a stored table within one read snapshot."""

    def __init__(self, txn: Any, now: int, unbuilt: frozenset[int] = frozenset()) -> None:
        self.txn = txn
        self.now = now
        self.unbuilt = unbuilt  # store ids of the secondary indexes still being built: not read through

    def partitions(self, table: Table, kr: KeyRestrictions) -> Iterator[Any]:
        from .read import stored_partition, stored_partitions
        if kr.partition_keys is not None:
            order = partition_order(table, kr)
            keys = sorted({(partition_token(table, pk), pk) for pk in (serialize_partition_key(k) for k in kr.partition_keys)},
                          key=lambda tp: order(*tp))
            for token, pk in keys:
                p = stored_partition(table, self.txn, self.now, token, pk)
                if p is not None:
                    yield p
            return
        lo, lo_inc, hi, hi_inc = token_bounds(kr)
        yield from stored_partitions(table, self.txn, self.now, lo, lo_inc, hi, hi_inc)


@dataclass
class VirtualPartition:
    """A partition of a generated table (system_schema and friends)."""

    token: int
    pk: bytes
    key: tuple[bytes, ...]
    static: LiveRow | None
    clustered: list[LiveRow] = field(default_factory=list)

    def static_row(self) -> LiveRow | None:
        return self.static

    def rows(self, lo: bytes | None, hi: bytes | None, reverse: bool = False,
             values: bool = False) -> Iterator[LiveRow]:
        rows = [r for r in self.clustered if (lo is None or r.ck >= lo) and (hi is None or r.ck < hi)]
        return iter(reversed(rows) if reverse else rows)


def _virtual_elements(ctype: Any, value: Any) -> list:
    """Element cells (key, Cell) of a non-frozen set or map value, in comparator order."""
    from ..mutation.cells import Cell
    from .read import element_order_key
    if isinstance(ctype, T.MapType):
        items = [(ctype.key.serialize(k), Cell(0, ctype.value.serialize(x))) for k, x in value.items()]
    elif isinstance(ctype, T.SetType):
        items = [(ctype.element.serialize(e), Cell(0, b"")) for e in value]
    else:
        raise AssertionError(f"virtual tables have no non-frozen {ctype.cql()} columns")
    order = element_order_key(ctype)
    return sorted(items, key=lambda kv: order(kv[0]))


class VirtualSource(PartitionSource):
    """Rows given as dicts of Python values, laid out like a stored table."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def partitions(self, table: Table, kr: KeyRestrictions) -> Iterator[Any]:
        from ..mutation.cells import Cell
        from ..storage.keys import clustering_key
        parts: dict[bytes, VirtualPartition] = {}
        for d in self.rows:
            key = tuple(c.type.serialize(d[c.name]) for c in table.partition_key)
            pk = serialize_partition_key(key)
            vp = parts.get(pk)
            if vp is None:
                vp = parts[pk] = VirtualPartition(token_of(pk), pk, key, None)
            clustering = tuple(c.type.serialize(d[c.name]) for c in table.clustering_key)
            ck = clustering_key(table.clustering_key, clustering)
            lr = LiveRow(key, clustering, ck, marker_live=True)
            for c in table.columns:
                if c.is_primary_key:
                    continue
                v = d.get(c.name)
                if v is None:
                    continue
                if c.type.is_multicell:  # non-frozen collections are read from element cells (server engineer)
                    lr.complex[c.name] = _virtual_elements(c.type, v)
                else:
                    lr.cells[c.name] = Cell(0, c.type.serialize(v))
            vp.clustered.append(lr)
        wanted = None
        if kr.partition_keys is not None:
            wanted = {serialize_partition_key(k) for k in kr.partition_keys}
        lo, lo_inc, hi, hi_inc = token_bounds(kr)
        order = partition_order(table, kr)
        for vp in sorted(parts.values(), key=lambda p: order(p.token, p.pk)):
            if wanted is not None and vp.pk not in wanted:
                continue
            if lo is not None and (vp.token < lo or (vp.token == lo and not lo_inc)):
                continue
            if hi is not None and (vp.token > hi or (vp.token == hi and not hi_inc)):
                continue
            vp.clustered.sort(key=lambda r: r.ck)
            yield vp
