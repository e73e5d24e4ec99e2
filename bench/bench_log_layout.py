"""Prototype figures for other layouts of the CDC log (issues 13 and 27): what the storage layer would save.

    python bench/bench_log_layout.py [--modes batch-mixed,batch-one] [--batches 60] [--rounds 5]

Runs ``bench_write_path.py``'s workloads on logtide once (``--modes``: ``batch-mixed`` and ``batch-one``, 100
full-CDC upserts per batch over 50 partitions or one; ``cdc``, single full-CDC upserts, 100 per ``--batches``),
records the rows each commit hands to SQLite, and replays those exact rows in plain SQLite (same schema,
``synchronous`` OFF for CPU and FULL for wall time, no automatic checkpoints) in these layouts of the log rows;
base rows are written as today in all of them:

- ``today``: what logtide stores (a stream's rows of one commit as one group entry, keyed (table, token, stream,
  clustering) in ``rows``, ``docs/durability.md``), and the commit sequence number updated in every commit;
- ``per-stream``: the rows of each stream of a commit wrapped once more as one entry (the group layout of
  issue 13's prototype; on today's rows a second wrapping);
- ``commit-order``: one entry per commit holding all its log rows, appended at the end of a ``log_commits``
  table, plus one ``log_index`` entry per stream per commit pointing at it;
- ``today-noseq``: ``today`` without the commit sequence number's update (what that page costs);
- ``tail``: the log rows appended to a ``log_tail`` table in commit order (a rowid table: its right edge), moved
  into ``rows`` every 256 commits in a transaction of their own (an LSM tree's flush, off the commit path);
  the moves are counted in the figures;
- ``tail-indexed``: ``tail`` with an index on the tail by stream, which a reader would need.

It prints, per layout, the CPU and wall milliseconds of SQLite's work per commit (the inserts and ``COMMIT``,
means over the commits, the moves included: what the rest of logtide pays is unchanged), the WAL pages each
commit writes, and the CPU of reading every stream back from storage (the rows found, not decoded further).
Nothing of logtide reads these prototype layouts: they only measure what a layout change could buy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time

import msgspec

from bench_write_path import MODES, _open, _write
from logtide.storage.opening import SCHEMA
from logtide.storage.records import GROUP, UNIFORM_ROW

LAYOUTS = ("today", "per-stream", "commit-order", "today-noseq", "tail", "tail-indexed")
MOVE_EVERY = 256  # the tail layouts: commits between two moves of the tail into ``rows``
EXTRA = """
CREATE TABLE log_commits (tid INTEGER NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (tid, seq)) WITHOUT ROWID;
CREATE TABLE log_tail (seq INTEGER PRIMARY KEY, tid INTEGER NOT NULL, token INTEGER NOT NULL, pk BLOB NOT NULL,
    ck BLOB NOT NULL, data BLOB NOT NULL);
CREATE TABLE log_index (tid INTEGER NOT NULL, token INTEGER NOT NULL, stream BLOB NOT NULL, ck BLOB NOT NULL,
    seq INTEGER NOT NULL, PRIMARY KEY (tid, token, stream, ck)) WITHOUT ROWID;
"""
UPSERT = "INSERT OR REPLACE INTO rows (tid, token, pk, ck, data) VALUES (?, ?, ?, ?, ?)"
ENC = msgspec.msgpack.Encoder()
DEC = msgspec.msgpack.Decoder()
Row = tuple[int, int, bytes, bytes, bytes]


class _Recorder:
    """The writer's connection, recording the rows of each commit."""

    def __init__(self, conn) -> None:
        self._conn = conn
        self.commits: list[list[Row]] = [[]]

    def execute(self, sql: str, *args):
        if sql == "COMMIT":
            self.commits.append([])
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, rows):
        rows = list(rows)
        if sql == UPSERT:
            self.commits[-1].extend(rows)
        return self._conn.executemany(sql, rows)

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


def record(mode: str, batches: int) -> tuple[list[list[Row]], int]:
    """The rows of each commit of ``batches`` batches, and the base table's id (the log's rows are
    ``U`` records, ``docs/durability.md``)."""
    cdc, batch, one = MODES[mode]
    d = tempfile.mkdtemp()
    try:
        db, s, stmt = _open(d, mode, "OFF")
        rec = db.store._writer = _Recorder(db.store._writer)
        _write(s, stmt, 0, batches * batch, batch, one)
        db.store._writer = rec._conn
        db.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    commits = [c for c in rec.commits if c]
    base_tids = {r[0] for c in commits for r in c if r[4][1] not in (UNIFORM_ROW, GROUP)}
    assert len(base_tids) == 1, base_tids
    return commits, base_tids.pop()


