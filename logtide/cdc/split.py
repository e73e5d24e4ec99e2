"""Splitting a partition update into the changes of the CDC log (spec ``001``; ScyllaDB's ``cdc/split.cc``): its
atoms grouped by timestamp, then by TTL, each group a :class:`Change` of deltas per row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..mutation.cells import Cell, RowData
from ..mutation.model import PartitionUpdate, RangeDeletion


@dataclass
class RowDelta:
    """What one change does to one row."""

    clustering: tuple[bytes, ...]
    marker: bool = False
    deleted: bool = False
    cells: dict[str, Cell] = field(default_factory=dict)
    collection_deleted: set[str] = field(default_factory=set)
    added: dict[str, list[tuple[bytes, bytes]]] = field(default_factory=dict)
    removed: dict[str, list[bytes]] = field(default_factory=dict)

    def columns(self) -> set[str]:
        return set(self.cells) | self.collection_deleted | set(self.added) | set(self.removed)

    def has_cells(self) -> bool:
        return self.marker or bool(self.columns())


@dataclass
class Change:
    """All atoms of a partition update that share a timestamp and a TTL (split per spec 001)."""

    partition_deleted: bool = False
    ranges: list[RangeDeletion] = field(default_factory=list)
    static: RowDelta | None = None
    rows: dict[bytes, RowDelta] = field(default_factory=dict)


def _ttl_of(cell: Cell) -> int:
    return cell.ttl if cell.value is not None else 0


def split(pu: PartitionUpdate) -> dict[int, dict[int, Change]]:
    """The update's atoms grouped by group timestamp, then by TTL (0: dead cells and non-expiring ones)."""
    groups: dict[int, dict[int, Change]] = {}

    def change(ts: int, ttl: int) -> Change:
        return groups.setdefault(ts, {}).setdefault(ttl, Change())

    def row_delta(ch: Change, ck: bytes | None, clustering: tuple[bytes, ...]) -> RowDelta:
        if ck is None:
            if ch.static is None:
                ch.static = RowDelta(())
            return ch.static
        d = ch.rows.get(ck)
        if d is None:
            d = ch.rows[ck] = RowDelta(clustering)
        return d

    if pu.deletion is not None:
        change(pu.deletion.timestamp, 0).partition_deleted = True
    for rd in pu.range_deletions:
        change(rd.deletion.timestamp, 0).ranges.append(rd)

    def add_row(row: RowData, ck: bytes | None) -> None:
        if row.deletion is not None:
            row_delta(change(row.deletion.timestamp, 0), ck, row.clustering).deleted = True
        if row.marker is not None:
            row_delta(change(row.marker.timestamp, row.marker.ttl), ck, row.clustering).marker = True
        for name, cell in row.cells.items():
            row_delta(change(cell.timestamp, _ttl_of(cell)), ck, row.clustering).cells[name] = cell
        for name, col in row.complex.items():
            if col.deletion is not None:
                # spec 002: a collection tombstone counts at its timestamp + 1
                row_delta(change(col.deletion.timestamp + 1, 0), ck, row.clustering).collection_deleted.add(name)
            for key, cell in col.cells.items():
                d = row_delta(change(cell.timestamp, _ttl_of(cell)), ck, row.clustering)
                if cell.value is None:
                    d.removed.setdefault(name, []).append(key)
                else:
                    d.added.setdefault(name, []).append((key, cell.value))

    if pu.static is not None:
        add_row(pu.static, None)
    for ck, row in pu.rows.items():
        add_row(row, ck)
    return groups
