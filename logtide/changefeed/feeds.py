"""Changefeeds of an open Database: virtual timestamps, the storing of a write's records, the DDL hooks.

Spec ``004`` ("Guarantees", "Virtual timestamps").  Records are rendered and appended (:meth:`Feeds.store`,
write stage 3.8) inside the write transaction of the statement that made them, so a record exists if and
only if its write committed; their changes come from the pure derivations of ``changefeed.changes``, handed
the write's touched rows by the engine's capture stage.  Each statement (a batch is one) is one transaction
with its own virtual timestamp ``[step, txId]``: ``step`` is the commit time in milliseconds, never
decreasing; ``txId`` is unique and increasing.  Both are persisted (``meta``) with the records, so they keep
growing across restarts.  The background worker (barriers, retention, initial scans) is
``changefeed.background.FeedWork``, which :class:`Feeds` inherits.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Iterable

from ..ratelog import RateLimitedLog
from ..schema.model import Table
from ..storage.sqlite import Txn
from . import storage as S
from ..worker import Worker
from .background import BARRIERS_KEY, SCAN_CHUNK, FeedWork, ScanPosition
from .changes import FeedChange, WritePlan
from ..schema.changefeeds import DISABLED, ENABLED, INITIAL_SCAN, Changefeed, topic_path
from .json_format import JsonRecords
from .render import Rendered, RowChange, hash_partition, render, render_json
from .schema_changes import render_schema_change, schema_changed

# The changefeeds sit below the engine: they are given the database (``engine.database.Engine``), not its class.
Database = Any

CLOCK_KEY = "changefeed_clock"
TX_RESERVE = 4096  # txIds reserved per clock write
SEQ_RESERVE = 1 << 20  # sequence numbers reserved per clock write (a statement may write many records)


class Feeds(FeedWork):
    """The changefeeds of one Database: their clock, the storing of a write's records, the DDL hooks; the
    background work (barriers, retention, initial scans) comes from ``changefeed.background.FeedWork``."""

    def __init__(self, db: "Database") -> None:
        self.db = db
        self.changed = threading.Condition()
        self._version = 0  # bumped on every commit that may have written records
        with db.store.snapshot() as txn:
            clock = txn.get_meta(CLOCK_KEY)
            barriers = txn.get_meta(BARRIERS_KEY)
            try:
                scans = {fid: ScanPosition.from_doc(st) for fid, st in S.scan_states(txn).items()}
            except S.DamagedFeed as e:
                raise self.named(e) from None
        c = json.loads(clock) if clock else {}
        # the stored values are reservations: every txId and sequence number used is below them
        self._step = int(c.get("step", 0))
        self._tx = self._tx_limit = int(c.get("tx", 0))
        self._seq = self._seq_limit = int(c.get("seq", 0))
        self._barriers: dict[int, int] = {int(k): v for k, v in (json.loads(barriers) if barriers else {}).items()}
        self.scans: dict[int, ScanPosition] = scans
        self._paused = False
        self._work = Worker("logtide-changefeeds", self._pass, lambda: self.tick_every, self._failed)
        self._last_retention = 0.0
        self.retention_every = 1.0  # seconds between retention passes
        self.tick_every = 0.05  # seconds between barrier checks
        self.scan_chunk = SCAN_CHUNK
        # next offset per (feed, partition), known once read: valid while every append goes through it and
        # cleared when a group commit fails (a statement's own appends are adopted only when it completes)
        self._offsets: dict[tuple[int, int], int] = {}
        self._json: dict[int, JsonRecords] = {}  # compiled JSON renderers by feed id (of the table they were made for)
        self._plans: dict[int, WritePlan] = {}  # by store id (of the table they were made for)
        # by store id: (catalog, the table a statement resolved, its WritePlan as of that catalog or None)
        self._resolved: dict[int, tuple[Any, Table, WritePlan | None]] = {}
        # damaged changefeed records met by the background worker: one line a minute per partition and task
        self._damage_log = RateLimitedLog(logging.getLogger("logtide.changefeed"))

    # -- catalog views ---------------------------------------------------------------------
    def all(self) -> list[tuple[Table, Changefeed]]:
        """Every changefeed with its table, in path order."""
        out = []
        for ks in self.db.catalog.keyspaces.values():
            for t in ks.tables.values():
                out.extend((t, f) for f in t.changefeeds)
        out.sort(key=lambda tf: topic_path(tf[0].keyspace, tf[0].name, tf[1].name))
        return out

    def named(self, e: "S.DamagedFeed") -> "S.DamagedFeed":
        """``e`` naming its changefeed by path (as the catalog has it now; by id when it is gone)."""
        for t, f in self.all():
            if f.feed_id == e.feed_id:
                return e.at(topic_path(t.keyspace, t.name, f.name))
        return e

    def state(self, feed: Changefeed) -> str:
        """DISABLED, INITIAL_SCAN or ENABLED."""
        if feed.disabled:
            return DISABLED
        pos = self.scans.get(feed.feed_id)
        return INITIAL_SCAN if pos is not None and not pos.done else ENABLED

    # -- virtual timestamps -----------------------------------------------------------------
    def now_ms(self) -> int:
        return self.db.clock.now_micros() // 1000

    def next_vts(self) -> tuple[int, int]:
        """A new virtual timestamp ``(step, txId)`` (persist it with :meth:`save_clock` in the same transaction)."""
        self._step = max(self._step, self.now_ms())
        self._tx += 1
        return self._step, self._tx

    def next_seq(self) -> int:
        """A new record sequence number (DynamoDB's SequenceNumber), unique and increasing."""
        self._seq += 1
        return self._seq

    def sequence(self) -> int:
        """The last record sequence number taken: every record takes one, so the difference over a write is the
        number of records it appended (a traced write reports it)."""
        return self._seq

    def save_clock(self, txn: Txn, force: bool = False) -> None:
        """Persist the clock when it nears its stored reservation (or with ``force``): txIds and sequence numbers
        are reserved ahead, so most transactions write nothing here and a restart still never reuses one."""
        if not force and self._tx < self._tx_limit and self._seq < self._seq_limit:
            return
        self._tx_limit = self._tx + TX_RESERVE
        self._seq_limit = self._seq + SEQ_RESERVE
        txn.put_meta(CLOCK_KEY, b'{"step":%d,"tx":%d,"seq":%d}' % (self._step, self._tx_limit, self._seq_limit))

    # -- the write path ----------------------------------------------------------------------
    def current_table(self, table: Table) -> Table | None:
        """The table as the catalog has it now, under the write lock (None if it was dropped meanwhile).

        A statement resolves its table before it waits for the write lock, so an ALTER TABLE (a column, or a
        changefeed added or dropped) may commit in between.  Its records must follow the schema and the feeds
        as of its own commit, which comes after the ALTER's: after its schema-change record, and in every feed
        that exists then (none that was dropped).
        """
        t = self.db.catalog.find_table(table.keyspace, table.name)
        return t if t is not None and t.store_id == table.store_id else None

    def write_plan(self, table: Table, catalog: Any) -> "WritePlan | None":
        """The :class:`WritePlan` of the table a statement resolved, as the catalog has it now (None: no active
        changefeed, or dropped meanwhile); kept while the catalog and the statement's table stay the same objects
        (the catalog is immutable: every DDL statement makes a new one)."""
        hit = self._resolved.get(table.store_id)
        if hit is not None and hit[0] is catalog and hit[1] is table:
            return hit[2]
        t = self.current_table(table)
        wp = None
        if t is not None and any(not f.disabled for f in t.changefeeds):
            wp = self._plans.get(t.store_id)
            if wp is None or wp.table is not t:
                wp = self._plans[t.store_id] = WritePlan.of(t, self._json_records)
        self._resolved[table.store_id] = (catalog, table, wp)
        return wp

    def scanned(self, table: Table) -> bool:
        """Whether no changefeed of ``table`` is still in its initial scan."""
        scans = self.scans
        return all(scans.get(f.feed_id) is None or scans[f.feed_id].done for f in table.changefeeds)

    def store(self, txn: Txn, changes: list[tuple["WritePlan", Any, bool]]) -> None:
        """Append, in the write's transaction, the records of its changes to each active changefeed of their
        tables, under one new virtual timestamp: ``changes`` holds (plan, changes, direct) for each partition
        update, the changes of ``changefeed.changes.row_values`` (``direct``) or ``partition_changes``."""
        if not any([c for _, c, _ in changes]):
            return
        step, tx = self.next_vts()
        next_offsets = dict(self._offsets)
        try:
            for wp, fcs, fast in changes:
                if fast:
                    self._append_rows(txn, wp, fcs, step, tx, next_offsets)
                else:
                    for feed in wp.feeds:
                        self._append(txn, wp.table, feed, fcs, step, tx, next_offsets)
        except S.DamagedFeed as e:  # the last record of a partition written to does not verify: the write fails
            raise self.named(e) from None
        self.save_clock(txn)
        self._offsets = next_offsets

    def _append_rows(self, txn: Txn, wp: "WritePlan", rows: list[tuple], step: int, tx: int,
                     next_offsets: dict) -> None:
        """The records of a statement's row changes (``changefeed.changes.row_values``) in each JSON changefeed of the table:
        the bytes :meth:`_append` writes for the same changes."""
        for feed, jr, parts in wp.json_feeds:
            if len(rows) == 1 and parts == 1:  # the common case: one row, one partition
                self._seq += 1  # every record takes a sequence number (next_seq), whatever its format
                erase, key, old, new = rows[0]
                S.append_one(txn, feed.feed_id, 0, step, jr.row_record(erase, key, old, new, step, tx)[1].encode(),
                             next_offsets)
                continue
            by_part: dict[int, list[tuple[bytes | None, bytes]]] = {}
            for erase, key, old, new in rows:
                self._seq += 1
                key_json, text = jr.row_record(erase, key, old, new, step, tx)
                by_part.setdefault(hash_partition(key_json, parts), []).append((None, text.encode()))
            for part, items in by_part.items():
                S.append(txn, feed.feed_id, part, step, items, next_offsets)

    def forget_offsets(self) -> None:
        """A commit failed: what this process cached about offsets (and the clock's reservation) may be ahead of
        storage."""
        self._offsets = {}
        self._tx_limit = self._seq_limit = 0  # the next transaction writes the reservation again

    def renderer(self, table: Table, feed: Changefeed) -> Callable[[RowChange, int, int, int, int], Rendered]:
        """``render`` for one changefeed of ``table``: JSON records through a compiled :class:`JsonRecords`, kept
        while the table and the options stay the same objects (a schema change makes new ones)."""
        opts = feed.options
        if opts.format != "JSON":
            return lambda change, step, tx, wt, seq: render(table, opts, change, step, tx, wt, seq)
        jr = self._json_records(table, feed)
        return lambda change, step, tx, wt, seq: render_json(jr, change, step, tx)

    def _json_records(self, table: Table, feed: Changefeed) -> JsonRecords:
        jr = self._json.get(feed.feed_id)
        if jr is None or jr.table is not table or jr.opts is not feed.options:
            jr = self._json[feed.feed_id] = JsonRecords(table, feed.options)
        return jr

    def _append(self, txn: Txn, table: Table, feed: Changefeed, fcs: list[FeedChange], step: int, tx: int,
                next_offsets: dict) -> None:
        rend = self.renderer(table, feed)
        pos = self.scans.get(feed.feed_id)
        if pos is None and len(fcs) == 1:  # the common case: one row, one record
            r = rend(fcs[0].change, step, tx, step, self.next_seq())
            S.append(txn, feed.feed_id, r.partition, step, ((r.key, r.value),), next_offsets)
            return
        by_part: dict[int, list[tuple[bytes | None, bytes]]] = {}
        for fc in fcs:
            if pos is not None and not pos.reached(fc.token, fc.pk):
                if S.mark(txn, feed.feed_id, fc.token, fc.pk, fc.ck) and fc.before is not None:
                    src = RowChange("update", fc.change.key, None, fc.before, fc.before, snapshot=True)
                    r = rend(src, feed.snapshot[0], feed.snapshot[1], step, self.next_seq())
                    by_part.setdefault(r.partition, []).append((r.key, r.value))
            r = rend(fc.change, step, tx, step, self.next_seq())
            by_part.setdefault(r.partition, []).append((r.key, r.value))
        for part, items in by_part.items():
            S.append(txn, feed.feed_id, part, step, items, next_offsets)

    def notify(self) -> None:
        """Wake waiting readers (called after every commit)."""
        with self.changed:
            self._version += 1
            self.changed.notify_all()

    # -- DDL hooks ---------------------------------------------------------------------------
    def created(self, txn: Txn, table: Table, feed: Changefeed) -> None:
        """A changefeed was added (inside the DDL transaction): start its initial scan if asked for."""
        if feed.options.initial_scan:
            total = sum(1 for _ in txn.partitions(table.store_id))
            pos = ScanPosition(total=total, done=total == 0)
            S.put_scan_state(txn, feed.feed_id, pos.to_doc())
            self.scans[feed.feed_id] = pos
        self.ensure_worker()

    def altered(self, txn: Txn, old: Any, new: Any) -> bool:
        """A DDL statement changed the catalog from ``old`` to ``new`` (inside its transaction): write a
        schema-change record into every partition of each active SCHEMA_CHANGES changefeed of every table whose
        columns changed.  All such records of one statement share one virtual timestamp, whose txId is also the
        record's ``schemaVersion``.  True if any was written (then call :meth:`notify` after the commit)."""
        todo = []
        for ks in new.keyspaces.values():
            for t in ks.tables.values():
                feeds = [f for f in t.changefeeds if f.options.schema_changes and not f.disabled]
                before = old.find_table(ks.name, t.name) if feeds else None
                if before is not None and schema_changed(before, t):
                    todo.append((t, feeds))
        if not todo:
            return False
        step, tx = self.next_vts()
        self._offsets = {}  # re-read from storage after this DDL transaction, whether it commits or not
        nxt: dict = {}
        for t, feeds in todo:
            for f in feeds:
                value = render_schema_change(t, f.options, tx, step, tx)
                try:
                    for part in range(f.options.partitions):
                        S.append(txn, f.feed_id, part, step, [(None, value)], nxt)
                except S.DamagedFeed as e:
                    raise e.at(topic_path(t.keyspace, t.name, f.name)) from None
        self.save_clock(txn, force=True)
        return True

    def snapshot_vts(self, txn: Txn) -> tuple[int, int]:
        """The virtual timestamp of a changefeed's creation (its initial scan's snapshot)."""
        vts = self.next_vts()
        self.save_clock(txn, force=True)
        return vts

    def dropped(self, txn: Txn, feed_ids: Iterable[int]) -> None:
        """Changefeeds were dropped (with their table or alone): their records and consumers go too."""
        self._offsets = {}
        for fid in feed_ids:
            S.drop_feed(txn, fid)
            self._json.pop(fid, None)
            self.scans.pop(fid, None)
            self._barriers.pop(fid, None)
