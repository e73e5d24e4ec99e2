"""Live views of stored rows: what a read sees at a given time.

A row is live while its marker or any of its cells is live and not shadowed
by a row, range, partition or collection tombstone (spec ``003``: row
markers; a static row exists while a static cell is live).

One idea split for size with ``select.py``, ``projection.py``, ``cell_meta.py`` and ``select_result.py``:
the SELECT pipeline (its live views of stored rows here).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterator

import msgspec

from ..mutation.cells import Cell, Deletion, Liveness, PartitionData, RowData, reconcile_deletion
from ..schema import types as T
from ..schema.model import Column, Table
from ..storage.damage import corrupt, partition_record
from ..storage.envelope import RecordDamaged, key_checksum, sealed_body
from ..storage.records import UNIFORM_ROW, MalformedBody, decode_row_or_uniform, malformed, uniform_row_data
from ..storage.sqlite import Txn

if TYPE_CHECKING:
    from .projection import UniformPlan

_astuple = msgspec.structs.astuple

_INT = struct.Struct(">i")


class LiveRow:
    """The live content of one row: atomic cells and ordered element cells of complex columns.

    A row read from a uniform record (a CDC log row, ``storage/records.py``) carries its values as
    ``values`` with the one ``liveness`` they share; ``cells`` is then built only when asked for
    (SELECT reads ``values`` directly, see ``docs/performance.md``, "Reading the CDC log").  A row
    read for values only (:func:`live_values_row`) carries ``values`` (atomic values and the frozen
    form of each non-frozen collection) and its record: ``cells`` and ``complex`` are then the
    general path's, computed from the record when first asked for."""

    __slots__ = ("key", "clustering", "ck", "_cells", "_complex", "static", "marker_live", "values", "liveness",
                 "_table", "_source", "marker")

    def __init__(self, key: tuple[bytes, ...], clustering: tuple[bytes, ...], ck: bytes,
                 cells: dict[str, Cell] | None = None, complex: dict[str, list[tuple[bytes, Cell]]] | None = None,
                 static: bool = False, marker_live: bool = False, values: dict[str, bytes | None] | None = None,
                 liveness: tuple[int, int, int] | None = None, table: Table | None = None,
                 source: tuple[RowData, Deletion | None, int] | None = None,
                 marker: Liveness | None = None) -> None:
        self.key = key
        self.clustering = clustering
        self.ck = ck
        self._cells = {} if cells is None and values is None else cells
        self._complex = {} if complex is None and source is None else complex
        self.static = static
        self.marker_live = marker_live
        self.values = values
        self.liveness = liveness
        self._table = table
        self._source = source
        self.marker = marker  # the live row marker (its write time and TTL), when marker_live

    @property
    def cells(self) -> dict[str, Cell]:
        c = self._cells
        if c is None:
            if self._source is not None:
                self._from_source()
                return self._cells  # type: ignore[return-value]
            ts, ttl, ldt = self.liveness  # type: ignore[misc]
            column = self._table.column  # type: ignore[union-attr]
            c = self._cells = {n: Cell(ts, v, ttl, ldt) for n, v in self.values.items()  # type: ignore[union-attr]
                               if v is not None and column(n) is not None}
        return c

    @property
    def complex(self) -> dict[str, list[tuple[bytes, Cell]]]:
        c = self._complex
        if c is None:
            self._from_source()
            c = self._complex
        return c  # type: ignore[return-value]

    def _from_source(self) -> None:
        row, outer, now = self._source  # type: ignore[misc]
        general = live_row(self._table, row, outer, now, self.key, self.ck)  # type: ignore[arg-type]
        self._cells = {} if general is None else general._cells
        self._complex = {} if general is None else general._complex

    def __repr__(self) -> str:
        return (f"LiveRow(key={self.key!r}, clustering={self.clustering!r}, cells={self.cells!r}, "
                f"complex={self.complex!r}, static={self.static!r}, marker_live={self.marker_live!r})")


