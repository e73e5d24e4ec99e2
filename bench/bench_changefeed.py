"""Changefeed costs (spec 004), side by side in one run.

    python bench/bench_changefeed.py [--writes 20000] [--rounds 2] [--sync FULL]

1. write cost: the same single-row workload (inserts, updates, collection
   appends, cell and row deletes over 10 000 rows) on a table without a
   changefeed and with one NEW_AND_OLD_IMAGES JSON changefeed, interleaved
   round by round on fresh directories (goal: <= 1.15x); the process CPU time of the writes is
   printed too, since wall time swings with the load of a shared machine;
2. embedded reader throughput: reading the whole topic back through
   ``db.changefeeds.read`` in batches of 1 000 (goal: >= 100 000 records/s);
3. commit-to-reader latency: a thread waits (``db.changefeeds.wait``) while
   another commits one row at a time; the time from the commit returning to
   the reader holding the record (goal: p99 <= 10 ms).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import threading
import time

import logtide

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
FEED = "ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON')"


def setup(path: str, feed: bool, sync: str):
    db = logtide.open(path, synchronous=sync)
    s = db.session()
    s.execute(KS)
    s.execute("CREATE TABLE ks.t (pk int, ck int, v int, w text, l list<int>, PRIMARY KEY (pk, ck))")
    if feed:
        s.execute(FEED)
    s.execute("USE ks")
    stmts = [
        (s.prepare("INSERT INTO t (pk, ck, v, w) VALUES (?, ?, ?, ?)"), lambda r, i: [r // 10, r % 10, i, "x"]),
        (s.prepare("UPDATE t SET v = ?, w = ? WHERE pk = ? AND ck = ?"), lambda r, i: [i, "y", r // 10, r % 10]),
        (s.prepare("UPDATE t SET l = l + ? WHERE pk = ? AND ck = ?"), lambda r, i: [[i], r // 10, r % 10]),
        (s.prepare("DELETE w FROM t WHERE pk = ? AND ck = ?"), lambda r, i: [r // 10, r % 10]),
        (s.prepare("DELETE FROM t WHERE pk = ? AND ck = ?"), lambda r, i: [r // 10, r % 10]),
    ]
    return db, s, stmts


def run_writes(s, stmts, n: int, seed: int) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of ``n`` writes."""
    rng = random.Random(seed)
    plan = [(rng.randrange(10_000), rng.choices(range(len(stmts)), weights=[4, 3, 1, 1, 1])[0]) for _ in range(n)]
    start, cpu = time.perf_counter(), time.process_time()
    for i, (row, k) in enumerate(plan):
        stmt, args = stmts[k]
        s.execute(stmt, args(row, i))
    return time.perf_counter() - start, time.process_time() - cpu


def read_all(db) -> tuple[int, float]:
    r = db.changefeeds
    start = time.perf_counter()
    n = 0
    for p in r.partitions("ks/t/f"):
        off = p.start_offset
        while True:
            recs = r.read("ks/t/f", p.partition, off, max_records=1000, max_bytes=1 << 30)
            if not recs:
                break
            n += len(recs)
            off = recs[-1].offset + 1
    return n, time.perf_counter() - start


def latency(db, s, n: int) -> list[float]:
    r = db.changefeeds
    ins = s.prepare("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)")
    committed: dict[int, float] = {}
    seen: dict[int, float] = {}
    end = r.partitions("ks/t/f")[0].end_offset
    done = threading.Event()

    def reader() -> None:
        off = end
        while len(seen) < n:
            if not r.wait("ks/t/f", {0: off}, 5):
                continue
            for rec in r.read("ks/t/f", 0, off):
                seen[rec.offset - end] = time.perf_counter()
                off = rec.offset + 1
        done.set()
    th = threading.Thread(target=reader)
    th.start()
    for i in range(n):
        s.execute(ins, [100_000 + i, 0, i])
        committed[i] = time.perf_counter()
        time.sleep(0.002)
    done.wait(60)
    th.join(60)
    return [max(0.0, seen[i] - committed[i]) * 1000 for i in range(n) if i in seen]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sync", default="FULL")
    ap.add_argument("--latency-writes", type=int, default=500)
    args = ap.parse_args()
    dirs: list[str] = []
    try:
        _measure(args, dirs)
    finally:  # the data directories are the benchmark's own: none is left behind
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def _measure(args: argparse.Namespace, dirs: list[str]) -> None:
    """The rounds of writes, the reader and the latency, printed; each data directory made is added to ``dirs``."""
    totals = {False: 0.0, True: 0.0}
    cpu = {False: 0.0, True: 0.0}
    last_feed_db = None
    for rnd in range(args.rounds):
        for feed in (False, True):
            d = tempfile.mkdtemp(prefix="bench_cf_")
            dirs.append(d)
            db, s, stmts = setup(d, feed, args.sync)
            wall, used = run_writes(s, stmts, args.writes, seed=rnd)
            totals[feed] += wall
            cpu[feed] += used
            if feed and rnd == args.rounds - 1:
                last_feed_db = (db, s)
            else:
                db.close()
    n = args.writes * args.rounds
    base, with_feed = n / totals[False], n / totals[True]
    print(f"writes ({args.sync}, {n} per mode): no changefeed {base:,.0f} ops/s; "
          f"one NEW_AND_OLD_IMAGES JSON changefeed {with_feed:,.0f} ops/s; cost {totals[True] / totals[False]:.3f}x")
    print(f"  CPU time of the writes (steadier than wall time on a shared machine): no changefeed "
          f"{cpu[False] / n * 1e6:.0f} us/op; with it {cpu[True] / n * 1e6:.0f} us/op; cost {cpu[True] / cpu[False]:.3f}x")
    db, s = last_feed_db
    count, secs = read_all(db)
    print(f"embedded reader: {count:,} records in {secs:.3f} s = {count / secs:,.0f} records/s")
    lat = sorted(latency(db, s, args.latency_writes))
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    print(f"commit-to-reader latency ({len(lat)} commits): median {statistics.median(lat):.2f} ms, "
          f"p99 {p(0.99):.2f} ms, max {lat[-1]:.2f} ms")
    db.close()


if __name__ == "__main__":
    main()