def write(conn: sqlite3.Connection, layout: str, rows: list[Row], base_tid: int, seq: int) -> None:
    base = [r for r in rows if r[0] == base_tid]
    log = [r for r in rows if r[0] != base_tid]
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(UPSERT, base)
    if layout in ("today", "today-noseq"):
        conn.executemany(UPSERT, log)
    elif layout == "per-stream" and log:
        groups: dict[tuple[int, int, bytes], list[tuple[bytes, bytes]]] = {}
        for tid, token, pk, ck, data in log:
            groups.setdefault((tid, token, pk), []).append((ck, data))
        conn.executemany(UPSERT, [(tid, token, pk, g[0][0], ENC.encode(g)) for (tid, token, pk), g in groups.items()])
    elif layout.startswith("tail") and log:
        conn.executemany("INSERT INTO log_tail (tid, token, pk, ck, data) VALUES (?, ?, ?, ?, ?)", log)
    elif layout == "commit-order" and log:
        tid = log[0][0]
        conn.execute("INSERT INTO log_commits VALUES (?, ?, ?)",
                     (tid, seq, ENC.encode([(token, pk, ck, data) for _, token, pk, ck, data in log])))
        first: dict[tuple[int, bytes], bytes] = {}
        for _, token, pk, ck, _ in log:
            first.setdefault((token, pk), ck)
        conn.executemany("INSERT INTO log_index VALUES (?, ?, ?, ?, ?)",
                         [(tid, token, pk, ck, seq) for (token, pk), ck in first.items()])
    if layout != "today-noseq":
        conn.execute("UPDATE commit_seq SET n = ?", (seq,))
    conn.execute("COMMIT")
    if layout.startswith("tail") and seq % MOVE_EVERY == MOVE_EVERY - 1:  # off the commit path: its own transaction
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR REPLACE INTO rows SELECT tid, token, pk, ck, data FROM log_tail ORDER BY tid, token, pk, ck")
        conn.execute("DELETE FROM log_tail")
        conn.execute("COMMIT")


def read_back(conn: sqlite3.Connection, layout: str, streams: list[tuple[int, int, bytes]]) -> int:
    """Every log row, stream by stream, as storage would hand them to the query layer."""
    n = 0
    for tid, token, pk in streams:
        if layout == "commit-order":
            seqs = conn.execute("SELECT seq FROM log_index WHERE tid = ? AND token = ? AND stream = ? ORDER BY ck",
                                (tid, token, pk)).fetchall()
            for (seq,) in seqs:
                (data,) = conn.execute("SELECT data FROM log_commits WHERE tid = ? AND seq = ?", (tid, seq)).fetchone()
                n += sum(1 for r in DEC.decode(data) if r[0] == token and r[1] == pk)
            continue
        got = conn.execute("SELECT ck, data FROM rows WHERE tid = ? AND token = ? AND pk = ? ORDER BY ck",
                           (tid, token, pk)).fetchall()
        if layout.startswith("tail"):
            got += conn.execute("SELECT ck, data FROM log_tail WHERE tid = ? AND token = ? AND pk = ? ORDER BY ck",
                                (tid, token, pk)).fetchall()
        n += len(got) if layout in ("today", "today-noseq") or layout.startswith("tail") else sum(len(DEC.decode(d)) for _, d in got)
    return n


def run(commits: list[list[Row]], base_tid: int, layout: str, sync: str) -> tuple[float, float, float, float]:
    """(CPU ms, wall ms per commit, WAL pages per commit, CPU ms of reading the log back)."""
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "x.db")
        conn = sqlite3.connect(path, isolation_level=None)
        for pragma in ("journal_mode=WAL", f"synchronous={sync}", "cache_size=-65536", "wal_autocheckpoint=0"):
            conn.execute(f"PRAGMA {pragma}")
        conn.executescript(SCHEMA + EXTRA)
        if layout == "tail-indexed":
            conn.execute("CREATE INDEX log_tail_key ON log_tail (tid, token, pk, ck)")
        warm = len(commits) // 3
        for i, rows in enumerate(commits[:warm]):
            write(conn, layout, rows, base_tid, i)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        cpus, walls = [], []
        for i, rows in enumerate(commits[warm:], warm):
            w0, c0 = time.perf_counter(), time.process_time()
            write(conn, layout, rows, base_tid, i)
            cpus.append(time.process_time() - c0)
            walls.append(time.perf_counter() - w0)
        pages = os.path.getsize(path + "-wal") / (page + 24) / len(walls)
        streams = sorted({(r[0], r[1], r[2]) for c in commits for r in c if r[0] != base_tid})
        c0 = time.process_time()
        read_back(conn, layout, streams)
        read = time.process_time() - c0
        conn.close()
        return statistics.fmean(cpus) * 1e3, statistics.fmean(walls) * 1e3, pages, read * 1e3
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--modes", default="batch-mixed,batch-one",
                    help="bench_write_path.py's workloads to record (cdc: single full-CDC upserts, --batches of them "
                         "times 100)")
    args = ap.parse_args()
    recorded = {mode: record(mode, args.batches * (100 if MODES[mode][1] == 1 else 1))
                for mode in args.modes.split(",")}
    res: dict[tuple[str, str], list[tuple[float, float, float, float, float]]] = {}
    for _ in range(args.rounds):
        for mode, (commits, base_tid) in recorded.items():
            for layout in LAYOUTS:
                cpu, _, pages, read = run(commits, base_tid, layout, "OFF")
                _, wall, _, _ = run(commits, base_tid, layout, "FULL")
                res.setdefault((mode, layout), []).append((cpu, wall, pages, read))
    print(f"SQLite's part of a commit (means over the commits), rows of {args.batches} batches replayed, "
          f"medians of {args.rounds} rounds")
    print(f"{'workload':12s} {'layout':13s} {'CPU ms':>7s} {'wall ms (FULL)':>14s} {'WAL pages':>9s} "
          f"{'read-back CPU ms (all)':>22s}")
    for (mode, layout), xs in res.items():
        m = [statistics.median(x[i] for x in xs) for i in range(4)]
        print(f"{mode:12s} {layout:13s} {m[0]:7.2f} {m[1]:14.2f} {m[2]:9.1f} {m[3]:22.1f}")


if __name__ == "__main__":
    main()
