"""The before and after of the rows a write touches: spec ``000``'s preimage and postimage, as storage holds them.

The capture stage (``engine/capture.py``) reads each touched row once inside the write transaction and
hands what it read to the ScyllaDB CDC log (``cdc/capture.py``: ``log_appends``) and to the changefeeds
(``changefeed/changes.py``: ``partition_changes``, ``row_values``), pure functions that make their rows
from these values and the time they are given (``live``: what a reader at that time sees of a row).

A row's state is its stored record with the deletion over it from its partition (the partition
tombstone, or the strongest range tombstone covering it): a :data:`StoredRow`, or None where the row
has no record.  Liveness (TTL expiry, tombstones, dropped columns) is decided by the consumer, once,
in the form it needs: a live row, or live values only (``query.read.live_values``).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

from ..query.read import LiveRow, live_row
from ..schema.model import Table
from .cells import Deletion, RowData
from .model import PartitionUpdate

RowKey = tuple[int, bytes, bytes, bool]  # (store id, partition key, clustering key (b"" for the static row), static)
StoredRow = tuple[RowData, Deletion | None]  # a row's stored record and the partition's deletion over it


class TouchedRow(NamedTuple):
    """One row a write touches: its key, its state before the write (``preimage``) and after it
    (``postimage``), each a :data:`StoredRow` or None where the row had or has no record.

    An immutable value; a NamedTuple because one is made per touched row on the write path (as
    ``changefeed.render.RowChange`` and ``cdc.log_rows.LogRow``)."""

    key: RowKey
    preimage: StoredRow | None
    postimage: StoredRow | None


def live(table: Table, stored: StoredRow | None, key: tuple[bytes, ...], ck: bytes, static: bool,
         now: int) -> LiveRow | None:
    """The live row a reader at time ``now`` sees of a stored row (None when nothing of it is live):
    ``query.read.live_row`` of a :data:`StoredRow` of the partition whose key values are ``key``."""
    if stored is None:
        return None
    return live_row(table, stored[0], stored[1], now, key, ck, static)


class PartitionImages(NamedTuple):
    """The touched rows of one partition update before and after the write (the capture stage's output for a
    table whose changefeeds need both): ``rows`` maps each touched row's key to its :class:`TouchedRow`
    (it may hold other partitions' rows too); ``removed`` lists in order the clustering keys of the rows
    stored, before the write, inside the update's partition or range deletions (each also in ``rows``)."""

    update: PartitionUpdate
    rows: Mapping[RowKey, TouchedRow]
    removed: tuple[bytes, ...]
