"""Changefeed topics in SQLite (spec ``004``, "Topic partitions", "Record retention period").

Tables (created with the store's schema; their layout, storage format 3, is
``logtide.storage.feed_records``)::

    feed_records(feed_id, part, offset, write_time_ms, key, value)   -- one topic message
    feed_floors(feed_id, part, data)             -- the end offset retention left (records may all be gone)
    feed_consumers(feed_id, name, data)          -- important, read_from_ms
    feed_offsets(feed_id, name, part, data)      -- committed: the next offset the consumer reads
    feed_scans(feed_id, data)                    -- an initial scan's progress (JSON)
    feed_scan_marks(feed_id, token, pk, ck, data)  -- rows a write exported before the scan reached them

Every value is sealed with a checksum over its whole row and verified
whenever it is read: a row that does not verify raises :class:`DamagedFeed`
(a ``CorruptRecord``) naming the changefeed, partition and offset
(``docs/durability.md``, "Changefeed records").  Every function takes a
``Txn`` (write functions a writable one), so records are written in the same
SQLite transaction as the base rows and the CDC log.  Offsets are contiguous
from 0 per partition: the next offset is one past the largest stored one, or
the floor retention wrote before deleting; a read that finds a hole in them
met a record whose key was damaged.
"""

from __future__ import annotations

import json
from typing import Iterable, Mapping

from ..errors import CorruptRecord
from ..storage.envelope import RecordDamaged
from ..storage.feed_records import (committed_value, consumer_value, floor_value, record_value, scan_value,
                                    seal_committed, seal_consumer, seal_floor, seal_mark, seal_record, seal_scan,
                                    verify_mark)
from ..storage.sqlite import Txn


class DamagedFeed(CorruptRecord):
    """A changefeed record (or a consumer's offset, a floor, scan state) whose checksum does not verify.

    Raised by this module naming the changefeed by id; :meth:`at` names it by path (the reader, the write
    path).  A read failure (protocol code 0x1300) like every damaged record (``docs/durability.md``)."""

    def __init__(self, feed_id: int, what: str, reason: str, partition: int | None = None,
                 offset: object = None, path: str | None = None) -> None:
        where = f"changefeed {path}" if path else f"changefeed id {feed_id}"
        if partition is not None:
            where += f", partition {partition}"
        if offset is not None:
            where += f", offset {offset}"
        ks, _, rest = (path or "").partition("/")
        super().__init__(f"Damaged {what} in {where}: {reason}. Run 'logtide check' on the data directory "
                         "for a full report", ks, rest.partition("/")[0])
        self.feed_id = feed_id
        self.what = what
        self.reason = reason
        self.partition = partition
        self.offset = offset
        self.path = path

    def at(self, path: str) -> "DamagedFeed":
        """The same damage named by the changefeed's path ``ks/t/name``."""
        return DamagedFeed(self.feed_id, self.what, self.reason, self.partition, self.offset, path)


def _record(feed_id: int, part: int, row: tuple) -> tuple[int, int, bytes | None, bytes]:
    """A stored row ``(offset, write_time_ms, key, value)`` of ``feed_records`` with its value unsealed."""
    offset, wt, key, data = row
    try:
        return offset, wt, key, record_value(feed_id, part, offset, wt, key, data)
    except RecordDamaged as e:
        raise DamagedFeed(feed_id, "record", e.reason, part, offset) from None


_COLUMNS = "offset, write_time_ms, CAST(key AS BLOB), CAST(value AS BLOB)"  # CAST: a damaged type byte never
# makes SQLite decode a column as text


def _record_at(txn: Txn, feed_id: int, part: int, offset: int) -> tuple[int, int, bytes | None, bytes] | None:
    """The record at ``offset``, verified (None when there is none)."""
    r = txn.sql(f"SELECT {_COLUMNS} FROM feed_records WHERE feed_id = ? AND part = ? AND offset = ?",
                (feed_id, part, offset))
    return _record(feed_id, part, r[0]) if r else None


def _floor(txn: Txn, feed_id: int, part: int) -> int | None:
    f = txn.sql("SELECT CAST(data AS BLOB) FROM feed_floors WHERE feed_id = ? AND part = ?", (feed_id, part))
    if not f:
        return None
    try:
        return floor_value(feed_id, part, f[0][0])
    except RecordDamaged as e:
        raise DamagedFeed(feed_id, "offset floor", e.reason, part) from None


