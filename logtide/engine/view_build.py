"""Building a materialized view or a secondary index over the rows its base table already has, in the background
(ScyllaDB's view builder, ``db/view/view_builder``; ScyllaDB builds an index as the view underneath it).

``CREATE MATERIALIZED VIEW`` or ``CREATE INDEX`` on a base table with rows records a build in the catalog's commit
(meta key ``view_build:<view or index store id>``); ``CREATE INDEX`` also builds the first chunk in that commit, so
an index on a small table is built when the statement returns.  A worker (``worker.Worker``) then walks the base
table's partitions in token order, a chunk of partitions per write transaction (under the write lock, as any
write), writing each live row's view row or index entries and the position reached in the same transaction.  The
server keeps serving meanwhile: a base write maintains the view and the index entries as usual
(``engine/views.py``, ``engine/indexes.py``), and a view row or an entry is keyed by its base row, so the builder
writing it again from the base row as it is then gives the same row or entry: every base row ends up in the view
(the index) exactly once, whether a write or the builder got there first.  A build interrupted (stop, crash) goes
on from its last committed chunk when the data directory is next opened for writing; a short-lived writer
(``logtide shell``) finishes it first (:meth:`ViewBuilds.finish`).  The position shows in
``system.views_builds_in_progress`` and ``system_distributed.view_build_status`` (``STARTED``, then ``SUCCESS``);
an index is in ``system."IndexInfo"`` and ``system.built_views`` once built, and SELECT does not read through it
before (``query.index_lookup.choose``).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable

from ..schema.catalog import Catalog
from ..schema.indexes import SecondaryIndex
from ..schema.model import Table
from ..storage.sqlite import Txn
from ..worker import Worker
from .indexes import put_entries, row_entries
from .views import view_row, write_view_row

log = logging.getLogger("logtide.views")

PREFIX = "view_build:"
START: dict[str, Any] = {"token": None, "pk": None, "built": 0}


def start_builds(txn: Txn, old: Catalog, new: Catalog, now: int, chunk: int = 100) -> bool:
    """In a DDL's transaction: a build for each view and index it created whose base table has partitions (an
    index's first ``chunk`` partitions built at once, in this transaction); whether a build is left to run."""
    started = False
    before = {ix.store_id for ks in old.keyspaces.values() for t in ks.tables.values() for ix in t.indexes}
    for views in new.views_by_base.values():
        for view, _ in views:
            earlier = old.find_table(view.keyspace, view.name)
            if earlier is not None and earlier.id == view.id:
                continue
            base = new.find_table(view.keyspace, view.view.base_table)
            if next(iter(txn.partitions(base.store_id)), None) is None:
                continue  # nothing to build: the view is complete as created
            txn.put_meta(PREFIX + str(view.store_id), json.dumps(START).encode())
            started = True
    for ks in new.keyspaces.values():
        for table in ks.tables.values():
            for ix in table.indexes:
                if ix.store_id in before or next(iter(txn.partitions(table.store_id)), None) is None:
                    continue
                pos = build_chunk(txn, new, ix.store_id, dict(START), now, chunk)
                if pos is not None:
                    txn.put_meta(PREFIX + str(ix.store_id), json.dumps(pos).encode())
                    started = True
    return started


def build_target(catalog: Catalog, sid: int) -> tuple[Table, Table | SecondaryIndex] | None:
    """The base table and the view or index of store id ``sid`` (None: dropped)."""
    for ks in catalog.keyspaces.values():
        for t in ks.tables.values():
            if t.store_id == sid and t.view is not None:
                base = catalog.find_table(t.keyspace, t.view.base_table)
                return (base, t) if base is not None else None
            for ix in t.indexes:
                if ix.store_id == sid:
                    return t, ix
    return None


def build_chunk(txn: Txn, catalog: Catalog, sid: int, pos: dict[str, Any], now: int,
                chunk: int) -> dict[str, Any] | None:
    """Build up to ``chunk`` base partitions after ``pos`` of the view or index ``sid``: the position reached,
    or None when the build is over (or the view or index was dropped)."""
    from ..query.read import stored_partitions

    found = build_target(catalog, sid)
    if found is None:
        return None
    base, target = found
    if isinstance(target, Table):
        accepts = next(f for v, f in catalog.views_by_base[base.store_id] if v.store_id == sid)
    pos = dict(pos)
    count = 0
    reached = (pos["token"], bytes.fromhex(pos["pk"])) if pos["token"] is not None else None
    for part in stored_partitions(base, txn, now, pos["token"], True, None, True):
        if reached is not None and (part.token, part.pk) <= reached:
            continue
        if count >= chunk:
            return pos
        if isinstance(target, Table):
            for lr in part.rows(None, None):
                vr = view_row(target, accepts, base, lr)
                if vr is not None:
                    write_view_row(txn, target, vr)
        else:
            static = part.static_row()
            for lr in [*part.rows(None, None), *([static] if static is not None else [])]:
                put_entries(txn, target, set(), row_entries(base, target, part.token, part.pk, lr.ck, lr))
        pos["token"], pos["pk"] = part.token, part.pk.hex()
        pos["built"] = pos.get("built", 0) + 1
        count += 1
    return None


