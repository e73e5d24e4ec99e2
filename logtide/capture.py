"""The capture stage both logs share: the touched rows before a write, read once (specs ``000``-``004``).

``cdc.capture`` (the ScyllaDB CDC log) and ``changefeed.changes`` (YDB
changefeeds) derive their rows from the same before-state of the rows a
mutation touches.  :class:`TouchedRows` reads each row at most once per
statement, whatever number of logs and feeds the table has, and lists the
rows that partition and range deletions remove (a changefeed writes one
``erase`` per row that existed; the CDC log does not need them).
"""

from __future__ import annotations

from typing import Callable

from .mutation.cells import Deletion, RowData
from .mutation.model import PartitionUpdate
from .query.read import LiveRow, live_row, stored_partition
from .schema.model import Table
from .storage.sqlite import Txn

RowKey = tuple[int, bytes, bytes, bool]  # (store id, partition key, clustering key, static)


class TouchedRows:
    """Memoized reads of the live rows a mutation touches, taken before it is applied; and, when
    ``record_after`` is set, the rows as the write leaves them, recorded by ``mutation.apply`` as it merges
    them, so that a changefeed's new image needs no read after the write."""

    def __init__(self, read_row: Callable[[Table, bytes, int, bytes, bool], "LiveRow | None"],
                 now: int = 0) -> None:
        self._read_row = read_row
        self._memo: dict[RowKey, LiveRow | None] = {}
        self.now = now
        self.record_after = False
        self._after: dict[RowKey, tuple[RowData | None, Deletion | None, tuple[bytes, ...]]] = {}
        # stored row records (not live views) before and after the write, of rows no deletion in the partition
        # touched: (row before, its outer deletion, row after, its outer deletion)
        self.records: dict[RowKey, tuple[RowData | None, Deletion | None, RowData | None, Deletion | None]] = {}

    def wrote(self, k: RowKey, row: RowData | None, outer: Deletion | None, key: tuple[bytes, ...]) -> None:
        """The write left row ``k`` as ``row`` (None: removed) under the partition's ``outer`` deletion."""
        self._after[k] = (row, outer, key)

    def merged(self, k: RowKey, old: RowData | None, old_outer: Deletion | None, row: RowData | None,
               outer: Deletion | None) -> None:
        """The stored record of row ``k`` before the write (``old``, None if there was none) and after it
        (``row``, None if removed), when the write deleted nothing else in its partition."""
        self.records[k] = (old, old_outer, row, outer)

    def purged(self, tid: int, pk: bytes) -> None:
        """A partition or range deletion rewrote rows of a partition: forget what was recorded there."""
        for k in [k for k in self._after if k[0] == tid and k[1] == pk]:
            del self._after[k]
        for k in [k for k in self.records if k[0] == tid and k[1] == pk]:
            del self.records[k]

    def after(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool,
              read_row: Callable[[Table, bytes, int, bytes, bool], "LiveRow | None"]) -> "LiveRow | None":
        """The live row after the write: from what the write recorded, else read (``read_row``)."""
        hit = self._after.get((table.store_id, pk, ck, static))
        if hit is None:
            return read_row(table, pk, token, ck, static)
        row, outer, key = hit
        return None if row is None else live_row(table, row, outer, self.now, key, ck, static)

    def row(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool) -> "LiveRow | None":
        """The live row (or static row) before the write, or None (same signature as ``TxnRowReader.row``)."""
        k = (table.store_id, pk, ck, static)
        if k not in self._memo:
            self._memo[k] = self._read_row(table, pk, token, ck, static)
        return self._memo[k]

    def deleted_rows(self, pu: PartitionUpdate, txn: Txn, now: int) -> list[LiveRow]:
        """The clustered rows that exist before the write inside the update's partition or range deletions."""
        if pu.deletion is None and not pu.range_deletions:
            return []
        view = stored_partition(pu.table, txn, now, pu.token, pu.pk)
        if view is None:
            return []
        if pu.deletion is not None:
            ranges: list[tuple[bytes | None, bytes | None]] = [(None, None)]
        else:
            ranges = [(rd.lo, rd.hi) for rd in pu.range_deletions]
        seen: dict[bytes, LiveRow] = {}
        for lo, hi in ranges:
            for lr in view.rows(lo, hi):
                seen.setdefault(lr.ck, lr)
                self._memo.setdefault((pu.table.store_id, pu.pk, lr.ck, False), lr)
        return [seen[ck] for ck in sorted(seen)]
