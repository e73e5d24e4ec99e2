"""Write stage 3.8a, views: the rows of a base table's materialized views, kept in the base write's transaction.

A view's rows are a function of its base table's rows (ScyllaDB's ``db/view/view.cc``, ``view_updates``): each
base row the filter accepts (every view key column non-null, the WHERE clause's restrictions true) has exactly
one view row, keyed by the view's primary key, holding the selected columns' cells with their write times and
TTLs.  For each base row a write touches, the view row of its preimage and that of its postimage (the capture
stage's ``TouchedRow``, ``engine/capture.py``: the same rows the CDC log, the changefeeds and the indexes take)
are compared: a view key that changed, a row deleted or filtered out removes the old view row; the new one
replaces it.  The view is
written in the same transaction as the base, so it is never behind an acknowledged write, and a crash loses
neither or both.

Liveness as ScyllaDB derives it: the view row's marker lives as long as the base row does (the base row
marker, or, for a row kept alive by its cells only, as long as its longest-living cell: ScyllaDB's "virtual
columns" for unselected ones); with a regular base column in the view key, as long as that column's cell, and
no view cell outlives it (a TTL'd view key column expires the whole view row).  A view row replaced or removed
is removed from storage outright rather than shadowed by a tombstone: the view table is written by nothing
else, so its stored rows are always exactly the derivation of the base rows (docs/views-and-indexes.md).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidRequest
from ..mutation.cells import NO_DELETION, NO_TTL, Cell, ComplexColumn, Liveness, PartitionData, RowData
from ..mutation.images import PartitionImages, live
from ..query.read import LiveRow
from ..schema.model import Table
from ..schema.views import ViewFilter
from ..storage.keys import clustering_key, serialize_partition_key, token_of
from ..storage.records import encode_partition, encode_row
from ..storage.sqlite import Txn

ViewRow = tuple[bytes, int, tuple[bytes, ...], bytes, RowData]  # (pk, token, key values, ck, row)


def row_values(base: Table, lr: LiveRow) -> dict[str, bytes | None]:
    """A base row's serialized values by column name: key columns, live atomic cells, and a marker value for a
    non-empty non-frozen collection (its elements are not compared by a view's filter)."""
    values: dict[str, bytes | None] = {c.name: v for c, v in zip(base.partition_key, lr.key)}
    values.update({c.name: v for c, v in zip(base.clustering_key, lr.clustering)})
    values.update({n: c.value for n, c in lr.cells.items()})
    values.update({n: b"" for n, elems in lr.complex.items() if elems})
    return values


def _row_liveness(lr: LiveRow) -> Liveness:
    """The liveness of a live base row: its timestamp (the marker's, else the newest cell's) and the latest
    expiry among its marker and cells (none when any of them does not expire)."""
    parts: list[Any] = list(lr.cells.values())
    for elems in lr.complex.values():
        parts.extend(c for _, c in elems)
    if lr.marker is not None:
        parts.append(lr.marker)
    ts = lr.marker.timestamp if lr.marker is not None else max(p.timestamp for p in parts)
    if any(p.ttl == NO_TTL for p in parts):
        return Liveness(ts)
    last = max(parts, key=lambda p: p.ldt)
    return Liveness(ts, last.ttl, last.ldt)


def _capped(cell: Cell, limit: Liveness | None) -> Cell:
    """A cell that expires no later than the view row's key column (``limit``, when that expires)."""
    if limit is None or limit.ttl == NO_TTL or (cell.ttl != NO_TTL and cell.ldt <= limit.ldt):
        return cell
    return Cell(cell.timestamp, cell.value, limit.ttl, limit.ldt)


def view_row(view: Table, accepts: ViewFilter, base: Table, lr: LiveRow | None) -> ViewRow | None:
    """The view row of live base row ``lr`` (None: no row in the view)."""
    if lr is None:
        return None
    values = row_values(base, lr)
    token = token_of(serialize_partition_key(lr.key)) if accepts.needs_token else None
    if not accepts.accepts(values, token):
        return None
    base_pk = {c.name for c in base.primary_key}
    key_cell = next((lr.cells.get(c.name) for c in view.primary_key if c.name not in base_pk), None)
    if key_cell is not None:
        marker = Liveness(key_cell.timestamp, key_cell.ttl, key_cell.ldt if key_cell.ttl != NO_TTL else NO_DELETION)
        limit: Liveness | None = marker
    else:
        marker, limit = _row_liveness(lr), None
    key = tuple(values[c.name] for c in view.partition_key)  # type: ignore[misc]
    clustering = tuple(values[c.name] for c in view.clustering_key)  # type: ignore[misc]
    row = RowData(clustering, marker)
    for c in view.regular_columns:
        if c.type.is_multicell:
            elems = lr.complex.get(c.name)
            if elems:
                row.complex[c.name] = ComplexColumn(None, {k: _capped(cell, limit) for k, cell in elems})
        else:
            cell = lr.cells.get(c.name)
            if cell is not None:
                row.cells[c.name] = _capped(cell, limit)
    pk = serialize_partition_key(key)  # type: ignore[arg-type]
    return pk, token_of(pk), key, clustering_key(view.clustering_key, clustering), row  # type: ignore[arg-type]


def update_views(txn: Txn, images: list[tuple[Any, PartitionImages]], now: int, trace: Any = None) -> None:
    """Write the view rows of each touched base row (the capture stage's output, ``engine.capture.read_after``:
    each partition update's ``Capture`` with its ``PartitionImages``) in the base write's transaction: the view
    rows of a row's preimage and of its postimage compared, the old one removed where the view key changed or
    the row left the view, the new one written; ``trace`` (a traced request) gets ScyllaDB's event for each
    view with ``synchronous_updates``."""
    for capture, im in images:
        views = capture.views
        if not views:
            continue
        base, pu = capture.table, im.update
        if trace is not None:
            for view, _ in views:
                if view.options.get("synchronous_updates") == "true":
                    trace.event(f"Forcing {view.keyspace}.{view.name} view update to be synchronous")
        tid, pk, key, rows = base.store_id, pu.pk, pu.key, im.rows
        for ck in dict.fromkeys([*pu.rows, *im.removed]):
            tr = rows[(tid, pk, ck, False)]
            before = live(base, tr.preimage, key, ck, False, now)
            after = live(base, tr.postimage, key, ck, False, now)
            if before is None and after is None:
                continue
            for view, accepts in views:
                old = view_row(view, accepts, base, before)
                new = view_row(view, accepts, base, after)
                if old is not None and new is not None and old[0] == new[0] and old[3] == new[3] and old[4] == new[4]:
                    continue
                if old is not None and (new is None or old[0] != new[0] or old[3] != new[3]):
                    _remove(txn, view, old)
                if new is not None:
                    write_view_row(txn, view, new)


def write_view_row(txn: Txn, view: Table, vr: ViewRow) -> None:
    """Store view row ``vr`` (replacing the row of that key), with its partition record when new."""
    pk, token, key, ck, row = vr
    tid = view.store_id
    if txn.get_partition(tid, token, pk) is None:
        txn.put_partition(tid, token, pk, encode_partition(PartitionData(key), tid, pk))
    txn.put_row(tid, token, pk, ck, encode_row(row, tid, pk, ck))


def _remove(txn: Txn, view: Table, vr: ViewRow) -> None:
    pk, token, _, ck, _ = vr
    tid = view.store_id
    txn.put_row(tid, token, pk, ck, None)
    if not txn.has_rows(tid, token, pk):
        txn.put_partition(tid, token, pk, None)


def check_where(catalog: Any, stmt: Any, keyspace: str | None, functions: Any) -> None:
    """The multi-column and ``token()`` relations of a ``CREATE MATERIALIZED VIEW``'s WHERE clause, checked as the
    view's SELECT checks them: ScyllaDB's ``create_view_statement`` prepares ``SELECT ... WHERE ... ALLOW
    FILTERING`` on the base table, so they are refused exactly where that SELECT refuses them, with its messages
    (``query.restrictions.analyse``); the other relations are checked by the catalog (``schema.views``)."""
    from ..cql import ast
    from ..query.evaluate import TermEvaluator
    from ..query.restrictions import analyse

    if not any(isinstance(r.lhs, (ast.ColumnTuple, ast.TokenOf)) for r in stmt.where):
        return
    base = catalog.find_table(stmt.base.keyspace or stmt.name.keyspace or keyspace or "", stmt.base.name)
    if base is None:
        return  # the catalog says what is missing
    for rel in stmt.where:
        names = rel.lhs.columns if isinstance(rel.lhs, (ast.ColumnTuple, ast.TokenOf)) else ()
        missing = next((n for n in names if base.column(n) is None), None)
        if missing is not None:  # as the catalog words it for a single column
            raise InvalidRequest(f"Undefined column name {missing} in table {base.keyspace}.{base.name}")
    analyse(base, [r for r in stmt.where if r.op != "IS NOT"], TermEvaluator(functions, None), select=True,
            allow_filtering=True)