class ViewBuilds:
    """The builds in progress of one database (views and indexes), and the worker that runs them (``chunk``
    partitions a step)."""

    def __init__(self, db: Any, chunk: int = 100) -> None:
        self.db = db
        self.chunk = chunk
        self._paused = False
        self._stepping = threading.Lock()
        self._work = Worker("logtide-view-builds", self._pass, lambda: 1.0, self._failed)
        self._progress: dict[int, dict[str, Any]] = {}
        self._read()

    def progress(self) -> dict[int, str | None]:
        """Each view or index being built (store id) with the last base token built (text; None before the
        first chunk)."""
        return {sid: (None if p["token"] is None else str(p["token"])) for sid, p in dict(self._progress).items()}

    def building(self) -> frozenset[int]:
        """The store ids of the views and indexes being built."""
        return frozenset(self._progress)

    def _read(self) -> None:
        with self.db.store.snapshot() as txn:
            for (key,) in txn.sql("SELECT key FROM meta WHERE key >= ? AND key < ?", (PREFIX, PREFIX[:-1] + ";")):
                value = txn.get_meta(key)
                if value is not None:
                    self._progress.setdefault(int(key[len(PREFIX):]), json.loads(value.decode()))

    def started(self) -> None:
        """A DDL recorded new builds: read them and wake the worker."""
        self._read()
        self.ensure_worker()

    def ensure_worker(self) -> None:
        if not self.db.readonly and self._progress:
            self._work.start()

    def pause(self) -> None:
        """Leave the builds to :meth:`step` (tests)."""
        self._paused = True

    def resume(self) -> None:
        """Let the worker run the builds again."""
        self._paused = False
        self.ensure_worker()

    def close(self) -> None:
        """Stop the worker (a build in progress goes on when the data directory is next opened for writing)."""
        self._work.stop()
        for sid, pos in ([] if self.db.readonly else sorted(self._progress.items())):
            log.info("the build of %s stopped after %d partitions; it goes on when the data directory is next "
                     "opened for writing (logtide serve, logtide shell)", self.describe(sid), pos.get("built", 0))

    def describe(self, sid: int) -> str:
        """What build ``sid`` builds: ``materialized view ks.v`` or ``secondary index ks.i``."""
        found = build_target(self.db.catalog, sid)
        if found is None:
            return f"view {sid}"
        base, target = found
        if isinstance(target, Table):
            return f"materialized view {target.keyspace}.{target.name}"
        return f"secondary index {base.keyspace}.{target.name}"

    def finish(self, advanced: Callable[[int, int], None] | None = None) -> None:
        """Run every build in progress to its end in the calling thread, one chunk (one transaction) at a time,
        calling ``advanced(store id, partitions built)`` after each: what a short-lived writer does before it
        closes the database.  Interrupting it (KeyboardInterrupt) loses nothing: each chunk commits whole."""
        paused, self._paused = self._paused, True  # the worker leaves the builds to this thread
        try:
            while self._progress:
                sid = min(self._progress)
                self.step()
                if advanced is not None:
                    advanced(sid, self._progress.get(sid, {}).get("built", -1))
        finally:
            self._paused = paused
            self._work.wake()

    def _pass(self) -> bool:
        return not self._paused and self.step()

    @staticmethod
    def _failed(e: Exception) -> None:
        log.error("a materialized view or index build stopped, retried in 1 s: %s", e)

    def step(self) -> bool:
        """Build up to ``chunk`` more base partitions of one view or index in one transaction; False if nothing
        is left.  One step at a time (the worker's, or :meth:`finish`'s in a short-lived writer)."""
        with self._stepping:
            if not self._progress:
                return False
            sid = min(self._progress)
            with self.db.write_lock:
                pos = self.db.committer.run(lambda txn: self._chunk(txn, sid))
            if pos is None:
                self._progress.pop(sid, None)
            else:
                self._progress[sid] = pos  # committed: the next chunk starts after it
            return True

    def _chunk(self, txn: Txn, sid: int) -> dict[str, Any] | None:
        """One chunk of build ``sid``, its position saved: the position reached, or None when it is over."""
        key = PREFIX + str(sid)
        pos = build_chunk(txn, self.db.catalog, sid, self._progress[sid], self.db.now_seconds(), self.chunk)
        if pos is None:
            txn.sql("DELETE FROM meta WHERE key = ?", (key,))
        else:
            txn.put_meta(key, json.dumps(pos).encode())
        return pos
