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

from .mutation.model import PartitionUpdate
from .query.read import LiveRow, stored_partition
from .schema.model import Table
from .storage.sqlite import Txn


class TouchedRows:
    """Memoized reads of the live rows a mutation touches, taken before it is applied."""

    def __init__(self, read_row: Callable[[Table, bytes, int, bytes, bool], "LiveRow | None"]) -> None:
        self._read_row = read_row
        self._memo: dict[tuple[int, bytes, bytes, bool], LiveRow | None] = {}

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
