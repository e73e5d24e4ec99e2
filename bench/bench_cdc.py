"""CDC write cost: one workload, four CDC modes side by side, plus reading the log back.

    python bench/bench_cdc.py [--writes 100000] [--rounds 1] [--sync FULL|NORMAL|OFF] [--cpu]

The workload is single-row writes through prepared statements on the embedded
session: inserts, updates, collection updates (map put, set add, list
append) and deletes (cells, rows), cycling over 10 000 rows in 1 000
partitions.  The modes are CDC off, delta only, preimage 'full', and
preimage 'full' + postimage; each runs on a fresh data directory
(synchronous=FULL, as the server runs) in the same process, interleaved
round by round so machine noise hits every mode alike.  Reported: ops/s per
mode, its ratio to CDC off, and the rate of reading the whole log back by
stream and time window (the way CDC consumers read).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid

import logtide

SYNC = "FULL"  # set by --sync
CLOCK = time.perf_counter  # time.process_time with --cpu

MODES = {
    "cdc off": None,
    "delta only": "{'enabled': true}",
    "preimage full": "{'enabled': true, 'preimage': 'full'}",
    "preimage full + postimage": "{'enabled': true, 'preimage': 'full', 'postimage': true}",
}


def setup(path: str, cdc: str | None):
    db = logtide.open(path, synchronous=SYNC)
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    with_cdc = f" WITH cdc = {cdc}" if cdc else ""
    s.execute("CREATE TABLE ks.t (pk int, ck int, v int, w text, m map<int, int>, st set<int>, l list<int>, "
              f"PRIMARY KEY (pk, ck)){with_cdc}")
    s.execute("USE ks")
    stmts = [
        (s.prepare("INSERT INTO t (pk, ck, v, w) VALUES (?, ?, ?, ?)"), lambda r, i: [r // 10, r % 10, i, "x"]),
        (s.prepare("UPDATE t SET v = ?, w = ? WHERE pk = ? AND ck = ?"), lambda r, i: [i, "y", r // 10, r % 10]),
        (s.prepare("UPDATE t SET m[?] = ? WHERE pk = ? AND ck = ?"), lambda r, i: [i % 7, i, r // 10, r % 10]),
        (s.prepare("UPDATE t SET st = st + ? WHERE pk = ? AND ck = ?"), lambda r, i: [{i % 5}, r // 10, r % 10]),
        (s.prepare("UPDATE t SET l = l + ? WHERE pk = ? AND ck = ?"), lambda r, i: [[i], r // 10, r % 10]),
        (s.prepare("DELETE w FROM t WHERE pk = ? AND ck = ?"), lambda r, i: [r // 10, r % 10]),
        (s.prepare("DELETE FROM t WHERE pk = ? AND ck = ?"), lambda r, i: [r // 10, r % 10]),
    ]
    return db, s, stmts


def run_writes(s, stmts, n: int, seed: int) -> float:
    rng = random.Random(seed)
    plan = [(rng.randrange(10_000), rng.choices(range(len(stmts)), weights=[3, 3, 2, 1, 1, 1, 1])[0]) for _ in range(n)]
    start = CLOCK()
    for i, (row, k) in enumerate(plan):
        stmt, args = stmts[k]
        s.execute(stmt, args(row, i))
    return CLOCK() - start


def read_log(db, s) -> tuple[int, float]:
    gen = db.generations.current
    streams = gen.all_streams()
    lo = uuid.UUID("00000000-0000-1000-8080-808080808080")
    q = s.prepare('SELECT * FROM t_scylla_cdc_log WHERE "cdc$stream_id" = ? AND "cdc$time" > ? AND "cdc$time" <= maxTimeuuid(?)')
    now = int(time.time() * 1000) + 10_000
    count = 0
    start = time.perf_counter()
    for sid in streams:
        count += len(s.execute(q, [sid, lo, now]))
    return count, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--sync", default="FULL", choices=("FULL", "NORMAL", "OFF"),
                    help="SQLite synchronous setting (FULL: every commit is fsynced, as logtide runs)")
    ap.add_argument("--cpu", action="store_true",
                    help="measure the process's CPU time instead of wall-clock time (steadier on a shared "
                         "machine; with --sync OFF it is the CPU cost of a write)")
    args = ap.parse_args()
    global SYNC, CLOCK
    SYNC = args.sync
    if args.cpu:
        CLOCK = time.process_time
    per_round = args.writes // args.rounds
    totals = {m: 0.0 for m in MODES}
    dbs = {}
    with tempfile.TemporaryDirectory() as root:
        for name, cdc in MODES.items():
            dbs[name] = setup(f"{root}/{name.replace(' ', '_').replace('+', 'and')}", cdc)
        for r in range(args.rounds):
            for name in MODES:
                db, s, stmts = dbs[name]
                totals[name] += run_writes(s, stmts, per_round, seed=r)
        base = args.writes / totals["cdc off"]
        print(f"{args.writes} writes per mode ({args.rounds} interleaved rounds, synchronous={SYNC}, "
              f"{'CPU' if args.cpu else 'wall-clock'} time)")
        for name in MODES:
            ops = args.writes / totals[name]
            print(f"  {name:28s} {ops:9.0f} ops/s   cost x{base / ops:5.2f} of CDC off")
        db, s, _ = dbs["preimage full + postimage"]
        n, secs = read_log(db, s)
        print(f"  reading the log back by stream and time window: {n} rows in {secs:.2f} s = {n / secs:.0f} rows/s "
              f"({len(db.generations.current.all_streams())} streams)")
        for db, _, _ in dbs.values():
            db.close()


if __name__ == "__main__":
    main()