def end_offset(txn: Txn, feed_id: int, part: int) -> int:
    """The offset the next record of a partition gets, as readers see it (the largest stored key: a record
    whose key was damaged fails when it is read; the writer verifies it, :func:`next_offset`)."""
    r = txn.sql("SELECT MAX(offset) FROM feed_records WHERE feed_id = ? AND part = ?", (feed_id, part))
    top = r[0][0]
    if top is not None:
        return top + 1
    f = _floor(txn, feed_id, part)
    return 0 if f is None else f


def next_offset(txn: Txn, feed_id: int, part: int) -> int:
    """The offset the next record of a partition gets, for the writer: the last record is verified first, so
    that a damaged one is never written after (DamagedFeed)."""
    r = txn.sql(f"SELECT {_COLUMNS} FROM feed_records WHERE feed_id = ? AND part = ? ORDER BY offset DESC LIMIT 1",
                (feed_id, part))
    if r:
        return _record(feed_id, part, r[0])[0] + 1
    f = _floor(txn, feed_id, part)
    return 0 if f is None else f


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
        off = next_offset(txn, feed_id, part)
    rows = []
    for key, value in items:
        rows.append((feed_id, part, off, write_time_ms, key, seal_record(feed_id, part, off, write_time_ms, key, value)))
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
        off = next_offset(txn, feed_id, part)
    next_offsets[k] = off + 1
    txn.sql(_INSERT, (feed_id, part, off, write_time_ms, None, seal_record(feed_id, part, off, write_time_ms, None,
                                                                           value)))


def read(txn: Txn, feed_id: int, part: int, offset: int, max_records: int,
         max_bytes: int) -> list[tuple[int, int, bytes | None, bytes]]:
    """(offset, write_time_ms, key, value) from ``offset`` on; at least one record if any, then up to ``max_bytes``.

    Every record is verified, and so are the offsets' contiguity: a record missing from the middle (or from the
    start, with records stored before it) is damage too (its key was changed).  The records before a damaged
    one are returned; DamagedFeed when it is the first (so a reader gets everything up to it, then the error
    naming its offset, as a Kafka consumer does)."""
    rows = txn.sql(f"SELECT {_COLUMNS} FROM feed_records WHERE feed_id = ? AND part = ? "
                   "AND offset >= ? ORDER BY offset LIMIT ?", (feed_id, part, offset, max_records))
    if len(rows) < max_records:  # read to the end: the end must be the largest stored offset
        top = txn.sql("SELECT MAX(offset) FROM feed_records WHERE feed_id = ? AND part = ?", (feed_id, part))[0][0]
        after = rows[-1][0] + 1 if rows and type(rows[-1][0]) is int else offset
        if top is not None and top >= after:
            if not rows:
                raise _missing(feed_id, part, after)
            rows.append(_MISSING)  # stands for the missing record: reported when reached
    if not rows:
        return rows
    first = rows[0][0]
    if first != offset and txn.sql("SELECT 1 FROM feed_records WHERE feed_id = ? AND part = ? AND offset < ? "
                                   "LIMIT 1", (feed_id, part, first if type(first) is int else offset)):
        raise _missing(feed_id, part, offset)
    out = []
    size = 0
    expect = first
    for i, row in enumerate(rows):
        try:
            if row is _MISSING:  # past the last record found, below the largest offset stored
                raise _missing(feed_id, part, expect)
            rec = _record(feed_id, part, row)
            if rec[0] != expect:
                raise _missing(feed_id, part, expect)
        except DamagedFeed:
            if i:
                break
            raise
        size += len(rec[3]) + (len(rec[2]) if rec[2] else 0)
        if size > max_bytes and i:
            break
        out.append(rec)
        expect += 1
    return out


_MISSING = (None, None, None, None)


def _missing(feed_id: int, part: int, offset: int) -> DamagedFeed:
    return DamagedFeed(feed_id, "record", "it is missing while records before and after it are stored (its key was "
                       "damaged, or it was deleted outside logtide)", part, offset)