def element_order_key(ctype: Any):
    """Sort key for element cell keys of a non-frozen collection/UDT column (the comparator itself)."""
    if isinstance(ctype, T.MapType):
        return ctype.key._comparable
    if isinstance(ctype, T.SetType):
        return ctype.element._comparable
    if isinstance(ctype, T.ListType):
        return T.TIMEUUID._comparable
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
    cells, complex_ = out._cells, out._complex
    column = table.column
    dropped = table.dropped_columns
    dts = None if deletion is None else deletion.timestamp
    for name, cell in row.cells.items():
        # Cell.is_live and Deletion.shadows, inline: this runs for every cell of every row read
        if cell.value is None or (cell.ttl and now >= cell.ldt) or (dts is not None and cell.timestamp <= dts):
            continue
        if column(name) is None or (dropped and _dropped(table, name, cell.timestamp)):
            continue
        cells[name] = cell
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
            complex_[name] = elems
    if marker_live or cells or complex_:
        return out
    return None


def complex_plan(table: Table, lists_by_key: bool = False) -> dict[str, tuple[Any, ...]]:
    """The table's non-frozen collection/UDT columns with their element sort keys: the plan by which
    :func:`live_values_row` and :func:`live_values` assemble each one's frozen value.  ``lists_by_key``: a
    list as the frozen map of its timeuuid keys to its values, its image in a CDC log (spec ``002``,
    ``cdc.log_values.frozen_elements``; the plan of ``cdc.upsert.UpsertTemplate``), each map's, set's and list's
    value read as an :class:`ElementImage` (an entry's third item says so)."""
    plan: dict[str, tuple[Any, ...]] = {}
    for c in table.columns:
        if c.type.is_multicell:
            order = element_order_key(c.type)
            if lists_by_key:
                if isinstance(c.type, T.ListType):
                    c = replace(c, type=T.MapType(T.TIMEUUID, c.type.element))
                plan[c.name] = (c, order, not isinstance(c.type, T.UserType))  # (an ElementImage: below)
            else:
                plan[c.name] = (c, order)
    return plan


def liveness_plan(plan: dict[str, tuple[Column | None, Any]]) -> dict[str, tuple[Column | None, Any]]:
    """``plan`` (:func:`complex_plan`) with no column's value assembled: by it :func:`live_values` counts the
    collections' live elements towards the row's liveness, as by ``plan``, and gives none of their values.
    A plan may mix entries of both (a CDC preimage that holds only the columns a write changes)."""
    return {name: (None, entry[1]) for name, entry in plan.items()}


def live_values_row(table: Table, row: RowData, outer: Deletion | None, now: int, key: tuple[bytes, ...],
                    ck: bytes, plan: dict[str, tuple[Column | None, Any]]) -> LiveRow | None:
    """:func:`live_row` for a reader that wants values only: the same liveness (TTL expiry, row,
    range, partition and collection tombstones against each cell's timestamp, dropped columns),
    decided in one pass without building a ``Cell`` view; each non-frozen collection comes out in its
    frozen serialized form.  ``plan`` is :func:`complex_plan` of the table.  The row's ``cells`` and
    ``complex`` are the general path's, computed from the record if something asks for them
    (``docs/performance.md``, "Reading base tables")."""
    live = live_values(table, row, outer, now, plan)
    if live is None:
        return None
    values, marker = live
    return LiveRow(key, row.clustering, ck, None, None, False, marker is not None, values, None, table,
                   (row, outer, now), marker)


