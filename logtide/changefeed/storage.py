"""Changefeed topics in SQLite (spec ``004``, "Topic partitions", "Record retention period").

Tables (created with the store's schema, ``logtide.storage.sqlite``)::

    feed_records(feed_id, part, offset, write_time_ms, key, value)   -- one topic message
    feed_floors(feed_id, part, next_offset)      -- the end offset retention left (records may all be gone)
    feed_consumers(feed_id, name, important, read_from_ms)
    feed_offsets(feed_id, name, part, offset)    -- committed: the next offset the consumer reads
    feed_scans(feed_id, state)                   -- an initial scan's progress (JSON)
    feed_scan_marks(feed_id, token, pk, ck)      -- rows a write exported before the scan reached them

Every function takes a ``Txn`` (write functions a writable one), so records
are written in the same SQLite transaction as the base rows and the CDC log.
Offsets are contiguous from 0 per partition: the next offset is one past the
largest stored one, or the floor retention wrote before deleting.
"""

from __future__ import annotations

import json
from typing import Iterable, Mapping

from ..storage.sqlite import Txn


def end_offset(txn: Txn, feed_id: int, part: int) -> int:
    """The offset the next record of a partition gets."""
    r = txn.sql("SELECT MAX(offset) FROM feed_records WHERE feed_id = ? AND part = ?", (feed_id, part))
    top = r[0][0]
    if top is not None:
        return top + 1
    f = txn.sql("SELECT next_offset FROM feed_floors WHERE feed_id = ? AND part = ?", (feed_id, part))
    return f[0][0] if f else 0


def start_offset(txn: Txn, feed_id: int, part: int) -> int:
    """The first offset still stored (the end offset when the partition is empty)."""
    r = txn.sql("SELECT MIN(offset) FROM feed_records WHERE feed_id = ? AND part = ?", (feed_id, part))
    return r[0][0] if r[0][0] is not None else end_offset(txn, feed_id, part)


_INSERT = "INSERT INTO feed_records (feed_id, part, offset, write_time_ms, key, value) VALUES (?, ?, ?, ?, ?, ?)"


def append(txn: Txn, feed_id: int, part: int, write_time_ms: int, items: Iterable[tuple[bytes | None, bytes]],
           next_offsets: dict[tuple[int, int], int]) -> None:
    """Append records (key, value) to a partition at the next offsets; ``next_offsets`` caches them per statement."""
    k = (feed_id, part)
    off = next_offsets.get(k)
    if off is None:
        off = end_offset(txn, feed_id, part)
    rows = []
    for key, value in items:
        rows.append((feed_id, part, off, write_time_ms, key, value))
        off += 1
    next_offsets[k] = off
    if len(rows) == 1:  # the common case: one row changed; execute() is cheaper than executemany()
        txn.sql(_INSERT, rows[0])
    else:
        txn.sql_many(_INSERT, rows)


def append_one(txn: Txn, feed_id: int, part: int, write_time_ms: int, value: bytes,
               next_offsets: dict[tuple[int, int], int]) -> None:
    """:func:`append` of one record without a key (a statement's one row change)."""
    k = (feed_id, part)
    off = next_offsets.get(k)
    if off is None:
        off = end_offset(txn, feed_id, part)
    next_offsets[k] = off + 1
    txn.sql(_INSERT, (feed_id, part, off, write_time_ms, None, value))


def read(txn: Txn, feed_id: int, part: int, offset: int, max_records: int,
         max_bytes: int) -> list[tuple[int, int, bytes | None, bytes]]:
    """(offset, write_time_ms, key, value) from ``offset`` on; at least one record if any, then up to ``max_bytes``."""
    rows = txn.sql("SELECT offset, write_time_ms, key, value FROM feed_records WHERE feed_id = ? AND part = ? "
                   "AND offset >= ? ORDER BY offset LIMIT ?", (feed_id, part, offset, max_records))
    size = 0
    for i, r in enumerate(rows):
        size += len(r[3]) + (len(r[2]) if r[2] else 0)
        if size > max_bytes and i:
            return rows[:i]
    return rows


def offset_for_time(txn: Txn, feed_id: int, part: int, time_ms: int) -> int:
    """The first offset written at or after ``time_ms`` (write times never decrease within a partition)."""
    r = txn.sql("SELECT MIN(offset) FROM feed_records WHERE feed_id = ? AND part = ? AND write_time_ms >= ?",
                (feed_id, part, time_ms))
    return r[0][0] if r[0][0] is not None else end_offset(txn, feed_id, part)


def drop_feed(txn: Txn, feed_id: int) -> None:
    """Remove a changefeed's records, consumers, offsets and scan state (DROP CHANGEFEED, DROP TABLE)."""
    for table in ("feed_records", "feed_floors", "feed_consumers", "feed_offsets", "feed_scans", "feed_scan_marks"):
        txn.sql(f"DELETE FROM {table} WHERE feed_id = ?", (feed_id,))


