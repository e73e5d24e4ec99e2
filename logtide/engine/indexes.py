"""Secondary index maintenance: each write's index entries in its own transaction (docs/views-and-indexes.md,
"Secondary indexes"; entries in ``storage.index_entries``; an index's build over the rows a table already has is
``engine.view_build``'s).

``SecondaryIndexes.update_entries`` takes, for a write to a table with indexes, the touched rows before and after
the write as the capture stage (``engine.capture``) hands them to every consumer (each row read once, shared
with the CDC log, the changefeeds and the views) and replaces the entries that changed, inside the base write's
transaction: an acknowledged write's entries are committed with it, and a crash loses neither or both.  A table
without indexes (nor views nor changefeeds) costs one lookup in a set cached per catalog
(``engine.capture.captured_tables``).
"""

from __future__ import annotations

from typing import Any

from ..mutation.images import PartitionImages, live
from ..query.read import LiveRow, column_bytes
from ..schema.catalog import Catalog
from ..schema.indexes import ENTRIES, KEYS, VALUES, SecondaryIndex
from ..schema.model import CLUSTERING, PARTITION_KEY, Table
from ..storage.index_entries import Entry, entry_value, global_entry, local_entry, seal_entry
from ..storage.sqlite import Txn


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

    @staticmethod
    def update_entries(images: list[tuple[Any, PartitionImages]], txn: Txn, now: int) -> None:
        """Each touched row of an indexed table (the capture stage's output, ``engine.capture.read_after``: its
        rows, its static row, the rows its deletions remove) before and after the write: the entries of its
        postimage replace those of its preimage.  The preimage is taken as of time 0 (``live_row`` at 0): a
        value expired by TTL since its entry was made still names that entry, which goes now."""
        for capture, im in images:
            if not capture.indexed:
                continue
            pu = im.update
            t, pk, token, key = pu.table, pu.pk, pu.token, pu.key
            tid = t.store_id
            statics = any((c := t.column(ix.column)) is not None and c.is_static for ix in t.indexes)
            keys = [(tid, pk, ck, False) for ck in dict.fromkeys([*pu.rows, *im.removed])]
            if statics and (pu.static is not None or pu.deletion is not None):
                keys.append((tid, pk, b"", True))
            for k in keys:
                tr = im.rows[k]
                ck, static = k[2], k[3]
                old = live(t, tr.preimage, key, ck, static, 0)
                new = live(t, tr.postimage, key, ck, static, now)
                for ix in t.indexes:
                    put_entries(txn, ix, row_entries(t, ix, token, pk, ck, old),
                                row_entries(t, ix, token, pk, ck, new))


