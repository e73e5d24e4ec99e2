"""Building a materialized view over the rows its base table already has, in the background (ScyllaDB's view
builder, ``db/view/view_builder``).

``CREATE MATERIALIZED VIEW`` on a base table with rows records a build in the catalog's commit (meta key
``view_build:<view store id>``); a worker thread then walks the base table's partitions in token order, a chunk
of partitions per write transaction (under the write lock, as any write), writing each live row's view row and
the position reached in the same transaction.  The server keeps serving meanwhile: a base write maintains the
view as usual (``engine/views.py``), and a view row is keyed by its base row, so the builder writing the row again
from the base row as it is then gives the same row: every base row ends up in the view exactly once, whether a
write or the builder got there first.  A build interrupted (stop, crash) goes on from its last committed chunk
when the data directory is next opened for writing.  The position shows in ``system.views_builds_in_progress``
and ``system_distributed.view_build_status`` (``STARTED``, then ``SUCCESS``).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from ..storage.sqlite import Txn
from .views import view_row, write_view_row

log = logging.getLogger("logtide.views")

PREFIX = "view_build:"


def start_builds(txn: Txn, old: Any, new: Any) -> bool:
    """In a DDL's transaction: a build for each view it created whose base table has partitions; whether any."""
    started = False
    for views in new.views_by_base.values():
        for view, _ in views:
            before = old.find_table(view.keyspace, view.name)
            if before is not None and before.id == view.id:
                continue
            base = new.find_table(view.keyspace, view.view.base_table)
            if next(iter(txn.partitions(base.store_id)), None) is None:
                continue  # nothing to build: the view is complete as created
            txn.put_meta(PREFIX + str(view.store_id), json.dumps({"token": None, "pk": None}).encode())
            started = True
    return started


class ViewBuilds:
    """The builds in progress of one database, and the thread that runs them (``chunk`` partitions a step)."""

    def __init__(self, db: Any, chunk: int = 100) -> None:
        self.db = db
        self.chunk = chunk
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._paused = False
        self._worker: threading.Thread | None = None
        self._progress: dict[int, dict[str, Any]] = {}
        self._read()

    def progress(self) -> dict[int, str | None]:
        """Each view being built (store id) with the last base token built (text; None before the first chunk)."""
        return {sid: (None if p["token"] is None else str(p["token"])) for sid, p in dict(self._progress).items()}

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
        if self.db.readonly or not self._progress or self._stop.is_set():
            return
        if self._worker is None:
            self._worker = threading.Thread(target=self._run, name="logtide-view-builds", daemon=True)
            self._worker.start()
        self._wake.set()

    def pause(self) -> None:
        """Leave the builds to :meth:`step` (tests)."""
        self._paused = True

    def close(self) -> None:
        """Stop the worker (a build in progress goes on when the data directory is next opened for writing)."""
        self._stop.set()
        self._wake.set()
        w = self._worker
        if w is not None and w is not threading.current_thread():
            w.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            busy = False
            if not self._paused:
                try:
                    busy = self.step()
                except Exception as e:  # noqa: BLE001 - retried on the next pass; the server keeps serving
                    if self._stop.is_set():
                        return
                    log.error("materialized view build stopped, retried in 1 s: %s", e)
            if not busy:
                self._wake.wait(1.0)
                self._wake.clear()

    def step(self) -> bool:
        """Build up to ``chunk`` more base partitions of one view in one transaction; False if nothing is left."""
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
        """One chunk of view ``sid``'s build: the position reached, or None when the build is over."""
        from ..query.read import stored_partitions

        key = PREFIX + str(sid)
        view = next((t for ks in self.db.catalog.keyspaces.values() for t in ks.tables.values()
                     if t.store_id == sid and t.view is not None), None)
        if view is None:  # dropped while building
            txn.sql("DELETE FROM meta WHERE key = ?", (key,))
            return None
        base = self.db.catalog.find_table(view.keyspace, view.view.base_table)
        accepts = next(f for v, f in self.db.catalog.views_by_base[base.store_id] if v.store_id == sid)
        pos = dict(self._progress[sid])
        now = self.db.now_seconds()
        count, done = 0, True
        reached = (pos["token"], bytes.fromhex(pos["pk"])) if pos["token"] is not None else None
        for part in stored_partitions(base, txn, now, pos["token"], True, None, True):
            if reached is not None and (part.token, part.pk) <= reached:
                continue
            if count >= self.chunk:
                done = False
                break
            for lr in part.rows(None, None):
                vr = view_row(view, accepts, base, lr)
                if vr is not None:
                    write_view_row(txn, view, vr)
            pos["token"], pos["pk"] = part.token, part.pk.hex()
            count += 1
        if done:
            txn.sql("DELETE FROM meta WHERE key = ?", (key,))
            return None
        txn.put_meta(key, json.dumps(pos).encode())
        return pos
