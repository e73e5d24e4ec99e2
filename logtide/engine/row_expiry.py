"""The expiration scan of ScyllaDB's per-row TTL (``schema/row_ttl.py``; ScyllaDB's ``alternator/ttl.cc``).

A background worker (``worker.Worker``) scans, once per *period* (``alternator_ttl_period_in_seconds``, the
``--alternator-ttl-period-in-seconds`` option of ``logtide serve``), every table that has a TTL column, and deletes
each live row whose TTL column holds an expiration time that has passed (and is not more than five years old, the
rule ScyllaDB keeps from DynamoDB).  ``bigint`` and ``int`` columns hold seconds since the epoch, ``timestamp``
columns milliseconds, truncated to whole seconds.

* The scan reads a chunk of partitions (token order) in a read snapshot, without the write lock: writes go on
  meanwhile.
* Each expired row is deleted by its own write through the normal write path (``engine.commit.commit_mutation``,
  the group committer): a row tombstone for a table with clustering columns, a partition tombstone for one
  without (as ScyllaDB's ``expire_item``), at a fresh write timestamp.  The CDC log records it as ScyllaDB's CDC
  does (operation -3 or -4 after the preimage, ``PartitionUpdate.service``); materialized views, secondary
  indexes and changefeeds follow as for any deletion.
* In that write transaction the row is read again and deleted only if it is still expired: a write that set
  the TTL column to a later time or to null, committed after the scan read the row, keeps the row (ScyllaDB
  deletes unconditionally and can lose that write, its issue SCYLLADB-2782).
* Nothing is kept between passes: a pass that a restart interrupts is simply made again, from the data, by the
  next server (the TTL column is part of the schema, the expiration times part of the rows).

``ExpirationStats`` counts passes, table scans and rows deleted (ScyllaDB's ``scylla_expiration_*`` metrics).
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..mutation.cells import Deletion, RowData
from ..mutation.model import Mutation
from ..query.read import column_bytes, stored_partition, stored_partitions
from ..schema.model import Table
from ..schema.row_ttl import expiration_seconds, is_expired
from ..storage.keys import clustering_key
from ..storage.sqlite import Txn
from ..worker import Worker
from .commit import commit_mutation

log = logging.getLogger("logtide.row_ttl")

DEFAULT_PERIOD = 24 * 3600.0  # ScyllaDB's default alternator_ttl_period_in_seconds (db/config.cc)
CHUNK = 100  # partitions read per snapshot


@dataclass
class ExpirationStats:
    """ScyllaDB's expiration counters (``alternator/ttl.cc`` ``expiration_stats``), read by the server's metrics."""

    scan_passes: int = 0  # passes over the database
    scan_table: int = 0  # table scans (each scan of each table with a TTL column)
    items_deleted: int = 0  # rows deleted after their expiration
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, passes: int = 0, tables: int = 0, deleted: int = 0) -> None:
        with self._lock:
            self.scan_passes += passes
            self.scan_table += tables
            self.items_deleted += deleted


def ttl_tables(catalog: Any) -> list[Table]:
    """The tables of ``catalog`` that have a TTL column (views never do)."""
    return [t for ks in catalog.keyspaces.values() for t in ks.tables.values()
            if t.ttl_column is not None and t.view is None]


def expired(table: Table, value: bytes | None, now_seconds: int) -> bool:
    """Whether a row whose TTL column holds ``value`` (serialized; None: null) has expired at ``now_seconds``."""
    if value is None or table.ttl_column is None:
        return False
    col = table.column(table.ttl_column)
    if col is None:
        return False
    type_name = col.type.cql()
    if type_name == "int":
        if len(value) != 4:
            return False
        number = struct.unpack(">i", value)[0]
    else:
        if len(value) != 8:
            return False
        number = struct.unpack(">q", value)[0]
    return is_expired(expiration_seconds(type_name, number), now_seconds)


@dataclass(frozen=True)
class Candidate:
    """A row the scan found expired: its table (store id), partition and clustering key."""

    store_id: int
    token: int
    pk: bytes
    key: tuple[bytes, ...]
    ck: bytes
    clustering: tuple[bytes, ...]


class RowExpiry:
    """The expiration scan of one database (module docstring): ``period`` seconds between the starts of passes."""

    def __init__(self, db: Any, period: float = DEFAULT_PERIOD, chunk: int = CHUNK) -> None:
        self.db = db
        self.period = period
        self.chunk = chunk
        self.stats = ExpirationStats()
        self._next_pass = 0.0  # time.monotonic() of the next pass's start
        self._paused = False
        self._work = Worker("logtide-row-expiry", self._step, self._idle, self._failed)

    def set_period(self, period: float) -> None:
        """Scan every ``period`` seconds (> 0) from now on."""
        if not period > 0:
            raise ValueError(f"the expiration scan period must be a positive number of seconds, got {period}")
        self.period = period
        self._next_pass = 0.0
        self._work.wake()

    def ensure_worker(self) -> None:
        """Start the worker when some table has a TTL column (a writer only)."""
        if not self.db.readonly and ttl_tables(self.db.catalog):
            self._work.start()

    def pause(self) -> None:
        """Leave the passes to :meth:`scan_pass` (tests); a pass under way ends first."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._work.wake()

    def close(self) -> None:
        self._work.stop()

    def _idle(self) -> float:
        return max(0.01, self._next_pass - time.monotonic())

    @staticmethod
    def _failed(e: Exception) -> None:
        log.error("the row TTL expiration scan failed, retried at the next period: %s", e)

    def _step(self) -> bool:
        if self._paused or time.monotonic() < self._next_pass:
            return False
        start = time.monotonic()
        self._next_pass = start + self.period
        self.scan_pass()
        took = time.monotonic() - start
        if took > self.period:
            log.warning("the row TTL expiration scan took %.1f s, longer than its period (%.1f s)", took, self.period)
        return False

    def scan_pass(self) -> int:
        """One pass over every table with a TTL column: the number of rows deleted."""
        deleted = 0
        for table in ttl_tables(self.db.catalog):
            if self._work.stopped:
                return deleted
            deleted += self.scan_table(table)
            self.stats.add(tables=1)
        self.stats.add(passes=1)
        return deleted

    def scan_table(self, table: Table) -> int:
        """Scan one table, a chunk of partitions per read snapshot, deleting each expired row: rows deleted."""
        deleted = 0
        after: tuple[int, bytes] | None = None
        while not self._work.stopped:
            with self.db.store.snapshot() as txn:
                found, after = self._chunk(txn, table, after)
            for c in found:
                if self._work.stopped:
                    break
                if self.expire(c):
                    deleted += 1
            if after is None:
                break
        return deleted

    def _chunk(self, txn: Txn, table: Table,
               after: tuple[int, bytes] | None) -> tuple[list[Candidate], tuple[int, bytes] | None]:
        """The expired rows of up to ``chunk`` partitions after ``after`` (token, key), and the last partition
        read (None: the table's end)."""
        now = self.db.now_seconds()
        col = table.column(table.ttl_column or "")
        if col is None:
            return [], None
        found: list[Candidate] = []
        count = 0
        last = None
        for part in stored_partitions(table, txn, now, None if after is None else after[0], True, None, True):
            if after is not None and (part.token, part.pk) <= after:
                continue
            if count >= self.chunk:
                return found, last
            for lr in part.rows(None, None):
                if expired(table, column_bytes(lr, col), now):
                    found.append(Candidate(table.store_id, part.token, part.pk, part.key, lr.ck, lr.clustering))
            last = (part.token, part.pk)
            count += 1
        return found, None

    def expire(self, c: Candidate) -> bool:
        """Delete one expired row in its own write, if it is still expired then: whether it was deleted."""
        db = self.db

        def work(txn: Txn) -> bool:
            table = next((t for t in ttl_tables(db.catalog) if t.store_id == c.store_id), None)
            if table is None:
                return False  # dropped, or its TTL column unset, since the scan read it
            col = table.column(table.ttl_column or "")
            now = db.now_seconds()
            part = stored_partition(table, txn, now, c.token, c.pk)
            if part is None or col is None:
                return False
            lo = c.ck if table.clustering_key else None
            hi = (c.ck + b"\x00") if table.clustering_key else None
            row = next((lr for lr in part.rows(lo, hi) if lr.ck == c.ck), None)
            if row is None or not expired(table, column_bytes(row, col), now):
                return False
            ts = db.timestamps.next()
            mutation = Mutation()
            pu = mutation.partition(table, c.key, c.pk, c.token)
            pu.service = True
            if table.clustering_key:
                pu.rows[c.ck] = RowData(c.clustering, deletion=Deletion(ts, now))
            else:
                pu.deletion = Deletion(ts, now)
            commit_mutation(db, mutation, txn, now)
            return True

        done = bool(db.committer.run(work))
        if done:
            self.stats.add(deleted=1)
        return done

