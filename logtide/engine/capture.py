"""Write stages 3.5 and 3.8, capture: the before and after of each row a write touches, read once, handed to the ScyllaDB
CDC log, to every changefeed, to the materialized views and to the secondary indexes (docs/architecture.md, "A
write"; specs ``000``, ``004``).

:func:`read_before`, before the mutation is applied, reads into ``TouchedRows.before`` the stored state
(``mutation.images.StoredRow``) of every row a consumer needs, each row once whatever number of consumers the
table has: for a table logged with a preimage or a postimage the rows ``cdc.log.touched_rows`` names; for a table
with an active changefeed, a materialized view or a secondary index (:func:`captured_tables`, a set cached per
catalog: any other table pays one lookup) its touched rows (:func:`touched_keys`).  The rows a partition update
writes without deleting anything in its partition are not read before: the merge (``mutation.apply``) reads each
of them anyway and records it before and after (``TouchedRows.merged``).  ``cdc.capture.log_appends`` makes the
CDC log rows from the preimages (its postimages derived from the preimage and the mutation, exactly as spec
``000`` defines them: no read after the write), and ``mutation.apply`` stores them with the mutation.

:func:`read_after` pairs each touched row with its postimage (a ``TouchedRow(key, preimage, postimage)`` in
``TouchedRows.images``), from what the merge recorded, else read once after the write: that one list of touched
rows is what every consumer takes (``engine.views``, ``engine.indexes``, and the changefeeds' pure derivations
through :func:`feed_changes`).  ``engine.commit.commit_mutation`` runs these in order.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..cdc.capture import preimage_rows
from ..cdc.log import touched_rows
from ..changefeed.changes import WritePlan, partition_changes, row_values
from ..mutation.images import PartitionImages, RowKey
from ..mutation.model import Mutation, PartitionUpdate
from ..schema.catalog import Catalog
from ..schema.model import Table
from .touched import TouchedRows


class Capture(NamedTuple):
    """A partition update of a table whose touched rows are captured before and after the write, with what
    consumes them: the changefeeds' plan (``feed``, None without an active changefeed; ``direct``: its changes
    take the direct path), the materialized views with their filters (``views``) and whether the table has
    secondary indexes (``indexed``).  ``keys`` names the touched rows read before the write (the rows the update
    writes are recorded by the merge when it deletes nothing); ``removed`` the clustering keys, in order, of the
    rows its deletions remove."""

    update: PartitionUpdate
    table: Table
    keys: tuple[RowKey, ...]
    removed: tuple[bytes, ...]
    feed: WritePlan | None
    direct: bool
    views: tuple[Any, ...]
    indexed: bool


def captured_tables(catalog: Catalog) -> frozenset[int]:
    """The store ids of the tables whose writes are captured before and after: those with a changefeed (active
    or not: the changefeeds' plan says which are), a materialized view or a secondary index."""
    by_base = catalog.views_by_base
    return frozenset(t.store_id for ks in catalog.keyspaces.values() for t in ks.tables.values()
                     if t.changefeeds or t.indexes or t.store_id in by_base)


def touched_keys(pu: PartitionUpdate, table: Table, removed: tuple[bytes, ...], merged: bool) -> tuple[RowKey, ...]:
    """The rows of ``pu`` read before the write: its rows (unless the merge records them, ``merged``), its static
    row when it writes it or deletes a clustered partition, its lone row when it deletes a partition without
    clustering columns, and the rows its deletions remove (``removed``)."""
    tid, pk = table.store_id, pu.pk
    keys: list[RowKey] = [] if merged else [(tid, pk, ck, False) for ck in pu.rows]
    if pu.static is not None or (pu.deletion is not None and bool(table.clustering_key)):
        keys.append((tid, pk, b"", True))
    if pu.deletion is not None and not table.clustering_key:
        keys.append((tid, pk, b"", False))
    keys.extend([(tid, pk, ck, False) for ck in removed])
    return tuple(dict.fromkeys(keys))


def read_before(db: Any, mutation: Mutation, touched: TouchedRows) -> list[Capture] | None:
    """Read, once, the stored state before the write of every row the CDC log, the changefeeds, the views and
    the indexes need (``db`` is the ``engine.database.Engine``); return the partition updates whose rows are
    captured before and after (None if there is none: then the merge records nothing)."""
    catalog = db.catalog
    targets = db.log_targets
    captured = db.captured_tables()
    read = touched.read
    out: list[Capture] | None = None
    for pu in mutation:
        table, pk, token = pu.table, pu.pk, pu.token
        if table.cdc is not None and preimage_rows(pu, catalog, targets):
            static, cks = touched_rows(pu)
            if static:
                read(table, pk, token, b"", True)
            for ck in cks:
                read(table, pk, token, ck, False)
        if not captured or table.store_id not in captured:
            continue
        wp = db.feeds.write_plan(table, catalog)
        views = catalog.views_by_base.get(table.store_id, ())
        if wp is None and not views and not table.indexes:
            continue
        t = wp.table if wp is not None else table
        direct = wp is not None and wp.direct(pu) and (not db.feeds.scans or db.feeds.scanned(t))
        removed = touched.read_removed(pu, t)
        merged = pu.deletion is None and not pu.range_deletions
        keys = touched_keys(pu, t, removed, merged)
        for k in keys:
            read(t, pk, token, k[2], k[3])
        if out is None:
            out = []
            touched.record_after = True  # the merge records each row it leaves: no read after the write for them
        out.append(Capture(pu, t, keys, removed, wp, direct, views, bool(table.indexes)))
    return out


def read_after(captures: list[Capture], touched: TouchedRows) -> list[tuple[Capture, PartitionImages]]:
    """Each captured partition update with its touched rows before and after the write, all in the one mapping
    ``TouchedRows.images`` that every consumer reads: the rows the merge recorded, and each row read before
    paired with its state after (as the merge recorded it, else read once now)."""
    images = touched.images
    for c in captures:
        pu, t = c.update, c.table
        for k in c.keys:
            touched.pair(t, pu.token, k)
    return [(c, PartitionImages(c.update, images, c.removed)) for c in captures]


def feed_changes(images: list[tuple[Capture, PartitionImages]], now: int) -> list[tuple[WritePlan, Any, bool]]:
    """The changes of each partition update for its table's changefeeds (what ``Feeds.store`` appends), from the
    pure derivations of ``changefeed.changes``: ``row_values`` on the direct path, else ``partition_changes``."""
    out: list[tuple[WritePlan, Any, bool]] = []
    for c, im in images:
        wp = c.feed
        if wp is None:
            continue
        if c.direct:
            out.append((wp, row_values(im, wp.plan, now, wp.old_image), True))
        else:
            out.append((wp, partition_changes(im, wp.table, wp.plan, wp.updates, now), False))
    return out
