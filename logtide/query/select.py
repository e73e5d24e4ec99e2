"""SELECT: partitions in token order, rows in clustering order, selectors, filtering, limits, JSON.

Result order and shape follow Cassandra with the Murmur3 partitioner: token
order, then clustering order (or its reverse with ``ORDER BY``); a partition
with a live static row and no live clustering rows yields one row with null
clustering columns when the query does not restrict clustering columns.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from ..cql import ast
from ..errors import InvalidRequest
from ..result import ColumnSpec, ResultSet, Row
from ..schema import types as T
from ..schema.model import CLUSTERING, PARTITION_KEY, STATIC, Column, Table
from ..storage.keys import partition_token, serialize_partition_key, token_of
from . import cell_meta
from .evaluate import TermEvaluator, arg_text, call_text
from .functions import AGGREGATES, Aggregate
from .projection import UniformPlan, plain_columns, raw_values_of, row_projector, uniform_plan
from .read import LiveRow, column_bytes
from .restrictions import FILTERING_MESSAGE, Filter, KeyRestrictions, analyse, token_bounds
from .select_result import SelectResult


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
class Selected:
    """A compiled selector: result column name and type, and how to compute it from a row."""

    name: str
    type: Any
    compute: Callable[[CqlRow], Any]
    aggregate: str | None = None
    arg: "Selected | None" = None
    columns: tuple[str, ...] = ()
    column: Column | None = None  # set for a plain column reference (read by ``row_projector``)


@dataclass
class SelectContext:
    """What a SELECT execution needs."""

    table: Table
    ev: TermEvaluator
    now: int
    source: PartitionSource


def _deser(t: Any, b: bytes | None) -> Any:
    return None if b is None else t.deserialize(b)


def compile_selector(sel: Any, table: Table, ctx: SelectContext) -> Selected:
    """Compile one selector expression."""
    if isinstance(sel, ast.ColumnRef):
        col = table.column(sel.name)
        if col is None:
            raise InvalidRequest(f"Undefined column name {sel.name}")
        t = col.type
        return Selected(col.name, t, lambda r, c=col, t=t: _deser(t, r.bytes_of(c)), columns=(col.name,), column=col)
    if isinstance(sel, ast.FunctionCall):
        return _compile_call(sel, table, ctx)
    if isinstance(sel, ast.FieldSelection):
        inner = compile_selector(sel.expr, table, ctx)
        t = inner.type
        if not isinstance(t, T.UserType):
            raise InvalidRequest(f"Invalid field selection: {inner.name} of type {t.cql()} is not a user type")
        if sel.field not in t.field_names:
            raise InvalidRequest(f"{t.name} has no field {sel.field}")
        idx = t.field_names.index(sel.field)

        def field_value(r: CqlRow, inner=inner, idx=idx) -> Any:
            v = inner.compute(r)
            if v is None:
                return None
            return v[idx] if idx < len(v) else None
        return Selected(f"{inner.name}.{sel.field}", t.field_types[idx], field_value, columns=inner.columns)
    if isinstance(sel, ast.ElementSelection):
        inner = compile_selector(sel.expr, table, ctx)
        t = inner.type
        if not isinstance(t, (T.MapType, T.SetType)):
            raise InvalidRequest(f"Element selection is only allowed on sets and maps, but {inner.name} is a {t.cql()}")
        kt = t.key if isinstance(t, T.MapType) else t.element
        key = ctx.ev.value(sel.key, kt, inner.name)

        def element(r: CqlRow, inner=inner, key=key, is_map=isinstance(t, T.MapType)) -> Any:
            v = inner.compute(r)
            if v is None:
                return None
            if is_map:
                return v.get(key)
            return key if key in v else None
        return Selected(f"{inner.name}[{arg_text(sel.key)}]", t.value if isinstance(t, T.MapType) else t.element,
                        element, columns=inner.columns)
    # a literal selector
    raise InvalidRequest("Constant selectors need a type hint: use (type)value")


def _compile_call(fc: ast.FunctionCall, table: Table, ctx: SelectContext) -> Selected:
    name = fc.name
    if name in cell_meta.FUNCTIONS:
        return cell_meta.compile_meta(fc, table, ctx, compile_selector)
    if name == "token":
        names = [a.name if isinstance(a, ast.ColumnRef) else None for a in fc.args]
        pk_names = [c.name for c in table.partition_key]
        if names != pk_names:
            raise InvalidRequest(f"Type error: cannot assign result of function system.token to the arguments "
                                 f"{', '.join(str(n) for n in names)}: token() takes the partition key "
                                 f"columns ({', '.join(pk_names)})")
        return Selected(call_text(fc), T.BIGINT,
                        lambda r: r.token, columns=tuple(pk_names))
    if name == "count" and len(fc.args) == 1 and isinstance(fc.args[0], ast.Star):
        return Selected("count", T.BIGINT, lambda r: 1, aggregate="count")
    if name == "count" and len(fc.args) == 1 and isinstance(fc.args[0], ast.Constant) and fc.args[0].text == "1":
        return Selected("count", T.BIGINT, lambda r: 1, aggregate="count")
    if name in AGGREGATES:
        if len(fc.args) != 1:
            raise InvalidRequest(f"Invalid number of arguments in call to function system.{name}: 1 required but {len(fc.args)} provided")
        inner = compile_selector(fc.args[0], table, ctx)
        agg = Aggregate(name, inner.type)
        if name in ("sum", "avg") and getattr(inner.type, "name", None) not in (
                "tinyint", "smallint", "int", "bigint", "varint", "decimal", "float", "double", "counter"):
            raise InvalidRequest(f"Invalid call to function {name}, none of its type signatures match (known type signatures: system.{name} : (int) -> int, ...)")
        return Selected(f"system.{name}({inner.name})", agg.return_type, inner.compute, aggregate=name,
                        arg=inner, columns=inner.columns)
    if name == "tojson":
        if len(fc.args) != 1:
            raise InvalidRequest("toJson() takes exactly one argument")
        inner = compile_selector(fc.args[0], table, ctx)
        return Selected(f"system.tojson({inner.name})", T.TEXT,
                        lambda r, i=inner: T.to_json(i.type, i.compute(r)), columns=inner.columns)
    if name == "cast":
        inner = compile_selector(fc.args[0], table, ctx)
        target = T.resolve_type(fc.args[1], table.keyspace, lambda ks, n: None)
        return Selected(f"cast({inner.name} as {target.cql()})", target,
                        lambda r, i=inner, t=target: _cast(i.type, t, i.compute(r)), columns=inner.columns)
    # a scalar function over selectors
    args = []
    for a in fc.args:
        if isinstance(a, (ast.ColumnRef, ast.FunctionCall, ast.FieldSelection, ast.ElementSelection)):
            args.append(compile_selector(a, table, ctx))
        else:
            args.append(None)
    arg_types = [a.type if a is not None else ctx.ev.infer_type(t) for a, t in zip(args, fc.args)]
    f = ctx.ev.functions.resolve(name, arg_types)
    consts = [None if a is not None else ctx.ev.value(t, p, f"{name}.arg{i}")
              for i, (a, t, p) in enumerate(zip(args, fc.args, f.arg_types))]

    def call(r: CqlRow, f=f, args=args, consts=consts) -> Any:
        values = [a.compute(r) if a is not None else c for a, c in zip(args, consts)]
        if any(v is None for v in values) and f.arg_types:
            return None
        return f.impl(*values)
    cols = tuple(c for a in args if a is not None for c in a.columns)
    if not f.deterministic:
        return Selected(call_text(fc), f.return_type, lambda r, f=f: f.impl(), columns=cols)
    return Selected(call_text(fc), f.return_type, call, columns=cols)


def _cast(src: Any, dst: Any, v: Any) -> Any:
    if v is None:
        return None
    name = getattr(dst, "name", "")
    if name in ("text", "ascii"):
        return T.to_json(src, v).strip('"') if getattr(src, "name", "") not in ("text", "ascii") else v
    if name in ("int", "bigint", "smallint", "tinyint", "varint"):
        return int(v)
    if name in ("float", "double"):
        return float(v)
    if name == "decimal":
        from decimal import Decimal
        return Decimal(str(v))
    return v


# ---------------------------------------------------------------------------


def _filter_matches(f: Filter, r: CqlRow) -> bool:
    col = f.column
    t = col.type
    b = r.bytes_of(col)
    if b is None:
        return False
    op = f.op
    if op in ("CONTAINS", "CONTAINS KEY"):
        value = t.deserialize(b)
        needle = f.values[0]
        if op == "CONTAINS KEY":
            return any(t.key.serialize(k) == needle for k in value.keys())
        items = value.values() if isinstance(t, T.MapType) else value
        et = t.value if isinstance(t, T.MapType) else t.element
        return any(et.serialize(x) == needle for x in items)
    if op == "IN":
        return any(t.compare(b, v) == 0 for v in f.values)
    c = t.compare(b, f.values[0])
    return {"=": c == 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}.get(op, False)


def _order(stmt: ast.Select, table: Table, kr: KeyRestrictions) -> bool:
    """Whether rows are read in reverse clustering order (validates ORDER BY)."""
    if not stmt.order_by:
        return False
    if kr.partition_keys is None:
        raise InvalidRequest("ORDER BY is only supported when the partition key is restricted by an EQ or an IN.")
    ck = table.clustering_key
    reverse = None
    for i, ob in enumerate(stmt.order_by):
        col = table.column(ob.column)
        if col is None:
            raise InvalidRequest(f"Undefined column name {ob.column}")
        if col.kind != CLUSTERING:
            raise InvalidRequest(f"Order by on unknown column {ob.column}" if col is None else
                                 f"Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {ob.column}")
        if i >= len(ck) or ck[i].name != col.name:
            raise InvalidRequest("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY")
        r = ob.descending != col.reversed
        if reverse is None:
            reverse = r
        elif reverse != r:
            raise InvalidRequest("Unsupported order by relation")
    return bool(reverse)


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


def _selection(stmt: ast.Select, table: Table, ctx: SelectContext) -> list[Selected]:
    if stmt.selectors is None:
        return [compile_selector(ast.ColumnRef(c.name), table, ctx) for c in table.columns]
    out = []
    for s in stmt.selectors:
        sel = compile_selector(s.expr, table, ctx)
        if s.alias:
            sel = Selected(s.alias, sel.type, sel.compute, sel.aggregate, sel.arg, sel.columns, sel.column)
        out.append(sel)
    return out


def _check_distinct(stmt: ast.Select, table: Table, selected: list[Selected]) -> None:
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
    if missing:
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


def cql_rows(table: Table, source: PartitionSource, kr: KeyRestrictions, reverse: bool, distinct: bool,
             per_partition_limit: int | None, resume: PagingState | None = None,
             values: bool = False) -> Iterator[CqlRow]:
    """The rows a query addresses, before filtering on non-key columns, from a paging position on
    (``values``: read for values only, ``PartitionView.rows``)."""
    ranges = kr.clustering_ranges(table) if table.clustering_key else [(None, None)]
    if reverse:
        ranges = list(reversed(ranges))
    whole_partition = not kr.clustering_restricted
    for part in source.partitions(table, kr):
        if resume is not None and resume.offset < 0:
            if (part.token, part.pk) < (resume.token, resume.pk):
                continue
            if (part.token, part.pk) == (resume.token, resume.pk):
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
    for part in source.partitions(table, kr):
        after = None
        if resume is not None:
            at = (part.token, part.pk)
            if at < (resume.token, resume.pk):
                continue
            if at == (resume.token, resume.pk):
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


def result_columns(stmt: ast.Select, table: Table, ctx: SelectContext) -> tuple[ColumnSpec, ...]:
    """The result columns of a SELECT (for prepared statement metadata)."""
    if stmt.json:
        return (ColumnSpec(table.keyspace, table.name, "[json]", T.TEXT),)
    return tuple(ColumnSpec(table.keyspace, table.name, s.name, s.type) for s in _selection(stmt, table, ctx))


def execute_select(stmt: ast.Select, table: Table, ctx: SelectContext, page_size: int | None = None,
                   paging_state: bytes | None = None) -> ResultSet:
    """Run a SELECT against a table, one page of ``page_size`` rows at a time when asked."""
    ev = ctx.ev
    kr = analyse(table, stmt.where, ev)
    needs_filtering = bool(kr.filters) or kr.partition_filters
    if kr.partition_keys is None and kr.clustering_restricted and not stmt.allow_filtering:
        needs_filtering = True
    if needs_filtering and not stmt.allow_filtering:
        if kr.clustering_gap_error and kr.partition_keys is not None and not any(
                not f.column.is_primary_key for f in kr.filters):
            raise InvalidRequest(kr.clustering_gap_error)
        raise InvalidRequest(FILTERING_MESSAGE)
    reverse = _order(stmt, table, kr)
    selected = _selection(stmt, table, ctx)
    if stmt.distinct:
        _check_distinct(stmt, table, selected)
    limit = _positive_int(ev, stmt.limit, "limit")
    ppl = _positive_int(ev, stmt.per_partition_limit, "per partition limit")
    if stmt.group_by:
        raise InvalidRequest("GROUP BY is not supported by logtide yet")
    aggregating = any(s.aggregate for s in selected)
    filters = kr.filters
    rows_out: list[list[Any]] = []
    aggs = [Aggregate(s.aggregate, s.arg.type if s.arg is not None else s.type) if s.aggregate else None
            for s in selected]
    first_values: list[Any] | None = None
    resume = PagingState.decode(paging_state) if paging_state else None
    if aggregating or (page_size is not None and page_size <= 0):
        page_size = None
    returned = first = resume.returned if resume else 0
    source_rows: Iterable[CqlRow] = cql_rows(table, ctx.source, kr, reverse, stmt.distinct, ppl,
                                             resume if resume and resume.offset < 0 else None,
                                             not _reads_cells(stmt.selectors))
    # plain columns: rows are kept as the stored bytes of their values (SelectResult)
    plain = None if aggregating or stmt.json else plain_columns(selected)
    kept: list[list[bytes | None]] | None = None if plain is None else []
    raw_of = None if plain is None else raw_values_of(plain)
    in_memory = bool(stmt.order_by and kr.partition_keys is not None and len(kr.partition_keys) > 1)
    if in_memory:
        ordered = _sort_across_partitions(list(source_rows), reverse)
        source_rows = ordered[resume.offset:] if resume and resume.offset >= 0 else ordered
    per_part_count = resume.partition_count if resume else 0
    current_key = (resume.token, resume.pk) if resume else None
    next_state: PagingState | None = None
    consumed = resume.offset if resume and resume.offset >= 0 else 0
    project = row_projector(selected)
    uniform = None
    if (plain is not None and not filters and ppl is None and not in_memory and not stmt.distinct
            and isinstance(ctx.source, StoredSource)):
        uniform = uniform_plan(table, plain, raw_of)  # type: ignore[arg-type]
    if uniform is not None:  # whole clustering ranges at a time, the same rows, limit and paging
        source_rows = ()
        for token, pk, cks, rows in value_chunks(table, ctx.source, kr, reverse,  # type: ignore[arg-type]
                                                 resume if resume and resume.offset < 0 else None, uniform):
            if (token, pk) != current_key:
                current_key = (token, pk)
                per_part_count = 0
            take = len(rows)
            if limit is not None:
                take = min(take, max(limit - returned, 1))
            if page_size is not None:
                take = min(take, max(page_size - (returned - first), 1))
            kept.extend(rows if take == len(rows) else rows[:take])  # type: ignore[union-attr]
            returned += take
            per_part_count += take
            if limit is not None and returned >= limit:
                break
            if page_size is not None and returned - first >= page_size:
                next_state = PagingState(token, pk, cks[take - 1], returned, per_part_count, -1)
                break
    for r in source_rows:
        consumed += 1
        if filters and not all(_filter_matches(f, r) for f in filters):
            continue
        if (r.token, r.pk) != current_key:
            current_key = (r.token, r.pk)
            per_part_count = 0
        if ppl is not None and per_part_count >= ppl:
            continue
        per_part_count += 1
        if aggregating:
            values = [s.compute(r) for s in selected]
            if first_values is None:
                first_values = values
            for a, v in zip(aggs, values):
                if a is not None:
                    a.add(v)
            continue
        if kept is not None:
            kept.append(raw_of(r.key, r.row, r.static))  # type: ignore[misc]
        else:
            rows_out.append(project(r))
        returned += 1
        if limit is not None and returned >= limit:
            break
        if page_size is not None and returned - first >= page_size:
            next_state = PagingState(r.token, r.pk, r.row.ck if r.row is not None else None, returned,
                                     per_part_count, consumed if in_memory else -1)
            break
    if aggregating:
        vals = first_values or [None] * len(selected)
        rows_out = [[a.result() if a is not None else v for a, v in zip(aggs, vals)]]
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
    """A column name as SELECT JSON writes it: quoted when it is not a lower-case identifier."""
    import re
    if re.fullmatch(r"[a-z][a-z0-9_]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


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

    def __init__(self, txn: Any, now: int) -> None:
        self.txn = txn
        self.now = now

    def partitions(self, table: Table, kr: KeyRestrictions) -> Iterator[Any]:
        from .read import stored_partition, stored_partitions
        if kr.partition_keys is not None:
            keys = sorted({(partition_token(table, pk), pk) for pk in (serialize_partition_key(k) for k in kr.partition_keys)})
            lo, lo_inc, hi, hi_inc = token_bounds(kr)
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
        for vp in sorted(parts.values(), key=lambda p: (p.token, p.pk)):
            if wanted is not None and vp.pk not in wanted:
                continue
            if lo is not None and (vp.token < lo or (vp.token == lo and not lo_inc)):
                continue
            if hi is not None and (vp.token > hi or (vp.token == hi and not hi_inc)):
                continue
            vp.clustered.sort(key=lambda r: r.ck)
            yield vp
