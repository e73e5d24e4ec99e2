"""The order of delta rows inside one ``cdc$time`` group, as current ScyllaDB writes them (``cdc/split.cc``).

ScyllaDB first asks whether a partition update must be split (``should_split``).
It need not when every change in it shares one timestamp and one TTL and its kinds
do not mix: a static row with clustered rows, a row's upsert with its (or an
earlier row's) deletion, range deletions with rows, a partition deletion with
anything, or a row marker with a live collection cell.  An unsplit update is logged
in the order ScyllaDB walks a mutation: the static row, the clustered rows in
clustering order (each an upsert or a deletion), range deletions, the partition
deletion.  A split one is logged per timestamp, by kind: static-row updates,
clustered-row inserts, clustered-row updates, row deletions, range deletions, the
partition deletion; rows of a kind in clustering order, a row's changes in
increasing TTL order.  In a split update an insert's live collection cells (a
change an INSERT cannot express without a collection tombstone) become an update
of their own, listed among the updates.
"""

from __future__ import annotations

from ..mutation.cells import RowData
from ..mutation.model import PartitionUpdate

STATIC, INSERTS, UPDATES, ROW_DELETIONS, RANGE_DELETIONS, PARTITION_DELETION = range(6)
ROWS = INSERTS  # unsplit: upserts and deletions together, in clustering order


class _ShouldSplit:
    """ScyllaDB's ``should_split_visitor`` over a partition update."""

    def __init__(self) -> None:
        self.had_static = self.had_clustered = self.had_upsert = self.had_marker = self.had_range = False
        self.ts: int | None = None
        self.ttl: int | None = None
        self.result = False

    def visit(self, ts: int, ttl: int = 0) -> None:
        if (self.ts is not None and self.ts != ts) or (self.ttl is not None and self.ttl != ttl):
            self.result = True
        self.ts, self.ttl = ts, ttl

    def cells(self, row: RowData) -> None:
        for cell in row.cells.values():
            self.visit(cell.timestamp, cell.ttl if cell.value is not None else 0)
        for col in row.complex.values():
            if col.deletion is not None:
                self.visit(col.deletion.timestamp + 1)
            for cell in col.cells.values():
                if cell.value is not None and self.had_marker:
                    self.result = True  # a non-atomic update cannot be expressed with an INSERT
                self.visit(cell.timestamp, cell.ttl if cell.value is not None else 0)

    def run(self, pu: PartitionUpdate) -> bool:
        if pu.static is not None and (pu.static.cells or pu.static.complex):
            self.had_static = True
            self.cells(pu.static)
        for ck in sorted(pu.rows):
            row = pu.rows[ck]
            if row.marker is not None or row.cells or row.complex:
                if self.had_static:
                    return True
                self.had_clustered = self.had_upsert = True
                if row.marker is not None:
                    self.had_marker = True
                    self.visit(row.marker.timestamp, row.marker.ttl)
                self.cells(row)
            if row.deletion is not None:
                if self.had_static or self.had_upsert:
                    return True
                self.had_clustered = True
                self.visit(row.deletion.timestamp)
            if self.result:
                return True
        for rd in pu.range_deletions:
            if self.had_static or self.had_clustered:
                return True
            self.had_range = True
            self.visit(rd.deletion.timestamp)
        if pu.deletion is not None and (self.had_range or self.had_static or self.had_clustered):
            return True
        return self.result or self.ts is None  # an update with no timestamp at all splits into nothing


def should_split(pu: PartitionUpdate) -> bool:
    """Whether ScyllaDB logs ``pu`` change by change (``cdc::should_split``) rather than as one mutation."""
    return _ShouldSplit().run(pu)