def live_values(table: Table, row: RowData, outer: Deletion | None, now: int,
                plan: dict[str, tuple[Column | None, Any]]) -> tuple[dict[str, bytes | None], Liveness | None] | None:
    """The values of :func:`live_values_row` (by column name) and its live row marker (None when the marker
    is not live), or None when nothing of the row is live; without the row object (a changefeed's direct
    path, ``docs/changefeeds.md``)."""
    deletion = row.deletion if outer is None else reconcile_deletion(row.deletion, outer)
    dts = None if deletion is None else deletion.timestamp
    marker = row.marker
    live = (marker is not None and (not marker.ttl or now < marker.ldt) and (dts is None or marker.timestamp > dts))
    marker_live = live
    dropped = table.dropped_columns
    column = table.column
    multicell = table.multicell_names
    values: dict[str, bytes | None] = {}
    for name, (ts, value, ttl, ldt) in row.cells.items():
        if value is None or (ttl and now >= ldt) or (dts is not None and ts <= dts):
            continue
        if column(name) is None or (dropped and _dropped(table, name, ts)):
            continue
        live = True
        if name not in multicell:  # the general path reads a non-frozen column from its elements only
            values[name] = value
    for name, cc in row.complex.items():
        entry = plan.get(name)
        if entry is None or (live and entry[0] is None):  # not planned, or its liveness only and the row is live
            continue
        cdel = cc.deletion if deletion is None else reconcile_deletion(cc.deletion, deletion)
        cdts = None if cdel is None else cdel.timestamp
        elems = [(k, c) for k, c in cc.cells.items()
                 if c.value is not None and (not c.ttl or now < c.ldt) and (cdts is None or c.timestamp > cdts)
                 and not (dropped and _dropped(table, name, c.timestamp))]
        if elems:
            live = True
            col = entry[0]
            if col is None:  # its liveness only (``liveness_plan``)
                continue
            if len(elems) > 1:
                order = entry[1]
                elems.sort(key=lambda kc: order(kc[0]))
            if len(entry) > 2 and entry[2]:  # a CDC image plan's map, set or list
                image = values[name] = ElementImage(assemble_complex(col.type, elems))
                image.last = elems[-1][0]
            else:
                values[name] = assemble_complex(col.type, elems)
    if not live:
        return None
    return values, marker if marker_live else None


def uniform_live_row(table: Table, record: tuple, outer: Deletion | None, now: int, key: tuple[bytes, ...],
                     ck: bytes) -> LiveRow | None:
    """The live view of a uniform row record (``records.decode_row_or_uniform``), or None when it is not live.

    Its marker and every value share one liveness, so the row is live, whole, or not at all: it
    expires with its TTL or is shadowed by a partition/range deletion as a unit.  Callers use it only
    for tables without dropped columns (a dropped column's values would need filtering per value)."""
    clustering, ts, ttl, ldt, values = record
    if (ttl and now >= ldt) or (outer is not None and ts <= outer.timestamp):
        return None
    return LiveRow(key, clustering, ck, None, None, False, True, values, (ts, ttl, ldt), table,
                   marker=Liveness(ts, ttl, ldt))


class ElementImage(bytes):
    """A non-frozen map's, set's or list's frozen value as :func:`live_values` reads it by a CDC image plan
    (``complex_plan(table, lists_by_key=True)``: a list as the map of its timeuuid keys), with the key of its last
    element in their type's order (``last``): the postimage of a write that adds elements after it is the image
    with the new ones joined on (``cdc.log_values.appended_elements``), not decoded again.  Otherwise the bytes
    themselves."""

    last: bytes


def assemble_complex(ctype: Any, elems: list[tuple[bytes, Cell]]) -> bytes:
    """The frozen serialized value of a non-frozen collection/UDT from its live element cells."""
    if isinstance(ctype, T.UserType):
        out = bytearray()
        by_index = {struct.unpack(">h", k)[0]: c.value for k, c in elems}
        for i in range(len(ctype.field_names)):
            v = by_index.get(i)
            if v is None:
                out += b"\xff\xff\xff\xff"
            else:
                out += struct.pack(">i", len(v)) + v
        return bytes(out)
    pack = _INT.pack
    parts = [pack(len(elems))]
    add = parts.append
    if isinstance(ctype, T.MapType):
        for k, c in elems:
            v = c.value
            add(pack(len(k)))
            add(k)
            add(pack(len(v)))
            add(v)
    elif isinstance(ctype, T.SetType):
        for k, _ in elems:
            add(pack(len(k)))
            add(k)
    else:
        for _, c in elems:
            v = c.value
            add(pack(len(v)))
            add(v)
    return b"".join(parts)


