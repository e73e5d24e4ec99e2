"""Shared helpers of the storage tests: a small database, raw access to its SQLite file, logtide as a subprocess."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import logtide

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


def make_db(path: Path, rows: int = 10, cdc: bool = False) -> None:
    """ks.t (k int, c int, v text, PRIMARY KEY (k, c)) with ``rows`` rows: k = i % 3, c = i, v = 'value-<i>'."""
    with logtide.open(path) as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))"
                  + (" WITH cdc = {'enabled': true}" if cdc else ""))
        p = s.prepare("INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)")
        for i in range(rows):
            s.execute(p, [i % 3, i, f"value-{i}"])


def raw(path: Path) -> sqlite3.Connection:
    """A plain SQLite connection to the data directory's database (for fault injection)."""
    return sqlite3.connect(path / "logtide.db", isolation_level=None)


def run_logtide(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``logtide ARGS`` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "logtide", *args], capture_output=True, text=True, timeout=timeout)


# The changefeed tables as storage formats 0 (logtide 0.1) to 2 laid them out: values bare, names TEXT.
FORMAT2_FEED_TABLES = {
    "feed_floors": "feed_id INTEGER NOT NULL, part INTEGER NOT NULL, next_offset INTEGER NOT NULL, "
                   "PRIMARY KEY (feed_id, part)",
    "feed_consumers": "feed_id INTEGER NOT NULL, name TEXT NOT NULL, important INTEGER NOT NULL, "
                      "read_from_ms INTEGER NOT NULL, PRIMARY KEY (feed_id, name)",
    "feed_offsets": "feed_id INTEGER NOT NULL, name TEXT NOT NULL, part INTEGER NOT NULL, offset INTEGER NOT NULL, "
                    "PRIMARY KEY (feed_id, name, part)",
    "feed_scans": "feed_id INTEGER PRIMARY KEY, state TEXT NOT NULL",
    "feed_scan_marks": "feed_id INTEGER NOT NULL, token INTEGER NOT NULL, pk BLOB NOT NULL, ck BLOB NOT NULL, "
                       "PRIMARY KEY (feed_id, token, pk, ck)",
}


def unseal_feed_tables(conn: sqlite3.Connection) -> None:
    """Rewrite the changefeed tables of a format-3 database (inside the caller's transaction) as formats 0-2
    stored them, every value verified first."""
    from logtide.storage import feed_records as F

    for fid, part, off, wt, key, value in conn.execute("SELECT * FROM feed_records").fetchall():
        conn.execute("UPDATE feed_records SET value = ? WHERE feed_id = ? AND part = ? AND offset = ?",
                     (F.record_value(fid, part, off, wt, key, value), fid, part, off))
    old = {name: conn.execute(f"SELECT * FROM {name}").fetchall() for name in FORMAT2_FEED_TABLES}
    for name, layout in FORMAT2_FEED_TABLES.items():
        conn.execute(f"DROP TABLE {name}")
        conn.execute(f"CREATE TABLE {name} ({layout}) WITHOUT ROWID")
    for fid, part, data in old["feed_floors"]:
        conn.execute("INSERT INTO feed_floors VALUES (?, ?, ?)", (fid, part, F.floor_value(fid, part, data)))
    for fid, name, data in old["feed_consumers"]:
        important, read_from_ms = F.consumer_value(fid, name, data)
        conn.execute("INSERT INTO feed_consumers VALUES (?, ?, ?, ?)", (fid, name.decode(), int(important),
                                                                         read_from_ms))
    for fid, name, part, data in old["feed_offsets"]:
        conn.execute("INSERT INTO feed_offsets VALUES (?, ?, ?, ?)",
                     (fid, name.decode(), part, F.committed_value(fid, name, part, data)))
    for fid, data in old["feed_scans"]:
        conn.execute("INSERT INTO feed_scans VALUES (?, ?)", (fid, F.scan_value(fid, data).decode()))
    for fid, token, pk, ck, data in old["feed_scan_marks"]:
        F.verify_mark(fid, token, pk, ck, data)
        conn.execute("INSERT INTO feed_scan_marks VALUES (?, ?, ?, ?)", (fid, token, pk, ck))