def expire(txn: Txn, feed_id: int, part: int, before_ms: int, keep_from: int | None) -> int:
    """Delete records written before ``before_ms`` (and below offset ``keep_from``, which important consumers
    still need); the floor keeps the end offset.  Returns how many were deleted."""
    end = end_offset(txn, feed_id, part)
    limit = txn.sql("SELECT MIN(offset) FROM feed_records WHERE feed_id = ? AND part = ? AND write_time_ms >= ?",
                    (feed_id, part, before_ms))[0][0]
    upto = end if limit is None else limit
    if keep_from is not None:
        upto = min(upto, keep_from)
    start = start_offset(txn, feed_id, part)
    if upto <= start:
        return 0
    txn.sql("INSERT OR REPLACE INTO feed_floors (feed_id, part, next_offset) VALUES (?, ?, ?)", (feed_id, part, end))
    txn.sql("DELETE FROM feed_records WHERE feed_id = ? AND part = ? AND offset < ?", (feed_id, part, upto))
    return upto - start


# -- consumers ---------------------------------------------------------------------------------

def consumers(txn: Txn, feed_id: int) -> list[tuple[str, bool, int]]:
    """(name, important, read_from_ms) by name."""
    return [(n, bool(i), r) for n, i, r in txn.sql(
        "SELECT name, important, read_from_ms FROM feed_consumers WHERE feed_id = ? ORDER BY name", (feed_id,))]


def has_consumer(txn: Txn, feed_id: int, name: str) -> bool:
    return bool(txn.sql("SELECT 1 FROM feed_consumers WHERE feed_id = ? AND name = ?", (feed_id, name)))


def add_consumer(txn: Txn, feed_id: int, name: str, important: bool, read_from_ms: int) -> None:
    txn.sql("INSERT INTO feed_consumers (feed_id, name, important, read_from_ms) VALUES (?, ?, ?, ?)",
            (feed_id, name, int(important), read_from_ms))


def drop_consumer(txn: Txn, feed_id: int, name: str) -> None:
    txn.sql("DELETE FROM feed_consumers WHERE feed_id = ? AND name = ?", (feed_id, name))
    txn.sql("DELETE FROM feed_offsets WHERE feed_id = ? AND name = ?", (feed_id, name))


def committed(txn: Txn, feed_id: int, name: str) -> dict[int, int]:
    return dict(txn.sql("SELECT part, offset FROM feed_offsets WHERE feed_id = ? AND name = ? ORDER BY part",
                        (feed_id, name)))


def commit(txn: Txn, feed_id: int, name: str, offsets: Mapping[int, int]) -> None:
    txn.sql_many("INSERT OR REPLACE INTO feed_offsets (feed_id, name, part, offset) VALUES (?, ?, ?, ?)",
                 [(feed_id, name, p, o) for p, o in offsets.items()])


def important_floor(txn: Txn, feed_id: int, part: int) -> int | None:
    """The smallest committed offset of the important consumers in a partition (0 if one committed nothing)."""
    names = [n for n, imp, _ in consumers(txn, feed_id) if imp]
    if not names:
        return None
    floor = None
    for n in names:
        r = txn.sql("SELECT offset FROM feed_offsets WHERE feed_id = ? AND name = ? AND part = ?", (feed_id, n, part))
        o = r[0][0] if r else 0
        floor = o if floor is None else min(floor, o)
    return floor


# -- initial scan ------------------------------------------------------------------------------

def scan_state(txn: Txn, feed_id: int) -> dict | None:
    r = txn.sql("SELECT state FROM feed_scans WHERE feed_id = ?", (feed_id,))
    return json.loads(r[0][0]) if r else None


def put_scan_state(txn: Txn, feed_id: int, state: dict) -> None:
    txn.sql("INSERT OR REPLACE INTO feed_scans (feed_id, state) VALUES (?, ?)", (feed_id, json.dumps(state)))


def mark(txn: Txn, feed_id: int, token: int, pk: bytes, ck: bytes) -> bool:
    """Mark a row as exported ahead of the scan; False if it already was."""
    if txn.sql("SELECT 1 FROM feed_scan_marks WHERE feed_id = ? AND token = ? AND pk = ? AND ck = ?",
               (feed_id, token, pk, ck)):
        return False
    txn.sql("INSERT INTO feed_scan_marks (feed_id, token, pk, ck) VALUES (?, ?, ?, ?)", (feed_id, token, pk, ck))
    return True


def marks(txn: Txn, feed_id: int, token: int, pk: bytes) -> set[bytes]:
    return {r[0] for r in txn.sql("SELECT ck FROM feed_scan_marks WHERE feed_id = ? AND token = ? AND pk = ?",
                                  (feed_id, token, pk))}


def clear_marks(txn: Txn, feed_id: int, token: int, pk: bytes) -> None:
    txn.sql("DELETE FROM feed_scan_marks WHERE feed_id = ? AND token = ? AND pk = ?", (feed_id, token, pk))