def column_bytes(row: LiveRow, col: Column) -> bytes | None:
    """The serialized value of a non-key column in a live row (None when null)."""
    values = row.values
    if values is not None and row.liveness is None:  # a values-only row (live_values_row)
        return values.get(col.name)
    if col.type.is_multicell:
        elems = row.complex.get(col.name)
        return None if not elems else assemble_complex(col.type, elems)
    if values is not None:
        return values.get(col.name)
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

    def rows(self, lo: bytes | None, hi: bytes | None, reverse: bool = False,
             values: bool = False) -> Iterator[LiveRow]:
        """The live clustering rows in ``[lo, hi)``; ``values``: as :func:`live_values_row` gives them
        (for readers of values only: same rows, same values, fewer steps)."""
        table, pk, now, key = self.table, self.pk, self.now, self.data.key
        plan = complex_plan(table) if values else None
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
                lr = (live_row(table, row, outer, now, key, ck) if plan is None
                      else live_values_row(table, row, outer, now, key, ck, plan))
            elif uniform_ok:
                lr = uniform_live_row(table, row, outer, now, key, ck)
            elif plan is None:
                lr = live_row(table, uniform_row_data(row), outer, now, key, ck)
            else:
                lr = live_values_row(table, uniform_row_data(row), outer, now, key, ck, plan)
            if lr is not None:
                yield lr


    def value_rows(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                   plan: "UniformPlan") -> tuple[list[bytes], list[list[bytes | None]]]:
        """The clustering keys and ``projection.raw_values_of`` rows of the live rows in ``[lo, hi)``, the
        uniform records (CDC log rows) decoded by ``plan`` in one pass each: checksum verified as
        ``unseal`` does, body decoded into the selection's struct, the row live whole or not at all
        (:func:`uniform_live_row`).  General records go through :func:`live_values_row`.  Same rows
        and bytes as :meth:`rows` gives (``docs/performance.md``, "Reading the CDC log")."""
        table, pk, now, key, token = self.table, self.pk, self.now, self.data.key, self.token
        tid = table.store_id
        data_ = self.data
        plain = data_.deletion is None and not data_.range_tombstones
        key_crc = key_checksum(tid, pk)
        decode, selected, trim = plan.decode, plan.selected, plan.trim
        astuple = _astuple
        cplan = None
        cks: list[bytes] = []
        out: list[list[bytes | None]] = []
        add = out.append
        for ck, data in self.txn.rows(tid, token, pk, lo, hi, reverse):
            body = sealed_body(data, key_crc, ck, UNIFORM_ROW)
            if body is None:  # a general record, or one that does not verify
                try:
                    row = decode_row_or_uniform(data, tid, pk, ck)
                except RecordDamaged as e:
                    raise corrupt(table, pk, ck, e.reason) from None
                outer = None if plain else data_.row_deletion(ck)
                if not isinstance(row, RowData):
                    row = uniform_row_data(row)
                if cplan is None:
                    cplan = complex_plan(table)
                lr = live_values_row(table, row, outer, now, key, ck, cplan)
                if lr is not None:
                    cks.append(ck)
                    add(plan.general(key, lr, None))
                continue
            try:
                clustering, (ts, ttl, ldt), values = decode(body)
            except MalformedBody as e:
                raise corrupt(table, pk, ck, malformed(e).reason) from None
            if ttl and now >= ldt:
                continue
            if not plain:
                outer = data_.row_deletion(ck)
                if outer is not None and ts <= outer.timestamp:
                    continue
            vals = astuple(values)
            cks.append(ck)
            add([*key, *clustering, *(vals[:selected] if trim else vals)])
        return cks, out


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
