"""Migrating a directory to storage format 3: every changefeed value sealed with its checksum, in one transaction.

Before format 3 the changefeed tables stored their values bare
(``feed_records.value`` the message, ``feed_offsets.offset`` an integer ...).
A writer that opens such a directory (format 0 after ``migrate_v0``, 1 or 2)
rewrites them all in ONE SQLite transaction (``docs/durability.md``,
"Changefeed records (storage format 3)"):

* ``feed_records``: each value sealed in place (``UPDATE``), read and written
  in batches of :data:`BATCH` records in key order, with a progress bar on a
  terminal;
* the state tables (floors, consumers, committed offsets, scan state, scan
  marks) rebuilt in their format-3 layout (key columns kept, names as BLOBs,
  the rest one sealed ``data`` column);
* meta ``format`` set to 3, then ``COMMIT``.

Atomic: a migration interrupted anywhere (an error, Ctrl-C, ``kill -9``, a
power loss) commits nothing, the directory stays as it was, and the next
writer open starts it again from the beginning.  Nothing read is trusted
blindly: a row whose columns are not of their types (which a format-2 table
cannot verify otherwise) stops the migration naming it, with nothing changed.

One idea split for size with ``opening.py`` and ``migrate.py``: opening a data directory, which migrates an
older format on the way (to format 3 here).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import DataDirectoryError
from .feed_records import (FEED_TABLES, seal_committed, seal_consumer, seal_floor, seal_mark, seal_record,
                           seal_scan)
from .opening import FORMAT_KEY, SEALED_FEEDS_FORMAT
from .records import encode_meta

BATCH = 10_000  # records read and rewritten per statement pair (the transaction is still one)
log = logging.getLogger("logtide.storage")


def migrate_feeds(conn: sqlite3.Connection, p: Path, enabled: bool | None = None) -> None:
    """Seal every changefeed value of the database on ``conn`` (directory ``p``) and mark it format 3, in one
    transaction; ``enabled`` forces the progress bar on or off (default: on a terminal)."""
    from ..progress import progress

    conn.execute("BEGIN IMMEDIATE")
    try:
        total = _count(conn)
        if total:
            log.info("sealing %d changefeed records of %s with checksums (storage format 3)", total, p)
        with progress("sealing changefeed records (storage format 3)", total=total, unit="records",
                      enabled=enabled) as bar:
            _seal_records(conn, p, bar.advance)
            for name, rows in _STATE.items():
                _rebuild(conn, p, name, rows)
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                     (FORMAT_KEY, encode_meta(FORMAT_KEY, str(SEALED_FEEDS_FORMAT).encode())))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _count(conn: sqlite3.Connection) -> int:
    if not _columns(conn, "feed_records"):
        return 0
    return conn.execute("SELECT COUNT(*) FROM feed_records").fetchone()[0]


def _refused(p: Path, what: str, why: str) -> DataDirectoryError:
    return DataDirectoryError(f"cannot migrate data directory {p} to storage format 3: its {what} {why}; "
                              "nothing was changed")


def _seal_records(conn: sqlite3.Connection, p: Path, advance: Callable[[int], None]) -> None:
    if not _columns(conn, "feed_records"):
        return
    after = (-(1 << 63), 0, 0)
    while True:
        rows = conn.execute(
            "SELECT feed_id, part, offset, write_time_ms, CAST(key AS BLOB), CAST(value AS BLOB) FROM feed_records "
            "WHERE (feed_id, part, offset) > (?, ?, ?) ORDER BY feed_id, part, offset LIMIT ?",
            (*after, BATCH)).fetchall()
        if not rows:
            return
        out = []
        for fid, part, off, wt, key, value in rows:
            if not all(type(x) is int for x in (fid, part, off, wt)) or type(value) is not bytes:
                raise _refused(p, f"changefeed record (changefeed id {fid}, partition {part}, offset {off})",
                               "has a column of the wrong type")
            out.append((seal_record(fid, part, off, wt, key, value), fid, part, off))
        conn.executemany("UPDATE feed_records SET value = ? WHERE feed_id = ? AND part = ? AND offset = ?", out)
        after = rows[-1][:3]
        advance(len(rows))


def _ints(*values: Any) -> bool:
    return all(type(v) is int for v in values)


def _floors(rows: Iterator[tuple]) -> Iterator[tuple]:
    for fid, part, next_offset in rows:
        if not _ints(fid, part, next_offset):
            raise ValueError(f"offset floor (changefeed id {fid}, partition {part})")
        yield fid, part, seal_floor(fid, part, next_offset)


def _consumers(rows: Iterator[tuple]) -> Iterator[tuple]:
    for fid, name, important, read_from_ms in rows:
        if not _ints(fid, important, read_from_ms) or type(name) is not bytes:
            raise ValueError(f"consumer (changefeed id {fid})")
        yield fid, name, seal_consumer(fid, name, bool(important), read_from_ms)


def _offsets(rows: Iterator[tuple]) -> Iterator[tuple]:
    for fid, name, part, offset in rows:
        if not _ints(fid, part, offset) or type(name) is not bytes:
            raise ValueError(f"committed offset (changefeed id {fid}, partition {part})")
        yield fid, name, part, seal_committed(fid, name, part, offset)


def _scans(rows: Iterator[tuple]) -> Iterator[tuple]:
    for fid, state in rows:
        if not _ints(fid) or type(state) is not bytes:
            raise ValueError(f"initial scan state (changefeed id {fid})")
        yield fid, seal_scan(fid, state)


def _marks(rows: Iterator[tuple]) -> Iterator[tuple]:
    for fid, token, pk, ck in rows:
        if not _ints(fid, token) or type(pk) is not bytes or type(ck) is not bytes:
            raise ValueError(f"initial scan mark (changefeed id {fid})")
        yield fid, token, pk, ck, seal_mark(fid, token, pk, ck)


# state table -> (its format-2 columns as selected, the format-3 rows they make)
_STATE: dict[str, tuple[str, Callable[[Iterator[tuple]], Iterator[tuple]]]] = {
    "feed_floors": ("feed_id, part, next_offset", _floors),
    "feed_consumers": ("feed_id, CAST(name AS BLOB), important, read_from_ms", _consumers),
    "feed_offsets": ("feed_id, CAST(name AS BLOB), part, offset", _offsets),
    "feed_scans": ("feed_id, CAST(state AS BLOB)", _scans),
    "feed_scan_marks": ("feed_id, token, CAST(pk AS BLOB), CAST(ck AS BLOB)", _marks),
}
_LAYOUT = dict(FEED_TABLES)


def _rebuild(conn: sqlite3.Connection, p: Path, name: str, how: tuple[str, Callable]) -> None:
    """Rebuild a state table of the format-2 layout in the format-3 one (missing: created later; already
    format 3, as a directory migrated from 0.1 after changefeeds had been added may hold: left as it is)."""
    columns = _columns(conn, name)
    if not columns or "data" in columns:
        return
    select, convert = how
    old = f"{name}_format2"
    conn.execute(f"ALTER TABLE {name} RENAME TO {old}")
    conn.execute(f"CREATE TABLE {name} ({_LAYOUT[name]}) WITHOUT ROWID")
    cur = conn.execute(f"SELECT {select} FROM {old}")
    try:
        while True:
            rows = list(convert(iter(cur.fetchmany(BATCH))))
            if not rows:
                break
            conn.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    except ValueError as e:
        raise _refused(p, str(e), "has a column of the wrong type") from None
    conn.execute(f"DROP TABLE {old}")
