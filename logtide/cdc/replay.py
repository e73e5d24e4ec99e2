"""Replaying a CDC log: rebuild a table from its delta rows, and verify the copy against the source.

Spec ``000``: "using the information gathered from delta rows you can replay
the exact same write".  Each delta row becomes cell writes with the
timestamp of its ``cdc$time``; a collection deletion (``cdc$deleted_X`` on a
non-frozen collection or UDT) becomes a collection tombstone at that
timestamp minus one (spec ``002``: the log shows collection tombstones at
their timestamp plus one); ``cdc$ttl`` gives the TTL of live cells and
markers.  The expiry of a TTL is taken as the write timestamp (in seconds)
plus the TTL, exact when the server assigned the timestamp.

Replay needs ``'delta': 'full'`` logs.  Rows are applied with their own
timestamps, so the order of streams does not matter.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..errors import InvalidRequest
from ..mutation.cells import NO_TTL, Cell, ComplexColumn, Deletion, Liveness, RowData
from ..mutation.model import Mutation, PartitionUpdate, RangeDeletion
from ..query.read import live_row, stored_partitions
from ..schema import types as T
from ..schema.model import Table
from ..storage.keys import clustering_key, partition_token, prefix_end, serialize_partition_key
from ..storage.damage import row_record
from . import log_schema as L
from .verify import Difference, compare_tables
from .log_rows import (INSERT, PARTITION_DELETE, RANGE_LEFT_EXCLUSIVE, RANGE_LEFT_INCLUSIVE, RANGE_RIGHT_EXCLUSIVE,
                  RANGE_RIGHT_INCLUSIVE, ROW_DELETE, SERVICE_PARTITION_DELETE, SERVICE_ROW_DELETE, UPDATE)

GREGORIAN_OFFSET = 0x01B21DD213814000


def time_micros(tu: bytes) -> int:
    """The write timestamp (microseconds) in a ``cdc$time`` value."""
    return (uuid.UUID(bytes=tu).time - GREGORIAN_OFFSET) // 10


@dataclass
class LogEntry:
    """One log row read back: its stream, time, sequence number and column values (serialized)."""

    stream: bytes
    time: bytes
    seq: int
    values: dict[str, bytes]

    @property
    def operation(self) -> int:
        return struct.unpack(">b", self.values[L.OPERATION])[0]

    @property
    def timestamp(self) -> int:
        return time_micros(self.time)


def read_log(db: Any, log: Table) -> Iterator[LogEntry]:
    """Every live row of a log table, stream by stream, in (time, batch_seq_no) order."""
    now = db.now_seconds()
    with db.store.snapshot() as txn:
        for part in stored_partitions(log, txn, now, None, True, None, True):
            for ck, data in txn.rows(log.store_id, part.token, part.pk):
                lr = live_row(log, row_record(log, data, part.pk, ck), part.data.row_deletion(ck), now, part.key, ck)
                if lr is None:
                    continue
                values = {n: c.value for n, c in lr.cells.items()}
                yield LogEntry(part.pk, lr.clustering[0], struct.unpack(">i", lr.clustering[1])[0], values)


@dataclass
class _Builder:
    """Turns the delta rows of one (stream, time) group into a mutation of the target table."""

    target: Table
    mutation: Mutation
    pending_left: LogEntry | None = None

    def partition(self, e: LogEntry) -> PartitionUpdate:
        key = tuple(e.values[c.name] for c in self.target.partition_key)
        pk = serialize_partition_key(key)
        return self.mutation.partition(self.target, key, pk, partition_token(self.target, pk))

    def clustering(self, e: LogEntry) -> tuple[bytes, ...]:
        out = []
        for c in self.target.clustering_key:
            v = e.values.get(c.name)
            if v is None:
                break
            out.append(v)
        return tuple(out)

    def row(self, pu: PartitionUpdate, e: LogEntry) -> RowData:
        clustering = self.clustering(e)
        if len(clustering) < len(self.target.clustering_key):
            if pu.static is None:
                pu.static = RowData(())
            return pu.static
        ck = clustering_key(self.target.clustering_key, clustering)
        row = pu.rows.get(ck)
        if row is None:
            row = pu.rows[ck] = RowData(clustering)
        return row

    def add(self, e: LogEntry) -> None:
        op = e.operation
        ts = e.timestamp
        secs = ts // 1_000_000
        if op in (UPDATE, INSERT):
            self._cells(e, ts, secs, op == INSERT)
        elif op in (ROW_DELETE, SERVICE_ROW_DELETE):
            pu = self.partition(e)
            r = self.row(pu, e)
            r.deletion = Deletion(ts, secs)
        elif op in (PARTITION_DELETE, SERVICE_PARTITION_DELETE):
            self.partition(e).deletion = Deletion(ts, secs)
        elif op in (RANGE_LEFT_INCLUSIVE, RANGE_LEFT_EXCLUSIVE):
            self.pending_left = e
        elif op in (RANGE_RIGHT_INCLUSIVE, RANGE_RIGHT_EXCLUSIVE):
            self._range(self.pending_left, e, ts, secs)
            self.pending_left = None

    def flush(self) -> None:
        if self.pending_left is not None:
            e = self.pending_left
            self._range(e, None, e.timestamp, e.timestamp // 1_000_000)
            self.pending_left = None

    def _range(self, left: LogEntry | None, right: LogEntry | None, ts: int, secs: int) -> None:
        e = left or right
        pu = self.partition(e)
        cols = self.target.clustering_key
        start = self.clustering(left) if left else ()
        end = self.clustering(right) if right else ()
        lo = hi = None
        if left is not None:
            k = clustering_key(cols, start)
            lo = k if left.operation == RANGE_LEFT_INCLUSIVE else prefix_end(k)
        if right is not None:
            k = clustering_key(cols, end)
            hi = prefix_end(k) if right.operation == RANGE_RIGHT_INCLUSIVE else k
        pu.range_deletions.append(RangeDeletion(
            start, None if left is None else left.operation == RANGE_LEFT_INCLUSIVE,
            end, None if right is None else right.operation == RANGE_RIGHT_INCLUSIVE, lo, hi, Deletion(ts, secs)))

    def _cells(self, e: LogEntry, ts: int, secs: int, insert: bool) -> None:
        pu = self.partition(e)
        row = self.row(pu, e)
        ttl_raw = e.values.get(L.TTL)
        ttl = struct.unpack(">q", ttl_raw)[0] if ttl_raw else NO_TTL
        ldt = secs + ttl if ttl else 0x7FFFFFFF
        if insert:
            row.marker = Liveness(ts, ttl, ldt) if ttl else Liveness(ts)
        for col in self.target.columns:
            if col.is_primary_key:
                continue
            name = col.name
            deleted = e.values.get(L.DELETED + name) == b"\x01"
            value = e.values.get(name)
            if not col.type.is_multicell:
                if value is not None:
                    row.cells[name] = Cell(ts, value, ttl, ldt) if ttl else Cell(ts, value)
                elif deleted:
                    row.cells[name] = Cell(ts, None, NO_TTL, secs)
                continue
            removed = e.values.get(L.DELETED_ELEMENTS + name)
            if not (deleted or value is not None or removed is not None):
                continue
            cc = row.complex.setdefault(name, ComplexColumn())
            if deleted:
                cc.deletion = Deletion(ts - 1, secs)
            if value is not None:
                for k, v in _elements(col.type, value):
                    cc.cells[k] = Cell(ts, v, ttl, ldt) if ttl else Cell(ts, v)
            if removed is not None:
                for k in _set_items(removed):
                    cc.cells[k] = Cell(ts, None, NO_TTL, secs)


def _frames(data: bytes, pos: int = 0) -> Iterator[bytes | None]:
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0:
            yield None
        else:
            yield data[pos:pos + n]
            pos += n


def _set_items(data: bytes) -> list[bytes]:
    return [b for b in _frames(data, 4) if b is not None]


def _elements(ctype: Any, data: bytes) -> list[tuple[bytes, bytes]]:
    """Element cells (key, value) of a logged non-frozen collection/UDT value."""
    if isinstance(ctype, T.UserType):
        return [(struct.pack(">h", i), v) for i, v in enumerate(_frames(data)) if v is not None]
    if isinstance(ctype, T.SetType):
        return [(k, b"") for k in _set_items(data)]
    items = list(_frames(data, 4))
    return [(items[i], items[i + 1]) for i in range(0, len(items), 2)]


@dataclass
class ReplayReport:
    """What a replay did."""

    log_rows: int = 0
    groups: int = 0
    differences: list[Difference] = field(default_factory=list)


def cdc_log_of(db: Any, keyspace: str, table: str) -> Table:
    """The CDC log table of ``keyspace.table``; InvalidRequest "CDC is not enabled on ks.t" when it has none."""
    base = db.catalog.table(keyspace, table)
    log = db.catalog.find_table(keyspace, L.log_name(table))
    if log is None or not (base.cdc and base.cdc.get("enabled") == "true"):
        raise InvalidRequest(f"CDC is not enabled on {keyspace}.{table}")
    return log


def replay(source_db: Any, keyspace: str, table: str, target_db: Any, target_keyspace: str | None = None,
           target_table: str | None = None, verify: bool = False,
           on_log_rows: Callable[[int], None] | None = None) -> ReplayReport:
    """Rebuild ``keyspace.table`` from its CDC log into the target table (same schema, created beforehand).

    With ``verify``, compare the rebuilt table with the source cell by cell
    (values, timestamps, TTLs) and list every difference.  ``on_log_rows(n)``
    is told each time ``n`` more log rows were replayed (progress reports).
    """
    log = cdc_log_of(source_db, keyspace, table)
    base = source_db.catalog.table(keyspace, table)
    target = target_db.catalog.table(target_keyspace or keyspace, target_table or table)
    report = ReplayReport()
    group: list[LogEntry] = []

    def flush() -> None:
        if not group:
            return
        b = _Builder(target, Mutation())
        for e in group:
            if e.operation in range(1, 9):
                b.add(e)
        b.flush()
        target_db.apply_mutation(b.mutation)
        report.groups += 1
        if on_log_rows is not None:
            on_log_rows(len(group))
        group.clear()

    for entry in read_log(source_db, log):
        report.log_rows += 1
        if group and (group[0].stream, group[0].time) != (entry.stream, entry.time):
            flush()
        group.append(entry)
    flush()
    if verify:
        report.differences = compare_tables(source_db, base, target_db, target)
    return report
