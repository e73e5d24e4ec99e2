"""Live views of stored rows: what a read sees at a given time.

A row is live while its marker or any of its cells is live and not shadowed
by a row, range, partition or collection tombstone (spec ``003``: row
markers; a static row exists while a static cell is live).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Iterator

from ..mutation.cells import Cell, Deletion, Liveness, PartitionData, RowData, reconcile_deletion
from ..schema import types as T
from ..schema.model import Column, Table
from ..storage.damage import corrupt, partition_record
from ..storage.envelope import RecordDamaged
from ..storage.records import decode_row_or_uniform, uniform_row_data
from ..storage.sqlite import Txn


class LiveRow:
    """The live content of one row: atomic cells and ordered element cells of complex columns.

    A row read from a uniform record (a CDC log row, ``storage/records.py``) carries its values as
    ``values`` with the one ``liveness`` they share; ``cells`` is then built only when asked for
    (SELECT reads ``values`` directly, see ``docs/performance.md``, "Reading the CDC log")."""

    __slots__ = ("key", "clustering", "ck", "_cells", "complex", "static", "marker_live", "values", "liveness",
                 "_table", "marker")

    def __init__(self, key: tuple[bytes, ...], clustering: tuple[bytes, ...], ck: bytes,
                 cells: dict[str, Cell] | None = None, complex: dict[str, list[tuple[bytes, Cell]]] | None = None,
                 static: bool = False, marker_live: bool = False, values: dict[str, bytes | None] | None = None,
                 liveness: tuple[int, int, int] | None = None, table: Table | None = None,
                 marker: Liveness | None = None) -> None:
        self.key = key
        self.clustering = clustering
        self.ck = ck
        self._cells = {} if cells is None and values is None else cells
        self.complex = {} if complex is None else complex
        self.static = static
        self.marker_live = marker_live
        self.values = values
        self.liveness = liveness
        self._table = table
        self.marker = marker  # the live row marker (its write time and TTL), when marker_live

    @property
    def cells(self) -> dict[str, Cell]:
        c = self._cells
        if c is None:
            ts, ttl, ldt = self.liveness  # type: ignore[misc]
            column = self._table.column  # type: ignore[union-attr]
            c = self._cells = {n: Cell(ts, v, ttl, ldt) for n, v in self.values.items()  # type: ignore[union-attr]
                               if v is not None and column(n) is not None}
        return c

    def __repr__(self) -> str:
        return (f"LiveRow(key={self.key!r}, clustering={self.clustering!r}, cells={self.cells!r}, "
                f"complex={self.complex!r}, static={self.static!r}, marker_live={self.marker_live!r})")


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
    out = LiveRow(key, row.clustering, ck, static=static, marker_live=marker_live,
                  marker=row.marker if marker_live else None)
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


def uniform_live_row(table: Table, record: tuple, outer: Deletion | None, now: int, key: tuple[bytes, ...],
                     ck: bytes) -> LiveRow | None:
    """The live view of a uniform row record (``records.decode_row_or_uniform``), or None when it is not live.

    Its marker and every value share one liveness, so the row is live, whole, or not at all: it
    expires with its TTL or is shadowed by a partition/range deletion as a unit.  Callers use it only
    for tables without dropped columns (a dropped column's values would need filtering per value)."""
    clustering, ts, ttl, ldt, values = record
    if (ttl and now >= ldt) or (outer is not None and ts <= outer.timestamp):
        return None
    return LiveRow(key, clustering, ck, None, None, False, True, values, (ts, ttl, ldt), table, Liveness(ts, ttl, ldt))


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
    if row.values is not None:
        return row.values.get(col.name)
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
        table, pk, now, key = self.table, self.pk, self.now, self.data.key
        tid = table.store_id
        data_ = self.data
        plain = data_.deletion is None and not data_.range_tombstones
        uniform_ok = not table.dropped_columns
        for ck, data in self.txn.rows(tid, self.token, pk, lo, hi, reverse):
            try:
                row = decode_row_or_uniform(data, tid, pk, ck)
            except RecordDamaged as e:
                raise corrupt(table, pk, ck, e.reason) from None
            outer = None if plain else data_.row_deletion(ck)
            if isinstance(row, RowData):
                lr = live_row(table, row, outer, now, key, ck)
            elif uniform_ok:
                lr = uniform_live_row(table, row, outer, now, key, ck)
            else:
                lr = live_row(table, uniform_row_data(row), outer, now, key, ck)
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
