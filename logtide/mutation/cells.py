"""Cells, tombstones and rows: the storage model of Cassandra/ScyllaDB, and its reconciliation rules.

Timestamps are microseconds; ``ldt`` (local deletion time) is seconds since
the epoch: for a tombstone the time it was written, for an expiring cell the
time it expires.  Reconciliation follows Cassandra's ``Cells.reconcile`` and
``LivenessInfo.supersedes`` (with CASSANDRA-14592's tie rules):

* the greater timestamp wins;
* at equal timestamps a tombstone beats a live cell, an expiring cell beats a
  non-expiring one, between expiring cells (or between tombstones) the later
  ``ldt`` wins, and otherwise (also at equal ``ldt``) the greater value in
  unsigned byte order wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

NO_TTL = 0
NO_DELETION = 0x7FFFFFFF  # Cassandra's Cell.NO_DELETION_TIME


class Cell(NamedTuple):
    """One cell: ``value`` None means a tombstone; ``ttl`` > 0 makes it expiring at ``ldt``."""

    timestamp: int
    value: bytes | None
    ttl: int = NO_TTL
    ldt: int = NO_DELETION

    @property
    def is_tombstone(self) -> bool:
        return self.value is None

    @property
    def is_expiring(self) -> bool:
        return self.value is not None and self.ttl != NO_TTL

    def is_live(self, now: int) -> bool:
        """Live at ``now`` (seconds): has a value and has not expired."""
        return self.value is not None and (self.ttl == NO_TTL or now < self.ldt)


class Deletion(NamedTuple):
    """A row, range, partition or collection tombstone: shadows data with timestamp <= ``timestamp``."""

    timestamp: int
    ldt: int

    def shadows(self, timestamp: int) -> bool:
        return timestamp <= self.timestamp


class Liveness(NamedTuple):
    """A row marker (written by INSERT): keeps the row alive while live."""

    timestamp: int
    ttl: int = NO_TTL
    ldt: int = NO_DELETION

    def is_live(self, now: int) -> bool:
        return self.ttl == NO_TTL or now < self.ldt


def reconcile(a: Cell, b: Cell) -> Cell:
    """The cell that wins between two versions of the same cell (Cassandra's ``Cells.reconcile``)."""
    if a.timestamp != b.timestamp:
        return a if a.timestamp > b.timestamp else b
    a_dead = a.value is None or a.ttl != NO_TTL
    b_dead = b.value is None or b.ttl != NO_TTL
    if a_dead or b_dead:
        if a_dead != b_dead:
            return a if a_dead else b
        a_tomb = a.value is None
        b_tomb = b.value is None
        if a_tomb != b_tomb:
            return a if a_tomb else b
        if a.ldt != b.ldt:
            return a if a.ldt > b.ldt else b
        if not a_tomb and a.ttl != b.ttl:
            # ScyllaDB: same expiry, the later derived write time (expiry - ttl), i.e. the lower TTL, wins
            return a if a.ttl < b.ttl else b
    return a if (a.value or b"") >= (b.value or b"") else b


def reconcile_deletion(a: Deletion | None, b: Deletion | None) -> Deletion | None:
    """The stronger of two deletions (greater timestamp, then later ldt)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if (a.timestamp, a.ldt) >= (b.timestamp, b.ldt) else b


def reconcile_liveness(a: Liveness | None, b: Liveness | None) -> Liveness | None:
    """The winning row marker (Cassandra's ``LivenessInfo.supersedes``).

    The greater timestamp wins; at equal timestamps, between two expiring or
    two non-expiring markers the later expiry wins, otherwise the expiring one.
    """
    if a is None:
        return b
    if b is None:
        return a
    if a.timestamp != b.timestamp:
        return a if a.timestamp > b.timestamp else b
    a_expiring = a.ttl != NO_TTL
    b_expiring = b.ttl != NO_TTL
    if a_expiring == b_expiring:
        return a if a.ldt >= b.ldt else b
    return a if a_expiring else b


@dataclass
class ComplexColumn:
    """A non-frozen collection or UDT: a collection tombstone and element cells keyed by element key bytes.

    Keys are the serialized map key, set element, list timeuuid, or UDT field
    index (a big-endian smallint), as ScyllaDB stores them.
    """

    deletion: Deletion | None = None
    cells: dict[bytes, Cell] = field(default_factory=dict)

    def copy(self) -> "ComplexColumn":
        return ComplexColumn(self.deletion, dict(self.cells))


@dataclass
class RowData:
    """A clustering row (or the static row): marker, row tombstone, atomic cells and complex columns.

    ``clustering`` holds the serialized clustering values (empty for the
    static row and for tables without clustering columns).
    """

    clustering: tuple[bytes, ...] = ()
    marker: Liveness | None = None
    deletion: Deletion | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    complex: dict[str, ComplexColumn] = field(default_factory=dict)

    def copy(self) -> "RowData":
        return RowData(self.clustering, self.marker, self.deletion, dict(self.cells),
                       {k: v.copy() for k, v in self.complex.items()})

    def is_empty(self) -> bool:
        return (self.marker is None and self.deletion is None and not self.cells
                and not any(c.deletion is not None or c.cells for c in self.complex.values()))


@dataclass
class RangeTombstone:
    """A deletion of the clustering range ``[lo, hi)`` in comparable-key space (None = unbounded)."""

    lo: bytes | None
    hi: bytes | None
    deletion: Deletion

    def covers(self, ck: bytes) -> bool:
        return (self.lo is None or ck >= self.lo) and (self.hi is None or ck < self.hi)


@dataclass
class PartitionData:
    """Partition-level state: key values, partition tombstone, range tombstones and the static row."""

    key: tuple[bytes, ...]
    deletion: Deletion | None = None
    range_tombstones: list[RangeTombstone] = field(default_factory=list)
    static: RowData | None = None

    def row_deletion(self, ck: bytes) -> Deletion | None:
        """The strongest partition or range deletion covering clustering key ``ck``."""
        d = self.deletion
        for rt in self.range_tombstones:
            if rt.covers(ck):
                d = reconcile_deletion(d, rt.deletion)
        return d


def purge_row(row: RowData, outer: Deletion | None, now: int, gc_grace: int) -> RowData:
    """Drop what ``outer`` and the row's own tombstones shadow, and tombstones older than gc_grace.

    Expired cells are kept as tombstones until ``ldt + gc_grace`` passes, as in
    Cassandra, so that they still win against older writes.
    """
    deletion = reconcile_deletion(row.deletion, outer)
    if row.deletion is not None and row.deletion.ldt + gc_grace < now:
        own = None
    else:
        own = row.deletion
    marker = row.marker
    if marker is not None:
        if deletion is not None and deletion.shadows(marker.timestamp):
            marker = None
        elif marker.ttl != NO_TTL and marker.ldt + gc_grace < now:
            marker = None
    cells: dict[str, Cell] = {}
    for name, cell in row.cells.items():
        if deletion is not None and deletion.shadows(cell.timestamp):
            continue
        if _purgeable(cell, now, gc_grace):
            continue
        cells[name] = cell
    complex_: dict[str, ComplexColumn] = {}
    for name, col in row.complex.items():
        cdel = reconcile_deletion(col.deletion, deletion)
        keep_del = col.deletion
        if keep_del is not None and ((deletion is not None and deletion.shadows(keep_del.timestamp)
                                      and deletion.timestamp >= keep_del.timestamp)
                                     or keep_del.ldt + gc_grace < now):
            keep_del = None
        ccells = {k: c for k, c in col.cells.items()
                  if not (cdel is not None and cdel.shadows(c.timestamp)) and not _purgeable(c, now, gc_grace)}
        if keep_del is not None or ccells:
            complex_[name] = ComplexColumn(keep_del, ccells)
    return RowData(row.clustering, marker, own, cells, complex_)


def _purgeable(cell: Cell, now: int, gc_grace: int) -> bool:
    if cell.value is None:
        return cell.ldt + gc_grace < now
    return cell.ttl != NO_TTL and cell.ldt + gc_grace < now


def merge_rows(old: RowData | None, new: RowData, now: int) -> RowData:
    """Merge ``new`` into ``old`` cell by cell with the reconciliation rules."""
    if old is None:
        return new.copy()
    merged = old.copy()
    merged.marker = reconcile_liveness(old.marker, new.marker)
    merged.deletion = reconcile_deletion(old.deletion, new.deletion)
    for name, cell in new.cells.items():
        cur = merged.cells.get(name)
        merged.cells[name] = cell if cur is None else reconcile(cur, cell)
    for name, col in new.complex.items():
        cur_col = merged.complex.get(name)
        if cur_col is None:
            merged.complex[name] = col.copy()
            continue
        cur_col.deletion = reconcile_deletion(cur_col.deletion, col.deletion)
        for key, cell in col.cells.items():
            cur = cur_col.cells.get(key)
            cur_col.cells[key] = cell if cur is None else reconcile(cur, cell)
    return merged


def merge_plain(old: RowData | None, new: RowData, now: int, gc_grace: int) -> RowData | None:
    """``purge_row(merge_rows(purge_row(old), new))`` with no outer deletion, in one pass, for the
    commonest write (an upsert of atomic cells): neither row holds a row tombstone or a complex column.
    None when one does (the caller takes the general path).  Same cells in the same order."""
    if new.deletion is not None or new.complex:
        return None
    marker = new.marker
    cells: dict[str, Cell] = {}
    if old is not None:
        if old.deletion is not None or old.complex:
            return None
        m = old.marker
        if m is not None and not (m.ttl != NO_TTL and m.ldt + gc_grace < now):
            marker = reconcile_liveness(m, marker)
        expired = now - gc_grace  # _purgeable, inline: a tombstone or an expiring cell whose ldt is before this
        for name, cell in old.cells.items():
            if (cell.value is None or cell.ttl != NO_TTL) and cell.ldt < expired:
                continue
            cells[name] = cell
        clustering = old.clustering
    else:
        clustering = new.clustering
    if marker is not None and marker.ttl != NO_TTL and marker.ldt + gc_grace < now:
        marker = None
    for name, cell in new.cells.items():
        cur = cells.get(name)
        if cur is not None:
            cell = reconcile(cur, cell)
        if _purgeable(cell, now, gc_grace):
            cells.pop(name, None)
        else:
            cells[name] = cell
    return RowData(clustering, marker, None, cells, {})
