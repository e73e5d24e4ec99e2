"""Live views of stored rows: what a read sees at a given time.

A row is live while its marker or any of its cells is live and not shadowed
by a row, range, partition or collection tombstone (spec ``003``: row
markers; a static row exists while a static cell is live).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..mutation.cells import Cell, Deletion, PartitionData, RowData, reconcile_deletion
from ..schema import types as T
from ..schema.model import Column, Table
from ..storage.damage import partition_record, row_record
from ..storage.sqlite import Txn


@dataclass
class LiveRow:
    """The live content of one row: atomic cells and ordered element cells of complex columns."""

    key: tuple[bytes, ...]
    clustering: tuple[bytes, ...]
    ck: bytes
    cells: dict[str, Cell] = field(default_factory=dict)
    complex: dict[str, list[tuple[bytes, Cell]]] = field(default_factory=dict)
    static: bool = False
    marker_live: bool = False


def element_order_key(ctype: Any):
    """Sort key for element cell keys of a non-frozen collection/UDT column."""
    if isinstance(ctype, T.MapType):
        return ctype.key.comparable
    if isinstance(ctype, T.SetType):
        return ctype.element.comparable
    if isinstance(ctype, T.ListType):
        return T.TIMEUUID.comparable
    return lambda k: k  # UDT field indices: big-endian smallints, non-negative


def _dropped(table: Table, name: str, ts: int) -> bool:
    d = table.dropped_columns.get(name)
    return d is not None and ts <= d[1]


def live_row(table: Table, row: RowData, outer: Deletion | None, now: int, key: tuple[bytes, ...],
             ck: bytes, static: bool = False) -> LiveRow | None:
    """The live part of a stored row, or None when nothing of it is live."""
    deletion = reconcile_deletion(row.deletion, outer)
    marker_live = (row.marker is not None and row.marker.is_live(now)
                   and not (deletion is not None and deletion.shadows(row.marker.timestamp)))
    out = LiveRow(key, row.clustering, ck, static=static, marker_live=marker_live)
    for name, cell in row.cells.items():
        if not cell.is_live(now) or (deletion is not None and deletion.shadows(cell.timestamp)):
            continue
        col = table.column(name)
        if col is None or _dropped(table, name, cell.timestamp):
            continue
        out.cells[name] = cell
    for name, cc in row.complex.items():
        col = table.column(name)
        if col is None or not col.type.is_multicell:
            continue
        cdel = reconcile_deletion(cc.deletion, deletion)
        elems = [(k, c) for k, c in cc.cells.items()
                 if c.is_live(now) and not (cdel is not None and cdel.shadows(c.timestamp))
                 and not _dropped(table, name, c.timestamp)]
        if elems:
            order = element_order_key(col.type)
            elems.sort(key=lambda kc: order(kc[0]))
            out.complex[name] = elems
    if marker_live or out.cells or out.complex:
        return out
    return None


def assemble_complex(ctype: Any, elems: list[tuple[bytes, Cell]]) -> bytes:
    """The frozen serialized value of a non-frozen collection/UDT from its live element cells."""
    out = bytearray()
    if isinstance(ctype, T.UserType):
        by_index = {struct.unpack(">h", k)[0]: c.value for k, c in elems}
        for i in range(len(ctype.field_names)):
            v = by_index.get(i)
            if v is None:
                out += b"\xff\xff\xff\xff"
            else:
                out += struct.pack(">i", len(v)) + v
        return bytes(out)
    out += struct.pack(">i", len(elems))
    for k, c in elems:
        if isinstance(ctype, T.MapType):
            out += struct.pack(">i", len(k)) + k
            out += struct.pack(">i", len(c.value)) + c.value
        elif isinstance(ctype, T.SetType):
            out += struct.pack(">i", len(k)) + k
        else:
            out += struct.pack(">i", len(c.value)) + c.value
    return bytes(out)


def column_bytes(row: LiveRow, col: Column) -> bytes | None:
    """The serialized value of a non-key column in a live row (None when null)."""
    if col.type.is_multicell:
        elems = row.complex.get(col.name)
        return None if not elems else assemble_complex(col.type, elems)
    cell = row.cells.get(col.name)
    return None if cell is None else cell.value


@dataclass
class PartitionView:
    """One partition as a read sees it."""

    token: int
    pk: bytes
    data: PartitionData
    table: Table
    txn: Txn
    now: int

    @property
    def key(self) -> tuple[bytes, ...]:
        return self.data.key

    def static_row(self) -> LiveRow | None:
        if self.data.static is None:
            return None
        return live_row(self.table, self.data.static, self.data.deletion, self.now, self.data.key, b"", static=True)

    def rows(self, lo: bytes | None, hi: bytes | None, reverse: bool = False) -> Iterator[LiveRow]:
        for ck, data in self.txn.rows(self.table.store_id, self.token, self.pk, lo, hi, reverse):
            lr = live_row(self.table, row_record(self.table, data, self.pk, ck), self.data.row_deletion(ck), self.now,
                          self.data.key, ck)
            if lr is not None:
                yield lr


def stored_partitions(table: Table, txn: Txn, now: int, lo: int | None, lo_inc: bool, hi: int | None,
                      hi_inc: bool) -> Iterator[PartitionView]:
    """Partitions in token order within a token range."""
    for token, pk, data in txn.partitions(table.store_id, lo, lo_inc, hi, hi_inc):
        yield PartitionView(token, pk, partition_record(table, data, pk), table, txn, now)


def stored_partition(table: Table, txn: Txn, now: int, token: int, pk: bytes) -> PartitionView | None:
    """One partition by key, or None when nothing is stored for it."""
    data = txn.get_partition(table.store_id, token, pk)
    if data is None:
        return None
    return PartitionView(token, pk, partition_record(table, data, pk), table, txn, now)