def offset_for_time(txn: Txn, feed_id: int, part: int, time_ms: int) -> int:
    """The first offset written at or after ``time_ms`` (write times never decrease within a partition).

    The answer rests on two records' write times, which are verified: the one found and the one before it."""
    r = txn.sql("SELECT MIN(offset) FROM feed_records WHERE feed_id = ? AND part = ? AND write_time_ms >= ?",
                (feed_id, part, time_ms))
    found = r[0][0] if r[0][0] is not None else end_offset(txn, feed_id, part)
    _record_at(txn, feed_id, part, found)
    _record_at(txn, feed_id, part, found - 1)
    return found


def drop_feed(txn: Txn, feed_id: int) -> None:
    """Remove a changefeed's records, consumers, offsets and scan state (DROP CHANGEFEED, DROP TABLE)."""
    for table in ("feed_records", "feed_floors", "feed_consumers", "feed_offsets", "feed_scans", "feed_scan_marks"):
        txn.sql(f"DELETE FROM {table} WHERE feed_id = ?", (feed_id,))


def expire(txn: Txn, feed_id: int, part: int, before_ms: int, keep_from: int | None) -> int:
    """Delete records written before ``before_ms`` (and below offset ``keep_from``, which important consumers
    still need); the floor keeps the end offset.  Returns how many were deleted.

    The last record to delete is verified first (a write time damaged to look older would delete records not
    yet expired): DamagedFeed then, and nothing is deleted."""
    end = end_offset(txn, feed_id, part)
    limit = txn.sql("SELECT MIN(offset) FROM feed_records WHERE feed_id = ? AND part = ? AND write_time_ms >= ?",
                    (feed_id, part, before_ms))[0][0]
    upto = end if limit is None else limit
    if keep_from is not None:
        upto = min(upto, keep_from)
    start = start_offset(txn, feed_id, part)
    if upto <= start:
        return 0
    _record_at(txn, feed_id, part, upto - 1)
    txn.sql("INSERT OR REPLACE INTO feed_floors (feed_id, part, data) VALUES (?, ?, ?)",
            (feed_id, part, seal_floor(feed_id, part, end)))
    txn.sql("DELETE FROM feed_records WHERE feed_id = ? AND part = ? AND offset < ?", (feed_id, part, upto))
    return upto - start


# -- consumers ---------------------------------------------------------------------------------

def _consumer(feed_id: int, name: bytes, data: bytes) -> tuple[bool, int]:
    try:
        return consumer_value(feed_id, name, data)
    except RecordDamaged as e:
        raise DamagedFeed(feed_id, f"consumer {_shown(name)}", e.reason) from None


def _shown(name: object) -> str:
    return repr(name.decode("utf-8", "replace")) if isinstance(name, bytes) else repr(name)


def consumers(txn: Txn, feed_id: int) -> list[tuple[str, bool, int]]:
    """(name, important, read_from_ms) by name."""
    out = []
    for name, data in txn.sql("SELECT CAST(name AS BLOB), CAST(data AS BLOB) FROM feed_consumers WHERE feed_id = ? "
                              "ORDER BY name", (feed_id,)):
        important, read_from_ms = _consumer(feed_id, name, data)
        out.append((name.decode(), important, read_from_ms))
    return out


def has_consumer(txn: Txn, feed_id: int, name: str) -> bool:
    key = name.encode()
    r = txn.sql("SELECT CAST(data AS BLOB) FROM feed_consumers WHERE feed_id = ? AND name = ?", (feed_id, key))
    if not r:
        return False
    _consumer(feed_id, key, r[0][0])
    return True


def add_consumer(txn: Txn, feed_id: int, name: str, important: bool, read_from_ms: int) -> None:
    key = name.encode()
    txn.sql("INSERT INTO feed_consumers (feed_id, name, data) VALUES (?, ?, ?)",
            (feed_id, key, seal_consumer(feed_id, key, bool(important), read_from_ms)))


def drop_consumer(txn: Txn, feed_id: int, name: str) -> None:
    key = name.encode()
    txn.sql("DELETE FROM feed_consumers WHERE feed_id = ? AND name = ?", (feed_id, key))
    txn.sql("DELETE FROM feed_offsets WHERE feed_id = ? AND name = ?", (feed_id, key))


def _committed(feed_id: int, name: bytes, part: int, data: bytes) -> int:
    try:
        return committed_value(feed_id, name, part, data)
    except RecordDamaged as e:
        raise DamagedFeed(feed_id, f"committed offset of consumer {_shown(name)}", e.reason, part) from None


