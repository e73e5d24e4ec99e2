"""Where a write's cost goes: CPU per statement and WAL pages per commit, for bench_peer.py's workloads.

    python bench/bench_write_path.py [--writes 6000] [--modes cdc-off,cdc,batch-mixed,batch-one]

The workload is ``bench_peer.py``'s (upserts of ``(pk, ck, a, b)``, key ``k = i % 700``), on the
embedded session.  Two measures that hold up on a shared, loaded machine, where wall-clock rates
swing with other jobs:

- CPU per statement (``time.thread_time``, ``synchronous=OFF`` so the fsync does not count), the
  best of chunks of 500 statements after every key exists, and the CPU of reading every change
  back by stream and time window, per statement;
- WAL pages per commit (``synchronous=FULL``, the default): the growth of ``logtide.db-wal``
  after a checkpoint, divided by the page frame size and the number of commits.  Each commit
  writes every page it dirtied to the WAL before its fsync, so this is what a commit costs in I/O.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import logtide
from bench_peer import CQL_CDC, CQL_TABLE, CQL_UPSERT, key, lt_read

MODES = {"cdc-off": (False, 1, False), "cdc": (True, 1, False),
         "batch-mixed": (True, 100, False), "batch-one": (True, 100, True)}
CHUNK = 500


def _open(path: str, cdc: bool, synchronous: str):
    db = logtide.open(path, synchronous=synchronous)
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute(CQL_TABLE + (CQL_CDC if cdc else ""))
    return db, s, s.prepare(CQL_UPSERT)


def _write(s, stmt, lo: int, hi: int, batch: int, one: bool) -> None:
    if batch == 1:
        for i in range(lo, hi):
            s.execute(stmt, key(i))
    else:
        for b in range(lo, hi, batch):
            s.execute_batch("LOGGED", [(stmt, key(i, one)) for i in range(b, min(hi, b + batch))])


def cpu(mode: str, n: int) -> tuple[float, float]:
    """(best CPU µs per statement written, CPU µs per statement of reading the log back)."""
    cdc, batch, one = MODES[mode]
    d = tempfile.mkdtemp()
    try:
        db, s, stmt = _open(d, cdc, "OFF")
        best = float("inf")
        for lo in range(0, n, CHUNK):
            c0 = time.thread_time()
            _write(s, stmt, lo, lo + CHUNK, batch, one)
            if lo >= 1000:  # every key exists: each write reads and replaces a row
                best = min(best, (time.thread_time() - c0) / CHUNK)
        read = float("inf")
        if cdc:
            for _ in range(3):
                c0 = time.thread_time()
                lt_read(db, s)
                read = min(read, (time.thread_time() - c0) / n)
        db.close()
        return best * 1e6, (read * 1e6 if cdc else 0.0)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def wal_pages(mode: str, n: int) -> float:
    """WAL pages written per commit with synchronous=FULL, after every key exists."""
    cdc, batch, one = MODES[mode]
    d = tempfile.mkdtemp()
    try:
        db, s, stmt = _open(d, cdc, "FULL")
        _write(s, stmt, 0, 1000, batch, one)
        conn = db.store._writer
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        before = os.path.getsize(os.path.join(d, "logtide.db-wal"))
        _write(s, stmt, 1000, 1000 + n, batch, one)
        after = os.path.getsize(os.path.join(d, "logtide.db-wal"))
        db.close()
        return (after - before) / (page + 24) / (n // batch)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=6000)
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    print(f"{'mode':12s} {'CPU us/stmt':>12s} {'read-back us/stmt':>18s} {'WAL pages/commit':>17s}")
    for mode in args.modes.split(","):
        w, r = cpu(mode, args.writes)
        pages = wal_pages(mode, min(args.writes, 2000))
        print(f"{mode:12s} {w:12.0f} {r:18.0f} {pages:17.1f}")


if __name__ == "__main__":
    main()
