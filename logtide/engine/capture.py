"""Write stages 3.5 and 3.8, capture: the before and after of each row a write touches, read once, handed to the ScyllaDB
CDC log and to every changefeed through pure functions (docs/architecture.md, "A write"; specs ``000``, ``004``).

:func:`read_before`, before the mutation is applied, reads into ``TouchedRows.before`` the stored state
(``mutation.images.StoredRow``) of every row a log needs: for a table logged with a preimage or a postimage the
rows ``cdc.log.touched_rows`` names; for a table with an active changefeed its written rows, its static row and
the rows its deletions remove, except on the changefeeds' direct path (``WritePlan.direct``), whose changes come
from the records the merge itself sees.  ``cdc.capture.log_appends`` makes the CDC log rows from those preimages
(its postimages derived from the preimage and the mutation, exactly as spec ``000`` defines them: no read after
the write), and ``mutation.apply`` stores them with the mutation, recording each row as it leaves it.
:func:`read_after` pairs each row a changefeed needs with its postimage (``TouchedRow``), from what apply
recorded, else read once after the write; :func:`feed_changes` hands them to the changefeeds' pure derivations
(``changefeed.changes``).  ``engine.commit.commit_mutation`` runs these in order.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..cdc.capture import preimage_rows
from ..cdc.log import touched_rows
from ..changefeed.changes import WritePlan, partition_changes, row_values
from ..mutation.images import PartitionImages, RowKey, TouchedRow
from ..mutation.model import Mutation, PartitionUpdate
from .touched import TouchedRows


class FeedCapture(NamedTuple):
    """A partition update of a table with an active changefeed, as :func:`read_before` left it: on the direct
    path nothing was read; else ``keys`` names the touched rows read and ``removed`` the clustering keys of the
    rows its deletions remove (in order)."""

    plan: WritePlan
    update: PartitionUpdate
    direct: bool
    keys: tuple[RowKey, ...]
    removed: tuple[bytes, ...]


def read_before(db: Any, mutation: Mutation, touched: TouchedRows) -> list[FeedCapture] | None:
    """Read, once, the stored state before the write of every row the CDC log and the changefeeds need
    (``db`` is the ``engine.database.Engine``); return the partition updates of tables with an active
    changefeed (None if there is none: then nothing is recorded for them during the write)."""
    catalog = db.catalog
    targets = db.log_targets
    feeds = db.feeds if db.has_changefeeds() else None
    read = touched.read
    out: list[FeedCapture] | None = None
    for pu in mutation:
        table, pk, token = pu.table, pu.pk, pu.token
        if table.cdc is not None and preimage_rows(pu, catalog, targets):
            static, cks = touched_rows(pu)
            if static:
                read(table, pk, token, b"", True)
            for ck in cks:
                read(table, pk, token, ck, False)
        if feeds is None:
            continue
        wp = feeds.write_plan(table, catalog)
        if wp is None:
            continue
        if out is None:
            out = []
        if wp.direct(pu) and (not feeds.scans or feeds.scanned(wp.table)):
            out.append(FeedCapture(wp, pu, True, (), ()))  # the merge records the rows: nothing to read before
            continue
        t = wp.table
        tid = t.store_id
        removed = touched.read_removed(pu, t)
        keys: list[RowKey] = []
        for ck in pu.rows:
            read(t, pk, token, ck, False)
            keys.append((tid, pk, ck, False))
        if pu.static is not None or (pu.deletion is not None and bool(t.clustering_key)):
            read(t, pk, token, b"", True)
            keys.append((tid, pk, b"", True))
        if pu.deletion is not None and not t.clustering_key:
            read(t, pk, token, b"", False)
            keys.append((tid, pk, b"", False))
        keys.extend([(tid, pk, ck, False) for ck in removed])
        out.append(FeedCapture(wp, pu, False, tuple(keys), removed))
    return out


def read_after(captures: list[FeedCapture], touched: TouchedRows) -> list[tuple[FeedCapture, PartitionImages]]:
    """Each partition update of :func:`read_before` with its touched rows before and after the write: on the
    direct path the rows the merge recorded (``TouchedRows.merged_rows``), else each row read before paired
    with its state after (as the merge recorded it, else read once now)."""
    out = []
    before = touched.before
    after = touched.after
    for fc in captures:
        pu = fc.update
        if fc.direct:
            out.append((fc, PartitionImages(pu, touched.merged_rows, ())))
            continue
        t = fc.plan.table
        rows = {k: TouchedRow(k, before[k], after(t, pu.pk, pu.token, k[2], k[3])) for k in fc.keys}
        out.append((fc, PartitionImages(pu, rows, fc.removed)))
    return out


def feed_changes(images: list[tuple[FeedCapture, PartitionImages]], now: int) -> list[tuple[WritePlan, Any, bool]]:
    """The changes of each partition update for its table's changefeeds (what ``Feeds.store`` appends), from the
    pure derivations of ``changefeed.changes``: ``row_values`` on the direct path, else ``partition_changes``."""
    out: list[tuple[WritePlan, Any, bool]] = []
    for fc, im in images:
        wp = fc.plan
        if fc.direct:
            out.append((wp, row_values(im, wp.plan, now, wp.old_image), True))
        else:
            out.append((wp, partition_changes(im, wp.table, wp.plan, wp.updates, now), False))
    return out
