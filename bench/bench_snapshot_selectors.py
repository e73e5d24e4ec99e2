"""What the replication snapshot's exact read costs the engine, side by side with the approximate one.

    python bench/bench_snapshot_selectors.py [--rows 5000] [--rounds 7]

One table with an atomic column, a set, a map, a list and a UDT; the same token-range-free SELECT
with the approximate snapshot's selectors (``WRITETIME(v)``, ``TTL(v)``) and with the exact one's
(``WRITETIME`` and ``LOGTIDE_ORIGINAL_TTL`` of every column, ``LOGTIDE_LIST_KEYS``, the row
marker), interleaved rounds, CPU time (``time.process_time``), medians (docs/spark.md, "What the
snapshot copies").
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import logtide

COLUMNS = ["v", "s", "m", "l", "u"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        db = logtide.open(d + "/data", synchronous="OFF")
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TYPE ks.addr (street text, n int)")
        s.execute("CREATE TABLE ks.t (pk int, ck int, v text, s set<int>, m map<text, int>, l list<int>, u addr, "
                  "PRIMARY KEY (pk, ck))")
        ins = ("INSERT INTO ks.t (pk, ck, v, s, m, l, u) VALUES (%d, %d, 'x', {1, 2, 3}, {'a': 1, 'b': 2}, "
               "[1, 2, 3], {street: 's', n: 1}) USING TTL 100000")
        s.execute_batch("UNLOGGED", [(ins % (i % 100, i), None) for i in range(args.rows)])
        queries = {
            "approximate": "SELECT pk, ck, v, s, m, l, u, writetime(v), ttl(v) FROM ks.t",
            "exact": "SELECT pk, ck, v, s, m, l, u, "
                     + ", ".join(f"writetime({c}), logtide_original_ttl({c})" for c in COLUMNS)
                     + ", logtide_list_keys(l), logtide_marker_writetime(), logtide_marker_ttl() FROM ks.t",
        }
        cpu: dict[str, list[float]] = {name: [] for name in queries}
        for _ in range(args.rounds):
            for name, q in queries.items():
                t0 = time.process_time()
                n = sum(1 for _ in s.execute(q))
                cpu[name].append(time.process_time() - t0)
                assert n == args.rows
        db.close()
    a, e = statistics.median(cpu["approximate"]), statistics.median(cpu["exact"])
    print(f"{args.rows} rows, median of {args.rounds}: approximate selectors {a:.3f} s CPU, "
          f"exact selectors {e:.3f} s CPU ({e / a:.2f}x)")


if __name__ == "__main__":
    main()
