"""Background work of the changefeeds (spec ``004``, "Initial table scan", "Record retention period", barriers):
a worker thread writes barriers, deletes expired records and runs initial scans.

The worker is started when the first changefeed exists, woken when one is added, stopped on close; tests drive
it step by step with :meth:`FeedWork.tick` and :meth:`FeedWork.scan_step` after :meth:`FeedWork.pause`.  A scan
still running when the database closes goes on where it stopped in the next process that opens the directory
for writing; a short-lived writer (``logtide shell``) runs it to its end first with :meth:`FeedWork.finish_scans`.

:class:`FeedWork` is the part of ``changefeed.feeds.Feeds`` (which inherits it) that is not on a write's path:
one class split for size, by what runs in the background; it uses the clock, offsets and renderers ``Feeds``
keeps.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import CorruptRecord
from ..query.read import stored_partitions
from ..schema.changefeeds import ENABLED, INITIAL_SCAN, Changefeed, topic_path
from ..schema.model import Table
from ..storage.sqlite import Txn
from . import storage as S
from .changes import row_key
from .render import RowChange, image, render_barrier

log = logging.getLogger("logtide.changefeed")

BARRIERS_KEY = "changefeed_barriers"
SCAN_CHUNK = 64  # partitions per initial-scan transaction


@dataclass
class ScanPosition:
    """How far an initial scan got: the last partition fully exported, in (token, pk) order."""

    token: int | None = None
    pk: bytes = b""
    done: bool = False
    scanned: int = 0
    total: int = 0

    def reached(self, token: int, pk: bytes) -> bool:
        """Whether the scan already exported this partition."""
        return self.done or (self.token is not None and (token, pk) <= (self.token, self.pk))

    def to_doc(self) -> dict:
        return {"token": self.token, "pk": self.pk.hex(), "done": self.done, "scanned": self.scanned,
                "total": self.total}

    @classmethod
    def from_doc(cls, d: dict) -> "ScanPosition":
        return cls(d.get("token"), bytes.fromhex(d.get("pk", "")), bool(d.get("done")), int(d.get("scanned", 0)),
                   int(d.get("total", 0)))


class FeedWork:
    """Barriers, retention and initial scans of the changefeeds of one database (mixed into ``Feeds``)."""

    db: Any
    scans: dict[int, ScanPosition]

    # -- the worker ---------------------------------------------------------------------
    def ensure_worker(self) -> None:
        """Start the background worker (barriers, retention, initial scans) if changefeeds exist; wake it if it
        runs (a changefeed just added starts its initial scan at once, not at the worker's next tick)."""
        if self._work.started or self.all():
            self._work.start()

    def pause(self) -> None:
        """Stop the background worker from running initial scans (tests step them with :meth:`scan_step`)."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._work.wake()

    def close(self) -> None:
        self._work.stop()
        with self.changed:
            self.changed.notify_all()
        for table, feed, pos in ([] if self.db.readonly else self.scanning()):
            log.info("initial scan of %s stopped at %d of %d partitions; it goes on when the data directory is next "
                     "opened for writing (logtide serve, logtide shell)",
                     topic_path(table.keyspace, table.name, feed.name), pos.scanned, pos.total)

    def scanning(self) -> list[tuple[Table, Changefeed, ScanPosition]]:
        """The changefeeds still in their initial scan, with how far each got."""
        return [(t, f, self.scans[f.feed_id]) for t, f in self.all() if self.state(f) == INITIAL_SCAN]

    def finish_scans(self, advanced: Callable[[Table, Changefeed, ScanPosition], None] | None = None) -> None:
        """Run every initial scan still in progress to its end in the calling thread, one chunk (one transaction)
        at a time, calling ``advanced(table, feed, position)`` after each: what a short-lived writer does before
        it closes the database.  Interrupting it (KeyboardInterrupt) loses nothing: each chunk commits whole, and
        the rest is scanned by the next writer."""
        paused, self._paused = self._paused, True  # the worker leaves the scans to this thread
        try:
            while True:
                todo = self.scanning()
                if not todo:
                    return
                table, feed, _ = todo[0]
                self.scan_step()
                if advanced is not None:
                    pos = self.scans.get(feed.feed_id)
                    if pos is not None:
                        advanced(table, feed, pos)
        finally:
            self._paused = paused
            self._work.wake()

    def _pass(self) -> bool:
        """One pass of the worker (``worker.Worker``): a chunk of an initial scan unless paused, then the barriers
        due and, once every ``retention_every`` seconds, retention; whether a scan chunk ran."""
        import time
        busy = self.scan_step(unless_paused=True)
        self.tick(retention=time.monotonic() - self._last_retention >= self.retention_every)
        return busy

    def _failed(self, e: Exception) -> None:
        """A failed pass is retried on the next one; an initial scan that met damage waits, and says so."""
        if isinstance(e, CorruptRecord):
            self._damage_log.log(logging.ERROR, f"scan {getattr(e, 'feed_id', '')}",
                                 "changefeed initial scan stopped: %s", e)

    def tick(self, retention: bool = True) -> None:
        """Write due barriers in every partition and, with ``retention``, delete expired records."""
        import time
        feeds = [(t, f) for t, f in self.all() if not f.disabled]
        if retention:
            self._last_retention = time.monotonic()
            retention = self._anything_expired(feeds)
        if not feeds or not (retention or self._barrier_due(feeds)):
            return  # nothing to write: no write transaction (and no fsync)

        def work(txn: Txn) -> None:  # under the write lock: no record can be written meanwhile
            feeds = [(t, f) for t, f in self.all() if not f.disabled]  # as of now (a feed may have been dropped)
            now = self.now_ms()
            wrote = False
            nxt = dict(self._offsets)
            for _, f in feeds:
                iv = f.options.barriers_interval_ms
                if not iv or self.state(f) != ENABLED:
                    continue
                b = iv * (now // iv)
                if b <= self._barriers.get(f.feed_id, 0) or b <= f.created_ms:
                    continue
                try:  # every partition's last record verified before any barrier is written
                    for part in range(f.options.partitions):
                        if (f.feed_id, part) not in nxt:
                            nxt[(f.feed_id, part)] = S.next_offset(txn, f.feed_id, part)
                except S.DamagedFeed as e:
                    self._damaged(e, "barriers")
                    self._barriers[f.feed_id] = b  # not written: tried again at the next interval, not every tick
                    continue
                # every later record gets a step >= b and a txId > 0: nothing smaller than [b, 0] can follow
                self._step = max(self._step, b)
                for part in range(f.options.partitions):
                    S.append(txn, f.feed_id, part, max(b, self._step), [(None, render_barrier(b))], nxt)
                self._barriers[f.feed_id] = b
                wrote = True
            if wrote:
                self._offsets = nxt
                self.save_clock(txn, force=True)
                txn.put_meta(BARRIERS_KEY, json.dumps({str(k): v for k, v in self._barriers.items()}).encode())
            if retention:
                for _, f in feeds:
                    cutoff = now - f.options.retention_seconds * 1000
                    for part in range(f.options.partitions):
                        try:  # reads only, then deletes: a damaged record stops this partition's retention
                            S.expire(txn, f.feed_id, part, cutoff, S.important_floor(txn, f.feed_id, part))
                        except S.DamagedFeed as e:
                            self._damaged(e, "retention")
        self.db.committer.run(work)

    def _damaged(self, e: "S.DamagedFeed", task: str) -> None:
        """Background work (barriers, retention) skipped a partition whose records do not verify: logged once a
        minute; the damaged record stays for readers and ``logtide check`` to report."""
        self._damage_log.log(logging.ERROR, f"{task} {e.feed_id}/{e.partition}", "changefeed %s skipped: %s", task,
                             self.named(e))

    def _barrier_due(self, feeds: list[tuple[Table, Changefeed]]) -> bool:
        now = self.now_ms()
        for _, f in feeds:
            iv = f.options.barriers_interval_ms
            if iv and iv * (now // iv) > max(self._barriers.get(f.feed_id, 0), f.created_ms) \
                    and self.state(f) == ENABLED:
                return True
        return False

    def _anything_expired(self, feeds: list[tuple[Table, Changefeed]]) -> bool:
        """Whether some partition's first record is older than its retention (read from a snapshot)."""
        now = self.now_ms()
        with self.db.store.snapshot() as txn:
            for _, f in feeds:
                cutoff = now - f.options.retention_seconds * 1000
                for part in range(f.options.partitions):
                    r = txn.sql("SELECT write_time_ms FROM feed_records WHERE feed_id = ? AND part = ? "
                                "ORDER BY offset LIMIT 1", (f.feed_id, part))
                    if r and r[0][0] < cutoff:
                        return True
        return False

    # -- initial scan ------------------------------------------------------------------------
    def scan_step(self, partitions: int | None = None, unless_paused: bool = False) -> bool:
        """Export up to ``partitions`` (default ``scan_chunk``) more partitions of one scanning changefeed in one
        transaction; False if none is scanning (or, with ``unless_paused``, as the worker calls it, if the scans
        are paused: checked under the lock, so a pause made before a scan began is never overtaken)."""
        partitions = partitions or self.scan_chunk
        with self.db.write_lock:  # chosen under the lock: another thread may finish or drop a scan meanwhile
            if unless_paused and self._paused:
                return False
            todo = [(t, f) for t, f in self.all() if self.state(f) == INITIAL_SCAN]
            if not todo:
                return False
            table, feed = todo[0]
            pos = self.scans[feed.feed_id]
            saved = ScanPosition(**vars(pos))
            try:
                self.db.committer.run(lambda txn: self._scan_chunk(txn, table, feed, pos, partitions))
            except S.DamagedFeed as e:
                self.scans[feed.feed_id] = saved
                raise e.at(topic_path(table.keyspace, table.name, feed.name)) from None
            except BaseException:
                self.scans[feed.feed_id] = saved
                raise
        return True

    def _scan_chunk(self, txn: Txn, table: Table, feed: Changefeed, pos: ScanPosition, limit: int) -> None:
        now = self.db.now_seconds()
        step, tx = feed.snapshot
        wt = max(self._step, self.now_ms())
        count = 0
        done = True
        nxt = dict(self._offsets)
        lo = pos.token
        regular = [c.name for c in table.regular_columns]
        statics = [c.name for c in table.static_columns]
        for view in stored_partitions(table, txn, now, lo, True, None, True):
            if pos.reached(view.token, view.pk):
                continue
            if count >= limit:
                done = False
                break
            skip = S.marks(txn, feed.feed_id, view.token, view.pk)
            by_part: dict[int, list[tuple[bytes | None, bytes]]] = {}
            rows = []
            st = view.static_row() if table.clustering_key else None
            if st is not None and b"" not in skip:
                rows.append((row_key(table, view.key, None), image(table, st, statics)))
            for lr in view.rows(None, None):
                if lr.ck not in skip:
                    rows.append((row_key(table, view.key, lr.clustering), image(table, lr, regular)))
            rend = self.renderer(table, feed)
            for key, img in rows:
                r = rend(RowChange("update", key, None, img, img, snapshot=True), step, tx, wt, self.next_seq())
                by_part.setdefault(r.partition, []).append((r.key, r.value))
            for part, items in by_part.items():
                S.append(txn, feed.feed_id, part, wt, items, nxt)
            S.clear_marks(txn, feed.feed_id, view.token, view.pk)
            pos.token, pos.pk = view.token, view.pk
            pos.scanned += 1
            count += 1
        if done:
            pos.done = True
            txn.sql("DELETE FROM feed_scan_marks WHERE feed_id = ?", (feed.feed_id,))
        pos.total = max(pos.total, pos.scanned)
        S.put_scan_state(txn, feed.feed_id, pos.to_doc())
        self.save_clock(txn)
        self._offsets = nxt
