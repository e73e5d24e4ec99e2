"""Write stage 2, read: the rows a write touches, read once inside its transaction (specs ``000``-``004``).

:class:`TxnRowReader` reads live rows inside the write transaction (read-before-write: list indices,
counters, conditions, and the before-state of the logs).

``cdc.capture`` (the ScyllaDB CDC log) and ``changefeed.changes`` (YDB
changefeeds) derive their rows from the same before-state of the rows a
mutation touches.  :class:`TouchedRows` reads each row at most once per
statement, whatever number of logs and feeds the table has, and lists the
rows that partition and range deletions remove (a changefeed writes one
``erase`` per row that existed; the CDC log does not need them).
"""

from __future__ import annotations

from typing import Any, Callable

from ..mutation.apply import read_partition, read_row
from ..mutation.context import RowReader
from ..mutation.cells import Cell, Deletion, RowData
from ..mutation.model import PartitionUpdate
from ..query.read import LiveRow, live_row, live_values, stored_partition
from ..schema.model import Column, Table
from ..storage.sqlite import Txn

RowKey = tuple[int, bytes, bytes, bool]  # (store id, partition key, clustering key, static)

_NO_COMPLEX: dict = {}  # query.read.complex_plan of a table without non-frozen collections


class TxnRowReader(RowReader):
    """Reads the live state of rows inside a write transaction (read-before-write)."""

    def __init__(self, txn: Txn, now: int) -> None:
        self.txn = txn
        self.now = now

    def row(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool):
        """The live row (or static row) as it is now, or None."""
        part = read_partition(self.txn, table, token, pk)
        if part is None:
            return None
        if static:
            if part.static is None:
                return None
            return live_row(table, part.static, part.deletion, self.now, part.key, b"", static=True)
        row = read_row(self.txn, table, token, pk, ck)
        if row is None:
            return None
        return live_row(table, row, part.row_deletion(ck), self.now, part.key, ck)

    def values(self, table: Table, pk: bytes, token: int, ck: bytes) -> tuple[dict[str, bytes | None], Any] | None:
        """The live atomic values of a clustered row as it is now, and its live row marker (None when the
        marker is not live), or None when nothing of the row is live: :meth:`row` for values only, for a
        table without non-frozen collections (``query.read.live_values``; the CDC log's one pass for plain
        upserts, ``cdc/upsert.py``)."""
        part = read_partition(self.txn, table, token, pk)
        if part is None:
            return None
        row = read_row(self.txn, table, token, pk, ck)
        if row is None:
            return None
        return live_values(table, row, part.row_deletion(ck), self.now, _NO_COMPLEX)

    def live_complex(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> list[tuple[bytes, Cell]]:
        lr = self.row(table, pk, token, ck, column.is_static)
        return [] if lr is None else lr.complex.get(column.name, [])

    def live_cell(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> Cell | None:
        lr = self.row(table, pk, token, ck, column.is_static)
        return None if lr is None else lr.cells.get(column.name)



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
