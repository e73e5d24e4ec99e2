"""Secondary index maintenance: each write's index entries in its own transaction (docs/views-and-indexes.md,
"Secondary indexes"; entries in ``storage.index_entries``; an index's build over the rows a table already has is
``engine.view_build``'s).

``SecondaryIndexes.capture_before`` reads, for a write to a table with indexes, the touched rows' stored state
before the write into ``engine.touched.TouchedRows`` (each row read once, shared with the CDC log and the
changefeeds; the rows its deletions remove by ``read_removed``); ``capture_after`` takes the same rows as the
write left them (``TouchedRows.after``: recorded by the merge, else read from the transaction's write cache)
and replaces the entries that changed.  Both run inside the base write's transaction: an acknowledged write's entries are
committed with it, and a crash loses neither or both.  A table without indexes costs one check of a flag
cached per catalog.
"""

from __future__ import annotations

from typing import Any

from ..mutation.model import Mutation, PartitionUpdate
from ..query.read import LiveRow, column_bytes, live_row
from ..schema.catalog import Catalog
from ..schema.indexes import ENTRIES, KEYS, VALUES, SecondaryIndex
from ..schema.model import CLUSTERING, PARTITION_KEY, Table
from ..storage.index_entries import Entry, entry_value, global_entry, local_entry, seal_entry
from ..storage.sqlite import Txn
from .touched import TouchedRows

RowKey = tuple[bytes, bool]  # (clustering key, static)
Pending = list[tuple[PartitionUpdate, set[RowKey]]]


def indexed_values(table: Table, index: SecondaryIndex, row: "LiveRow | None") -> set[bytes]:
    """The values ``index`` has for a live row: the column's value, a collection's keys, values or entries
    (key and value, ``storage.index_entries.entry_value``), or a frozen collection whole; none for a missing row or null."""
    if row is None:
        return set()
    col = table.column(index.column)
    if col is None:
        return set()
    if col.kind == PARTITION_KEY:
        return {row.key[col.position]}
    if col.kind == CLUSTERING:
        return {row.clustering[col.position]} if not row.static else set()
    if col.is_static != row.static:
        return set()
    if index.kind in (KEYS, VALUES, ENTRIES):
        elems = row.complex.get(col.name) or []
        if index.kind == KEYS:
            return {k for k, _ in elems}
        if index.kind == VALUES:
            return {c.value for _, c in elems}
        return {entry_value(k, c.value) for k, c in elems}
    value = column_bytes(row, col)
    return set() if value is None else {value}


def row_entries(table: Table, index: SecondaryIndex, token: int, pk: bytes, ck: bytes,
                row: "LiveRow | None") -> set[Entry]:
    """The entries of ``index`` for one base row (its token, partition key and clustering key)."""
    make = local_entry if index.local else global_entry
    return {make(v, token, pk, ck) for v in indexed_values(table, index, row)}


def put_entries(txn: Txn, index: SecondaryIndex, old: set[Entry], new: set[Entry]) -> None:
    """Replace the entries ``old`` with ``new`` (only the difference is written)."""
    tid = index.store_id
    for token, pk, ck in old - new:
        txn.put_row(tid, token, pk, ck, None)
    for token, pk, ck in new - old:
        txn.put_row(tid, token, pk, ck, seal_entry(tid, pk, ck))


class SecondaryIndexes:
    """The write path's side of secondary indexes, for one database (``engine.database.Engine.indexes``)."""

    def __init__(self) -> None:
        self._in: tuple[Catalog, bool] | None = None

    def active(self, catalog: Catalog) -> bool:
        """Whether a table of ``catalog`` has an index (checked once per catalog)."""
        hit = self._in
        if hit is None or hit[0] is not catalog:
            hit = self._in = (catalog, any(t.indexes for ks in catalog.keyspaces.values()
                                           for t in ks.tables.values()))
        return hit[1]

    @staticmethod
    def capture_before(mutation: Mutation, touched: TouchedRows) -> Pending | None:
        """The rows of indexed tables the mutation touches (its rows, its static row, the rows its deletions
        remove), their stored state before it read into ``touched`` (None: no indexed table is written)."""
        pending: Pending = []
        for pu in mutation:
            t = pu.table
            if not t.indexes:
                continue
            keys: set[RowKey] = {(ck, False) for ck in pu.rows}
            keys.update((ck, False) for ck in touched.read_removed(pu, t))
            if (pu.static is not None or pu.deletion is not None) and any(
                    (c := t.column(ix.column)) is not None and c.is_static for ix in t.indexes):
                keys.add((b"", True))
            for ck, static in keys:
                touched.read(t, pu.pk, pu.token, ck, static)
            pending.append((pu, keys))
        return pending or None

    @staticmethod
    def capture_after(pending: Pending, touched: TouchedRows, txn: Txn, now: int) -> None:
        """Each touched row as the write left it: its entries replace the ones it had before.  The state before
        is taken as of time 0 (``live_row`` at 0): a value expired by TTL since its entry was made still names
        that entry, which goes now."""
        for pu, keys in pending:
            t, pk, token, key = pu.table, pu.pk, pu.token, pu.key
            tid = t.store_id
            for ck, static in keys:
                old = _live(t, touched.before.get((tid, pk, ck, static)), 0, key, ck, static)
                new = _live(t, touched.after(t, pk, token, ck, static), now, key, ck, static)
                for ix in t.indexes:
                    put_entries(txn, ix, row_entries(t, ix, token, pk, ck, old),
                                row_entries(t, ix, token, pk, ck, new))


def _live(table: Table, stored: Any, now: int, key: tuple[bytes, ...], ck: bytes, static: bool) -> "LiveRow | None":
    """A stored row (``mutation.images.StoredRow``: record and outer deletion) as a live row at ``now``."""
    if stored is None:
        return None
    row, outer = stored
    return live_row(table, row, outer, now, key, ck, static)
