"""Write stage 3.5b, views: the rows of a base table's materialized views, kept in the base write's transaction.

A view's rows are a function of its base table's rows (ScyllaDB's ``db/view/view.cc``, ``view_updates``): each
base row the filter accepts (every view key column non-null, the WHERE clause's restrictions true) has exactly
one view row, keyed by the view's primary key, holding the selected columns' cells with their write times and
TTLs.  For each base row a write touches, the view row it had before the write (from the before-state
``engine/touched.py`` read once) and the one it has after (recorded by ``mutation.apply``) are compared: a view
key that changed, a row deleted or filtered out removes the old view row; the new one replaces it.  The view is
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

from ..mutation.cells import NO_DELETION, NO_TTL, Cell, ComplexColumn, Liveness, PartitionData, RowData
from ..mutation.images import live
from ..mutation.model import Mutation
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
    if not accepts.accepts(values):
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


class ViewUpdates:
    """The base rows a write touches, with each one's view rows before the write, for :meth:`apply` after it."""

    def __init__(self) -> None:
        self.pending: list[tuple[Table, tuple[bytes, ...], bytes, int, bytes,
                                 tuple[tuple[Table, ViewFilter, ViewRow | None], ...]]] = []

    def apply(self, txn: Txn, touched: Any, now: int, trace: Any = None) -> None:
        """Write the views' rows after the base write (``touched`` recorded the base rows as it left them);
        ``trace`` (a traced request) gets ScyllaDB's event for each view with ``synchronous_updates``."""
        if trace is not None:
            seen = {(v.keyspace, v.name): v for *_, befores in self.pending for v, _, _ in befores}
            for view in seen.values():
                if view.options.get("synchronous_updates") == "true":
                    trace.event(f"Forcing {view.keyspace}.{view.name} view update to be synchronous")
        for base, key, pk, token, ck, befores in self.pending:
            after = live(base, touched.after(base, pk, token, ck, False), key, ck, False, now)
            for view, accepts, old in befores:
                new = view_row(view, accepts, base, after)
                if old is not None and new is not None and old[0] == new[0] and old[3] == new[3] and old[4] == new[4]:
                    continue
                if old is not None and (new is None or old[0] != new[0] or old[3] != new[3]):
                    _remove(txn, view, old)
                if new is not None:
                    write_view_row(txn, view, new)


def view_updates(catalog: Any, mutation: Mutation, touched: Any, now: int) -> ViewUpdates | None:
    """Before a write is applied: the view rows of every base row it touches, from each row's stored state read
    once (``TouchedRows.read``, shared with the logs; None when no table it writes has a view: a table without
    views pays this one lookup)."""
    by_base = catalog.views_by_base
    if not by_base:
        return None
    updates: ViewUpdates | None = None
    for pu in mutation:
        views = by_base.get(pu.table.store_id)
        if not views:
            continue
        if updates is None:
            updates = ViewUpdates()
            touched.record_after = True
        base = pu.table
        cks = dict.fromkeys(pu.rows)
        cks.update(dict.fromkeys(touched.read_removed(pu, base)))
        for ck in cks:
            before = live(base, touched.read(base, pu.pk, pu.token, ck, False), pu.key, ck, False, now)
            updates.pending.append((base, pu.key, pu.pk, pu.token, ck,
                                    tuple((v, f, view_row(v, f, base, before)) for v, f in views)))
    return updates


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