def committed(txn: Txn, feed_id: int, name: str) -> dict[int, int]:
    key = name.encode()
    return {p: _committed(feed_id, key, p, d) for p, d in txn.sql(
        "SELECT part, CAST(data AS BLOB) FROM feed_offsets WHERE feed_id = ? AND name = ? ORDER BY part",
        (feed_id, key))}


def commit(txn: Txn, feed_id: int, name: str, offsets: Mapping[int, int]) -> None:
    key = name.encode()
    txn.sql_many("INSERT OR REPLACE INTO feed_offsets (feed_id, name, part, data) VALUES (?, ?, ?, ?)",
                 [(feed_id, key, p, seal_committed(feed_id, key, p, o)) for p, o in offsets.items()])


def important_floor(txn: Txn, feed_id: int, part: int) -> int | None:
    """The smallest committed offset of the important consumers in a partition (0 if one committed nothing)."""
    names = [n for n, imp, _ in consumers(txn, feed_id) if imp]
    if not names:
        return None
    floor = None
    for n in names:
        key = n.encode()
        r = txn.sql("SELECT CAST(data AS BLOB) FROM feed_offsets WHERE feed_id = ? AND name = ? AND part = ?",
                    (feed_id, key, part))
        o = _committed(feed_id, key, part, r[0][0]) if r else 0
        floor = o if floor is None else min(floor, o)
    return floor


# -- initial scan ------------------------------------------------------------------------------

def _scan(feed_id: int, data: bytes) -> dict:
    try:
        return json.loads(scan_value(feed_id, data))
    except RecordDamaged as e:
        raise DamagedFeed(feed_id, "initial scan state", e.reason) from None


def scan_state(txn: Txn, feed_id: int) -> dict | None:
    r = txn.sql("SELECT CAST(data AS BLOB) FROM feed_scans WHERE feed_id = ?", (feed_id,))
    return _scan(feed_id, r[0][0]) if r else None


def scan_states(txn: Txn) -> dict[int, dict]:
    """Every changefeed's initial scan state, by feed id."""
    return {fid: _scan(fid, d) for fid, d in txn.sql("SELECT feed_id, CAST(data AS BLOB) FROM feed_scans")}


def put_scan_state(txn: Txn, feed_id: int, state: dict) -> None:
    txn.sql("INSERT OR REPLACE INTO feed_scans (feed_id, data) VALUES (?, ?)",
            (feed_id, seal_scan(feed_id, json.dumps(state).encode())))


def _mark(feed_id: int, token: int, pk: bytes, ck: object, data: object) -> None:
    try:
        verify_mark(feed_id, token, pk, ck, data)
    except RecordDamaged as e:
        raise DamagedFeed(feed_id, "initial scan mark", e.reason) from None


def mark(txn: Txn, feed_id: int, token: int, pk: bytes, ck: bytes) -> bool:
    """Mark a row as exported ahead of the scan; False if it already was."""
    r = txn.sql("SELECT CAST(data AS BLOB) FROM feed_scan_marks WHERE feed_id = ? AND token = ? AND pk = ? AND ck = ?",
                (feed_id, token, pk, ck))
    if r:
        _mark(feed_id, token, pk, ck, r[0][0])
        return False
    txn.sql("INSERT INTO feed_scan_marks (feed_id, token, pk, ck, data) VALUES (?, ?, ?, ?, ?)",
            (feed_id, token, pk, ck, seal_mark(feed_id, token, pk, ck)))
    return True


def marks(txn: Txn, feed_id: int, token: int, pk: bytes) -> set[bytes]:
    out = set()
    for ck, data in txn.sql("SELECT CAST(ck AS BLOB), CAST(data AS BLOB) FROM feed_scan_marks "
                            "WHERE feed_id = ? AND token = ? AND pk = ?", (feed_id, token, pk)):
        _mark(feed_id, token, pk, ck, data)
        out.add(ck)
    return out


def clear_marks(txn: Txn, feed_id: int, token: int, pk: bytes) -> None:
    txn.sql("DELETE FROM feed_scan_marks WHERE feed_id = ? AND token = ? AND pk = ?", (feed_id, token, pk))
