"""Write stage 3.2, read: the rows a write touches, read once inside its transaction (specs ``000``-``004``).

:class:`TxnRowReader` reads live rows inside the write transaction (read-before-write: list indices,
counters, conditions).

:class:`TouchedRows` holds what the capture stage (``engine.capture``) reads for the logs: the stored
state of each row a mutation touches (``mutation.images.StoredRow``), read at most once per statement
whatever number of logs and feeds the table has, the rows that partition and range deletions remove
(a changefeed writes one ``erase`` per row that existed; a view removes its row; the CDC log does not need
them), and the rows as the write leaves them, recorded by ``mutation.apply`` as it merges them; ``images`` is
the capture stage's output, each touched row's ``TouchedRow(key, preimage, postimage)``.
"""

from __future__ import annotations

from ..mutation.apply import decoded_row, read_partition, read_row
from ..mutation.cells import Cell, Deletion, RowData
from ..mutation.context import RowReader
from ..mutation.images import RowKey, StoredRow, TouchedRow
from ..mutation.model import PartitionUpdate
from ..schema.model import Column, Table
from ..query.read import live_row
from ..storage.sqlite import Txn


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

    def first_row(self, table: Table, pk: bytes, token: int):
        """The partition's first live clustering row in clustering order, or None (a lightweight transaction's
        check that the partition exists, as ScyllaDB reads one row for conditions on static columns)."""
        part = read_partition(self.txn, table, token, pk)
        if part is None:
            return None
        for ck, data in self.txn.rows(table.store_id, token, pk):
            row = decoded_row(self.txn, table, pk, ck, data)
            live = None if row is None else live_row(table, row, part.row_deletion(ck), self.now, part.key, ck)
            if live is not None:
                return live
        return None

    def live_complex(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> list[tuple[bytes, Cell]]:
        lr = self.row(table, pk, token, ck, column.is_static)
        return [] if lr is None else lr.complex.get(column.name, [])

    def live_cell(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> Cell | None:
        lr = self.row(table, pk, token, ck, column.is_static)
        return None if lr is None else lr.cells.get(column.name)



def stored_row(txn: Txn, table: Table, token: int, pk: bytes, ck: bytes, static: bool) -> StoredRow | None:
    """The stored state of a row (or of the partition's static row) in ``txn``: its record and the deletion
    over it from its partition, or None when it has no record (records decoded once per statement)."""
    part = read_partition(txn, table, token, pk)
    if part is None:
        return None
    if static:
        return None if part.static is None else (part.static, part.deletion)
    row = read_row(txn, table, token, pk, ck)
    return None if row is None else (row, part.row_deletion(ck))


class TouchedRows:
    """The stored state of the rows a mutation touches, each read at most once before it is applied
    (``before``, the preimages); and, when ``record_after`` is set, the rows as the write leaves them,
    recorded by ``mutation.apply`` as it merges them, so that a postimage needs no read after the write.

    ``images`` maps each touched row's key to its ``TouchedRow``: the merge records there the rows no deletion
    in their partition touched (``merged``), and the capture stage adds each other row it read before, paired
    with its state after (``pair``)."""

    def __init__(self, txn: Txn) -> None:
        self.txn = txn
        self.before: dict[RowKey, StoredRow | None] = {}
        self.record_after = False
        self._after: dict[RowKey, StoredRow | None] = {}
        self.images: dict[RowKey, TouchedRow] = {}

    def wrote(self, k: RowKey, row: RowData | None, outer: Deletion | None) -> None:
        """The write left row ``k`` as ``row`` (None: removed) under the partition's ``outer`` deletion."""
        self._after[k] = None if row is None else (row, outer)

    def merged(self, k: RowKey, old: RowData | None, old_outer: Deletion | None, row: RowData | None,
               outer: Deletion | None) -> None:
        """The stored record of row ``k`` before the write (``old``, None if there was none) and after it
        (``row``, None if removed), when the write deleted nothing else in its partition."""
        self.images[k] = TouchedRow(k, None if old is None else (old, old_outer),
                                    None if row is None else (row, outer))

    def purged(self, tid: int, pk: bytes) -> None:
        """A partition or range deletion rewrote rows of a partition: forget what was recorded there."""
        for k in [k for k in self._after if k[0] == tid and k[1] == pk]:
            del self._after[k]
        for k in [k for k in self.images if k[0] == tid and k[1] == pk]:
            del self.images[k]

    def read(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool) -> StoredRow | None:
        """The stored state of a row (or static row) before the write, read once."""
        k = (table.store_id, pk, ck, static)
        before = self.before
        if k in before:
            return before[k]
        s = before[k] = stored_row(self.txn, table, token, pk, ck, static)
        return s

    def after(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool) -> StoredRow | None:
        """The stored state of a row after the write: as the write recorded it, else read (once, after it)."""
        k = (table.store_id, pk, ck, static)
        after = self._after
        if k not in after:
            after[k] = stored_row(self.txn, table, token, pk, ck, static)
        return after[k]

    def pair(self, table: Table, token: int, k: RowKey) -> TouchedRow:
        """Row ``k`` (read before the write) with its state after it, recorded in ``images``."""
        tr = self.images[k] = TouchedRow(k, self.before[k], self.after(table, k[1], token, k[2], k[3]))
        return tr

    def read_removed(self, pu: PartitionUpdate, table: Table) -> tuple[bytes, ...]:
        """The clustering keys, in order, of the stored rows inside the update's partition or range deletions,
        each row's state before the write read (into ``before``) with them."""
        if pu.deletion is None and not pu.range_deletions:
            return ()
        txn = self.txn
        part = read_partition(txn, table, pu.token, pu.pk)
        if part is None:
            return ()
        if pu.deletion is not None:
            ranges: list[tuple[bytes | None, bytes | None]] = [(None, None)]
        else:
            ranges = [(rd.lo, rd.hi) for rd in pu.range_deletions]
        tid = table.store_id
        before = self.before
        seen: set[bytes] = set()
        for lo, hi in ranges:
            for ck, data in txn.rows(tid, pu.token, pu.pk, lo, hi):
                if ck in seen:
                    continue
                seen.add(ck)
                k = (tid, pu.pk, ck, False)
                if k not in before:
                    before[k] = (decoded_row(txn, table, pu.pk, ck, data), part.row_deletion(ck))
        return tuple(sorted(seen))
